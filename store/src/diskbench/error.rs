//! [`DiskBenchError`]: why a drive measurement could not be made, naming the file.

use std::path::PathBuf;

/// A failed or refused drive measurement.
#[derive(Debug, thiserror::Error)]
pub enum DiskBenchError {
    /// A file could not be opened, written, synced or read.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A read through the engine's I/O failed.
    #[error(transparent)]
    Read(#[from] k3_io::Error),
    /// Nothing to read.
    #[error("no file to read: give --model with shards, a file, or a folder for a scratch file")]
    NoFiles,
    /// No file holds one whole read.
    #[error("no file holds one {block_bytes}-byte read (largest: {largest_bytes} bytes)")]
    FilesTooSmall { block_bytes: usize, largest_bytes: u64 },
    /// The request itself is unusable.
    #[error("{0}")]
    BadRequest(String),
    /// The file lives in RAM: any figure would be memory speed.
    #[error("{} is on {fs}, a file system in RAM: its reads are memory speed, not a drive's", path.display())]
    RamFileSystem { path: PathBuf, fs: &'static str },
    /// The scratch file would not leave 1 GiB free on its drive.
    #[error(
        "a scratch file of {needs} bytes would leave less than 1 GiB free in {} ({free} bytes free): give a smaller --scratch-size",
        dir.display()
    )]
    NoSpace { dir: PathBuf, needs: u64, free: u64 },
    /// The cancel flag was raised.
    #[error("cancelled")]
    Cancelled,
}

impl DiskBenchError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        DiskBenchError::Io { path: path.to_path_buf(), source }
    }

    /// True when the caller's input is at fault (exit status 2), not the machine.
    pub fn is_input_error(&self) -> bool {
        match self {
            DiskBenchError::NoFiles
            | DiskBenchError::FilesTooSmall { .. }
            | DiskBenchError::BadRequest(_)
            | DiskBenchError::RamFileSystem { .. }
            | DiskBenchError::NoSpace { .. } => true,
            DiskBenchError::Read(e) => e.is_input_error(),
            DiskBenchError::Io { .. } | DiskBenchError::Cancelled => false,
        }
    }
}
