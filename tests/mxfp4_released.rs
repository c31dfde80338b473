//! MXFP4 decoding reproduces the released checkpoint's bytes exactly, and the test is
//! able to catch the swapped-nibble misreading.

use k3_engine::advanced::kernels::{decode_mxfp4_row, dot_mxfp4, reference, widen};
use k3_tests::{f64s, read_json, released, u64s};

struct Released {
    rows: usize,
    width: usize,
    packed: Vec<u8>,
    scales: Vec<u8>,
    expected: Vec<f64>,
    swapped_head: Vec<f64>,
}

fn load() -> Option<Released> {
    let v = read_json(&released("mxfp4.json")?);
    let bytes =
        |key: &str| u64s(&v[key]["data"]).into_iter().map(|b| u8::try_from(b).expect("byte")).collect::<Vec<u8>>();
    Some(Released {
        rows: v["rows"].as_u64().expect("rows") as usize,
        width: v["logical_width"].as_u64().expect("logical_width") as usize,
        packed: bytes("packed"),
        scales: bytes("scales"),
        expected: f64s(&v["expected"]["data"]),
        swapped_head: f64s(&v["expected_swapped_nibbles"]["first64"]),
    })
}

/// Decodes all rows with `decode` into one flat vector.
fn decode_all(r: &Released, decode: impl Fn(&[u8], &[u8], &mut [f32])) -> Vec<f32> {
    let mut out = vec![0.0f32; r.rows * r.width];
    for (row, dst) in out.chunks_mut(r.width).enumerate() {
        let p = &r.packed[row * r.width / 2..(row + 1) * r.width / 2];
        let s = &r.scales[row * r.width / 32..(row + 1) * r.width / 32];
        decode(p, s, dst);
    }
    out
}

/// A decoder that reads the high nibble first: the classic misreading.
fn decode_swapped(packed: &[u8], scales: &[u8], out: &mut [f32]) {
    let swapped: Vec<u8> = packed.iter().map(|b| b.rotate_left(4)).collect();
    decode_mxfp4_row(&swapped, scales, out);
}

fn first_mismatch(got: &[f32], want: &[f64]) -> Option<(usize, f32, f64)> {
    got.iter().zip(want).enumerate().find(|(_, (&g, &w))| f64::from(g) != w).map(|(i, (&g, &w))| (i, g, w))
}

#[test]
fn released_mxfp4_bytes_decode_exactly() {
    let Some(r) = load() else { return };
    assert_eq!(r.expected.len(), r.rows * r.width);
    let got = decode_all(&r, decode_mxfp4_row);
    assert_eq!(first_mismatch(&got, &r.expected), None, "decoder differs from the released expectation");
    // The element-at-a-time reference twin agrees too.
    for (i, &want) in r.expected.iter().enumerate() {
        let (row, col) = (i / r.width, i % r.width);
        let p = &r.packed[row * r.width / 2..(row + 1) * r.width / 2];
        let s = &r.scales[row * r.width / 32..(row + 1) * r.width / 32];
        assert_eq!(reference::mxfp4_element_ref(p, s, col), want, "reference twin at element {i}");
    }
}

#[test]
fn packed_kernel_reads_released_nibbles_in_the_right_order() {
    let Some(r) = load() else { return };
    // A one-hot activation makes the packed dot product return exactly one weight.
    let mut x = vec![0.0f32; r.width];
    for row in [0usize, 17, r.rows - 1] {
        let p = &r.packed[row * r.width / 2..(row + 1) * r.width / 2];
        let s = &r.scales[row * r.width / 32..(row + 1) * r.width / 32];
        for col in [0usize, 1, 2, 3, 31, 32, 33, 1001, r.width - 1] {
            x[col] = 1.0;
            let got = dot_mxfp4(p, s, &widen(&x));
            x[col] = 0.0;
            assert_eq!(f64::from(got), r.expected[row * r.width + col], "row {row} col {col}");
        }
    }
}

#[test]
fn swapped_nibble_reading_is_caught() {
    let Some(r) = load() else { return };
    let swapped = decode_all(&r, decode_swapped);
    // The misreading reproduces the fixture's recorded wrong values ...
    let head: Vec<f64> = swapped[..r.swapped_head.len()].iter().map(|&v| f64::from(v)).collect();
    assert_eq!(head, r.swapped_head, "the swapped decoder should match the recorded misreading");
    // ... and the exactness check rejects it.
    let mismatch = first_mismatch(&swapped, &r.expected);
    assert!(mismatch.is_some(), "a swapped-nibble decoder must not pass the exact check");
    let (i, got, want) = mismatch.unwrap();
    eprintln!("swapped-nibble decoder caught at element {i}: got {got}, want {want}");
}
