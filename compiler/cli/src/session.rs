//! Loading what a command works on: spec files parsed and checked, with their sources kept for
//! rendering diagnostics.

use crate::io::{self, IoError};
use loam_compiler::check::{Job, check_file, check_unique_job_names};
use loam_compiler::diagnostics::Diagnostic;
use loam_compiler::span::SourceMap;
use loam_compiler::syntax::{decode_utf8, parse};
use std::path::PathBuf;

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

/// Reads, parses and checks the spec files named by `paths`.
pub fn load_specs(paths: &[PathBuf]) -> Result<Specs, IoError> {
    let mut specs = Specs {
        sources: SourceMap::new(),
        files: Vec::new(),
        jobs: Vec::new(),
        diagnostics: Vec::new(),
    };
    for path in io::find_spec_files(paths)? {
        let bytes = io::read(&path)?;
        let name = io::display(&path);
        add_spec(&mut specs, name, &bytes);
    }
    let duplicates = check_unique_job_names(&specs.jobs);
    specs.diagnostics.extend(duplicates);
    specs
        .diagnostics
        .sort_by_key(|d| (d.span.file, d.span.start, d.code));
    Ok(specs)
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
