//! `model.safetensors.index.json`: optional, and only ever checked against the headers.
//!
//! Owns: IX-01..IX-03 — the size cap, duplicate keys at every level, safe shard file names,
//! agreement between `weight_map` and the shard headers in both directions, and
//! `metadata.total_size`.
//! Must not: be trusted over the headers, or build a `serde_json::Value` (the real index
//! maps ~497k names); entries are checked while they stream past.
//! Easy to break: a tensor listed twice must be caught even when both entries agree, which
//! is why `seen` records every name taken from `weight_map`.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs;
use std::io::{ErrorKind, Read};
use std::path::Path;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::fault::CheckpointFault;
use super::json_probe::{abort, json_syntax, visit_kinds, Kind, NumProbe, StrProbe};
use super::names::check_shard_file_name;
use super::shard::{checkpoint_error, open_regular, require_regular};
use super::table::TensorTable;
use crate::error::{Error, Result};

/// The index file's name inside the model folder.
pub(crate) const INDEX_FILE_NAME: &str = "model.safetensors.index.json";
/// Largest index file accepted (IX-03); the real one is ~60 MB.
pub(crate) const INDEX_CAP_BYTES: u64 = 64 << 20;

/// Checks the index file in `model_dir`, if there is one, against `table`.
/// `shard_names[i]` is shard `i`'s file name (None if it is not UTF-8).
pub(crate) fn check_index_file(model_dir: &Path, table: &TensorTable, shard_names: &[Option<String>]) -> Result<()> {
    let path = model_dir.join(INDEX_FILE_NAME);
    let meta = match fs::metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(path, e)),
    };
    require_regular(&path, &meta)?;
    if meta.len() > INDEX_CAP_BYTES {
        let fault = CheckpointFault::IndexTooLarge { len: meta.len(), max: INDEX_CAP_BYTES };
        return Err(checkpoint_error(&path, fault));
    }
    let (file, len) = open_regular(&path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(len.min(INDEX_CAP_BYTES)).unwrap_or(0));
    file.take(INDEX_CAP_BYTES.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| Error::io(&path, e))?;
    check_index_text(&path, &bytes, table, shard_names)
}

/// The checks of `check_index_file` on the file's bytes (read from `path`, named in errors).
pub(crate) fn check_index_text(
    path: &Path,
    bytes: &[u8],
    table: &TensorTable,
    shard_names: &[Option<String>],
) -> Result<()> {
    let read_len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read_len > INDEX_CAP_BYTES {
        let fault = CheckpointFault::IndexTooLarge { len: read_len, max: INDEX_CAP_BYTES };
        return Err(checkpoint_error(path, fault));
    }
    check_index_bytes(bytes, table, shard_names).map_err(|fault| checkpoint_error(path, fault))
}

/// Pure part of `check_index_file`.
pub(crate) fn check_index_bytes(
    bytes: &[u8],
    table: &TensorTable,
    shard_names: &[Option<String>],
) -> std::result::Result<(), CheckpointFault> {
    let mut fault = None;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let top = TopVisitor {
        ctx: Ctx {
            table,
            shard_names,
            resolved: HashMap::new(),
            seen: HashSet::with_capacity(table.len()),
            fault: &mut fault,
        },
    };
    let parsed = top.deserialize(&mut de).and_then(|s| de.end().map(|()| s));
    let summary = match parsed {
        Ok(summary) => summary,
        Err(err) => return Err(fault.unwrap_or_else(|| json_syntax(&err))),
    };
    let Some(seen) = summary.seen else {
        return Err(CheckpointFault::IndexMissingWeightMap);
    };
    let missing = table.iter().filter(|t| !seen.contains(t.name.as_str())).min_by(|a, b| a.name.cmp(&b.name));
    if let Some(t) = missing {
        return Err(CheckpointFault::IndexMissingTensor {
            tensor: t.name.clone(),
            shard: shard_display(shard_names, t.shard_idx),
        });
    }
    if let Some(index_total) = summary.total_size {
        let actual_total: u128 = table.iter().map(|t| u128::from(t.nbytes)).sum();
        if u128::from(index_total) != actual_total {
            return Err(CheckpointFault::IndexTotalSize { index_total, actual_total });
        }
    }
    Ok(())
}

fn shard_display(shard_names: &[Option<String>], idx: usize) -> String {
    match shard_names.get(idx) {
        Some(Some(name)) => name.clone(),
        _ => format!("(shard #{idx})"),
    }
}

/// State shared by the nested visitors.
struct Ctx<'t, 'f> {
    table: &'t TensorTable,
    shard_names: &'t [Option<String>],
    /// File names already validated, with their shard position.
    resolved: HashMap<String, usize>,
    /// Tensor names taken from `weight_map` so far (borrowed from the table).
    seen: HashSet<&'t str>,
    fault: &'f mut Option<CheckpointFault>,
}

struct Summary<'t> {
    /// None when there was no `weight_map`.
    seen: Option<HashSet<&'t str>>,
    total_size: Option<u64>,
}

struct TopVisitor<'t, 'f> {
    ctx: Ctx<'t, 'f>,
}

impl TopVisitor<'_, '_> {
    fn other<T, E: serde::de::Error>(self, found: Kind) -> std::result::Result<T, E> {
        abort(self.ctx.fault, CheckpointFault::IndexNotObject { found })
    }
}

impl<'de, 't> DeserializeSeed<'de> for TopVisitor<'t, '_> {
    type Value = Summary<'t>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 't> Visitor<'de> for TopVisitor<'t, '_> {
    type Value = Summary<'t>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the index object")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
        let mut keys = HashSet::new();
        let mut had_weight_map = false;
        let mut total_size = None;
        while let Some(key) = map.next_key::<String>()? {
            if keys.contains(&key) {
                let fault = CheckpointFault::IndexDuplicateKey { key, within: "top level" };
                return abort(self.ctx.fault, fault);
            }
            match key.as_str() {
                "weight_map" => {
                    map.next_value_seed(WeightMapVisitor { ctx: &mut self.ctx })?;
                    had_weight_map = true;
                }
                "metadata" => {
                    total_size = map.next_value_seed(MetadataVisitor { fault: &mut *self.ctx.fault })?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            keys.insert(key);
        }
        Ok(Summary { seen: had_weight_map.then_some(self.ctx.seen), total_size })
    }

    visit_kinds!('de; bool u64 i64 f64 str unit seq);
}

/// Streams `weight_map`, checking each `tensor → file` pair against the headers.
struct WeightMapVisitor<'c, 't, 'f> {
    ctx: &'c mut Ctx<'t, 'f>,
}

impl WeightMapVisitor<'_, '_, '_> {
    fn other<T, E: serde::de::Error>(self, found: Kind) -> std::result::Result<T, E> {
        abort(self.ctx.fault, CheckpointFault::IndexWeightMapNotObject { found })
    }

    /// Position of shard file `shard`, or the fault that `tensor`'s entry causes.
    fn resolve(&mut self, tensor: &str, shard: &str) -> std::result::Result<usize, CheckpointFault> {
        if let Some(&idx) = self.ctx.resolved.get(shard) {
            return Ok(idx);
        }
        if let Err(reason) = check_shard_file_name(shard) {
            return Err(CheckpointFault::IndexShardNameUnsafe {
                tensor: tensor.to_owned(),
                shard: shard.to_owned(),
                reason,
            });
        }
        let Some(idx) = self.ctx.shard_names.iter().position(|n| n.as_deref() == Some(shard)) else {
            return Err(CheckpointFault::IndexShardMissing { tensor: tensor.to_owned(), shard: shard.to_owned() });
        };
        self.ctx.resolved.insert(shard.to_owned(), idx);
        Ok(idx)
    }

    /// Checks one pair and records the tensor as seen.
    fn check(&mut self, tensor: String, shard: String) -> std::result::Result<(), CheckpointFault> {
        let shard_idx = self.resolve(&tensor, &shard)?;
        let table = self.ctx.table;
        let Some(info) = table.get(&tensor) else {
            return Err(CheckpointFault::IndexUnknownTensor { tensor, shard });
        };
        if !self.ctx.seen.insert(info.name.as_str()) {
            return Err(CheckpointFault::IndexDuplicateKey { key: tensor, within: "weight_map" });
        }
        if info.shard_idx != shard_idx {
            return Err(CheckpointFault::IndexWrongShard {
                tensor,
                index_shard: shard,
                header_shard: shard_display(self.ctx.shard_names, info.shard_idx),
            });
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for WeightMapVisitor<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for WeightMapVisitor<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of tensor name to file name")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> std::result::Result<(), A::Error> {
        while let Some(tensor) = map.next_key::<String>()? {
            let verdict = match map.next_value::<StrProbe>()? {
                StrProbe::Str(shard) => self.check(tensor, shard),
                StrProbe::Other(found) => Err(CheckpointFault::IndexShardNotString { tensor, found }),
            };
            if let Err(fault) = verdict {
                return abort(self.ctx.fault, fault);
            }
        }
        Ok(())
    }

    visit_kinds!('de; bool u64 i64 f64 str unit seq);
}

/// `metadata`: an object whose `total_size`, if present, is a u64. Other keys are ignored.
struct MetadataVisitor<'f> {
    fault: &'f mut Option<CheckpointFault>,
}

impl MetadataVisitor<'_> {
    fn other<T, E: serde::de::Error>(self, found: Kind) -> std::result::Result<T, E> {
        abort(self.fault, CheckpointFault::IndexMetadataNotObject { found })
    }
}

impl<'de> DeserializeSeed<'de> for MetadataVisitor<'_> {
    type Value = Option<u64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Option<u64>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for MetadataVisitor<'_> {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the index metadata object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Option<u64>, A::Error> {
        let mut keys = HashSet::new();
        let mut total_size = None;
        while let Some(key) = map.next_key::<String>()? {
            if keys.contains(&key) {
                let fault = CheckpointFault::IndexDuplicateKey { key, within: "metadata" };
                return abort(self.fault, fault);
            }
            if key == "total_size" {
                match map.next_value::<NumProbe>()? {
                    NumProbe::U(v) => total_size = Some(v),
                    other => {
                        let found = other.describe();
                        return abort(self.fault, CheckpointFault::IndexTotalSizeInvalid { found });
                    }
                }
            } else {
                map.next_value::<IgnoredAny>()?;
            }
            keys.insert(key);
        }
        Ok(total_size)
    }

    visit_kinds!('de; bool u64 i64 f64 str unit seq);
}
