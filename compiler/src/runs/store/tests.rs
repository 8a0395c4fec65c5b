use super::*;
use crate::catalogue::builtin;

/// A good row: Llama 3 70B on 64 H100 at shanghai (xirang's `sh-h100-a`: 8 NICs of 400 Gbps,
/// 3,200 Gbps per node), t4 p4 d4: 4 × 4 × 4 = 64 devices.
const GOOD: &str = "shanghai_2026-12-04_megatron-70b,2026-12-04,xirang,shanghai,llama3-70b-pretrain,\
megatron-lm,megatron-70b.log,80,8192,64,8,28672,128256,swiglu,8192,H100_SXM,64,3200,bf16,4,4,4,1,\
5,1,,1,256,,,,520.00,610.00,0.3000,runs store: megatron-lm,,,,,,,,,,,,,,,,,,\n";

/// Each problem's line, column and kind, in order.
fn located(problems: &[StoreProblem]) -> Vec<(usize, Option<&'static str>, ProblemKind)> {
    problems
        .iter()
        .map(|p| (p.line, p.column, p.kind))
        .collect()
}

fn file(rows: &[&str]) -> String {
    format!("{COLUMNS}\n{}", rows.concat())
}

#[test]
fn a_good_row_has_no_problem_and_reads_back_as_written() {
    let catalogue = builtin();
    let text = file(&[GOOD]);
    assert_eq!(check("shanghai", &text, &catalogue), vec![]);
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let row: StoreRow = reader.deserialize().next().unwrap().unwrap();
    assert_eq!(format!("{}\n", line(&row)), GOOD);
}

#[test]
fn unknown_site_device_and_a_wrong_folder_are_located_at_their_line() {
    let catalogue = builtin();
    let unknown_site = GOOD.replace(",shanghai,llama3", ",atlantis,llama3");
    let unknown_device = GOOD.replace("H100_SXM", "H900");
    // Line 1 is the header; rows are lines 2, 3, 4.
    let text = file(&[GOOD, &unknown_site, &unknown_device]);
    let problems = check("shanghai", &text, &catalogue);
    let located = located(&problems);
    assert_eq!(
        located,
        vec![
            (3, Some("site"), ProblemKind::Malformed),
            (3, Some("site"), ProblemKind::UnknownSite),
            (4, Some("device"), ProblemKind::UnknownDevice),
        ]
    );
}

#[test]
fn a_device_the_site_lacks_a_layout_that_misses_the_devices_and_a_cut_line_are_refused() {
    let catalogue = builtin();
    // Shanghai has H100_SXM, H20, L40S … but no MI300X (a device of the catalogue).
    let absent = GOOD.replace("H100_SXM", "MI300X");
    // t4 p4 d4 is 64 devices, not 128.
    let wrong_count = GOOD.replace(",H100_SXM,64,", ",H100_SXM,128,");
    // Four degrees of four billion: their product is beyond 64 bits, not a panic.
    let huge = GOOD.replace(
        ",bf16,4,4,4,1,",
        ",bf16,4000000000,4000000000,4000000000,4000000000,",
    );
    let cut = GOOD.trim_end_matches('\n');
    let text = file(&[&absent, &wrong_count, &huge, cut]);
    let problems = check("shanghai", &text, &catalogue);
    let located: Vec<(usize, Option<&str>)> = problems.iter().map(|p| (p.line, p.column)).collect();
    assert_eq!(
        located,
        vec![
            (5, None),
            (2, Some("device")),
            (3, Some("devices")),
            (4, Some("devices"))
        ],
        "{problems:#?}"
    );
}

#[test]
fn a_file_without_the_header_is_one_problem_at_line_1() {
    let problems = check("shanghai", GOOD, &builtin());
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].line, 1);
}

#[test]
fn store_paths_are_runs_site_csv() {
    assert!(is_store_path("specs/runs/shanghai/2026.csv"));
    assert!(!is_store_path("specs/runs/2026.csv"));
    assert!(!is_store_path("specs/pools/x.csv"));
    assert!(!is_store_path("specs/runs/shanghai/notes.md"));
}

#[test]
fn the_catalogue_reports_a_store_problem_at_its_file_and_line_and_keeps_its_digest() {
    let sources: Vec<(String, String)> = crate::catalogue::builtin_sources()
        .into_iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
    let load = |extra: Option<&str>| {
        let mut all = sources.clone();
        if let Some(text) = extra {
            all.push(("specs/runs/shanghai/2026.csv".into(), text.into()));
        }
        let triples: Vec<(loam_ir::span::FileId, &str, &str)> = all
            .iter()
            .enumerate()
            .map(|(i, (p, t))| (loam_ir::span::FileId(i as u32), p.as_str(), t.as_str()))
            .collect();
        crate::catalogue::load(&triples)
    };
    let (plain, _) = load(None);
    let (with_good, diags) = load(Some(&file(&[GOOD])));
    assert!(diags.is_empty(), "{diags:#?}");
    assert_eq!(plain.unwrap().digest(), with_good.unwrap().digest());
    let bad = file(&[&GOOD.replace("H100_SXM", "H900")]);
    let (none, diags) = load(Some(&bad));
    assert!(none.is_none());
    assert_eq!(diags.len(), 1);
    let span = diags[0].span.unwrap();
    // The span is the whole second line: it starts right after the header's newline.
    assert_eq!(span.start as usize, COLUMNS.len() + 1);
    assert_eq!(diags[0].code, crate::catalogue::codes::UNKNOWN_DEVICE);
}

/// A good serving row of the store's first header: Llama 3.1 70B on vLLM, 12 H800 at zhongwei
/// (xirang's `zw-h800-a`), six tp2 replicas; the figures are the vLLM fixture's
/// (`tests/data/runs/vllm-benchmark-serving.json`: 215,312 input and 198,604 output tokens over
/// 1,000 completed requests, 215.3 and 198.6 a request).
const SERVING: &str = "zhongwei_2026-12-04_vllm-benchmark-serving,2026-12-04,xirang,zhongwei,\
llama31-70b-chat,vllm-benchmark-serving,vllm-benchmark-serving.json,vllm,,\
meta-llama/Llama-3.1-70B-Instruct,80,8192,64,8,28672,128256,fp8,H800_SXM,12,2,1,6,poisson,215.3,\
198.6,8,,1513.70,7.6200,78.20,241.90,30.50,52.70,500.00,185.00,33.00,0.1000,\
runs store: vllm-benchmark-serving\n";

/// The same run of the disaggregated deployment the chat example plans, in the current header:
/// two tp2 decode replicas of 512 sequences and four tp2 prefill replicas of 64, on nodes of 8
/// devices with 50 GB/s each off the node.
const DISAGGREGATED: &str = "zhongwei_2026-12-04_vllm-benchmark-serving,2026-12-04,xirang,\
zhongwei,llama31-70b-chat,vllm-benchmark-serving,vllm-benchmark-serving.json,vllm,,\
meta-llama/Llama-3.1-70B-Instruct,80,8192,64,8,28672,128256,fp8,H800_SXM,12,2,1,2,poisson,215.3,\
198.6,8,,1513.70,7.6200,78.20,241.90,30.50,52.70,500.00,185.00,33.00,0.1000,\
runs store: vllm-benchmark-serving,8,50.000,512,2,1,4,64,,,,,,,,,,,,,,,,\n";

fn serving_file(rows: &[&str]) -> String {
    format!("{}\n{}", serving::COLUMNS, rows.concat())
}

#[test]
fn a_good_serving_row_has_no_problem_and_reads_back_as_written() {
    let catalogue = builtin();
    let text = serving_file(&[DISAGGREGATED]);
    assert_eq!(check("zhongwei", &text, &catalogue), vec![]);
    let rows = serving::read_rows(&text);
    assert_eq!(rows.len(), 1);
    assert_eq!(format!("{}\n", serving::line(&rows[0])), DISAGGREGATED);
    assert_eq!(
        rows[0].prefill(),
        Some(serving::PrefillRole {
            tensor: 2,
            pipeline: 1,
            replicas: 4,
            max_batch: 64
        })
    );
    // A serving file holds no training row, and a training file no serving row.
    assert!(read_rows(&text).is_empty());
    assert!(serving::read_rows(&file(&[GOOD])).is_empty());
}

/// Files started with the first header are read, checked and appended to in their own columns;
/// extending their first line to the current header keeps every row.
#[test]
fn a_file_of_the_first_header_keeps_its_rows_and_takes_only_aggregated_ones() {
    let catalogue = builtin();
    let first = format!("{}\n{SERVING}", serving::FIRST_COLUMNS);
    assert!(serving::is_file(&first));
    assert_eq!(check("zhongwei", &first, &catalogue), vec![]);
    let rows = serving::read_rows(&first);
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].prefill(), rows[0].max_batch), (None, None));
    // An aggregated row goes in without its deployment columns; a disaggregated one cannot.
    let line = serving::line_for(&rows[0], serving::FIRST_COLUMNS).unwrap();
    assert_eq!(format!("{line}\n"), SERVING);
    let disaggregated = &serving::read_rows(&serving_file(&[DISAGGREGATED]))[0];
    let refused = serving::line_for(disaggregated, serving::FIRST_COLUMNS).unwrap_err();
    assert!(refused.contains("extend its first line"), "{refused}");
    assert!(serving::line_for(disaggregated, "run_id,date").is_err());
    // The first line extended: the old row reads with blank deployment columns beside a new one.
    let extended = serving_file(&[SERVING, DISAGGREGATED]);
    assert_eq!(check("zhongwei", &extended, &catalogue), vec![]);
    let rows = serving::read_rows(&extended);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].prefill(), None);
    assert_eq!(rows[1].max_batch, Some(512));
}

#[test]
fn a_disaggregated_row_states_its_whole_prefill_role_and_counts_both_roles_devices() {
    let catalogue = builtin();
    let partial = DISAGGREGATED.replace(",2,1,4,64,", ",2,1,,64,");
    // 2 × 2 decode and 4 × 2 prefill devices are 12, more than 11.
    let crowded = DISAGGREGATED.replace(",H800_SXM,12,", ",H800_SXM,11,");
    let zero = DISAGGREGATED.replace(",8,50.000,512,", ",8,50.000,0,");
    let longer = DISAGGREGATED.replace("\n", ",7\n");
    // Counts of four billion in both roles: their product is beyond 64 bits, not a panic.
    let huge = DISAGGREGATED
        .replace(
            ",12,2,1,2,poisson,",
            ",12,4000000000,4000000000,4000000000,poisson,",
        )
        .replace(",2,1,4,64,", ",4000000000,4000000000,4000000000,64,");
    let problems = check(
        "zhongwei",
        &serving_file(&[&partial, &crowded, &zero, &longer, &huge]),
        &catalogue,
    );
    let located = located(&problems);
    assert_eq!(
        located,
        vec![
            (2, Some("prefill_tp"), ProblemKind::Malformed),
            (3, Some("device_count"), ProblemKind::Malformed),
            (4, Some("max_batch"), ProblemKind::OutOfRange),
            (5, None, ProblemKind::Malformed),
            (6, Some("device_count"), ProblemKind::Malformed),
        ],
        "{problems:#?}"
    );
    assert!(
        problems[1].message.contains("of both roles is 12"),
        "{problems:#?}"
    );
}

#[test]
fn serving_rows_are_checked_like_training_rows_each_at_its_line() {
    let catalogue = builtin();
    let unknown_site = SERVING.replace(",xirang,zhongwei,", ",xirang,atlantis,");
    let unknown_device = SERVING.replace("H800_SXM", "H900");
    let engine = SERVING.replace(",vllm,,", ",vllmx,,");
    let slow = SERVING.replace(",1513.70,", ",-3,");
    // Six tp2 replicas are 12 devices, more than 10.
    let crowded = SERVING.replace(",H800_SXM,12,", ",H800_SXM,10,");
    let text = serving_file(&[
        SERVING,
        &unknown_site,
        &unknown_device,
        &engine,
        &slow,
        &crowded,
    ]);
    let problems = check("zhongwei", &text, &catalogue);
    let located = located(&problems);
    assert_eq!(
        located,
        vec![
            (3, Some("site"), ProblemKind::Malformed),
            (3, Some("site"), ProblemKind::UnknownSite),
            (4, Some("device"), ProblemKind::UnknownDevice),
            (5, Some("engine"), ProblemKind::Malformed),
            (6, Some("out_tok_s_total"), ProblemKind::OutOfRange),
            (7, Some("device_count"), ProblemKind::Malformed),
        ],
        "{problems:#?}"
    );
}

/// A mixture-of-experts row of the current header: DeepSeek-V3-like routing (8 groups, 4 per
/// token) with the deduplicated dispatch, on 64 H100 at shanghai.
const MOE: &str = "shanghai_2026-12-05_moe,2026-12-05,xirang,shanghai,moe-pretrain,megatron-lm,\
moe.log,24,2048,16,16,8192,32000,swiglu,4096,H100_SXM,64,3200,bf16,1,1,64,1,1,1,,1,512,8,64,6,\
3000.00,3100.00,0.3000,runs store: megatron-lm,1024,1,1,,8,4,deduplicated,,,,,,,,,,,\n";

#[test]
fn a_moe_row_keeps_its_routing_and_dispatch_and_reads_back_as_written() {
    let catalogue = builtin();
    let text = file(&[MOE]);
    assert_eq!(check("shanghai", &text, &catalogue), vec![]);
    let row = &read_rows(&text)[0];
    assert_eq!(
        (row.expert_groups, row.groups_per_token),
        (Some(8), Some(4))
    );
    assert_eq!(row.expert_dispatch.as_deref(), Some("deduplicated"));
    assert_eq!(format!("{}\n", line(row)), MOE);
}

#[test]
fn model_and_stack_columns_out_of_their_rules_are_located() {
    let catalogue = builtin();
    let cases = [
        // An unknown dispatch.
        (
            MOE.replace(",deduplicated,", ",broadcast,"),
            "expert_dispatch",
        ),
        // 6 groups do not divide 64 experts.
        (
            MOE.replace(",8,4,deduplicated,", ",6,4,deduplicated,"),
            "expert_groups",
        ),
        // A group limit without its second number.
        (
            MOE.replace(",8,4,deduplicated,", ",8,,deduplicated,"),
            "groups_per_token",
        ),
        // Every block dense.
        (MOE.replace(",1024,1,1,", ",1024,1,24,"), "dense_layers"),
        // A capacity factor below the balanced share.
        (
            MOE.replace(",1024,1,1,,", ",1024,1,1,0.5,"),
            "capacity_factor",
        ),
        // Latent attention with one width of five: the first missing one is named.
        (
            MOE.replace(
                ",deduplicated,,,,,,,,,,,\n",
                ",deduplicated,,,,512,,,,,,,\n",
            ),
            "kv_lora_rank",
        ),
        // A global-block cadence without a window.
        (
            MOE.replace(",deduplicated,,,,,,,,,,,\n", ",deduplicated,,,2,,,,,,,,\n"),
            "global_every",
        ),
        // An optimizer the language does not know.
        (
            GOOD.replace(
                "megatron-lm,,,,,,,,,,,,,,,,,,\n",
                "megatron-lm,,,,,,,,,,,,,,,,,adagrad,\n",
            ),
            "optimizer",
        ),
        // A dispatch on a dense row.
        (
            GOOD.replace(
                "megatron-lm,,,,,,,,,,,,,,,,,,\n",
                "megatron-lm,,,,,,,all_to_all,,,,,,,,,,,\n",
            ),
            "expert_dispatch",
        ),
    ];
    for (row, column) in cases {
        let problems = check("shanghai", &file(&[&row]), &catalogue);
        let located: Vec<(usize, Option<&str>)> =
            problems.iter().map(|p| (p.line, p.column)).collect();
        assert_eq!(located, vec![(2, Some(column))], "{row}{problems:#?}");
    }
}

/// Files started before the model and stack columns are read, checked and appended to in their
/// own header; a row that needs those columns is refused there with what to do.
#[test]
fn a_file_of_the_first_header_reads_and_takes_rows_without_model_columns() {
    let catalogue = builtin();
    let old_row = GOOD.replace("megatron-lm,,,,,,,,,,,,,,,,,,\n", "megatron-lm\n");
    let old = format!("{FIRST_COLUMNS}\n{old_row}");
    assert_eq!(check("shanghai", &old, &catalogue), vec![]);
    let rows = read_rows(&old);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].expert_dispatch, None);
    let line = line_for(&rows[0], FIRST_COLUMNS).unwrap();
    assert_eq!(format!("{line}\n"), old_row);
    let moe = &read_rows(&file(&[MOE]))[0];
    let refused = line_for(moe, FIRST_COLUMNS).unwrap_err();
    assert!(refused.contains("git mv"), "{refused}");
    assert_eq!(line_for(moe, COLUMNS).unwrap() + "\n", MOE);
    assert!(line_for(moe, "run_id,date").is_err());
}

/// The aggregated serving row with a mixture of experts' model columns: a GELU MLP the name
/// does not tell, 128 experts of 1,536 with 8 per token, heads of 128.
fn serving_moe() -> String {
    SERVING.replace(
        "runs store: vllm-benchmark-serving\n",
        "runs store: vllm-benchmark-serving,,,,,,,,gelu,128,8,1536,,,,128,,,,,,,,\n",
    )
}

#[test]
fn a_serving_row_keeps_its_model_and_its_columns_are_checked() {
    let catalogue = builtin();
    let moe = serving_moe();
    let text = serving_file(&[&moe]);
    assert_eq!(check("zhongwei", &text, &catalogue), vec![]);
    let row = &serving::read_rows(&text)[0];
    assert_eq!(row.mlp.as_deref(), Some("gelu"));
    assert_eq!((row.experts, row.top_k), (Some(128), Some(8)));
    assert_eq!(format!("{}\n", serving::line(row)), moe);
    // An earlier header has no column for them: refused, with the header to extend to.
    let refused = serving::line_for(row, serving::DEPLOYMENT_COLUMNS).unwrap_err();
    assert!(refused.contains("extend its first line"), "{refused}");
    let refused = serving::line_for(row, serving::FIRST_COLUMNS).unwrap_err();
    assert!(
        refused.contains("no columns for this service's model"),
        "{refused}"
    );
    let cases = [
        (moe.replace(",gelu,", ",swish,"), "mlp"),
        (moe.replace(",gelu,128,8,", ",gelu,128,,"), "top_k"),
        (moe.replace(",gelu,128,8,", ",gelu,8,128,"), "top_k"),
        (
            moe.replace(",gelu,128,8,1536,", ",gelu,,,1536,"),
            "expert_ffn",
        ),
    ];
    for (row, column) in cases {
        let problems = check("zhongwei", &serving_file(&[&row]), &catalogue);
        let located: Vec<(usize, Option<&str>)> =
            problems.iter().map(|p| (p.line, p.column)).collect();
        assert_eq!(located, vec![(2, Some(column))], "{row}{problems:#?}");
    }
}

/// The append's guard reads a row back as the serving fit does: the MoE row's columns give the
/// served model back whole; without them (an earlier header's row) the fit would read a dense
/// SwiGLU model and the guard names what differs.
#[test]
fn the_serving_fit_reads_a_stored_model_back_whole_and_the_guard_names_a_difference() {
    use crate::calibrate::stored_serving_model_differs;
    use crate::workload::ModelDims;
    use loam_ir::types::Mlp;
    let served = ModelDims::dense(80, 8192, 28672, 64, 8, 128_256, 8192, Mlp::Gelu)
        .with_experts(128, 8)
        .with_head_dim(128);
    let served = ModelDims {
        expert_ffn: Some(1536),
        ..served
    };
    assert_eq!(
        stored_serving_model_differs(&serving_file(&[&serving_moe()]), &served),
        None
    );
    let why = stored_serving_model_differs(&serving_file(&[SERVING]), &served).unwrap();
    assert!(
        why.contains("mlp, arch, experts, top_k, expert_ffn, head_dim"),
        "{why}"
    );
    // Latent attention reads back with every width, and one width apart is a difference.
    let mla_row = serving_moe().replace(",128,,,,,,,,\n", ",128,,,0,512,128,64,128,\n");
    let mla = |v_head_dim| crate::workload::Mla {
        q_lora_rank: 0,
        kv_lora_rank: 512,
        qk_nope_head_dim: 128,
        qk_rope_head_dim: 64,
        v_head_dim,
    };
    let file = serving_file(&[&mla_row]);
    assert_eq!(
        stored_serving_model_differs(&file, &served.clone().with_mla(mla(128))),
        None
    );
    let why = stored_serving_model_differs(&file, &served.with_mla(mla(96))).unwrap();
    assert!(why.ends_with("(it differs in mla)"), "{why}");
}
