//! The wizard's steps, in order, and which the user may go back to. A leaf: the flow's
//! rules and the saved settings both name them.
//!
//! Owns: [`SetupStep`].

/// The wizard's steps, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupStep {
    Welcome,
    Hardware,
    Drives,
    SpeedTest,
    Preset,
    /// Download and verification (hashed while each file streams in).
    Download,
    Pack,
    FirstLoad,
    Ready,
}

impl SetupStep {
    pub const ALL: [SetupStep; 9] = [
        SetupStep::Welcome,
        SetupStep::Hardware,
        SetupStep::Drives,
        SetupStep::SpeedTest,
        SetupStep::Preset,
        SetupStep::Download,
        SetupStep::Pack,
        SetupStep::FirstLoad,
        SetupStep::Ready,
    ];

    pub fn next(self) -> SetupStep {
        let i = SetupStep::ALL.iter().position(|s| *s == self).unwrap_or(0);
        SetupStep::ALL.get(i + 1).copied().unwrap_or(SetupStep::Ready)
    }

    /// Steps the user may go back to (not the jobs, which move on by themselves).
    pub fn can_revisit(self) -> bool {
        matches!(
            self,
            SetupStep::Welcome | SetupStep::Hardware | SetupStep::Drives | SetupStep::SpeedTest | SetupStep::Preset
        )
    }
}
