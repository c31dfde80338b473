//! What the hub may name: repository ids, commits, object ids and file paths, checked
//! before any of them reaches a URL or a path on disk (RELIABILITY DL-22).
//!
//! Owns: the rules; every check returns the reason a name was refused.
//! Must not: normalise a bad name into a good one (a refused name is an error, never a
//! silently different file).

/// A 40-hex git commit, as the revision endpoint must answer.
pub fn is_commit(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A 64-hex SHA-256, as an LFS object id must be.
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A 40-hex git blob id (SHA-1), as a small file's `oid` is.
pub fn is_git_oid(s: &str) -> bool {
    is_commit(s)
}

/// Why `repo` is not `owner/name` with the hub's characters, or `None` when it is.
pub fn repo_problem(repo: &str) -> Option<&'static str> {
    let mut parts = repo.split('/');
    let (Some(owner), Some(name), None) = (parts.next(), parts.next(), parts.next()) else {
        return Some("a repository id is `owner/name`");
    };
    for part in [owner, name] {
        if part.is_empty() || part.len() > 96 {
            return Some("each half of `owner/name` has 1 to 96 characters");
        }
        if part == "." || part == ".." || part.starts_with('-') || part.starts_with('.') {
            return Some("a half of `owner/name` may not start with `.` or `-`");
        }
        if !part.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) {
            return Some("only letters, digits, `-`, `_` and `.` are allowed");
        }
    }
    None
}

/// Why `path` (a file path inside a repository, `/`-separated) cannot be written under
/// a store folder, or `None` when it can.
pub fn path_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() || path.len() > 1024 {
        return Some("a file path has 1 to 1024 bytes");
    }
    if path.starts_with('/') {
        return Some("an absolute path");
    }
    if path.bytes().any(|b| b < 0x20 || b == 0x7f || b == b'\\' || b == b':') {
        return Some("control characters, `\\` and `:` are not allowed");
    }
    for part in path.split('/') {
        match part {
            "" => return Some("an empty path component"),
            "." | ".." => return Some("`.` and `..` components would leave the store folder"),
            ".k3-desktop" | ".cache" => return Some("names the store's own bookkeeping folder"),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dl_22_traversal_and_bad_ids_are_refused() {
        for bad in ["../etc/passwd", "a/../../b", "/abs", "a//b", "a\\b", "c:x", "./a", ".k3-desktop/manifest.json", ""]
        {
            assert!(path_problem(bad).is_some(), "{bad:?} accepted");
        }
        for good in ["config.json", "model-00001-of-000096.safetensors", "docs/figure.png", ".gitattributes"] {
            assert_eq!(path_problem(good), None, "{good:?} refused");
        }
        assert!(is_commit(&"a".repeat(40)));
        assert!(!is_commit(&"A".repeat(40)));
        assert!(!is_commit(&"a".repeat(39)));
        assert!(is_sha256(&"0f".repeat(32)));
        assert!(!is_sha256(&format!("sha256:{}", "0".repeat(57))));
        assert_eq!(repo_problem("moonshotai/Kimi-K3"), None);
        for bad in ["moonshotai", "a/b/c", "../x", "a/..", "a b/c", "-a/b"] {
            assert!(repo_problem(bad).is_some(), "{bad:?} accepted");
        }
    }
}
