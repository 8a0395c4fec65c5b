//! Reading what a command works on: the catalogue's files and the spec files, from disk, handed
//! to the core's one entry point ([`loam_compiler::project`]). Nothing here parses, checks or
//! plans; every command gets the same answers because they all go through the core.

use crate::catalogue_source::catalogue_texts;
use crate::io::{self, IoError};
use loam_compiler::catalogue::Catalogue;
use loam_compiler::project::{CheckedProject, ProjectFiles, check_project};
use std::path::{Path, PathBuf};

/// How many threads the core may use: the cores the operating system gives this process.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// Reads the catalogue (`--catalogue DIR`, else `./specs` when it is a catalogue, else the
/// built-in one) and the spec files named by `paths`.
pub fn read_project(
    paths: &[PathBuf],
    cli_catalogue: Option<&Path>,
) -> Result<ProjectFiles, IoError> {
    let catalogue = catalogue_texts(cli_catalogue)?;
    let mut specs = Vec::new();
    for path in io::find_spec_files(paths)? {
        specs.push((io::display(&path), io::read_spec(&path)?));
    }
    Ok(ProjectFiles { catalogue, specs })
}

/// Reads and checks the project: the catalogue, then every spec, also against the catalogue.
pub fn load_checked(
    paths: &[PathBuf],
    cli_catalogue: Option<&Path>,
) -> Result<CheckedProject, IoError> {
    Ok(check_project(
        read_project(paths, cli_catalogue)?,
        threads(),
    ))
}

/// Reads and checks the catalogue alone (no specs).
pub fn load_catalogue_only(cli_catalogue: Option<&Path>) -> Result<CheckedProject, IoError> {
    let catalogue = catalogue_texts(cli_catalogue)?;
    Ok(check_project(
        ProjectFiles {
            catalogue,
            specs: Vec::new(),
        },
        1,
    ))
}

/// The catalogue plans are made against (see [`load_checked`]). A catalogue with errors is
/// reported as an error that points to `loam check`, which shows them.
pub fn plan_catalogue(cli_catalogue: Option<&Path>) -> Result<Catalogue, IoError> {
    let project = load_catalogue_only(cli_catalogue)?;
    let errors = project.catalogue_errors;
    project.catalogue.filter(|_| errors == 0).ok_or_else(|| {
        IoError(format!(
            "the catalogue has {errors} error(s); `loam check` shows them"
        ))
    })
}
