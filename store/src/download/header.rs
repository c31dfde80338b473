//! A shard's safetensors header, fetched by two range reads and checked with the
//! engine's own rules before the shard's body is fetched (PRODUCT.md §1.1 step 6); its
//! tensors' places are the segments whose CRC32Cs the download computes for the pack.
//!
//! Owns: [`check_remote_header`].

use std::sync::Arc;

use k3_io::format::remote::{header_len, PREFIX_BYTES};
use k3_io::segment_sums::SegmentPlan;

use super::context::Context;
use super::ranged::fetch_bytes;
use crate::error::{StoreError, StoreResult};
use crate::hub::RepoFile;

/// Checks the header of the shard `file` on the hub; returns its segment plan.
pub async fn check_remote_header(ctx: &Context, file: &RepoFile) -> StoreResult<Arc<SegmentPlan>> {
    let refuse = |fault| StoreError::BadShardHeader { path: file.path.clone(), fault };
    if file.size < PREFIX_BYTES {
        return Err(refuse(k3_io::format::CheckpointFault::TooSmall { file_len: file.size }));
    }
    let prefix = fetch_bytes(ctx, file, 0, PREFIX_BYTES).await?;
    let prefix: [u8; 8] = prefix
        .as_slice()
        .try_into()
        .map_err(|_| refuse(k3_io::format::CheckpointFault::TooSmall { file_len: file.size }))?;
    let len = header_len(prefix, file.size).map_err(refuse)?;
    let header = fetch_bytes(ctx, file, PREFIX_BYTES, len).await?;
    SegmentPlan::from_header(&header, file.size).map(Arc::new).map_err(refuse)
}
