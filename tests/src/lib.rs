//! Shared test support (fixture loading, tolerances, comparisons).
