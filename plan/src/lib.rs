//! k3-plan: pure functions over numbers. No I/O, no `unsafe`, no allocation-heavy work:
//! the engine, the CLI and (later) the UI compiled to wasm all call the same code.
//!
//! Owns: memory presets and size parsing (`presets`), the memory plan (`memory`), and the
//! offline expert-cache policy simulator (`cachesim`).
#![forbid(unsafe_code)]

pub mod cachesim;
