//! What the server checks a document against: the catalogue (loaded once, with its files'
//! paths, so a name can lead into its YAML) and the language reference's schema.

use crate::schema::Schema;
use loam_compiler::catalogue::Catalogue;
use loam_compiler::project::{CheckedProject, check_specs, load_catalogue};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::span::{FileId, SourceMap};
use std::path::PathBuf;

/// The catalogue and schema shared by every open document.
pub struct Workspace {
    /// The folder the editor opened, when it said one.
    pub root: Option<PathBuf>,
    /// The catalogue loaded alone, once: its sources (for locations; a path is absolute when
    /// it is a file on disk) and the catalogue itself. Each check starts from a clone.
    catalogue_project: CheckedProject,
    /// The fields and blocks of the language reference.
    pub schema: Schema,
}

/// A document checked as `loam check` checks it.
pub struct Checked {
    /// Every diagnostic, sorted (catalogue errors included when the catalogue has any).
    pub diagnostics: Vec<Diagnostic>,
    /// The texts the spans point into: the catalogue's files, then the document.
    pub sources: SourceMap,
    /// The document's id in `sources`.
    pub file: FileId,
    /// The checked project, for planning its jobs in the background.
    pub project: CheckedProject,
}

impl Workspace {
    /// A workspace over the catalogue `files` (`(path, text)`).
    pub fn new(root: Option<PathBuf>, files: Vec<(String, String)>) -> Self {
        Workspace {
            root,
            catalogue_project: load_catalogue(files),
            schema: Schema::shipped(),
        }
    }

    /// The catalogue: whole, or what loaded without its broken files (a spec that uses one of
    /// those gets L2121); `None` when nothing loaded.
    pub fn catalogue(&self) -> Option<&Catalogue> {
        self.catalogue_project.catalogue.as_ref()
    }

    /// The catalogue's texts, for locating a catalogue span.
    pub fn catalogue_sources(&self) -> &SourceMap {
        &self.catalogue_project.sources
    }

    /// Checks one document as `loam check name` does (`check_project` is `load_catalogue`
    /// then `check_specs`): the same codes, spans, help and related locations. The catalogue
    /// was loaded once; only the document is parsed and checked.
    pub fn check(&self, name: &str, text: &str) -> Checked {
        let project = check_specs(
            self.catalogue_project.clone(),
            vec![(name.to_string(), text.as_bytes().to_vec())],
            1,
        );
        // The document is the last text added; a catalogue that does not load at all stops
        // before it.
        let file = if project.files.is_empty() {
            FileId(u32::MAX)
        } else {
            project
                .sources
                .iter()
                .last()
                .map_or(FileId(u32::MAX), |(id, _)| id)
        };
        Checked {
            diagnostics: project.diagnostics.clone(),
            sources: project.sources.clone(),
            file,
            project,
        }
    }
}
