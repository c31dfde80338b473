//! Support shared by the app core's integration tests.

pub mod history_model;
