//! Files a command writes (`--dump-logits`, `--trace`): a regular file through a temporary
//! name and a rename, so a failure never leaves half a file under the name asked for.

use std::path::{Path, PathBuf};

use super::{runtime_error, Failure};

/// Writes little-endian f32 values to `path` via a temporary file and a rename, so a
/// failure never leaves a half-written dump under the requested name.
pub(super) fn write_f32_file(path: &Path, values: &[f32]) -> Result<(), Failure> {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    write_bytes_file(path, &bytes)
}

/// Writes `bytes` to `path` (see [`OutputFile`]).
pub(super) fn write_bytes_file(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let mut out = OutputFile::create(path)?;
    out.write(bytes).map_err(|e| runtime_error(format!("writing {}: {e}", path.display())))?;
    out.finish()
}

/// A file being written: a regular file (or a new one) goes to a temporary name and is
/// renamed when finished, so a failure never leaves half a file under the name; anything
/// else (a device such as `/dev/null`, a FIFO, a symlink) is written in place and never
/// replaced.
pub(super) struct OutputFile {
    path: PathBuf,
    /// The temporary name to rename from, for regular files.
    partial: Option<PathBuf>,
    writer: std::io::BufWriter<std::fs::File>,
}

impl OutputFile {
    pub(super) fn create(path: &Path) -> Result<OutputFile, Failure> {
        let fail = |e: std::io::Error| runtime_error(format!("writing {}: {e}", path.display()));
        let in_place = match std::fs::symlink_metadata(path) {
            Ok(meta) => !meta.file_type().is_file(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(fail(e)),
        };
        let partial = (!in_place).then(|| {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            path.with_file_name(format!(".{name}.partial"))
        });
        let target = partial.as_deref().unwrap_or(path);
        let file = std::fs::File::create(target).map_err(fail)?;
        Ok(OutputFile { path: path.to_path_buf(), partial, writer: std::io::BufWriter::new(file) })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        self.writer.write_all(bytes)
    }

    /// Little-endian f32 values.
    pub(super) fn write_f32(&mut self, values: &[f32]) -> std::io::Result<()> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.write(&bytes)
    }

    pub(super) fn finish(self) -> Result<(), Failure> {
        let fail = |e: std::io::Error| runtime_error(format!("writing {}: {e}", self.path.display()));
        self.writer.into_inner().map_err(|e| fail(e.into_error()))?;
        match &self.partial {
            Some(partial) => std::fs::rename(partial, &self.path).map_err(fail),
            None => Ok(()),
        }
    }
}
