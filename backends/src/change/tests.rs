//! Unit tests of the script backends' rules (Slurm, bare metal), on small hand-written scripts.

use crate::Target;
use crate::change::Effect;
use crate::change::testing::{classify, files};

#[test]
fn any_change_to_a_batch_script_is_a_resubmission_but_comments_are_not() {
    let script = "#!/bin/bash\n# Generated from a.loam\n#SBATCH --nodes=2\n#SBATCH --time=1:00:00\nsrun train --tp=8\n";
    let old = files(&[("a/job.sbatch", script)]);
    let new = files(&[("a/job.sbatch", &script.replace("a.loam", "b.loam"))]);
    let verdict = classify(&old, &new, Target::Slurm);
    assert!(verdict.reasons.is_empty(), "{verdict:?}");
    let new = files(&[(
        "a/job.sbatch",
        &script.replace("--nodes=2", "--nodes=4").replace("=8", "=4"),
    )]);
    let verdict = classify(&old, &new, Target::Slurm);
    assert_eq!(
        verdict.forcing().next().unwrap().sentence(),
        "job.sbatch #SBATCH --nodes, line 5 changed (a submitted batch script is fixed: cancel and resubmit)"
    );
}

#[test]
fn bare_metal_relaunches_for_the_launcher_but_not_for_the_plan() {
    let old = files(&[
        ("a/launch.sh", "#!/usr/bin/env bash\nrun --tp=8\n"),
        ("a/hostfile", "h-1 0 8\n"),
        ("a/plan.json", "{\"a\": 1}\n"),
    ]);
    let mut new = old.clone();
    new.insert("a/plan.json".into(), "{\"a\": 2}\n".into());
    let verdict = classify(&old, &new, Target::Baremetal);
    assert!(!verdict.replaces(), "{verdict:?}");
    assert_eq!(verdict.reasons[0].effect, Effect::InPlace);
    new.insert("a/hostfile".into(), "h-1 0 8\nh-2 0 8\n".into());
    let verdict = classify(&old, &new, Target::Baremetal);
    assert_eq!(
        verdict.forcing().next().unwrap().sentence(),
        "hostfile line 2 changed (read when the launch starts: stop and relaunch)"
    );
}
