//! What `k3 forecast` forecasts from: the footprint (the released K3 from the catalogue,
//! or a checkpoint's headers), the drive's bandwidth (given, measured or a stated default:
//! `forecast_disk`) and this CPU's kernel rates (measured).

use std::path::PathBuf;
use std::time::Duration;

use k3_engine::tools::{footprint_of, measure_decode_rates, open_packed_trunk, DecodeRates};
use k3_engine::ModelConfig;
use k3_io::format::TensorIndex;
use k3_plan::{released_footprint, Footprint};

use super::{input_error, require_dir, Failure};
use crate::args::ForecastArgs;

/// Clock time of the kernel measurement (the weights' setup comes on top).
const KERNEL_BUDGET: Duration = Duration::from_millis(1200);

/// The model forecast.
pub struct Subject {
    pub footprint: Footprint,
    /// `None` for the released model.
    pub model_dir: Option<PathBuf>,
    pub trunk_streamed: bool,
}

/// The released K3, or the checkpoint in --model with its packed trunk when given.
pub fn subject(args: &ForecastArgs) -> Result<Subject, Failure> {
    let Some(dir) = &args.model else {
        return Ok(Subject { footprint: released_footprint(), model_dir: None, trunk_streamed: true });
    };
    require_dir("--model", dir)?;
    let cfg = ModelConfig::load(&dir.join("config.json"))?;
    let index = TensorIndex::open(dir)?;
    let footprint = footprint_of(&cfg, &index)?;
    if let Some(trunk) = &args.trunk {
        require_dir("--trunk", trunk)?;
        open_packed_trunk(trunk, &cfg, &index)?;
    }
    Ok(Subject { footprint, model_dir: Some(dir.clone()), trunk_streamed: args.trunk.is_some() })
}

/// `--threads`, checked against the bound every other command has (probe finding: 5,000
/// was still measuring at 120 s); default: every core.
fn forecast_threads(args: &ForecastArgs) -> Result<usize, Failure> {
    let max = k3_engine::MAX_THREADS;
    match args.threads {
        Some(n) if n == 0 || n > max => Err(input_error(format!("--threads {n}: give 1 to {max}"))),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)),
    }
}

/// The kernel rates on `--threads` threads (default: every core).
pub fn compute(args: &ForecastArgs) -> Result<DecodeRates, Failure> {
    Ok(measure_decode_rates(forecast_threads(args)?, KERNEL_BUDGET)?)
}

/// What a coded packed trunk (`k3 pack --codec huffman`) changes in the forecast.
pub struct Coding {
    pub layer_read_bytes: Vec<u64>,
    pub decode_bytes_per_second: f64,
}

/// `Some` when --trunk is coded: each layer's read size from `trunk.json`, and the decoder's
/// rate measured on the forecast's threads.
pub fn coding(args: &ForecastArgs) -> Result<Option<Coding>, Failure> {
    let (Some(dir), Some(trunk)) = (&args.model, &args.trunk) else { return Ok(None) };
    let cfg = ModelConfig::load(&dir.join("config.json"))?;
    let index = TensorIndex::open(dir)?;
    let packed = open_packed_trunk(trunk, &cfg, &index)?;
    if packed.layers.iter().all(|l| l.coding.is_none()) {
        return Ok(None);
    }
    let threads = forecast_threads(args)?;
    let decode_bytes_per_second = k3_engine::measure_decode_rate(threads)?;
    Ok(Some(Coding {
        layer_read_bytes: packed.layers.iter().map(|l| l.stored_len()).collect(),
        decode_bytes_per_second,
    }))
}
