//! `k3 plan`: what the memory plan is made for (a model folder, a footprint, the released
//! K3), on which memory figures, and how it is printed. No behaviour lives here.

use std::path::PathBuf;

use clap::Args;

use super::MemoryArgs;

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("subject").required(true).args(["model", "footprint", "released"])))]
pub struct PlanArgs {
    /// Model folder: config.json plus *.safetensors shards (only headers are read).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// A footprint as JSON (`k3 plan --print-footprint`, or what the app sends the page)
    /// instead of a model folder.
    #[arg(long, value_name = "FILE")]
    pub footprint: Option<PathBuf>,
    /// The released Kimi K3 as the spec's tensor catalogue sizes it, instead of a folder.
    #[arg(long)]
    pub released: bool,
    /// With --footprint or --released: plan as if the trunk were packed (layers stream).
    #[arg(long, conflicts_with = "model")]
    pub streamed_trunk: bool,
    /// Print the footprint as JSON (the planner's input) instead of a plan.
    #[arg(long)]
    pub print_footprint: bool,
    /// The machine's MemTotal to plan for (e.g. 64GB) instead of this machine's; with
    /// --mem-available.
    #[arg(long, value_name = "SIZE", requires = "mem_available")]
    pub mem_total: Option<String>,
    /// The machine's MemAvailable to plan for (e.g. 48GB); with --mem-total.
    #[arg(long, value_name = "SIZE", requires = "mem_total")]
    pub mem_available: Option<String>,
    #[command(flatten)]
    pub memory: MemoryArgs,
    /// Print one JSON object: the plan, or `{"error": {"kind": …, its numbers, "message"}}`
    /// (k3-plan-wasm's schema, the wasm planner's too).
    #[arg(long)]
    pub json: bool,
}
