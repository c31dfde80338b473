//! Where a `k3 bench speculate` case's drafts come from.
//!
//! Owns: `Drafts`.

/// Where a case's drafts come from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Drafts {
    /// Prompt lookup, as `run`, `chat` and the app draft.
    Lookup,
    /// Serial decoding's own next tokens: every draft token is accepted.
    ReplayRight,
    /// Serial decoding's next tokens with the first one changed: nothing is accepted.
    ReplayWrong,
}

impl Drafts {
    pub(super) fn label(self) -> &'static str {
        match self {
            Drafts::Lookup => "prompt lookup",
            Drafts::ReplayRight => "replayed, every draft right",
            Drafts::ReplayWrong => "replayed, every draft wrong",
        }
    }
}
