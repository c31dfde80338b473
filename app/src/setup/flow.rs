//! The setup wizard's steps and the rules for leaving each (PRODUCT.md §1.1): pure, so
//! every step, every failure and a resume from each step are unit-tested without a window.
//!
//! Owns: [`Blocker`], [`Facts`] and [`blockers`] (the steps themselves are `step`'s). Must not: touch the disk,
//! the network or the engine: commands gather [`Facts`] and persist the result.

use super::settings::SetupSettings;
pub use super::step::SetupStep;

/// Why a step cannot be left yet; `overridable` ones can be confirmed away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocker {
    /// No AVX2/FMA: scalar kernels give identical output, much slower (overridable).
    CpuLacksAvx2 {
        message: String,
    },
    /// The `auto` preset refuses this machine's memory.
    TooLittleMemory {
        message: String,
    },
    NoStoreChosen,
    /// The store's drive lacks room (the shortfall in the message).
    NotEnoughSpace {
        message: String,
    },
    /// FAT or read-only: refused.
    UnsuitableDrive {
        message: String,
    },
    /// A network file system: slow and its locks untrustworthy (overridable).
    NetworkDrive {
        message: String,
    },
    NoSpeedTest,
    /// The forecast is over 60 s/token (overridable).
    SlowDrive {
        message: String,
    },
    NoPreset,
    /// The download, pack or first load has not finished.
    JobUnfinished,
}

impl Blocker {
    /// The key an override is recorded under, for the ones a user may confirm away.
    pub fn override_key(&self) -> Option<&'static str> {
        match self {
            Blocker::CpuLacksAvx2 { .. } => Some("cpu"),
            Blocker::NetworkDrive { .. } => Some("networkDrive"),
            Blocker::SlowDrive { .. } => Some("slowDrive"),
            Blocker::TooLittleMemory { .. }
            | Blocker::NoStoreChosen
            | Blocker::NotEnoughSpace { .. }
            | Blocker::UnsuitableDrive { .. }
            | Blocker::NoSpeedTest
            | Blocker::NoPreset
            | Blocker::JobUnfinished => None,
        }
    }
}

/// What the commands measured, as the rules need it.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// `Some(message)` when the CPU lacks AVX2/FMA (x86-64).
    pub cpu_problem: Option<String>,
    /// `Some(message)` when `auto` refuses this machine's memory.
    pub memory_problem: Option<String>,
    /// The store's drive, once one is chosen.
    pub store_drive: Option<DriveFacts>,
    /// Seconds per token forecast for the chosen preset (expected, serial).
    pub forecast_seconds: Option<f64>,
    /// The download, pack and first load are done (per the jobs' own records).
    pub download_done: bool,
    pub pack_done: bool,
    pub load_done: bool,
}

#[derive(Debug, Clone, Default)]
pub struct DriveFacts {
    /// `Some(shortfall text)` when the drive lacks room.
    pub short: Option<String>,
    /// `Some(reason)` for FAT or read-only.
    pub unsuitable: Option<String>,
    /// `Some(fs type)` for a network file system.
    pub network: Option<String>,
}

/// Seconds per token above which a drive is "too slow" (PRODUCT.md §1.1 bands).
pub const TOO_SLOW_SECONDS: f64 = 60.0;

/// Everything keeping `settings.step` from being left, overrides already applied.
pub fn blockers(settings: &SetupSettings, facts: &Facts) -> Vec<Blocker> {
    let mut out = Vec::new();
    match settings.step {
        SetupStep::Welcome | SetupStep::Ready => {}
        SetupStep::Hardware => {
            if let Some(message) = &facts.cpu_problem {
                out.push(Blocker::CpuLacksAvx2 { message: message.clone() });
            }
            if let Some(message) = &facts.memory_problem {
                out.push(Blocker::TooLittleMemory { message: message.clone() });
            }
        }
        SetupStep::Drives => {
            match (&settings.store_dir, &facts.store_drive) {
                (None, _) | (_, None) => out.push(Blocker::NoStoreChosen),
                (Some(_), Some(d)) => {
                    if let Some(message) = &d.unsuitable {
                        out.push(Blocker::UnsuitableDrive { message: message.clone() });
                    }
                    if let Some(message) = &d.short {
                        out.push(Blocker::NotEnoughSpace { message: message.clone() });
                    }
                    if let Some(fs) = &d.network {
                        out.push(Blocker::NetworkDrive { message: format!("a network file system ({fs}): slow to stream from, and its locks are not to be trusted") });
                    }
                }
            }
        }
        SetupStep::SpeedTest => {
            if settings.speed.is_none() {
                out.push(Blocker::NoSpeedTest);
            }
        }
        SetupStep::Preset => {
            if settings.preset.is_none() {
                out.push(Blocker::NoPreset);
            }
            if let Some(s) = facts.forecast_seconds.filter(|s| *s > TOO_SLOW_SECONDS) {
                out.push(Blocker::SlowDrive { message: format!("about {s:.0} s per token at this drive's speed") });
            }
        }
        SetupStep::Download if !facts.download_done => out.push(Blocker::JobUnfinished),
        SetupStep::Pack if !facts.pack_done => out.push(Blocker::JobUnfinished),
        SetupStep::FirstLoad if !facts.load_done => out.push(Blocker::JobUnfinished),
        SetupStep::Download | SetupStep::Pack | SetupStep::FirstLoad => {}
    }
    out.retain(|b| b.override_key().is_none_or(|k| !settings.overrides.iter().any(|o| o == k)));
    out
}

/// Moves to the next step when nothing blocks; the blockers otherwise.
pub fn advance(settings: &mut SetupSettings, facts: &Facts) -> Result<SetupStep, Vec<Blocker>> {
    let blocking = blockers(settings, facts);
    if !blocking.is_empty() {
        return Err(blocking);
    }
    settings.step = settings.step.next();
    Ok(settings.step)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::setup::settings::SpeedSummary;

    fn at(step: SetupStep) -> SetupSettings {
        SetupSettings { step, ..SetupSettings::default() }
    }

    fn good_drive() -> Facts {
        Facts { store_drive: Some(DriveFacts::default()), ..Facts::default() }
    }

    #[test]
    fn a_happy_path_walks_every_step_in_order() {
        let mut s = at(SetupStep::Welcome);
        let mut facts = good_drive();
        s.store_dir = Some("/store".into());
        s.speed = Some(SpeedSummary {
            qd1_mb_per_s: 900.0,
            qd16_mb_per_s: 2800.0,
            qd1_experts_per_s: 51.0,
            qd16_experts_per_s: 160.0,
            direct: true,
            read_pattern: None,
        });
        s.preset = Some("auto".into());
        facts.forecast_seconds = Some(12.0);
        let mut seen = vec![s.step];
        while s.step != SetupStep::Ready {
            match s.step {
                SetupStep::Download => facts.download_done = true,
                SetupStep::Pack => facts.pack_done = true,
                SetupStep::FirstLoad => facts.load_done = true,
                _ => {}
            }
            seen.push(advance(&mut s, &facts).unwrap());
        }
        assert_eq!(seen, SetupStep::ALL.to_vec());
    }

    #[test]
    fn every_failure_of_product_table_blocks_its_step() {
        let mut hw = Facts {
            cpu_problem: Some("no AVX2".into()),
            memory_problem: Some("usable 2.1 GB; 3 GB needed".into()),
            ..Facts::default()
        };
        let b = blockers(&at(SetupStep::Hardware), &hw);
        assert!(matches!(b[0], Blocker::CpuLacksAvx2 { .. }) && matches!(b[1], Blocker::TooLittleMemory { .. }));
        hw.memory_problem = None;
        let mut s = at(SetupStep::Hardware);
        s.overrides.push("cpu".into());
        assert!(blockers(&s, &hw).is_empty(), "continue anyway on a CPU without AVX2");

        let mut s = at(SetupStep::Drives);
        assert_eq!(blockers(&s, &Facts::default()), vec![Blocker::NoStoreChosen]);
        s.store_dir = Some("/mnt/usb".into());
        let drive = |d: DriveFacts| Facts { store_drive: Some(d), ..Facts::default() };
        let short = drive(DriveFacts { short: Some("0.49 TB short".into()), ..DriveFacts::default() });
        assert!(
            matches!(&blockers(&s, &short)[..], [Blocker::NotEnoughSpace { message }] if message.contains("short"))
        );
        let fat = drive(DriveFacts { unsuitable: Some("FAT".into()), ..DriveFacts::default() });
        assert!(matches!(&blockers(&s, &fat)[..], [Blocker::UnsuitableDrive { .. }]));
        let nfs = drive(DriveFacts { network: Some("nfs4".into()), ..DriveFacts::default() });
        assert!(matches!(&blockers(&s, &nfs)[..], [Blocker::NetworkDrive { .. }]));
        s.overrides.push("networkDrive".into());
        assert!(blockers(&s, &nfs).is_empty());

        assert_eq!(blockers(&at(SetupStep::SpeedTest), &Facts::default()), vec![Blocker::NoSpeedTest]);
        let mut p = at(SetupStep::Preset);
        p.preset = Some("laptop".into());
        let slow = Facts { forecast_seconds: Some(180.0), ..Facts::default() };
        assert!(matches!(&blockers(&p, &slow)[..], [Blocker::SlowDrive { .. }]));
        for step in [SetupStep::Download, SetupStep::Pack, SetupStep::FirstLoad] {
            assert_eq!(blockers(&at(step), &Facts::default()), vec![Blocker::JobUnfinished], "{step:?}");
        }
    }

    #[test]
    fn a_resume_continues_at_the_saved_step_from_each_step() {
        for step in SetupStep::ALL {
            let dir = tempfile::tempdir().unwrap();
            let saved = SetupSettings { step, ..SetupSettings::default() };
            saved.save(&crate::settings::Settings::open(dir.path())).unwrap();
            // A new start reads `setup.json` again.
            let back = SetupSettings::load(&crate::settings::Settings::open(dir.path()), None);
            assert_eq!(back.step, step);
            assert_eq!(back, saved);
        }
        assert!(SetupStep::Preset.can_revisit() && !SetupStep::Download.can_revisit());
    }
}
