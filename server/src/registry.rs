//! [`Registry`]: the model ids the API shows, from the runtime's loaded model — never a
//! path (AP-08).
//!
//! Owns: turning the loaded model's display name into an id (`[a-z0-9._-]`, at most 64
//! characters) and resolving a request's `model` against it.
//! Must not: cache: the app may open another model while the server runs; each request
//! reads the runtime's probe.

use k3_runtime::MetricsProbe;

/// A model as `GET /v1/models` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelEntry {
    pub id: String,
    pub context_length: usize,
}

/// The in-memory model registry.
#[derive(Clone)]
pub struct Registry {
    probe: MetricsProbe,
}

impl Registry {
    pub fn new(probe: MetricsProbe) -> Self {
        Registry { probe }
    }

    /// The models served now (the loaded one, or none).
    pub fn models(&self) -> Vec<ModelEntry> {
        let snapshot = self.probe.snapshot();
        snapshot
            .model
            .map(|m| ModelEntry { id: model_id(&m.name), context_length: m.context_length })
            .into_iter()
            .collect()
    }

    /// The entry a request's `model` names.
    pub fn resolve(&self, requested: &str) -> Option<ModelEntry> {
        self.models().into_iter().find(|m| m.id == requested)
    }
}

/// A display name as an id: lower case, runs of other characters become one `-`.
pub fn model_id(name: &str) -> String {
    let mut id = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            id.push(c);
        } else if !id.ends_with('-') {
            id.push('-');
        }
    }
    let id: String = id.trim_matches(['-', '.']).chars().take(64).collect();
    if id.is_empty() {
        "kimi-k3".into()
    } else {
        id
    }
}

#[cfg(test)]
mod tests {
    use super::model_id;

    #[test]
    fn ids_are_plain_words_never_paths() {
        assert_eq!(model_id("tiny-mxfp4"), "tiny-mxfp4");
        assert_eq!(model_id("Demo model (tiny same-graph Kimi K3)"), "demo-model-tiny-same-graph-kimi-k3");
        assert_eq!(model_id("../../etc/passwd"), "etc-passwd");
        assert_eq!(model_id("///"), "kimi-k3");
        assert_eq!(model_id(&"x".repeat(500)).len(), 64);
    }
}
