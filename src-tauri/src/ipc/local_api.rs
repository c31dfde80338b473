//! Settings › Local API's wire types: its settings, status, problems and request log
//! (twins of `k3_app::local_api`').

use crate::ipc::twin::{wire_struct, wire_tagged};

wire_struct! {
    /// The local API as the user set it up.
    #[serde(default)]
    pub struct ApiSettings both ways k3_app::local_api::settings::ApiSettings {
        /// Running (and started again when the app opens).
        enabled: bool,
        port: u16,
        /// Bearer key clients must send; empty: any key is accepted.
        api_key: String,
        /// Listen on `lan_address` instead of loopback (needs a key).
        lan: bool,
        /// This machine's address on the local network, when `lan`.
        lan_address: String,
    }
}

wire_tagged! {
    /// Why the local API did not start.
    #[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
    pub enum ApiProblem from k3_app::local_api::status::ApiProblem {
        /// Another program listens on the port; `next_free` is offered, never switched to.
        PortTaken { port: u16, next_free: Option<u16> },
        /// Listening on the network needs a key.
        LanNeedsKey,
        /// The LAN address is not one the server may listen on.
        BadAddress { address: String, reason: String },
        /// Port 0 is not a port people can point a client at.
        BadPort,
        /// Binding or starting failed otherwise (the OS's words).
        Failed { message: String },
    }

}

wire_struct! {
    /// One answered request (the path only: a query string is never kept).
    pub struct ApiLogLine both ways k3_app::local_api::status::ApiLogLine {
        /// Milliseconds since the Unix epoch.
        #[ts(type = "number")]
        at_ms: u64,
        method: String,
        path: String,
        status: u16,
        /// Until the response head was ready (a stream goes on after it).
        seconds: f64,
        /// The client's address, e.g. `127.0.0.1:53122`.
        peer: Option<String>,
    }
}

wire_struct! {
    /// The local API now.
    pub struct ApiStatus from k3_app::local_api::status::ApiStatus {
        settings: ApiSettings,
        running: bool,
        /// What to give a client, e.g. `http://127.0.0.1:8000/v1`.
        base_url: Option<String>,
        /// Generations from API clients running or waiting.
        generations_in_flight: u32,
        /// Requests answered since the server started.
        #[ts(type = "number")]
        requests: u64,
        /// The most recent requests, newest last.
        log: Vec<ApiLogLine>,
        problem: Option<ApiProblem>,
    }
}

impl Default for ApiSettings {
    fn default() -> Self {
        k3_app::local_api::ApiSettings::default().into()
    }
}
