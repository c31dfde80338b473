//! Files kept in git rather than LFS (config, tokenizer config, the index): fetched whole
//! into memory, checked against their git blob id, written atomically (PRODUCT.md §4.2).
//!
//! Owns: [`fetch_git_file`], [`git_blob_id`]. Must not: write a file whose blob id did not
//! match.

use sha1::{Digest, Sha1};

use super::context::Context;
use super::events::FileState;
use super::ranged::fetch_bytes;
use crate::durable::write_atomic;
use crate::error::{StoreError, StoreResult};
use crate::hub::RepoFile;

/// Largest file accepted outside LFS (the hub itself stores up to 10 MB in git).
pub const GIT_FILE_CAP: u64 = 64 << 20;

/// Git's id of a blob: SHA-1 of `blob <len>\0` and the bytes.
pub fn git_blob_id(bytes: &[u8]) -> String {
    let mut h = Sha1::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    hex::encode(h.finalize())
}

pub async fn fetch_git_file(ctx: &Context, file: &RepoFile, blob_id: &str) -> StoreResult<()> {
    if file.size > GIT_FILE_CAP {
        return Err(StoreError::BadAnswer {
            url: ctx.hub.file_url(&ctx.opts.repo, &ctx.commit, &file.path),
            what: "a git-stored file under 64 MiB",
            detail: format!("{} bytes", file.size),
        });
    }
    ctx.file_state(&file.path, FileState::Downloading, None);
    for attempt in 0..2 {
        let bytes = fetch_bytes(ctx, file, 0, file.size).await?;
        let got = git_blob_id(&bytes);
        if got == blob_id {
            let dest = ctx.layout.file(&file.path);
            ctx.blocking(move || write_atomic(&dest, &bytes)).await?;
            return ctx.record_verified(file, None).await;
        }
        if attempt == 1 {
            return Err(StoreError::HashMismatch { path: file.path.clone(), expected: blob_id.into(), got });
        }
        ctx.notice(
            &file.path,
            format!("failed its integrity check (git blob {got}, expected {blob_id}); fetching it again"),
        );
    }
    Err(StoreError::HashMismatch { path: file.path.clone(), expected: blob_id.into(), got: String::new() })
}

#[cfg(test)]
mod tests {
    #[test]
    fn blob_ids_match_git() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(super::git_blob_id(b"hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");
    }
}
