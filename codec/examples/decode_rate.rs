//! Times the fast decoder on one core over a window of a raw packed `trunk.bin`:
//! `cargo run --release -p k3-codec --example decode_rate -- TRUNK_BIN OFFSET_MIB LEN_MIB`.
//! Prints decoded GB/s (best of 15) and checks the output against the input.

use std::io::{Read, Seek, SeekFrom};
use std::time::Instant;

use k3_codec::block::Scratch;
use k3_codec::{decode_block_summed, encode_layer, Directory, LayerDecoder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, path, offset, len] = &args[..] else {
        return Err("usage: decode_rate TRUNK_BIN OFFSET_MIB LEN_MIB".into());
    };
    let (offset, len): (u64, usize) = (offset.parse::<u64>()? << 20, len.parse::<usize>()? << 20);
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut raw = vec![0u8; len];
    file.read_exact(&mut raw)?;
    let coded = encode_layer(&raw);
    let mut out = vec![0u8; len];
    let mut decoder = LayerDecoder::default();
    let mut best = f64::MAX;
    for _ in 0..15 {
        let t = Instant::now();
        decoder.decode(&coded.bytes, &mut out, &mut |_| {})?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    if out != raw {
        return Err("decoded bytes differ".into());
    }
    // The streamed trunk's way: each block summed (CRC-32) as it is written.
    let dir = Directory::read(&coded.bytes, coded.bytes.len())?;
    let mut scratch = Scratch::default();
    let mut best_summed = f64::MAX;
    for _ in 0..15 {
        let t = Instant::now();
        for (&(at, n), piece) in dir.blocks.iter().zip(out.chunks_mut(dir.block_raw)) {
            let mut sum = crc32fast::Hasher::new();
            decode_block_summed(&coded.bytes[at..at + n], piece, &mut scratch, &mut sum)?;
            std::hint::black_box(sum.finalize());
        }
        best_summed = best_summed.min(t.elapsed().as_secs_f64());
    }
    println!("summed: {:.3} GB/s", len as f64 / best_summed / 1e9);
    println!(
        "{:.3} GB/s of output on one core ({:.4} × raw)",
        len as f64 / best / 1e9,
        coded.bytes.len() as f64 / len as f64
    );
    Ok(())
}
