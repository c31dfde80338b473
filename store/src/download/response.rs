//! What an answer to a (range) GET of a file means for the download, decided from its
//! status and headers alone (RELIABILITY DL-04, 05, 08, 09, 10, 11, 14).
//!
//! Owns: [`classify`] and [`Verdict`]. Pure: unit-tested without a network.
//! Must not: let a 200 to a Range request be appended to a partial (it is a restart), or
//! accept a 206 whose `Content-Range` is not exactly the range asked for.

use std::time::Duration;

/// What the caller does with a response.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Read the body; its first byte is the file's byte `start` (0 for a 200).
    Body { start: u64 },
    /// The file is already whole (416 to a request from its end).
    AlreadyComplete,
    /// Throw the partial away and start at 0 (416 although the partial is short).
    Restart { reason: String },
    /// Wait (honouring `retry_after`) and ask again.
    Retry { reason: String, retry_after: Option<Duration> },
    /// The CDN refused a signed URL: ask the hub for a fresh one at the same offset.
    ReResolve { reason: String },
    /// No retry will help: 401/403 from the hub, 404, other 4xx.
    Fatal { status: u16, reason: String },
}

/// The parts of a response [`classify`] needs.
pub struct Answer<'a> {
    pub status: u16,
    pub content_range: Option<&'a str>,
    pub content_type: Option<&'a str>,
    pub retry_after: Option<Duration>,
    /// The final URL is on the hub's host (not the CDN's).
    pub from_hub: bool,
}

/// `offset`: the first byte asked for; `size`: the file's size from the tree.
pub fn classify(a: &Answer<'_>, offset: u64, size: u64) -> Verdict {
    if matches!(a.status, 200 | 206) && a.content_type.is_some_and(is_web_page) {
        return Verdict::Retry {
            reason: "the network answered with a web page, not the file (a captive portal or proxy login?)".into(),
            retry_after: None,
        };
    }
    match a.status {
        206 => match a.content_range.and_then(parse_content_range) {
            Some((first, last, total))
                if first == offset && total == Some(size) && last.checked_add(1) == Some(size) =>
            {
                Verdict::Body { start: offset }
            }
            Some(_) | None => Verdict::Retry {
                reason: format!(
                    "206 with Content-Range {:?}, expected bytes {offset}-{}/{size}",
                    a.content_range.unwrap_or("(missing)"),
                    size.saturating_sub(1)
                ),
                retry_after: None,
            },
        },
        200 => Verdict::Body { start: 0 },
        416 if offset >= size => Verdict::AlreadyComplete,
        416 => Verdict::Restart {
            reason: format!("416 at byte {offset} of {size}: the partial does not fit the remote file"),
        },
        401 => Verdict::Fatal { status: 401, reason: "authentication required".into() },
        403 | 404 if !a.from_hub => {
            Verdict::ReResolve { reason: format!("the download URL answered {} (expired?)", a.status) }
        }
        403 => Verdict::Fatal { status: 403, reason: "access denied".into() },
        404 => Verdict::Fatal { status: 404, reason: "not found".into() },
        408 | 429 | 500..=599 => Verdict::Retry { reason: format!("HTTP {}", a.status), retry_after: a.retry_after },
        s => Verdict::Fatal { status: s, reason: format!("unexpected HTTP {s}") },
    }
}

fn is_web_page(content_type: &str) -> bool {
    let t = content_type.trim().to_ascii_lowercase();
    t.starts_with("text/html") || t.starts_with("application/xhtml")
}

/// `bytes first-last/total` (total `*` → `None`).
fn parse_content_range(v: &str) -> Option<(u64, u64, Option<u64>)> {
    let rest = v.trim().strip_prefix("bytes ")?;
    let (range, total) = rest.split_once('/')?;
    let (first, last) = range.split_once('-')?;
    let (first, last) = (first.trim().parse().ok()?, last.trim().parse().ok()?);
    if last < first {
        return None;
    }
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse().ok()?),
    };
    Some((first, last, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, content_range: Option<&str>) -> Answer<'_> {
        Answer {
            status,
            content_range,
            content_type: Some("application/octet-stream"),
            retry_after: None,
            from_hub: false,
        }
    }

    #[test]
    fn dl_04_a_200_to_a_range_request_restarts_from_zero() {
        assert_eq!(classify(&answer(200, None), 4096, 10_000), Verdict::Body { start: 0 });
    }

    #[test]
    fn dl_05_a_206_must_name_exactly_the_range_asked_for() {
        assert_eq!(classify(&answer(206, Some("bytes 4096-9999/10000")), 4096, 10_000), Verdict::Body { start: 4096 });
        for bad in [
            None,
            Some("bytes 0-9999/10000"),
            Some("bytes 4096-9998/10000"),
            Some("bytes 4096-9999/*"),
            Some("bytes 4096-9999/20000"),
            Some("items 4096-9999/10000"),
            Some("bytes x-y/z"),
        ] {
            assert!(matches!(classify(&answer(206, bad), 4096, 10_000), Verdict::Retry { .. }), "{bad:?}");
        }
    }

    #[test]
    fn dl_08_416_completes_a_full_partial_and_restarts_a_short_one() {
        assert_eq!(classify(&answer(416, None), 10_000, 10_000), Verdict::AlreadyComplete);
        assert!(matches!(classify(&answer(416, None), 4096, 10_000), Verdict::Restart { .. }));
    }

    #[test]
    fn dl_09_to_11_status_codes() {
        let mut a = answer(503, None);
        a.retry_after = Some(Duration::from_secs(9));
        assert_eq!(
            classify(&a, 0, 10),
            Verdict::Retry { reason: "HTTP 503".into(), retry_after: Some(Duration::from_secs(9)) }
        );
        assert!(matches!(classify(&answer(429, None), 0, 10), Verdict::Retry { .. }));
        assert!(matches!(classify(&answer(408, None), 0, 10), Verdict::Retry { .. }));
        assert!(
            matches!(classify(&answer(403, None), 0, 10), Verdict::ReResolve { .. }),
            "a CDN 403 is an expired URL"
        );
        let mut hub = answer(403, None);
        hub.from_hub = true;
        assert!(matches!(classify(&hub, 0, 10), Verdict::Fatal { status: 403, .. }));
        hub.status = 401;
        assert!(matches!(classify(&hub, 0, 10), Verdict::Fatal { status: 401, .. }));
        assert!(matches!(classify(&answer(400, None), 0, 10), Verdict::Fatal { status: 400, .. }));
    }

    #[test]
    fn dl_14_a_captive_portal_page_is_refused() {
        let mut a = answer(200, None);
        a.content_type = Some("text/html; charset=utf-8");
        assert!(matches!(classify(&a, 0, 10), Verdict::Retry { .. }));
    }
}
