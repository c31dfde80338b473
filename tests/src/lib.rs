//! Shared support for the k3 integration tests: fixture paths, the tolerance manifest,
//! little-endian array files, and comparisons that report the worst element.
//!
//! Must not: hide a failure: every comparison prints index, got, want, absolute and
//! relative error, and how many elements missed.

#[cfg(feature = "full")]
pub mod fake_hub;
pub mod faults;
pub mod http;
#[cfg(feature = "full")]
pub mod sqlite_vfs;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The repository root (parent of this crate).
/// A synthetic checkpoint that streams meaningfully at a budget of a few MB: the tiny shape
/// with hidden 256, 8 layers and 64 experts of 256 × 1024, top-4 (~130 MB of routed
/// experts); the RSS-replan test and the soak use it with their own seeds.
pub fn streaming_spec(seed: u64) -> k3_synth::SynthSpec {
    let mut spec = k3_synth::SynthSpec {
        hidden_size: 256,
        num_experts: 64,
        num_experts_per_token: 4,
        routed_expert_hidden_size: 256,
        moe_intermediate_size: 1024,
        seed,
        ..k3_synth::SynthSpec::tiny()
    };
    spec.set_layers(8).unwrap();
    spec
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests crate has a parent").to_path_buf()
}

/// `fixtures/<name>` in the repository.
pub fn fixture(name: &str) -> PathBuf {
    repo_root().join("fixtures").join(name)
}

/// Held by tests that switch kernel bodies with `kernels::dispatch::select`, so each knows
/// which body it measured. Other tests need not hold it: every body gives the same bits.
pub static KERNEL_BODY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The tiny same-graph checkpoints, each with goldens from the float64 reference: three
/// with random weights (`tools/reference/make_checkpoints.py`) and the trained demo model
/// (`tools/demo/train.py`: norm gains away from 1, peaked routing, real attention).
pub const TINY_CHECKPOINTS: [&str; 4] = ["tiny-mxfp4", "tiny-f32", "tiny-bf16-nonorm", "k3-demo"];

/// `../shared/fixtures/released/<file>` beside the checkout; `None` (test skipped with a
/// message) when absent outside CI, a panic when absent in CI.
pub fn released(file: &str) -> Option<PathBuf> {
    let path = repo_root().join("../shared/fixtures/released").join(file);
    if path.exists() {
        return Some(path);
    }
    if std::env::var_os("CI").is_some() {
        panic!("released fixture {} is missing; CI must have ../shared beside the checkout", path.display());
    }
    eprintln!("skipping: released fixture {} not found", path.display());
    None
}

/// Reads a JSON file.
pub fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// Reads a little-endian f64 array file.
pub fn read_f64(path: &Path) -> Vec<f64> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    assert_eq!(bytes.len() % 8, 0, "{} is not a whole number of f64", path.display());
    bytes.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect()
}

/// A JSON array of numbers as f64.
pub fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("expected an array, got {v}"))
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

/// A JSON array of numbers as f32 (inputs are exactly representable by construction).
pub fn f32s(v: &Value) -> Vec<f32> {
    f64s(v).into_iter().map(|x| x as f32).collect()
}

/// A JSON array of integers as u64.
pub fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap_or_else(|| panic!("expected an array, got {v}"))
        .iter()
        .map(|x| x.as_u64().expect("integer"))
        .collect()
}

/// `|got − want| ≤ atol + rtol·|want|`, per element.
#[derive(Debug, Clone, Copy)]
pub struct Tolerance {
    pub atol: f64,
    pub rtol: f64,
}

/// Reads tolerance `key` from `fixtures/MANIFEST.json`.
pub fn tolerance(key: &str) -> Tolerance {
    let manifest = read_json(&fixture("MANIFEST.json"));
    let t = &manifest["tolerance"][key];
    Tolerance {
        atol: t["atol"].as_f64().unwrap_or_else(|| panic!("MANIFEST.json: tolerance.{key}.atol missing")),
        rtol: t["rtol"].as_f64().unwrap_or_else(|| panic!("MANIFEST.json: tolerance.{key}.rtol missing")),
    }
}

/// The worst element of a comparison.
#[derive(Debug, Clone, Copy)]
pub struct Worst {
    pub index: usize,
    pub got: f64,
    pub want: f64,
    pub abs_err: f64,
    pub rel_err: f64,
    /// Elements outside tolerance.
    pub n_missed: usize,
}

/// True when `got` is within `tol` of `want` (NaN never is).
pub fn within(got: f64, want: f64, tol: Tolerance) -> bool {
    let allowed = tol.atol + tol.rtol * want.abs();
    matches!((got - want).abs().partial_cmp(&allowed), Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal))
}

/// Compares element-wise; returns the worst element (largest error relative to what is
/// allowed there) and how many elements are outside `tol`.
pub fn compare(got: &[f32], want: &[f64], tol: Tolerance) -> Worst {
    assert_eq!(got.len(), want.len(), "length mismatch: got {} want {}", got.len(), want.len());
    let mut worst = Worst { index: 0, got: 0.0, want: 0.0, abs_err: 0.0, rel_err: 0.0, n_missed: 0 };
    let mut worst_ratio = -1.0;
    let mut n_missed = 0;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let g = f64::from(g);
        if !within(g, w, tol) {
            n_missed += 1;
        }
        let abs_err = (g - w).abs();
        let ratio = if abs_err.is_nan() { f64::INFINITY } else { abs_err / (tol.atol + tol.rtol * w.abs()) };
        if ratio > worst_ratio {
            worst_ratio = ratio;
            worst = Worst { index: i, got: g, want: w, abs_err, rel_err: abs_err / w.abs().max(1e-30), n_missed: 0 };
        }
    }
    worst.n_missed = n_missed;
    worst
}

/// Asserts every element is within `tol`, reporting the worst one; returns it.
pub fn assert_close(what: &str, got: &[f32], want: &[f64], tol: Tolerance) -> Worst {
    let w = compare(got, want, tol);
    assert!(
        w.n_missed == 0,
        "{what}: {} of {} elements outside |err| <= {} + {}·|want|; worst at [{}]: got {} want {} abs {:.3e} rel {:.3e}",
        w.n_missed,
        got.len(),
        tol.atol,
        tol.rtol,
        w.index,
        w.got,
        w.want,
        w.abs_err,
        w.rel_err
    );
    eprintln!(
        "{what}: worst [{}] abs {:.3e} rel {:.3e} (got {}, want {})",
        w.index, w.abs_err, w.rel_err, w.got, w.want
    );
    w
}

/// A fresh, empty scratch directory under the system temp dir, unique per call.
pub fn scratch_dir(tag: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "k3-test-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Copies a fixture checkpoint folder into a scratch dir so a test can corrupt it.
pub fn copy_checkpoint(name: &str, tag: &str) -> PathBuf {
    let dst = scratch_dir(tag);
    for entry in std::fs::read_dir(fixture(name)).expect("fixture dir") {
        let entry = entry.expect("dir entry");
        if entry.file_type().expect("file type").is_file() {
            std::fs::copy(entry.path(), dst.join(entry.file_name())).expect("copy fixture file");
        }
    }
    dst
}

/// Sets `key` to `value` wherever it appears in a JSON document (a config edited in tests);
/// true when it appeared at least once.
pub fn set_json_key(v: &mut serde_json::Value, key: &str, value: &serde_json::Value) -> bool {
    let mut found = false;
    if let Some(map) = v.as_object_mut() {
        for (k, child) in map.iter_mut() {
            if k == key {
                *child = value.clone();
                found = true;
            } else {
                found |= set_json_key(child, key, value);
            }
        }
    }
    found
}
