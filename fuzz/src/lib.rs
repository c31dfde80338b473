//! Helpers the fuzz targets share: the section format that packs several files into one
//! input, the micro checkpoint every target that needs a model context uses, and an
//! independent duplicate-key check for JSON (the oracle some targets compare against).
//!
//! Owns: [`sections`] / [`join_sections`] (files separated by [`SECTION`]), [`Checkpoint`]
//! (config, optional index, shards as `[u64 LE file length][header]`), [`micro`] (the
//! checkpoint in `data/micro.ckpt`, parsed once), [`json_has_duplicate_keys`].
//! Must not: implement a rule of the code under test: a target asserts what the engine
//! promises, with its own arithmetic, and calls the engine for everything else.

use std::collections::HashSet;
use std::fmt;
use std::path::Path;
use std::sync::OnceLock;

use k3_io::format::{ShardHead, TensorIndex};
use k3_engine::ModelConfig;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};

/// Separates the files of one input. Eight bytes no JSON or header text holds.
pub const SECTION: &[u8] = b"\n\0-8<-\0\n";

/// The model folder every target names in paths (nothing is read from it).
pub const MODEL_DIR: &str = "/fuzz/model";

/// The parts of `data` between [`SECTION`] markers.
pub fn sections(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(at) = find_section(rest) {
        out.push(&rest[..at]);
        rest = &rest[at + SECTION.len()..];
    }
    out.push(rest);
    out
}

/// Where the first [`SECTION`] marker starts. `memchr`'s search, not a comparison at every
/// offset: that was a `memcmp` per input byte, each one traced by libFuzzer, and took 61 % of
/// `checkpoint_plan`'s time (perf, 2026-12-07); a byte-by-byte scan still took 13 %. The
/// targets' dictionaries (`fuzz/dict/`) hold the marker, so the fuzzer still finds it.
fn find_section(data: &[u8]) -> Option<usize> {
    memchr::memmem::find(data, SECTION)
}

/// The inverse of [`sections`].
pub fn join_sections(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(SECTION);
        }
        out.extend_from_slice(part);
    }
    out
}

/// The little-endian u64 at `at` (missing bytes read as zero).
pub fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut le = [0u8; 8];
    for (i, b) in le.iter_mut().enumerate() {
        *b = bytes.get(at + i).copied().unwrap_or(0);
    }
    u64::from_le_bytes(le)
}

/// The released naming of shard `i` (one-based) of `n`.
pub fn shard_name(i: usize, n: usize) -> String {
    format!("model-{i:05}-of-{n:06}.safetensors")
}

/// A checkpoint packed into sections: `config`, `index` (empty: no index file), then one
/// section per shard, `[u64 LE file length][header bytes]`.
pub struct Checkpoint<'a> {
    pub config: &'a [u8],
    pub index: Option<&'a [u8]>,
    pub names: Vec<String>,
    pub shards: Vec<(u64, &'a [u8])>,
}

impl<'a> Checkpoint<'a> {
    /// The checkpoint of `parts` (at least config and index), or `None`.
    pub fn from_sections(parts: &[&'a [u8]]) -> Option<Checkpoint<'a>> {
        let (config, index, shards) = (parts.first()?, parts.get(1)?, parts.get(2..)?);
        let shards: Vec<(u64, &[u8])> = shards.iter().map(|s| (u64_at(s, 0), s.get(8..).unwrap_or_default())).collect();
        let names = (1..=shards.len()).map(|i| shard_name(i, shards.len())).collect();
        Some(Checkpoint { config, index: (!index.is_empty()).then_some(*index), names, shards })
    }

    /// The shards as the engine's `ShardHead`s.
    pub fn heads(&self) -> Vec<ShardHead<'_>> {
        self.names
            .iter()
            .zip(&self.shards)
            .map(|(name, &(file_len, header))| ShardHead { file_name: name, header, file_len })
            .collect()
    }

    /// The config and the index `TensorIndex::from_heads` builds, or the first refusal.
    pub fn open(&self) -> k3_engine::Result<(ModelConfig, TensorIndex)> {
        let dir = Path::new(MODEL_DIR);
        let cfg = ModelConfig::from_json(self.config, &dir.join("config.json"))?;
        let index = TensorIndex::from_heads(dir, &self.heads(), self.index)?;
        Ok((cfg, index))
    }
}

/// `data/micro.ckpt`: a valid two-layer checkpoint (KDA + dense, MLA + MoE with four
/// experts), written by `fuzz/make_seeds.py` from a `k3 synth` folder.
pub const MICRO_CKPT: &[u8] = include_bytes!("../data/micro.ckpt");

/// The micro checkpoint, parsed once; a target's fixed model context.
pub fn micro() -> &'static (ModelConfig, TensorIndex) {
    static MICRO: OnceLock<(ModelConfig, TensorIndex)> = OnceLock::new();
    MICRO.get_or_init(|| {
        let parts = sections(MICRO_CKPT);
        let ckpt = Checkpoint::from_sections(&parts).expect("data/micro.ckpt has sections");
        ckpt.open().expect("data/micro.ckpt is a valid checkpoint")
    })
}

/// True when `bytes` parse as JSON and some object repeats a key (at any depth); false for
/// valid JSON without repeats and for anything that does not parse.
pub fn json_has_duplicate_keys(bytes: &[u8]) -> bool {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match de.deserialize_any(DupCheck) {
        Ok(()) => false,
        Err(e) => e.to_string().starts_with(DUPLICATE),
    }
}

const DUPLICATE: &str = "duplicate key";

struct DupCheck;

impl<'de> serde::de::DeserializeSeed<'de> for DupCheck {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DupCheck {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(DupCheck)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !keys.insert(key) {
                return Err(serde::de::Error::custom(DUPLICATE));
            }
            map.next_value_seed(DupCheck)?;
        }
        Ok(())
    }
}

/// Asserts what `k3_plan` promises of a plan it returned for `fp` under `req` on `machine`:
/// within its budgets (the fixed one, or `auto`'s), every part consistent with the
/// footprint, the total the exact sum of the parts, and within what is available when asked.
pub fn assert_plan_keeps_its_promises(
    fp: &k3_plan::Footprint,
    req: &k3_plan::MemoryRequest,
    machine: k3_plan::MachineMemory,
    refuse_beyond_available: bool,
    p: &k3_plan::MemoryPlan,
) {
    use k3_plan::BudgetChoice;
    let budget = match req.choice {
        BudgetChoice::Fixed(b) => b,
        BudgetChoice::Auto => k3_plan::auto_budget_for(fp, machine, req.context_length)
            .expect("a plan made with `auto` had an `auto` budget"),
    };
    let wide = u128::from;
    assert!(p.trunk_bytes <= budget.trunk_bytes, "trunk {} over budget {}", p.trunk_bytes, budget.trunk_bytes);
    assert!(p.cache_bytes <= budget.cache_bytes, "cache {} over budget {}", p.cache_bytes, budget.cache_bytes);
    let layers = &fp.layer_trunk_bytes;
    assert!(p.pinned_layers <= layers.len());
    let pinned: u128 = layers[..p.pinned_layers].iter().copied().map(wide).sum();
    assert_eq!(wide(p.pinned_bytes), pinned, "pinned bytes");
    if !req.streamed_trunk {
        assert_eq!(p.pinned_layers, layers.len(), "without a packed trunk every layer is resident");
    }
    let streamed = layers.iter().zip(0..).skip(p.pinned_layers);
    // A layer larger than the slot streams in pieces: the slot holds its largest piece.
    let through_slot = |(&whole, l): (&u64, usize)| match fp.layer_pieces.get(l) {
        Some(pieces) if whole > p.ring_slot_bytes => pieces.largest_piece,
        _ => whole,
    };
    match streamed.clone().map(through_slot).max() {
        None => assert_eq!(p.ring_slots, 0, "a ring with nothing to stream"),
        Some(largest) => {
            assert!(p.ring_slots == 1 || p.ring_slots == 2, "{} ring slots", p.ring_slots);
            assert!(p.ring_slot_bytes >= largest, "a ring slot smaller than a streamed layer or piece");
        }
    }
    let ring = (p.ring_slots as u128) * wide(p.ring_slot_bytes);
    assert_eq!(wide(p.trunk_bytes), pinned + ring + wide(p.piece_eager_bytes), "trunk = pinned + ring + pieces");
    assert_eq!(wide(p.cache_bytes), wide(p.cache_slots) * wide(p.cache_slot_bytes), "cache = slots × slot");
    assert!(p.cache_slot_bytes >= fp.expert_bytes, "a cache slot smaller than an expert");
    assert!(p.cache_slots <= fp.n_experts_total, "more slots than experts");
    assert!(p.cache_slots >= fp.top_k.saturating_add(1).min(fp.n_experts_total), "fewer slots than top-k + 1");
    assert_eq!(p.vocab, k3_plan::VocabPlacement::for_trunk(fp, &p.residency), "embeddings and head placed by the rule");
    assert_eq!(p.vocab_bytes, k3_plan::vocab_bytes(fp, p.vocab), "embeddings and head bytes");
    let held_vocab = wide(k3_plan::vocab_bytes(fp, k3_plan::VocabPlacement::Held));
    assert!(held_vocab <= wide(fp.resident_bytes), "held embeddings and head within the model-level bytes");
    let fixed = wide(fp.resident_bytes) - held_vocab
        + wide(p.vocab_bytes)
        + wide(fp.state_bytes)
        + wide(fp.kv_bytes_per_position) * wide(req.context_length)
        + wide(p.scratch_bytes);
    assert_eq!(wide(p.fixed_bytes), fixed, "fixed bytes");
    assert_eq!(p.prefill_chunk, k3_plan::prefill_chunk(fp, budget), "the prefill chunk of the budgets");
    assert!((64..=512).contains(&p.prefill_chunk) && p.prefill_chunk % 64 == 0, "a prefill chunk of 64 to 512");
    assert_eq!(wide(p.scratch_bytes), wide(fp.scratch_bytes) * wide(p.prefill_chunk) / 64, "the chunk's scratch");
    let total = wide(p.trunk_bytes) + wide(p.cache_bytes) + wide(p.io_buffer_bytes) + wide(p.fixed_bytes);
    assert_eq!(wide(p.total_bytes), total, "total = the sum of the parts");
    let available = machine.usable_available_bytes();
    if refuse_beyond_available && available > 0 {
        assert!(p.total_bytes <= available, "total {} over available {available}", p.total_bytes);
    }
}

/// The batch figures of `req`'s fixed choice on `machine` ([`k3_plan::batch_fit`]): each
/// sequence costs its state and KV cache, a plan of the largest batch fits what is available
/// and costs exactly what the figures say, and one sequence more is refused.
pub fn assert_batch_keeps_its_promises(
    fp: &k3_plan::Footprint,
    req: &k3_plan::MemoryRequest,
    machine: k3_plan::MachineMemory,
) {
    use k3_plan::{plan_sequences, BudgetChoice, ResidencyRule, MAX_SEQUENCES};
    let available = machine.usable_available_bytes();
    let BudgetChoice::Fixed(_) = req.choice else { return };
    let shape = k3_plan::RunShape { streamed_trunk: req.streamed_trunk, io_threads: req.io_threads };
    let Ok(fit) = k3_plan::batch_fit(fp, req.choice, shape, machine, req.context_length) else { return };
    let wide = u128::from;
    let per_sequence = wide(fp.state_bytes) + wide(fp.kv_bytes_per_position) * wide(req.context_length);
    if per_sequence < wide(u64::MAX) {
        assert_eq!(wide(fit.per_sequence_bytes), per_sequence, "a sequence costs its state and KV cache");
    }
    assert!(fit.largest <= MAX_SEQUENCES, "a batch past the most a plan keeps");
    if available == 0 {
        return;
    }
    let with = |n: u64| plan_sequences(fp, req, machine, true, (ResidencyRule::Prefix, None, n));
    if fit.largest >= 1 {
        match with(fit.largest) {
            Ok(p) => {
                assert!(p.total_bytes <= available, "the largest batch over what is available");
                assert_eq!(p.total_bytes, fit.total_bytes(fit.largest), "a batch's plan costs what the figures say");
            }
            Err(k3_plan::PlanError::Overflow { .. }) => {}
            Err(e) => panic!("the largest batch ({}) refused: {e}", fit.largest),
        }
    }
    if fit.largest < MAX_SEQUENCES {
        assert!(with(fit.largest + 1).is_err(), "one sequence past the largest batch was planned");
    }
}

/// A plan of `k3_plan::plan_by_cost` for `req`'s budgets taken as one total, with the
/// trunk storing `stored` bytes per layer and `staging_bytes` of staging: never over the
/// total, each layer's residency allowed, and the parts adding up.
pub fn assert_cost_plan_keeps_its_promises(
    fp: &k3_plan::Footprint,
    budget: k3_plan::Budget,
    (stored, staging_bytes): (&[u64], u64),
    p: &k3_plan::MemoryPlan,
) {
    use k3_plan::LayerResidency as R;
    let wide = u128::from;
    let layers = &fp.layer_trunk_bytes;
    assert!(
        wide(p.trunk_bytes) + wide(p.cache_bytes) <= wide(budget.trunk_bytes) + wide(budget.cache_bytes),
        "over the total"
    );
    assert_eq!(p.residency.len(), layers.len(), "one residency per layer");
    let (mut pinned, mut coded, mut largest, mut streams_coded) = (0u128, 0u128, None::<u64>, false);
    for (l, r) in p.residency.iter().enumerate() {
        let (raw, st) = (layers[l], stored[l].min(layers[l]));
        match r {
            R::Pinned => pinned += wide(raw),
            R::PinnedCoded => {
                assert!(st < raw, "layer {l} held coded but stored raw");
                coded += wide(st);
                largest = largest.max(Some(raw));
            }
            R::Streamed => {
                streams_coded |= st < raw;
                largest = largest.max(Some(raw));
            }
        }
    }
    assert_eq!(wide(p.pinned_bytes), pinned, "pinned bytes");
    assert_eq!(wide(p.pinned_coded_bytes), coded, "held-coded bytes");
    assert_eq!(p.staging_bytes, if streams_coded { staging_bytes } else { 0 }, "staging while a coded layer streams");
    match largest {
        None => assert_eq!(p.ring_slots, 0, "a ring with nothing to pass through it"),
        Some(largest) => {
            assert!(p.ring_slots == 1 || p.ring_slots == 2, "{} ring slots", p.ring_slots);
            assert!(p.ring_slot_bytes >= largest, "a ring slot smaller than a layer through it");
        }
    }
    let ring = (p.ring_slots as u128) * wide(p.ring_slot_bytes);
    assert_eq!(wide(p.trunk_bytes), pinned + coded + ring + wide(p.staging_bytes), "trunk = the sum of its parts");
    assert_eq!(wide(p.cache_bytes), wide(p.cache_slots) * wide(p.cache_slot_bytes), "cache = slots × slot");
    assert!(p.cache_slots <= fp.n_experts_total, "more slots than experts");
}
