//! `k3 tokenize` and `k3 detokenize`: need only the two tokenizer files.

use serde_json::json;

use super::{load_tokenizer, parse_ids, read_text, Failure};
use crate::args::{DetokenizeArgs, TokenizeArgs};

pub fn tokenize(args: TokenizeArgs) -> Result<(), Failure> {
    let text = match (&args.text, &args.text_file) {
        (Some(t), _) => t.clone(),
        (None, Some(path)) => read_text("--text-file", path)?,
        (None, None) => return Err(super::input_error("one of --text or --text-file is required".into())),
    };
    let tokenizer = load_tokenizer(&args.model)?;
    let ids = tokenizer.encode(&text);
    if args.json {
        outln!("{}", json!({ "ids": ids }));
    } else {
        outln!("{}", ids.iter().map(u32::to_string).collect::<Vec<_>>().join(","));
    }
    Ok(())
}

pub fn detokenize(args: DetokenizeArgs) -> Result<(), Failure> {
    let ids = parse_ids("--ids", &args.ids)?;
    let tokenizer = load_tokenizer(&args.model)?;
    let bytes = tokenizer.decode_bytes(&ids)?;
    let text = String::from_utf8_lossy(&bytes);
    if args.json {
        outln!("{}", json!({ "text": text, "bytes": bytes, "valid_utf8": std::str::from_utf8(&bytes).is_ok() }));
    } else {
        outln!("{text}");
    }
    Ok(())
}
