//! Small serde visitors that report what a JSON value *was* instead of failing on a type
//! mismatch, so the header and index readers can turn every surprise into a precise
//! `CheckpointFault` rather than a serde message.
//!
//! Owns: the probes (`StrProbe`, `NumProbe`, `ListProbe`), the `visit_kinds!` macro that
//! gives a visitor the "anything else" methods, and the abort convention (`abort`): a
//! visitor that finds a fault stores it in a caller-owned slot and returns a marker error;
//! the caller then prefers the stored fault over serde's error.
//! Must not: build `serde_json::Value` trees (a 16 MiB header would cost several times that)
//! or recurse on its own; nested values are drained with `IgnoredAny` so serde_json's
//! recursion limit still bounds depth.
//! Easy to break: a probe must consume its whole value, or serde_json reports a syntax
//! error that hides the real fault.

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use std::fmt;

use super::fault::CheckpointFault;

/// Name of a JSON value's kind, for messages ("string", "array", ...).
pub(crate) type Kind = &'static str;

/// Generates the `visit_*` methods for the listed JSON kinds; each consumes the value and
/// calls the visitor's own `self.other(kind)`.
macro_rules! visit_kinds {
    ($de:lifetime; $($k:ident)*) => { $( visit_kinds!(@one $de; $k); )* };
    (@one $de:lifetime; bool) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> ::core::result::Result<Self::Value, E> {
            self.other("boolean")
        }
    };
    (@one $de:lifetime; u64) => {
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> ::core::result::Result<Self::Value, E> {
            self.other("number")
        }
    };
    (@one $de:lifetime; i64) => {
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> ::core::result::Result<Self::Value, E> {
            self.other("number")
        }
    };
    (@one $de:lifetime; f64) => {
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> ::core::result::Result<Self::Value, E> {
            self.other("number")
        }
    };
    (@one $de:lifetime; str) => {
        fn visit_str<E: serde::de::Error>(self, _: &str) -> ::core::result::Result<Self::Value, E> {
            self.other("string")
        }
    };
    (@one $de:lifetime; unit) => {
        fn visit_unit<E: serde::de::Error>(self) -> ::core::result::Result<Self::Value, E> {
            self.other("null")
        }
    };
    (@one $de:lifetime; seq) => {
        fn visit_seq<A: serde::de::SeqAccess<$de>>(self, mut seq: A) -> ::core::result::Result<Self::Value, A::Error> {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            self.other("array")
        }
    };
    (@one $de:lifetime; map) => {
        fn visit_map<A: serde::de::MapAccess<$de>>(self, mut map: A) -> ::core::result::Result<Self::Value, A::Error> {
            while map
                .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                .is_some()
            {}
            self.other("object")
        }
    };
}
pub(crate) use visit_kinds;

/// Records `fault` in `slot` and returns the marker error that unwinds serde.
pub(crate) fn abort<T, E: de::Error>(slot: &mut Option<CheckpointFault>, fault: CheckpointFault) -> Result<T, E> {
    *slot = Some(fault);
    Err(E::custom("checkpoint fault recorded"))
}

/// Turns serde_json's error into `JsonSyntax` (its text without the repeated position).
pub(crate) fn json_syntax(err: &serde_json::Error) -> CheckpointFault {
    let (line, column) = (err.line(), err.column());
    let text = err.to_string();
    let suffix = format!(" at line {line} column {column}");
    let detail = text.strip_suffix(suffix.as_str()).unwrap_or(&text).to_owned();
    CheckpointFault::JsonSyntax { line, column, detail }
}

/// A value that should be a string.
pub(crate) enum StrProbe {
    Str(String),
    Other(Kind),
}

impl<'de> Deserialize<'de> for StrProbe {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrProbeVisitor)
    }
}

struct StrProbeVisitor;

impl StrProbeVisitor {
    fn other<E>(self, kind: Kind) -> Result<StrProbe, E> {
        Ok(StrProbe::Other(kind))
    }
}

impl<'de> Visitor<'de> for StrProbeVisitor {
    type Value = StrProbe;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<StrProbe, E> {
        Ok(StrProbe::Str(v.to_owned()))
    }
    visit_kinds!('de; bool u64 i64 f64 unit seq map);
}

/// A value that should be a non-negative integer.
#[derive(Debug, Clone, Copy)]
pub(crate) enum NumProbe {
    U(u64),
    Neg(i64),
    Float(f64),
    Other(Kind),
}

impl NumProbe {
    /// How the value looked, for messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            NumProbe::U(v) => v.to_string(),
            NumProbe::Neg(v) => v.to_string(),
            NumProbe::Float(v) => format!("{v:?}"),
            NumProbe::Other(kind) => (*kind).to_owned(),
        }
    }
}

impl<'de> Deserialize<'de> for NumProbe {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NumProbeVisitor)
    }
}

struct NumProbeVisitor;

impl NumProbeVisitor {
    fn other<E>(self, kind: Kind) -> Result<NumProbe, E> {
        Ok(NumProbe::Other(kind))
    }
}

impl<'de> Visitor<'de> for NumProbeVisitor {
    type Value = NumProbe;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<NumProbe, E> {
        Ok(NumProbe::U(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<NumProbe, E> {
        Ok(u64::try_from(v).map_or(NumProbe::Neg(v), NumProbe::U))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<NumProbe, E> {
        Ok(NumProbe::Float(v))
    }
    visit_kinds!('de; bool str unit seq map);
}

/// Items kept by a `ListProbe`; later items are only counted.
pub(crate) const LIST_KEEP: usize = 9;

/// A value that should be an array of non-negative integers (`shape`, `data_offsets`).
/// Stored inline on purpose (hence the lint allowance): the header reader probes two of
/// these per tensor, and a heap allocation each would double the parse time at the cap.
#[allow(clippy::large_enum_variant)]
pub(crate) enum ListProbe {
    /// The first `kept` (at most `LIST_KEEP`) items and the total count.
    Items {
        items: [NumProbe; LIST_KEEP],
        kept: usize,
        count: usize,
    },
    Other(Kind),
}

impl ListProbe {
    /// The kept items (all of them when `count <= LIST_KEEP`).
    pub(crate) fn kept(items: &[NumProbe; LIST_KEEP], kept: usize) -> &[NumProbe] {
        items.get(..kept).unwrap_or(items)
    }
}

impl<'de> Deserialize<'de> for ListProbe {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ListProbeVisitor)
    }
}

struct ListProbeVisitor;

impl ListProbeVisitor {
    fn other<E>(self, kind: Kind) -> Result<ListProbe, E> {
        Ok(ListProbe::Other(kind))
    }
}

impl<'de> Visitor<'de> for ListProbeVisitor {
    type Value = ListProbe;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ListProbe, A::Error> {
        let mut items = [NumProbe::U(0); LIST_KEEP];
        let mut kept: usize = 0;
        let mut count: usize = 0;
        loop {
            if let Some(slot) = items.get_mut(kept) {
                match seq.next_element::<NumProbe>()? {
                    Some(item) => {
                        *slot = item;
                        kept = kept.saturating_add(1);
                    }
                    None => break,
                }
            } else if seq.next_element::<de::IgnoredAny>()?.is_none() {
                break;
            }
            count = count.saturating_add(1);
        }
        Ok(ListProbe::Items { items, kept, count })
    }
    visit_kinds!('de; bool u64 i64 f64 str unit map);
}
