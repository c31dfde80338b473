//! `k3 sim-cache TRACE`: reads a recorded expert trace and prints every cache policy's hit
//! rate at every requested capacity (`k3_plan::cachesim` does the simulating).
//!
//! Owns: reading the trace file (headerless little-endian int32 `(layer, expert)` pairs,
//! decoded by `k3_plan::trace`) and the table / JSON output. Must not: simulate anything itself, or accept a trace it
//! cannot decode exactly — a size that is not a multiple of 8 or a negative value is unusable
//! input (exit 2), never silently truncated or wrapped to a huge `u32`.
//! Easy to break: the JSON keys (`results[].<policy label>.hits` …) are read by tests.

use std::path::Path;

use k3_plan::cachesim::{self, PolicyKind, Request, SimResult, SweepRow};
use k3_plan::trace::{TraceDecoder, TraceError, MAX_TRACE_BYTES};
use serde_json::{json, Map, Value};

use super::{input_error, runtime_error, Failure};
use crate::args::SimCacheArgs;

pub fn sim_cache(args: SimCacheArgs) -> Result<(), Failure> {
    let capacities = parse_capacities(&args.capacity)?;
    let trace = read_trace(&args.trace)?;
    let rows = cachesim::sweep(&trace, &capacities, &PolicyKind::ALL).map_err(|e| runtime_error(e.to_string()))?;
    let distinct = cachesim::distinct_count(&trace);
    if args.json {
        outln!("{}", report_json(&args.trace, trace.len(), distinct, &rows));
    } else {
        print_table(&args.trace, trace.len(), distinct, &rows);
    }
    Ok(())
}

/// Parses `56,570,…` into slot counts.
fn parse_capacities(csv: &str) -> Result<Vec<usize>, Failure> {
    let capacities = csv
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().map_err(|_| input_error(format!("--capacity: `{s}` is not a slot count"))))
        .collect::<Result<Vec<_>, _>>()?;
    if capacities.is_empty() {
        return Err(input_error("--capacity: no slot counts given".into()));
    }
    Ok(capacities)
}

/// Reads the trace file in 1 MiB pieces (never the whole file next to its decoded pairs)
/// and decodes it with `k3_plan::trace`, naming the file in every refusal.
fn read_trace(path: &Path) -> Result<Vec<Request>, Failure> {
    use std::io::Read;
    let fail = |why: String| input_error(format!("trace {}: {why}", path.display()));
    let mut file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    let len = file.metadata().map_err(|e| fail(e.to_string()))?.len();
    if len > MAX_TRACE_BYTES {
        return Err(fail(TraceError::TooLarge { bytes: len }.to_string()));
    }
    let mut decoder = TraceDecoder::with_len_hint(len);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| fail(e.to_string()))?;
        if n == 0 {
            break;
        }
        decoder.push(&buf[..n]).map_err(|e| fail(e.to_string()))?;
    }
    decoder.finish().map_err(|e| fail(e.to_string()))
}

fn percent(r: &SimResult) -> String {
    format!("{:.2}", 100.0 * r.hit_rate())
}

fn print_table(path: &Path, requests: usize, distinct: usize, rows: &[SweepRow]) {
    outln!("{}: {requests} requests, {distinct} distinct experts (hit % per policy)", path.display());
    let titles: Vec<String> = PolicyKind::ALL.iter().map(|k| format!("{} %", k.build().name())).collect();
    outln!("{:>10}{}", "capacity", titles.iter().map(|t| format!("{t:>14}")).collect::<String>());
    for row in rows {
        let cells: String = row.results.iter().map(|(_, r)| format!("{:>14}", percent(r))).collect();
        outln!("{:>10}{cells}", row.capacity);
    }
}

fn report_json(path: &Path, requests: usize, distinct: usize, rows: &[SweepRow]) -> Value {
    let results: Vec<Value> = rows.iter().map(row_json).collect();
    json!({
        "trace": path.display().to_string(),
        "requests": requests,
        "distinct": distinct,
        "policies": PolicyKind::ALL.iter().map(|k| k.label()).collect::<Vec<_>>(),
        "results": results,
    })
}

fn row_json(row: &SweepRow) -> Value {
    let mut object = Map::new();
    object.insert("capacity".into(), json!(row.capacity));
    for (kind, r) in &row.results {
        let result = json!({ "hits": r.hits, "misses": r.misses, "hit_rate": r.hit_rate() });
        object.insert(kind.label().into(), result);
    }
    Value::Object(object)
}
