//! The simulator's Kueue preemption against the admission preview on the fixture pool `adm`
//! (`tests/cases/admission/`: 16 H100 in one node group; nlp guaranteed 8 and elastic 8,
//! research guaranteed 8): a borrower and a reclaim, emitted and applied as a platform team
//! would, the jobs arriving together or one after the other.

use super::{apply, contend, contend_in_waves, emitted_from, preview_of};
use crate::admission::fixture_catalogue;
use loam_tests::repo_root;
use std::collections::{BTreeMap, BTreeSet};

/// The fixture `case` emitted and applied on the fixture catalogue, with the preview of the
/// same specs: the site's cluster and the preview's verdict and line per job.
fn case(case: &str) -> (super::Cluster, BTreeMap<String, (String, String)>) {
    let catalogue = fixture_catalogue(&format!("sim-{case}"));
    let global = ["--catalogue", catalogue.to_str().unwrap()];
    let specs = repo_root().join("tests/cases/admission").join(case);
    let files = emitted_from(&global, &specs, &[]);
    let preview = preview_of(&global, &specs);
    std::fs::remove_dir_all(&catalogue).unwrap();
    let (refused, mut sites) = apply(&files);
    assert!(refused.is_empty(), "{refused:#?}");
    assert_eq!(sites.len(), 1, "{:?}", sites.keys());
    let (_, cluster) = sites.pop_first().unwrap();
    (cluster, preview)
}

/// The JobSet path of `job` in `cluster`.
fn path_of(cluster: &super::Cluster, job: &str) -> String {
    cluster
        .pending
        .iter()
        .map(|p| p.path.clone())
        .find(|p| p.split('/').nth(1) == Some(job))
        .unwrap_or_else(|| panic!("no JobSet of {job}"))
}

#[test]
fn research_reclaims_its_nominal_quota_from_a_higher_priority_borrower() {
    // big (nlp, high): 16 devices, nlp's 8 and 8 borrowed from research. small (research,
    // normal): 8, research's own. The preview admits small and says big queues, preempted by
    // small.
    let (cluster, preview) = case("reclaim");
    let (big, small) = (path_of(&cluster, "big"), path_of(&cluster, "small"));
    assert!(preview["small"].0 == "admitted", "{preview:#?}");
    assert!(preview["big"].0 == "queues", "{preview:#?}");
    assert!(
        preview["big"].1.contains("preempted by `small`"),
        "{preview:#?}"
    );
    // big applied first runs, borrowing; small applied after reclaims research's 8 under
    // `reclaimWithinCohort: Any`, although big has the higher priority, and big waits again.
    let waves = [BTreeSet::from([big.clone()])];
    let verdicts = contend_in_waves(&cluster, &waves);
    assert_eq!(verdicts[&small], None, "{verdicts:#?}");
    let why = verdicts[&big].as_deref().unwrap_or_default();
    assert!(why.starts_with(&format!("preempted by {small}")), "{why}");
    assert!(why.contains("nvidia.com/gpu"), "{why}");
    // Applied together, small is admitted first (it needs no borrowing) and big never runs.
    let together = contend(&cluster);
    assert_eq!(together[&small], None, "{together:#?}");
    let why = together[&big].as_deref().unwrap_or_default();
    assert!(why.contains("the cohort has 8 of 16 unused"), "{why}");
    // Without the reclaim policy research cannot take its quota back: small waits instead.
    let mut never = cluster;
    for q in never.cluster_queues.values_mut() {
        q.reclaim_within_cohort = "Never".to_string();
    }
    let verdicts = contend_in_waves(&never, &waves);
    assert_eq!(verdicts[&big], None, "{verdicts:#?}");
    assert!(verdicts[&small].is_some(), "{verdicts:#?}");
}

#[test]
fn a_borrower_is_admitted_and_the_next_job_of_its_queue_waits() {
    // big (nlp, high): 16 devices, borrowing research's idle 8; later (nlp): queues behind it,
    // nlp's 8 + 8 held. Whichever arrives first, big is admitted (it outranks later in nlp's
    // queue, and later cannot preempt a job of higher priority).
    let (cluster, preview) = case("borrow");
    let (big, later) = (path_of(&cluster, "big"), path_of(&cluster, "later"));
    assert_eq!(preview["big"].0, "borrows", "{preview:#?}");
    assert_eq!(preview["later"].0, "queues", "{preview:#?}");
    for waves in [vec![], vec![BTreeSet::from([later.clone()])]] {
        let verdicts = contend_in_waves(&cluster, &waves);
        let why = verdicts[&later].as_deref().unwrap_or_default();
        if waves.is_empty() {
            assert_eq!(verdicts[&big], None, "{verdicts:#?}");
            assert!(why.contains("holds 16 of 8 + 8"), "{why}");
        } else {
            // later ran first on nlp's own 8; big (high) preempts it within nlp's queue
            // (`withinClusterQueue: LowerPriority`) to take nlp's 8 + research's 8.
            assert_eq!(verdicts[&big], None, "{verdicts:#?}");
            assert!(why.starts_with(&format!("preempted by {big}")), "{why}");
        }
    }
}
