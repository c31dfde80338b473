//! The guided first-time setup (PRODUCT.md §1.1): from a fresh install to a loaded Kimi K3,
//! as screens over k3-store (doctor, speed test, download, verify), the engine's trunk pack
//! and the app's one runtime.
//!
//! Layout: `flow` (the steps and what blocks each: pure) · `settings` (saved to
//! `setup.json`) · `host` (the live state in `AppState`) · `events` (what the window hears,
//! batched ≤ 10/s) · `jobs` (download → pack → first load) · `facts` (the doctor's findings
//! as the flow needs them) · `problem` (the failures with a screen of their own: access
//! denied with a token field, files that failed their hash). Keeping the machine awake
//! while a job runs, and the notification at its end, are the window's (`src-tauri`'s `awake`).

pub mod choice;
pub mod events;
pub mod facts;
pub mod flow;
pub mod forecast;
pub mod host;
pub mod jobs;
pub mod problem;
mod record;
pub mod settings;
pub mod speed;
pub mod step;

pub use flow::Blocker;
pub use host::SetupHost;
pub use settings::{PatternSummary, SetupSettings, SpeedSummary};
pub use step::SetupStep;
