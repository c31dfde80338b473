//! The planner's integration tests.
//! One test binary for the crate's integration tests (each file a module): one link instead
//! of one per file, the bulk of a CI build's link time.

mod advice;
mod cachesim;
mod cost_plan;
mod forecast;
mod memory;
mod released;
