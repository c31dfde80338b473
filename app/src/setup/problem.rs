//! The download failures that have their own screen in the wizard (PRODUCT.md §1.1's
//! failure table): access denied (a token field), and files that failed their integrity
//! check (which ones; running again re-fetches only them). Everything else is shown as
//! the error's own words.
//!
//! Owns: [`SetupProblem`], [`problem_of`] (from a `StoreError`, pure) and saving a token
//! where the hub client reads it ([`save_token`]).

use std::path::Path;

use k3_store::StoreError;

use crate::error::{AppError, ErrorKind};

/// A file that failed its integrity check twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFile {
    pub path: String,
    pub expected: String,
    pub got: String,
}

/// A failure with a screen of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupProblem {
    /// HTTP 401/403: the licence is not accepted or the token is missing or wrong.
    Denied {
        url: String,
        status: u16,
        /// Where a saved token goes (`$HF_HOME/token`).
        token_path: String,
        /// `HF_TOKEN` is set: it wins over the file, so it is what must change.
        token_from_env: bool,
    },
    /// Files whose bytes failed SHA-256 twice; they were not kept.
    BadFiles { files: Vec<BadFile> },
}

/// The screen for `e`, if it has one; `token_from_env` tells whether `HF_TOKEN` is set.
pub fn problem_of(e: &StoreError, token_from_env: bool) -> Option<SetupProblem> {
    match e {
        StoreError::Denied { url, status, token_path } => Some(SetupProblem::Denied {
            url: url.clone(),
            status: *status,
            token_path: token_path.display().to_string(),
            token_from_env,
        }),
        StoreError::HashMismatch { path, expected, got } => Some(SetupProblem::BadFiles {
            files: vec![BadFile { path: path.clone(), expected: expected.clone(), got: got.clone() }],
        }),
        StoreError::FilesFailed { failed, .. } => {
            if let Some(denied) = failed.iter().find_map(|(_, e)| problem_of(e, token_from_env).filter(is_denied)) {
                return Some(denied);
            }
            let files: Vec<BadFile> = failed
                .iter()
                .filter_map(|(_, e)| match e {
                    StoreError::HashMismatch { path, expected, got } => {
                        Some(BadFile { path: path.clone(), expected: expected.clone(), got: got.clone() })
                    }
                    _ => None,
                })
                .collect();
            (!files.is_empty()).then_some(SetupProblem::BadFiles { files })
        }
        StoreError::NotFound { .. }
        | StoreError::Http { .. }
        | StoreError::Network { .. }
        | StoreError::BadAnswer { .. }
        | StoreError::UnsafeName { .. }
        | StoreError::BadRepo { .. }
        | StoreError::BadEndpoint { .. }
        | StoreError::Io { .. }
        | StoreError::NoSpace(_)
        | StoreError::Locked { .. }
        | StoreError::BadShardHeader { .. }
        | StoreError::BadConfig(_)
        | StoreError::CommitMismatch { .. }
        | StoreError::BadManifest { .. }
        | StoreError::UnsuitableDrive { .. }
        | StoreError::Offline
        | StoreError::Stopped
        | StoreError::NotVerified { .. } => None,
    }
}

fn is_denied(p: &SetupProblem) -> bool {
    matches!(p, SetupProblem::Denied { .. })
}

/// Saves a Hugging Face token to `path` (as `huggingface-cli login` does: the file the hub
/// client reads when `HF_TOKEN` is unset), written atomically and readable by the user only.
pub fn save_token(path: &Path, token: &str) -> Result<(), AppError> {
    let token = token.trim();
    if token.is_empty() || token.len() > 512 || !token.chars().all(|c| c.is_ascii_graphic()) {
        return Err(AppError::invalid("a token is one word of letters, digits and punctuation (hf_…)"));
    }
    k3_store::durable::write_atomic_private(path, token.as_bytes())
        .map_err(|e| AppError::new(ErrorKind::Io, format!("saving the token: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn mismatch(path: &str) -> StoreError {
        StoreError::HashMismatch { path: path.into(), expected: "aa".into(), got: "bb".into() }
    }

    #[test]
    fn denied_and_bad_files_have_their_screens_and_other_failures_do_not() {
        let denied =
            StoreError::Denied { url: "https://hub/x".into(), status: 401, token_path: PathBuf::from("/h/token") };
        assert_eq!(
            problem_of(&denied, true),
            Some(SetupProblem::Denied {
                url: "https://hub/x".into(),
                status: 401,
                token_path: "/h/token".into(),
                token_from_env: true
            })
        );
        let failed = StoreError::FilesFailed {
            failed: vec![
                ("a".into(), mismatch("a")),
                ("b".into(), StoreError::Network { url: "u".into(), message: "reset".into() }),
                ("c".into(), mismatch("c")),
            ],
            total: 14,
        };
        let Some(SetupProblem::BadFiles { files }) = problem_of(&failed, false) else { panic!() };
        assert_eq!(files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), vec!["a", "c"]);
        let with_denied =
            StoreError::FilesFailed { failed: vec![("a".into(), mismatch("a")), ("b".into(), denied)], total: 2 };
        assert!(matches!(problem_of(&with_denied, false), Some(SetupProblem::Denied { .. })), "the token comes first");
        assert_eq!(problem_of(&StoreError::Offline, false), None);
    }

    #[test]
    fn a_token_is_saved_for_the_user_only_and_nonsense_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hf").join("token");
        save_token(&path, "  hf_abc123  ").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "hf_abc123");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        for bad in ["", "   ", "hf abc", "hf_\n2", "ключ"] {
            assert!(save_token(&path, bad).is_err(), "{bad:?}");
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "hf_abc123", "a refused token changes nothing");
    }
}
