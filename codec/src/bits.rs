//! Bit-level writing and careful reading, least significant bit first.
//!
//! Owns: [`BitWriter`] (what the encoder emits codes into, in place) and [`peek`] (a bounded read of
//! the next bits, zeros past the end) used by the reference decoder and the fast decoder's tail,
//! and [`STREAMS`], how many bit streams a coded block interleaves.
//! Easy to break: codes are written bit-reversed (first code bit at the lowest position), so
//! the decoder indexes its tables with the low bits of the window.

/// Interleaved bit streams per coded block.
pub const STREAMS: usize = 8;

/// Writes codes of up to 32 bits each, least significant bit first, into a slice sized
/// exactly for them (the encoder counts the bits first).
pub struct BitWriter<'a> {
    out: &'a mut [u8],
    at: usize,
    acc: u64,
    filled: u32,
}

impl<'a> BitWriter<'a> {
    pub fn new(out: &'a mut [u8]) -> Self {
        BitWriter { out, at: 0, acc: 0, filled: 0 }
    }

    /// Appends the low `len` bits of `code` (`len` ≤ 32). Panics past the slice's end.
    pub fn push(&mut self, code: u32, len: u32) {
        self.acc |= u64::from(code) << self.filled;
        self.filled += len;
        if self.filled >= 32 {
            self.out[self.at..self.at + 4].copy_from_slice(&(self.acc as u32).to_le_bytes());
            self.at += 4;
            self.acc >>= 32;
            self.filled -= 32;
        }
    }

    /// Writes the last bits (the last byte padded with zero bits); returns the bytes written.
    pub fn finish(self) -> usize {
        let tail = self.filled.div_ceil(8) as usize;
        self.out[self.at..self.at + tail].copy_from_slice(&self.acc.to_le_bytes()[..tail]);
        self.at + tail
    }
}

/// The 32 bits of `src` starting at bit `bitpos` (least significant first); bits past the
/// end of `src` read as zero.
pub fn peek(src: &[u8], bitpos: usize) -> u32 {
    let byte = bitpos / 8;
    let mut window = [0u8; 8];
    if byte < src.len() {
        let n = (src.len() - byte).min(8);
        window[..n].copy_from_slice(&src[byte..byte + n]);
    }
    (u64::from_le_bytes(window) >> (bitpos % 8)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_codes_read_back_in_order() {
        let codes = [(0b1u32, 1u32), (0b10110, 5), (0x7ff, 11), (0, 3), (0x1234_5678, 32), (0b01, 2)];
        let total: u32 = codes.iter().map(|c| c.1).sum();
        let mut bytes = vec![0u8; total.div_ceil(8) as usize];
        let mut w = BitWriter::new(&mut bytes);
        for &(c, l) in &codes {
            w.push(c, l);
        }
        assert_eq!(w.finish(), bytes.len());
        let mut pos = 0;
        for &(c, l) in &codes {
            let mask = if l == 32 { u32::MAX } else { (1 << l) - 1 };
            assert_eq!(peek(&bytes, pos) & mask, c, "code of {l} bits at bit {pos}");
            pos += l as usize;
        }
        assert_eq!(peek(&bytes, pos), 0, "past the end reads zeros");
    }
}
