//! Settings › Tools' wire types to and from `k3_app::tools`' saved record
//! (a tool server's failures reach the window through `k3_app::error::AppError`).

use k3_app::settings::records::KeyPlaceRecord;
use k3_app::tools::{EnvVarRecord, ServerTransportRecord, ToolServerRecord};

use crate::ipc::tools::{EnvVar, ToolServer, ToolTransport};

impl From<&ToolServerRecord> for ToolServer {
    fn from(r: &ToolServerRecord) -> Self {
        let transport = match &r.transport {
            ServerTransportRecord::Stdio { command, args, env, working_dir } => ToolTransport::Stdio {
                command: command.clone(),
                args: args.clone(),
                env: env.iter().map(|v| EnvVar { name: v.name.clone(), value: v.value.clone() }).collect(),
                working_dir: working_dir.clone(),
            },
            ServerTransportRecord::Http { url, key } => {
                ToolTransport::Http { url: url.clone(), has_key: key.is_some() }
            }
        };
        ToolServer {
            id: r.id.clone(),
            name: r.name.clone(),
            transport,
            enabled: r.enabled,
            always_allowed: r.always_allowed.clone(),
            timeout_seconds: r.timeout_seconds,
        }
    }
}

/// The saved transport of `wire`; an HTTP server's key is kept at `key`.
pub fn transport_record(wire: &ToolTransport, key: Option<KeyPlaceRecord>) -> ServerTransportRecord {
    match wire {
        ToolTransport::Stdio { command, args, env, working_dir } => ServerTransportRecord::Stdio {
            command: command.trim().to_string(),
            args: args.clone(),
            env: env.iter().map(|v| EnvVarRecord { name: v.name.trim().to_string(), value: v.value.clone() }).collect(),
            working_dir: working_dir.clone().filter(|d| !d.trim().is_empty()),
        },
        ToolTransport::Http { url, .. } => ServerTransportRecord::Http { url: url.trim().to_string(), key },
    }
}
