//! Benchmark: parse and check 1,000 generated spec files of realistic size (goal: under 1 s in
//! total on the 2-core CI machine).

// A benchmark is a test: a panic on bad generated input is the right failure, and criterion's
// macros generate undocumented functions.
#![allow(clippy::expect_used, clippy::indexing_slicing, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use loam_compiler::check::check_file;
use loam_compiler::syntax::parse;
use loam_ir::span::FileId;
use std::hint::black_box;

/// One realistic spec (about 1.2 KB, 8 blocks), varied by `i` so no two files are equal.
fn spec(i: usize) -> String {
    let layers = 16 + (i % 8) * 8;
    let heads = [16, 32, 40, 64][i % 4];
    format!(
        r#"# Generated job {i}: a dense model with every block written out.
job "bench-job-{i}" {{
  tenant   = "nlp"
  priority = high

  model {{
    arch     = dense
    mlp      = swiglu
    layers   = {layers}
    hidden   = {hidden}
    ffn      = {ffn}
    heads    = {heads}
    kv_heads = 8
    vocab    = 128256
    seq_len  = 8192
  }}

  train {{
    tokens       = 2T
    global_batch = 1024
    precision    = bf16
    optimizer    = adamw
  }}

  parallel {{
    tensor      = auto
    pipeline    = auto
    data        = auto
    context     = 1
    micro_batch = auto
    zero        = auto
    recompute   = auto
  }}

  data "corpus-{i}" {{
    site = guiyang
    size = 48TB
  }}

  resources {{
    pool          = xirang
    devices       = [H100_SXM, Ascend910B]
    max_devices   = 2048
    interruptible = false
  }}

  goal {{
    optimize = cost
    deadline = 30d
    budget   = 2.5M CNY
  }}

  checkpoint {{
    path     = "/ckpt/nlp/job-{i}"
    interval = auto
  }}
}}
"#,
        hidden = heads * 128,
        ffn = heads * 128 * 7 / 2,
    )
}

fn parse_and_check_1000_files(c: &mut Criterion) {
    let files: Vec<String> = (0..1000).map(spec).collect();
    let total_bytes: usize = files.iter().map(String::len).sum();
    c.bench_function(
        &format!("parse+check 1000 files ({} KB)", total_bytes / 1000),
        |b| {
            b.iter(|| {
                let mut n_jobs = 0;
                for (i, text) in files.iter().enumerate() {
                    let id = FileId(u32::try_from(i).unwrap_or(0));
                    let parsed = parse(id, black_box(text));
                    let file = parsed.file.expect("generated specs parse");
                    let checked = check_file(&file);
                    assert!(checked.diagnostics.is_empty(), "{:?}", checked.diagnostics);
                    n_jobs += checked.jobs.len();
                }
                n_jobs
            });
        },
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = parse_and_check_1000_files
}
criterion_main!(benches);
