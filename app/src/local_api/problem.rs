//! Why the local API did not start. A leaf: the settings' checks and the status report
//! both carry it.
//!
//! Owns: [`ApiProblem`].

/// Why the local API did not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiProblem {
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
