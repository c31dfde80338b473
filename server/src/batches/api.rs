//! The Batch API's handle: its store and what runs now. A leaf the server's shared state
//! holds; what it does is `batches`'s.
//!
//! Owns: [`BatchApi`]'s fields.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use super::store::Store;

/// The Batch API of one server.
pub struct BatchApi {
    pub(super) store: Store,
    /// One lock for every change to a batch's object (the runner's counts, a cancel).
    pub(super) objects: Mutex<()>,
    /// The cancel flags of the batches running now.
    pub(super) running: Mutex<HashMap<String, Arc<AtomicBool>>>,
}
