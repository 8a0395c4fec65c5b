//! `loam emit` on the plan fixtures of `tests/cases/emit/`: golden files for every backend,
//! every emit diagnostic, determinism and atomic writes. The real tools (Slurm, shellcheck, the
//! Kubernetes schemas, ssh) check the same manifests in `emit_tools.rs`.
//!
//! The plan fixtures are written for the shipped catalogue, but carry [`FIXTURE_DIGEST`] instead
//! of its digest, which changes with every edit of `specs/`: [`emit`] stamps a copy with the real
//! digest (`loam emit` refuses a plan made with another catalogue, L4010) and writes the real
//! digest back as the placeholder in what it returns, so the snapshots do not change either.

use loam_tests::{repo_root, run_cli};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The `catalogue_digest` of the plan fixtures, standing for the shipped catalogue's.
const FIXTURE_DIGEST: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// The digest of the catalogue `loam emit` runs with in these tests (the shipped one).
fn catalogue_digest() -> &'static str {
    static DIGEST: OnceLock<String> = OnceLock::new();
    DIGEST.get_or_init(|| {
        let (code, out, err) = run_cli(&["catalogue", "list", "--format", "json"], "");
        assert_eq!(code, 0, "{err}");
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        doc["catalogue_digest"].as_str().unwrap().to_string()
    })
}

/// The backends and flavours every fixture is emitted for: `(snapshot suffix, arguments)`.
const BACKENDS: &[(&str, &[&str])] = &[
    ("kubernetes", &["--backend", "kubernetes"]),
    (
        "volcano",
        &["--backend", "kubernetes", "--flavor", "volcano"],
    ),
    ("slurm", &["--backend", "slurm"]),
    ("baremetal", &["--backend", "baremetal"]),
];

/// A fresh, empty scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loam-emit-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every file under `dir` (but the marker), sorted: `(relative path, contents)`.
fn files(dir: &Path) -> Vec<(String, String)> {
    fn walk(root: &Path, dir: &Path, found: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, found);
            } else if path.file_name().unwrap() != ".loam-emit" {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                found.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let mut found = Vec::new();
    if dir.exists() {
        walk(dir, dir, &mut found);
    }
    found.sort();
    found
}

/// Runs `loam emit FIXTURE ARGS --out OUT`: exit code, and the files written or the stderr.
/// A plan fixture with [`FIXTURE_DIGEST`] is emitted from a copy beside OUT that carries the
/// catalogue's digest; what a plan fixture's emit returns shows that digest as the placeholder.
fn emit(fixture: &Path, args: &[&str], out: &Path) -> (u8, String) {
    if fixture.extension().is_none_or(|e| e != "json") {
        return emit_as_is(fixture, args, out);
    }
    let text = std::fs::read_to_string(fixture).unwrap();
    let (code, body) = if text.contains(FIXTURE_DIGEST) {
        let name = out.file_name().unwrap().to_string_lossy();
        let stamped = out.with_file_name(format!("{name}.plan.json"));
        std::fs::create_dir_all(stamped.parent().unwrap()).unwrap();
        std::fs::write(&stamped, text.replace(FIXTURE_DIGEST, catalogue_digest())).unwrap();
        emit_as_is(&stamped, args, out)
    } else {
        emit_as_is(fixture, args, out)
    };
    (code, body.replace(catalogue_digest(), FIXTURE_DIGEST))
}

/// Runs `loam emit FIXTURE ARGS --out OUT` on the fixture as it is.
fn emit_as_is(fixture: &Path, args: &[&str], out: &Path) -> (u8, String) {
    let fixture = fixture.to_string_lossy().into_owned();
    let out_s = out.to_string_lossy().into_owned();
    let mut argv = vec!["emit", fixture.as_str()];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--out", out_s.as_str()]);
    let (code, stdout, stderr) = run_cli(&argv, "");
    if code != 0 {
        return (code, stderr);
    }
    assert!(stdout.starts_with("wrote "), "{stdout}");
    let body: String = files(out)
        .into_iter()
        .map(|(path, text)| format!("--- {path} ---\n{text}"))
        .collect();
    (code, body)
}

#[test]
fn plan_fixtures_emit_the_golden_manifests() {
    let dir = scratch("golden");
    insta::glob!("../cases/emit", "{plans,errors}/*.json", |path| {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        for (suffix, args) in BACKENDS {
            let name = format!("{stem}@{suffix}");
            let (code, body) = emit(path, args, &dir.join(&name));
            let body = body.replace(&format!("{}/", repo_root().display()), "");
            insta::with_settings!({ snapshot_suffix => name, description => format!("loam emit {} {}", path.file_name().unwrap().to_string_lossy(), args.join(" ")) }, {
                insta::assert_snapshot!(format!("exit {code}\n{body}"));
            });
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn examples_emit_the_golden_manifests() {
    let dir = scratch("examples");
    insta::glob!("../../examples", "*.loam", |path| {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        for (suffix, args) in BACKENDS {
            let name = format!("{stem}@{suffix}");
            let (code, body) = emit(path, args, &dir.join(&name));
            assert_eq!(code, 0, "{body}");
            // The manifests name the spec file as it was given; the snapshots must not depend on
            // where the repository is checked out.
            let body = body.replace(&format!("{}/", repo_root().display()), "");
            insta::with_settings!({ snapshot_suffix => name, description => format!("loam emit examples/{stem}.loam {}", args.join(" ")) }, {
                insta::assert_snapshot!(body);
            });
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn emit_is_byte_identical_across_runs() {
    let dir = scratch("determinism");
    let fixture = repo_root().join("tests/cases/emit/plans/hetero-h100-ascend.json");
    for (suffix, args) in BACKENDS {
        let (a, first) = emit(&fixture, args, &dir.join(format!("{suffix}-1")));
        let (b, second) = emit(&fixture, args, &dir.join(format!("{suffix}-2")));
        // Slurm refuses the plan, which spans two sites (L4011), the same way every time.
        let expected = if *suffix == "slurm" { 1 } else { 0 };
        assert_eq!((a, b), (expected, expected), "{suffix}");
        assert_eq!(first, second, "{suffix}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failing_emit_leaves_the_output_folder_untouched() {
    let dir = scratch("atomic");
    let good = repo_root().join("tests/cases/emit/plans/two-node-lab.json");
    let bad = repo_root().join("tests/cases/emit/plans/infeasible.json");
    let out = dir.join("out");
    let (code, before) = emit(&good, &["--backend", "slurm"], &out);
    assert_eq!(code, 0);
    let (code, err) = emit(&bad, &["--backend", "slurm"], &out);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("L4001"), "{err}");
    let (_, after) = emit(&good, &["--backend", "slurm"], &out);
    assert_eq!(before, after);
    assert_eq!(files(&out).len(), 1);
    // Re-emitting replaces the whole folder: nothing of another backend is left behind.
    let (code, _) = emit(&good, &["--backend", "baremetal"], &out);
    assert_eq!(code, 0);
    let names: Vec<String> = files(&out).into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        names,
        [
            "two-node-8b/hostfile",
            "two-node-8b/launch.sh",
            "two-node-8b/plan.json"
        ]
    );
    // No temporary folder is left beside the output.
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".loam-new-") || n.contains(".loam-old-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn emit_refuses_to_replace_a_folder_it_did_not_write() {
    let dir = scratch("foreign");
    std::fs::write(dir.join("precious.txt"), "keep me").unwrap();
    let good = repo_root().join("tests/cases/emit/plans/two-node-lab.json");
    let (code, err) = emit(&good, &["--backend", "slurm"], &dir);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("did not write"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("precious.txt")).unwrap(),
        "keep me"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn emit_rejects_an_unknown_slurm_version_and_one_too_old() {
    let dir = scratch("version");
    let good = repo_root().join("tests/cases/emit/plans/two-node-lab.json");
    let (code, err) = emit(
        &good,
        &["--backend", "slurm", "--slurm-version", "latest"],
        &dir.join("a"),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("invalid Slurm version"), "{err}");
    let (code, err) = emit(
        &good,
        &["--backend", "slurm", "--slurm-version", "17.02"],
        &dir.join("b"),
    );
    insta::assert_snapshot!("slurm_version_too_old", format!("exit {code}\n{err}"));
    // Older releases get the old spellings of heterogeneous jobs and GPU requests.
    // A heterogeneous plan on one site (Slurm refuses the fixture over two sites, L4011).
    let het = repo_root().join("examples/hetero-70b-guiyang.loam");
    let (code, body) = emit(
        &het,
        &["--backend", "slurm", "--slurm-version", "19.05"],
        &dir.join("c"),
    );
    assert_eq!(code, 0);
    assert!(
        body.contains("#SBATCH packjob") && body.contains("--pack-group=1"),
        "{body}"
    );
    let (_, body) = emit(
        &het,
        &["--backend", "slurm", "--slurm-version", "18.08"],
        &dir.join("d"),
    );
    assert!(
        body.contains("--gres=gpu:8") && !body.contains("--gpus-per-node"),
        "{body}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn emit_refuses_a_plan_made_with_another_catalogue() {
    let dir = scratch("digest");
    let out = dir.join("out");
    let good = repo_root().join("tests/cases/emit/plans/two-node-lab.json");
    let (code, before) = emit(&good, &["--backend", "slurm"], &out);
    assert_eq!(code, 0, "{before}");
    // The fixture as it is: its placeholder digest is no catalogue's.
    let (code, err) = emit_as_is(&good, &["--backend", "baremetal"], &out);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("error[L4010]") && err.contains(catalogue_digest()),
        "{err}"
    );
    assert!(err.ends_with("nothing emitted\n"), "{err}");
    let after: String = files(&out)
        .into_iter()
        .map(|(path, text)| format!("--- {path} ---\n{text}"))
        .collect();
    assert_eq!(before, after.replace(catalogue_digest(), FIXTURE_DIGEST));
    // The same plan with the catalogue's digest emits.
    let (code, _) = emit(&good, &["--backend", "baremetal"], &out);
    assert_eq!(code, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn emit_refuses_a_plan_whose_keyword_fields_hold_other_words() {
    let dir = scratch("keyword");
    let good = repo_root().join("tests/cases/emit/plans/two-node-lab.json");
    let text = std::fs::read_to_string(&good).unwrap();
    assert!(text.contains("\"precision\": \"bf16\""));
    let bad = dir.join("bad.json");
    let hostile = "\"precision\": \"bf16'; touch /tmp/loam-pwned; '\"";
    std::fs::write(&bad, text.replace("\"precision\": \"bf16\"", hostile)).unwrap();
    let (code, err) = emit(&bad, &["--backend", "slurm"], &dir.join("out"));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("is not a loam plan") && err.contains("expected one of `fp32`"),
        "{err}"
    );
    assert!(!dir.join("out").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
