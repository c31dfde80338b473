//! Value generation: how each synthetic tensor's bytes are drawn, block by block.
//!
//! Owns: [`Init`] (the value recipe of a tensor), the approximate normal (a fixed table of
//! 65,536 Irwin–Hall-12 values indexed by 16 random bits), BF16 round-to-nearest-even,
//! and the MXFP4 bytes (uniform random nibbles, E8M0 scales mostly 120..121).
//! Must not: produce NaN or infinity, or let the output depend on the chunk size or thread
//! count: every [`BLOCK_BYTES`] block has its own stream (see `rng`).
//! Easy to break: a block boundary must fall on an element boundary, so `BLOCK_BYTES` is a
//! multiple of every element size; the chunk the writer hands in must start on a block.

use std::sync::OnceLock;

use rayon::prelude::*;

use super::rng::{splitmix64, Rng};
use k3_io::format::Dtype;

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

/// 65,536 approximately standard-normal values, indexed by 16 random bits: entry `i` is
/// the Irwin–Hall sum of twelve 16-bit uniforms drawn from `i` (range ±6σ), and the upper
/// half mirrors the lower half, so the mean is exactly 0. Integer arithmetic and one exact
/// power-of-two division: the same on every platform.
fn std_normal_table() -> &'static [f32; 65536] {
    static TABLE: OnceLock<Box<[f32; 65536]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Box::new([0f32; 65536]);
        for i in 0..32768usize {
            let mut state = i as u64;
            let mut sum: i64 = 0;
            for _ in 0..3 {
                let r = splitmix64(&mut state);
                sum += ((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48)) as i64;
            }
            // 12 uniforms on 0..65536 have mean 12·32767.5 and σ ≈ 65536.
            let z = (2 * sum - 786_420) as f32 / 131_072.0;
            t[i] = z;
            t[i + 32768] = -z;
        }
        t
    })
}

/// f32 → BF16 bits, round to nearest even (inputs are finite).
#[inline]
pub(crate) fn bf16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// E8M0 scale bytes and their weights out of 256. Nibbles are uniform (RMS 2.93 per unit
/// of scale, the release's are 1.82), so scales sit mostly one step below the release's
/// 121: the dequantised RMS is ≈ 0.029, the released sample's is 0.0285.
const SCALE_WEIGHTS: [(u8, u16); 5] = [(118, 2), (119, 4), (120, 200), (121, 48), (122, 2)];

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

/// Chunks at least this long draw BF16 normals through a per-chunk table of BF16 bits.
const BF16_TABLE_MIN_BYTES: usize = 1 << 18;

/// Fills `out`, the bytes of the tensor starting at byte `offset` (a multiple of
/// [`BLOCK_BYTES`]), in parallel over blocks.
pub(crate) fn fill_chunk(init: Init, dtype: Dtype, tensor_seed: u64, offset: u64, out: &mut [u8]) {
    debug_assert_eq!(offset % BLOCK_BYTES as u64, 0);
    let first_block = offset / BLOCK_BYTES as u64;
    let elem = dtype.size_bytes();
    // Same values as the direct path (same expression per 16-bit index), computed once.
    let bf16_table: Option<Vec<u16>> = match init {
        Init::Normal { mean, std } if dtype == Dtype::BF16 && out.len() >= BF16_TABLE_MIN_BYTES => {
            Some(std_normal_table().iter().map(|&z| bf16_bits(mean + std * z)).collect())
        }
        _ => None,
    };
    out.par_chunks_mut(BLOCK_BYTES).enumerate().for_each(|(i, block)| {
        let block_idx = first_block + i as u64;
        let mut rng = Rng::for_block(tensor_seed, block_idx);
        match &bf16_table {
            Some(t) => fill_bf16_from_table(t, &mut rng, block),
            None => fill_block(init, dtype, &mut rng, block_idx * BLOCK_BYTES as u64 / elem, block),
        }
    });
}

fn fill_block(init: Init, dtype: Dtype, rng: &mut Rng, first_elem: u64, out: &mut [u8]) {
    let z = std_normal_table();
    match init {
        Init::Normal { mean, std } => fill_floats(dtype, out, rng, |_, r| mean + std * z[r]),
        Init::NormalPrefix { std, n } => {
            fill_floats(dtype, out, rng, |i, r| if first_elem + i < n { std * z[r] } else { 0.0 })
        }
        // Two uniform E2M1 codes per byte: random bytes as they come.
        Init::Mxfp4Packed => {
            for oct in out.chunks_mut(8) {
                let r = rng.next_u64().to_le_bytes();
                oct.copy_from_slice(&r[..oct.len()]);
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

/// Writes `value(i, r)` for element `i` of `out` as little-endian F32 or BF16, where `r`
/// is 16 random bits: one word serves four elements, lane `j` uses bits `16j..16j+16`.
fn fill_floats(dtype: Dtype, out: &mut [u8], rng: &mut Rng, value: impl Fn(u64, usize) -> f32) {
    let esz = dtype.size_bytes() as usize;
    for (g, group) in out.chunks_mut(4 * esz).enumerate() {
        let r = rng.next_u64();
        for (j, e) in group.chunks_exact_mut(esz).enumerate() {
            let v = value((4 * g + j) as u64, (r >> (16 * j)) as usize & 0xffff);
            if esz == 4 {
                e.copy_from_slice(&v.to_le_bytes());
            } else {
                e.copy_from_slice(&bf16_bits(v).to_le_bytes());
            }
        }
    }
}

/// The BF16 `Normal` path through a 65,536-entry table of BF16 bits (same values as
/// `fill_floats`, four lookups per random word, eight bytes per store).
fn fill_bf16_from_table(t: &[u16], rng: &mut Rng, out: &mut [u8]) {
    let mut groups = out.chunks_exact_mut(8);
    for group in &mut groups {
        let r = rng.next_u64();
        let lane = |j: u32| u64::from(t[(r >> (16 * j)) as usize & 0xffff]) << (16 * j);
        group.copy_from_slice(&(lane(0) | lane(1) | lane(2) | lane(3)).to_le_bytes());
    }
    let tail = groups.into_remainder();
    if !tail.is_empty() {
        let r = rng.next_u64();
        for (j, e) in tail.chunks_exact_mut(2).enumerate() {
            e.copy_from_slice(&t[(r >> (16 * j)) as usize & 0xffff].to_le_bytes());
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
        assert!(v.iter().all(|x| x.is_finite() && (x - 1.0).abs() <= 0.5 * 6.0));
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
        let share_120 = scales.iter().filter(|&&s| s == 120).count() as f64 / scales.len() as f64;
        assert!((share_120 - 200.0 / 256.0).abs() < 0.02, "{share_120}");
        let mut packed = vec![0u8; 1 << 16];
        fill_chunk(Init::Mxfp4Packed, Dtype::U8, 1, 0, &mut packed);
        // Dequantised RMS over a row of 32-groups, like the release's ≈ 0.0285.
        const E2M1: [f64; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
        let ms: f64 = packed
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                let scale = 2f64.powi(i32::from(scales[i / 16]) - 127);
                (E2M1[usize::from(b & 7)].powi(2) + E2M1[usize::from(b >> 4 & 7)].powi(2)) * scale * scale / 2.0
            })
            .sum::<f64>()
            / packed.len() as f64;
        assert!((ms.sqrt() - 0.0285).abs() < 0.003, "rms {}", ms.sqrt());
    }

    #[test]
    fn bf16_table_path_equals_the_direct_path() {
        let init = Init::Normal { mean: 0.5, std: 0.02 };
        let mut big = vec![0u8; BF16_TABLE_MIN_BYTES + 6];
        fill_chunk(init, Dtype::BF16, 5, 0, &mut big);
        let mut direct = vec![0u8; big.len()];
        fill_block(init, Dtype::BF16, &mut Rng::for_block(5, 0), 0, &mut direct);
        assert_eq!(big, direct);
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
