//! What the user chose for the local API (Settings › Local API), saved in
//! `local-api.json` in the app's data folder, and the server configuration it becomes.
//!
//! Owns: [`ApiSettings`] (off by default, port 8000, optional key, LAN opt-in) and turning
//! it into a `k3_server::ServerConfig` — or the [`ApiProblem`] that says why not.
//! Must not: bind anything (that is `k3_server`, which enforces the loopback rule again).

use std::net::{IpAddr, Ipv4Addr};

use crate::settings::records::LocalApiRecord;

use super::problem::ApiProblem;

/// The settings file inside the data folder.
pub const API_SETTINGS_FILE: &str = <LocalApiRecord as crate::settings::SettingsRecord>::FILE;

/// The local API as the user set it up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiSettings {
    /// Running (and started again when the app opens).
    pub enabled: bool,
    pub port: u16,
    /// Bearer key clients must send; empty: any key is accepted.
    pub api_key: String,
    /// Listen on `lan_address` instead of loopback (needs a key).
    pub lan: bool,
    /// This machine's address on the local network, when `lan`.
    pub lan_address: String,
}

impl Default for ApiSettings {
    fn default() -> Self {
        ApiSettings {
            enabled: false,
            port: k3_server::DEFAULT_PORT,
            api_key: String::new(),
            lan: false,
            lan_address: String::new(),
        }
    }
}

impl ApiSettings {
    /// The key, trimmed; `None` when empty.
    pub fn key(&self) -> Option<String> {
        let key = self.api_key.trim();
        (!key.is_empty()).then(|| key.to_string())
    }

    /// The address to listen on: loopback unless the user opted into the LAN.
    pub fn host(&self) -> Result<IpAddr, ApiProblem> {
        if !self.lan {
            return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
        }
        if self.key().is_none() {
            return Err(ApiProblem::LanNeedsKey);
        }
        let text = self.lan_address.trim();
        match text.parse::<IpAddr>() {
            Ok(ip) if ip.is_unspecified() => Err(ApiProblem::BadAddress {
                address: text.into(),
                reason: "it listens on every interface; give this machine's own address".into(),
            }),
            Ok(ip) => Ok(ip),
            Err(_) => Err(ApiProblem::BadAddress { address: text.into(), reason: "not an IP address".into() }),
        }
    }

    /// The server configuration, or why these settings cannot start one.
    pub fn server_config(&self, request_log: k3_server::RequestLogFn) -> Result<k3_server::ServerConfig, ApiProblem> {
        if self.port == 0 {
            return Err(ApiProblem::BadPort);
        }
        Ok(k3_server::ServerConfig {
            host: self.host()?,
            port: self.port,
            api_key: self.key(),
            request_log: Some(request_log),
            ..k3_server::ServerConfig::default()
        })
    }
}

impl From<LocalApiRecord> for ApiSettings {
    fn from(r: LocalApiRecord) -> Self {
        ApiSettings { enabled: r.enabled, port: r.port, api_key: r.api_key, lan: r.lan, lan_address: r.lan_address }
    }
}

impl From<&ApiSettings> for LocalApiRecord {
    fn from(s: &ApiSettings) -> Self {
        LocalApiRecord {
            enabled: s.enabled,
            port: s.port,
            api_key: s.api_key.clone(),
            lan: s.lan,
            lan_address: s.lan_address.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn log() -> k3_server::RequestLogFn {
        Arc::new(|_| ())
    }

    #[test]
    fn the_default_is_off_on_loopback_port_8000_without_a_key() {
        let s = ApiSettings::default();
        assert!(!s.enabled);
        let config = s.server_config(log()).unwrap();
        assert_eq!(config.host, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(config.port, 8000);
        assert_eq!(config.api_key, None);
    }

    #[test]
    fn the_lan_needs_a_key_and_a_real_address() {
        let mut s = ApiSettings { lan: true, lan_address: "192.168.1.20".into(), ..ApiSettings::default() };
        assert_eq!(s.server_config(log()).err(), Some(ApiProblem::LanNeedsKey));
        s.api_key = "   ".into();
        assert_eq!(s.server_config(log()).err(), Some(ApiProblem::LanNeedsKey), "a blank key is no key");
        s.api_key = " secret ".into();
        let config = s.server_config(log()).unwrap();
        assert_eq!(config.host.to_string(), "192.168.1.20");
        assert_eq!(config.api_key.as_deref(), Some("secret"));
        for bad in ["0.0.0.0", "::", "my-laptop.local", ""] {
            s.lan_address = bad.into();
            assert!(matches!(s.server_config(log()), Err(ApiProblem::BadAddress { .. })), "{bad:?} must be refused");
        }
        s.port = 0;
        assert_eq!(s.server_config(log()).err(), Some(ApiProblem::BadPort));
    }
}
