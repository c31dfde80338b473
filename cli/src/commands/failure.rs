//! How a command fails: a message and the exit status (2 for input the user must change,
//! 1 otherwise), converted from each library's error. A leaf every command uses.
//!
//! Owns: [`Failure`], [`input_error`], [`runtime_error`].

use k3_runtime::RuntimeError;

/// A failure with its exit status.
pub struct Failure {
    pub exit_code: u8,
    pub message: String,
}

impl From<k3_engine::Error> for Failure {
    fn from(e: k3_engine::Error) -> Self {
        Failure { exit_code: if e.is_input_error() { 2 } else { 1 }, message: e.to_string() }
    }
}

impl From<RuntimeError> for Failure {
    fn from(e: RuntimeError) -> Self {
        Failure { exit_code: if e.is_input_error() { 2 } else { 1 }, message: e.to_string() }
    }
}

impl From<k3_io::Error> for Failure {
    fn from(e: k3_io::Error) -> Self {
        Failure::from(k3_engine::Error::from(e))
    }
}

impl From<k3_store::DiskBenchError> for Failure {
    fn from(e: k3_store::DiskBenchError) -> Self {
        Failure { exit_code: if e.is_input_error() { 2 } else { 1 }, message: format!("bench disk: {e}") }
    }
}

pub fn input_error(message: String) -> Failure {
    Failure { exit_code: 2, message }
}

pub fn runtime_error(message: String) -> Failure {
    Failure { exit_code: 1, message }
}
