//! The name → `TensorInfo` table behind `TensorIndex`.
//!
//! Owns: storing each tensor once (its name lives only in the `TensorInfo`, looked up by
//! `&str` through `Borrow`), and the case-collision scan over all names.
//! Must not: hash anything but the name: `Hash`, `Eq` and `Borrow<str>` must agree.
//! Easy to break: the real model has ~497k tensors; a second owned copy of every name
//! would cost ~30 MB, which is why this is a set of entries and not a map.

use std::borrow::Borrow;
use std::collections::hash_map::{Entry as MapEntry, HashMap};
use std::hash::{Hash, Hasher};

use super::names::lowercase_if_changed;
use super::tensor::TensorInfo;

/// A `TensorInfo` keyed by its name.
#[derive(Debug)]
struct Entry(TensorInfo);

impl Borrow<str> for Entry {
    fn borrow(&self) -> &str {
        &self.0.name
    }
}

impl Hash for Entry {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.name.as_str().hash(state);
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for Entry {}

/// Every tensor of the checkpoint, by name. (A map to `()` rather than a set for the
/// entry API: one hash per insertion.)
#[derive(Debug, Default)]
pub(crate) struct TensorTable {
    set: HashMap<Entry, ()>,
}

impl TensorTable {
    pub(crate) fn get(&self, name: &str) -> Option<&TensorInfo> {
        self.set.get_key_value(name).map(|(e, ())| &e.0)
    }

    pub(crate) fn reserve(&mut self, additional: usize) {
        self.set.reserve(additional);
    }

    /// Inserts `info`, or returns the shard index and name of the tensor already stored
    /// under its name.
    pub(crate) fn insert(&mut self, info: TensorInfo) -> Result<(), (usize, String)> {
        match self.set.entry(Entry(info)) {
            MapEntry::Occupied(existing) => {
                let existing = &existing.key().0;
                Err((existing.shard_idx, existing.name.clone()))
            }
            MapEntry::Vacant(slot) => {
                slot.insert(());
                Ok(())
            }
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &TensorInfo> {
        self.set.keys().map(|e| &e.0)
    }

    pub(crate) fn len(&self) -> usize {
        self.set.len()
    }

    /// Two names equal up to letter case, the one in the earlier shard (then name) first.
    ///
    /// Only names that change under lower-casing can collide with a different name: such a
    /// name collides either with a stored name equal to its lower-cased form, or with
    /// another changing name of the same lower-cased form. The real model has ~100 of them.
    pub(crate) fn case_collision(&self) -> Option<(&TensorInfo, &TensorInfo)> {
        let order =
            |a: &'_ TensorInfo, b: &'_ TensorInfo| (a.shard_idx, a.name.as_str()) <= (b.shard_idx, b.name.as_str());
        let mut folded: HashMap<String, &TensorInfo> = HashMap::new();
        for info in self.iter() {
            let Some(lower) = lowercase_if_changed(&info.name) else {
                continue;
            };
            let other = match self.get(&lower) {
                Some(other) => Some(other),
                None => folded.insert(lower, info),
            };
            if let Some(other) = other {
                return Some(if order(other, info) { (other, info) } else { (info, other) });
            }
        }
        None
    }
}
