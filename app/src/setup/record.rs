//! `setup.json`'s record (`crate::settings::records::SetupRecord`) and the wizard's types,
//! converted both ways: the file keeps its field names whatever the window's types are called.

use crate::settings::records::{PatternRecord, SetupRecord, SetupStepRecord, SpeedRecord};

use super::flow::SetupStep;
use super::settings::{PatternSummary, SetupSettings, SpeedSummary};

impl From<SetupStepRecord> for SetupStep {
    fn from(s: SetupStepRecord) -> Self {
        match s {
            SetupStepRecord::Welcome => SetupStep::Welcome,
            SetupStepRecord::Hardware => SetupStep::Hardware,
            SetupStepRecord::Drives => SetupStep::Drives,
            SetupStepRecord::SpeedTest => SetupStep::SpeedTest,
            SetupStepRecord::Preset => SetupStep::Preset,
            SetupStepRecord::Download => SetupStep::Download,
            SetupStepRecord::Pack => SetupStep::Pack,
            SetupStepRecord::FirstLoad => SetupStep::FirstLoad,
            SetupStepRecord::Ready => SetupStep::Ready,
        }
    }
}

impl From<SetupStep> for SetupStepRecord {
    fn from(s: SetupStep) -> Self {
        match s {
            SetupStep::Welcome => SetupStepRecord::Welcome,
            SetupStep::Hardware => SetupStepRecord::Hardware,
            SetupStep::Drives => SetupStepRecord::Drives,
            SetupStep::SpeedTest => SetupStepRecord::SpeedTest,
            SetupStep::Preset => SetupStepRecord::Preset,
            SetupStep::Download => SetupStepRecord::Download,
            SetupStep::Pack => SetupStepRecord::Pack,
            SetupStep::FirstLoad => SetupStepRecord::FirstLoad,
            SetupStep::Ready => SetupStepRecord::Ready,
        }
    }
}

impl From<SpeedRecord> for SpeedSummary {
    fn from(r: SpeedRecord) -> Self {
        SpeedSummary {
            qd1_mb_per_s: r.qd1_mb_per_s,
            qd16_mb_per_s: r.qd16_mb_per_s,
            qd1_experts_per_s: r.qd1_experts_per_s,
            qd16_experts_per_s: r.qd16_experts_per_s,
            direct: r.direct,
            read_pattern: r.read_pattern.map(|p| PatternSummary {
                request_bytes: p.request_bytes,
                depth: p.depth,
                mb_per_s: p.mb_per_s,
            }),
        }
    }
}

impl From<SpeedSummary> for SpeedRecord {
    fn from(s: SpeedSummary) -> Self {
        SpeedRecord {
            qd1_mb_per_s: s.qd1_mb_per_s,
            qd16_mb_per_s: s.qd16_mb_per_s,
            qd1_experts_per_s: s.qd1_experts_per_s,
            qd16_experts_per_s: s.qd16_experts_per_s,
            direct: s.direct,
            read_pattern: s.read_pattern.map(|p| PatternRecord {
                request_bytes: p.request_bytes,
                depth: p.depth,
                mb_per_s: p.mb_per_s,
            }),
        }
    }
}

impl From<SetupRecord> for SetupSettings {
    fn from(r: SetupRecord) -> Self {
        SetupSettings {
            step: r.step.into(),
            repo: r.repo,
            store_dir: r.store_dir,
            trunk_dir: r.trunk_dir,
            preset: r.preset,
            speed: r.speed.map(Into::into),
            overrides: r.overrides,
            dismissed: r.dismissed,
            adopted: r.adopted,
        }
    }
}

impl From<&SetupSettings> for SetupRecord {
    fn from(s: &SetupSettings) -> Self {
        SetupRecord {
            step: s.step.into(),
            repo: s.repo.clone(),
            store_dir: s.store_dir.clone(),
            trunk_dir: s.trunk_dir.clone(),
            preset: s.preset.clone(),
            speed: s.speed.map(Into::into),
            overrides: s.overrides.clone(),
            dismissed: s.dismissed,
            adopted: s.adopted,
        }
    }
}
