//! `k3 forecast`: for every preset (and a custom budget) the memory plan on this machine
//! and a seconds-per-token range. The planner and the time model are `k3_plan`'s
//! (`plan_memory`, `forecast`); this file gathers their inputs and hands them over.

use k3_engine::MemoryOptions;
use k3_io::sysinfo::machine_memory;
use k3_plan::{auto_budget_for, plan_memory, BudgetChoice, ForecastInput, MemoryRequest, Preset, TrunkCoding};

use super::forecast_disk::disk;
use super::forecast_inputs::{coding, compute, subject};
pub use super::forecast_report::{Entry, Planned, Report};
use super::{input_error, Failure};
use crate::args::ForecastArgs;

pub fn forecast(args: ForecastArgs) -> Result<(), Failure> {
    let opts =
        MemoryOptions { context_length: args.context_length, io_threads: args.io_threads, ..MemoryOptions::resident() };
    opts.validate()?;
    let custom = BudgetChoice::from_flags(None, args.trunk_budget.as_deref(), args.cache_budget.as_deref())
        .map_err(|e| input_error(format!("--trunk-budget/--cache-budget: {e}")))?;
    let subject = subject(&args)?;
    let disk = disk(&args, &subject.footprint)?;
    let compute = compute(&args)?;
    let coding = coding(&args)?;
    let mut report = Report {
        subject,
        disk,
        compute,
        machine: machine_memory(),
        context_length: args.context_length as u64,
        io_threads: args.io_threads as u64,
        coding,
        entries: Vec::new(),
    };
    let mut choices: Vec<(String, BudgetChoice)> = Preset::ALL.iter().map(|p| (p.name().into(), p.choice())).collect();
    choices.extend(custom.map(|c| ("custom".to_string(), c)));
    for (name, choice) in choices {
        let entry = entry(&report, name, choice)?;
        report.entries.push(entry);
    }
    if args.json {
        outln!("{}", crate::out::Json(&super::forecast_json::json(&report)));
    } else {
        super::forecast_out::table(&report);
    }
    Ok(())
}

fn entry(report: &Report, name: String, choice: BudgetChoice) -> Result<Entry, Failure> {
    let fp = &report.subject.footprint;
    let budget = match choice {
        BudgetChoice::Fixed(b) => Some(b),
        BudgetChoice::Auto => auto_budget_for(fp, report.machine, report.context_length).ok(),
    };
    let req = MemoryRequest {
        choice,
        streamed_trunk: report.subject.trunk_streamed,
        context_length: report.context_length,
        io_threads: report.io_threads,
    };
    let plan = match plan_memory(fp, &req, report.machine, false) {
        Ok(plan) => plan,
        Err(e) => return Ok(Entry { name, budget, outcome: Err(e) }),
    };
    let input = ForecastInput {
        footprint: fp,
        plan: &plan,
        trunk_streamed: report.subject.trunk_streamed,
        disk: report.disk.rates(),
        rates: report.compute.rates,
        coding: report.coding.as_ref().map(|c| TrunkCoding {
            layer_read_bytes: &c.layer_read_bytes,
            decode_bytes_per_second: c.decode_bytes_per_second,
        }),
    };
    let forecast = k3_plan::forecast(&input).map_err(|e| input_error(format!("forecast: {e}")))?;
    let available = Some(report.machine.usable_available_bytes()).filter(|&a| a > 0);
    Ok(Entry { name, budget, outcome: Ok(Planned { plan, forecast, available }) })
}
