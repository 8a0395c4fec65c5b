//! The recipes seen from specs: the plans the issue named (issue 27: gradients counted at 2 bytes
//! while reduced in fp32), counted at their recipe's 4 bytes, each fit what `usable_memory`
//! leaves or are refused; and the `train` block's overrides reach the recipe, checked in place.

use crate::catalogue::{Catalogue, builtin};
use crate::check::check_file;
use crate::cost::usable_memory;
use crate::plan::plan_job;
use crate::syntax::parse;
use crate::workload::{Layout, ModelDims, StageHolding, TrainSetup, stage_memory};
use loam_ir::plan::{MemoryIr, Plan};
use loam_ir::span::FileId;

/// Bytes in a GiB.
fn gib() -> f64 {
    f64::from(1u32 << 30)
}

fn plan_with(text: &str, catalogue: &Catalogue) -> Plan {
    let parsed = parse(FileId(0), text);
    let job = check_file(&parsed.file.expect("parses")).jobs.remove(0);
    plan_job(&job, "job.loam", catalogue)
}

fn example(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR")))
        .expect("the example is shipped")
}

/// Every group of a feasible `plan` fits its device's usable memory, and where it runs ZeRO 0 or
/// 1 on Megatron-Core's bf16 recipe with every weight training, its gradients take 4 bytes per
/// parameter, twice its 2-byte weights.
fn fits_by_the_recipe(plan: &Plan, catalogue: &Catalogue, full_training: bool) {
    assert!(plan.feasible, "{}: {:?}", plan.job, plan.reasons);
    let estimate = plan.estimate.as_ref().expect("a feasible plan is costed");
    for group in &plan.groups {
        let device = catalogue
            .device(&group.device)
            .expect("planned on a device");
        let usable = usable_memory(&device.figures()) / gib();
        let (total, parts) = match (group.memory_per_device_gib, group.memory_gib) {
            (Some(total), Some(parts)) => (total, parts),
            _ => (
                estimate.memory_per_device_gib,
                estimate.memory_gib.expect("a breakdown"),
            ),
        };
        // The Plan JSON rounds each figure to five significant digits.
        assert!(
            total <= usable + 0.01,
            "{} on {}: {total} GiB of {usable}",
            plan.job,
            group.device
        );
        let zero = group
            .layout
            .as_ref()
            .or(plan.layout.as_ref())
            .map_or(1, |l| l.zero);
        if full_training && zero <= 1 {
            let MemoryIr {
                weights, gradients, ..
            } = parts;
            assert!(
                (gradients - 2.0 * weights).abs() <= 0.01 * gradients,
                "{} on {}: gradients {gradients} GiB, weights {weights} GiB",
                plan.job,
                group.device
            );
        }
    }
}

#[test]
fn the_7b_on_l40s_leaves_the_layout_whose_fp32_gradients_overflow() {
    // examples/interruptible-cost-7b.loam (Qwen2-7B dims) planned TP1 PP2 DP8 ZeRO-1 at 36.5 GiB
    // with 2-byte gradients. Its first rank holds 14 blocks of 3584·(3584 + 2·512 + 3584) +
    // 3·3584·18944 + 2·3584 (norms) = 233.05M parameters and the 152064·3584 = 545.0M embedding: 3.808B. Weights
    // 2 bytes = 7.09 GiB, fp32 gradients 4 bytes = 14.19 GiB, Adam 12/8 = 5.32 GiB: 26.6 GiB of
    // states where there were 19.5; with the 17 GiB of activations (8.5 running, 8.5 stashed,
    // unchanged) 43.6 GiB, above the 43.05 GiB an L40S leaves (usable_tests).
    let catalogue = builtin();
    let model = ModelDims::dense(
        28,
        3584,
        18944,
        28,
        4,
        152_064,
        4096,
        loam_ir::types::Mlp::Swiglu,
    );
    let setup = TrainSetup {
        global_batch: 512,
        precision: loam_ir::types::Precision::Bf16,
        optimizer: loam_ir::types::Optimizer::Adamw,
        tokens: 200e9,
        flash_attention: true,
        expert_dispatch: Default::default(),
        expert_overlap: Default::default(),
        states: crate::workload::StateOverrides::NONE,
    };
    let layout = Layout {
        pipeline: 2,
        data: 8,
        zero: 1,
        ..Layout::single()
    };
    let first = StageHolding {
        blocks: 14.0,
        embedding: true,
        head: false,
        in_flight: layout.in_flight(0, layout.micro_batches(512)),
    };
    let mem = stage_memory(&model, &setup, &layout, &first);
    // Each block also has its two norms (2·3584).
    let block = 3584.0 * (3584.0 + 2.0 * 512.0 + 3584.0) + 3.0 * 3584.0 * 18944.0 + 2.0 * 3584.0;
    let params = 14.0 * block + 152_064.0 * 3584.0;
    assert!(
        (mem.weights - 2.0 * params).abs() < 1e-9 * mem.weights,
        "{} vs {}",
        mem.weights / 2.0,
        params
    );
    assert!((mem.gradients - 4.0 * params).abs() < 1e-9 * mem.gradients);
    let l40s = catalogue.device("L40S").expect("shipped").figures();
    assert!(mem.total > usable_memory(&l40s), "{}", mem.total / gib());
    // The planner keeps a layout that fits instead: another one, or this one replaying some
    // blocks whole (partial recomputation).
    let plan = plan_with(&example("interruptible-cost-7b.loam"), &catalogue);
    fits_by_the_recipe(&plan, &catalogue, true);
    let chosen = plan.layout.expect("a plan");
    assert!(
        chosen.pipeline != 2 || chosen.recompute == loam_ir::types::Recompute::Full,
        "{chosen:?}"
    );
}

#[test]
fn the_h800_stage_of_the_910b_pipeline_fits_with_fp32_gradients() {
    let catalogue = builtin();
    let plan = plan_with(&example("hetero-70b-guiyang.loam"), &catalogue);
    fits_by_the_recipe(&plan, &catalogue, true);
    assert!(plan.groups.iter().any(|g| g.device == "H800_SXM"));
}

#[test]
fn the_gaudi2_70b_lora_fits_its_96_gib() {
    // LoRA trains only the adapters: their fp32 gradients are a few hundred MiB; the frozen
    // base keeps its bf16 copy alone.
    let catalogue = builtin();
    let plan = plan_with(&example("llama2-70b-lora-gaudi2.loam"), &catalogue);
    fits_by_the_recipe(&plan, &catalogue, false);
}

/// MPT-7B as llm-foundry benchmarks it, pre-trained in bf16 on one node of 8 A100-40GB (the
/// plausibility tests' job).
const MPT_7B_ON_A100_40GB: &str = r#"job "mpt-7b" {
  tenant = "nlp"
  model {
    arch    = dense
    mlp     = gelu
    layers  = 32
    hidden  = 4096
    ffn     = 16384
    heads   = 32
    vocab   = 50368
    seq_len = 2048
  }
  train {
    tokens       = 1B
    global_batch = 48
    precision    = bf16
  }
  resources {
    pool        = lab
    devices     = [A100_SXM_40GB]
    max_devices = 8
  }
}
"#;

#[test]
fn mpt_7b_on_a100_40gb_fits_by_the_recipe() {
    // No shipped pool has A100-40GB: the lab pool with its H100 nodes swapped for them.
    let (_, lab) = crate::catalogue::builtin_sources()
        .into_iter()
        .find(|(path, _)| *path == "specs/pools/lab.yaml")
        .expect("the lab pool is shipped");
    let text = lab.replace("H100_SXM", "A100_SXM_40GB");
    let (catalogue, diagnostics) =
        crate::catalogue::builtin_devices_with_pool("specs/pools/lab.yaml", &text);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let catalogue = catalogue.expect("loads");
    let plan = plan_with(MPT_7B_ON_A100_40GB, &catalogue);
    fits_by_the_recipe(&plan, &catalogue, true);
}

/// A job of `train` lines in a minimal spec.
fn spec_with_train(train: &str) -> String {
    format!(
        "job \"j\" {{\n  tenant = \"nlp\"\n  model {{\n    layers = 2\n    hidden = 256\n    \
         ffn = 1024\n    heads = 4\n    vocab = 32000\n    seq_len = 512\n  }}\n  train {{\n    \
         tokens = 1B\n    global_batch = 32\n    precision = fp8\n{train}  }}\n  resources {{\n    \
         pool = lab\n  }}\n}}\n"
    )
}

#[test]
fn the_train_block_overrides_the_recipe_and_a_misspelt_format_is_refused_at_its_place() {
    let text = spec_with_train("    gradients = bf16\n    moments = bf16\n");
    let parsed = parse(FileId(0), &text);
    let checked = check_file(&parsed.file.expect("parses"));
    assert!(checked.diagnostics.is_empty(), "{:?}", checked.diagnostics);
    let setup = crate::check::train_setup(&checked.jobs[0]);
    let recipe = crate::workload::StateRecipe::for_setup(&setup, 1);
    // fp8 under Megatron-Core: 1-byte weights, fp32 master; the spec's bf16 gradients (kept and
    // reduced) and bf16 moments: 1 + 2 + (4 + 2·2) = 11 bytes per parameter unsharded.
    assert_eq!(
        (recipe.weights, recipe.gradients, recipe.reduced_gradients),
        (1.0, 2.0, 2.0)
    );
    assert_eq!(
        recipe.optimizer_bytes(loam_ir::types::Optimizer::Adamw),
        8.0
    );
    assert_eq!(
        crate::workload::StateRecipe::reduced_gradient_bytes(&setup),
        2.0
    );

    refused_at_its_place("    master_weights = fp64\n", "fp64", "fp32");
}

/// A `train` block with `line` is refused with L1009 on `word`, its help naming `known`.
fn refused_at_its_place(line: &str, word: &str, known: &str) {
    let text = spec_with_train(line);
    let parsed = parse(FileId(0), &text);
    let checked = check_file(&parsed.file.expect("parses"));
    let found = checked
        .diagnostics
        .iter()
        .find(|d| d.code.as_str() == "L1009")
        .expect("an unknown keyword");
    let span = found.span.expect("located");
    let at = text.find(word).expect("written") as u32;
    assert_eq!((span.start, span.end), (at, at + word.len() as u32));
    assert!(
        found.help.as_deref().unwrap_or("").contains(known),
        "{found:?}"
    );
}

#[test]
fn the_train_block_names_its_framework_and_the_recipe_follows() {
    // DeepSpeed ZeRO keeps 16-bit gradients and reduces them in the model's dtype (its
    // `communication_data_type` and `grad_accum_dtype` defaults), with fp32 master weights and
    // Adam moments: under fp8 training its 16-bit weights are bf16, so 2 + 2 + 12 bytes per
    // parameter (the ZeRO paper's 16), where Megatron-Core keeps fp32 `main_grad`.
    let text = spec_with_train("    framework = deepspeed\n");
    let parsed = parse(FileId(0), &text);
    let checked = check_file(&parsed.file.expect("parses"));
    assert!(checked.diagnostics.is_empty(), "{:?}", checked.diagnostics);
    let setup = crate::check::train_setup(&checked.jobs[0]);
    for zero in 0..=3 {
        let recipe = crate::workload::StateRecipe::for_setup(&setup, zero);
        assert_eq!(recipe.framework, crate::workload::Framework::DeepSpeed);
        assert_eq!(
            (recipe.weights, recipe.gradients, recipe.reduced_gradients),
            (2.0, 2.0, 2.0)
        );
        assert_eq!(
            recipe.optimizer_bytes(loam_ir::types::Optimizer::Adamw),
            12.0
        );
    }
    // Time reads the same recipe: the data-parallel reduction moves 2 bytes per gradient.
    assert_eq!(
        crate::workload::StateRecipe::reduced_gradient_bytes(&setup),
        2.0
    );
    // A framework loam does not know is refused at its place, naming the ones it knows.
    refused_at_its_place("    framework = jax\n", "jax", "deepspeed");
}
