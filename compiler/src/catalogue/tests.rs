//! Tests of the catalogue: shipped files, fixtures per validation rule, lookups and reports.

use super::*;

#[test]
fn shipped_catalogue_loads_clean() {
    let sources: Vec<_> = builtin_sources()
        .into_iter()
        .enumerate()
        .map(|(i, (p, t))| (loam_ir::span::FileId(i as u32), p, t))
        .collect();
    let (catalogue, diags) = load(&sources);
    assert_eq!(diags, vec![], "{diags:#?}");
    let catalogue = catalogue.unwrap();
    assert_eq!(catalogue.devices.len(), 23);
    assert_eq!(catalogue.vendors.len(), 5);
}

/// Splits a fixture into its `--- path ---` files.
fn split_fixture(text: &str) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = Vec::new();
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_end();
        if let Some(path) = trimmed
            .strip_prefix("--- ")
            .and_then(|r| r.strip_suffix(" ---"))
        {
            files.push((path.to_string(), String::new()));
        } else if let Some((_, body)) = files.last_mut() {
            body.push_str(line);
        }
    }
    files
}

/// Renders diagnostics as plain text (no colour, file:line:col, the source line, a caret line).
fn render(files: &[(String, String)], diags: &[loam_ir::diagnostics::Diagnostic]) -> String {
    use loam_ir::span::{Span, line_col};
    let place = |span: Span| {
        let (path, text) = &files[span.file.0 as usize];
        let (line, col) = line_col(text, span.start as usize);
        (path.clone(), text.clone(), line, col)
    };
    let mut out = String::new();
    for d in diags {
        let (path, text, line, col) = place(d.span.unwrap());
        out.push_str(&format!(
            "error[{}]: {}\n  --> {path}:{line}:{col}\n",
            d.code, d.message
        ));
        let source_line = text.lines().nth(line - 1).unwrap_or("");
        let width = text[d.span.unwrap().start as usize..d.span.unwrap().end as usize]
            .chars()
            .count()
            .max(1);
        out.push_str(&format!(
            "{line:>4} | {source_line}\n     | {}{} {}\n",
            " ".repeat(col - 1),
            "^".repeat(width),
            d.label
        ));
        for related in &d.related {
            let (path, _, line, col) = place(related.span);
            out.push_str(&format!(
                "     = note: {} at {path}:{line}:{col}\n",
                related.message
            ));
        }
        if let Some(help) = &d.help {
            out.push_str(&format!("     = help: {help}\n"));
        }
    }
    if diags.is_empty() {
        out.push_str("(no diagnostics)\n");
    }
    out
}

fn check(fixture: &str) -> (String, Vec<loam_ir::diagnostics::Diagnostic>) {
    let files = split_fixture(fixture);
    let sources: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(i, (p, t))| (loam_ir::span::FileId(i as u32), p.as_str(), t.as_str()))
        .collect();
    let (catalogue, diags) = load(&sources);
    assert_eq!(catalogue.is_some(), diags.is_empty());
    (render(&files, &diags), diags)
}

#[test]
fn fixtures() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/catalogue");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    assert!(paths.len() >= 18, "fixtures missing in {}", dir.display());
    let mut seen_codes = std::collections::BTreeSet::new();
    for path in paths {
        let fixture = std::fs::read_to_string(&path).unwrap();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let expect = fixture
            .lines()
            .next()
            .unwrap()
            .strip_prefix("# expect: ")
            .unwrap()
            .trim()
            .to_string();
        let (rendered, diags) = check(&fixture);
        if expect == "clean" {
            assert!(diags.is_empty(), "{name}: {rendered}");
        } else {
            assert!(
                diags.iter().any(|d| d.code == expect),
                "{name}: expected {expect}, got\n{rendered}"
            );
        }
        seen_codes.extend(diags.iter().map(|d| d.code));
        insta::with_settings!({ snapshot_suffix => name.clone(), prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!("fixture", format!("----- SOURCE\n{fixture}----- DIAGNOSTICS\n{rendered}"));
        });
    }
    for info in loam_ir::diagnostics::codes::all() {
        if info.code.as_str().starts_with("L20") {
            assert!(
                seen_codes.contains(&info.code),
                "no fixture produces {}",
                info.code
            );
        }
    }
}

#[test]
fn builtin_list_matches_specs_folder() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut on_disk = Vec::new();
    for dir in ["specs/devices", "specs/pools"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().to_string();
            if name.ends_with(".yaml") || name.ends_with(".yml") {
                on_disk.push(format!("{dir}/{name}"));
            }
        }
    }
    on_disk.sort();
    let builtin: Vec<String> = builtin_sources()
        .iter()
        .map(|(p, _)| p.to_string())
        .collect();
    assert_eq!(
        builtin, on_disk,
        "add new spec files to SHIPPED in catalogue/builtin.rs"
    );
    for (path, text) in builtin_sources() {
        assert_eq!(std::fs::read_to_string(root.join(path)).unwrap(), text);
    }
    let mut vendors_on_disk: Vec<String> = std::fs::read_dir(root.join("specs/vendors"))
        .unwrap()
        .map(|e| format!("specs/vendors/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    vendors_on_disk.sort();
    let shipped: Vec<String> = shipped_vendors()
        .iter()
        .map(|(p, _)| p.to_string())
        .collect();
    assert_eq!(
        shipped, vendors_on_disk,
        "add new vendor files to SHIPPED_VENDORS in catalogue/builtin.rs"
    );
    for (path, text) in shipped_vendors() {
        assert_eq!(std::fs::read_to_string(root.join(path)).unwrap(), text);
    }
}

/// HBM is sold in binary units, so a shipped device with HBM states its memory in GiB as the
/// device reports it (docs/catalogue.md, `memory`); GB200 was once written as 186 decimal GB,
/// 12 GiB below the 189,471 MiB it reports, which refused a layout that ran.
#[test]
fn shipped_hbm_devices_state_memory_in_binary_units() {
    let mut hbm = 0;
    for (path, text) in builtin_sources() {
        if !path.starts_with("specs/devices/") {
            continue;
        }
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|line| line.starts_with("memory:"))
            .unwrap_or_else(|| panic!("{path} states no memory"));
        // The memory's kind is named on its line or in the comment block right above it.
        let said = lines[..=at]
            .iter()
            .rev()
            .take_while(|line| line.starts_with('#') || line.starts_with("memory:"))
            .any(|line| line.contains("HBM"));
        if !said {
            continue;
        }
        hbm += 1;
        let memory = lines[at].trim_start_matches("memory:");
        let figure = memory.split('#').next().unwrap_or("").trim();
        assert!(
            figure.ends_with("GiB"),
            "{path}: HBM memory `{figure}` is not in GiB"
        );
    }
    assert!(hbm >= 15, "{hbm} shipped devices mention HBM");
}

/// The shipped vendors hold the facts the backends used to match on: NCCL on NVIDIA, RCCL on
/// AMD and Hygon (DTK ships RCCL), HCCL on Huawei and Intel (Habana's own HCCL); Slurm's `gpu`
/// GRES except Ascend NPUs (`npu`) and Hygon DCUs (`dcu`); MindIE by default on Ascend only.
#[test]
fn shipped_vendors_state_each_vendors_facts() {
    let catalogue = builtin();
    let facts: Vec<(&str, &str, &str, &str)> = catalogue
        .vendors
        .values()
        .map(|v| {
            (
                v.id.as_str(),
                v.collective.as_str(),
                v.slurm_gres.as_str(),
                v.default_engine.as_str(),
            )
        })
        .collect();
    assert_eq!(
        facts,
        vec![
            ("amd", "rccl", "gpu", "vllm"),
            ("huawei", "hccl", "npu", "mindie"),
            ("hygon", "rccl", "dcu", "vllm"),
            ("intel", "hccl", "gpu", "vllm"),
            ("nvidia", "nccl", "gpu", "vllm"),
        ]
    );
    // Every device carries its vendor's facts.
    for device in catalogue.devices.values() {
        assert_eq!(device.vendor_facts.id, device.vendor, "{}", device.id.value);
    }
    // TensorRT-LLM runs on NVIDIA only, MindIE on Ascend only.
    let running = |engine: loam_ir::types::Engine| -> Vec<&str> {
        catalogue
            .vendors
            .values()
            .filter(|v| v.runs(engine))
            .map(|v| v.id.as_str())
            .collect()
    };
    assert_eq!(running(loam_ir::types::Engine::Trtllm), vec!["nvidia"]);
    assert_eq!(running(loam_ir::types::Engine::Mindie), vec!["huawei"]);
    assert_eq!(
        running(loam_ir::types::Engine::Vllm),
        vec!["amd", "huawei", "hygon", "intel", "nvidia"]
    );
}

#[test]
fn digest_is_order_independent_and_content_sensitive() {
    let mut sources: Vec<_> = builtin_sources()
        .into_iter()
        .enumerate()
        .map(|(i, (p, t))| (loam_ir::span::FileId(i as u32), p, t))
        .collect();
    let a = load(&sources).0.unwrap().digest().to_string();
    sources.reverse();
    let b = load(&sources).0.unwrap().digest().to_string();
    assert_eq!(a, b);
    assert!(a.starts_with("sha256:") && a.len() == 7 + 64);
    let moved: Vec<_> = sources
        .iter()
        .map(|(f, p, t)| (*f, p.replace("specs/", "elsewhere/"), *t))
        .collect();
    let moved: Vec<_> = moved.iter().map(|(f, p, t)| (*f, p.as_str(), *t)).collect();
    assert_eq!(
        load(&moved).0.unwrap().digest(),
        a,
        "the folder the catalogue lives in does not count"
    );
    let changed = format!("{}# changed\n", sources[0].2);
    sources[0].2 = &changed;
    assert_ne!(load(&sources).0.unwrap().digest(), a);
}

#[test]
fn lookups_for_checker_and_planner() {
    let c = builtin();
    let h100 = c.device("H100_SXM").unwrap();
    let f = h100.figures();
    // HBM in binary units, as nvidia-smi reports it (81,559 MiB).
    assert!((f.memory_bytes - 79.6 * (1u64 << 30) as f64).abs() < 1.0);
    assert_eq!(f.scale_up_bandwidth, 450e9);
    assert_eq!(f.peak_flops[&loam_ir::types::Precision::Bf16], 989.4e12);
    assert!(h100.supports(loam_ir::types::Precision::Fp8));
    assert!(
        !c.device("Ascend910B")
            .unwrap()
            .supports(loam_ir::types::Precision::Fp8)
    );
    assert!(c.device("Ascend910B").unwrap().status.value.is_estimate());
    let xirang = c.pool("xirang").unwrap();
    assert!(xirang.sites.len() >= 4);
    assert!(xirang.total_devices() >= 2000);
    assert!(xirang.device_ids().len() >= 6);
    assert_eq!(xirang.site_names()[0], "shanghai");
    assert_eq!(
        xirang.tenant("nlp").unwrap().checkpoint_root.value.as_str(),
        "/ckpt/nlp"
    );
    let (site, group) = xirang.node_group("gy-910b-a").unwrap();
    assert_eq!(
        (site.name.value.as_str(), group.device.value.as_str()),
        ("guiyang", "Ascend910B")
    );
    assert_eq!(
        group
            .cluster_figures(c.device("Ascend910B").unwrap(), site)
            .devices(),
        1024
    );
    assert_eq!(xirang.convert(7.15, "CNY", "USD"), Some(1.0));
    assert_eq!(xirang.convert(1.0, "CNY", "JPY"), None);
    assert!(xirang.free_by_site("Ascend910B").contains_key("ulanqab"));
    assert_eq!(route(xirang, "guiyang", "ulanqab").unwrap().len(), 2);
    assert_eq!(
        crate::suggest::closest("H100_SMX", c.device_ids()),
        Some("H100_SXM")
    );
    assert!(c.pool("lab").unwrap().total_devices() <= 64);
    assert_eq!(
        compare_versions("12.10", "12.4"),
        Some(std::cmp::Ordering::Greater)
    );
}

#[test]
fn reports() {
    let c = builtin();
    let list = list_text(&c);
    insta::assert_snapshot!("list_text", list);
    let json = list_json(&c);
    assert_eq!(json["devices"].as_array().unwrap().len(), 23);
    assert_eq!(json["devices"][3]["id"], "Ascend910B");
    assert_eq!(json["devices"][3]["estimate"], true);
    insta::assert_snapshot!("show_device", show_text(&c, "H100_SXM").unwrap());
    insta::assert_snapshot!("show_pool", show_text(&c, "xirang").unwrap());
    insta::assert_snapshot!("show_site", show_text(&c, "guiyang").unwrap());
    assert_eq!(show_json(&c, "lab/alpha").unwrap()["kind"], "site");
    let err = show_text(&c, "H100_SMX").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown catalogue id `H100_SMX`; did you mean `H100_SXM`?"
    );
}

/// `./specs` read from disk holds the shipped vendor files too; identical to loam's own they
/// replace nothing and leave the digest as the built-in catalogue's, while an edited one counts.
#[test]
fn shipped_vendor_files_do_not_move_the_digest_and_edited_ones_do() {
    let with_vendors = |edit: &str| {
        let mut files: Vec<(String, String)> = builtin_sources()
            .into_iter()
            .chain(shipped_vendors())
            .map(|(p, t)| (p.to_string(), t.replace("library: nccl", edit)))
            .collect();
        files.sort();
        let sources: Vec<_> = files
            .iter()
            .enumerate()
            .map(|(i, (p, t))| (loam_ir::span::FileId(i as u32), p.as_str(), t.as_str()))
            .collect();
        let (catalogue, diags) = load(&sources);
        assert_eq!(diags, vec![]);
        catalogue.unwrap()
    };
    let builtin = builtin();
    let same = with_vendors("library: nccl");
    assert_eq!(same.digest, builtin.digest);
    let edited = with_vendors("library: nccl2");
    assert_ne!(edited.digest, builtin.digest);
    assert_eq!(edited.vendors["nvidia"].collective, "nccl2");
    assert_eq!(edited.devices["H100_SXM"].vendor_facts.collective, "nccl2");
}

/// Issue 31, finding 22: every engine image a shipped vendor names is pinned to a release (a tag
/// other than `latest`, or a release in its path as Intel's registry writes it), and every vendor
/// but NVIDIA runs its own build of the engine, never the CUDA-only image the review found on
/// MI300X. The one engine a vendor publishes no image for (LMDeploy on Ascend) says how to
/// build it.
#[test]
fn shipped_engine_images_are_pinned_and_built_for_their_vendor() {
    let catalogue = builtin();
    let release_in_path = |image: &str| {
        image.split('/').any(|part| {
            part.split('.').count() == 3 && part.chars().all(|c| c.is_ascii_digit() || c == '.')
        })
    };
    // vLLM's official image and SGLang's plain tags are CUDA builds; its ROCm and CANN builds
    // say so in the tag.
    let cuda_only = |image: &str| {
        image.contains("vllm/vllm-openai")
            || (image.contains("lmsysorg/sglang")
                && !image.contains("rocm")
                && !image.contains("cann"))
    };
    for vendor in catalogue.vendors.values() {
        for (engine, image) in &vendor.images {
            let tag = image
                .rsplit('/')
                .next()
                .and_then(|last| last.split_once(':'))
                .map(|(_, tag)| tag);
            let unpublished = vendor.unpublished.contains_key(engine);
            assert!(
                unpublished || (tag.is_some() && (tag != Some("latest") || release_in_path(image))),
                "{}: {engine} image `{image}` is not pinned",
                vendor.id
            );
            if vendor.id != "nvidia" {
                assert!(
                    !cuda_only(image),
                    "{}: {engine} runs the CUDA image `{image}`",
                    vendor.id
                );
            }
        }
    }
    let unpublished: Vec<(&str, String)> = catalogue
        .vendors
        .values()
        .flat_map(|v| {
            v.unpublished
                .keys()
                .map(move |e| (v.id.as_str(), e.to_string()))
        })
        .collect();
    assert_eq!(unpublished, vec![("huawei", "lmdeploy".to_string())]);
}
