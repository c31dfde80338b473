//! One function per subcommand: parse inputs, make one library call, print the result.
//! What several share: [`options`] (the model flags → engine options, engine, tokenizer),
//! [`input`] (what flags read from disk), [`output_file`] (files written whole or not at
//! all), [`stats`] (the benchmarks' mean and median); [`Failure`] and its exit status here.

mod bench;
mod bench_agent;
mod bench_batch;
mod bench_batch_threads;
mod bench_codec;
mod bench_constrain;
mod bench_context;
mod bench_speculate;
mod bench_stream;
mod chat;
mod cost_rates;
mod disk;
mod doctor;
mod download;
mod failure;
mod forecast;
mod forecast_disk;
mod forecast_inputs;
mod forecast_json;
mod forecast_json_parts;
mod forecast_notes;
mod forecast_out;
mod forecast_report;
mod input;
mod options;
mod output_file;
mod pack;
mod plan;
mod run;
mod score;
mod serve;
mod sim_cache;
mod synth;
mod text;
mod verify;

use crate::args::{Cli, Command};
pub use failure::{input_error, runtime_error, Failure};
use input::{parse_ids, read_regular, read_text, require_dir};
use options::{budget_choice, check_vocab, engine_options, load_engine, load_engine_with, load_tokenizer};
use options::{memory_options, sampling};

pub fn dispatch(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Score(args) => score::score(args),
        Command::Tokenize(args) => text::tokenize(args),
        Command::Detokenize(args) => text::detokenize(args),
        Command::Chat(args) => chat::chat(args),
        Command::Serve(args) => serve::serve(args),
        Command::Plan(args) => plan::plan(args),
        Command::Forecast(args) => forecast::forecast(args),
        Command::Pack(args) => pack::pack(args),
        Command::Bench(crate::args::BenchCommand::Kernels(args)) => bench::kernels(args),
        Command::Bench(crate::args::BenchCommand::Stream(args)) => bench_stream::stream(args),
        Command::Bench(crate::args::BenchCommand::Disk(args)) => disk::disk(args),
        Command::Bench(crate::args::BenchCommand::Speculate(args)) => bench_speculate::speculate(args),
        Command::Bench(crate::args::BenchCommand::Codec(args)) => bench_codec::codec(args),
        Command::Bench(crate::args::BenchCommand::Context(args)) => bench_context::context(args),
        Command::Bench(crate::args::BenchCommand::Constrain(args)) => bench_constrain::constrain(args),
        Command::Bench(crate::args::BenchCommand::Agent(args)) => bench_agent::agent(args),
        Command::Bench(crate::args::BenchCommand::Batch(args)) => bench_batch::batch(args),
        Command::SimCache(args) => sim_cache::sim_cache(args),
        Command::Synth(args) => synth::synth(args),
        Command::Download(args) => download::download(args),
        Command::Verify(args) => verify::verify(args),
        Command::Doctor(args) => doctor::doctor(args),
    }
}
