//! [`Constrainer`]: the parser factory of one model's vocabulary; [`ReplyConstraint`]:
//! one reply's llguidance matcher behind the engine's `TokenConstraint`.
//!
//! Owns: compiling a reply's grammar (a schema llguidance cannot compile is a
//! [`ConstrainError`] naming why, before any token is generated), the mask per step and
//! the commit of each chosen token, and the time spent on masks.
//! Must not: guess past an error: a matcher in error stops the generation with the
//! reason.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use k3_engine::constraint::{TokenConstraint, TokenMask};
use k3_engine::tokenizer::Tokenizer;
use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::TokEnv;
use llguidance::{Matcher, ParserFactory};

use crate::grammar::{reply_grammar, ReplyShape};
use crate::vocab::{probe_env, token_env};

/// A reply's constraint cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConstrainError {
    #[error("the tokenizer's vocabulary cannot be read for constrained decoding: {0}")]
    Vocabulary(String),
    #[error("the tools' or the response format's schema cannot be compiled: {0}")]
    Schema(String),
}

/// Builds constraints for one model's vocabulary (built once; building costs a pass over
/// the vocabulary).
pub struct Constrainer {
    factory: Arc<ParserFactory>,
    vocab: usize,
}

impl Constrainer {
    pub fn new(tokenizer: &Tokenizer) -> Result<Self, ConstrainError> {
        Self::over(&token_env(tokenizer), tokenizer.vocab_size())
    }

    fn over(env: &TokEnv, vocab: usize) -> Result<Self, ConstrainError> {
        let mut factory = ParserFactory::new_simple(env).map_err(|e| ConstrainError::Vocabulary(e.to_string()))?;
        factory.quiet();
        Ok(Constrainer { factory: Arc::new(factory), vocab })
    }

    /// The constraint of a reply of `shape` (`None` when the reply is free).
    pub fn reply(&self, shape: &ReplyShape<'_>) -> Result<Option<ReplyConstraint>, ConstrainError> {
        if shape.is_free() {
            return Ok(None);
        }
        self.from_lark(reply_grammar(shape)).map(Some)
    }

    /// The constraint of a Lark grammar (llguidance's dialect).
    pub fn from_lark(&self, lark: String) -> Result<ReplyConstraint, ConstrainError> {
        let parser = self.factory.create_parser(TopLevelGrammar::from_lark(lark));
        let parser = parser.map_err(|e| ConstrainError::Schema(e.to_string()))?;
        Ok(ReplyConstraint {
            matcher: Matcher::new(Ok(parser)),
            vocab: self.vocab,
            mask_time: Duration::ZERO,
            masks: 0,
        })
    }
}

/// Checks that a reply of `shape` can be constrained (its schemas compile), against a
/// stand-in vocabulary: a front end refuses a bad schema before it queues the request.
pub fn check_shape(shape: &ReplyShape<'_>) -> Result<(), ConstrainError> {
    static PROBE: OnceLock<Result<Constrainer, ConstrainError>> = OnceLock::new();
    let probe = PROBE.get_or_init(|| Constrainer::over(&probe_env(), 260));
    match probe {
        Ok(constrainer) => constrainer.reply(shape).map(drop),
        Err(e) => Err(e.clone()),
    }
}

/// One reply's matcher.
pub struct ReplyConstraint {
    matcher: Matcher,
    vocab: usize,
    mask_time: Duration,
    masks: usize,
}

impl ReplyConstraint {
    /// Masks computed and the time they took.
    pub fn mask_cost(&self) -> (usize, Duration) {
        (self.masks, self.mask_time)
    }
}

impl TokenConstraint for ReplyConstraint {
    fn mask(&mut self) -> Result<TokenMask, String> {
        let start = Instant::now();
        let vob = self.matcher.compute_mask().map_err(|e| e.to_string())?;
        let mut words = vob.as_slice().to_vec();
        words.truncate(self.vocab.div_ceil(32));
        self.mask_time += start.elapsed();
        self.masks += 1;
        Ok(TokenMask::from_words(words))
    }

    fn commit(&mut self, token: u32) -> Result<(), String> {
        self.matcher.consume_token(token).map_err(|e| e.to_string())
    }
}
