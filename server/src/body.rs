//! Reading a JSON request body within the size cap (AP-04, AP-10).
//!
//! Owns: refusing a non-JSON `Content-Type` (a CSRF form post is `text/plain`) and any
//! `Content-Encoding` (415), a declared length over the cap at once without reading it,
//! and a chunked body as soon as it passes the cap (413) — memory stays within the cap;
//! a body not whole within the body timeout (408).
//! Must not: buffer more than `limit` + one frame.

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap};
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::api_error::ApiError;
use crate::state::Limits;

fn unsupported(message: &str) -> ApiError {
    ApiError::UnsupportedMedia { message: message.into() }
}

/// Checks the headers of a JSON body.
fn check_headers(headers: &HeaderMap, limit: usize) -> Result<(), ApiError> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        return Err(unsupported("the body must be JSON (Content-Type: application/json)"));
    }
    if headers.get_all(header::CONTENT_ENCODING).iter().any(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity")) {
        return Err(unsupported("compressed request bodies are not accepted"));
    }
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).map(str::parse::<u64>);
    match declared {
        Some(Ok(n)) if n > limit as u64 => Err(ApiError::TooLarge { limit }),
        // An unparsable length never reaches here: hyper refuses it with 400.
        Some(_) | None => Ok(()),
    }
}

/// The body, at most `limits.max_body_bytes` bytes, whole within `limits.body_read_timeout`
/// of the head (probe finding: a client that sent the head and part of a body was never
/// timed out, and 64 of them filled the accept loop).
pub async fn read_json(headers: &HeaderMap, body: Body, limits: &Limits) -> Result<Bytes, ApiError> {
    let limit = limits.max_body_bytes;
    check_headers(headers, limit)?;
    let deadline = limits.body_read_timeout;
    match tokio::time::timeout(deadline, Limited::new(body, limit).collect()).await {
        Err(_) => Err(ApiError::BodyTimeout { seconds: deadline.as_secs().max(1) }),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => Err(ApiError::TooLarge { limit }),
        Ok(Err(e)) => Err(ApiError::BadJson { message: format!("reading the request body: {e}") }),
    }
}
