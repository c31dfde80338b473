//! A choice made on one of the wizard's screens: the folders, the preset, a warning
//! confirmed, or a step to go back to; applied to the saved settings at once.
//!
//! Must not: go forward: only an earlier screen that may be revisited can be returned to.

use super::flow::SetupStep;
use super::host::SetupHost;
use super::settings::SetupSettings;
use crate::error::AppError;

/// A choice made on a screen; absent fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SetupChoice {
    pub store_dir: Option<String>,
    pub trunk_dir: Option<String>,
    pub preset: Option<String>,
    /// A warning confirmed (`cpu`, `networkDrive`, `slowDrive`).
    pub confirm: Option<String>,
    /// Go back to an earlier screen.
    pub back_to: Option<SetupStep>,
}

impl SetupHost {
    /// Applies `choice` to the settings and saves them.
    pub fn choose(&self, choice: SetupChoice) -> Result<SetupSettings, AppError> {
        if let Some(step) = choice.back_to {
            let now = self.settings().step;
            if !step.can_revisit()
                || SetupStep::ALL.iter().position(|s| *s == step) > SetupStep::ALL.iter().position(|s| *s == now)
            {
                return Err(AppError::invalid(format!("cannot go back to {step:?} from {now:?}")));
            }
        }
        self.update(|s| {
            if let Some(d) = &choice.store_dir {
                s.store_dir = Some(d.clone()).filter(|d| !d.trim().is_empty());
                s.adopted = false;
            }
            if let Some(d) = &choice.trunk_dir {
                s.trunk_dir = Some(d.clone()).filter(|d| !d.trim().is_empty());
            }
            if let Some(p) = &choice.preset {
                s.preset = Some(p.clone());
            }
            if let Some(c) = &choice.confirm {
                if !s.overrides.contains(c) {
                    s.overrides.push(c.clone());
                }
            }
            if let Some(step) = choice.back_to {
                s.step = step;
            }
        })
    }
}
