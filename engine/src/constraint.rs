//! Constrained decoding's seam: a [`TokenConstraint`] says which tokens may come next,
//! and generation picks only among them.
//!
//! Owns: the [`TokenMask`] (one bit per vocabulary id) and the contract between the
//! decoding loop and a constraint: before each pick the loop asks for the mask; after it
//! commits the chosen token. The mask changes which tokens may be chosen, never a logit's
//! value: greedy picks the largest allowed logit (the lowest id on ties), so wherever the
//! mask allows the unconstrained choice the tokens are the unconstrained ones, and every
//! byte-identity across budgets, threads, replans and speculation holds under a mask
//! (a draft token is accepted only when it is the constrained pick).
//! Must not: know a grammar (the `k3-constrain` crate builds them) or touch logits.

use crate::error::{Error, Result};

/// Which token ids may come next: one bit per id, LSB first in 32-bit words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenMask {
    words: Vec<u32>,
}

impl TokenMask {
    /// A mask from its words (bit `i % 32` of word `i / 32` allows id `i`).
    pub fn from_words(words: Vec<u32>) -> Self {
        TokenMask { words }
    }

    /// A mask allowing exactly `ids`.
    pub fn only(ids: &[u32], vocab: usize) -> Self {
        let mut words = vec![0u32; vocab.div_ceil(32)];
        for &id in ids {
            if let Some(w) = words.get_mut(id as usize / 32) {
                *w |= 1 << (id % 32);
            }
        }
        TokenMask { words }
    }

    /// True when `id` may come next.
    pub fn allows(&self, id: u32) -> bool {
        self.words.get(id as usize / 32).is_some_and(|w| w >> (id % 32) & 1 == 1)
    }

    /// How many ids the mask allows.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// A constraint on the tokens a generation may produce.
pub trait TokenConstraint: Send {
    /// The tokens allowed next (`Err`: the constraint failed; the reason).
    fn mask(&mut self) -> std::result::Result<TokenMask, String>;

    /// `token` was chosen (it is one the last mask allowed).
    fn commit(&mut self, token: u32) -> std::result::Result<(), String>;
}

/// The mask of `constraint`, as the engine's error when it fails or allows nothing.
pub(crate) fn next_mask(constraint: &mut dyn TokenConstraint, vocab: usize) -> Result<TokenMask> {
    let mask = constraint.mask().map_err(|reason| Error::Constraint { reason })?;
    if (0..vocab as u32).any(|id| mask.allows(id)) {
        Ok(mask)
    } else {
        Err(Error::Constraint { reason: "the constraint allows no token of the vocabulary".into() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mask_allows_exactly_its_ids() {
        let m = TokenMask::only(&[0, 31, 32, 99, 5000], 100);
        assert!(m.allows(0) && m.allows(31) && m.allows(32) && m.allows(99));
        assert!(!m.allows(1) && !m.allows(98) && !m.allows(100) && !m.allows(5000));
        assert_eq!(m.count(), 4);
    }
}
