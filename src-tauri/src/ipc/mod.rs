//! The app's wire contract: DTOs, generation events, errors, and their TypeScript twins.

pub mod bindings;
pub mod dto;
pub mod error;
pub mod events;
pub mod queue;
pub mod tools;
