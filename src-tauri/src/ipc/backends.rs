//! Settings › Backends' wire types: a remote backend as the window lists, adds and tests
//! it (twins of `k3_app::backends`').

use crate::ipc::twin::{wire_enum, wire_struct};

wire_enum! {
    /// Where a backend's key is kept.
    #[serde(rename_all = "camelCase")]
    pub enum KeyPlace from k3_app::backends::keys::KeyPlace {
        /// The OS keyring (Secret Service on Linux).
        SystemKeyring,
        /// `backend-keys/<id>.key` in the data folder, readable only by the user.
        UserFile,
    }
}

wire_struct! {
    /// A backend as Settings shows it.
    pub struct BackendView both ways k3_app::backends::BackendView {
        id: String,
        name: String,
        base_url: String,
        model: String,
        /// `host[:port]`: where this backend's prompts go.
        host: String,
        key: Option<KeyPlace>,
    }
}

wire_struct! {
    /// What the Add form sends.
    pub struct NewBackend both ways k3_app::backends::NewBackend {
        name: String,
        /// Ends in `/v1`.
        base_url: String,
        /// Empty: the endpoint takes no key.
        api_key: String,
        model: String,
    }
}

wire_struct! {
    /// What "Test" found: the models the endpoint lists and one short reply, timed.
    pub struct BackendTest both ways k3_app::backends::BackendTest {
        models: Vec<String>,
        reply: String,
        /// From sending the request to the reply's end.
        #[ts(type = "number")]
        reply_ms: u64,
    }
}
