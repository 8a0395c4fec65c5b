//! How a pipeline's model chunks divide the transformer blocks, also when the layers do not
//! divide evenly, and the few numbers of a split that the cost model and the memory function
//! read ([`StageSplit`]: small and `Copy`, so a [`Layout`](super::Layout) stays hashable).
//!
//! Chunk `c` of the `p · v` chunks (model order) runs on pipeline rank `c mod p` (the interleaved
//! schedule of Narayanan et al. 2021, §2.2); with `v = 1` a rank holds one contiguous chunk.

use super::schedule::{local_chunks, peaks_by_rounds};
use loam_ir::types::SplitRule;
use serde::Serialize;

/// The blocks of every chunk of a pipeline of `pipeline · virtual_stages` chunks over `layers`
/// blocks, in model order, under `rule` (a [`SplitRule::Pinned`] split is the spec's own list,
/// so it is read as [`SplitRule::Balanced`] here). The split must pass
/// [`crate::workload::layout::rules::pipeline_split`]; otherwise chunks may be empty.
///
/// - `Balanced`: `layers = n·q + r`; `r` chunks hold `q + 1` blocks.
/// - `EmbeddingAndLoss`: the embedding and the loss head count as one layer each, so
///   `layers + 2 = n·q + r` units are spread the same way and the first and last chunks give one
///   unit to them (Megatron-LM's `account_for_embedding_in_pipeline_split` and
///   `account_for_loss_in_pipeline_split`).
///
/// The extra units go round the ranks, one per rank per round, middle ranks first from the last
/// one back (they stash fewer micro-batches than earlier ranks and hold neither the embedding nor
/// the head), then the last rank, then the first: so ranks differ by at most one extra per round
/// and the order is fixed.
pub fn chunk_blocks(layers: u32, pipeline: u32, virtual_stages: u32, rule: SplitRule) -> Vec<u32> {
    let p = pipeline.max(1);
    let n = p.saturating_mul(virtual_stages.max(1)) as usize;
    let accounted = rule == SplitRule::EmbeddingAndLoss;
    let units = layers + if accounted { 2 } else { 0 };
    let q = units / n as u32;
    let mut extra = (units % n as u32) as usize;
    let mut chunks = vec![q; n];
    let ranks: Vec<u32> = (1..p.saturating_sub(1))
        .rev()
        .chain((p > 1).then_some(p - 1))
        .chain([0])
        .collect();
    'rounds: for round in 0..virtual_stages.max(1) {
        for &rank in &ranks {
            if extra == 0 {
                break 'rounds;
            }
            if let Some(chunk) = chunks.get_mut((round * p + rank) as usize) {
                *chunk += 1;
                extra -= 1;
            }
        }
    }
    if accounted {
        if let Some(first) = chunks.first_mut() {
            *first = first.saturating_sub(1);
        }
        if let Some(last) = chunks.last_mut() {
            *last = last.saturating_sub(1);
        }
    }
    chunks
}

/// Ranks a split records: the first, the last and up to four middle ones.
pub const RECORDED_RANKS: usize = 6;

/// What the cost model and the memory function read of a split: the blocks of the first rank
/// (which also holds the embedding), of the last rank (the final norm, the LM head and the loss)
/// and the middle ranks that can need the most memory or time, each with the blocks it holds in
/// flight at its peak under the pipeline schedule ([`super::schedule`]).
///
/// A middle rank holds no embedding or head, so the slowest of them is the one with the most
/// blocks, and the one needing the most memory maximises `states · blocks + activations ·
/// in-flight blocks`. The split records the earliest middle rank with the most blocks and, per
/// step length, the earliest with the most blocks in flight: 1F1B's `blocks · (p − rank)`, or under
/// interleaving the schedule's peak at `m = p`, `2p` and `≥ 3p` micro-batches (the only three
/// peaks there are: from `3p` on, one period of steady steps fits after the warm-up). Under the
/// balanced rules middle ranks hold one of two chunk lists and a rank holds no fewer blocks in
/// flight than a later one with the same list, so the rank needing the most memory is recorded;
/// for a pinned split of many different chunks it is when that rank leads on blocks or on blocks
/// in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct StageSplit {
    /// The rule the split follows.
    pub rule: SplitRule,
    /// Blocks of the first rank, all its chunks (0: not worked out yet, see
    /// [`Layout::stage_split`](super::Layout::stage_split)).
    pub first: u32,
    /// Blocks of the last rank.
    pub last: u32,
    /// The most blocks a middle rank holds (0 without middle ranks).
    pub heavy: u32,
    /// The recorded ranks: first, last, then the middle ones; unused slots repeat the first.
    recorded: [RankLoad; RECORDED_RANKS],
    /// How many of `recorded` are in use.
    count: u8,
}

/// One pipeline rank as the memory function and the step model see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct RankLoad {
    /// The rank, from 0.
    pub rank: u32,
    /// Transformer blocks it holds, all chunks.
    pub blocks: u32,
    /// Whether it holds the input embedding.
    pub embedding: bool,
    /// Whether it holds the final norm, the LM head and the loss.
    pub head: bool,
    /// Under interleaving, the block-micro-batches it holds at its peak with `p`, `2p` and `≥ 3p`
    /// micro-batches per step ([`super::schedule::peak_live_blocks`]); zero under 1F1B, whose
    /// peak is `min(p − rank, m)` micro-batches of all its blocks.
    pub peaks: [u32; 3],
}

impl RankLoad {
    const EMPTY: RankLoad = RankLoad {
        rank: 0,
        blocks: 0,
        embedding: false,
        head: false,
        peaks: [0; 3],
    };

    /// Micro-batches of all its blocks this rank holds activations of at its peak on a pipeline
    /// of `pipeline` ranks running `micro_batches` per step, the running one included: 1F1B's
    /// `min(p − rank, m)` (at least one), or the interleaved schedule's peak over its blocks.
    pub fn in_flight(&self, pipeline: u32, micro_batches: f64) -> f64 {
        let p = f64::from(pipeline.max(1));
        if self.peaks == [0; 3] || self.blocks == 0 {
            return (p - f64::from(self.rank)).min(micro_batches).max(1.0);
        }
        // Interleaving runs whole rounds of `p` micro-batches; three rounds or more hold the
        // steady peak.
        let rounds = (micro_batches / p).ceil().clamp(1.0, 3.0) as usize;
        let peak = self.peaks.get(rounds - 1).copied().unwrap_or(0);
        f64::from(peak) / f64::from(self.blocks)
    }
}

impl StageSplit {
    /// A split not worked out yet: the layout's balanced split is derived from the model when
    /// asked for.
    pub const UNRESOLVED: StageSplit = StageSplit {
        rule: SplitRule::Balanced,
        first: 0,
        last: 0,
        heavy: 0,
        recorded: [RankLoad::EMPTY; RECORDED_RANKS],
        count: 0,
    };

    /// The split of `layers` blocks over `pipeline × virtual_stages` chunks under `rule`.
    pub fn new(layers: u32, pipeline: u32, virtual_stages: u32, rule: SplitRule) -> StageSplit {
        StageSplit::of_chunks(
            rule,
            &chunk_blocks(layers, pipeline, virtual_stages, rule),
            pipeline,
        )
    }

    /// The summary of `chunks` (blocks per chunk, model order) on `pipeline` ranks.
    pub fn of_chunks(rule: SplitRule, chunks: &[u32], pipeline: u32) -> StageSplit {
        let p = pipeline.max(1);
        let mut ranks = vec![0u32; p as usize];
        for (c, blocks) in chunks.iter().enumerate() {
            if let Some(rank) = ranks.get_mut(c % p as usize) {
                *rank += blocks;
            }
        }
        let interleaved = p > 1 && chunks.len() > p as usize;
        let load = |rank: u32| {
            let blocks = ranks.get(rank as usize).copied().unwrap_or(0);
            let peaks = if interleaved {
                let local = local_chunks(chunks, p, rank);
                peaks_by_rounds(&local, p, rank).map(|peak| u32::try_from(peak).unwrap_or(u32::MAX))
            } else {
                [0; 3]
            };
            RankLoad {
                rank,
                blocks,
                embedding: rank == 0,
                head: rank == p - 1,
                peaks,
            }
        };
        let first = load(0);
        let mut split = StageSplit {
            rule,
            first: first.blocks,
            last: ranks.last().copied().unwrap_or(0),
            heavy: 0,
            recorded: [first; RECORDED_RANKS],
            count: 1,
        };
        if p == 1 {
            return split;
        }
        split.push(load(p - 1));
        if p == 2 {
            return split;
        }
        let middle: Vec<RankLoad> = (1..p - 1).map(load).collect();
        // The earliest middle rank leading each measure.
        let leader = |measure: &dyn Fn(&RankLoad) -> u64| -> Option<RankLoad> {
            middle
                .iter()
                .fold(None, |best: Option<&RankLoad>, r| match best {
                    Some(b) if measure(b) >= measure(r) => Some(b),
                    _ => Some(r),
                })
                .copied()
        };
        let heavy = leader(&|r| u64::from(r.blocks));
        split.heavy = heavy.map_or(0, |r| r.blocks);
        let mut candidates = vec![heavy];
        if interleaved {
            for k in 0..3 {
                candidates.push(leader(&|r| u64::from(r.peaks.get(k).copied().unwrap_or(0))));
            }
        } else {
            candidates.push(leader(&|r| u64::from(r.blocks) * u64::from(p - r.rank)));
        }
        for candidate in candidates.into_iter().flatten() {
            // Under 1F1B a middle rank with no more blocks than the first holds no embedding and
            // fewer micro-batches in flight, so it needs no more time or memory.
            if !interleaved && candidate.blocks <= first.blocks {
                continue;
            }
            split.push(candidate);
        }
        split
    }

    /// The same split read as following `rule`: equal to a split of `rule` exactly when their
    /// chunks hold the same blocks.
    pub fn with_rule(self, rule: SplitRule) -> StageSplit {
        StageSplit { rule, ..self }
    }

    /// Records `load` unless it is recorded already.
    fn push(&mut self, load: RankLoad) {
        let count = usize::from(self.count);
        if self
            .recorded
            .iter()
            .take(count)
            .any(|r| r.rank == load.rank)
        {
            return;
        }
        if let Some(slot) = self.recorded.get_mut(count) {
            *slot = load;
            self.count += 1;
        }
    }

    /// Whether the split has been worked out (every chunk holds a block, so the first rank does).
    pub fn is_resolved(&self) -> bool {
        self.first > 0
    }

    /// The most blocks any rank holds.
    pub fn max_blocks(&self) -> u32 {
        self.first.max(self.last).max(self.heavy)
    }

    /// The ranks that can be the slowest or need the most memory: the first, the last, then the
    /// recorded middle ranks ([`StageSplit`]); the count in use. With one rank it holds every
    /// block, the embedding and the head. Slot 2 is the middle rank with the most blocks when it
    /// holds more than the first, else the first again.
    pub fn ranks(&self, pipeline: u32) -> ([RankLoad; RECORDED_RANKS], usize) {
        let p = pipeline.max(1);
        if p == 1 || self.count <= 1 {
            let only = RankLoad {
                head: p == 1,
                ..self.recorded[0]
            };
            return ([only; RECORDED_RANKS], 1);
        }
        (self.recorded, usize::from(self.count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::schedule::{local_chunks, peak_live_blocks};
    use proptest::prelude::*;

    proptest! {
        /// The recorded ranks hold the rank needing the most memory, for any weight of model
        /// states per block and activations per in-flight block: checked against every rank,
        /// each rank's in-flight blocks simulated from its own chunks.
        #[test]
        fn recorded_ranks_hold_the_worst_of_a_balanced_split(
            layers in 1u32..90,
            p in 2u32..17,
            v in 1u32..5,
            rounds in 1u32..5,
            states in 0u32..50,
            activations in 0u32..50,
            embedding_and_loss in any::<bool>(),
        ) {
            let rule = if embedding_and_loss { SplitRule::EmbeddingAndLoss } else { SplitRule::Balanced };
            prop_assume!(crate::workload::layout::rules::pipeline_split(
                layers.into(), p.into(), v.into(), rule, None
            ).is_ok());
            let chunks = chunk_blocks(layers, p, v, rule);
            let m = rounds * p;
            let split = StageSplit::of_chunks(rule, &chunks, p);
            let cost = |blocks: u32, in_flight: f64| {
                f64::from(states) * f64::from(blocks) + f64::from(activations) * f64::from(blocks) * in_flight
            };
            let (recorded, n) = split.ranks(p);
            let best_recorded = recorded
                .iter()
                .take(n)
                .map(|r| cost(r.blocks, r.in_flight(p, f64::from(m))))
                .fold(0.0, f64::max);
            let best = (0..p)
                .map(|r| {
                    let local = local_chunks(&chunks, p, r);
                    let blocks: u32 = local.iter().sum();
                    let peak = peak_live_blocks(&local, p, r, u64::from(m));
                    let in_flight = if blocks == 0 { 1.0 } else { peak as f64 / f64::from(blocks) };
                    cost(blocks, in_flight)
                })
                .fold(0.0, f64::max);
            prop_assert!((best_recorded - best).abs() <= 1e-9 * best.max(1.0), "{best_recorded} vs {best}");
        }
    }

    #[test]
    fn meta_405b_split_on_16_ranks() {
        // Llama 3.1 405B: 126 blocks on PP16. Balanced: 126 = 16·7 + 14, the 14 middle ranks
        // take the extra block. Embedding-and-loss: 128 units = 16·8, first and last give one
        // unit to the embedding and the head: the same blocks.
        for rule in [SplitRule::Balanced, SplitRule::EmbeddingAndLoss] {
            let chunks = chunk_blocks(126, 16, 1, rule);
            assert_eq!(chunks.iter().sum::<u32>(), 126);
            assert_eq!(chunks.first(), Some(&7));
            assert_eq!(chunks.last(), Some(&7));
            assert!(chunks[1..15].iter().all(|&c| c == 8));
        }
        // 64 chunks of 2 units: first chunk embedding + 1 block, last 1 block + head.
        let chunks = chunk_blocks(126, 16, 4, SplitRule::EmbeddingAndLoss);
        assert_eq!(chunks.len(), 64);
        assert_eq!((chunks[0], chunks[63]), (1, 1));
        let split = StageSplit::of_chunks(SplitRule::EmbeddingAndLoss, &chunks, 16);
        assert_eq!((split.first, split.last, split.heavy), (7, 7, 8));
        // Every middle rank holds the same chunks; rank 1, the earliest, holds the most in flight.
        let (ranks, n) = split.ranks(16);
        assert_eq!(n, 3);
        assert_eq!((ranks[2].rank, ranks[2].blocks), (1, 8));
    }

    #[test]
    fn embedding_and_loss_moves_blocks_off_the_ends() {
        // 80 blocks on 4 ranks: balanced is 20 each; counting the embedding and the head as
        // layers, 82 = 4·20 + 2 and the two extra units go to ranks 2 and 1.
        assert_eq!(chunk_blocks(80, 4, 1, SplitRule::Balanced), vec![20; 4]);
        assert_eq!(
            chunk_blocks(80, 4, 1, SplitRule::EmbeddingAndLoss),
            vec![19, 21, 21, 19]
        );
        // DeepSeek-V3: 61 blocks on 16 ranks.
        let balanced = chunk_blocks(61, 16, 1, SplitRule::Balanced);
        assert_eq!(balanced.iter().sum::<u32>(), 61);
        assert_eq!(balanced.iter().max(), Some(&4));
        assert_eq!((balanced[0], balanced[15]), (3, 3));
    }

    #[test]
    fn every_split_covers_the_layers_with_chunks_within_one_block() {
        for layers in 1..=70u32 {
            for p in 1..=layers.min(12) {
                for v in 1..=(layers / p).min(4) {
                    let chunks = chunk_blocks(layers, p, v, SplitRule::Balanced);
                    assert_eq!(chunks.iter().sum::<u32>(), layers);
                    let (lo, hi) = (chunks.iter().min(), chunks.iter().max());
                    assert!(hi.zip(lo).is_some_and(|(h, l)| h - l <= 1 && *l >= 1));
                    let split = StageSplit::of_chunks(SplitRule::Balanced, &chunks, p);
                    let mut ranks = vec![0; p as usize];
                    for (c, b) in chunks.iter().enumerate() {
                        ranks[c % p as usize] += b;
                    }
                    assert_eq!(split.max_blocks(), *ranks.iter().max().unwrap());
                }
            }
        }
    }
}
