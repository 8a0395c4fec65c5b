//! How a pipeline's model chunks divide the transformer blocks, also when the layers do not
//! divide evenly, and the few numbers of a split that the cost model and the memory function
//! read ([`StageSplit`]: small and `Copy`, so a [`Layout`](super::Layout) stays hashable).
//!
//! Chunk `c` of the `p · v` chunks (model order) runs on pipeline rank `c mod p` (the interleaved
//! schedule of Narayanan et al. 2021, §2.2); with `v = 1` a rank holds one contiguous chunk.

use crate::types::SplitRule;
use serde::Serialize;

/// The blocks of every chunk of a pipeline of `pipeline · virtual_stages` chunks over `layers`
/// blocks, in model order, under `rule` (a [`SplitRule::Pinned`] split is the spec's own list,
/// so it is read as [`SplitRule::Balanced`] here). The split must pass
/// [`crate::layout_rules::pipeline_split`]; otherwise chunks may be empty.
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

/// What the cost model and the memory function read of a split: the blocks of the first rank
/// (which also holds the embedding), of the last rank (the final norm, the LM head and the loss)
/// and of the two middle ranks that can need the most memory or time.
///
/// Middle ranks hold no embedding or head, so the slowest of them is the one with the most
/// blocks, and the one needing the most memory is one that maximises `blocks · (p − rank)` (its
/// 1F1B stash, `min(p − rank, m)` micro-batches) or holds the most blocks. Under the balanced
/// rules middle ranks hold one of two block counts, and the earliest rank with each count is one
/// of the two recorded here, so the memory of the heaviest rank is exact; for a pinned split of
/// many different counts it is exact whenever there are at least `p` micro-batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct StageSplit {
    /// The rule the split follows.
    pub rule: SplitRule,
    /// Blocks of the first rank, all its chunks (0: not worked out yet, see
    /// [`Layout::stage_split`](super::Layout::stage_split)).
    pub first: u32,
    /// Blocks of the last rank.
    pub last: u32,
    /// The earliest middle rank holding the most blocks (0 without middle ranks).
    pub heavy_rank: u32,
    /// Its blocks.
    pub heavy: u32,
    /// The earliest middle rank with the largest `blocks · (p − rank)` (0 without middle ranks).
    pub stash_rank: u32,
    /// Its blocks.
    pub stash: u32,
}

/// One pipeline rank as the memory function and the step model see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankLoad {
    /// The rank, from 0.
    pub rank: u32,
    /// Transformer blocks it holds, all chunks.
    pub blocks: u32,
    /// Whether it holds the input embedding.
    pub embedding: bool,
    /// Whether it holds the final norm, the LM head and the loss.
    pub head: bool,
}

impl StageSplit {
    /// A split not worked out yet: the layout's balanced split is derived from the model when
    /// asked for.
    pub const UNRESOLVED: StageSplit = StageSplit {
        rule: SplitRule::Balanced,
        first: 0,
        last: 0,
        heavy_rank: 0,
        heavy: 0,
        stash_rank: 0,
        stash: 0,
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
        let mut split = StageSplit {
            rule,
            first: ranks.first().copied().unwrap_or(0),
            last: ranks.last().copied().unwrap_or(0),
            ..StageSplit::UNRESOLVED
        };
        let mut stash_weight = 0u64;
        for (k, &blocks) in ranks.iter().enumerate().take(p as usize - 1).skip(1) {
            let k = k as u32;
            if blocks > split.heavy {
                split.heavy = blocks;
                split.heavy_rank = k;
            }
            let weight = u64::from(blocks) * u64::from(p - k);
            if weight > stash_weight {
                stash_weight = weight;
                split.stash = blocks;
                split.stash_rank = k;
            }
        }
        split
    }

    /// Whether the split has been worked out (every chunk holds a block, so the first rank does).
    pub fn is_resolved(&self) -> bool {
        self.first > 0
    }

    /// The most blocks any rank holds.
    pub fn max_blocks(&self) -> u32 {
        self.first.max(self.last).max(self.heavy)
    }

    /// The ranks that can be the slowest or need the most memory on a pipeline of `pipeline`
    /// ranks: the first, the last, and the two middle ranks above when they hold more blocks than
    /// the first (a middle rank with no more blocks holds no embedding and fewer micro-batches in
    /// flight, so it needs no more time or memory). With one rank it holds every block, the
    /// embedding and the head.
    pub fn ranks(&self, pipeline: u32) -> ([RankLoad; 4], usize) {
        let p = pipeline.max(1);
        let first = RankLoad {
            rank: 0,
            blocks: self.first,
            embedding: true,
            head: p == 1,
        };
        if p == 1 {
            return ([first; 4], 1);
        }
        let middle = |rank: u32, blocks: u32| RankLoad {
            rank,
            blocks,
            embedding: false,
            head: false,
        };
        let last = RankLoad {
            rank: p - 1,
            blocks: self.last,
            embedding: false,
            head: true,
        };
        let heavy = middle(self.heavy_rank, self.heavy);
        let stash = middle(self.stash_rank, self.stash);
        match (
            p > 2 && self.heavy > self.first,
            p > 2 && self.stash > self.first && self.stash_rank != self.heavy_rank,
        ) {
            (true, true) => ([first, last, heavy, stash], 4),
            (true, false) => ([first, last, heavy, heavy], 3),
            (false, true) => ([first, last, stash, stash], 3),
            (false, false) => ([first, last, first, first], 2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!((split.heavy_rank, split.stash_rank), (1, 1));
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
