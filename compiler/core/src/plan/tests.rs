//! Planner tests on the shipped examples and the built-in catalogue.

use super::ir::Plan;
use super::{plan_job, stage_ranges};
use crate::catalogue::builtin;
use crate::check::{Job, check_file};
use crate::span::FileId;
use crate::syntax::parse;

fn jobs(text: &str) -> Vec<Job> {
    let parsed = parse(FileId(0), text);
    check_file(&parsed.file.unwrap()).jobs
}

fn plan_text(text: &str) -> Plan {
    let job = jobs(text).remove(0);
    plan_job(&job, "job.loam", &builtin()).0
}

fn example(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../examples/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn stage_ranges_cover_every_layer_once() {
    for layers in 1..40u64 {
        for stages in 1..=layers {
            let ranges = stage_ranges(layers, stages);
            assert_eq!(ranges.len() as u64, stages);
            let mut next = 0;
            for [a, b] in &ranges {
                assert_eq!(*a, next);
                assert!(b > a);
                next = *b;
            }
            assert_eq!(next, layers);
            let sizes: Vec<u64> = ranges.iter().map(|[a, b]| b - a).collect();
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        }
    }
}

#[test]
fn every_example_plans_deterministically() {
    for name in [
        "llama3-70b-pretrain.loam",
        "llama3-8b-finetune.loam",
        "pinned-layout-13b.loam",
    ] {
        let first = plan_text(&example(name));
        assert!(first.feasible, "{name}: {:?}", first.reasons);
        assert_eq!(first, plan_text(&example(name)));
    }
}

#[test]
fn pinned_fields_are_kept() {
    let plan = plan_text(&example("pinned-layout-13b.loam"));
    let layout = plan.layout.unwrap();
    assert_eq!((layout.tensor, layout.pipeline, layout.data), (4, 2, 16));
}
