//! The benchmarks' results (issue 41: bench statistics are typed results in a library, with
//! their JSON derived from them). Each module is one `k3 bench` subcommand's figures: the
//! samples its rounds collect go in, the figures it reports come out, computed once here
//! with [`k3_plan::stats`] (so "the median of the rounds" means one thing everywhere).
//!
//! Owns: the result types and the arithmetic from samples to figures. Must not: run the
//! engine, read a drive, or write text — the CLI (`cli/src/commands/bench*.rs`) runs the
//! rounds and prints; `--json` is `serde_json` of these types (field order is key order).

pub mod agent;
pub mod batch;
pub mod codec;
pub mod constrain;
pub mod context;
pub mod disk;
pub mod kernels;
pub mod speculate;
pub mod stream;

/// `a / b`, or 0 when `b` is not positive (nothing measured).
pub(crate) fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}
