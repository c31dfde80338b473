//! The Files and Batch API routes: `POST/GET /v1/files`, `GET/DELETE /v1/files/{id}`,
//! `GET /v1/files/{id}/content`, `POST/GET /v1/batches`, `GET /v1/batches/{id}`,
//! `POST /v1/batches/{id}/cancel` — adapters over [`crate::batches::BatchApi`].
//!
//! Owns: the multipart upload (fields `file` and `purpose`), the list shapes, and answering
//! 404 where the server keeps no batch folder.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Multipart, Path, Query, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::api_error::ApiError;
use crate::batches::BatchApi;
use crate::body::read_json;
use crate::state::AppState;

fn api(state: &AppState) -> Result<&Arc<BatchApi>, ApiError> {
    state.batches.as_ref().ok_or(ApiError::NotFound)
}

fn answer(result: Result<Value, ApiError>) -> Response {
    match result {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// `POST /v1/files` (multipart: `file`, `purpose`).
pub async fn upload(State(state): State<AppState>, mut form: Multipart) -> Response {
    let bad = |message: String| ApiError::Invalid { param: "file", message };
    let result = async {
        let api = api(&state)?;
        let (mut file, mut purpose) = (None, None);
        while let Some(field) = form.next_field().await.map_err(|e| bad(format!("not a multipart form: {e}")))? {
            match field.name() {
                Some("file") => {
                    let name = field.file_name().unwrap_or("input.jsonl").to_string();
                    let bytes = field.bytes().await.map_err(|e| bad(format!("the file could not be read: {e}")))?;
                    file = Some((name, bytes));
                }
                Some("purpose") => purpose = Some(field.text().await.map_err(|e| bad(e.to_string()))?),
                _ => {}
            }
        }
        let (name, bytes) = file.ok_or_else(|| bad("no `file` field".into()))?;
        let purpose = purpose.ok_or_else(|| ApiError::Invalid { param: "purpose", message: "no `purpose`".into() })?;
        Ok(to_json(&api.upload(&name, &purpose, &bytes)?))
    }
    .await;
    answer(result)
}

/// `GET /v1/files`.
pub async fn list_files(State(state): State<AppState>) -> Response {
    answer(api(&state).map(|api| json!({ "object": "list", "data": to_json(&api.store().files()), "has_more": false })))
}

/// `GET /v1/files/{id}`.
pub async fn file(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    answer(api(&state).and_then(|api| api.store().file(&id).map(|f| to_json(&f)).ok_or(ApiError::NotFound)))
}

/// `DELETE /v1/files/{id}`.
pub async fn delete_file(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    let result = api(&state).and_then(|api| {
        let deleted = api.store().delete_file(&id).map_err(|e| ApiError::Engine { message: e.to_string() })?;
        if deleted {
            Ok(json!({ "id": id, "object": "file", "deleted": true }))
        } else {
            Err(ApiError::NotFound)
        }
    });
    answer(result)
}

/// `GET /v1/files/{id}/content`.
pub async fn file_content(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    let bytes = api(&state).and_then(|api| {
        api.store().file(&id).ok_or(ApiError::NotFound)?;
        let path = api.store().file_path(&id).ok_or(ApiError::NotFound)?;
        std::fs::read(path).map_err(|_| ApiError::NotFound)
    });
    match bytes {
        Ok(bytes) => ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `POST /v1/batches`.
pub async fn create(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let result = async {
        let api = api(&state)?.clone();
        let bytes = read_json(&headers, body, &state.limits).await?;
        let request: Value = crate::request::parse(&bytes)?;
        Ok(to_json(&api.create(&state, &request)?))
    }
    .await;
    answer(result)
}

#[derive(Deserialize)]
pub struct Page {
    limit: Option<usize>,
    after: Option<String>,
}

/// `GET /v1/batches?limit&after`, newest first.
pub async fn list(State(state): State<AppState>, Query(page): Query<Page>) -> Response {
    let result = api(&state).map(|api| {
        let all = api.store().batches();
        let start = page.after.and_then(|a| all.iter().position(|b| b.id == a).map(|i| i + 1)).unwrap_or(0);
        let limit = page.limit.unwrap_or(20).clamp(1, 100);
        let data: Vec<Value> = all.iter().skip(start).take(limit).map(to_json).collect();
        let has_more = start + data.len() < all.len();
        json!({
            "object": "list",
            "first_id": data.first().map(|b| b["id"].clone()),
            "last_id": data.last().map(|b| b["id"].clone()),
            "has_more": has_more,
            "data": data,
        })
    });
    answer(result)
}

/// `GET /v1/batches/{id}`.
pub async fn retrieve(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    answer(api(&state).and_then(|api| api.store().batch(&id).map(|b| to_json(&b)).ok_or(ApiError::NotFound)))
}

/// `POST /v1/batches/{id}/cancel`.
pub async fn cancel(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    answer(api(&state).and_then(|api| api.cancel(&id).map(|b| to_json(&b))))
}
