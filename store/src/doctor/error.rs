//! Why the machine could not be examined. A leaf every part of the doctor returns.
//!
//! Owns: [`DoctorError`].

use std::path::{Path, PathBuf};

/// Why the machine could not be examined.
#[derive(Debug, thiserror::Error)]
pub enum DoctorError {
    /// A folder asked about, or a system table, could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// No mount holds the folder (a mount table without `/`).
    #[error("{}: on no mounted volume", .0.display())]
    NoMount(PathBuf),
}

impl DoctorError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        DoctorError::Io { path: path.to_path_buf(), source }
    }

    /// True when the caller's input is at fault (a `--path` that does not exist).
    pub fn is_input_error(&self) -> bool {
        match self {
            // A path that names nothing usable is the caller's (probe finding: a 5,000-character
            // path exited 1, as a failure of this machine).
            DoctorError::Io { source, .. } => {
                matches!(
                    source.kind(),
                    std::io::ErrorKind::NotFound
                        | std::io::ErrorKind::InvalidFilename
                        | std::io::ErrorKind::NotADirectory
                        | std::io::ErrorKind::PermissionDenied
                )
            }
            DoctorError::NoMount(_) => true,
        }
    }
}
