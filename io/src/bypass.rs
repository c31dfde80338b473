//! How an opened weight file's reads keep the page cache out of the way, as each system
//! does it. A leaf: `os` and its per-system files (`os_unix`, `os_windows`) both name it.
//!
//! Owns: [`CacheBypass`].

/// How reads of an opened weight file keep the page cache out of the way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheBypass {
    /// Linux `O_DIRECT`: reads go from the drive to the buffer.
    Direct,
    /// macOS `F_NOCACHE` with read-ahead off (`F_RDAHEAD` 0).
    NoCache,
    /// Windows `FILE_FLAG_NO_BUFFERING`.
    NoBuffering,
    /// The file system refused the system's way: reads are buffered (on Linux the pages
    /// are dropped after each read with `POSIX_FADV_DONTNEED`); `why` names the refusal.
    Buffered { why: &'static str },
}

impl CacheBypass {
    /// Whether reads must use aligned buffers, offsets and lengths (a short read can
    /// then only end at an aligned offset or at the end of the file).
    pub fn needs_alignment(self) -> bool {
        match self {
            CacheBypass::Direct | CacheBypass::NoBuffering => true,
            CacheBypass::NoCache | CacheBypass::Buffered { .. } => false,
        }
    }

    /// Whether the page cache is bypassed (false: the buffered fallback).
    pub fn bypasses_cache(self) -> bool {
        !matches!(self, CacheBypass::Buffered { .. })
    }

    /// A short name for reports: `O_DIRECT`, `F_NOCACHE`, `FILE_FLAG_NO_BUFFERING` or
    /// `buffered (…why…)`.
    pub fn describe(self) -> String {
        match self {
            CacheBypass::Direct => "O_DIRECT".into(),
            CacheBypass::NoCache => "F_NOCACHE".into(),
            CacheBypass::NoBuffering => "FILE_FLAG_NO_BUFFERING".into(),
            CacheBypass::Buffered { why } => format!("buffered ({why})"),
        }
    }
}
