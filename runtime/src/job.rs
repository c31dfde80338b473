//! The jobs the runtime's worker queues and the replies it runs together take: a leaf the
//! worker (`worker`) and the batch (`together`) both use, so neither imports the other
//! for them.
//!
//! Owns: `Job`, `ReplyJob`, `ReplyKind`, `Cancels`, [`ReplanRequest`],
//! [`ReplanProgress`].

use std::collections::HashMap;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use k3_engine::{BudgetChoice, CancelToken, ResidencyRule};

use crate::error::RuntimeError;
use crate::handler::{JobId, ReplyHandler};
use crate::model::{ModelRequest, ModelSummary};

/// Reports trunk layers pinned by a replan: `(done, total)`.
pub type ReplanProgress = Box<dyn FnMut(usize, usize) + Send>;

/// A replan: the budget, and what else changes with it (`None` keeps what is in force).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplanRequest {
    /// `None` keeps every weight resident.
    pub choice: Option<BudgetChoice>,
    /// Positions each conversation's KV cache is reserved for from now on (the cached chat
    /// session is then dropped, so the next turn replays its history into one of that size).
    pub context_length: Option<usize>,
    /// How the trunk's layers are placed from now on.
    pub residency: Option<ResidencyRule>,
}

pub(crate) enum Job {
    Open { request: ModelRequest, reply: Sender<Result<ModelSummary, Arc<RuntimeError>>> },
    Reply(ReplyJob),
    Replan { request: ReplanRequest, progress: ReplanProgress, reply: Sender<Result<ModelSummary, RuntimeError>> },
}

pub(crate) type Cancels = Arc<Mutex<HashMap<JobId, CancelToken>>>;

/// Which of the handler's `begin` methods a reply job asks.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ReplyKind {
    Chat,
    Completion,
}

/// One queued reply.
pub(crate) struct ReplyJob {
    pub id: JobId,
    pub kind: ReplyKind,
    pub cancel: CancelToken,
    pub handler: Box<dyn ReplyHandler>,
}
