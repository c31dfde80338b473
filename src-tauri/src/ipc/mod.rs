//! The app's wire contract: DTOs, generation events, errors, and their TypeScript twins.

pub mod backends;
pub mod bindings;
pub mod chat_defaults;
pub mod dashboard;
pub mod dto;
pub mod error;
pub mod events;
pub mod local_api;
pub mod logging;
pub mod memory;
pub mod model_folder;
pub mod performance;
pub mod queue;
pub mod saved_states;
pub mod setup;
pub mod tools;
pub mod twin;
