//! The expert cache's replacement seam: which ready expert to evict.
//!
//! Owns: [`CachePolicy`] (the choice) and the victim rules. `Lru` evicts the least
//! recently used; `LayerAhead` evicts from the layer whose next turn is furthest ahead in
//! the cyclic layer order (layers run 0..n on every pass, so an expert of the layer just
//! computed is needed again only after every other layer), least recently used first
//! within it. The offline study behind it is `k3_plan::cachesim` (`k3 sim-cache`).
//! Must not: see or choose an expert that is in flight or borrowed by a computation; the
//! cache passes only evictable candidates.

/// `(layer, expert)`.
pub type Key = (usize, usize);

/// Which expert the cache evicts when it needs a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CachePolicy {
    Lru,
    LayerAhead,
}

impl CachePolicy {
    pub fn parse(name: &str) -> Option<CachePolicy> {
        match name {
            "lru" => Some(CachePolicy::Lru),
            "layer-ahead" => Some(CachePolicy::LayerAhead),
            _ => None,
        }
    }

    /// Picks the victim among evictable `(key, last_use)` candidates while `layer_now` is
    /// being computed in a model of `n_layers` layers.
    pub fn victim(
        self,
        candidates: impl Iterator<Item = (Key, u64)>,
        layer_now: usize,
        n_layers: usize,
    ) -> Option<Key> {
        match self {
            CachePolicy::Lru => candidates.min_by_key(|&(key, last)| (last, key)).map(|(k, _)| k),
            CachePolicy::LayerAhead => {
                let n = n_layers.max(1);
                // Distance until the layer runs again: the current layer is needed now (0).
                let ahead = |layer: usize| (layer + n - layer_now % n) % n;
                candidates
                    .max_by_key(|&(key, last)| (ahead(key.0), std::cmp::Reverse(last), std::cmp::Reverse(key)))
                    .map(|(k, _)| k)
            }
        }
    }
}
