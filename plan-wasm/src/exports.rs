//! The wasm module's exports: JSON in through an input buffer, JSON out through an output
//! buffer, both in `exports.memory`.
//!
//! The page's protocol, one call at a time (wasm32-unknown-unknown runs one thread):
//! 1. `ptr = k3_input(len)`: the module sizes its input buffer to `len` bytes and returns
//!    where it starts; the page writes the UTF-8 request there (through a fresh view of
//!    `memory.buffer`: sizing may grow the memory and detach older views).
//! 2. `n = k3_plan()` / `k3_presets()` / `k3_released_footprint()`: the module reads
//!    (and empties) the input buffer, computes, and keeps the UTF-8 answer; `n` is its length.
//! 3. `k3_output()`: where the answer starts; valid until the next call.
//!
//! Owns: the two buffers and the symbols. Must not: hold a borrow of a buffer across a
//! return to the page. There is no `unsafe` block: the page writes through a pointer this
//! module handed out to a live `Vec`, which Rust then reads as an ordinary slice.
//! `#[no_mangle]` is what `deny(unsafe_code)` is lifted for here.
#![allow(unsafe_code)]

use std::cell::RefCell;

use crate::api;

thread_local! {
    static INPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static OUTPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Sizes the input buffer to `len` zero bytes and returns its start.
#[no_mangle]
pub extern "C" fn k3_input(len: usize) -> *mut u8 {
    INPUT.with_borrow_mut(|buf| {
        buf.clear();
        buf.resize(len, 0);
        buf.as_mut_ptr()
    })
}

/// Start of the last call's answer.
#[no_mangle]
pub extern "C" fn k3_output() -> *const u8 {
    OUTPUT.with_borrow(|buf| buf.as_ptr())
}

/// [`api::plan_call`] on the input; returns the answer's length.
#[no_mangle]
pub extern "C" fn k3_plan() -> usize {
    answer(api::plan_call(&INPUT.take()))
}

/// [`api::presets_call`] on the input; returns the answer's length.
#[no_mangle]
pub extern "C" fn k3_presets() -> usize {
    answer(api::presets_call(&INPUT.take()))
}

/// [`api::released_footprint_call`] (no input); returns the answer's length.
#[no_mangle]
pub extern "C" fn k3_released_footprint() -> usize {
    answer(api::released_footprint_call())
}

fn answer(text: String) -> usize {
    let bytes = text.into_bytes();
    let len = bytes.len();
    OUTPUT.set(bytes);
    len
}
