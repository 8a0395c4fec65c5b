//! `loam plan` on several jobs prints the admission preview: on the examples, and on small
//! fixture pools (`tests/cases/admission/`) where who borrows, who reclaims and who queues
//! follows from the quotas written in the pool.

use crate::loam_process::loam_in;
use loam_tests::repo_root;

/// Runs loam from the repository root, so paths in the output are relative and stable.
fn loam(args: &[&str]) -> (u8, String, String) {
    loam_in(&repo_root(), args)
}

/// A catalogue folder: the shipped devices and the fixture pool `adm` (16 H100 in one node
/// group; nlp guaranteed 8 + elastic 8, research guaranteed 8 + elastic 0).
pub(crate) fn fixture_catalogue(name: &str) -> std::path::PathBuf {
    let root = repo_root();
    let dir = std::env::temp_dir().join(format!("loam-admission-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("devices")).unwrap();
    std::fs::create_dir_all(dir.join("pools")).unwrap();
    for entry in std::fs::read_dir(root.join("specs/devices")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join("devices").join(path.file_name().unwrap())).unwrap();
    }
    std::fs::copy(
        root.join("tests/cases/admission/pools/adm.yaml"),
        dir.join("pools/adm.yaml"),
    )
    .unwrap();
    dir
}

/// The preview part of `loam plan`'s table output.
fn preview_of(out: &str) -> &str {
    let at = out
        .find("Admission preview")
        .unwrap_or_else(|| panic!("no preview in\n{out}"));
    &out[at..]
}

/// The line of job `name` in the preview.
fn line_of<'a>(preview: &'a str, name: &str) -> &'a str {
    preview
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(name))
        .unwrap_or_else(|| panic!("no line for {name} in\n{preview}"))
}

#[test]
fn a_borrowing_job_names_its_lender_and_a_later_job_of_its_tenant_queues_behind_it() {
    let catalogue = fixture_catalogue("borrow");
    let (_, out, err) = loam(&[
        "--catalogue",
        catalogue.to_str().unwrap(),
        "plan",
        "tests/cases/admission/borrow",
    ]);
    std::fs::remove_dir_all(&catalogue).unwrap();
    let preview = preview_of(&out);
    // big: 16 devices, nlp's guaranteed 8 plus 8 of research's idle guaranteed quota.
    let big = line_of(preview, "big");
    assert!(big.starts_with("  borrows"), "{big}\n{err}");
    assert!(big.contains("16 × H100_SXM on adm-h100"), "{big}");
    assert!(big.contains("borrows 8 H100_SXM"), "{big}");
    assert!(
        big.contains("tenant research reclaiming its H100_SXM"),
        "{big}"
    );
    assert!(big.contains("jobs above high priority"), "{big}");
    // later: nlp's 8 + 8 are all held by big.
    let later = line_of(preview, "later");
    assert!(later.starts_with("  queues"), "{later}");
    assert!(later.contains("behind big"), "{later}");
    assert!(later.contains("0 left of tenant `nlp`'s"), "{later}");
    assert!(preview.contains("1 borrows · 1 queues"), "{preview}");
    assert!(
        preview.contains("adm-h100  H100_SXM 16 / 16, 0 free, 8 borrowed"),
        "{preview}"
    );
}

#[test]
fn a_tenant_reclaiming_its_guaranteed_quota_preempts_a_higher_priority_borrower() {
    let catalogue = fixture_catalogue("reclaim");
    let (_, out, _) = loam(&[
        "--catalogue",
        catalogue.to_str().unwrap(),
        "plan",
        "tests/cases/admission/reclaim",
    ]);
    let (_, markdown, _) = loam(&[
        "--catalogue",
        catalogue.to_str().unwrap(),
        "plan",
        "--format",
        "markdown",
        "tests/cases/admission/reclaim",
    ]);
    std::fs::remove_dir_all(&catalogue).unwrap();
    let preview = preview_of(&out);
    // small (normal) fits in research's guaranteed 8, which big (high) was borrowing.
    let small = line_of(preview, "small");
    assert!(small.starts_with("  admitted"), "{small}");
    assert!(small.contains("8 × H100_SXM on adm-h100"), "{small}");
    let big = line_of(preview, "big");
    assert!(big.starts_with("  queues"), "{big}");
    assert!(big.contains("behind small"), "{big}");
    assert!(big.contains("preempted by `small`"), "{big}");
    // The high job is still considered first: it leads the list.
    let at = |name: &str| {
        preview
            .lines()
            .position(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap()
    };
    let (first, second) = (at("big"), at("small"));
    assert!(first < second, "{preview}");
    assert!(markdown.contains("## Admission preview"), "{markdown}");
    assert!(
        markdown.contains("| queues | `big` | nlp | high |"),
        "{markdown}"
    );
}

#[test]
fn the_examples_get_one_verdict_each_and_the_same_text_every_time() {
    let (_, out, _) = loam(&["plan", "examples/"]);
    let preview = preview_of(&out).to_string();
    let (_, again, _) = loam(&["plan", "examples/"]);
    assert_eq!(preview, preview_of(&again));
    let (_, json, _) = loam(&["plan", "--format", "json", "examples/"]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let plans = doc["plans"].as_array().unwrap();
    for plan in plans {
        let name = plan["job"].as_str().unwrap();
        let lines = preview
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some(name))
            .count();
        assert_eq!(lines, 1, "{name} in\n{preview}");
    }
    // The counts line adds up to the number of plans.
    let counts = preview.lines().nth(1).unwrap();
    let total: usize = counts
        .split('·')
        .map(|part| {
            part.split_whitespace()
                .next()
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    assert_eq!(total, plans.len(), "{counts}");
    // The JSON stays the Plan JSON contract: no admission field was added to it.
    assert!(doc.get("admission").is_none());
}

#[test]
fn one_job_gets_no_preview() {
    let (_, out, _) = loam(&["plan", "examples/llama3-8b-finetune.loam"]);
    assert!(!out.contains("Admission preview"), "{out}");
}
