//! Binding the listener under the loopback rule (PRODUCT.md §4.1, AP-01, AP-17).
//!
//! Owns: refusing an unspecified address always and a non-loopback one without a key,
//! binding exactly the address asked for, and — when the port is taken — finding the
//! next free port to offer in the error.
//! Must not: fall back to another address or port on its own.

use std::net::{IpAddr, SocketAddr, TcpListener};

use crate::error::ServerError;

/// Where the server may listen: loopback, or one LAN address with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    Loopback,
    Lan,
}

/// Checks the loopback rule for `host`.
pub fn exposure(host: IpAddr, has_key: bool) -> Result<Exposure, ServerError> {
    if host.is_unspecified() {
        return Err(ServerError::Unspecified { host });
    }
    if is_loopback(host) {
        return Ok(Exposure::Loopback);
    }
    if has_key {
        Ok(Exposure::Lan)
    } else {
        Err(ServerError::LanNeedsKey { host })
    }
}

/// Loopback, IPv4-mapped IPv6 (`::ffff:127.0.0.1`) included.
fn is_loopback(host: IpAddr) -> bool {
    match host {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// Binds `host:port` (non-blocking, for tokio).
pub fn bind(host: IpAddr, port: u16) -> Result<TcpListener, ServerError> {
    let addr = SocketAddr::new(host, port);
    let listener = match TcpListener::bind(addr) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            return Err(ServerError::PortTaken { addr, next_free: next_free_port(host, port) });
        }
        Err(source) => return Err(ServerError::Bind { addr, source }),
    };
    listener.set_nonblocking(true).map_err(|source| ServerError::Bind { addr, source })?;
    Ok(listener)
}

/// The first port after `port` (up to 100 on) that binds on `host`.
pub fn next_free_port(host: IpAddr, port: u16) -> Option<u16> {
    (1..=100u16)
        .filter_map(|step| port.checked_add(step))
        .find(|&p| TcpListener::bind(SocketAddr::new(host, p)).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn loopback_is_allowed_unspecified_never_lan_only_with_a_key() {
        let lan = IpAddr::V4(Ipv4Addr::new(192, 168, 1, 20));
        assert_eq!(exposure(IpAddr::V4(Ipv4Addr::LOCALHOST), false).ok(), Some(Exposure::Loopback));
        assert_eq!(exposure(IpAddr::V6(Ipv6Addr::LOCALHOST), false).ok(), Some(Exposure::Loopback));
        let mapped = IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped());
        assert_eq!(exposure(mapped, false).ok(), Some(Exposure::Loopback));
        assert!(matches!(exposure(lan, false), Err(ServerError::LanNeedsKey { .. })));
        assert_eq!(exposure(lan, true).ok(), Some(Exposure::Lan));
        let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
        assert!(matches!(exposure(any, true), Err(ServerError::Unspecified { .. })));
        let any6 = IpAddr::V6(Ipv6Addr::UNSPECIFIED);
        assert!(matches!(exposure(any6, true), Err(ServerError::Unspecified { .. })));
    }

    #[test]
    fn a_taken_port_names_the_next_free_one() {
        let host = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let taken = TcpListener::bind((host, 0)).expect("bind");
        let port = taken.local_addr().expect("addr").port();
        match bind(host, port) {
            Err(ServerError::PortTaken { addr, next_free }) => {
                assert_eq!(addr.port(), port);
                let free = next_free.expect("a free port");
                assert!(free > port);
                assert!(TcpListener::bind((host, free)).is_ok());
            }
            other => panic!("expected PortTaken, got {other:?}"),
        }
    }
}
