//! The one entry point over a whole project: the catalogue's and the specs' texts in; the
//! checked jobs, their plans and every diagnostic out, sorted once.
//!
//! ```text
//!  ProjectFiles ──check_project──▶ CheckedProject ──plan_project──▶ PlannedProject
//!  (catalogue YAML,                (sources, catalogue,              (Plan IR document,
//!   spec bytes)                     jobs, diagnostics)                all diagnostics)
//! ```
//!
//! `loam check`, `plan`, `emit`, `diff` and the test harness all go through these two functions,
//! so every command parses, checks and plans a spec the same way. A job with an error of its own
//! is not planned; every other job is, also in the same file, so one bad job never hides the
//! plans of the rest.
//!
//! A job's plan is a pure function of its spec file (path and text), its name, the catalogue
//! parts it can read ([`Catalogue::inputs_digest`]) and loam itself; [`plan_key`] hashes exactly
//! these, so a caller may keep plans by key (the other side of a diff, an on-disk cache) and hand
//! them back through [`plan_project_reusing`].

use crate::catalogue::{self, Catalogue};
use crate::check::catalogue::{check_job, check_service};
use crate::check::{Job, Service, check_file, check_unique_job_names};
use crate::parallel::map_ordered;
use crate::plan::plan_job_on;
use crate::syntax::{decode_utf8, parse};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::diagnostics::codes::{self, Phase};
use loam_ir::findings::SpecField;
use loam_ir::plan::{FORMAT_VERSION, Plan, PlanDocument};
use loam_ir::span::{FileId, SourceMap, Span};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Everything a run reads, as the CLI (or a test, or a git revision) hands it in.
#[derive(Debug, Clone, Default)]
pub struct ProjectFiles {
    /// The catalogue's YAML files: display path (its folder, `devices/` or `pools/`, tells the
    /// kind) and text.
    pub catalogue: Vec<(String, String)>,
    /// The spec files: display path and bytes (decoded here, so bad UTF-8 is a diagnostic).
    pub specs: Vec<(String, Vec<u8>)>,
}

/// One checked job, with what the planner needs to know about its checks.
#[derive(Debug, Clone)]
pub struct CheckedJob {
    /// The typed job.
    pub job: Job,
    /// The display path of its spec file.
    pub file: String,
    /// Errors inside this job's block (its own checks and those against the catalogue).
    pub errors: usize,
}

/// One checked service, with what the planner needs to know about its checks.
#[derive(Debug, Clone)]
pub struct CheckedService {
    /// The typed service.
    pub service: Service,
    /// The display path of its spec file.
    pub file: String,
    /// Errors inside this service's block (its own checks and those against the catalogue).
    pub errors: usize,
}

/// The result of checking a whole project.
#[derive(Debug, Clone)]
pub struct CheckedProject {
    /// Every text read (catalogue first, then specs), for rendering diagnostics.
    pub sources: SourceMap,
    /// The display path of each spec file, in the order given.
    pub files: Vec<String>,
    /// The catalogue: whole when it has no errors, else what loaded without its broken files
    /// (their pools and devices in `withheld`); `None` when nothing could be loaded.
    pub catalogue: Option<Catalogue>,
    /// Errors in the catalogue; when any and `catalogue` is `None`, no spec was checked.
    pub catalogue_errors: usize,
    /// Every job complete enough to type, in file then source order.
    pub jobs: Vec<CheckedJob>,
    /// Every service complete enough to type, in file then source order.
    pub services: Vec<CheckedService>,
    /// Every diagnostic of the catalogue and the specs, sorted by file and position.
    pub diagnostics: Vec<Diagnostic>,
}

impl CheckedProject {
    /// The catalogue when it loaded whole, without errors: what an output that stands for the
    /// whole catalogue (a manifest, `loam catalogue`) needs.
    pub fn whole_catalogue(&self) -> Option<&Catalogue> {
        self.catalogue
            .as_ref()
            .filter(|_| self.catalogue_errors == 0)
    }

    /// The spec files not checked through only because a catalogue file they use has errors
    /// (every error in them is L2121), each with that catalogue file: a diff says these specs
    /// are not planned because of the catalogue, not that they are broken.
    pub fn withheld_files(&self) -> BTreeMap<String, String> {
        let Some(catalogue) = &self.catalogue else {
            return BTreeMap::new();
        };
        if catalogue.withheld.is_empty() {
            return BTreeMap::new();
        }
        let mut only_withheld: BTreeMap<&str, bool> = BTreeMap::new();
        for d in self.diagnostics.iter().filter(|d| d.is_error()) {
            if let Some(file) = d.span.and_then(|s| self.sources.get(s.file)) {
                let entry = only_withheld.entry(file.name.as_str()).or_insert(true);
                *entry &= d.code == codes::catalogue::NOT_LOADED;
            }
        }
        let resources = self
            .jobs
            .iter()
            .map(|j| (j.file.as_str(), &j.job.resources))
            .chain(
                self.services
                    .iter()
                    .map(|s| (s.file.as_str(), &s.service.resources)),
            );
        let mut out = BTreeMap::new();
        for (file, resources) in resources {
            if only_withheld.get(file) != Some(&true) || out.contains_key(file) {
                continue;
            }
            let withheld = &catalogue.withheld;
            let fault = withheld.pools.get(&resources.pool.value).or_else(|| {
                resources
                    .devices
                    .iter()
                    .find_map(|d| withheld.devices.get(&d.value))
            });
            if let Some(fault) = fault {
                out.insert(file.to_string(), fault.clone());
            }
        }
        out
    }

    /// How many diagnostics are errors.
    pub fn errors(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.is_error()).count()
    }

    /// The jobs the planner may plan: the catalogue loaded and the job has no error of its own.
    pub fn plannable(&self) -> impl Iterator<Item = &CheckedJob> {
        self.jobs
            .iter()
            .filter(move |j| self.catalogue.is_some() && j.errors == 0)
    }

    /// The services the planner may plan: the catalogue loaded and the service has no error
    /// of its own.
    pub fn plannable_services(&self) -> impl Iterator<Item = &CheckedService> {
        self.services
            .iter()
            .filter(move |s| self.catalogue.is_some() && s.errors == 0)
    }
}

/// The result of planning a checked project.
#[derive(Debug, Clone)]
pub struct PlannedProject {
    /// The plans of every plannable job, sorted by file (jobs of a file in source order).
    pub document: PlanDocument,
    /// Every diagnostic: the checks' and the planner's, sorted by file and position.
    pub diagnostics: Vec<Diagnostic>,
    /// The planner's findings alone (L3xxx), located and sorted.
    pub findings: Vec<Diagnostic>,
    /// The [`plan_key`] of each plan of `document.plans`, in the same order.
    pub keys: Vec<String>,
    /// Whether each plan of `document.plans` was handed in by the caller's reuse rather than
    /// planned here, in the same order.
    pub reused: Vec<bool>,
}

impl PlannedProject {
    /// Whether any diagnostic is an error (a spec error, or a job that cannot run as planned).
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Loads the catalogue, then parses and checks every spec (on up to `threads` threads), also
/// against the catalogue. When the catalogue has errors, the specs are checked against what
/// loads without its broken files ([`catalogue::load_partial`]): a spec that uses a pool or
/// device of a broken file is an error (L2121), every other spec checks as it would. When
/// nothing loads, only the catalogue's diagnostics are returned.
pub fn check_project(files: ProjectFiles, threads: usize) -> CheckedProject {
    check_specs(load_catalogue(files.catalogue), files.specs, threads)
}

/// The first half of [`check_project`]: the catalogue's files loaded, and no spec. A caller that
/// checks specs again and again against one catalogue (the language server, on every edit)
/// loads it once and hands a clone to [`check_specs`].
pub fn load_catalogue(catalogue_files: Vec<(String, String)>) -> CheckedProject {
    let mut sources = SourceMap::new();
    let catalogue_ids: Vec<(FileId, String, String)> = catalogue_files
        .into_iter()
        .map(|(path, text)| (sources.add(path.clone(), text.clone()), path, text))
        .collect();
    let triples: Vec<(FileId, &str, &str)> = catalogue_ids
        .iter()
        .map(|(id, path, text)| (*id, path.as_str(), text.as_str()))
        .collect();
    let (catalogue, mut diagnostics) = catalogue::load_partial(&triples);
    let catalogue_errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let mut project = CheckedProject {
        sources,
        files: Vec::new(),
        catalogue,
        catalogue_errors,
        jobs: Vec::new(),
        services: Vec::new(),
        diagnostics: Vec::new(),
    };
    diagnostics.sort_by(compare);
    project.diagnostics = diagnostics;
    project
}

/// The second half of [`check_project`]: parses and checks `specs` (display path and bytes)
/// against the catalogue of `project`, a result of [`load_catalogue`]. When no catalogue
/// loaded, `project` is returned as it is: the specs cannot be checked against it.
pub fn check_specs(
    mut project: CheckedProject,
    specs: Vec<(String, Vec<u8>)>,
    threads: usize,
) -> CheckedProject {
    if project.catalogue.is_none() {
        return project;
    }
    let mut diagnostics = std::mem::take(&mut project.diagnostics);
    let mut work: Vec<(FileId, Vec<u8>)> = Vec::with_capacity(specs.len());
    for (name, bytes) in specs {
        let lossy = String::from_utf8_lossy(&bytes).into_owned();
        work.push((project.sources.add(name.clone(), lossy), bytes));
        project.files.push(name);
    }
    let mut jobs = Vec::new();
    let mut services = Vec::new();
    for (found, checked, served) in
        map_ordered(&work, threads, |(id, bytes)| check_spec(*id, bytes))
    {
        diagnostics.extend(found);
        jobs.extend(checked);
        services.extend(served);
    }
    diagnostics.extend(check_unique_job_names(&jobs, &services));
    if let Some(catalogue) = &project.catalogue {
        let garbled: Vec<bool> = jobs
            .iter()
            .map(|j| has_syntax_error(j, &diagnostics))
            .collect();
        let pairs: Vec<(&Job, bool)> = jobs.iter().zip(garbled).collect();
        // A job with a syntax error inside it (a bad escape) holds values the author did not
        // mean; checking them against the catalogue would only add noise.
        for found in map_ordered(&pairs, threads, |(job, garbled)| {
            if *garbled {
                Vec::new()
            } else {
                check_job(job, catalogue)
            }
        }) {
            diagnostics.extend(found);
        }
    }
    if let Some(catalogue) = &project.catalogue {
        for service in &services {
            if !has_syntax_error_in(service.span, &diagnostics) {
                diagnostics.extend(check_service(service, catalogue));
            }
        }
    }
    diagnostics.sort_by(compare);
    project.services = services
        .into_iter()
        .map(|service| {
            let errors = diagnostics
                .iter()
                .filter(|d| d.is_error() && d.span.is_some_and(|s| inside(s, service.span)))
                .count();
            let file = project
                .sources
                .get(service.file)
                .map_or(String::new(), |f| f.name.clone());
            CheckedService {
                service,
                file,
                errors,
            }
        })
        .collect();
    project.jobs = jobs
        .into_iter()
        .map(|job| {
            let errors = diagnostics
                .iter()
                .filter(|d| d.is_error() && d.span.is_some_and(|s| inside(s, job.span)))
                .count();
            let file = project
                .sources
                .get(job.file)
                .map_or(String::new(), |f| f.name.clone());
            CheckedJob { job, file, errors }
        })
        .collect();
    project.diagnostics = diagnostics;
    project
}

/// Plans every plannable job of `project` on up to `threads` threads.
pub fn plan_project(project: &CheckedProject, threads: usize) -> PlannedProject {
    plan_project_reusing(project, threads, &|_, _| None)
}

/// What a plan key covers besides its inputs: loam's version and the Plan format, since the
/// planner and the IR change between versions.
const KEY_VERSION: &str = concat!("loam ", env!("CARGO_PKG_VERSION"), " plan ");

/// The key of a job's plan: `sha256:<hex>` over loam's version, the Plan format version, the
/// cost model's fitted constants, the spec file's display path and text, the job's name and the
/// job's catalogue inputs ([`Catalogue::inputs_digest`]). The plan is a pure function of these:
/// two jobs with the same key have byte-identical plans. (The path is in the key because the
/// plan names its file; the fitted constants are, although a release fixes them, because a
/// refit between two builds of one version changes every plan.)
pub fn plan_key(file: &str, text: &str, job: &str, inputs_digest: &str) -> String {
    let version = format!(
        "{KEY_VERSION}{FORMAT_VERSION} {:?}",
        crate::cost::FittedConstants::SHIPPED
    );
    let parts: [&[u8]; 5] = [
        version.as_bytes(),
        file.as_bytes(),
        text.as_bytes(),
        job.as_bytes(),
        inputs_digest.as_bytes(),
    ];
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex(&hasher.finalize())
}

/// `sha256:<hex>` of `bytes`, for callers that check what they stored (a cached plan's text).
pub fn checksum(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::from("sha256:");
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// The [`plan_key`] of every plannable job of `project`, in [`CheckedProject::plannable`] order
/// (each pool's inputs digest worked out once); empty when the catalogue did not load.
pub fn plan_keys(project: &CheckedProject) -> Vec<String> {
    let Some(catalogue) = &project.catalogue else {
        return Vec::new();
    };
    let mut inputs: BTreeMap<&str, String> = BTreeMap::new();
    project
        .plannable()
        .map(|checked| {
            let pool = checked.job.resources.pool.value.as_str();
            let digest = inputs
                .entry(pool)
                .or_insert_with(|| catalogue.inputs_digest(pool));
            let text = project
                .sources
                .get(checked.job.file)
                .map_or("", |f| f.text.as_str());
            plan_key(&checked.file, text, &checked.job.name.value, digest)
        })
        .collect()
}

/// [`plan_project`], taking the plan `reuse` offers for a job and its [`plan_key`] instead of
/// planning it again (the other side of a diff, or a cache, planned the same spec against the
/// same catalogue inputs: planning is a pure function of the two). A reused plan brings its
/// findings with it; one that names another file or job is not taken.
pub fn plan_project_reusing(
    project: &CheckedProject,
    threads: usize,
    reuse: &(dyn Fn(&CheckedJob, &str) -> Option<Plan> + Sync),
) -> PlannedProject {
    let Some(catalogue) = &project.catalogue else {
        return PlannedProject {
            document: empty_document(""),
            diagnostics: project.diagnostics.clone(),
            findings: Vec::new(),
            keys: Vec::new(),
            reused: Vec::new(),
        };
    };
    let jobs: Vec<(&CheckedJob, String)> = project.plannable().zip(plan_keys(project)).collect();
    // The threads the jobs leave free go to each job's own searches.
    let per_job = (threads / jobs.len().max(1)).max(1);
    let results: Vec<(Plan, bool)> = map_ordered(&jobs, threads, |(checked, key)| {
        match reuse(checked, key)
            .filter(|p| p.file == checked.file && p.job == checked.job.name.value)
        {
            Some(plan) => (plan, true),
            None => (
                plan_job_on(&checked.job, &checked.file, catalogue, per_job),
                false,
            ),
        }
    });
    let services: Vec<&CheckedService> = project.plannable_services().collect();
    let mut service_plans = map_ordered(&services, threads, |checked| {
        crate::plan::service::plan_service(&checked.service, &checked.file, catalogue)
    });
    let mut findings: Vec<Diagnostic> = jobs
        .iter()
        .zip(&results)
        .flat_map(|((checked, _), (plan, _))| plan_diagnostics(&checked.job, plan))
        .chain(
            services
                .iter()
                .zip(&service_plans)
                .filter_map(|(checked, plan)| service_finding(&checked.service, plan)),
        )
        .collect();
    findings.sort_by(compare);
    let mut diagnostics = project.diagnostics.clone();
    diagnostics.extend(findings.iter().cloned());
    diagnostics.sort_by(compare);
    let mut planned: Vec<(Plan, String, bool)> = results
        .into_iter()
        .zip(jobs)
        .map(|((plan, reused), (_, key))| (plan, key, reused))
        .collect();
    // A stable sort: the jobs of one file stay in source order.
    planned.sort_by(|a, b| a.0.file.cmp(&b.0.file));
    let mut document = empty_document(catalogue.digest());
    // A stable sort: the services of one file stay in source order.
    service_plans.sort_by(|a, b| a.file.cmp(&b.file));
    document.services = service_plans;
    let mut keys = Vec::with_capacity(planned.len());
    let mut reused = Vec::with_capacity(planned.len());
    for (plan, key, was_reused) in planned {
        document.plans.push(plan);
        keys.push(key);
        reused.push(was_reused);
    }
    PlannedProject {
        document,
        diagnostics,
        findings,
        keys,
        reused,
    }
}

/// L3008 for a service no deployment serves within its targets and budget, on its name, with
/// the planner's reasons.
fn service_finding(service: &Service, plan: &loam_ir::plan::ServicePlan) -> Option<Diagnostic> {
    if plan.feasible {
        return None;
    }
    let mut d = Diagnostic::error(
        loam_ir::diagnostics::codes::plan::NO_DEPLOYMENT,
        format!(
            "no deployment of service `{}` meets its targets: {}",
            service.name.value,
            plan.reasons.join("; ")
        ),
        service.name.span,
        "this service",
    )
    .with_help("relax the targets, allow more device types or sites, raise the budget, or serve in a smaller precision");
    if let Some(budget) = &service.goal.budget
        && plan.reasons.iter().any(|r| r.contains("over the budget"))
    {
        d = d.with_related(budget.span, "this budget");
    }
    Some(d)
}

/// The planner's findings about `job`, located in its spec.
pub fn plan_diagnostics(job: &Job, plan: &Plan) -> Vec<Diagnostic> {
    plan.diagnostics
        .iter()
        .map(|finding| {
            let (span, label) = field_span(job, finding.field);
            finding.locate(span, label)
        })
        .collect()
}

/// Where `field` is written in `job`'s spec, and what the label under it says; the job's name
/// when the field is not written.
fn field_span(job: &Job, field: SpecField) -> (Span, &'static str) {
    let name = (job.name.span, "this job");
    match field {
        SpecField::Job => name,
        SpecField::Tenant => (job.tenant.span, "this tenant's quota"),
        SpecField::Devices => match (job.resources.devices.first(), job.resources.devices.last()) {
            (Some(first), Some(last)) => (first.span.join(last.span), "these devices"),
            _ => (job.resources.span, "these resources"),
        },
        SpecField::Parallel => job.parallel.span.map_or(name, |span| (span, "this layout")),
        SpecField::Deadline => job
            .goal
            .deadline
            .as_ref()
            .map_or(name, |d| (d.span, "this deadline")),
        SpecField::Budget => job
            .goal
            .budget
            .as_ref()
            .map_or(name, |b| (b.span, "this budget")),
    }
}

fn empty_document(digest: &str) -> PlanDocument {
    PlanDocument {
        format_version: FORMAT_VERSION.to_string(),
        catalogue_digest: digest.to_string(),
        plans: Vec::new(),
        services: Vec::new(),
    }
}

/// What checking one spec file finds: its diagnostics, its jobs and its services.
type SpecChecked = (Vec<Diagnostic>, Vec<Job>, Vec<Service>);

/// Parses and checks one spec file: its diagnostics, its jobs and its services.
fn check_spec(id: FileId, bytes: &[u8]) -> SpecChecked {
    let text = match decode_utf8(id, bytes) {
        Ok(text) => text,
        Err(diagnostic) => return (vec![*diagnostic], Vec::new(), Vec::new()),
    };
    let parsed = parse(id, &text);
    let mut diagnostics = parsed.diagnostics;
    let mut jobs = Vec::new();
    let mut services = Vec::new();
    if let Some(file) = parsed.file {
        let checked = check_file(&file);
        diagnostics.extend(checked.diagnostics);
        jobs = checked.jobs;
        services = checked.services;
    }
    (diagnostics, jobs, services)
}

/// Whether a syntax error (L0xxx) lies inside `job`'s block.
fn has_syntax_error(job: &Job, diagnostics: &[Diagnostic]) -> bool {
    has_syntax_error_in(job.span, diagnostics)
}

/// Whether a syntax error (L0xxx) lies inside `span`.
fn has_syntax_error_in(span: Span, diagnostics: &[Diagnostic]) -> bool {
    diagnostics
        .iter()
        .any(|d| d.code.phase() == Phase::Syntax && d.span.is_some_and(|s| inside(s, span)))
}

fn inside(span: Span, outer: Span) -> bool {
    span.file == outer.file && span.start >= outer.start && span.end <= outer.end
}

/// The one order diagnostics are shown in: by file and position, then code and message.
fn compare(a: &Diagnostic, b: &Diagnostic) -> std::cmp::Ordering {
    a.sort_key()
        .cmp(&b.sort_key())
        .then_with(|| a.message.cmp(&b.message))
}
