//! One live MCP connection (`rmcp`): a stdio program the app starts, or a Streamable HTTP
//! endpoint.
//!
//! Owns: starting a server's program with only the environment its record lists, in its
//! own process group (Unix) or job object (Windows) so that [`Connection::kill`] ends it
//! and everything it started; the last lines of its stderr, told when it stops; refusing
//! plain `http://` beyond this machine.
//! Must not: pass the app's own environment to a server, or block: every call is async
//! and runs on the hub's runtime.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop};
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::record::{ServerTransportRecord, ToolServerRecord};
use super::ToolError;

/// How long a server may take to start and answer MCP's handshake (a first `npx` run
/// installs its package).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(120);
/// Lines of a server's stderr kept to explain its end.
const STDERR_LINES: usize = 12;
/// The longest stderr line kept.
const STDERR_LINE_BYTES: usize = 400;

/// A tool as its server declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerTool {
    pub name: String,
    pub description: Option<String>,
    /// The JSON schema of its arguments (an object schema).
    pub input_schema: serde_json::Value,
}

/// A server's program, its stderr's last lines, and the MCP session on its pipes.
pub struct Connection {
    server: String,
    service: RunningService<RoleClient, ()>,
    child: Option<Mutex<Box<dyn ChildWrapper>>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Connection {
    /// Starts or reaches `server` and completes MCP's handshake; `key` is an HTTP
    /// server's bearer key.
    pub async fn open(server: &ToolServerRecord, key: Option<String>) -> Result<Connection, ToolError> {
        match &server.transport {
            ServerTransportRecord::Stdio { command, args, env, working_dir } => {
                let program = find_program(server, command)?;
                let mut cmd = tokio::process::Command::new(&program);
                cmd.args(args).env_clear().envs(env.iter().map(|v| (&v.name, &v.value)));
                if let Some(dir) = working_dir.as_deref().filter(|d| !d.is_empty()) {
                    cmd.current_dir(dir);
                }
                cmd.stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped());
                Self::spawn(server, command, cmd).await
            }
            ServerTransportRecord::Http { url, .. } => Self::reach(server, url, key).await,
        }
    }

    async fn spawn(
        server: &ToolServerRecord,
        command: &str,
        cmd: tokio::process::Command,
    ) -> Result<Connection, ToolError> {
        let spawn_error =
            |reason: String| ToolError::Spawn { server: server.name.clone(), command: command.to_string(), reason };
        let mut wrapped = CommandWrap::from(cmd);
        #[cfg(unix)]
        wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
        #[cfg(windows)]
        wrapped.wrap(process_wrap::tokio::JobObject);
        wrapped.wrap(KillOnDrop);
        let mut child = wrapped.spawn().map_err(|e| spawn_error(e.to_string()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin().take(), child.stdout().take()) else {
            return Err(spawn_error("its standard input or output could not be opened".into()));
        };
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let reader =
            child.stderr().take().map(|pipe| tokio::spawn(keep_stderr(server.name.clone(), pipe, stderr.clone())));
        let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, ().serve((stdout, stdin))).await;
        let service = match handshake {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => {
                let report = exit_report(&mut *child, reader, &stderr).await;
                return Err(ToolError::Handshake { server: server.name.clone(), reason: format!("{e}{report}") });
            }
            Err(_) => {
                let reason = format!("no answer within {} s", HANDSHAKE_TIMEOUT.as_secs());
                return Err(ToolError::Handshake { server: server.name.clone(), reason });
            }
        };
        Ok(Connection { server: server.name.clone(), service, child: Some(Mutex::new(child)), stderr })
    }

    async fn reach(server: &ToolServerRecord, url: &str, key: Option<String>) -> Result<Connection, ToolError> {
        check_address(server, url)?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder().build().map_err(|e| ToolError::Address {
            server: server.name.clone(),
            url: url.to_string(),
            reason: e.to_string(),
        })?;
        let mut config = StreamableHttpClientTransportConfig::with_uri(url);
        if let Some(key) = key {
            config = config.auth_header(key);
        }
        let transport = StreamableHttpClientTransport::with_client(client, config);
        let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, ().serve(transport)).await;
        let service = match handshake {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => return Err(ToolError::Handshake { server: server.name.clone(), reason: e.to_string() }),
            Err(_) => {
                let reason = format!("no answer from {url} within {} s", HANDSHAKE_TIMEOUT.as_secs());
                return Err(ToolError::Handshake { server: server.name.clone(), reason });
            }
        };
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        Ok(Connection { server: server.name.clone(), service, child: None, stderr })
    }

    /// Every tool the server offers (all pages).
    pub async fn list_tools(&self) -> Result<Vec<ServerTool>, ToolError> {
        let tools = self.service.peer().list_all_tools().await.map_err(|e| self.failed(e))?;
        Ok(tools
            .into_iter()
            .map(|t| ServerTool {
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()),
                input_schema: serde_json::Value::Object((*t.input_schema).clone()),
            })
            .collect())
    }

    /// Calls `tool` with `arguments`.
    pub async fn call(&self, tool: &str, arguments: JsonObject) -> Result<CallToolResult, ToolError> {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        self.service.peer().call_tool(params).await.map_err(|e| self.failed(e))
    }

    /// The server program's process id (`None` for an HTTP server).
    pub fn process_id(&self) -> Option<u32> {
        self.child.as_ref().and_then(|c| c.lock().ok().and_then(|c| c.id()))
    }

    /// True once the session has ended (the program exited or the endpoint closed).
    pub fn is_closed(&self) -> bool {
        self.service.is_closed()
    }

    /// Ends the server at once: its process group or job is killed, its session closed.
    pub fn kill(&self) {
        if let Some(child) = &self.child {
            if let Ok(mut child) = child.lock() {
                if let Err(e) = child.start_kill() {
                    log::warn!("tool server {}: kill failed: {e}", self.server);
                }
            }
        }
        self.service.cancellation_token().cancel();
    }

    fn failed(&self, error: rmcp::ServiceError) -> ToolError {
        match error {
            rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_) => {
                ToolError::Stopped { server: self.server.clone(), report: stderr_report(&self.stderr) }
            }
            other => ToolError::Protocol { server: self.server.clone(), reason: other.to_string() },
        }
    }

    /// The program's exit status and last stderr lines, once it has ended.
    pub async fn exit_report(&self) -> String {
        let status = self.child.as_ref().and_then(|c| c.lock().ok().and_then(|mut c| c.try_wait().ok().flatten()));
        let lines = stderr_report(&self.stderr);
        match status {
            Some(s) => format!(" ({s}){lines}"),
            None => lines,
        }
    }
}

impl Drop for Connection {
    /// A connection let go of takes its server's whole process group with it (the
    /// program's own kill-on-drop reaches only its first process).
    fn drop(&mut self) {
        self.kill();
    }
}

/// `command` as a path to start: itself when it names a path, else found on the app's
/// `PATH` (the server's own environment may have none).
fn find_program(server: &ToolServerRecord, command: &str) -> Result<std::path::PathBuf, ToolError> {
    let path = std::path::Path::new(command);
    if path.components().count() > 1 || path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    which::which(command).map_err(|e| ToolError::Spawn {
        server: server.name.clone(),
        command: command.to_string(),
        reason: format!("{e} on this app's PATH"),
    })
}

/// Plain HTTP only to this machine; HTTPS anywhere.
fn check_address(server: &ToolServerRecord, url: &str) -> Result<(), ToolError> {
    let refuse = |reason: &str| ToolError::Address {
        server: server.name.clone(),
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let parsed = reqwest::Url::parse(url).map_err(|e| refuse(&format!("not a URL: {e}")))?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" => match parsed.host() {
            Some(url::Host::Domain("localhost")) => Ok(()),
            Some(url::Host::Ipv4(ip)) if ip.is_loopback() => Ok(()),
            Some(url::Host::Ipv6(ip)) if ip.is_loopback() => Ok(()),
            _ => Err(refuse("plain http is only for servers on this machine; use https")),
        },
        _ => Err(refuse("only http:// (this machine) and https:// are tool server addresses")),
    }
}

/// Reads a server's stderr to its end, logging each line and keeping the last few.
async fn keep_stderr(server: String, pipe: tokio::process::ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = BufReader::new(pipe).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        log::debug!("tool server {server}: {line}");
        let mut kept = line;
        if kept.len() > STDERR_LINE_BYTES {
            let mut end = STDERR_LINE_BYTES;
            while !kept.is_char_boundary(end) {
                end -= 1;
            }
            kept.truncate(end);
        }
        if let Ok(mut tail) = tail.lock() {
            if tail.len() == STDERR_LINES {
                tail.pop_front();
            }
            tail.push_back(kept);
        }
    }
}

fn stderr_report(tail: &Mutex<VecDeque<String>>) -> String {
    let lines: Vec<String> = tail.lock().map(|t| t.iter().cloned().collect()).unwrap_or_default();
    if lines.is_empty() {
        String::new()
    } else {
        format!("; its last words: {}", lines.join(" | "))
    }
}

async fn exit_report(
    child: &mut dyn ChildWrapper,
    reader: Option<tokio::task::JoinHandle<()>>,
    stderr: &Mutex<VecDeque<String>>,
) -> String {
    // Give a crashing program a moment to finish writing and exit, and its stderr's reader
    // a moment to take the last lines (it ends at the pipe's end; without the wait a line
    // written just before the exit was sometimes missing from the report, under load).
    let status = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
    if let Some(reader) = reader {
        let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
    }
    let lines = stderr_report(stderr);
    match status {
        Ok(Ok(s)) => format!(" ({s}){lines}"),
        _ => lines,
    }
}
