//! Value generation: how each synthetic tensor's bytes are drawn, block by block.
//!
//! Owns: [`Init`] (the value recipe of a tensor), the approximate normal (Irwin–Hall sum
//! of four 16-bit uniforms, ±3.46σ, integer-exact until one f32 multiply), BF16
//! round-to-nearest-even, and the MXFP4 byte tables (E2M1 magnitudes with the histogram of
//! the released expert sample, E8M0 scales mostly 120..122).
//! Must not: produce NaN or infinity, or let the output depend on the chunk size or thread
//! count: every [`BLOCK_BYTES`] block has its own stream (see `rng`).
//! Easy to break: a block boundary must fall on an element boundary, so `BLOCK_BYTES` is a
//! multiple of every element size; the chunk the writer hands in must start on a block.

use std::sync::OnceLock;

use rayon::prelude::*;

use super::rng::Rng;
use crate::format::Dtype;

/// Bytes generated from one independent random stream.
pub(crate) const BLOCK_BYTES: usize = 1 << 20;

/// How the values of one tensor are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Init {
    /// ≈ N(mean, std²), stored in the tensor's float dtype.
    Normal { mean: f32, std: f32 },
    /// ≈ N(0, std²) for the first `n` elements, exact zeros after (the `A_log` padding).
    NormalPrefix { std: f32, n: u64 },
    /// MXFP4 `weight_packed` bytes: two E2M1 codes, low nibble first.
    Mxfp4Packed,
    /// MXFP4 `weight_scale` bytes (E8M0).
    Mxfp4Scale,
}

/// σ of the sum of four uniforms on 0..65536: `65536 / √3`.
const IRWIN_HALL_SIGMA: f32 = 37_837.227;
/// Mean of that sum.
const IRWIN_HALL_MEAN: i64 = 2 * 65_535;

/// A standard normal (approximately) from one random word.
#[inline]
fn std_normal(r: u64) -> f32 {
    let s = (r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48);
    (s as i64 - IRWIN_HALL_MEAN) as f32 * (1.0 / IRWIN_HALL_SIGMA)
}

/// f32 → BF16 bits, round to nearest even (inputs are finite).
#[inline]
pub(crate) fn bf16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// Per-magnitude weights (out of 128) of E2M1 codes 0..7 in the released expert sample
/// (`mxfp4.json`: 0.116, 0.221, 0.192, 0.153, 0.153, 0.105, 0.051, 0.010).
const E2M1_MAGNITUDE_WEIGHTS: [u8; 8] = [15, 28, 25, 20, 19, 13, 7, 1];
/// E8M0 scale bytes and their weights out of 256 (the sample has 120: 15%, 121: 84%, 122: 0.5%).
const SCALE_WEIGHTS: [(u8, u16); 5] = [(118, 2), (119, 4), (120, 38), (121, 206), (122, 6)];

/// `[u16 random] → packed byte` (two nibbles drawn independently).
fn packed_table() -> &'static [u8; 65536] {
    static TABLE: OnceLock<Box<[u8; 65536]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut magnitude = [0u8; 128];
        let mut i = 0;
        for (code, &w) in E2M1_MAGNITUDE_WEIGHTS.iter().enumerate() {
            magnitude[i..i + w as usize].fill(code as u8);
            i += w as usize;
        }
        let nibble = |r: usize| magnitude[r & 127] | (((r >> 7) as u8) << 3);
        let mut t = Box::new([0u8; 65536]);
        for (r, out) in t.iter_mut().enumerate() {
            *out = nibble(r & 0xff) | (nibble(r >> 8) << 4);
        }
        t
    })
}

/// `[u8 random] → scale byte`.
fn scale_table() -> &'static [u8; 256] {
    static TABLE: OnceLock<[u8; 256]> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = [0u8; 256];
        let mut i = 0;
        for &(byte, w) in &SCALE_WEIGHTS {
            t[i..i + w as usize].fill(byte);
            i += w as usize;
        }
        t
    })
}

/// Fills `out`, the bytes of the tensor starting at byte `offset` (a multiple of
/// [`BLOCK_BYTES`]), in parallel over blocks.
pub(crate) fn fill_chunk(init: Init, dtype: Dtype, tensor_seed: u64, offset: u64, out: &mut [u8]) {
    debug_assert_eq!(offset % BLOCK_BYTES as u64, 0);
    let first_block = offset / BLOCK_BYTES as u64;
    let elem = dtype.size_bytes();
    out.par_chunks_mut(BLOCK_BYTES).enumerate().for_each(|(i, block)| {
        let block_idx = first_block + i as u64;
        let mut rng = Rng::for_block(tensor_seed, block_idx);
        let first_elem = block_idx * BLOCK_BYTES as u64 / elem;
        fill_block(init, dtype, &mut rng, first_elem, block);
    });
}

fn fill_block(init: Init, dtype: Dtype, rng: &mut Rng, first_elem: u64, out: &mut [u8]) {
    match init {
        Init::Normal { mean, std } => fill_floats(dtype, out, |_| mean + std * std_normal(rng.next_u64())),
        Init::NormalPrefix { std, n } => fill_floats(dtype, out, |i| {
            let r = rng.next_u64();
            if first_elem + i < n {
                std * std_normal(r)
            } else {
                0.0
            }
        }),
        Init::Mxfp4Packed => {
            let t = packed_table();
            for quad in out.chunks_mut(4) {
                let r = rng.next_u64();
                for (j, b) in quad.iter_mut().enumerate() {
                    *b = t[(r >> (16 * j)) as usize & 0xffff];
                }
            }
        }
        Init::Mxfp4Scale => {
            let t = scale_table();
            for oct in out.chunks_mut(8) {
                let r = rng.next_u64().to_le_bytes();
                for (b, &x) in oct.iter_mut().zip(&r) {
                    *b = t[x as usize];
                }
            }
        }
    }
}

/// Writes `value(i)` for element `i` of `out` as little-endian F32 or BF16.
fn fill_floats(dtype: Dtype, out: &mut [u8], mut value: impl FnMut(u64) -> f32) {
    if dtype == Dtype::F32 {
        for (i, e) in out.chunks_exact_mut(4).enumerate() {
            e.copy_from_slice(&value(i as u64).to_le_bytes());
        }
    } else {
        for (i, e) in out.chunks_exact_mut(2).enumerate() {
            e.copy_from_slice(&bf16_bits(value(i as u64)).to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floats(init: Init, n: usize) -> Vec<f32> {
        let mut out = vec![0u8; n * 4];
        fill_chunk(init, Dtype::F32, 42, 0, &mut out);
        out.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
    }

    #[test]
    fn normal_has_the_requested_mean_and_spread() {
        let v = floats(Init::Normal { mean: 1.0, std: 0.5 }, 1 << 18);
        let mean = v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|&x| (f64::from(x) - mean).powi(2)).sum::<f64>() / v.len() as f64;
        assert!((mean - 1.0).abs() < 0.01, "mean {mean}");
        assert!((var.sqrt() - 0.5).abs() < 0.01, "std {}", var.sqrt());
        assert!(v.iter().all(|x| x.is_finite() && (x - 1.0).abs() <= 0.5 * 3.47));
    }

    #[test]
    fn prefix_is_zero_padded() {
        let v = floats(Init::NormalPrefix { std: 0.5, n: 3 }, 8);
        assert!(v[..3].iter().all(|&x| x != 0.0));
        assert!(v[3..].iter().all(|&x| x == 0.0));
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(bf16_bits(1.0), 0x3f80);
        assert_eq!(bf16_bits(f32::from_bits(0x3f80_8000)), 0x3f80); // tie → even
        assert_eq!(bf16_bits(f32::from_bits(0x3f81_8000)), 0x3f82); // tie → even
        assert_eq!(bf16_bits(f32::from_bits(0x3f80_8001)), 0x3f81);
    }

    #[test]
    fn mxfp4_bytes_follow_the_released_statistics() {
        let mut scales = vec![0u8; 1 << 16];
        fill_chunk(Init::Mxfp4Scale, Dtype::U8, 1, 0, &mut scales);
        assert!(scales.iter().all(|s| (118..=122).contains(s)));
        let share_121 = scales.iter().filter(|&&s| s == 121).count() as f64 / scales.len() as f64;
        assert!((share_121 - 206.0 / 256.0).abs() < 0.02, "{share_121}");
        let mut packed = vec![0u8; 1 << 16];
        fill_chunk(Init::Mxfp4Packed, Dtype::U8, 1, 0, &mut packed);
        let top = packed.iter().filter(|&&b| b & 7 == 7 || b >> 4 & 7 == 7).count() as f64;
        assert!(top / packed.len() as f64 > 0.005 && top / (packed.len() as f64) < 0.04);
    }

    #[test]
    fn output_does_not_depend_on_how_blocks_are_grouped() {
        let init = Init::Normal { mean: 0.0, std: 0.02 };
        let mut whole = vec![0u8; 3 * BLOCK_BYTES];
        fill_chunk(init, Dtype::BF16, 9, 0, &mut whole);
        let mut tail = vec![0u8; 2 * BLOCK_BYTES];
        fill_chunk(init, Dtype::BF16, 9, BLOCK_BYTES as u64, &mut tail);
        assert_eq!(&whole[BLOCK_BYTES..], &tail[..]);
    }
}
