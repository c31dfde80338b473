//! `TensorIndex`: every tensor of every shard in a model folder, and positioned reads.
//!
//! Owns: choosing the shards (`*.safetensors`, sorted by file name, hidden files excluded as
//! a shell glob would), the order of whole-checkpoint checks (numbering, each header,
//! duplicates across shards, case collisions, then the optional index file), and reads of
//! one tensor through a `File` kept open per shard. [`TensorIndex::from_heads`] runs the
//! same checks on bytes alone (headers and the index text; no file is opened), for a
//! plan made before the shards exist and for the fuzz targets; such an index reads nothing.
//! Must not: read or map a whole shard, trust the index file over the headers, or read a
//! `TensorInfo` it did not produce (a forged one could ask for any size at any offset).
//! Easy to break: `TensorIndex` is shared by reader threads; it holds only `File`s (reads
//! are `pread`, no shared cursor) and immutable tables, and must stay `Send + Sync`.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

use super::fault::CheckpointFault;
use super::header::parse_header;
use super::names::{check_shard_numbering, FaultSite};
use super::remote::{data_start, header_len, tensor_infos};
use super::shard::{checkpoint_error, open_shard};
use super::table::TensorTable;
use super::tensor::TensorInfo;
use super::weight_map::{check_index_file, check_index_text, INDEX_FILE_NAME};
use crate::error::{Error, Result};

/// A shard given as bytes: its file name, its header (the N bytes after the 8-byte length
/// prefix, which is taken to announce exactly N) and the file's length.
#[derive(Debug, Clone, Copy)]
pub struct ShardHead<'a> {
    pub file_name: &'a str,
    pub header: &'a [u8],
    pub file_len: u64,
}

/// One open shard.
#[derive(Debug)]
struct Shard {
    file: File,
    /// Length when indexed; a read past it means the file shrank.
    file_len: u64,
}

/// Every tensor in a model folder, strictly validated, readable on demand.
pub struct TensorIndex {
    dir: PathBuf,
    shard_paths: Vec<PathBuf>,
    shards: Vec<Shard>,
    tensors: TensorTable,
}

impl fmt::Debug for TensorIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorIndex")
            .field("dir", &self.dir)
            .field("shards", &self.shard_paths.len())
            .field("tensors", &self.tensors.len())
            .finish()
    }
}

/// `*.safetensors` file names in `dir` (not hidden), sorted byte-wise.
fn list_shards(dir: &Path) -> Result<Vec<OsString>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let name = entry.map_err(|e| Error::io(dir, e))?.file_name();
        let bytes = name.as_encoded_bytes();
        if bytes.ends_with(b".safetensors") && !bytes.starts_with(b".") {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

impl TensorIndex {
    /// Indexes every `*.safetensors` file in `model_dir` (sorted by file name), strictly;
    /// cross-checks `model.safetensors.index.json` if present.
    pub fn open(model_dir: &Path) -> Result<TensorIndex> {
        let names = list_shards(model_dir)?;
        let (shard_paths, utf8_names) = check_names(model_dir, &names)?;
        let mut tensors = TensorTable::default();
        let mut shards = Vec::with_capacity(shard_paths.len());
        for (shard_idx, path) in shard_paths.iter().enumerate() {
            let opened = open_shard(path)?;
            add_shard(
                &mut tensors,
                &shard_paths,
                shard_idx,
                tensor_infos(shard_idx, opened.data_start, opened.entries),
            )?;
            shards.push(Shard { file: opened.file, file_len: opened.file_len });
        }
        check_case(model_dir, &shard_paths, &tensors)?;
        check_index_file(model_dir, &tensors, &utf8_names)?;
        Ok(TensorIndex { dir: model_dir.to_path_buf(), shard_paths, shards, tensors })
    }

    /// The index `open` would build for a folder `model_dir` holding exactly these shards
    /// (in any order; sorted by file name as `open` sorts) and, when given, this
    /// `model.safetensors.index.json` text: every check of `open`, in its order, on bytes
    /// alone. Nothing is opened; `read` and `read_into` of such an index are refused.
    pub fn from_heads(model_dir: &Path, heads: &[ShardHead<'_>], index_file: Option<&[u8]>) -> Result<TensorIndex> {
        let mut heads = heads.to_vec();
        heads.sort_by(|a, b| a.file_name.cmp(b.file_name));
        let names: Vec<OsString> = heads.iter().map(|h| OsString::from(h.file_name)).collect();
        let (shard_paths, utf8_names) = check_names(model_dir, &names)?;
        let mut tensors = TensorTable::default();
        for ((shard_idx, head), path) in heads.iter().enumerate().zip(&shard_paths) {
            let fail = |fault| checkpoint_error(path, fault);
            let announced = u64::try_from(head.header.len()).unwrap_or(u64::MAX);
            let header_len = header_len(announced.to_le_bytes(), head.file_len).map_err(fail)?;
            let entries = parse_header(head.header, head.file_len).map_err(fail)?;
            add_shard(&mut tensors, &shard_paths, shard_idx, tensor_infos(shard_idx, data_start(header_len), entries))?;
        }
        check_case(model_dir, &shard_paths, &tensors)?;
        let index = TensorIndex { dir: model_dir.to_path_buf(), shard_paths, shards: Vec::new(), tensors };
        if let Some(bytes) = index_file {
            index.check_index_text(bytes, &utf8_names)?;
        }
        Ok(index)
    }

    /// Checks `bytes` as this checkpoint's `model.safetensors.index.json` (what
    /// [`Self::from_heads`] checks last, for the `index_json` fuzz target: the headers are
    /// parsed once, the index text many times).
    pub fn check_index_file_text(&self, bytes: &[u8]) -> Result<()> {
        let names: Vec<Option<String>> =
            self.shard_paths.iter().map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_owned)).collect();
        self.check_index_text(bytes, &names)
    }

    fn check_index_text(&self, bytes: &[u8], utf8_names: &[Option<String>]) -> Result<()> {
        check_index_text(&self.dir.join(INDEX_FILE_NAME), bytes, &self.tensors, utf8_names)
    }

    /// The tensor called `name`, if any shard holds it.
    pub fn get(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.get(name)
    }

    /// Every tensor, in no particular order.
    pub fn tensors(&self) -> impl Iterator<Item = &TensorInfo> {
        self.tensors.iter()
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// True when no shard holds any tensor.
    pub fn is_empty(&self) -> bool {
        self.tensors.len() == 0
    }

    /// The shard files, in the order `TensorInfo::shard_idx` refers to.
    /// The model folder the shards are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn shard_paths(&self) -> &[PathBuf] {
        &self.shard_paths
    }

    /// Positioned read (`pread` on the shard's open `File`) of exactly `info.nbytes` bytes.
    pub fn read(&self, info: &TensorInfo) -> Result<Vec<u8>> {
        let (shard, path) = self.shard_of(info)?;
        let len = usize::try_from(info.nbytes).map_err(|_| {
            let fault = CheckpointFault::Overflow { name: info.name.clone(), what: "tensor size on this platform" };
            checkpoint_error(path, fault)
        })?;
        let mut buf = Vec::new();
        buf.try_reserve_exact(len).map_err(|_| Error::io(path, io::Error::from(ErrorKind::OutOfMemory)))?;
        buf.resize(len, 0);
        read_at(shard, path, info, &mut buf)?;
        Ok(buf)
    }

    /// Like `read`, into `buf`, whose length must equal `info.nbytes`.
    pub fn read_into(&self, info: &TensorInfo, buf: &mut [u8]) -> Result<()> {
        let (shard, path) = self.shard_of(info)?;
        let actual = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        if actual != info.nbytes {
            let fault = CheckpointFault::ReadBufferSize { name: info.name.clone(), expected: info.nbytes, actual };
            return Err(checkpoint_error(path, fault));
        }
        read_at(shard, path, info, buf)
    }

    /// The shard of an `info` this index produced; anything else is refused.
    fn shard_of(&self, info: &TensorInfo) -> Result<(&Shard, &Path)> {
        let known = self
            .tensors
            .get(&info.name)
            .filter(|k| k.shard_idx == info.shard_idx && k.offset == info.offset && k.nbytes == info.nbytes);
        let found = known.and_then(|k| Some((self.shards.get(k.shard_idx)?, self.shard_paths.get(k.shard_idx)?)));
        match found {
            Some((shard, path)) => Ok((shard, path.as_path())),
            None => {
                let fault = CheckpointFault::TensorNotInIndex { name: info.name.clone() };
                Err(checkpoint_error(&self.dir, fault))
            }
        }
    }
}

/// The shard paths for `names` (already sorted) and their UTF-8 names, after the shard
/// numbering check.
fn check_names(model_dir: &Path, names: &[OsString]) -> Result<(Vec<PathBuf>, Vec<Option<String>>)> {
    if names.is_empty() {
        return Err(Error::NoShards { path: model_dir.to_path_buf() });
    }
    let utf8_names: Vec<Option<String>> = names.iter().map(|n| n.to_str().map(str::to_owned)).collect();
    let shard_paths: Vec<PathBuf> = names.iter().map(|n| model_dir.join(n)).collect();
    let name_refs: Vec<Option<&str>> = utf8_names.iter().map(Option::as_deref).collect();
    if let Err((site, fault)) = check_shard_numbering(&name_refs) {
        let path = match site {
            FaultSite::Shard(i) => shard_paths.get(i).map_or(model_dir, PathBuf::as_path),
            FaultSite::Folder => model_dir,
        };
        return Err(checkpoint_error(path, fault));
    }
    Ok((shard_paths, utf8_names))
}

/// Adds shard `shard_idx`'s tensors to `tensors`; a name seen before is a duplicate.
fn add_shard(
    tensors: &mut TensorTable,
    shard_paths: &[PathBuf],
    shard_idx: usize,
    infos: impl ExactSizeIterator<Item = TensorInfo>,
) -> Result<()> {
    let path = shard_paths.get(shard_idx).cloned().unwrap_or_default();
    tensors.reserve(infos.len());
    for info in infos {
        if let Err((first_idx, name)) = tensors.insert(info) {
            // `parse_header` leaves repeats within one header to this insertion.
            let fault = if first_idx == shard_idx {
                CheckpointFault::DuplicateKey { name }
            } else {
                CheckpointFault::DuplicateAcrossShards {
                    name,
                    first: shard_paths.get(first_idx).cloned().unwrap_or_default(),
                    second: path.clone(),
                }
            };
            return Err(checkpoint_error(&path, fault));
        }
    }
    Ok(())
}

/// Two tensor names equal up to letter case are refused (ST-07).
fn check_case(model_dir: &Path, shard_paths: &[PathBuf], tensors: &TensorTable) -> Result<()> {
    if let Some((first, second)) = tensors.case_collision() {
        let path = shard_paths.get(second.shard_idx).map_or(model_dir, PathBuf::as_path);
        let fault = CheckpointFault::NameCaseCollision { first: first.name.clone(), second: second.name.clone() };
        return Err(checkpoint_error(path, fault));
    }
    Ok(())
}

/// Reads `buf.len()` bytes at `info.offset`; a short read becomes `ShardChangedAfterOpen`.
/// Zero-size tensors never touch the file (ST-17).
fn read_at(shard: &Shard, path: &Path, info: &TensorInfo, buf: &mut [u8]) -> Result<()> {
    if buf.is_empty() {
        return Ok(());
    }
    match crate::os::read_exact_at(&shard.file, buf, info.offset) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
            let now = shard.file.metadata().map_err(|e| Error::io(path, e))?.len();
            if now < shard.file_len {
                let fault = CheckpointFault::ShardChangedAfterOpen { expected_len: shard.file_len, file_len: now };
                Err(checkpoint_error(path, fault))
            } else {
                Err(Error::io(path, e))
            }
        }
        Err(e) => Err(Error::io(path, e)),
    }
}
