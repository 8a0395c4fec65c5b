//! The accepted range of every spec quantity that is not a whole-number dimension, declared once
//! per field: finite, physical, and far beyond any real job, so a slip of a few digits (`1e30`
//! tokens, a `10000w` checkpoint interval) is refused at its place (L1011) instead of planning
//! with astronomic figures. docs/language.md lists the same ranges.

use crate::units::Bounds;

/// `train { tokens }`: at least one whole token, at most 10^16, about 300× the largest published
/// pre-training run (36T tokens).
pub(super) const TOKENS: Bounds = Bounds {
    min: 1.0,
    max: 1e16,
    words: "between 1 and 10000T",
};

/// `model { params }`: at most 10^15, about 500× the largest published model.
pub(super) const PARAMS: Bounds = Bounds {
    min: 1.0,
    max: 1e15,
    words: "between 1 and 1000T",
};

/// `goal { deadline }`: at most ten years (3650d); accelerators are written off in three to six,
/// so a plan past that is not a plan.
pub(super) const DEADLINE: Bounds = Bounds {
    min: 0.0,
    max: 315_360_000.0,
    words: "at most 3650d",
};

/// `checkpoint { interval }`: from one minute (a checkpoint write takes seconds to minutes, so a
/// shorter interval spends the run writing) to 52 weeks (a longer one makes the expected rework
/// of a failure astronomic: `10000w` planned 1.3e33 interruptions).
pub(super) const CHECKPOINT_INTERVAL: Bounds = Bounds {
    min: 60.0,
    max: 31_449_600.0,
    words: "between 1min and 52w",
};

/// `data { size }`: at most 1 EB (1000PB), about 100× the largest public web crawls.
pub(super) const DATA_SIZE: Bounds = Bounds {
    min: 0.0,
    max: 1e18,
    words: "at most 1000PB",
};

/// `resources { max_latency }`: at most 10 s, more than a round trip to the Moon; the
/// catalogue's link latencies have the same bound.
pub(super) const MAX_LATENCY: Bounds = Bounds {
    min: 0.0,
    max: 10.0,
    words: "at most 10s",
};

/// A service's latency targets (`ttft`, `tpot`, `itl`, `e2e`): at most a day; a longer target is
/// no latency target.
pub(super) const LATENCY_TARGET: Bounds = Bounds {
    min: 0.0,
    max: 86_400.0,
    words: "at most 1d",
};
