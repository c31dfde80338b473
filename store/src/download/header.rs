//! A shard's safetensors header, fetched by two range reads and checked with the
//! engine's own rules before the shard's body is fetched (PRODUCT.md §1.1 step 6).
//!
//! Owns: [`check_remote_header`].

use k3_io::format::remote::{check_header, header_len, PREFIX_BYTES};

use super::context::Context;
use super::ranged::fetch_bytes;
use crate::error::{StoreError, StoreResult};
use crate::hub::RepoFile;

pub async fn check_remote_header(ctx: &Context, file: &RepoFile) -> StoreResult<usize> {
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
    check_header(&header, file.size).map_err(refuse)
}
