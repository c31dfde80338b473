//! The synthetic generator's random numbers: seeds per (tensor, block) and a fast stream.
//!
//! Owns: FNV-1a over tensor names, SplitMix64 for seed mixing, and xoshiro256++ for the
//! stream, all in integer arithmetic so that output is identical on every platform.
//! Must not: depend on the order in which tensors or blocks are generated: every block's
//! stream is a pure function of (checkpoint seed, tensor name, block index).
//! Easy to break: changing any constant here changes every synthetic checkpoint byte;
//! tests compare two runs, not stored hashes, so such a change is allowed but deliberate.

/// FNV-1a, 64-bit, over `bytes`.
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// One SplitMix64 step: advances `state` and returns a well-mixed word.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The seed of one tensor: the checkpoint seed mixed with the tensor's name.
pub(crate) fn tensor_seed(seed: u64, name: &str) -> u64 {
    let mut s = seed ^ fnv1a64(name.as_bytes());
    splitmix64(&mut s)
}

/// xoshiro256++ (Blackman & Vigna): fast, 2^256 period, good enough for weights.
pub(crate) struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// The stream of block `block` of the tensor whose seed is `tensor_seed`.
    pub(crate) fn for_block(tensor_seed: u64, block: u64) -> Rng {
        let mut sm = tensor_seed ^ block.wrapping_mul(0xd1b5_4a32_d192_ed03);
        let s = [splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm)];
        Rng { s }
    }

    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let out = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_the_published_test_vector() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn streams_differ_per_block_and_repeat_per_seed() {
        let a: Vec<u64> = (0..4).map(|_| Rng::for_block(7, 0).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(Rng::for_block(7, 0).next_u64(), Rng::for_block(7, 1).next_u64());
        assert_ne!(tensor_seed(1, "x"), tensor_seed(2, "x"));
    }
}
