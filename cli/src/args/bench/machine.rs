//! `k3 bench kernels`, `disk` and `codec`: the benchmarks of this machine's parts (the
//! kernels, the drive, the trunk codec), no model loaded. No behaviour lives here.

use std::path::PathBuf;

use clap::Args;

#[derive(Args, Debug)]
pub struct BenchKernelsArgs {
    /// Threads for the "all threads" runs (default: all cores); 1 thread is always measured.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Timed repetitions per case (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Kernel bodies to time: portable, avx2, avx512 or neon (default: the fastest this CPU runs).
    /// The memory floor is always measured with the fastest.
    #[arg(long, value_parser = clap::value_parser!(k3_engine::advanced::kernels::Isa))]
    pub isa: Option<k3_engine::advanced::kernels::Isa>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct BenchDiskArgs {
    /// Files to read (shards, trunk.bin), or a folder on the drive for a scratch file.
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// A model folder: its *.safetensors shards are read (read-only).
    #[arg(long, value_name = "DIR")]
    pub model: Option<PathBuf>,
    /// Seconds each queue depth (1, then 16) reads for.
    #[arg(long, value_name = "N", default_value_t = 20.0)]
    pub seconds: f64,
    /// Size of the scratch file written into a folder given with --path (default 2GiB; 4GB
    /// with --sweep).
    #[arg(long, value_name = "SIZE")]
    pub scratch_size: Option<String>,
    /// Instead: sweep request size × requests in flight (the engine's read pattern).
    #[arg(long)]
    pub sweep: bool,
    /// --sweep: request sizes in MiB (default 1,2,4,8,16,32,64).
    #[arg(long, value_name = "CSV", requires = "sweep")]
    pub sizes: Option<String>,
    /// Queue depths (default 1,16; with --sweep, requests in flight: 1,2,4,8,16,32).
    #[arg(long, value_name = "CSV")]
    pub depths: Option<String>,
    /// --sweep: bytes each point reads (default 512MB).
    #[arg(long, value_name = "SIZE", requires = "sweep")]
    pub bytes_per_point: Option<String>,
    /// --sweep: write the best point for --read-pattern.
    #[arg(long, value_name = "FILE", requires = "sweep")]
    pub save: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct BenchCodecArgs {
    /// A trunk packed raw (`k3 pack` without --codec): its layer is read, coded and decoded.
    #[arg(long, value_name = "DIR")]
    pub trunk: PathBuf,
    /// Which layer.
    #[arg(long, default_value_t = 0)]
    pub layer: usize,
    /// Threads for coding and for the all-core decode (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}
