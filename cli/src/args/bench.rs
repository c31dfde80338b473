//! `k3 bench …`: the benchmarks' command-line grammar (clap derive), one file per family of
//! benchmarks. No behaviour lives here.

use clap::Subcommand;

mod chat;
mod decode;
mod machine;

pub use chat::*;
pub use decode::*;
pub use machine::*;

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Kernels at the real K3 dimensions vs the memory read bandwidth.
    Kernels(BenchKernelsArgs),
    /// Streamed decode vs the honest I/O floor (bytes per token ÷ this drive's best measured
    /// O_DIRECT bandwidth) and the compute time.
    Stream(BenchStreamArgs),
    /// This drive read as the engine reads experts: O_DIRECT, one expert per read, at queue
    /// depth 1 and 16 (`--sweep`: request size × requests in flight).
    Disk(BenchDiskArgs),
    /// Exact speculative decoding vs serial decoding on a repetitive and a non-repetitive
    /// prompt, drafting by prompt lookup and by replaying serial decoding's reply (every
    /// draft right, or every draft wrong): tokens per second, acceptance, and the tokens
    /// checked equal.
    Speculate(BenchSpeculateArgs),
    /// The trunk codec on one packed layer: size ratio, decode GB/s per core, and the layer
    /// streamed coded vs a raw O_DIRECT read of the same layer.
    Codec(BenchCodecArgs),
    /// Decode seconds per token at several context lengths (a real 16-token prefill whose
    /// positions are repeated up to each context), the median of the rounds and each
    /// context's ratio to the first.
    Context(BenchContextArgs),
    /// Constrained decoding's cost: a mask per token at the model's vocabulary and at K3's
    /// (the released Kimi ranks), against a decode step of the model, in one run.
    Constrain(BenchConstrainArgs),
    /// An agent loop's time to first token per turn with the conversation's kept engine
    /// state against the whole history prefilled again, in one run.
    Agent(BenchAgentArgs),
    /// Several conversations decoded in one pass: aggregate tokens per second at each
    /// batch size, each conversation's seconds per token and the bytes read per token, the
    /// ratio to one conversation, and every conversation's tokens checked equal across sizes.
    Batch(BenchBatchArgs),
}
