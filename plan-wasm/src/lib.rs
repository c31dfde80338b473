//! k3-plan-wasm: the planner's JSON interface, and the same calls exported from a
//! WebAssembly module so the page plans in the browser what the engine would plan.
//!
//! Owns: the JSON shapes ([`dto`]: footprint, machine figures, choice, plan, forecast, the
//! named refusals with their numbers), the calls over them ([`api`]), and on
//! `wasm32` the raw exports the page calls ([`exports`]). `k3 plan --json` prints
//! [`dto::PlanJson`] and [`dto::ErrorJson`] and reads [`dto::FootprintJson`], so the CLI
//! and the page speak one schema; `cli/tests/plan_wasm.rs` runs the built `.wasm` under
//! Node against `k3 plan --json` and requires identical answers.
//! Must not: compute a size: k3-plan decides everything.
//!
//! No wasm-bindgen: its CLI does not install reproducibly from the registry here
//! (ARCHITECTURE.md), and JSON through `exports.memory` needs none of it. Built by
//! `scripts/build-wasm.sh` (profile `wasm`), loaded by `ui/src/plan/wasmPlanner.ts`.
#![deny(unsafe_code)]

pub mod api;
pub mod dto;
#[cfg(target_arch = "wasm32")]
mod exports;
#[cfg(test)]
mod typescript;
