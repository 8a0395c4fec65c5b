//! The one seam between the shared rendering and a target: the [`Backend`] trait, and the
//! registry that lists every backend once. [`Target`], the value the CLI and the tests pass
//! around, is generated from the registry, so a new backend is one module implementing
//! [`Backend`], its templates under `backends/templates/<name>/`, and one registry line
//! (CONTRIBUTING.md, "Where a change goes").

use crate::change::Reason;
use crate::job::JobContext;
use crate::layout::FolderSites;
use crate::service::ServiceContext;
use crate::{Manifest, Options};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::plan::PlanDocument;

#[cfg(test)]
mod one_file;

/// One system loam writes manifests for. Everything that differs between targets is a method
/// here; the shared work (checking the plan, naming the folders, refusing collisions, sorting)
/// is done once by [`crate::render`] around it.
pub trait Backend: Sync {
    /// The name on the command line (`loam emit --backend <name>`, `loam diff --manifests
    /// <name>`) and in `loam diff`'s output: a lowercase word.
    fn name(&self) -> &'static str;

    /// One line for `--help`, without a final full stop.
    fn summary(&self) -> &'static str;

    /// Its templates, `(name, source)` with names `<name>/<file>.j2`, usually `include_str!`ed
    /// from `backends/templates/<name>/`; the one template environment (`env.rs`) loads them with
    /// every other backend's, so any backend may render another's shared template.
    fn templates(&self) -> &'static [(&'static str, &'static str)];

    /// The files of one job, relative to its folder.
    fn render_job(
        &self,
        job: &JobContext<'_>,
        options: &Options,
    ) -> Result<Vec<Manifest>, Vec<Diagnostic>>;

    /// The files of one service, relative to its folder.
    fn render_service(
        &self,
        service: &ServiceContext<'_>,
        options: &Options,
    ) -> Result<Vec<Manifest>, Vec<Diagnostic>>;

    /// Files every job shares, once for the whole document (the Kubernetes cluster
    /// prerequisites), with paths below `_prerequisites/`. Default: none.
    fn render_shared(
        &self,
        _doc: &PlanDocument,
        _options: &Options,
    ) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
        Ok(Vec::new())
    }

    /// How `loam emit` lays the rendered files out (`sites`: the sites of each job's folder).
    /// Default: as [`crate::render`] gives them.
    fn lay_out(&self, manifests: Vec<Manifest>, _sites: &FolderSites) -> Vec<Manifest> {
        manifests
    }

    /// What the job manifests still need from the engineer before they run, one sentence each
    /// (asked only when the document has jobs). Default: the trainer command, when it is the
    /// placeholder.
    fn still_to_provide(&self, _doc: &PlanDocument, options: &Options) -> Vec<String> {
        crate::trainer_placeholder(options).into_iter().collect()
    }

    /// What a service's engines need to load the weights `weights` (escaped for printing) of a
    /// tenant whose objects live in `namespace`. Default: the environment they start from.
    fn weights_to_provide(&self, weights: &str, _namespace: &str) -> String {
        format!(
            "the engines load the weights `{weights}` at start: a gated repository needs HF_TOKEN (and HF_HOME on a shared file system, to download them once) in the environment the service is started from"
        )
    }

    /// Where a probe's log (`loam emit --probe`) is found, as a phrase: `the batch job's
    /// output, …`.
    fn probe_log(&self) -> &'static str;

    /// What changing one file does to a running job: `file` is its path without the job's
    /// folder, `shared` whether it is below `_prerequisites/`, and `old` or `new` is empty when
    /// the file is added or removed. [`crate::change`] has the reasons' words and a line
    /// comparison for scripts.
    fn classify(&self, file: &str, shared: bool, old: &str, new: &str) -> Vec<Reason>;
}

/// The registry: each line a [`Target`] variant and the backend it stands for. The enum, its
/// list and its lookups are generated from these lines and nowhere else.
macro_rules! registry {
    ($($(#[doc = $doc:literal])* $(#[cfg($cfg:meta)])? $variant:ident => $backend:expr,)*) => {
        /// Which system the manifests are for: one value per registered [`Backend`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Target {
            $($(#[doc = $doc])* $(#[cfg($cfg)])? $variant,)*
        }

        impl Target {
            /// Every target, in registry order.
            pub const ALL: &'static [Target] = &[$($(#[cfg($cfg)])? Target::$variant,)*];

            /// The backend that renders for this target.
            pub fn backend(self) -> &'static dyn Backend {
                match self {
                    $($(#[cfg($cfg)])? Target::$variant => &$backend,)*
                }
            }
        }
    };
}

registry! {
    /// Kubernetes objects (YAML).
    Kubernetes => crate::kubernetes::Kubernetes,
    /// Slurm batch scripts.
    Slurm => crate::slurm::Slurm,
    /// A hostfile and an ssh launcher script.
    Baremetal => crate::baremetal::Baremetal,
    /// The test-only backend that proves the steps for a new one (one file per job).
    #[cfg(test)]
    OneFile => one_file::OneFile,
}

impl Target {
    /// The backend's name ([`Backend::name`]).
    pub fn name(self) -> &'static str {
        self.backend().name()
    }

    /// The target of a backend's name, `None` for a name no backend has.
    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.iter().copied().find(|t| t.name() == name)
    }
}
