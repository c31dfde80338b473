//! The released K3 checkpoint's sizes, as the doctor needs them (spec §1 byte ledger, §6.2,
//! §6.5, §6.6, §8, §11).
//!
//! Owns: the two byte totals a model store must hold and the footprint the planner sizes
//! presets from, in one place. Stand-in until `k3_plan::released` (the released footprint)
//! lands; then these are swapped for it.
//! Must not: compute a plan: `k3_plan` does, from [`footprint`].

use k3_plan::{scratch_bytes_for, Footprint};

/// Bytes of the 96 released shards (spec §6.2 and §1's ledger: 1,560,936,091,448).
pub const CHECKPOINT_BYTES: u64 = 1_560_936_091_448;

/// Bytes of the packed `trunk.bin`, padding included (spec §8: ~108,811,952,128).
pub const PACKED_TRUNK_BYTES: u64 = 108_811_952_128;

/// Free space kept beyond the files, as a fraction of them (PRODUCT.md §1.1, step 3: "+ 1%").
pub const SPACE_MARGIN: f64 = 0.01;

/// The released model's footprint for `k3_plan` (spec §1 ledger, §6.5, §6.6).
pub fn footprint() -> Footprint {
    // Layer 0 (KDA + dense), then layers 1..92: KDA+MoE except the MLA layers (zero-based
    // 3, 7, …, 91 and 92: 24 in all; spec §2.4), whose trunks are smaller (§6.5).
    const LAYER0: u64 = 2_341_213_184;
    const KDA_MOE: u64 = 1_267_744_256;
    const MLA_MOE: u64 = 844_335_616;
    let mut layer_trunk_bytes = vec![LAYER0];
    layer_trunk_bytes.extend((1..93u64).map(|l| if l % 4 == 3 || l == 92 { MLA_MOE } else { KDA_MOE }));
    Footprint {
        layer_trunk_bytes,
        expert_bytes: 17_547_264,
        n_experts_total: 92 * 896,
        top_k: 16,
        resident_bytes: 4_697_663_488,
        state_bytes: 626_245_632,
        kv_bytes_per_position: 2_365_440,
        // The widest activation is the vocabulary's logits (163,840).
        scratch_bytes: scratch_bytes_for(163_840),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_footprint_matches_the_spec_ledger() {
        let fp = footprint();
        assert_eq!(fp.layer_trunk_bytes.len(), 93);
        assert_eq!(fp.trunk_total_bytes(), 108_811_877_376, "spec §1: per-layer trunk");
        assert_eq!(fp.layer_trunk_bytes.iter().filter(|&&b| b == 844_335_616).count(), 24, "24 MLA layers");
        assert_eq!(fp.n_experts_total * fp.expert_bytes, 1_446_456_066_048, "spec §1: routed experts");
    }
}
