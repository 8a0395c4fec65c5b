//! The rules a parallel layout must follow to split the model, the sequence and the batch
//! evenly. The checker applies them to the degrees a spec pins, the layout search to every
//! layout it tries: one rule in one place, so `check` never accepts a pinned layout that `plan`
//! then rejects.
//!
//! Each rule takes plain numbers and says which division failed, with the label the plan's
//! rejection reasons print (`heads % tensor`).

use loam_ir::types::SplitRule;

/// A division that leaves a remainder: `value % by != 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Indivisible {
    /// What was divided by what, as the plan prints it (`heads % tensor`).
    pub what: &'static str,
    /// The dividend.
    pub value: u64,
    /// The divisor.
    pub by: u64,
}

impl Indivisible {
    /// The remainder (`value` when `by` is 0).
    pub fn remainder(&self) -> u64 {
        self.value.checked_rem(self.by).unwrap_or(self.value)
    }
}

fn divides(what: &'static str, value: u64, by: u64) -> Result<(), Indivisible> {
    if by != 0 && value.is_multiple_of(by) {
        Ok(())
    } else {
        Err(Indivisible { what, value, by })
    }
}

/// Tensor parallelism splits the attention heads, query and key/value, evenly.
pub fn tensor(heads: u64, kv_heads: u64, tensor: u64) -> Result<(), Indivisible> {
    divides("heads % tensor", heads, tensor)?;
    divides("kv_heads % tensor", kv_heads, tensor)
}

/// A serving engine's tensor parallelism splits the query heads evenly and the key/value heads
/// evenly, or, with more ranks than key/value heads, replicates each key/value head over
/// `tensor / kv_heads` ranks (vLLM, SGLang and TensorRT-LLM all do).
pub fn serving_tensor(heads: u64, kv_heads: u64, tensor: u64) -> Result<(), Indivisible> {
    divides("heads % tensor", heads, tensor)?;
    if tensor > kv_heads {
        divides("tensor % kv_heads", tensor, kv_heads)
    } else {
        divides("kv_heads % tensor", kv_heads, tensor)
    }
}

/// Context parallelism splits the sequence into `2 · context` equal chunks, two per rank, so
/// causal attention's work is balanced over the ranks.
pub fn context(seq_len: u64, context: u64) -> Result<(), Indivisible> {
    match context {
        0 => Err(Indivisible {
            what: "seq_len % (2 · context)",
            value: seq_len,
            by: 0,
        }),
        1 => Ok(()),
        c => divides("seq_len % (2 · context)", seq_len, 2 * c),
    }
}

/// Why a pipeline split cannot work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SplitProblem {
    /// More chunks than the rule can fill: `layers ≥ p·v` for a balanced split (a block per
    /// chunk); when the embedding and the loss count as layers, `layers + 2 ≥ p·v` (a unit per
    /// chunk, so the first chunk may hold the embedding alone and the last the head alone, as in
    /// Llama 3.1 405B's 126 + 2 = 128 chunks on 16 ranks × 8) and, without interleaving, `layers +
    /// 2 ≥ 2·p` so the first and last ranks still hold a block.
    TooManyChunks {
        /// `pipeline · virtual_stages`.
        chunks: u64,
        /// Transformer blocks.
        layers: u64,
        /// The rule.
        rule: SplitRule,
    },
    /// A pinned split lists another number of chunks than `pipeline · virtual_stages`.
    PinnedLength {
        /// Entries listed.
        found: u64,
        /// `pipeline · virtual_stages`.
        expected: u64,
    },
    /// A pinned split's blocks do not add up to the layers.
    PinnedSum {
        /// Their sum.
        found: u64,
        /// The layers.
        expected: u64,
    },
    /// A pinned chunk holds no block.
    EmptyChunk {
        /// Its position in the list, from 0.
        index: u64,
    },
}

/// A pipeline of `pipeline × virtual_stages` chunks can split `layers` blocks under `rule`,
/// every chunk holding at least one block; a pinned split (`pinned`, blocks per chunk in model
/// order) lists every chunk and covers every block. Any layer count works over any pipeline
/// degree that leaves every chunk a block (the split is uneven when they do not divide).
pub fn pipeline_split(
    layers: u64,
    pipeline: u64,
    virtual_stages: u64,
    rule: SplitRule,
    pinned: Option<&[u64]>,
) -> Result<(), SplitProblem> {
    let chunks = pipeline.saturating_mul(virtual_stages.max(1));
    if let Some(list) = pinned {
        if list.len() as u64 != chunks {
            return Err(SplitProblem::PinnedLength {
                found: list.len() as u64,
                expected: chunks,
            });
        }
        if let Some(index) = list.iter().position(|&b| b == 0) {
            return Err(SplitProblem::EmptyChunk {
                index: index as u64,
            });
        }
        let sum = list.iter().fold(0u64, |a, &b| a.saturating_add(b));
        if sum != layers {
            return Err(SplitProblem::PinnedSum {
                found: sum,
                expected: layers,
            });
        }
        return Ok(());
    }
    let fits = match rule {
        SplitRule::EmbeddingAndLoss if virtual_stages <= 1 => {
            layers + 2 >= chunks.saturating_mul(2)
        }
        SplitRule::EmbeddingAndLoss => layers + 2 >= chunks,
        SplitRule::Balanced | SplitRule::Pinned => layers >= chunks,
    };
    if chunks == 0 || !fits {
        return Err(SplitProblem::TooManyChunks {
            chunks,
            layers,
            rule,
        });
    }
    Ok(())
}

/// Every data-parallel replica gets whole sequences.
pub fn data(global_batch: u64, data: u64) -> Result<(), Indivisible> {
    divides("global_batch % data", global_batch, data)
}

/// Expert parallelism is folded onto the tensor × context × data grid (Megatron-Core MoE
/// parallel folding, Liu et al. 2025): the expert degree divides the ranks of that grid, `grid =
/// tensor · context · data`, and the experts, so every rank holds as many.
pub fn expert(grid: u64, experts: u64, expert: u64) -> Result<(), Indivisible> {
    if expert != 0 && grid.is_multiple_of(expert) && experts.max(1).is_multiple_of(expert) {
        Ok(())
    } else {
        Err(Indivisible {
            what: "(tensor · context · data) % expert and experts % expert",
            value: grid,
            by: expert,
        })
    }
}

/// Every data-parallel rank runs whole micro-batches.
pub fn micro_batch(global_batch: u64, data: u64, micro_batch: u64) -> Result<(), Indivisible> {
    divides(
        "global_batch % (data · micro_batch)",
        global_batch,
        data.saturating_mul(micro_batch),
    )
}

/// The interleaved schedule runs the micro-batches in rounds of one per stage: with virtual
/// stages, the micro-batches of a step must be a multiple of the pipeline degree.
pub fn interleave(
    micro_batches: u64,
    pipeline: u64,
    virtual_stages: u64,
) -> Result<(), Indivisible> {
    if virtual_stages <= 1 {
        return Ok(());
    }
    divides("micro_batches % pipeline", micro_batches, pipeline)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_name_the_division_that_failed() {
        assert!(tensor(64, 8, 8).is_ok());
        assert_eq!(tensor(64, 8, 16).unwrap_err().what, "kv_heads % tensor");
        assert_eq!(tensor(48, 8, 32).unwrap_err().what, "heads % tensor");
        assert!(context(8192, 1).is_ok());
        assert!(context(8192, 4096).is_ok());
        assert!(context(8192, 8192).is_err());
        assert!(pipeline_split(126, 16, 1, SplitRule::Balanced, None).is_ok());
        assert!(pipeline_split(61, 16, 1, SplitRule::EmbeddingAndLoss, None).is_ok());
        assert!(pipeline_split(126, 64, 2, SplitRule::Balanced, None).is_err());
        // 126 + 2 = 128 units = 64 chunks of 2.
        assert!(pipeline_split(126, 16, 4, SplitRule::EmbeddingAndLoss, None).is_ok());
        // Meta's split: 128 chunks of one unit, the first the embedding alone, the last the head.
        assert!(pipeline_split(126, 16, 8, SplitRule::EmbeddingAndLoss, None).is_ok());
        assert!(pipeline_split(126, 16, 9, SplitRule::EmbeddingAndLoss, None).is_err());
        // Without interleaving the first and last ranks must still hold a block.
        assert!(pipeline_split(126, 64, 1, SplitRule::EmbeddingAndLoss, None).is_ok());
        assert!(pipeline_split(126, 65, 1, SplitRule::EmbeddingAndLoss, None).is_err());
        let pinned = [3, 4, 4, 3];
        assert!(pipeline_split(14, 4, 1, SplitRule::Pinned, Some(&pinned)).is_ok());
        assert_eq!(
            pipeline_split(15, 4, 1, SplitRule::Pinned, Some(&pinned)),
            Err(SplitProblem::PinnedSum {
                found: 14,
                expected: 15
            })
        );
        assert_eq!(
            pipeline_split(14, 2, 1, SplitRule::Pinned, Some(&pinned)),
            Err(SplitProblem::PinnedLength {
                found: 4,
                expected: 2
            })
        );
        assert!(expert(64, 64, 64).is_ok());
        assert!(expert(32, 64, 64).is_err());
        assert!(expert(64, 8, 16).is_err());
        // Qwen3-235B-A22B: TP2 DP16 EP32 (32 ranks, 128 experts); Mixtral-8x22B: TP2 CP8 DP4
        // EP8 (64 ranks, 8 experts): expert degrees above the data degree, folded onto the grid.
        assert!(expert(2 * 16, 128, 32).is_ok());
        assert!(expert(2 * 8 * 4, 8, 8).is_ok());
        assert!(interleave(6, 4, 1).is_ok());
        assert!(interleave(6, 4, 2).is_err());
        assert!(micro_batch(1024, 0, 1).is_err());
    }
}
