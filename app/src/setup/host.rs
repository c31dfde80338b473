//! The wizard's live state in the app: the saved settings behind a lock (every change
//! saved at once) and the stop token of the job that runs, if one does.
//!
//! Owns: [`SetupHost`]. Must not: run two jobs at once (a second `setup_run` is refused).

use std::sync::{Arc, Mutex, MutexGuard};

use crate::settings::Settings;

use tokio_util::sync::CancellationToken;

use super::forecast::PresetRow;
use super::settings::SetupSettings;
use crate::error::AppError;

pub struct SetupHost {
    /// Where `setup.json` is saved.
    store: Arc<Settings>,
    settings: Mutex<SetupSettings>,
    job: Mutex<Option<CancellationToken>>,
    forecast: Mutex<Vec<PresetRow>>,
    /// Seconds per queue depth of the speed test (`K3APP_SPEED_SECONDS`, default 20).
    pub speed_seconds: f64,
}

impl SetupHost {
    pub fn load(store: Arc<Settings>, repo_override: Option<&str>, speed_seconds: f64) -> SetupHost {
        SetupHost {
            settings: Mutex::new(SetupSettings::load(&store, repo_override)),
            store,
            job: Mutex::new(None),
            forecast: Mutex::new(Vec::new()),
            speed_seconds,
        }
    }

    pub fn settings(&self) -> SetupSettings {
        self.lock().clone()
    }

    /// Changes the settings and saves them before returning.
    pub fn update(&self, change: impl FnOnce(&mut SetupSettings)) -> Result<SetupSettings, AppError> {
        let mut s = self.lock();
        let mut next = s.clone();
        change(&mut next);
        next.save(&self.store)?;
        *s = next.clone();
        Ok(next)
    }

    /// Registers a job; refused while another runs.
    pub fn begin_job(&self) -> Result<CancellationToken, AppError> {
        let mut job = self.job.lock().map_err(|_| AppError::internal("setup job lock poisoned"))?;
        if job.is_some() {
            return Err(AppError::invalid("a setup job is already running"));
        }
        let token = CancellationToken::new();
        *job = Some(token.clone());
        Ok(token)
    }

    pub fn end_job(&self) {
        if let Ok(mut job) = self.job.lock() {
            *job = None;
        }
    }

    /// Stops the running job (durable work is kept); whether one was running.
    pub fn pause(&self) -> bool {
        match self.job.lock().ok().and_then(|j| j.clone()) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    pub fn is_running(&self) -> bool {
        self.job.lock().map(|j| j.is_some()).unwrap_or(false)
    }

    /// Keeps the last forecast, to judge the chosen preset's speed on `setup_next`.
    pub fn remember_forecast(&self, rows: Vec<PresetRow>) {
        if let Ok(mut f) = self.forecast.lock() {
            *f = rows;
        }
    }

    /// The expected seconds per token of the chosen preset, when forecast.
    pub fn chosen_forecast(&self) -> Option<f64> {
        let preset = self.settings().preset?;
        let rows = self.forecast.lock().ok()?;
        rows.iter().find(|r| r.name == preset).map(|r| r.seconds_expected)
    }

    fn lock(&self) -> MutexGuard<'_, SetupSettings> {
        self.settings.lock().unwrap_or_else(|p| p.into_inner())
    }
}
