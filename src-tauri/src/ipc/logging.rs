//! Settings › Diagnostics' log viewer: the end of the log as the window sees it (twins of
//! `k3_app::log_tail`'s).

use crate::ipc::twin::wire_struct;

wire_struct! {
    /// One entry of the log.
    pub struct LogLine from k3_app::log_tail::LogLine {
        /// `[date][time]` as written (UTC).
        time: String,
        /// ERROR, WARN, INFO, DEBUG or TRACE.
        level: String,
        /// The module that wrote it.
        source: String,
        message: String,
    }
}

wire_struct! {
    /// The end of the log, for the viewer.
    pub struct LogTail from k3_app::log_tail::LogTail {
        path: String,
        /// Oldest first; at most the lines asked for.
        lines: Vec<LogLine>,
        /// Older entries exist beyond these.
        truncated: bool,
    }
}
