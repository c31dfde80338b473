//! `k3 serve`: the local API's address, keys, queue, batch and kept conversations. No
//! behaviour lives here.

use std::path::PathBuf;

use clap::Args;

use super::ModelArgs;

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Port (0: the system picks one). A taken port is an error naming the next free one.
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Address to listen on: loopback (127.0.0.1, ::1, localhost), or one LAN address
    /// together with --api-key. Never 0.0.0.0.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Bearer key every /v1 request must send (Authorization: Bearer KEY).
    #[arg(long, value_name = "KEY", env = "K3_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// A browser origin allowed to call the API (exact, e.g. http://localhost:5173).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// Generations that may wait behind the running ones (more get 429 with Retry-After).
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub queue: usize,
    /// Requests decoded together, sharing each forward pass (each reply is the one it gets
    /// alone). The memory plan holds a state and KV cache for each; one past what this
    /// machine keeps is refused, naming the bytes (`k3 plan` shows the largest). Default:
    /// --kept-conversations (the sequence states the plan holds anyway).
    #[arg(long, value_name = "N")]
    pub batch: Option<usize>,
    /// Seconds a client has to send a request head (slow clients are closed).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub header_timeout: f64,
    /// Reply length when a chat request names none.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_tokens: usize,
    /// Conversations whose engine state stays in RAM, so an agent's next request (or
    /// another client's) prefills only what is new. The memory plan counts each one: its
    /// KV cache for --context-length positions and its recurrent state.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub kept_conversations: usize,
    /// Conversations pushed out of RAM that are kept on disk in --state-dir (0: none), read
    /// back when a request continues one, also after a restart.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub kept_on_disk: usize,
    /// A request that declares tools and leaves the choice to the model must call one, and
    /// one that answers a tool result is answered in text: to try an agent end to end on a
    /// model that does not call tools on its own, such as the bundled demo model.
    #[arg(long)]
    pub require_tool_call: bool,
    /// Folder of the conversations kept on disk (default: the user's cache folder, k3/serve).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Folder of the Batch API's files and batches (/v1/files, /v1/batches), kept across
    /// restarts: an unfinished batch resumes (default: the user's data folder, k3/batches).
    #[arg(long, value_name = "DIR")]
    pub batch_dir: Option<PathBuf>,
}
