//! The request log Settings › Local API shows: the last [`LOG_LINES`] answered requests,
//! written from the server's threads through its request-log callback.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use super::status::ApiLogLine;

/// Requests kept (older ones are dropped).
pub const LOG_LINES: usize = 200;

/// A bounded, shared request log.
#[derive(Default)]
pub struct RequestBook {
    lines: Mutex<VecDeque<ApiLogLine>>,
}

impl RequestBook {
    /// The callback the server calls once per answered request.
    pub fn callback(self: &Arc<Self>) -> k3_server::RequestLogFn {
        let book = self.clone();
        Arc::new(move |r: &k3_server::RequestLog| book.push(line_of(r)))
    }

    pub fn push(&self, line: ApiLogLine) {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if lines.len() == LOG_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    pub fn lines(&self) -> Vec<ApiLogLine> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect()
    }
}

fn line_of(r: &k3_server::RequestLog) -> ApiLogLine {
    let at_ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    ApiLogLine {
        at_ms,
        method: r.method.clone(),
        path: r.path.clone(),
        status: r.status,
        seconds: r.duration.as_secs_f64(),
        peer: r.peer.map(|p| p.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_keeps_the_newest_lines_only() {
        let book = Arc::new(RequestBook::default());
        let log = book.callback();
        for i in 0..(LOG_LINES + 5) {
            log(&k3_server::RequestLog {
                method: "GET".into(),
                path: format!("/v1/models/{i}"),
                status: 200,
                duration: std::time::Duration::from_millis(3),
                peer: None,
            });
        }
        let lines = book.lines();
        assert_eq!(lines.len(), LOG_LINES);
        assert_eq!(lines[0].path, "/v1/models/5");
        assert_eq!(lines[LOG_LINES - 1].path, format!("/v1/models/{}", LOG_LINES + 4));
    }
}
