//! `Blob`: a 4096-aligned byte buffer, and `ByteView`: a shared window into one.
//!
//! Owns: memory that O_DIRECT reads can land in (address, and so offsets within, aligned to
//! 4096) and that weights are then computed from in place.
//! Must not: use `unsafe`: alignment comes from a `#[repr(align(4096))]` page type and
//! `bytemuck` casts, which check alignment.
//! Easy to break: a typed view (`&[u16]`, `&[f32]`) of a window needs the window's start
//! aligned to the element; `ByteView::typed` checks it, and the binder copies a tensor
//! into its own blob when the checkpoint placed it at an odd offset.

use std::sync::Arc;

/// One 4096-byte page, aligned to 4096.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(4096))]
struct Page([u8; 4096]);

/// A zero-initialised, 4096-aligned buffer of `len` bytes.
pub struct Blob {
    pages: Vec<Page>,
    len: usize,
}

impl Blob {
    pub fn zeroed(len: usize) -> Blob {
        Blob { pages: vec![Page([0; 4096]); len.div_ceil(4096)], len }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes allocated (a whole number of pages).
    pub fn capacity(&self) -> usize {
        self.pages.len() * 4096
    }

    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.pages)[..self.len]
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        &mut bytemuck::cast_slice_mut(&mut self.pages)[..len]
    }

    /// The whole page-rounded buffer, for O_DIRECT reads whose length must be aligned.
    pub fn pages_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.pages)
    }

    /// A blob holding a copy of `bytes`.
    pub fn copy_of(bytes: &[u8]) -> Blob {
        let mut b = Blob::zeroed(bytes.len());
        b.bytes_mut().copy_from_slice(bytes);
        b
    }
}

/// A shared, read-only window `[start, start + len)` of a blob.
#[derive(Clone)]
pub struct ByteView {
    blob: Arc<Blob>,
    start: usize,
    len: usize,
}

impl std::fmt::Debug for ByteView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ByteView[{}..{}]", self.start, self.start + self.len)
    }
}

impl ByteView {
    /// A window of `blob`; `None` if it does not fit.
    pub fn new(blob: Arc<Blob>, start: usize, len: usize) -> Option<ByteView> {
        (start.checked_add(len)? <= blob.len()).then_some(ByteView { blob, start, len })
    }

    /// The whole blob.
    pub fn whole(blob: Arc<Blob>) -> ByteView {
        let len = blob.len();
        ByteView { blob, start: 0, len }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.blob.bytes()[self.start..self.start + self.len]
    }

    /// The blob this window belongs to.
    pub fn blob(&self) -> Arc<Blob> {
        self.blob.clone()
    }

    /// Where the window starts in its blob.
    pub fn start(&self) -> usize {
        self.start
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The window as `&[T]`; `None` if the start is not aligned for `T` or the length is
    /// not a whole number of elements.
    pub fn typed<T: bytemuck::Pod>(&self) -> Option<&[T]> {
        bytemuck::try_cast_slice(self.bytes()).ok()
    }

    /// This window if `T`-aligned, else a copy in a fresh (aligned) blob.
    pub fn aligned_for<T: bytemuck::Pod>(self) -> ByteView {
        if self.typed::<T>().is_some() {
            self
        } else {
            ByteView::whole(Arc::new(Blob::copy_of(self.bytes())))
        }
    }
}

#[cfg(target_endian = "big")]
compile_error!("k3-engine reads little-endian checkpoint bytes in place; big-endian targets are not supported");

/// Aligned buffers of one size, reused so the hot path never allocates or zeroes: a
/// buffer comes back when its last view is gone ([`BlobPool::give`]).
pub struct BlobPool {
    size: usize,
    max_free: std::sync::atomic::AtomicUsize,
    free: std::sync::Mutex<Vec<Blob>>,
}

impl BlobPool {
    /// A pool of `size`-byte buffers keeping at most `max_free` idle ones.
    pub fn new(size: usize, max_free: usize) -> BlobPool {
        BlobPool { size, max_free: max_free.into(), free: std::sync::Mutex::new(Vec::new()) }
    }

    /// Bytes of each buffer.
    pub fn size(&self) -> usize {
        self.size
    }

    /// An idle buffer, or a new one (its old contents are not cleared: every reader
    /// overwrites what it later reads).
    pub fn take(&self) -> Blob {
        self.lock().pop().unwrap_or_else(|| Blob::zeroed(self.size))
    }

    /// Returns `blob` to the pool when nothing else holds it; false when it is still
    /// shared (it is then freed by its last holder).
    pub fn give(&self, blob: Arc<Blob>) -> bool {
        let Ok(blob) = Arc::try_unwrap(blob) else { return false };
        let mut free = self.lock();
        if blob.capacity() >= self.size && free.len() < self.max_free.load(std::sync::atomic::Ordering::Relaxed) {
            free.push(blob);
        }
        true
    }

    /// Keeps at most `max_free` idle buffers from now on, freeing the rest at once.
    pub fn set_max_free(&self, max_free: usize) {
        self.max_free.store(max_free, std::sync::atomic::Ordering::Relaxed);
        self.lock().truncate(max_free);
    }

    /// Idle buffers held now.
    pub fn idle(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Blob>> {
        self.free.lock().unwrap_or_else(|p| p.into_inner())
    }
}
