//! Loading what a command works on: the catalogue and the spec files, parsed and checked (also
//! against the catalogue), with their sources kept for rendering diagnostics.

pub use crate::catalogue_source::load_catalogue;
use crate::io::{self, IoError};
use loam_compiler::catalogue::{Catalogue, check_job};
use loam_compiler::check::{Job, check_file};
use loam_compiler::diagnostics::Diagnostic;
use loam_compiler::span::SourceMap;
use loam_compiler::syntax::{decode_utf8, parse};
use std::path::{Path, PathBuf};

/// Spec files, parsed and checked.
pub struct Specs {
    /// Every source text read, for rendering diagnostics.
    pub sources: SourceMap,
    /// The display path of each spec file read, in order.
    pub files: Vec<String>,
    /// The jobs complete enough to plan.
    pub jobs: Vec<Job>,
    /// Everything found wrong, sorted by file and position.
    pub diagnostics: Vec<Diagnostic>,
}

impl Specs {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Reads, parses and checks the spec files named by `paths` (no catalogue checks).
pub fn load_specs(paths: &[PathBuf]) -> Result<Specs, IoError> {
    let mut specs = Specs {
        sources: SourceMap::new(),
        files: Vec::new(),
        jobs: Vec::new(),
        diagnostics: Vec::new(),
    };
    read_specs(&mut specs, paths)?;
    Ok(specs)
}

/// Loads the catalogue (see [`load_catalogue`]), then reads, parses and checks the spec files
/// named by `paths`, and checks every job against the catalogue.
///
/// When the catalogue has errors, nothing else runs: the specs hold only the catalogue's
/// diagnostics and the catalogue is `None`.
pub fn load_checked(
    paths: &[PathBuf],
    cli_catalogue: Option<&Path>,
) -> Result<(Specs, Option<Catalogue>), IoError> {
    let mut sources = SourceMap::new();
    let (catalogue, diagnostics) = load_catalogue(cli_catalogue, &mut sources)?;
    let mut specs = Specs {
        sources,
        files: Vec::new(),
        jobs: Vec::new(),
        diagnostics,
    };
    let Some(catalogue) = catalogue else {
        return Ok((specs, None));
    };
    read_specs(&mut specs, paths)?;
    check_against(&mut specs, &catalogue);
    Ok((specs, Some(catalogue)))
}

/// Checks every job of `specs` against `catalogue`, adding the diagnostics in order.
///
/// A job with a syntax error inside it (L0xxx, such as a bad escape in a string) is skipped:
/// its values are not what the author meant, and checking them would only add noise.
pub fn check_against(specs: &mut Specs, catalogue: &Catalogue) {
    let mut found = Vec::new();
    for job in &specs.jobs {
        let garbled = specs.diagnostics.iter().any(|d| {
            d.code.as_str().starts_with("L0")
                && d.span.is_some_and(|s| {
                    s.file == job.span.file && s.start >= job.span.start && s.end <= job.span.end
                })
        });
        if !garbled {
            found.extend(check_job(job, catalogue));
        }
    }
    specs.diagnostics.extend(found);
    sort_diagnostics(specs);
}

fn read_specs(specs: &mut Specs, paths: &[PathBuf]) -> Result<(), IoError> {
    let mut files = Vec::new();
    for path in io::find_spec_files(paths)? {
        let bytes = io::read(&path)?;
        files.push((io::display(&path), bytes));
    }
    // Parsed and checked on every core; the result is the same as one file after another.
    crate::parallel::add_specs(specs, files);
    Ok(())
}

fn sort_diagnostics(specs: &mut Specs) {
    specs.diagnostics.sort_by_key(Diagnostic::sort_key);
}

/// Parses and checks one file's bytes into `specs`.
pub fn add_spec(specs: &mut Specs, name: String, bytes: &[u8]) {
    let lossy = String::from_utf8_lossy(bytes).into_owned();
    let id = specs.sources.add(name.clone(), lossy);
    specs.files.push(name);
    let text = match decode_utf8(id, bytes) {
        Ok(text) => text,
        Err(diagnostic) => {
            specs.diagnostics.push(*diagnostic);
            return;
        }
    };
    let parsed = parse(id, text);
    specs.diagnostics.extend(parsed.diagnostics);
    if let Some(file) = parsed.file {
        let checked = check_file(&file);
        specs.diagnostics.extend(checked.diagnostics);
        specs.jobs.extend(checked.jobs);
    }
}

/// The catalogue plans are made against: `--catalogue DIR`, else `./specs`, else the built-in
/// one (see [`load_catalogue`]). A catalogue with errors is reported as an error that points
/// to `loam check`, which shows them; commands that render diagnostics use [`load_checked`].
pub fn plan_catalogue(dir: Option<&Path>) -> Result<Catalogue, IoError> {
    let mut sources = SourceMap::new();
    let (catalogue, diagnostics) = load_catalogue(dir, &mut sources)?;
    catalogue.ok_or_else(|| {
        let errors = diagnostics.iter().filter(|d| d.is_error()).count();
        IoError(format!(
            "the catalogue has {errors} error(s); `loam check` shows them"
        ))
    })
}

/// Plans every job of `specs` against `catalogue`: the Plan IR document (plans sorted by file,
/// jobs of a file in source order) and every diagnostic to show with it: the specs' warnings and
/// the planner's, sorted by place. Callers run it only when `specs` has no errors.
pub fn plan_specs(
    specs: &Specs,
    catalogue: &loam_compiler::catalogue::Catalogue,
) -> (loam_compiler::plan::ir::PlanDocument, Vec<Diagnostic>) {
    let jobs: Vec<(&Job, &str)> = specs
        .jobs
        .iter()
        .map(|job| {
            let file = specs.sources.get(job.file).map_or("", |f| f.name.as_str());
            (job, file)
        })
        .collect();
    let (doc, mut diagnostics) = crate::parallel::plan_jobs(&jobs, catalogue);
    diagnostics.extend(specs.diagnostics.iter().cloned());
    diagnostics.sort_by_key(Diagnostic::sort_key);
    (doc, diagnostics)
}
