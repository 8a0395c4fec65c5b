//! Fuzz target: parsing, checking against the built-in catalogue and planning every job and
//! service that checks clean must never panic or hang (the shipped catalogue is the one most
//! specs plan against; `parse_check` never reaches the catalogue checks or the planner).
#![no_main]

use libfuzzer_sys::fuzz_target;
use loam_compiler::catalogue::{self, Catalogue};
use loam_compiler::check::catalogue::{check_job, check_service};
use loam_compiler::check::check_file;
use loam_compiler::plan::plan_job;
use loam_compiler::plan::service::plan_service;
use loam_compiler::syntax::{decode_utf8, parse};
use loam_ir::span::FileId;
use std::sync::OnceLock;

/// Loaded once per process: loading and validating the catalogue costs more than most inputs.
static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let catalogue = CATALOGUE.get_or_init(catalogue::builtin);
    let Ok(text) = decode_utf8(FileId(0), data) else { return };
    let parsed = parse(FileId(0), &text);
    let Some(file) = parsed.file else { return };
    let checked = check_file(&file);
    // As `project` does: a file with an error of its own is not planned.
    let clean = !checked.diagnostics.iter().any(|d| d.is_error());
    for job in &checked.jobs {
        let found = check_job(job, catalogue);
        if clean && !found.iter().any(|d| d.is_error()) {
            let _ = plan_job(job, "fuzz.loam", catalogue);
        }
    }
    for service in &checked.services {
        let found = check_service(service, catalogue);
        if clean && !found.iter().any(|d| d.is_error()) {
            let _ = plan_service(service, "fuzz.loam", catalogue);
        }
    }
});
