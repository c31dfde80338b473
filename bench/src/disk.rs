//! `k3 bench disk`: the drive's figures as reported — whole experts read at each queue depth
//! ([`ExpertReport`]: `qd<N>` for each depth measured, then `block_bytes`, `direct`, `files`,
//! `seconds_per_pass`) and the sweep of request sizes and depths ([`SweepReport`]), from
//! k3-store's measurements.

use std::path::PathBuf;

use k3_store::{DiskPoint, DiskSweep, ExpertReadReport, PassFigures};
use serde::ser::{Serialize, SerializeMap, Serializer};

/// `k3 bench disk --json`: each queue depth's pass, then the read's settings.
#[derive(serde::Serialize)]
pub struct ExpertReport<'a> {
    #[serde(flatten)]
    passes: Passes,
    block_bytes: usize,
    direct: bool,
    files: &'a [PathBuf],
    seconds_per_pass: f64,
}

/// One pass's figures, rounded as printed (MB/s, latencies and seconds to 3 places,
/// experts per second to 5).
#[derive(serde::Serialize)]
struct PassJson {
    mb_per_s: f64,
    experts_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    reads: u64,
    seconds: f64,
}

/// The passes keyed `qd<depth>`, in the order measured (a depth given twice is listed once,
/// where it first came, with its last pass).
struct Passes(Vec<(String, PassJson)>);

impl Serialize for Passes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, pass) in &self.0 {
            map.serialize_entry(key, pass)?;
        }
        map.end()
    }
}

impl<'a> ExpertReport<'a> {
    pub fn of(report: &'a ExpertReadReport, seconds: f64) -> Self {
        let mut passes: Vec<(String, PassJson)> = Vec::new();
        for p in &report.passes {
            let key = format!("qd{}", p.depth);
            match passes.iter_mut().find(|(k, _)| *k == key) {
                Some((_, pass)) => *pass = PassJson::of(p),
                None => passes.push((key, PassJson::of(p))),
            }
        }
        ExpertReport {
            passes: Passes(passes),
            block_bytes: report.block_bytes,
            direct: report.direct,
            files: &report.files,
            seconds_per_pass: seconds,
        }
    }
}

impl PassJson {
    fn of(p: &PassFigures) -> Self {
        PassJson {
            mb_per_s: round(p.mb_per_s, 3),
            experts_per_s: round(p.experts_per_s, 5),
            p50_ms: round(p.p50_ms, 3),
            p99_ms: round(p.p99_ms, 3),
            reads: p.reads,
            seconds: round(p.seconds, 3),
        }
    }
}

fn round(x: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (x * scale).round() / scale
}

/// `k3 bench disk --sweep --json`: every point, the best one, and what was read.
#[derive(serde::Serialize)]
pub struct SweepReport<'a> {
    pub points: &'a [DiskPoint],
    pub best: DiskPoint,
    pub direct: bool,
    pub files: &'a [PathBuf],
}

impl<'a> SweepReport<'a> {
    /// The sweep's report (None: no point was measured).
    pub fn of(sweep: &'a DiskSweep) -> Option<Self> {
        let best = sweep.best()?;
        Some(SweepReport { points: &sweep.points, best, direct: sweep.direct, files: &sweep.files })
    }
}

#[cfg(test)]
mod tests {
    use k3_store::{ExpertReadReport, PassFigures};

    use super::ExpertReport;

    fn pass(depth: usize, mb_per_s: f64) -> PassFigures {
        PassFigures { depth, mb_per_s, experts_per_s: 1.234567, p50_ms: 5.0, p99_ms: 9.8765, reads: 7, seconds: 1.0004 }
    }

    #[test]
    fn the_json_keys_each_depth_then_the_settings_and_rounds_as_printed() {
        // A depth given twice keeps its first place and its last pass (as a JSON map's insert).
        let passes = vec![pass(1, 1234.56789), pass(16, 2.0), pass(1, 3.0)];
        let report = ExpertReadReport { passes, block_bytes: 17_547_264, direct: true, files: vec!["/a".into()] };
        let pass_json = |mb: &str| {
            format!(
                r#"{{"mb_per_s":{mb},"experts_per_s":1.23457,"p50_ms":5.0,"p99_ms":9.877,"reads":7,"seconds":1.0}}"#
            )
        };
        let expected = format!(
            r#"{{"qd1":{},"qd16":{},"block_bytes":17547264,"direct":true,"files":["/a"],"seconds_per_pass":20.0}}"#,
            pass_json("3.0"),
            pass_json("2.0")
        );
        assert_eq!(serde_json::to_string(&ExpertReport::of(&report, 20.0)).unwrap(), expected);
        let first = ExpertReadReport { passes: vec![pass(1, 1234.56789)], ..report };
        assert!(serde_json::to_string(&ExpertReport::of(&first, 1.0)).unwrap().contains(r#""mb_per_s":1234.568,"#));
    }
}
