//! TEMPORARY stub of the safetensors index (replaced by the strict implementation).
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    U8,
    F16,
    BF16,
    F32,
}
impl Dtype {
    pub fn size_bytes(self) -> u64 {
        match self {
            Dtype::U8 => 1,
            Dtype::F16 | Dtype::BF16 => 2,
            Dtype::F32 => 4,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Dtype::U8 => "U8",
            Dtype::F16 => "F16",
            Dtype::BF16 => "BF16",
            Dtype::F32 => "F32",
        }
    }
}
impl std::fmt::Display for Dtype {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CheckpointFault {
    #[error("bad header: {0}")]
    Bad(String),
}

#[derive(Debug, Clone)]
pub struct TensorInfo {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<u64>,
    pub shard_idx: usize,
    pub offset: u64,
    pub nbytes: u64,
}
impl TensorInfo {
    pub fn numel(&self) -> u64 {
        self.shape.iter().product()
    }
}

pub struct TensorIndex {
    paths: Vec<PathBuf>,
    files: Vec<File>,
    map: HashMap<String, TensorInfo>,
}
impl TensorIndex {
    pub fn open(dir: &Path) -> Result<TensorIndex> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| Error::io(dir, e))?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
            .collect();
        paths.sort();
        let mut files = Vec::new();
        let mut map = HashMap::new();
        for (si, p) in paths.iter().enumerate() {
            let f = File::open(p).map_err(|e| Error::io(p, e))?;
            let mut n = [0u8; 8];
            f.read_exact_at(&mut n, 0).map_err(|e| Error::io(p, e))?;
            let n = u64::from_le_bytes(n);
            let mut h = vec![0u8; n as usize];
            f.read_exact_at(&mut h, 8).map_err(|e| Error::io(p, e))?;
            let v: serde_json::Value = serde_json::from_slice(&h)
                .map_err(|e| Error::Checkpoint { path: p.clone(), fault: CheckpointFault::Bad(e.to_string()) })?;
            for (name, e) in v.as_object().unwrap() {
                if name == "__metadata__" {
                    continue;
                }
                let dtype = match e["dtype"].as_str().unwrap() {
                    "U8" => Dtype::U8,
                    "F16" => Dtype::F16,
                    "BF16" => Dtype::BF16,
                    "F32" => Dtype::F32,
                    d => panic!("{d}"),
                };
                let shape: Vec<u64> = e["shape"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
                let a = e["data_offsets"][0].as_u64().unwrap();
                let b = e["data_offsets"][1].as_u64().unwrap();
                map.insert(
                    name.clone(),
                    TensorInfo { name: name.clone(), dtype, shape, shard_idx: si, offset: 8 + n + a, nbytes: b - a },
                );
            }
            files.push(f);
        }
        Ok(TensorIndex { paths, files, map })
    }
    pub fn get(&self, name: &str) -> Option<&TensorInfo> {
        self.map.get(name)
    }
    pub fn tensors(&self) -> impl Iterator<Item = &TensorInfo> {
        self.map.values()
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub fn shard_paths(&self) -> &[PathBuf] {
        &self.paths
    }
    pub fn read(&self, info: &TensorInfo) -> Result<Vec<u8>> {
        let mut b = vec![0u8; info.nbytes as usize];
        self.read_into(info, &mut b)?;
        Ok(b)
    }
    pub fn read_into(&self, info: &TensorInfo, buf: &mut [u8]) -> Result<()> {
        self.files[info.shard_idx]
            .read_exact_at(buf, info.offset)
            .map_err(|e| Error::io(&self.paths[info.shard_idx], e))
    }
}
