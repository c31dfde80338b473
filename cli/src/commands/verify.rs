//! `k3 verify --model STORE`: every file of a downloaded store hashed again against its
//! manifest; each bad file named (exit 1 when any is bad).

use k3_store::download::space::tb;
use k3_store::verify::verify_store;
use serde_json::json;

use super::{input_error, Failure};
use crate::args::VerifyArgs;

pub fn verify(args: VerifyArgs) -> Result<(), Failure> {
    let mut last = std::time::Instant::now();
    let mut done = 0u64;
    let mut line = crate::progress::StepLine::new();
    let report = verify_store(&args.model, &mut |path, n| {
        done += n;
        if !args.json && last.elapsed().as_millis() >= 500 {
            last = std::time::Instant::now();
            line.show(path, &format!("hashing {path} · {} done", tb(done)));
        }
    })
    .map_err(|e| input_error(e.to_string()))?;
    line.finish();
    if args.json {
        outln!(
            "{}",
            json!({"store": report.store, "commit": report.commit, "files": report.files, "bytes": report.bytes, "bad": report.bad, "ok": report.bad.is_empty()})
        );
    } else if report.bad.is_empty() {
        outln!(
            "{}: all {} files ({}) match commit {}",
            report.store.display(),
            report.files,
            tb(report.bytes),
            report.commit
        );
    } else {
        for b in &report.bad {
            outln!("BAD {}: {}", b.path, b.problem);
        }
        outln!(
            "{} of {} files are bad; run `k3 download --to {}` to fetch them again",
            report.bad.len(),
            report.files,
            report.store.display()
        );
    }
    if report.bad.is_empty() {
        Ok(())
    } else {
        Err(Failure { exit_code: 1, message: format!("{} bad file(s)", report.bad.len()) })
    }
}
