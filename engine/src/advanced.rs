//! The engine's insides, for the benchmarks, the checkpoint tools and the tests that look
//! inside a forward pass: the kernels, the model, streaming (plans, caches, the packed
//! trunk), `k3 synth` and the kernel-rate benches. Front ends use the crate root instead
//! (`Engine`, sessions, params, chat, options, `Error`).
//!
//! Must not: grow an item a front end needs to answer a user; that belongs at the root.
//! The files stay where they are (`src/model/`, …): this module only names them. The
//! kernels are their own crate (`k3-kernels`), named here as they were before.

#[path = "bench/mod.rs"]
pub mod bench;
pub use k3_kernels as kernels;
#[path = "model/mod.rs"]
pub mod model;
#[path = "stream/mod.rs"]
pub mod stream;
