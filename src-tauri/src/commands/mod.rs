//! Tauri commands: thin adapters that unpack arguments, make one call and map errors.

pub mod backends;
pub mod conversations;
pub mod dashboard;
pub mod generate;
pub mod links;
pub mod local_api;
pub mod memory;
pub mod model;
pub mod queue;
pub mod settings;
pub mod setup;
pub mod tools;
