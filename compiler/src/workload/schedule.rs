//! How many blocks' activations a pipeline rank holds at its peak, read off the order in which
//! the pipeline schedule runs its forwards and backwards (1F1B and Megatron's interleaved 1F1B).
//!
//! A rank keeps the activations of every (chunk, micro-batch) whose forward has run and whose
//! backward has not. Megatron-Core's schedules (NVIDIA/Megatron-LM,
//! `megatron/core/pipeline_parallel/schedules.py`) run on rank `r` of `p`:
//!
//! - 1F1B (`forward_backward_pipelining_without_interleaving`): `min(p − r − 1, m)` warm-up
//!   forwards, then one forward and one backward at a time;
//! - interleaved (`forward_backward_pipelining_with_interleaving`, `v` chunks per rank):
//!   `2(p − r − 1) + (v − 1)·p` warm-up forwards (at most all `m·v`), then one forward and one
//!   backward at a time. Forwards take the rank's chunks in groups of `p` micro-batches (chunk 0 for
//!   micro-batches 0..p, chunk 1 for the same, …), backwards the chunks in reverse
//!   (`get_model_chunk_id`), so with chunks of `b` blocks each the peak is
//!   `min(2(p − r − 1) + (v − 1)·p + 1, m·v)` chunk activations.
//!
//! Chunks of unequal blocks (a pinned split, or the embedding-and-loss rule's ends) make the peak
//! depend on which chunks are in flight, so it is computed from the order itself: the live
//! blocks after the `i`-th steady forward are `F(W + 1 + i) − B(i)` (prefix sums of the forward
//! and backward orders). Both orders repeat every `p·v` steps with the same sum, so one period
//! of steady steps holds the peak: `O(p·v)` per rank.

/// Forwards the schedule runs on rank `rank` of `pipeline` before its first backward, of
/// `total` (micro-batches × chunks).
pub fn warmup_forwards(pipeline: u32, chunks: u32, rank: u32, total: u64) -> u64 {
    let p = u64::from(pipeline.max(1));
    let v = u64::from(chunks.max(1));
    let r = u64::from(rank).min(p - 1);
    let warmup = if v == 1 {
        p - r - 1
    } else {
        2 * (p - r - 1) + (v - 1) * p
    };
    warmup.min(total)
}

/// The rank-local chunk the `k`-th forward of an interleaved rank runs.
fn forward_chunk(k: u64, p: u64, v: u64) -> u64 {
    (k % (p * v)) / p
}

/// The rank-local chunk the `k`-th backward of an interleaved rank runs: the chunks in reverse.
fn backward_chunk(k: u64, p: u64, v: u64) -> u64 {
    v - 1 - forward_chunk(k, p, v)
}

/// Block-micro-batches (blocks of one micro-batch) rank `rank` of `pipeline` holds activations of
/// at its peak, when its chunks hold `local` blocks each (model order, one entry per virtual
/// stage) and a step runs `micro_batches` micro-batches. The running micro-batch counts.
///
/// Interleaving needs `micro_batches` to be a multiple of `pipeline`
/// ([`crate::workload::layout::rules::interleave`]); the orders repeat every `p·v` steps only then.
pub fn peak_live_blocks(local: &[u32], pipeline: u32, rank: u32, micro_batches: u64) -> u64 {
    let m = micro_batches.max(1);
    let v = local.len().max(1) as u64;
    let p = u64::from(pipeline.max(1));
    let blocks = |chunk: u64| -> u64 {
        usize::try_from(chunk)
            .ok()
            .and_then(|c| local.get(c))
            .map_or(0, |&b| u64::from(b))
    };
    let all: u64 = local.iter().map(|&b| u64::from(b)).sum();
    let total = m.saturating_mul(v);
    let warmup = warmup_forwards(pipeline, v as u32, rank, total);
    if warmup >= total {
        return m.saturating_mul(all);
    }
    if v == 1 {
        return (warmup + 1).saturating_mul(all);
    }
    // Live blocks after the warm-up and the first steady forward.
    let mut live: u64 = (0..=warmup).map(|k| blocks(forward_chunk(k, p, v))).sum();
    let mut peak = live;
    let steady = (total - warmup).min(p * v);
    for i in 1..steady {
        live = (live + blocks(forward_chunk(warmup + i, p, v)))
            .saturating_sub(blocks(backward_chunk(i - 1, p, v)));
        peak = peak.max(live);
    }
    peak
}

/// [`peak_live_blocks`] with `p`, `2p` and `3p` micro-batches (every longer step holds the same
/// peak as `3p`: one period of steady steps fits after the warm-up), in `O(v)`: between the
/// steps where the forward or the backward order moves to another chunk (every `p` steps each)
/// the live blocks change by the same amount every step, so their peak over a stretch of steady
/// steps is at one of those steps or at the stretch's ends. `local` has more than one chunk
/// (interleaving).
pub fn peaks_by_rounds(local: &[u32], pipeline: u32, rank: u32) -> [u64; 3] {
    let v = local.len().max(1) as u64;
    let p = u64::from(pipeline.max(1));
    let period = p * v;
    let all: u64 = local.iter().map(|&b| u64::from(b)).sum();
    let warmup = warmup_forwards(pipeline, v as u32, rank, u64::MAX);
    // Chunks of `b` blocks each: the first `n` forwards (or backwards) have run `n · b` blocks,
    // so every steady step holds the warm-up's forwards and one more, `(warmup + 1) · b` (a
    // split of 80,000 blocks has thousands of chunks per rank, most of them equal).
    if let Some((&b, rest)) = local.split_first()
        && rest.iter().all(|&c| c == b)
    {
        return [1u64, 2, 3].map(|rounds| {
            if rounds * period > warmup {
                (warmup + 1) * u64::from(b)
            } else {
                rounds * p * all
            }
        });
    }
    // Blocks of the chunks before each chunk, in forward order and in the backwards' reverse.
    let before = |order: &mut dyn Iterator<Item = &u32>| -> Vec<u64> {
        let mut sum = 0u64;
        order
            .map(|&b| {
                let at = sum;
                sum += u64::from(b);
                at
            })
            .collect()
    };
    let forward = before(&mut local.iter());
    let backward = before(&mut local.iter().rev());
    // Blocks the first `n` forwards (or backwards) have run.
    let prefix = |n: u64, reverse: bool| -> u64 {
        let (rounds, rest) = (n / period, n % period);
        let (chunk, into) = (rest / p, rest % p);
        let (cumulative, c) = if reverse {
            (&backward, v - 1 - chunk)
        } else {
            (&forward, chunk)
        };
        let index = |c: u64| usize::try_from(c).unwrap_or(usize::MAX);
        let whole = cumulative.get(index(chunk)).copied().unwrap_or(0);
        let at = local.get(index(c)).map_or(0, |&b| u64::from(b));
        rounds * p * all + p * whole + into * at
    };
    // Live blocks after the `i`-th steady forward (before its backward).
    let live = |i: u64| prefix(warmup + 1 + i, false) - prefix(i, true);
    [1u64, 2, 3].map(|rounds| {
        let total = rounds * period;
        let Some(steady) = total.checked_sub(warmup).filter(|&n| n > 0) else {
            // Every forward of the step is live at once.
            return rounds * p * all;
        };
        let steady = steady.min(period);
        let forward_turn = (p - (warmup + 1) % p) % p;
        let turns = (0..=v).flat_map(|j| [j * p, forward_turn + j * p]);
        turns
            .chain([0, steady - 1])
            .filter(|&i| i < steady)
            .map(live)
            .max()
            .unwrap_or(0)
    })
}

/// The blocks of each local chunk of `rank` on a pipeline of `pipeline` ranks whose chunks hold
/// `chunks` blocks each (model order): chunk `c` runs on rank `c mod p`.
pub fn local_chunks(chunks: &[u32], pipeline: u32, rank: u32) -> Vec<u32> {
    let p = pipeline.max(1) as usize;
    chunks
        .iter()
        .skip(rank as usize)
        .step_by(p)
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The schedule run op by op, as Megatron-Core's loop runs it on one rank: every forward and
    /// backward of the step as a (chunk, micro-batch) pair in the order the rank runs them, the
    /// live set kept as a list. Written without the periodicity [`peak_live_blocks`] relies on.
    fn simulate(local: &[u32], p: u64, r: u64, m: u64) -> u64 {
        let v = local.len() as u64;
        let total = m * v;
        // Micro-batch of the k-th forward/backward: groups of p per chunk, chunks in turn.
        let micro = |k: u64| (k / (p * v)) * p + k % p;
        let forwards: Vec<(u64, u64)> = (0..total)
            .map(|k| {
                let chunk = if v == 1 { 0 } else { (k % (p * v)) / p };
                (chunk, if v == 1 { k } else { micro(k) })
            })
            .collect();
        let backwards: Vec<(u64, u64)> = (0..total)
            .map(|k| {
                let chunk = if v == 1 { 0 } else { v - 1 - (k % (p * v)) / p };
                (chunk, if v == 1 { k } else { micro(k) })
            })
            .collect();
        let warmup = if v == 1 {
            (p - r - 1).min(m)
        } else {
            (2 * (p - r - 1) + (v - 1) * p).min(total)
        };
        let mut live: Vec<(u64, u64)> = Vec::new();
        let mut peak = 0;
        let weight = |set: &Vec<(u64, u64)>| -> u64 {
            set.iter().map(|&(c, _)| u64::from(local[c as usize])).sum()
        };
        let (mut f, mut b) = (0usize, 0usize);
        for _ in 0..warmup {
            live.push(forwards[f]);
            f += 1;
            peak = peak.max(weight(&live));
        }
        for _ in warmup..total {
            live.push(forwards[f]);
            f += 1;
            peak = peak.max(weight(&live));
            let done = backwards[b];
            b += 1;
            let at = live.iter().position(|x| *x == done).expect("forward ran");
            live.remove(at);
        }
        while b < backwards.len() {
            let done = backwards[b];
            b += 1;
            let at = live.iter().position(|x| *x == done).expect("forward ran");
            live.remove(at);
        }
        assert!(live.is_empty());
        peak
    }

    #[test]
    fn meta_405b_first_rank_holds_sixteen_micro_batches_of_its_blocks() {
        // Llama 3.1 405B as Meta trained it: PP16, v = 8, 16 micro-batches per step (2,048
        // sequences of 8,192 tokens over DP128 at micro-batch 1). Rank 0 warms up with
        // 2·15 + 7·16 = 142 forwards; with the steady one, 143 chunk activations, but the step has
        // only 16·8 = 128: every forward of the step is live at once. Its chunks hold the
        // embedding alone (0 blocks) and seven of one block: 16 × 7 = 112 block-micro-batches,
        // where 1F1B's `min(p, m) · (1 + (p−1)/(p·v))` gives 16 × 1.117 × 7 = 125.1.
        let local = [0, 1, 1, 1, 1, 1, 1, 1];
        assert_eq!(peak_live_blocks(&local, 16, 0, 16), 112);
        // Rank 8 (eight blocks): 2·7 + 112 + 1 = 127 ≤ 128, so 127 chunk activations of one block.
        assert_eq!(peak_live_blocks(&[1; 8], 16, 8, 16), 127);
    }

    #[test]
    fn heavy_last_rank_of_a_pinned_split() {
        // stages = [5,5,5,20,5,5,5,30] on PP4 × v2: rank 3 holds chunks 3 (20 blocks) and 7
        // (30). Warm-up (v − 1)·p = 4 forwards of chunk 20 (micro-batches 0–3), the steady forward
        // runs chunk 30 on micro-batch 0: 4·20 + 30 = 110 blocks live, before any backward. Each
        // steady step then adds and drops a chunk of the same size until the next group, where a
        // 20 enters as a 30 leaves.
        assert_eq!(peak_live_blocks(&[20, 30], 4, 3, 8), 110);
        // Rank 0 (5 + 5): warm-up 2·3 + 4 = 10 forwards, 11 live of 16: 55.
        assert_eq!(peak_live_blocks(&[5, 5], 4, 0, 8), 55);
    }

    #[test]
    fn one_f_one_b_keeps_p_minus_rank() {
        assert_eq!(peak_live_blocks(&[10], 8, 0, 32), 80);
        assert_eq!(peak_live_blocks(&[10], 8, 7, 32), 10);
        // Fewer micro-batches than ranks: all of them.
        assert_eq!(peak_live_blocks(&[10], 8, 0, 3), 30);
    }

    #[test]
    fn local_chunks_take_every_pth_chunk() {
        let chunks = [5, 5, 5, 20, 5, 5, 5, 30];
        assert_eq!(local_chunks(&chunks, 4, 3), vec![20, 30]);
        assert_eq!(local_chunks(&chunks, 4, 0), vec![5, 5]);
    }

    proptest! {
        #[test]
        fn peak_equals_the_simulated_schedule(
            p in 1u64..7,
            v in 1usize..5,
            rounds in 1u64..5,
            extra in 0u64..4,
            seed in proptest::collection::vec(0u32..9, 16),
        ) {
            // Interleaving needs m a multiple of p; 1F1B takes any m.
            let m = if v > 1 { rounds * p } else { rounds * p + extra };
            for r in 0..p {
                let local: Vec<u32> = (0..v).map(|j| seed[(j + r as usize) % 16]).collect();
                prop_assert_eq!(
                    peak_live_blocks(&local, p as u32, r as u32, m),
                    simulate(&local, p, r, m)
                );
                if v > 1 {
                    let by_rounds = peaks_by_rounds(&local, p as u32, r as u32);
                    for (k, peak) in by_rounds.iter().enumerate() {
                        let m = (k as u64 + 1) * p;
                        prop_assert_eq!(*peak, simulate(&local, p, r, m));
                    }
                    // Longer steps hold the peak of three rounds.
                    prop_assert_eq!(by_rounds[2], simulate(&local, p, r, 5 * p));
                    // Equal chunks take the closed form.
                    let equal = vec![seed[r as usize % 16]; v];
                    let by_rounds = peaks_by_rounds(&equal, p as u32, r as u32);
                    for (k, peak) in by_rounds.iter().enumerate() {
                        let m = (k as u64 + 1) * p;
                        prop_assert_eq!(*peak, simulate(&equal, p, r, m));
                    }
                }
                // Equal chunks: Megatron's count of chunk activations.
                let uniform = vec![3u32; v];
                let chunks = (2 * (p - r - 1) + (v as u64 - 1) * p + 1).min(m * v as u64);
                let expected = if v == 1 { (p - r).min(m) * 3 } else { chunks * 3 };
                prop_assert_eq!(peak_live_blocks(&uniform, p as u32, r as u32, m), expected);
            }
        }
    }
}
