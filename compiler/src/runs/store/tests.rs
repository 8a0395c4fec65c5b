use super::*;
use crate::catalogue::builtin;

/// A good row: Llama 3 70B on 64 H100 at shanghai (xirang's `sh-h100-a`: 8 NICs of 400 Gbps,
/// 3,200 Gbps per node), t4 p4 d4: 4 × 4 × 4 = 64 devices.
const GOOD: &str = "shanghai_2026-12-04_megatron-70b,2026-12-04,xirang,shanghai,llama3-70b-pretrain,\
megatron-lm,megatron-70b.log,80,8192,64,8,28672,128256,swiglu,8192,H100_SXM,64,3200,bf16,4,4,4,1,\
5,1,,1,256,,,,520.00,610.00,0.3000,runs store: megatron-lm\n";

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
    let located: Vec<(usize, Option<&str>, ProblemKind)> = problems
        .iter()
        .map(|p| (p.line, p.column, p.kind))
        .collect();
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
    let cut = GOOD.trim_end_matches('\n');
    let text = file(&[&absent, &wrong_count, cut]);
    let problems = check("shanghai", &text, &catalogue);
    let located: Vec<(usize, Option<&str>)> = problems.iter().map(|p| (p.line, p.column)).collect();
    assert_eq!(
        located,
        vec![(4, None), (2, Some("device")), (3, Some("devices"))],
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

/// A good serving row: Llama 3.1 70B on vLLM, 12 H800 at zhongwei (xirang's `zw-h800-a`), six
/// tp2 replicas; the figures are the vLLM fixture's (`tests/data/runs/vllm-benchmark-serving.json`:
/// 215,312 input and 198,604 output tokens over 1,000 completed requests, 215.3 and 198.6 a
/// request).
const SERVING: &str = "zhongwei_2026-12-04_vllm-benchmark-serving,2026-12-04,xirang,zhongwei,\
llama31-70b-chat,vllm-benchmark-serving,vllm-benchmark-serving.json,vllm,,\
meta-llama/Llama-3.1-70B-Instruct,80,8192,64,8,28672,128256,fp8,H800_SXM,12,2,1,6,poisson,215.3,\
198.6,8,,1513.70,7.6200,78.20,241.90,30.50,52.70,500.00,185.00,33.00,0.1000,\
runs store: vllm-benchmark-serving\n";

fn serving_file(rows: &[&str]) -> String {
    format!("{}\n{}", serving::COLUMNS, rows.concat())
}

#[test]
fn a_good_serving_row_has_no_problem_and_reads_back_as_written() {
    let catalogue = builtin();
    let text = serving_file(&[SERVING]);
    assert_eq!(check("zhongwei", &text, &catalogue), vec![]);
    let rows = serving::read_rows(&text);
    assert_eq!(rows.len(), 1);
    assert_eq!(format!("{}\n", serving::line(&rows[0])), SERVING);
    // A serving file holds no training row, and a training file no serving row.
    assert!(read_rows(&text).is_empty());
    assert!(serving::read_rows(&file(&[GOOD])).is_empty());
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
    let located: Vec<(usize, Option<&str>, ProblemKind)> = problems
        .iter()
        .map(|p| (p.line, p.column, p.kind))
        .collect();
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
