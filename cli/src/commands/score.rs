//! `k3 score` (teacher forcing): one pass over the given ids, the arg-max at every position,
//! and every position's logits written to `--dump-logits` chunk by chunk.

use k3_engine::CancelToken;
use serde::Serialize;

use super::output_file::OutputFile;
use super::{input_error, load_engine, parse_ids, runtime_error, Failure};
use crate::args::ScoreArgs;
use crate::out::Json;

/// `k3 score --json`.
#[derive(Serialize)]
struct ScoreReport<'a> {
    ids: &'a [u32],
    argmax: &'a [u32],
    vocab_size: usize,
}

pub fn score(args: ScoreArgs) -> Result<(), Failure> {
    let ids = parse_ids("--ids", &args.ids)?;
    if ids.is_empty() {
        return Err(input_error("--ids: at least one token id is required".into()));
    }
    let engine = load_engine(&args.model)?;
    let vocab = engine.config().vocab_size;
    let mut argmax: Vec<u32> = Vec::with_capacity(ids.len());
    // Logits go to the dump chunk by chunk: a long context never holds them all.
    let mut dump = args.dump_logits.as_deref().map(OutputFile::create).transpose()?;
    let done = engine.score_chunked(&ids, &CancelToken::new(), &mut |_, logits| {
        argmax.extend(logits.chunks(vocab).map(k3_engine::sampling::argmax));
        if let Some(out) = dump.as_mut() {
            out.write_f32(logits).map_err(|e| k3_engine::Error::io(out.path(), e))?;
        }
        Ok(())
    })?;
    if !done {
        return Err(runtime_error("scoring was cancelled".into()));
    }
    if let Some(out) = dump {
        out.finish()?;
    }
    if args.json {
        outln!("{}", Json(&ScoreReport { ids: &ids, argmax: &argmax, vocab_size: vocab }));
    } else {
        outln!("{}", argmax.iter().map(u32::to_string).collect::<Vec<_>>().join(","));
    }
    Ok(())
}
