//! The CPU and OS as the engine sees them: model, cores, and the instruction sets its
//! kernels choose between.
//!
//! Owns: [`CpuInfo`] from `/proc/cpuinfo` (model name, physical cores), the logical cores
//! this process may use, runtime feature detection (AVX2, FMA, AVX-512 F/BW/BF16 on
//! x86-64; NEON on aarch64) and the OS name (`/etc/os-release`, kernel release).
//! Must not: pick a kernel: the engine's `kernels::dispatch` does.

use serde::Serialize;

/// What the kernels can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Isa {
    pub avx2: bool,
    pub fma: bool,
    pub avx512f: bool,
    pub avx512bw: bool,
    pub avx512bf16: bool,
    pub neon: bool,
}

impl Isa {
    /// Detected on this CPU.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            Isa {
                avx2: std::arch::is_x86_feature_detected!("avx2"),
                fma: std::arch::is_x86_feature_detected!("fma"),
                avx512f: std::arch::is_x86_feature_detected!("avx512f"),
                avx512bw: std::arch::is_x86_feature_detected!("avx512bw"),
                avx512bf16: std::arch::is_x86_feature_detected!("avx512bf16"),
                neon: false,
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            Isa { neon: std::arch::is_aarch64_feature_detected!("neon"), ..Isa::default() }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            Isa::default()
        }
    }

    /// The names of the features present, for people.
    pub fn names(&self) -> Vec<&'static str> {
        let all = [
            (self.avx2, "AVX2"),
            (self.fma, "FMA"),
            (self.avx512f, "AVX-512F"),
            (self.avx512bw, "AVX-512BW"),
            (self.avx512bf16, "AVX-512-BF16"),
            (self.neon, "NEON"),
        ];
        all.into_iter().filter(|(on, _)| *on).map(|(_, n)| n).collect()
    }
}

/// This machine's CPU and OS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpuInfo {
    pub model: String,
    /// `std::env::consts::ARCH`: `x86_64`, `aarch64`, …
    pub arch: String,
    /// Threads this process may run at once.
    pub logical_cores: usize,
    /// Distinct (package, core) pairs, when `/proc/cpuinfo` says.
    pub physical_cores: Option<usize>,
    pub isa: Isa,
    pub os: String,
}

impl CpuInfo {
    pub fn detect() -> CpuInfo {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        CpuInfo {
            model: model_name(&cpuinfo).unwrap_or_else(|| "unknown".into()),
            arch: std::env::consts::ARCH.into(),
            logical_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            physical_cores: physical_cores(&cpuinfo),
            isa: Isa::detect(),
            os: os_name(),
        }
    }
}

/// `model name` (x86) or `Model`/`Hardware` (ARM boards) of `/proc/cpuinfo`.
pub fn model_name(cpuinfo: &str) -> Option<String> {
    ["model name", "Model", "Hardware"].iter().find_map(|key| field(cpuinfo, key).map(str::to_string))
}

fn field<'a>(block: &'a str, key: &str) -> Option<&'a str> {
    block.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key && !v.trim().is_empty()).then(|| v.trim())
    })
}

/// Distinct (`physical id`, `core id`) pairs of `/proc/cpuinfo`.
pub fn physical_cores(cpuinfo: &str) -> Option<usize> {
    let mut pairs: Vec<(&str, &str)> = cpuinfo
        .split("\n\n")
        .filter_map(|cpu| Some((field(cpu, "physical id").unwrap_or("0"), field(cpu, "core id")?)))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    (!pairs.is_empty()).then_some(pairs.len())
}

/// `PRETTY_NAME` of `/etc/os-release` and the kernel release, e.g. "Debian GNU/Linux 12
/// (bookworm), Linux 6.1.0".
fn os_name() -> String {
    let release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let pretty = release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    match std::fs::read_to_string("/proc/sys/kernel/osrelease") {
        Ok(kernel) => format!("{pretty}, Linux {}", kernel.trim()),
        Err(_) => pretty,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_gives_the_model_and_physical_cores() {
        let text = "processor\t: 0\nmodel name\t: AMD EPYC 7763\nphysical id\t: 0\ncore id\t\t: 0\n\n\
                    processor\t: 1\nmodel name\t: AMD EPYC 7763\nphysical id\t: 0\ncore id\t\t: 0\n\n\
                    processor\t: 2\nmodel name\t: AMD EPYC 7763\nphysical id\t: 0\ncore id\t\t: 1\n";
        assert_eq!(model_name(text).as_deref(), Some("AMD EPYC 7763"));
        assert_eq!(physical_cores(text), Some(2), "two hyperthreads of core 0, one of core 1");
        assert_eq!(physical_cores("processor\t: 0\nBogoMIPS\t: 50\n"), None);
        assert_eq!(model_name("processor : 0\nHardware : BCM2835\n").as_deref(), Some("BCM2835"));
    }

    #[test]
    fn isa_names_list_what_is_present() {
        let isa = Isa { avx2: true, fma: true, ..Isa::default() };
        assert_eq!(isa.names(), vec!["AVX2", "FMA"]);
    }
}
