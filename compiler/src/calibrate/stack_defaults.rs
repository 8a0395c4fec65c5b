//! The pipeline schedule a calibration row's software stack ran when the file leaves it blank:
//! the stack and its version are read from the row's `source`, the schedule from its `notes`,
//! and what the source does not state is that version's documented default, not the search's
//! choice. A run measured what its framework did; a layout loam would have picked instead costs
//! a different run.
//!
//! Only versions whose defaults were read in their own source are known; any other stack or
//! version leaves the blank fields to the search, as the file's README says.

use super::row::Row;

/// What a stack's defaults fill in: the micro-batch, the model chunks per pipeline rank and the
/// blocks of every chunk in model order, with the sentence the calibration table prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StackDefaults {
    /// Sequences per micro-batch.
    pub(super) micro_batch: u32,
    /// Model chunks per pipeline rank.
    pub(super) virtual_stages: u32,
    /// Blocks of each of the `pipeline · virtual_stages` chunks, in model order.
    pub(super) chunks: Vec<u32>,
    /// What was taken, and from where, in a sentence.
    pub(super) text: String,
}

/// The pipeline schedule a row's notes name (`pipeline_split_note: 1F1B`, `Interleaved 1F1B`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NamedSchedule {
    /// One model chunk per rank (`PipelineScheduleSingle` in `torch.distributed.pipelining`).
    OneFOneB,
    /// Several chunks per rank (`ScheduleInterleaved1F1B`, a `PipelineScheduleMulti`).
    Interleaved,
}

impl NamedSchedule {
    /// The schedule the notes name, the more specific name first; `None` when they name none.
    fn of(notes: &str) -> Option<NamedSchedule> {
        let lower = notes.to_ascii_lowercase();
        if lower.contains("interleaved 1f1b") {
            Some(NamedSchedule::Interleaved)
        } else if lower.contains("1f1b") {
            Some(NamedSchedule::OneFOneB)
        } else {
            None
        }
    }
}

/// torchtitan at commit 9dec370 (December 2024), the version of its Llama 3.1 benchmarks.
const TORCHTITAN_9DEC370: &str = "torchtitan 9dec370";

/// The defaults of the row's stack for what the row leaves blank, or `None` when the row states
/// its micro-batch, has no pipeline, names no schedule, or its stack's version is not one whose
/// defaults are known.
pub(super) fn stack_defaults(row: &Row) -> Option<StackDefaults> {
    if row.micro_batch.is_some() || row.pp <= 1 || !row.source.contains(TORCHTITAN_9DEC370) {
        return None;
    }
    let schedule = NamedSchedule::of(row.notes.as_deref().unwrap_or(""))?;
    torchtitan_9dec370(row, schedule)
}

/// torchtitan 9dec370's pipeline defaults (pytorch/torchtitan at 9dec370):
/// - `torchtitan/parallelisms/pipelining_utils.py`, `build_pipeline_schedule`: with
///   `pipeline_parallel_microbatches` unset, the local batch is cut into as many micro-batches
///   as the pipeline degree;
/// - `generate_split_points`: a single-stage schedule builds one stage per rank, a multi-stage
///   one (Interleaved 1F1B) two; the `n` stages over `L` layers take `L / n` each, the first
///   stage the bare quotient, then one extra layer per stage from the second on until the
///   remainder is spent, the last stage what is left;
/// - the local batch is the global batch over the data-parallel (FSDP) degree: context-parallel
///   ranks share their sequences.
///
/// A vpp column above 1 is the file's own figure and wins over the two-stage default.
fn torchtitan_9dec370(row: &Row, schedule: NamedSchedule) -> Option<StackDefaults> {
    let micro_batches = row.pp;
    let local_batch = exact_div(row.global_batch, row.dp.max(1))?;
    let micro_batch = exact_div(local_batch, micro_batches)?;
    let virtual_stages = match schedule {
        NamedSchedule::OneFOneB => 1,
        NamedSchedule::Interleaved if row.vpp > 1 => row.vpp,
        NamedSchedule::Interleaved => 2,
    };
    let chunks = torchtitan_split(row.layers, row.pp.checked_mul(virtual_stages)?)?;
    let name = match schedule {
        NamedSchedule::OneFOneB => "1F1B",
        NamedSchedule::Interleaved => "Interleaved 1F1B",
    };
    let text = format!(
        "{TORCHTITAN_9DEC370} {name}: {micro_batches} micro-batches of {micro_batch} (the \
         pipeline degree), {virtual_stages} stage{} per rank, blocks {}",
        if virtual_stages == 1 { "" } else { "s" },
        runs_text(&chunks),
    );
    Some(StackDefaults {
        micro_batch,
        virtual_stages,
        chunks,
        text,
    })
}

/// `generate_split_points` of torchtitan 9dec370 as blocks per stage; `None` when there are more
/// stages than layers (torchtitan raises there).
fn torchtitan_split(layers: u32, stages: u32) -> Option<Vec<u32>> {
    if stages == 0 || stages > layers {
        return None;
    }
    let base = layers / stages;
    let mut extra = layers % stages;
    let mut chunks = Vec::with_capacity(stages as usize);
    for stage in 0..stages - 1 {
        if stage > 0 && extra > 0 {
            chunks.push(base + 1);
            extra -= 1;
        } else {
            chunks.push(base);
        }
    }
    chunks.push(layers - chunks.iter().sum::<u32>());
    Some(chunks)
}

/// `a / b` when it is a whole number of at least one.
fn exact_div(a: u32, b: u32) -> Option<u32> {
    (b > 0 && a >= b && a.is_multiple_of(b)).then(|| a / b)
}

/// Blocks per stage with runs folded: `7/8×14/7`.
fn runs_text(chunks: &[u32]) -> String {
    chunks
        .chunk_by(|a, b| a == b)
        .map(|run| match run {
            [one] => one.to_string(),
            [first, ..] => format!("{first}×{}", run.len()),
            [] => String::new(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// torchtitan 9dec370's `generate_split_points` worked by hand for Llama 3.1 405B's 126
    /// layers: 8 stages take 15 each with 6 left, the second to seventh stage one more, the
    /// last the remaining 15; 16 stages take 7 with 14 left, stages 1–14 one more, the last 7.
    #[test]
    fn splits_as_torchtitan_generates_its_split_points() {
        assert_eq!(
            torchtitan_split(126, 8).unwrap(),
            [15, 16, 16, 16, 16, 16, 16, 15]
        );
        let sixteen = torchtitan_split(126, 16).unwrap();
        assert_eq!(sixteen.len(), 16);
        assert_eq!((sixteen[0], sixteen[15]), (7, 7));
        assert!(sixteen[1..15].iter().all(|&b| b == 8));
        // Fewer extras than middle stages: the last stage keeps the bare quotient plus nothing.
        assert_eq!(torchtitan_split(10, 4).unwrap(), [2, 3, 3, 2]);
        // Divisible: every stage the same.
        assert_eq!(torchtitan_split(32, 4).unwrap(), [8, 8, 8, 8]);
        assert_eq!(torchtitan_split(4, 8), None);
        assert_eq!(runs_text(&sixteen), "7/8×14/7");
    }

    fn row(notes: &str, source: &str, global_batch: u32, dp: u32, vpp: u32) -> Row {
        Row {
            run_id: "tt_test".into(),
            layers: 126,
            hidden: 16384,
            heads: 128,
            kv_heads: 8,
            ffn: 53248,
            vocab: 128_256,
            mlp: "swiglu".into(),
            seq_len: 8192,
            device: "H100_HBM2e_96GB".into(),
            devices: 512,
            node_nic_gbps: 3200.0,
            precision: "fp8".into(),
            tp: 8,
            pp: 8,
            dp,
            cp: 1,
            vpp,
            zero: 3,
            recompute: Some("full".into()),
            micro_batch: None,
            global_batch,
            measured_tokens_per_s_per_device: 100.0,
            source: source.into(),
            ep: None,
            experts: None,
            top_k: None,
            expert_ffn: None,
            shared_experts: None,
            dense_layers: None,
            dense_ffn: None,
            pipeline_split: Some("uneven_unstated".into()),
            notes: Some(notes.into()),
            ..Row::default()
        }
    }

    const SOURCE: &str = "pytorch/torchtitan@b5bcd76c6:benchmarks/llama3_h100_202412_torchtitan.md \
                          (torchtitan 9dec370, Dec 2024)";

    /// The benchmark's Table 5: local batch 32 (256 over FSDP 8) cut into 8 micro-batches of 4;
    /// Interleaved 1F1B builds two stages per rank.
    #[test]
    fn the_405b_benchmark_runs_torchtitans_defaults() {
        let one = stack_defaults(&row("pipeline_split_note: 1F1B; x", SOURCE, 256, 8, 1)).unwrap();
        assert_eq!((one.micro_batch, one.virtual_stages), (4, 1));
        assert_eq!(one.chunks, [15, 16, 16, 16, 16, 16, 16, 15]);
        assert!(one.text.contains("8 micro-batches of 4"), "{}", one.text);
        let interleaved = stack_defaults(&row(
            "pipeline_split_note: Interleaved 1F1B",
            SOURCE,
            256,
            8,
            1,
        ))
        .unwrap();
        assert_eq!(
            (interleaved.micro_batch, interleaved.virtual_stages),
            (4, 2)
        );
        assert_eq!(interleaved.chunks.len(), 16);
        // Table 6: local batch 8 (16 over FSDP 2), 8 micro-batches of 1.
        let cp = stack_defaults(&row("pipeline_split_note: 1F1B", SOURCE, 16, 2, 1)).unwrap();
        assert_eq!(cp.micro_batch, 1);
        // A stated vpp is the file's own.
        let stated = stack_defaults(&row("Interleaved 1F1B", SOURCE, 256, 8, 4)).unwrap();
        assert_eq!((stated.virtual_stages, stated.chunks.len()), (4, 32));
    }

    #[test]
    fn other_stacks_versions_and_unnamed_schedules_are_left_to_the_search() {
        let megatron = "Narayanan et al., SC21 (Megatron-LM)";
        assert_eq!(stack_defaults(&row("1F1B", megatron, 256, 8, 1)), None);
        let later = "pytorch/torchtitan benchmarks (torchtitan 2f4a1c0, 2025)";
        assert_eq!(stack_defaults(&row("1F1B", later, 256, 8, 1)), None);
        assert_eq!(
            stack_defaults(&row("split not stated", SOURCE, 256, 8, 1)),
            None
        );
        // A batch the micro-batches do not divide is not guessed at.
        assert_eq!(stack_defaults(&row("1F1B", SOURCE, 260, 8, 1)), None);
        let mut stated = row("1F1B", SOURCE, 256, 8, 1);
        stated.micro_batch = Some(2);
        assert_eq!(stack_defaults(&stated), None);
    }
}
