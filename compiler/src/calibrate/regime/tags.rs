//! The regimes of one calibration row, read from its own cells: the training file's columns, the
//! heterogeneous file's and the serving file's. The software stack is what the row's `source`
//! (training) or `framework` (heterogeneous) text names, since neither file has a stack column
//! yet; a row that names none is `unstated`, never guessed from the layout.

use super::{Dimension, Regime, scale_band, sequence_band};
use crate::calibrate::cells::Cells;
use crate::calibrate::hetero_row::{catalogue_id, parse_gpu_mix, parse_precision};

/// Stack names a row's text may carry, most specific first: the first one found names the
/// stack (`Megatron-Bridge` before `NeMo`, NeMo AutoModel before both, the Megatron-DeepSpeed
/// fork Sailor runs before its own name).
const STACKS: [(&str, &str); 14] = [
    ("automodel", "NeMo AutoModel"),
    ("megatron-bridge", "Megatron-Bridge"),
    ("nemo", "NeMo"),
    ("torchtitan", "torchtitan"),
    ("llm-foundry", "llm-foundry"),
    ("megatron-deepspeed", "Megatron-DeepSpeed"),
    ("deepspeed", "DeepSpeed"),
    ("fsdp", "PyTorch FSDP"),
    ("megatron", "Megatron-LM"),
    ("synapseai", "SynapseAI"),
    ("dtfm", "DTFM"),
    ("hetu", "Hetu"),
    ("hivemind", "Hivemind"),
    ("deepseek", "DeepSeek (in-house)"),
];

/// The stack `text` names, or `unstated`.
fn stack(text: &str) -> Regime {
    let lower = text.to_ascii_lowercase();
    let name = STACKS
        .iter()
        .find(|(word, _)| lower.contains(word))
        .map_or("unstated", |(_, name)| name);
    Regime::named(Dimension::Stack, name)
}

/// The family of an id: its prefix before the first `_`.
fn family(id: &str) -> Regime {
    Regime::named(Dimension::Family, id.split('_').next().unwrap_or(id))
}

/// The regimes of a row of the training file.
pub fn training_tags(row: &Cells) -> Vec<Regime> {
    let mut tags = Vec::new();
    if let Some(seq) = row.count("seq_len") {
        tags.push(sequence_band(seq));
    }
    // `count` reads 0 as blank, and ZeRO 0 is a stage.
    if let Ok(zero) = row.text("zero").parse::<u8>() {
        tags.push(Regime {
            dimension: Dimension::Zero,
            order: u64::from(zero),
            label: format!("ZeRO-{zero}"),
        });
    }
    let moe = row.count("experts").is_some_and(|e| e > 1);
    tags.push(Regime::named(
        Dimension::Moe,
        if moe { "MoE" } else { "dense" },
    ));
    if !row.text("precision").is_empty() {
        tags.push(Regime::named(Dimension::Precision, row.text("precision")));
    }
    if !row.text("device").is_empty() {
        tags.push(Regime::named(Dimension::Device, row.text("device")));
    }
    if let Some(devices) = row.count("devices") {
        tags.push(scale_band(devices));
    }
    tags.push(stack(row.text("source")));
    tags.push(family(row.text("run_id")));
    tags
}

/// The regimes of a row of the heterogeneous-run file; a run over several device types counts
/// under each of them.
pub fn hetero_tags(row: &Cells) -> Vec<Regime> {
    let mut tags = Vec::new();
    if let Some(seq) = row.count("seq_len") {
        tags.push(sequence_band(seq));
    }
    tags.push(Regime::named(Dimension::Moe, "dense"));
    if let Some((precision, _)) = parse_precision(row.text("precision")) {
        tags.push(Regime::named(Dimension::Precision, precision.as_str()));
    }
    if let Ok(mix) = parse_gpu_mix(row.text("gpu_mix")) {
        let mut ids: Vec<&str> = mix
            .devices
            .iter()
            .map(|(_, name)| catalogue_id(name).unwrap_or(name))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        tags.extend(
            ids.into_iter()
                .map(|id| Regime::named(Dimension::Device, id)),
        );
    }
    if let Some(devices) = row.count("num_gpus") {
        tags.push(scale_band(devices));
    }
    tags.push(stack(row.text("framework")));
    tags.push(family(row.text("point_id")));
    tags
}

/// The regimes of a row of the serving file: prompt length, precision, the device as costed,
/// scale, the engine as costed, the family (`group`).
pub fn serving_tags(row: &Cells, device: Option<&str>, engine: Option<String>) -> Vec<Regime> {
    let mut tags = Vec::new();
    if let Some(input) = row.count("input_len") {
        tags.push(sequence_band(input));
    }
    if !row.text("precision").is_empty() {
        tags.push(Regime::named(Dimension::Precision, row.text("precision")));
    }
    if let Some(device) = device {
        tags.push(Regime::named(Dimension::Device, device));
    }
    if let Some(devices) = row.count("device_count") {
        tags.push(scale_band(devices));
    }
    tags.push(Regime::named(
        Dimension::Stack,
        engine.unwrap_or_else(|| "unstated".into()),
    ));
    let group = row.text("group");
    tags.push(Regime::named(
        Dimension::Family,
        if group.is_empty() { "unstated" } else { group },
    ));
    tags
}
