//! A backend that exists only in this crate's tests, written by the steps CONTRIBUTING.md gives
//! for a new one (one module, its templates, one registry line in [`super`]): one text file per
//! job, rendered through the shared code like every real backend, so the test below shows
//! that nothing else needs to change for `render`, `render_by_site`, `still_to_provide`,
//! [`crate::change::classify`] and the CLI's `--backend` values (`Target::ALL`) to know it.

use crate::change::{self, Effect, Reason};
use crate::env::render_one;
use crate::job::JobContext;
use crate::service::ServiceContext;
use crate::{Backend, Manifest, Options, env};
use loam_ir::diagnostics::Diagnostic;

/// One file per job.
pub struct OneFile;

impl Backend for OneFile {
    fn name(&self) -> &'static str {
        "onefile"
    }

    fn summary(&self) -> &'static str {
        "One text file per job"
    }

    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[(
            "onefile/job.txt.j2",
            "{{ job.job|sh }}: {{ job.nnodes }} nodes, {{ job.world_size }} devices\n",
        )]
    }

    fn render_job(
        &self,
        job: &JobContext<'_>,
        _options: &Options,
    ) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
        let env = env::environment().map_err(|e| vec![crate::env::template_error(&job.job, &e)])?;
        let ctx = minijinja::context! { job => job };
        Ok(vec![Manifest {
            path: "job.txt".to_string(),
            contents: render_one(env, job, "onefile/job.txt.j2", ctx)?,
        }])
    }

    fn render_service(
        &self,
        _service: &ServiceContext<'_>,
        _options: &Options,
    ) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
        Ok(Vec::new())
    }

    fn probe_log(&self) -> &'static str {
        "the job's standard output"
    }

    fn classify(&self, file: &str, _shared: bool, old: &str, new: &str) -> Vec<Reason> {
        change::script(file, old, new, Effect::Replace, "read once at start")
            .into_iter()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::change::{Effect, Files};
    use crate::{Options, Target, render, render_by_site, still_to_provide};
    use loam_compiler::catalogue::builtin_sources;
    use loam_compiler::catalogue::facts::vendors;
    use loam_compiler::project::{ProjectFiles, check_project, plan_project};

    /// Plans two shipped examples together: two jobs.
    fn two_jobs() -> (loam_ir::plan::PlanDocument, Options) {
        let specs = ["llama3-8b-finetune", "llama3-70b-pretrain"].map(|name| {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../examples")
                .join(format!("{name}.loam"));
            (format!("{name}.loam"), std::fs::read(&path).unwrap())
        });
        let checked = check_project(
            ProjectFiles {
                catalogue: builtin_sources()
                    .into_iter()
                    .map(|(p, t)| (p.to_string(), t.to_string()))
                    .collect(),
                specs: specs.to_vec(),
            },
            1,
        );
        assert_eq!(checked.errors(), 0, "{:#?}", checked.diagnostics);
        let planned = plan_project(&checked, 1);
        let options = Options::new(vendors(checked.catalogue.as_ref().unwrap()));
        (planned.document, options)
    }

    #[test]
    fn a_new_backend_is_one_module_its_templates_and_one_registry_line() {
        // The registry knows it by name, after the real backends.
        assert_eq!(Target::from_name("onefile"), Some(Target::OneFile));
        assert_eq!(Target::ALL.last(), Some(&Target::OneFile));
        let (doc, options) = two_jobs();
        assert_eq!(doc.plans.len(), 2);
        let files = render(&doc, Target::OneFile, &options).unwrap_or_else(|d| panic!("{d:#?}"));
        // One file per job, in the job's folder, sorted by path; nothing shared. The text is the
        // template's, with the job's nodes and devices summed over its groups by hand here.
        let mut expected: Vec<(String, String)> = doc
            .plans
            .iter()
            .map(|p| {
                let nodes: u64 = p.groups.iter().map(|g| g.nodes).sum();
                let devices: u64 = p.groups.iter().map(|g| g.devices).sum();
                (
                    format!("{}/job.txt", loam_ir::names::job_label(&p.job).unwrap()),
                    format!("'{}': {nodes} nodes, {devices} devices\n", p.job),
                )
            })
            .collect();
        expected.sort();
        let got: Vec<(String, String)> = files
            .iter()
            .map(|m| (m.path.clone(), m.contents.clone()))
            .collect();
        assert_eq!(got, expected);
        // `loam emit` writes them as they are; only the placeholder trainer is still to provide.
        assert_eq!(
            render_by_site(&doc, Target::OneFile, &options).unwrap(),
            files
        );
        assert_eq!(
            still_to_provide(&doc, Target::OneFile, &options),
            ["the trainer command `loam-train` is a placeholder: pass --trainer"]
        );
        // A change between two renderings is classified by its rule.
        let old: Files = got.iter().cloned().collect();
        let mut new = old.clone();
        let (path, text) = got.first().unwrap();
        new.insert(path.clone(), text.replace("nodes", "hosts"));
        let reasons = crate::change::classify(&old, &new, Target::OneFile);
        assert_eq!(reasons.len(), 1);
        assert_eq!(reasons[0].effect, Effect::Replace);
        assert_eq!(
            reasons[0].sentence(),
            "job.txt line 1 changed (read once at start)"
        );
    }
}
