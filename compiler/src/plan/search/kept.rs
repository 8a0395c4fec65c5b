//! What a search keeps of what it visits: the best candidates so far, and every rejected region
//! with its closest miss.

use super::{Candidate, RejectedRegion, Rejection};
use crate::workload::Layout;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

/// A stable key grouping rejections into regions. Regions are reported in the order of this
/// key, which is the alphabetical order of their names (`indivisible: heads % tensor`,
/// `interleave needs micro-batches`, `out of memory`, `stages without blocks`,
/// `tensor beyond node`, `too many devices`,
/// `unsupported`): keep the variants in that order. A fixed key, because the search rejects
/// thousands of layouts and a text key costs an allocation each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Region {
    Indivisible(&'static str),
    InterleaveNeedsMicroBatches,
    OutOfMemory,
    StagesWithoutBlocks,
    TensorBeyondNode,
    TooManyDevices,
    Unsupported,
}

/// A broken layout rule is a rejection of its own kind, named as the rule names it.
impl From<crate::workload::layout::rules::Indivisible> for Rejection {
    fn from(broken: crate::workload::layout::rules::Indivisible) -> Self {
        Rejection::Indivisible {
            what: broken.what,
            value: broken.value,
            by: broken.by,
        }
    }
}

impl Rejection {
    /// The region a rejection belongs to.
    fn region(&self) -> Region {
        match self {
            Rejection::Indivisible { what, .. } => Region::Indivisible(what),
            Rejection::TensorBeyondNode { .. } => Region::TensorBeyondNode,
            Rejection::TooManyDevices { .. } => Region::TooManyDevices,
            Rejection::InterleaveNeedsMicroBatches { .. } => Region::InterleaveNeedsMicroBatches,
            Rejection::OutOfMemory { .. } => Region::OutOfMemory,
            Rejection::StagesWithoutBlocks { .. } => Region::StagesWithoutBlocks,
            Rejection::Unsupported { .. } => Region::Unsupported,
        }
    }

    /// How far from working (smaller is closer), to keep the most telling example per region.
    fn distance(&self) -> f64 {
        match self {
            Rejection::OutOfMemory {
                need_bytes,
                have_bytes,
            } => need_bytes - have_bytes,
            Rejection::TooManyDevices { need, have } => need.saturating_sub(*have) as f64,
            _ => 0.0,
        }
    }
}

/// Every rejected region so far, each with its count and closest miss. The search rejects
/// thousands of layouts, nearly all for memory or interleaving, so each region but the
/// indivisible ones (one per pair of counts) has a slot of its own instead of a map entry.
#[derive(Debug, Default)]
pub(super) struct Rejections {
    indivisible: BTreeMap<&'static str, RejectedRegion>,
    tensor_beyond_node: Option<RejectedRegion>,
    too_many_devices: Option<RejectedRegion>,
    interleave_needs_micro_batches: Option<RejectedRegion>,
    out_of_memory: Option<RejectedRegion>,
    stages_without_blocks: Option<RejectedRegion>,
    unsupported: Option<RejectedRegion>,
}

impl Rejections {
    /// Counts `layout` in the region of `reason`.
    #[inline]
    pub(super) fn reject(&mut self, reason: Rejection, layout: Layout) {
        let slot = match reason.region() {
            Region::Indivisible(what) => match self.indivisible.entry(what) {
                Entry::Occupied(entry) => {
                    count_in(entry.into_mut(), reason, layout);
                    return;
                }
                Entry::Vacant(entry) => {
                    entry.insert(first_of_region(reason, layout));
                    return;
                }
            },
            Region::TensorBeyondNode => &mut self.tensor_beyond_node,
            Region::TooManyDevices => &mut self.too_many_devices,
            Region::InterleaveNeedsMicroBatches => &mut self.interleave_needs_micro_batches,
            Region::OutOfMemory => &mut self.out_of_memory,
            Region::StagesWithoutBlocks => &mut self.stages_without_blocks,
            Region::Unsupported => &mut self.unsupported,
        };
        match slot {
            Some(entry) => count_in(entry, reason, layout),
            None => *slot = Some(first_of_region(reason, layout)),
        }
    }

    /// [`Rejections::reject`] of [`Rejection::OutOfMemory`].
    #[inline]
    pub(super) fn reject_memory(&mut self, need_bytes: f64, have_bytes: f64, layout: Layout) {
        let reason = Rejection::OutOfMemory {
            need_bytes,
            have_bytes,
        };
        match &mut self.out_of_memory {
            Some(entry) => count_in(entry, reason, layout),
            None => self.out_of_memory = Some(first_of_region(reason, layout)),
        }
    }

    /// Whether an out-of-memory rejection at least `distance` bytes over would be no closer
    /// miss than the region's example (false while the region is empty).
    #[inline]
    pub(super) fn no_closer_memory_miss(&self, distance: f64) -> bool {
        self.out_of_memory
            .as_ref()
            .is_some_and(|entry| distance >= entry.reason.distance())
    }

    /// Counts `n` out-of-memory rejections that are no closer misses than the region's example
    /// ([`Rejections::no_closer_memory_miss`]).
    #[inline]
    pub(super) fn count_memory(&mut self, n: u64) {
        if let Some(entry) = &mut self.out_of_memory {
            entry.count += n;
        }
    }

    /// Every region, in [`Region`] order.
    pub(super) fn into_regions(self) -> Vec<RejectedRegion> {
        let mut regions: BTreeMap<Region, RejectedRegion> = self
            .indivisible
            .into_iter()
            .map(|(what, entry)| (Region::Indivisible(what), entry))
            .collect();
        let slots = [
            (Region::TensorBeyondNode, self.tensor_beyond_node),
            (Region::TooManyDevices, self.too_many_devices),
            (
                Region::InterleaveNeedsMicroBatches,
                self.interleave_needs_micro_batches,
            ),
            (Region::OutOfMemory, self.out_of_memory),
            (Region::StagesWithoutBlocks, self.stages_without_blocks),
            (Region::Unsupported, self.unsupported),
        ];
        for (region, slot) in slots {
            if let Some(entry) = slot {
                regions.insert(region, entry);
            }
        }
        regions.into_values().collect()
    }
}

/// A region's first rejection.
fn first_of_region(reason: Rejection, layout: Layout) -> RejectedRegion {
    RejectedRegion {
        reason,
        example: layout,
        count: 1,
    }
}

/// Counts one more rejection in `entry`, which becomes its example if it is a closer miss (the
/// first of equally close misses stays).
fn count_in(entry: &mut RejectedRegion, reason: Rejection, layout: Layout) {
    entry.count += 1;
    if reason.distance() < entry.reason.distance() {
        entry.reason = reason;
        entry.example = layout;
    }
}

/// The `keep` best candidates so far, best first, with their scores.
#[derive(Debug)]
pub(super) struct Kept {
    ranked: Vec<(f64, Candidate)>,
    keep: usize,
}

impl Kept {
    /// Room for the `keep` best (at least one).
    pub(super) fn new(keep: usize) -> Kept {
        Kept {
            ranked: Vec::new(),
            keep: keep.max(1),
        }
    }

    /// Keeps a copy of `cand`, scored `score`, if it is among the best by (score, layout field
    /// order); whether it did.
    pub(super) fn offer(&mut self, score: f64, cand: &Candidate) -> bool {
        let ranked = &mut self.ranked;
        let keep = self.keep;
        let before = |s: &f64, c: &Candidate| {
            score
                .total_cmp(s)
                .then_with(|| cand.layout.cmp(&c.layout))
                .is_lt()
        };
        // Most candidates lose to the worst kept one; `ranked` is sorted, so that settles it.
        if ranked.len() >= keep && ranked.last().is_some_and(|(s, c)| !before(s, c)) {
            return false;
        }
        let pos = ranked
            .iter()
            .position(|(s, c)| before(s, c))
            .unwrap_or(ranked.len());
        if pos < keep {
            ranked.insert(pos, (score, cand.clone()));
            ranked.truncate(keep);
        }
        pos < keep
    }

    /// Whether `keep` candidates are kept, so that a score can be refused
    /// ([`Kept::refuses_from`]).
    pub(super) fn is_full(&self) -> bool {
        self.ranked.len() >= self.keep
    }

    /// Whether every candidate scored `score` or more would be refused: `keep` are kept, the
    /// worst of them scored below it.
    pub(super) fn refuses_from(&self, score: f64) -> bool {
        self.is_full() && self.ranked.last().is_some_and(|(s, _)| *s < score)
    }

    /// The scores and the candidates, best first.
    pub(super) fn into_ranked(self) -> (Vec<f64>, Vec<Candidate>) {
        self.ranked.into_iter().unzip()
    }
}
