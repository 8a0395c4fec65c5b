use super::*;
use crate::calibrate::fit::predict;
use crate::catalogue::builtin;
use crate::runs::store::{COLUMNS, line};

/// A store row of Llama 3 70B on H100 at shanghai with layout `t{tp} p{pp} d{dp}` and a measured
/// figure to fill in.
fn row(id: &str, tp: u32, pp: u32, dp: u32, measured: f64) -> StoreRow {
    StoreRow {
        run_id: format!("shanghai_2026-12-0{id}_probe"),
        date: format!("2026-12-0{id}"),
        pool: "xirang".into(),
        site: "shanghai".into(),
        job: "llama3-70b-pretrain".into(),
        tool: "megatron-lm".into(),
        log: format!("logs/{id}.log"),
        layers: 80,
        hidden: 8192,
        heads: 64,
        kv_heads: 8,
        ffn: 28672,
        vocab: 128_256,
        mlp: "swiglu".into(),
        seq_len: 8192,
        device: "H100_SXM".into(),
        devices: tp * pp * dp,
        node_nic_gbps: 3200.0,
        precision: "bf16".into(),
        tp,
        pp,
        dp,
        cp: 1,
        vpp: 1,
        zero: 1,
        recompute: Some("none".into()),
        micro_batch: Some(1),
        global_batch: 256,
        ep: None,
        experts: None,
        top_k: None,
        measured_tokens_per_s_per_device: measured,
        predicted_tokens_per_s_per_device: None,
        throughput_uncertainty: None,
        source: "runs store: megatron-lm".into(),
        ..StoreRow::default()
    }
}

fn store(rows: &[StoreRow]) -> Vec<(String, String)> {
    let mut text = format!("{COLUMNS}\n");
    for r in rows {
        text.push_str(&line(r));
        text.push('\n');
    }
    vec![("specs/runs/shanghai/runs.csv".into(), text)]
}

/// Three runs "measured" at what the planner's own model predicts with the GEMM share × 0.8:
/// one factor per three runs, so only `gemm` is fitted; the fit finds 0.8 and shrinks it with
/// n = 3, k = 1 to 0.8^(3/4) = 0.8459.
#[test]
fn the_store_fit_finds_a_known_gemm_factor_on_the_sites_own_figures() {
    let catalogue = builtin();
    let layouts = [("1", 8, 4, 2), ("2", 8, 8, 1), ("3", 4, 8, 2)];
    let draft: Vec<StoreRow> = layouts
        .iter()
        .map(|(id, tp, pp, dp)| row(id, *tp, *pp, *dp, 1000.0))
        .collect();
    let groups = prepare_store(&store(&draft), &catalogue).unwrap();
    let runs = &groups[&("xirang".to_string(), "shanghai".to_string())]["H100_SXM"];
    assert_eq!(runs.len(), 3, "every layout is costed");
    let truth = Factors {
        gemm: 0.8,
        ..Factors::ONE
    };
    let measured: Vec<StoreRow> = runs
        .iter()
        .map(|(r, p)| {
            let mut r = r.clone();
            r.measured_tokens_per_s_per_device = predict(p, &truth).unwrap();
            r
        })
        .collect();
    let sites = fit_store(&store(&measured), &catalogue).unwrap();
    let [site] = sites.as_slice() else {
        panic!("{sites:?}")
    };
    let h100 = &site.devices["H100_SXM"];
    assert_eq!(h100.runs, 3);
    assert_eq!(h100.fitted, vec!["gemm"]);
    assert!((h100.gemm - 0.8459).abs() < 0.002, "{h100:?}");
    assert_eq!(
        (h100.first_run.as_str(), h100.last_run.as_str()),
        ("2026-12-01", "2026-12-03")
    );
    // The file reads back as written, and the catalogue applies it to the site's groups only.
    let text = to_yaml(site);
    assert_eq!(parse(&text).unwrap(), *site);
    let mut sources: Vec<(String, String)> = crate::catalogue::builtin_sources()
        .into_iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
    sources.push(("specs/calibration/xirang-shanghai.yaml".into(), text));
    let triples: Vec<(loam_ir::span::FileId, &str, &str)> = sources
        .iter()
        .enumerate()
        .map(|(i, (p, t))| (loam_ir::span::FileId(i as u32), p.as_str(), t.as_str()))
        .collect();
    let (calibrated, diags) = crate::catalogue::load(&triples);
    assert!(diags.is_empty(), "{diags:#?}");
    let calibrated = calibrated.unwrap();
    let pool = &calibrated.pools["xirang"];
    let (site, group) = pool.node_group("sh-h100-a").unwrap();
    let device = calibrated.device("H100_SXM").unwrap();
    let shipped = crate::cost::FittedConstants::SHIPPED.gemm_sustained;
    assert!(
        (group.cluster_figures(device, site).fitted.gemm_sustained - shipped * h100.gemm).abs()
            < 1e-12
    );
    let (other_site, other) = pool.node_group("sh-h20-a").unwrap();
    let h20 = calibrated.device("H20").unwrap();
    assert_eq!(
        other.cluster_figures(h20, other_site),
        other.cluster_figures_uncalibrated(h20, other_site)
    );
}

#[test]
fn a_calibration_of_an_unknown_site_or_device_is_a_located_error() {
    let text = "pool: xirang\nsite: atlantis\ndevices: {}\n";
    let mut catalogue = builtin();
    let mut diags = Vec::new();
    attach(
        &mut catalogue,
        loam_ir::span::FileId(7),
        "specs/calibration/x.yaml",
        text,
        &mut diags,
    );
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, crate::catalogue::codes::UNKNOWN_SITE);
    // The span is the `site:` line: it starts after "pool: xirang\n", 13 bytes.
    assert_eq!(diags[0].span.unwrap().start, 13);
    let bad = "pool: xirang\nsite: shanghai\ndevices:\n  MI300X:\n    runs: 1\n    run_ids: [a]\n    first_run: \"2026-12-01\"\n    last_run: \"2026-12-01\"\n    fitted: [gemm]\n    gemm: 0.9\n    scale_out: 1.0\n    scale_up: 1.0\n    throughput_uncertainty: 0.3\n    median_abs_error_pct: 0.0\n";
    let mut diags = Vec::new();
    attach(
        &mut catalogue,
        loam_ir::span::FileId(7),
        "specs/calibration/x.yaml",
        bad,
        &mut diags,
    );
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, crate::catalogue::codes::UNKNOWN_DEVICE);
    let absurd = bad
        .replace("MI300X", "H100_SXM")
        .replace("gemm: 0.9", "gemm: 40");
    assert!(parse(&absurd).unwrap_err().contains("`gemm` is 40"));
    // A fixed cost per step reads back as written; a negative or non-finite one is an error at
    // its line.
    let site = bad.replace("MI300X", "H100_SXM");
    let fixed = site.replace("scale_up: 1.0\n", "scale_up: 1.0\n    fixed_s: 0.25\n");
    let read = parse(&fixed).unwrap();
    assert_eq!(read.devices["H100_SXM"].fixed_s, 0.25);
    assert_eq!(read.devices["H100_SXM"].factors().fixed_s, 0.25);
    assert!(to_yaml(&read).contains("    fixed_s: 0.2500\n"));
    assert_eq!(parse(&site).unwrap().devices["H100_SXM"].fixed_s, 0.0);
    assert!(!to_yaml(&parse(&site).unwrap()).contains("fixed_s"));
    // An attention factor reads back as written, is left out when it is the shipped 1.0, and
    // one outside 0.05–5 is refused.
    let attention = site.replace("scale_up: 1.0\n", "scale_up: 1.0\n    attention: 0.62\n");
    let read = parse(&attention).unwrap();
    assert_eq!(read.devices["H100_SXM"].factors().attention, 0.62);
    assert!(to_yaml(&read).contains("    attention: 0.6200\n"));
    assert_eq!(parse(&site).unwrap().devices["H100_SXM"].attention, 1.0);
    assert!(!to_yaml(&parse(&site).unwrap()).contains("attention"));
    let absurd = parse(&attention.replace("attention: 0.62", "attention: 9")).unwrap_err();
    assert!(absurd.contains("`attention` is 9"), "{absurd}");
    // Applied to a site group's figures, it scales both attention rates and never lifts one
    // above the 16-bit peak.
    let catalogue = builtin();
    let (sh, group) = catalogue.pools["xirang"].node_group("sh-h100-a").unwrap();
    let mut cluster = group.cluster_figures_uncalibrated(catalogue.device("H100_SXM").unwrap(), sh);
    let shipped = cluster.device.efficiency.clone();
    read.devices["H100_SXM"].factors().apply(&mut cluster);
    let applied = &cluster.device.efficiency;
    assert!((applied.attention_forward - 0.62 * shipped.attention_forward).abs() < 1e-12);
    assert!((applied.attention_backward - 0.62 * shipped.attention_backward).abs() < 1e-12);
    cluster.device.efficiency.attention_forward = 0.9;
    Factors {
        attention: 2.0,
        ..Factors::ONE
    }
    .apply(&mut cluster);
    assert_eq!(cluster.device.efficiency.attention_forward, 1.0);
    // Attached, the site's H100 groups carry it into the figures every plan there is costed on.
    let mut calibrated = builtin();
    let mut diags = Vec::new();
    attach(
        &mut calibrated,
        loam_ir::span::FileId(7),
        "specs/calibration/x.yaml",
        &fixed,
        &mut diags,
    );
    assert!(diags.is_empty(), "{diags:#?}");
    let (sh, group) = calibrated.pools["xirang"].node_group("sh-h100-a").unwrap();
    let h100 = calibrated.device("H100_SXM").unwrap();
    assert_eq!(group.cluster_figures(h100, sh).fitted.step_overhead_s, 0.25);
    assert_eq!(
        group
            .cluster_figures_uncalibrated(h100, sh)
            .fitted
            .step_overhead_s,
        0.0
    );
    for value in ["-0.5", ".nan", ".inf"] {
        let broken = fixed.replace("fixed_s: 0.25", &format!("fixed_s: {value}"));
        let mut diags = Vec::new();
        attach(
            &mut builtin(),
            loam_ir::span::FileId(7),
            "specs/calibration/x.yaml",
            &broken,
            &mut diags,
        );
        assert_eq!(diags.len(), 1, "{value}");
        assert_eq!(diags[0].code, crate::catalogue::codes::INVALID_YAML);
        assert!(
            diags[0].message.contains("`fixed_s`"),
            "{}",
            diags[0].message
        );
        let start = u32::try_from(broken.find("    fixed_s:").unwrap() + 4).unwrap();
        assert_eq!(diags[0].span.unwrap().start, start, "{value}");
    }
}

/// A site calibration with one vLLM efficiency and no device factors.
fn serving_only() -> SiteCalibration {
    let mut serving = BTreeMap::new();
    serving.insert(
        "vllm".to_string(),
        EngineCalibration {
            runs: 2,
            run_ids: vec![
                "zhongwei_2026-12-01_a".into(),
                "zhongwei_2026-12-02_b".into(),
            ],
            first_run: "2026-12-01".into(),
            last_run: "2026-12-02".into(),
            efficiency: 1.25,
            throughput_uncertainty: 0.12,
            median_abs_error_pct: 3.5,
        },
    );
    SiteCalibration {
        pool: "xirang".into(),
        site: "zhongwei".into(),
        devices: BTreeMap::new(),
        serving,
    }
}

#[test]
fn a_serving_calibration_reads_back_as_written_and_attaches_to_its_site() {
    let written = serving_only();
    let text = to_yaml(&written);
    assert!(text.contains("serving:\n  vllm:\n    runs: 2\n"), "{text}");
    assert_eq!(parse(&text).unwrap(), written);
    let mut catalogue = builtin();
    let mut diags = Vec::new();
    attach(
        &mut catalogue,
        loam_ir::span::FileId(3),
        "c.yaml",
        &text,
        &mut diags,
    );
    assert!(diags.is_empty(), "{diags:#?}");
    let site = catalogue.pools["xirang"].site("zhongwei").unwrap();
    assert_eq!(
        site.calibration.as_ref().unwrap().serving["vllm"].efficiency,
        1.25
    );
    // A file without serving runs writes no `serving:` key (training calibrations are written
    // as before).
    let mut training = written.clone();
    training.serving.clear();
    assert!(!to_yaml(&training).contains("serving"));
}

#[test]
fn an_unknown_engine_and_an_absurd_efficiency_are_errors_at_the_engine_s_line() {
    let text = to_yaml(&serving_only())
        .replace("  vllm:", "  vllmx:")
        .replace("efficiency: 1.2500", "efficiency: 9.0000");
    let mut catalogue = builtin();
    let mut diags = Vec::new();
    attach(
        &mut catalogue,
        loam_ir::span::FileId(3),
        "c.yaml",
        &text,
        &mut diags,
    );
    let codes: Vec<_> = diags.iter().map(|d| d.code).collect();
    assert_eq!(
        codes,
        vec![
            crate::catalogue::codes::WRONG_TYPE,
            crate::catalogue::codes::OUT_OF_RANGE
        ],
        "{diags:#?}"
    );
    let line = u32::try_from(text.find("  vllmx:").unwrap()).unwrap();
    assert!(diags.iter().all(|d| d.span.unwrap().start == line));
    // Nothing of a refused file is attached.
    let site = catalogue.pools["xirang"].site("zhongwei").unwrap();
    assert!(site.calibration.is_none());
}
