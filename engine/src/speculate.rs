//! Exact speculative decoding by prompt lookup: the drafts and how many to try.
//!
//! Owns: [`draft`] (the tokens that followed the most recent earlier occurrence of the
//! context's last n-gram, longest n first: free to compute, no second model) and
//! [`Horizon`] (how many draft tokens the next verify pass carries: starts at one, grows
//! while drafts are accepted, halves when the first is rejected, and pauses drafting for a
//! growing number of steps once it reaches zero, so text that does not repeat decodes
//! serially), held in [`Speculation`] (the engine's [`Drafter`], drafting from a
//! [`DraftSource`]: prompt lookup in the product, a replayed output in `k3 bench
//! speculate`; tests give the engine other drafters), which weighs each verify pass by its
//! measured cost (nothing is drafted before one serial step is timed): a pass whose time
//! per emitted token was above a serial step's counts as a rejection (when nothing was
//! accepted, the pause that follows is long enough for its extra time to stay within
//! [`FAILED_DRAFT_SHARE`] of the serial steps in it), and one that was so although drafts
//! were accepted (a compute-bound model, where a batched pass costs about a step per
//! position) pauses drafting the longest; where reads dominate (a streamed trunk is read
//! once per pass) a pass pays from one accepted token.
//! Must not: change any output. The engine verifies a draft in one batched forward pass,
//! picks every position's token with the sampler exactly as serial decoding would (one
//! draw per emitted token, in order), stops at the first token that differs from the draft
//! and keeps only the positions serial decoding would have fed
//! (`SequenceState::keep_tentative`). The outputs never depend on the drafts or the
//! horizon (which also follow timings), only the speed does.
//! Easy to break: a draft must never reach past the generation's remaining room (max
//! tokens, context length); the caller passes that room as `max`.

use std::time::Duration;

/// The most draft tokens one verify pass may carry (a pass stays one prefill chunk).
pub const MAX_DRAFT: usize = 32;

/// The longest n-gram looked up (then shorter ones, down to [`MIN_NGRAM`]).
pub const MAX_NGRAM: usize = 4;
/// The shortest n-gram that may propose a draft (one token matches too often to pay).
pub const MIN_NGRAM: usize = 2;

/// Up to `max` tokens that followed the most recent earlier occurrence of the last `n`
/// tokens of `tokens`, for the largest `n` in `MIN_NGRAM..=MAX_NGRAM` that occurs; empty
/// when none does.
pub fn draft(tokens: &[u32], max: usize) -> Vec<u32> {
    if max == 0 {
        return Vec::new();
    }
    for n in (MIN_NGRAM..=MAX_NGRAM).rev() {
        if tokens.len() <= n {
            continue;
        }
        let suffix = &tokens[tokens.len() - n..];
        // Most recent first; the match must end before the suffix itself starts.
        let found = (0..tokens.len() - n).rev().find(|&i| &tokens[i..i + n] == suffix);
        if let Some(i) = found {
            let from = i + n;
            return tokens[from..(from + max).min(tokens.len())].to_vec();
        }
    }
    Vec::new()
}

/// What speculation did in one generation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpeculationStats {
    /// Forward passes that verified a draft.
    pub verify_passes: usize,
    /// Draft tokens those passes carried.
    pub drafted: usize,
    /// Draft tokens the model itself produced (each saved a forward pass).
    pub accepted: usize,
}

/// Where a speculative generation's drafts come from, and what it learns from each step.
/// Whatever a drafter proposes, the engine emits serial decoding's tokens.
pub trait Drafter {
    /// The draft for the next step of a generation whose context is `tokens`, with `room`
    /// tokens left to generate (≥ 1): the engine cuts it to `room - 1` (a verify pass emits
    /// at most the draft plus one).
    fn next_draft(&mut self, tokens: &[u32], room: usize) -> Vec<u32>;
    /// A decoding step without a draft took `elapsed`.
    fn serial_step(&mut self, _elapsed: Duration) {}
    /// A verify pass of `draft` emitted `emitted` (serial decoding's picks) in `elapsed`.
    fn verified(&mut self, _draft: &[u32], _emitted: &[u32], _elapsed: Duration) {}
}

/// Where a [`Speculation`] takes its draft tokens from.
pub trait DraftSource {
    /// Up to `max` (≥ 1) tokens proposed to follow `tokens`.
    fn propose(&mut self, tokens: &[u32], max: usize) -> Vec<u32>;
}

/// Prompt lookup ([`draft`]): the product's only source.
#[derive(Debug, Clone, Copy, Default)]
pub struct PromptLookup;

impl DraftSource for PromptLookup {
    fn propose(&mut self, tokens: &[u32], max: usize) -> Vec<u32> {
        draft(tokens, max)
    }
}

/// The engine's drafter: drafts from `S` (prompt lookup unless told) under an adaptive,
/// cost-weighed horizon.
#[derive(Debug, Clone)]
pub struct Speculation<S = PromptLookup> {
    horizon: Horizon,
    /// Seconds of the latest serial decoding step (no draft), once one ran.
    serial_step: Option<f64>,
    source: S,
}

impl Speculation {
    /// Drafts up to `max_draft` tokens per pass (0: never) by prompt lookup.
    pub fn new(max_draft: usize) -> Self {
        Speculation::with_source(max_draft, PromptLookup)
    }
}

impl<S: DraftSource> Speculation<S> {
    /// Drafts up to `max_draft` tokens per pass (0: never) from `source`.
    pub fn with_source(max_draft: usize, source: S) -> Self {
        Speculation { horizon: Horizon::new(max_draft), serial_step: None, source }
    }
}

impl<S: DraftSource> Drafter for Speculation<S> {
    fn serial_step(&mut self, elapsed: Duration) {
        self.serial_step = Some(elapsed.as_secs_f64());
    }

    /// Nothing is drafted before one serial step was timed (the cost every pass is weighed
    /// against).
    fn next_draft(&mut self, tokens: &[u32], room: usize) -> Vec<u32> {
        if self.serial_step.is_none() {
            return Vec::new();
        }
        match self.horizon.take().min(room.saturating_sub(1)) {
            0 => Vec::new(),
            n => self.source.propose(tokens, n),
        }
    }

    fn verified(&mut self, draft: &[u32], emitted: &[u32], elapsed: Duration) {
        let accepted = emitted.iter().zip(draft).take_while(|(got, drafted)| got == drafted).count();
        let per_token = elapsed.as_secs_f64() / emitted.len().max(1) as f64;
        let paid = self.serial_step.is_some_and(|serial| per_token <= serial);
        match (paid, accepted) {
            (true, _) => self.horizon.learn(draft.len(), accepted),
            (false, 0) => {
                self.horizon.learn(draft.len(), 0);
                if let Some(serial) = self.serial_step {
                    let extra_steps = (elapsed.as_secs_f64() - serial * emitted.len() as f64) / serial;
                    self.horizon.pause_at_least(pause_paying_back(extra_steps));
                }
            }
            // Accepted tokens that still cost more than serial steps: this machine computes
            // a batch at about a step per position, so drafting waits the longest pause.
            (false, _) => self.horizon.pause_longest(),
        }
    }
}

/// The most a wholly rejected verify pass may add to serial decoding's time, as a share of
/// the serial steps that follow it without drafts.
pub const FAILED_DRAFT_SHARE: f64 = 0.05;

/// Serial steps to decode without drafting after a wholly rejected pass that cost
/// `extra_steps` serial steps more than the tokens it emitted, so that its cost stays within
/// [`FAILED_DRAFT_SHARE`] of theirs (at most [`MAX_PAUSE`]).
pub fn pause_paying_back(extra_steps: f64) -> usize {
    if extra_steps.is_nan() || extra_steps <= 0.0 {
        return 0;
    }
    (extra_steps / FAILED_DRAFT_SHARE).ceil().min(MAX_PAUSE as f64) as usize
}

/// How many draft tokens the next verify pass carries.
#[derive(Debug, Clone)]
pub struct Horizon {
    max: usize,
    now: usize,
    /// Steps left to decode serially before drafting again.
    paused: usize,
    /// The next pause's length (doubles each time drafting stalls, at most [`MAX_PAUSE`]).
    next_pause: usize,
}

/// The longest pause, in steps.
pub const MAX_PAUSE: usize = 64;

impl Horizon {
    /// Starts at `max` draft tokens (0: never draft).
    pub fn new(max: usize) -> Self {
        Horizon { max, now: max.min(1), paused: 0, next_pause: 1 }
    }

    /// Draft tokens to try now (0 while paused). Each call is one decoding step.
    pub fn take(&mut self) -> usize {
        if self.paused > 0 {
            self.paused -= 1;
            if self.paused == 0 {
                self.now = 1;
            }
            return 0;
        }
        self.now
    }

    /// Stops drafting for [`MAX_PAUSE`] steps (then one draft token again).
    pub fn pause_longest(&mut self) {
        self.now = 0;
        self.paused = MAX_PAUSE;
        self.next_pause = MAX_PAUSE;
    }

    /// When drafting is paused, pauses for at least `steps` steps (at most [`MAX_PAUSE`]).
    pub fn pause_at_least(&mut self, steps: usize) {
        if self.paused > 0 {
            self.paused = self.paused.max(steps.min(MAX_PAUSE));
        }
    }

    /// Learns from a verify pass that carried `tried` draft tokens of which the first
    /// `accepted` were what the model itself produced.
    pub fn learn(&mut self, tried: usize, accepted: usize) {
        if tried == 0 {
            return;
        }
        if accepted == tried {
            self.now = (self.now + 1).min(self.max);
            self.next_pause = 1;
        } else if accepted == 0 {
            self.now /= 2;
            if self.now == 0 {
                self.paused = self.next_pause;
                self.next_pause = (self.next_pause * 2).min(MAX_PAUSE);
            }
        } else {
            self.now = accepted.max(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draft_follows_the_most_recent_longest_match() {
        // "… 1 2 3 9 … 1 2 3 7 8 | 1 2 3": the last 3-gram last occurred before 7 8.
        let t = [5, 1, 2, 3, 9, 6, 1, 2, 3, 7, 8, 4, 1, 2, 3];
        assert_eq!(draft(&t, 3), vec![7, 8, 4]);
        assert_eq!(draft(&t, 1), vec![7]);
        assert_eq!(draft(&t, 0), Vec::<u32>::new());
        // The draft stops at the end of the context.
        assert_eq!(draft(&[1, 2, 1, 2], 5), vec![1, 2]);
        // No 2-gram repeats: no draft (a single repeated token is not enough).
        assert_eq!(draft(&[1, 2, 3, 1], 4), Vec::<u32>::new());
    }

    #[test]
    fn a_pass_slower_per_token_than_a_serial_step_counts_as_a_rejection() {
        let ms = Duration::from_millis;
        let ctx = [1, 2, 3, 1, 2, 3, 1, 2];
        let mut s = Speculation::new(4);
        assert_eq!(s.next_draft(&ctx, 9), Vec::<u32>::new(), "no draft before a timed serial step");
        s.serial_step(ms(10));
        assert_eq!(s.next_draft(&ctx, 9), vec![3], "the horizon starts at one token");
        // Accepted, 2 tokens in 16 ms: 8 ms a token pays; the horizon grows to 2, then 3.
        s.verified(&[3], &[3, 9], ms(16));
        assert_eq!(s.next_draft(&ctx, 9), vec![3, 1]);
        s.verified(&[3, 1], &[3, 1, 9], ms(24));
        // The draft ends where the context does.
        assert_eq!(s.next_draft(&ctx, 9), vec![3, 1, 2]);
        // Nothing accepted, 1 token in 12 ms: the usual halving (3 → 1).
        s.verified(&[3, 1, 2], &[5], ms(12));
        assert_eq!(s.next_draft(&ctx, 9), vec![3]);
        // Accepted but 2 tokens in 24 ms: 12 ms a token does not pay even so; drafting
        // pauses the longest, then tries one token again.
        s.verified(&[3], &[3, 9], ms(24));
        assert!((0..MAX_PAUSE).all(|_| s.next_draft(&ctx, 9).is_empty()));
        assert_eq!(s.next_draft(&ctx, 9), vec![3]);
        // Room for one token: no draft.
        assert_eq!(s.next_draft(&[1, 2, 1, 2], 1), Vec::<u32>::new());
    }

    #[test]
    fn a_costly_rejected_pass_pauses_drafting_until_it_is_paid_back() {
        let ms = Duration::from_millis;
        let ctx = [1, 2, 3, 1, 2];
        let mut s = Speculation::new(4);
        s.serial_step(ms(10));
        assert_eq!(s.next_draft(&ctx, 9), vec![3]);
        // Rejected, one token in 15 ms: half a step more than serial decoding, paid back by
        // 10 serial steps (5 % of them), not the first pause of one step.
        s.verified(&[3], &[4], ms(15));
        assert!((0..10).all(|_| s.next_draft(&ctx, 9).is_empty()));
        assert_eq!(s.next_draft(&ctx, 9), vec![3]);
        // A rejected pass that cost no more than a serial step: the usual growing pause.
        s.verified(&[3], &[4], ms(10));
        assert_eq!((s.next_draft(&ctx, 9), s.next_draft(&ctx, 9), s.next_draft(&ctx, 9)), (vec![], vec![], vec![3]));
        assert_eq!(pause_paying_back(0.5), 10);
        assert_eq!(pause_paying_back(-1.0), 0);
        assert_eq!(pause_paying_back(f64::NAN), 0);
        assert_eq!(pause_paying_back(100.0), MAX_PAUSE);
    }

    /// Proposes `max` copies of one token, and records what it was asked.
    struct Fixed {
        token: u32,
        asked: Vec<(usize, usize)>,
    }

    impl DraftSource for Fixed {
        fn propose(&mut self, tokens: &[u32], max: usize) -> Vec<u32> {
            self.asked.push((tokens.len(), max));
            vec![self.token; max]
        }
    }

    #[test]
    fn another_source_drafts_under_the_same_horizon() {
        let ms = Duration::from_millis;
        let mut s = Speculation::with_source(3, Fixed { token: 7, asked: vec![] });
        assert!(s.next_draft(&[1, 2], 9).is_empty(), "no draft before a timed serial step");
        s.serial_step(ms(10));
        assert_eq!(s.next_draft(&[1, 2], 9), vec![7], "the horizon starts at one token");
        s.verified(&[7], &[7, 7], ms(12));
        assert_eq!(s.next_draft(&[1, 2, 7, 7], 9), vec![7, 7]);
        // The room left cuts what the source is asked for.
        s.verified(&[7, 7], &[7, 7, 7], ms(15));
        assert_eq!(s.next_draft(&[1, 2, 7, 7, 7, 7, 7], 2), vec![7]);
        assert_eq!(s.source.asked, vec![(2, 1), (4, 2), (7, 1)]);
    }

    #[test]
    fn the_horizon_grows_on_acceptance_and_pauses_when_drafts_fail() {
        let mut h = Horizon::new(3);
        assert_eq!(h.take(), 1);
        h.learn(1, 1);
        h.learn(2, 2);
        assert_eq!(h.take(), 3);
        h.learn(3, 3);
        assert_eq!(h.take(), 3, "never past the most");
        h.learn(3, 1);
        assert_eq!(h.take(), 1, "a partial acceptance sets the horizon to what was accepted");
        h.learn(1, 0);
        // Paused for one step, then one draft token again; the next pause is longer.
        assert_eq!((h.take(), h.take()), (0, 1));
        h.learn(1, 0);
        assert_eq!((h.take(), h.take(), h.take()), (0, 0, 1));
        // Without drafts there is nothing to learn.
        h.learn(0, 0);
        assert_eq!(h.take(), 1);
        assert_eq!(Horizon::new(0).take(), 0);
    }
}
