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
