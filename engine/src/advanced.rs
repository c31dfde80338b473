//! The engine's insides, for the benchmarks, the checkpoint tools and the tests that look
//! inside a forward pass: the kernels, the model, streaming (plans, caches, the packed
//! trunk), `k3 synth` and the kernel-rate benches. Front ends use the crate root instead
//! (`Engine`, sessions, params, chat, options, `Error`).
//!
//! Must not: grow an item a front end needs to answer a user; that belongs at the root.
//! The files stay where they are (`src/kernels/`, …): this module only names them.

#[path = "bench/mod.rs"]
pub mod bench;
#[path = "kernels/mod.rs"]
pub mod kernels;
#[path = "model/mod.rs"]
pub mod model;
#[path = "stream/mod.rs"]
pub mod stream;
