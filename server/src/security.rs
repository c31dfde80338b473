//! The request guard: `Host` allowlist (DNS rebinding, CVE-2024-28224), `Origin`
//! rejection (no CORS), and the bearer key compared in constant time (AP-02, -03, -05).
//!
//! Owns: [`Guard`] (what this server accepts: its port, its names, the origin allowlist,
//! the key) and [`guard`], the middleware that runs before every route.
//! Must not: normalise a `Host` into something it is not: only the three exact loopback
//! names with this server's port (ASCII case aside) pass — no trailing dot, no other
//! spelling of an address, no missing port — plus the LAN address the server listens on.
//! Easy to break: a request in absolute form (`GET http://evil/ HTTP/1.1`) carries a
//! second authority in its target; it must pass the same check.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::api_error::ApiError;

/// What the guard accepts.
#[derive(Debug, Clone)]
pub struct Guard {
    /// Exact `host:port` values (lower case) that name this server.
    hosts: Vec<String>,
    origins: Vec<String>,
    key: Option<Vec<u8>>,
}

/// Paths open without the key (still behind the Host and Origin checks).
const OPEN_PATHS: [&str; 1] = ["/health"];

impl Guard {
    /// Accepts the loopback names on `port`, and `listen_host` (the address listened on: a
    /// LAN address, or another loopback one such as 127.0.0.2).
    pub fn new(port: u16, listen_host: Option<std::net::IpAddr>, origins: Vec<String>, key: Option<String>) -> Self {
        let mut names = vec!["127.0.0.1".to_string(), "localhost".to_string(), "[::1]".to_string()];
        let listened = match listen_host {
            Some(std::net::IpAddr::V4(v4)) => Some(v4.to_string()),
            Some(std::net::IpAddr::V6(v6)) => Some(format!("[{v6}]")),
            None => None,
        };
        names.extend(listened.filter(|n| !names.contains(n)));
        let hosts = names.into_iter().map(|n| format!("{n}:{port}")).collect();
        Guard { hosts, origins, key: key.map(String::into_bytes) }
    }

    /// True when `value` (a `Host` header or a request target's authority) names this
    /// server exactly.
    pub fn host_allowed(&self, value: &[u8]) -> bool {
        let Ok(text) = std::str::from_utf8(value) else { return false };
        let lower = text.to_ascii_lowercase();
        self.hosts.contains(&lower)
    }

    /// True when no `Origin` header is present, or exactly one that is on the allowlist.
    pub fn origin_allowed(&self, headers: &HeaderMap) -> bool {
        let mut values = headers.get_all(header::ORIGIN).iter();
        match (values.next(), values.next()) {
            (None, _) => true,
            (Some(_), Some(_)) => false,
            (Some(origin), None) => {
                let origin = origin.as_bytes();
                origin != b"null" && self.origins.iter().any(|o| o.as_bytes() == origin)
            }
        }
    }

    /// True when no key is set, or `Authorization: Bearer KEY` or Anthropic's
    /// `x-api-key: KEY` carries it (each header once).
    pub fn key_accepted(&self, headers: &HeaderMap) -> bool {
        let Some(key) = &self.key else { return true };
        let single = |name: &str| {
            let mut values = headers.get_all(name).iter();
            match (values.next(), values.next()) {
                (Some(value), None) => Some(value.as_bytes()),
                _ => None,
            }
        };
        // `ct_eq` on slices compares every byte whatever the contents (only a length
        // difference returns early, which tells nothing about the key's bytes).
        let bearer = single(header::AUTHORIZATION.as_str()).and_then(|v| v.split_at_checked(7)).is_some_and(
            |(scheme, token)| scheme.eq_ignore_ascii_case(b"bearer ") && bool::from(token.ct_eq(key.as_slice())),
        );
        bearer || single("x-api-key").is_some_and(|token| bool::from(token.ct_eq(key.as_slice())))
    }

    /// The first check a request fails, if any.
    fn check(&self, request: &Request) -> Result<(), ApiError> {
        let headers = request.headers();
        let mut hosts = headers.get_all(header::HOST).iter();
        let host_ok = match (hosts.next(), hosts.next()) {
            (Some(host), None) => self.host_allowed(host.as_bytes()),
            _ => false,
        };
        let target_ok = request.uri().authority().is_none_or(|a| self.host_allowed(a.as_str().as_bytes()));
        if !host_ok || !target_ok {
            return Err(ApiError::ForbiddenHost);
        }
        if !self.origin_allowed(headers) || cross_site_fetch(headers) {
            return Err(ApiError::ForbiddenOrigin);
        }
        if !OPEN_PATHS.contains(&request.uri().path()) && !self.key_accepted(headers) {
            return Err(ApiError::Unauthorized);
        }
        Ok(())
    }
}

/// A browser's `Sec-Fetch-Site` naming another site (a no-cors request sends no Origin).
fn cross_site_fetch(headers: &HeaderMap) -> bool {
    headers.get("sec-fetch-site").is_some_and(|v| !matches!(v.as_bytes(), b"none" | b"same-origin"))
}

/// The middleware: refuses a request that fails the guard, else runs the route.
pub async fn guard(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    match guard.check(&request) {
        Ok(()) => next.run(request).await,
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(name.clone(), HeaderValue::from_str(value).expect("header value"));
        }
        h
    }

    #[test]
    fn the_key_needs_the_bearer_scheme_and_every_byte() {
        let g = Guard::new(8000, None, vec![], Some("sekret".into()));
        assert!(g.key_accepted(&headers(&[(header::AUTHORIZATION, "Bearer sekret")])));
        assert!(g.key_accepted(&headers(&[(header::AUTHORIZATION, "bearer sekret")])));
        for bad in ["Bearer sekreT", "Bearer sekret ", "Bearer sekre", "Basic sekret", "sekret", "Bearer"] {
            assert!(!g.key_accepted(&headers(&[(header::AUTHORIZATION, bad)])), "{bad}");
        }
        assert!(!g.key_accepted(&HeaderMap::new()));
        let open = Guard::new(8000, None, vec![], None);
        assert!(open.key_accepted(&headers(&[(header::AUTHORIZATION, "Bearer anything")])));
        let x_api_key = header::HeaderName::from_static("x-api-key");
        assert!(g.key_accepted(&headers(&[(x_api_key.clone(), "sekret")])));
        assert!(!g.key_accepted(&headers(&[(x_api_key, "sekreT")])));
    }

    #[test]
    fn a_lan_address_is_accepted_as_a_host_with_its_port_only() {
        let lan = std::net::IpAddr::V4(std::net::Ipv4Addr::new(192, 168, 1, 20));
        let g = Guard::new(8000, Some(lan), vec![], Some("k".into()));
        assert!(g.host_allowed(b"192.168.1.20:8000"));
        assert!(!g.host_allowed(b"192.168.1.20"));
        assert!(!g.host_allowed(b"192.168.1.21:8000"));
    }

    #[test]
    fn another_loopback_address_listened_on_is_accepted_as_a_host() {
        let g = Guard::new(8000, Some("127.0.0.2".parse().unwrap()), vec![], None);
        assert!(g.host_allowed(b"127.0.0.2:8000") && g.host_allowed(b"127.0.0.1:8000"));
        assert!(!g.host_allowed(b"127.0.0.3:8000"));
        let g = Guard::new(8000, Some("127.0.0.1".parse().unwrap()), vec![], None);
        assert_eq!(g.hosts.len(), 3, "no name twice");
    }
}
