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
