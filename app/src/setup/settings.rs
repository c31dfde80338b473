//! The wizard's saved state (`setup.json` in the app's data folder), written atomically
//! (tmp → fsync → rename → fsync dir) after every change, so reopening the app returns to
//! the same step with every choice kept. The model store it names is never deleted by the
//! app: uninstall, update and "reset" leave it alone.
//!
//! Owns: [`SetupSettings`], [`SpeedSummary`], load and save.

use std::path::PathBuf;

use crate::settings::records::SetupRecord;
use crate::settings::{Settings, SettingsRecord};

use super::step::SetupStep;
use crate::error::AppError;

/// The settings file inside the data folder.
pub const SETUP_FILE: &str = <SetupRecord as SettingsRecord>::FILE;
/// The repository the wizard downloads unless `K3APP_REPO` names another.
pub const DEFAULT_REPO: &str = crate::settings::records::DEFAULT_REPO;

#[derive(Debug, Clone, PartialEq)]
pub struct SetupSettings {
    pub step: SetupStep,
    pub repo: String,
    /// The model store (the download's folder).
    pub store_dir: Option<String>,
    /// Where the packed trunk goes (the fastest drive); `None`: inside the store.
    pub trunk_dir: Option<String>,
    pub preset: Option<String>,
    pub speed: Option<SpeedSummary>,
    /// Warnings the user confirmed (`cpu`, `networkDrive`, `slowDrive`).
    pub overrides: Vec<String>,
    /// The user chose the demo model for now (the wizard stays one click away).
    pub dismissed: bool,
    /// The folder is one the user already had ("I already have the files").
    pub adopted: bool,
}

impl Default for SetupSettings {
    fn default() -> Self {
        SetupSettings {
            step: SetupStep::Welcome,
            repo: DEFAULT_REPO.into(),
            store_dir: None,
            trunk_dir: None,
            preset: None,
            speed: None,
            overrides: Vec::new(),
            dismissed: false,
            adopted: false,
        }
    }
}

/// The speed test's figures (MB = 10⁶ bytes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeedSummary {
    pub qd1_mb_per_s: f64,
    pub qd16_mb_per_s: f64,
    pub qd1_experts_per_s: f64,
    pub qd16_experts_per_s: f64,
    pub direct: bool,
    /// The drive's best read pattern (request size × requests in flight), which the
    /// engine then reads with; absent in settings saved before it was measured.
    pub read_pattern: Option<PatternSummary>,
}

/// The best point of the speed test's pattern sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PatternSummary {
    pub request_bytes: u32,
    pub depth: u32,
    pub mb_per_s: f64,
}

impl SpeedSummary {
    /// The engine's read pattern: the measured best, else the engine's default.
    pub fn engine_pattern(&self) -> k3_io::ReadPattern {
        self.read_pattern.map_or(k3_io::ReadPattern::DEFAULT, |p| k3_io::ReadPattern {
            request_bytes: p.request_bytes as usize,
            depth: p.depth as usize,
        })
    }
}

impl SetupSettings {
    /// The saved settings, or the defaults when there are none (or they are unreadable:
    /// the file is then kept aside as `setup.json.unreadable`, never silently lost).
    pub fn load(settings: &Settings, repo_override: Option<&str>) -> SetupSettings {
        let mut s = SetupSettings::from(settings.get::<SetupRecord>());
        if let Some(repo) = repo_override {
            s.repo = repo.into();
        }
        s
    }

    pub fn save(&self, settings: &Settings) -> Result<(), AppError> {
        Ok(settings.set(SetupRecord::from(self))?)
    }

    /// The trunk folder the jobs use.
    pub fn trunk_path(&self) -> Option<PathBuf> {
        match (&self.trunk_dir, &self.store_dir) {
            (Some(t), _) => Some(PathBuf::from(t)),
            (None, Some(s)) => Some(k3_store::download::layout::StoreLayout::new(s).default_trunk()),
            (None, None) => None,
        }
    }

    /// Whether the app should open the wizard at start.
    pub fn wants_wizard(&self) -> bool {
        self.step != SetupStep::Ready && !self.dismissed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_survive_a_save_and_an_unreadable_file_is_kept_aside() {
        let dir = tempfile::tempdir().unwrap();
        let settings = || Settings::open(dir.path());
        let mut s = SetupSettings::load(&settings(), None);
        assert_eq!(s, SetupSettings::default());
        s.step = SetupStep::Download;
        s.store_dir = Some("/models/k3".into());
        s.speed = Some(SpeedSummary {
            qd1_mb_per_s: 1.0,
            qd16_mb_per_s: 2.0,
            qd1_experts_per_s: 3.0,
            qd16_experts_per_s: 4.0,
            direct: true,
            read_pattern: Some(PatternSummary { request_bytes: 1 << 20, depth: 8, mb_per_s: 2600.0 }),
        });
        s.save(&settings()).unwrap();
        assert_eq!(SetupSettings::load(&settings(), None), s);
        std::fs::write(dir.path().join(SETUP_FILE), b"{not json").unwrap();
        assert_eq!(SetupSettings::load(&settings(), None), SetupSettings::default());
        assert!(dir.path().join("setup.json.unreadable").exists());
        assert_eq!(SetupSettings::load(&settings(), Some("me/tiny")).repo, "me/tiny");
    }
}
