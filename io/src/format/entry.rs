//! One header entry: what `{"dtype","shape","data_offsets"}` and `__metadata__` may hold.
//!
//! Owns: the probes that record each field without failing on a type surprise, and
//! `validate_entry`, which turns them into a `HeaderEntry` or the first fault in a fixed
//! order (not an object, repeated field, unknown field, missing field, dtype, shape,
//! offsets, begin > end, overflow, size) — ST-10..ST-15.
//! Must not: allocate per entry beyond the name and the shape (this runs ~280k times for a
//! header at the cap), or use unchecked arithmetic.
//! Easy to break: the field order of the checks is what the corpus asserts; a probe must
//! consume its whole value even when it records a fault.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::dtype::Dtype;
use super::fault::CheckpointFault;
use super::json_probe::{visit_kinds, Kind, ListProbe, NumProbe, StrProbe};

/// One validated header entry; `begin..end` is relative to the data section.
#[derive(Debug)]
pub(crate) struct HeaderEntry {
    pub(crate) name: String,
    pub(crate) dtype: Dtype,
    pub(crate) shape: Vec<u64>,
    pub(crate) begin: u64,
    pub(crate) end: u64,
}

/// Most dimensions a tensor may have (ST-12).
pub(crate) const MAX_DIMS: usize = 8;
/// Largest single dimension (ST-12); 2^48 elements is far beyond any real tensor.
pub(crate) const MAX_DIM: u64 = 1 << 48;

/// Turns a probed entry into a `HeaderEntry` or the first fault, in a fixed order.
pub(crate) fn validate_entry(name: String, probe: EntryProbe, data_start: u64) -> Result<HeaderEntry, CheckpointFault> {
    use CheckpointFault as F;
    if let Some(found) = probe.not_object {
        return Err(F::EntryNotObject { name, found });
    }
    if let Some(field) = probe.duplicate_field {
        return Err(F::EntryDuplicateField { name, field });
    }
    if let Some(field) = probe.unknown_field {
        return Err(F::EntryUnknownField { name, field });
    }
    let missing =
        [(probe.dtype.is_none(), "dtype"), (probe.shape.is_none(), "shape"), (probe.offsets.is_none(), "data_offsets")];
    if let Some(&(_, field)) = missing.iter().find(|(absent, _)| *absent) {
        return Err(F::EntryMissingField { name, field });
    }
    let (Some(dtype), Some(shape), Some(offsets)) = (probe.dtype, probe.shape, probe.offsets) else {
        return Err(F::EntryMissingField { name, field: "dtype" });
    };
    let dtype = match dtype {
        DtypeProbe::Known(d) => d,
        DtypeProbe::Unknown(s) => return Err(F::UnknownDtype { name, dtype: s }),
        DtypeProbe::Other(found) => return Err(F::DtypeNotString { name, found }),
    };
    let shape = validate_shape(&name, shape)?;
    let [begin, end] = validate_offsets(&name, offsets)?;
    if begin > end {
        return Err(F::OffsetsReversed { name, begin, end });
    }
    let Some(numel) = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)) else {
        return Err(F::Overflow { name, what: "element count" });
    };
    let Some(expected) = numel.checked_mul(dtype.size_bytes()) else {
        return Err(F::Overflow { name, what: "byte size" });
    };
    let actual = end.saturating_sub(begin);
    if actual != expected {
        return Err(F::SizeMismatch { name, dtype, shape, expected, actual });
    }
    if data_start.checked_add(end).is_none() {
        return Err(F::Overflow { name, what: "absolute end offset" });
    }
    Ok(HeaderEntry { name, dtype, shape, begin, end })
}

fn validate_shape(name: &str, shape: ListProbe) -> Result<Vec<u64>, CheckpointFault> {
    let (items, kept, count) = match shape {
        ListProbe::Items { items, kept, count } => (items, kept, count),
        ListProbe::Other(found) => return Err(CheckpointFault::ShapeNotArray { name: name.to_owned(), found }),
    };
    if count > MAX_DIMS {
        return Err(CheckpointFault::TooManyDims { name: name.to_owned(), ndim: count, max: MAX_DIMS });
    }
    let items = ListProbe::kept(&items, kept);
    let mut dims = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        match *item {
            NumProbe::U(dim) if dim > MAX_DIM => {
                return Err(CheckpointFault::DimTooLarge { name: name.to_owned(), index, dim, max: MAX_DIM })
            }
            NumProbe::U(dim) => dims.push(dim),
            _ => return Err(CheckpointFault::DimNotInteger { name: name.to_owned(), index, found: item.describe() }),
        }
    }
    Ok(dims)
}

fn validate_offsets(name: &str, offsets: ListProbe) -> Result<[u64; 2], CheckpointFault> {
    let (items, kept) = match offsets {
        ListProbe::Items { items, kept, count: 2 } => (items, kept),
        ListProbe::Items { count, .. } => return Err(CheckpointFault::OffsetsCount { name: name.to_owned(), count }),
        ListProbe::Other(found) => return Err(CheckpointFault::OffsetsNotArray { name: name.to_owned(), found }),
    };
    let mut pair = [0u64; 2];
    let items = ListProbe::kept(&items, kept);
    for ((index, item), slot) in items.iter().enumerate().zip(pair.iter_mut()) {
        match *item {
            NumProbe::U(v) => *slot = v,
            _ => {
                return Err(CheckpointFault::OffsetNotInteger { name: name.to_owned(), index, found: item.describe() })
            }
        }
    }
    Ok(pair)
}

/// The `dtype` field, recognised without allocating for the known spellings.
enum DtypeProbe {
    Known(Dtype),
    Unknown(String),
    Other(Kind),
}

impl<'de> de::Deserialize<'de> for DtypeProbe {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DtypeVisitor)
    }
}

struct DtypeVisitor;

impl DtypeVisitor {
    fn other<E>(self, kind: Kind) -> Result<DtypeProbe, E> {
        Ok(DtypeProbe::Other(kind))
    }
}

impl<'de> Visitor<'de> for DtypeVisitor {
    type Value = DtypeProbe;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a dtype string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<DtypeProbe, E> {
        Ok(Dtype::from_name(v).map_or_else(|| DtypeProbe::Unknown(v.to_owned()), DtypeProbe::Known))
    }

    visit_kinds!('de; bool u64 i64 f64 unit seq map);
}

/// What one tensor entry held; judged afterwards by `validate_entry`.
#[derive(Default)]
pub(crate) struct EntryProbe {
    not_object: Option<Kind>,
    dtype: Option<DtypeProbe>,
    shape: Option<ListProbe>,
    offsets: Option<ListProbe>,
    duplicate_field: Option<&'static str>,
    unknown_field: Option<String>,
}

impl<'de> de::Deserialize<'de> for EntryProbe {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EntryVisitor)
    }
}

struct EntryVisitor;

impl EntryVisitor {
    fn other<E>(self, kind: Kind) -> Result<EntryProbe, E> {
        Ok(EntryProbe { not_object: Some(kind), ..EntryProbe::default() })
    }
}

/// The three field names, recognised without allocating.
enum FieldKey {
    Dtype,
    Shape,
    DataOffsets,
    Other(String),
}

impl<'de> de::Deserialize<'de> for FieldKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = FieldKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<FieldKey, E> {
                Ok(match v {
                    "dtype" => FieldKey::Dtype,
                    "shape" => FieldKey::Shape,
                    "data_offsets" => FieldKey::DataOffsets,
                    other => FieldKey::Other(other.to_owned()),
                })
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = EntryProbe;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tensor entry")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EntryProbe, A::Error> {
        let mut out = EntryProbe::default();
        while let Some(key) = map.next_key::<FieldKey>()? {
            let (slot_taken, field) = match key {
                FieldKey::Dtype => (out.dtype.is_some(), "dtype"),
                FieldKey::Shape => (out.shape.is_some(), "shape"),
                FieldKey::DataOffsets => (out.offsets.is_some(), "data_offsets"),
                FieldKey::Other(field) => {
                    out.unknown_field.get_or_insert(field);
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if slot_taken {
                out.duplicate_field.get_or_insert(field);
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            match field {
                "dtype" => out.dtype = Some(map.next_value()?),
                "shape" => out.shape = Some(map.next_value()?),
                _ => out.offsets = Some(map.next_value()?),
            }
        }
        Ok(out)
    }

    visit_kinds!('de; bool u64 i64 f64 str unit seq);
}

/// `__metadata__`: an object of string → string, keys unique (ST-15). Kept only as a verdict.
pub(crate) struct MetadataProbe(pub(crate) Result<(), CheckpointFault>);

impl<'de> de::Deserialize<'de> for MetadataProbe {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MetadataVisitor)
    }
}

struct MetadataVisitor;

impl MetadataVisitor {
    fn other<E>(self, found: Kind) -> Result<MetadataProbe, E> {
        Ok(MetadataProbe(Err(CheckpointFault::MetadataNotObject { found })))
    }
}

impl<'de> Visitor<'de> for MetadataVisitor {
    type Value = MetadataProbe;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MetadataProbe, A::Error> {
        let mut seen = HashSet::new();
        let mut verdict = Ok(());
        while let Some(key) = map.next_key::<String>()? {
            let value: StrProbe = map.next_value()?;
            if verdict.is_err() {
                continue;
            }
            if seen.contains(&key) {
                verdict = Err(CheckpointFault::MetadataDuplicateKey { key });
            } else if let StrProbe::Other(found) = value {
                verdict = Err(CheckpointFault::MetadataValueNotString { key, found });
            } else {
                seen.insert(key);
            }
        }
        Ok(MetadataProbe(verdict))
    }

    visit_kinds!('de; bool u64 i64 f64 str unit seq);
}
