//! The catalogue in the CLI: `loam catalogue list|show`, `--catalogue DIR`, a broken catalogue,
//! and `loam check` running the checks of jobs against the catalogue.

use loam_tests::{repo_root, run_cli};

fn case(name: &str) -> String {
    repo_root()
        .join("tests/cases/check")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn list_shows_the_twenty_three_devices_with_their_status() {
    let (code, out, err) = run_cli(&["catalogue", "list"], "");
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!(out);
    let (code, out, _) = run_cli(&["catalogue", "list", "--format", "json"], "");
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let devices = doc["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 23);
    assert!(devices.iter().all(|d| d["status"].is_string()));
    assert!(
        doc["catalogue_digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
}

#[test]
fn show_a_device_a_pool_and_a_site() {
    let (code, out, _) = run_cli(&["catalogue", "show", "H100_SXM"], "");
    assert_eq!(code, 0);
    assert!(out.starts_with("device H100_SXM"), "{out}");
    let (code, out, _) = run_cli(&["catalogue", "show", "xirang"], "");
    assert_eq!(code, 0);
    assert!(out.contains("guiyang"), "{out}");
    let (code, out, _) = run_cli(
        &["catalogue", "show", "xirang/guiyang", "--format", "json"],
        "",
    );
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["kind"], "site");
    assert_eq!(doc["pool"], "xirang");
    let (code, out, _) = run_cli(&["catalogue", "show", "L40S", "--format", "json"], "");
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["kind"], "device");
}

#[test]
fn show_an_unknown_id_suggests_the_nearest_and_exits_1() {
    let (code, out, err) = run_cli(&["catalogue", "show", "H100_SMX"], "");
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert_eq!(
        err,
        "error: unknown catalogue id `H100_SMX`; did you mean `H100_SXM`?\n"
    );
}

#[test]
fn show_a_device_family_stem_suggests_a_member_of_the_family() {
    // `H100` is two edits from `A10` and four from `H100_SXM` (both 0.5 similar); the family
    // stem is what the user wrote, so the member nearest in spelling is offered.
    let (code, _, err) = run_cli(&["catalogue", "show", "H100"], "");
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "error: unknown catalogue id `H100`; did you mean `H100_SXM`?\n"
    );
}

#[test]
fn a_misspelt_device_is_located_and_gets_a_suggestion() {
    let path = case("L2103-unknown-device.loam");
    let (code, out, _) = run_cli(&["check", &path, "--format", "json"], "");
    assert_eq!(code, 1);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let diagnostics = doc["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{out}");
    let d = &diagnostics[0];
    assert_eq!(d["code"], "L2103");
    assert_eq!(d["message"], "unknown device `H100_SMX`");
    assert_eq!(d["help"], "did you mean `H100_SXM`?");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(22), Some(16))
    );
    assert_eq!(d["end_column"].as_u64(), Some(24));
}

#[test]
fn a_405b_model_on_8_l40s_is_rejected_with_both_memory_figures() {
    let path = case("L2108-model-does-not-fit.loam");
    let (code, out, _) = run_cli(&["check", &path, "--format", "json"], "");
    assert_eq!(code, 1);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let d = &doc["diagnostics"][0];
    assert_eq!(d["code"], "L2108");
    // By hand: the least memory is TP8 on all 8 devices, ZeRO-3 over one data rank (nothing to
    // shard), full recomputation. 405.85B parameters / 8 = 50.73B per device at FSDP's 16 bytes
    // (fp32 shard, fp32 gradients, fp32 moments) = 756.0 GiB; FSDP's gathered block, 10 bytes ×
    // 398.5M = 3.7 GiB; activations (126 block inputs of 33.5 MB, one block's 532.7 MB working
    // set, the head's inputs and fp32 logits, 0.54 and 0.53 GB) 5.4 GiB: 765.1 GiB. The L40S has
    // 48 GB = 44.7 GiB, 43.1 usable after the CUDA context, NCCL's buffers and fragmentation.
    assert_eq!(
        d["message"],
        "model does not fit on `L40S`: needs at least 765.1 GiB per device, \
         the device has 44.7 GiB (43.1 GiB usable)"
    );
    // The secondary label points at the device's memory line in its catalogue file.
    assert_eq!(d["related"][0]["file"], "specs/devices/L40S.yaml");
    assert_eq!(d["related"][0]["line"], 19);
    let (_, _, err) = run_cli(&["check", &path], "");
    assert!(err.contains("specs/devices/L40S.yaml:19:9"), "{err}");
}

#[test]
fn catalogue_dir_replaces_the_built_in_one() {
    let dir = tempfile::tempdir().unwrap();
    loam_tests::copy_shipped_catalogue(dir.path());
    let pool = dir.path().join("pools/xirang.yaml");
    let text = std::fs::read_to_string(&pool).unwrap();
    std::fs::write(&pool, text.replace("- name: nlp\n", "- name: nlp2\n")).unwrap();
    let catalogue = dir.path().to_str().unwrap();
    let examples = repo_root().join("examples/llama3-8b-finetune.loam");
    let examples = examples.to_str().unwrap();
    let (code, _, _) = run_cli(&["check", examples], "");
    assert_eq!(code, 0);
    let (code, _, err) = run_cli(&["--catalogue", catalogue, "check", examples], "");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("unknown tenant `nlp`"), "{err}");
    assert!(err.contains("did you mean `nlp2`?"), "{err}");
    let (code, out, _) = run_cli(
        &["catalogue", "show", "xirang", "--catalogue", catalogue],
        "",
    );
    assert_eq!(code, 0);
    assert!(out.contains("nlp2"), "{out}");
}

/// A broken device file is shown at its YAML line; it blocks the pools whose node groups use
/// the device (xirang and lab have L40S) and so their specs (L2121 naming the device file),
/// specs on other pools (frontier) are planned, and nothing
/// that stands for the whole catalogue runs (`loam catalogue list`).
#[test]
fn a_broken_catalogue_shows_its_yaml_line_and_blocks_what_uses_it() {
    let dir = tempfile::tempdir().unwrap();
    loam_tests::copy_shipped_catalogue(dir.path());
    let device = dir.path().join("devices/L40S.yaml");
    let text = std::fs::read_to_string(&device).unwrap();
    std::fs::write(&device, text.replace("memory: 48GB", "memory: 48GHz")).unwrap();
    let catalogue = dir.path().to_str().unwrap();
    let spec = case("L2103-unknown-device.loam");
    let (code, out, err) = run_cli(&["--catalogue", catalogue, "check", &spec], "");
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert!(err.contains("L2006") || err.contains("L2007"), "{err}");
    assert!(err.contains("devices/L40S.yaml:19:9"), "{err}");
    assert!(err.contains("19 │ memory: 48GHz"), "{err}");
    // The spec's pool uses the broken device: blocked by the device's file, named as the
    // cause; the spec's own error (a misspelt device) is still its own.
    assert!(err.contains("L2121"), "{err}");
    assert!(err.contains("pool `xirang` is not loaded"), "{err}");
    assert!(err.contains("devices/L40S.yaml`"), "{err}");
    assert!(err.contains("L2103"), "{err}");
    // A spec on a pool without L40S is checked and planned as usual.
    let gaudi = repo_root().join("examples/llama2-70b-lora-gaudi2.loam");
    let (code, out, err) = run_cli(
        &["--catalogue", catalogue, "plan", gaudi.to_str().unwrap()],
        "",
    );
    assert_eq!(code, 1, "the catalogue's errors still fail the run:\n{err}");
    assert!(
        out.contains("llama2-70b-lora") && out.contains("feasible"),
        "{out}"
    );
    assert!(!err.contains("L2121"), "{err}");
    let (code, out, err) = run_cli(&["--catalogue", catalogue, "catalogue", "list"], "");
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert!(err.contains("devices/L40S.yaml:19:9"), "{err}");
}

/// A broken vendor file changes the figures of devices that would still load (leaving it out
/// brings back the shipped vendor), so nothing is checked: the catalogue's errors alone.
#[test]
fn a_broken_vendor_file_stops_every_spec() {
    let dir = tempfile::tempdir().unwrap();
    loam_tests::copy_shipped_catalogue(dir.path());
    let text = std::fs::read_to_string(repo_root().join("specs/vendors/nvidia.yaml")).unwrap();
    std::fs::create_dir_all(dir.path().join("vendors")).unwrap();
    let vendor = dir.path().join("vendors/nvidia.yaml");
    std::fs::write(&vendor, format!("{text}\nunheard_of: 1\n")).unwrap();
    let catalogue = dir.path().to_str().unwrap();
    let spec = repo_root().join("examples/llama2-70b-lora-gaudi2.loam");
    let (code, out, err) = run_cli(
        &["--catalogue", catalogue, "check", spec.to_str().unwrap()],
        "",
    );
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert!(err.contains("vendors/nvidia.yaml"), "{err}");
    assert!(err.contains("no spec was checked"), "{err}");
}

#[test]
fn a_folder_that_is_no_catalogue_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let catalogue = dir.path().to_str().unwrap();
    let (code, _, err) = run_cli(&["--catalogue", catalogue, "catalogue", "list"], "");
    assert_eq!(code, 2);
    assert!(err.contains("no `devices/` or `pools/` folder"), "{err}");
    let missing = dir.path().join("missing");
    let (code, _, err) = run_cli(
        &[
            "--catalogue",
            missing.to_str().unwrap(),
            "check",
            &case("L2103-unknown-device.loam"),
        ],
        "",
    );
    assert_eq!(code, 2);
    assert!(err.contains("not a folder"), "{err}");
}
