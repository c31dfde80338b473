//! Quick decode-rate probe: `cargo run --release -p k3-codec --example speed -- FILE OFFSET LEN`.
use std::io::{Read, Seek, SeekFrom};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let mut f = std::fs::File::open(&args[1])?;
    f.seek(SeekFrom::Start(args[2].parse()?))?;
    let mut raw = vec![0u8; args[3].parse()?];
    f.read_exact(&mut raw)?;
    let t = Instant::now();
    let coded = k3_codec::encode_layer(&raw);
    let enc = t.elapsed().as_secs_f64();
    let mut out = vec![0u8; raw.len()];
    let mut dec = k3_codec::LayerDecoder::default();
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        dec.decode(&coded.bytes, &mut out, &mut |_| {})?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    assert!(out == raw);
    let mut counts = [0u64; 256];
    for w in raw[..1 << 20].chunks_exact(2) {
        counts[w[1] as usize] += 1;
    }
    let lengths = k3_codec::huffman::code_lengths(&counts);
    let t = Instant::now();
    for _ in 0..1000 {
        std::hint::black_box(k3_codec::huffman::DecodeTables::new(std::hint::black_box(&lengths)));
    }
    println!("table build {:.1} us", t.elapsed().as_secs_f64() * 1e3);
    println!(
        "ratio {:.4}  encode {:.2} GB/s  decode {:.2} GB/s of output (1 thread)",
        coded.bytes.len() as f64 / raw.len() as f64,
        raw.len() as f64 / enc / 1e9,
        raw.len() as f64 / best / 1e9
    );
    Ok(())
}

#[allow(dead_code)]
fn table_cost() {}
