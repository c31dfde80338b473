//! `k3 doctor`: the folders judged as a model store. No behaviour lives here.

use std::path::PathBuf;

use clap::Args;

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Folders to judge as a model store (default: every mounted volume).
    #[arg(long = "path", value_name = "DIR")]
    pub paths: Vec<PathBuf>,
    /// Print one JSON object (cpu, memory, drives, verdicts, recommended_preset,
    /// recommended_context, kv_bytes_per_position).
    #[arg(long)]
    pub json: bool,
}
