//! [`ServerError`]: why the server did not start.
//!
//! Owns: the refusals of the listen address (unspecified, LAN without a key), a port that
//! is taken (with the next free one to offer: never switched to silently), and I/O.
//! Must not: carry HTTP errors: those are [`crate::api_error::ApiError`].

use std::net::{IpAddr, SocketAddr};

/// A failure to start the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// 0.0.0.0 or :: would listen on every interface.
    #[error("{host} listens on every interface; give 127.0.0.1 (or one LAN address with --api-key)")]
    Unspecified { host: IpAddr },

    /// A non-loopback address without a key.
    #[error("{host} is not a loopback address: listening on the network needs --api-key")]
    LanNeedsKey { host: IpAddr },

    /// An `Origin` the allowlist may not hold.
    #[error("origin `{origin}` cannot be allowed (`null` and empty origins are always refused)")]
    BadOrigin { origin: String },

    /// Another program listens on the port.
    #[error("{addr} is already in use{}", next_free_hint(*.next_free))]
    PortTaken { addr: SocketAddr, next_free: Option<u16> },

    /// Binding failed otherwise (permission, address not on this machine, …).
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },

    /// The server's threads could not start.
    #[error("starting the server threads: {0}")]
    Threads(std::io::Error),

    /// The Batch API's folder could not be opened or created.
    #[error("the batch folder {}: {message}", path.display())]
    BatchDir { path: std::path::PathBuf, message: String },
}

fn next_free_hint(next_free: Option<u16>) -> String {
    match next_free {
        Some(port) => format!("; port {port} is free (use --port {port})"),
        None => "; no free port found in the next 100".to_string(),
    }
}
