//! What every object of one answer shares (its id, time, model and endpoint), in every
//! wire format. A leaf: the OpenAI and the Anthropic shapes both start from it.
//!
//! Owns: [`Endpoint`], [`Head`].

/// Which endpoint an answer belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Chat,
    Completion,
    /// Anthropic's `/v1/messages` (its JSON is `anthropic::response`'s).
    Messages,
}

/// What every object of one answer shares.
#[derive(Debug, Clone)]
pub struct Head {
    pub id: String,
    pub created: u64,
    pub model: String,
    pub endpoint: Endpoint,
    pub thinking: bool,
}

impl Head {
    pub fn new(job: u64, model: String, endpoint: Endpoint, thinking: bool) -> Self {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let prefix = match endpoint {
            Endpoint::Chat => "chatcmpl",
            Endpoint::Completion => "cmpl",
            Endpoint::Messages => "msg",
        };
        let id = format!("{prefix}-{:x}{job:04x}", now.as_millis());
        Head { id, created: now.as_secs(), model, endpoint, thinking }
    }
}
