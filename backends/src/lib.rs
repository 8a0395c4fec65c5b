//! Renders loam plans into the manifests that run them: Kubernetes (JobSet + Kueue, or Volcano),
//! Slurm batch scripts, and bare-metal launchers over ssh.
//!
//! The input is the Plan IR ([`loam_ir::plan`]), never the AST; from the catalogue the
//! backends take only what [`Options`] carries (tenants, node group sizes, vendor facts).
//! Each target is one module implementing [`Backend`], listed once in the registry
//! ([`backend`]) that [`Target`] is generated from: the shared code here and in [`job`] and
//! [`service`] checks a [`Plan`] and turns it into a serialisable context, the backend renders
//! the context with its templates in `backends/templates/<target>/`, and it says what a change
//! between two renderings does to a running job ([`change`]). Every string from a spec is
//! escaped by a filter (`yaml`, `sh`, `json_ascii`) or checked to be a plain word (`word`);
//! the environment refuses to print anything else.
//!
//! Rendering is a pure function: same plans and options, byte-identical manifests.

pub mod backend;
pub mod baremetal;
pub mod change;
pub mod contract;
mod env;
pub mod escape;
pub mod job;
pub mod kubernetes;
pub mod layout;
pub mod probe;
pub mod refuse;
pub mod service;
pub mod slurm;
pub mod vendors;
pub mod window;

use loam_ir::cluster::Tenancy;
use loam_ir::cluster::vendor::Vendors;
use loam_ir::diagnostics::Diagnostic;
use loam_ir::diagnostics::codes;
use loam_ir::plan::{Plan, PlanDocument};
use std::collections::{BTreeMap, BTreeSet};

pub use backend::{Backend, Target};
pub use slurm::SlurmVersion;

/// Which Kubernetes batch system the objects are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Flavor {
    /// JobSet with Kueue queueing (the default).
    #[default]
    Jobset,
    /// Volcano Job and Queue.
    Volcano,
}

/// How to render.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The Kubernetes flavour.
    pub flavor: Flavor,
    /// The Slurm release the scripts must run on; decides which options appear.
    pub slurm_version: SlurmVersion,
    /// The trainer's container image (Kubernetes).
    pub image: String,
    /// The trainer command (program and fixed arguments); the layout arguments follow it.
    pub trainer: Vec<String>,
    /// Backend names of each tenant (namespace, queue, account, checkpoint root) and its quotas,
    /// by (pool, tenant): a tenant name may exist in two pools with different queues and
    /// quotas. Tenants not listed get [`Tenancy::derived`].
    pub tenants: BTreeMap<(String, String), Tenancy>,
    /// Devices of each node group of the plans' pools, by node group name, from the catalogue:
    /// what the pool's cohort holds beyond the tenants' guaranteed quotas is lent by one more
    /// ClusterQueue (`loam_compiler::catalogue::facts::node_group_devices`). Empty: no lender
    /// queue.
    pub node_groups: BTreeMap<String, u64>,
    /// Every node group of every site of the plans' pools, by site name, as a group holding the
    /// whole node group (`loam_compiler::catalogue::facts::site_node_groups`): a site's
    /// ResourceFlavors and its tenants' queues come from these and the catalogue's tenancies,
    /// whichever jobs are emitted. Empty: only the node groups the emitted jobs use.
    pub sites: BTreeMap<String, Vec<loam_ir::plan::GroupIr>>,
    /// The networks (CIDRs) allowed to reach the rendezvous load balancer of a plan over several
    /// sites (`loadBalancerSourceRanges`): the other sites' pod and node networks. Empty: open.
    pub rendezvous_source_ranges: Vec<String>,
    /// The storage class of each tenant's checkpoint volume (a ReadWriteMany
    /// PersistentVolumeClaim per tenant and site); `None`: the cluster's default class.
    pub checkpoint_storage_class: Option<String>,
    /// The serving engine's container image for every service; `None`: the image the vendor's
    /// file gives the engine.
    pub serving_image: Option<String>,
    /// The image of the cheap-hours window's CronJobs (`sh` and `kubectl`); `None`:
    /// [`kubernetes::window::KUBECTL_IMAGE`]. Sites that cannot pull from docker.io name a mirror.
    pub window_image: Option<String>,
    /// The catalogue's vendors (`loam_compiler::catalogue::facts::vendors`): collective library,
    /// Slurm GRES, slice resources and serving images. A group whose vendor is not here cannot be
    /// emitted (L4012).
    pub vendors: Vendors,
    /// Steps of a probe (`loam emit --probe`, [`probe`]): the trainer gets `--train-steps`,
    /// `--log-interval` and `--probe` after the layout arguments. `None`: a whole job.
    pub probe_steps: Option<u64>,
}

impl Options {
    /// The default options with the catalogue's `vendors`: JobSet, the default Slurm release,
    /// loam's trainer image and command, tenants' names derived, no lender queue, each engine's
    /// image from its vendor's file. The backends know no vendor of their own, so the vendor
    /// facts are always passed in.
    pub fn new(vendors: Vendors) -> Self {
        Options {
            flavor: Flavor::Jobset,
            slurm_version: SlurmVersion::DEFAULT,
            image: PLACEHOLDER_IMAGE.to_string(),
            trainer: vec![PLACEHOLDER_TRAINER.to_string()],
            tenants: BTreeMap::new(),
            node_groups: BTreeMap::new(),
            sites: BTreeMap::new(),
            rendezvous_source_ranges: Vec::new(),
            checkpoint_storage_class: None,
            serving_image: None,
            window_image: None,
            vendors,
            probe_steps: None,
        }
    }

    /// The tenancy these options give `tenant` of `pool`, else [`Tenancy::derived`]: the one
    /// lookup jobs, services and the Kubernetes prerequisites name a tenant's objects by. Never
    /// another pool's tenant of the same name.
    pub fn tenancy(&self, pool: &str, tenant: &str) -> Tenancy {
        self.tenants
            .get(&(pool.to_string(), tenant.to_string()))
            .cloned()
            .unwrap_or_else(|| Tenancy::derived(tenant))
    }
}

/// The trainer image [`Options::new`] gives: a name for the trainer's image, not a published one.
pub const PLACEHOLDER_IMAGE: &str = "ghcr.io/loam-dev/trainer:latest";
/// The trainer command [`Options::new`] gives: a name for the trainer, not a program loam ships.
pub const PLACEHOLDER_TRAINER: &str = "loam-train";

/// What the manifests of `doc` for `target` still need from the engineer before they run:
/// each placeholder left in them and each object loam does not emit, one sentence each
/// (docs/backends.md, "What the platform team provides"). `loam emit` prints them.
pub fn still_to_provide(doc: &PlanDocument, target: Target, options: &Options) -> Vec<String> {
    let backend = target.backend();
    let mut found = Vec::new();
    if !doc.plans.is_empty() {
        found = backend.still_to_provide(doc, options);
    }
    let weights: BTreeSet<(&str, String)> = doc
        .services
        .iter()
        .map(|s| {
            let namespace = options.tenancy(&s.pool, &s.tenant).namespace;
            (s.model.weights.as_str(), namespace)
        })
        .collect();
    for (w, namespace) in weights {
        let w = w.escape_debug().to_string();
        found.push(backend.weights_to_provide(&w, &namespace));
    }
    found.extend(unpublished_images(doc, options));
    found
}

/// Each engine image the services run that its vendor does not publish (the vendor file's
/// `serving.unpublished`), unless `--serving-image` replaces every engine's image.
fn unpublished_images(doc: &PlanDocument, options: &Options) -> BTreeSet<String> {
    if options.serving_image.is_some() {
        return BTreeSet::new();
    }
    let mut found = BTreeSet::new();
    for service in &doc.services {
        for role in &service.roles {
            let Some(vendor) = options.vendors.of_group(&role.group) else {
                continue;
            };
            let (Some(how), Some(image)) = (
                vendor.unpublished.get(&service.engine),
                vendor.images.get(&service.engine),
            ) else {
                continue;
            };
            found.insert(format!(
                "{} publishes no `{}` image: `{}` is the name the manifests pull; {}, or pass --serving-image",
                vendor.name, service.engine, image, how
            ));
        }
    }
    found
}

/// The trainer command is the placeholder [`Options::new`] gives: what every backend's job
/// manifests still need ([`Backend::still_to_provide`]).
pub fn trainer_placeholder(options: &Options) -> Option<String> {
    (options.trainer == [PLACEHOLDER_TRAINER]).then(|| {
        format!("the trainer command `{PLACEHOLDER_TRAINER}` is a placeholder: pass --trainer")
    })
}

/// One file to write, relative to the output folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Relative path with `/` separators, e.g. `llama3-70b/20-jobset.yaml` or
    /// `_prerequisites/shanghai/30-clusterqueue-nlp-train.yaml`.
    pub path: String,
    /// The file's text.
    pub contents: String,
}

/// The major version of the Plan JSON format this crate reads.
const SUPPORTED_MAJOR: &str = "1";

/// Renders every plan of `doc` for `target` as `loam emit` writes it: as [`render`], laid out by
/// the backend ([`Backend::lay_out`]): the Kubernetes objects grouped by the site cluster they
/// belong to, `<site>/_prerequisites/…` and `<site>/<job>/…` (a job over several sites in each
/// of its sites' folders), so that `kubectl --context <site> apply -R -f out/<site>/` applies
/// exactly one cluster's objects (deploy review, finding 10). Slurm and bare metal are as
/// [`render`] writes them.
pub fn render_by_site(
    doc: &PlanDocument,
    target: Target,
    options: &Options,
) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
    let (manifests, sites) = render_folders(doc, target, options)?;
    Ok(target.backend().lay_out(manifests, &sites))
}

/// Renders every plan of `doc` for `target`. Each job gets a folder named after it (a DNS-1123
/// label); files are sorted by path. Returns every problem found in any plan, or the manifests
/// when there is none. The Kubernetes prerequisites are under `_prerequisites/<site>/` and a
/// job over several sites has a sub-folder per site: one job's files together, as `loam diff`
/// compares them; [`render_by_site`] is what `loam emit` writes.
pub fn render(
    doc: &PlanDocument,
    target: Target,
    options: &Options,
) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
    render_folders(doc, target, options).map(|(manifests, _)| manifests)
}

/// [`render`], and the sites of each job's or service's folder in plan order.
fn render_folders(
    doc: &PlanDocument,
    target: Target,
    options: &Options,
) -> Result<(Vec<Manifest>, layout::FolderSites), Vec<Diagnostic>> {
    let mut diagnostics = Vec::new();
    let major = doc.format_version.split('.').next().unwrap_or_default();
    if major != SUPPORTED_MAJOR {
        diagnostics.push(job::error(
            codes::emit::UNSUPPORTED_FORMAT,
            format!(
                "unsupported plan format version `{}`, expected 1.x",
                doc.format_version
            ),
            "make the plan with this version of loam (`loam plan --format json`)",
        ));
        return Err(diagnostics);
    }
    // One folder per job, then per service beside them: a job or a service may not take
    // another's folder.
    let jobs = doc.plans.iter().map(|plan| Unit {
        name: &plan.job,
        sites: plan.groups.iter().map(|g| g.site.as_str()).collect(),
        rendered: render_job(doc, plan, target, options),
        collision: |other, name, folder| {
            job::error(
                codes::emit::SHARED_OUTPUT_FOLDER,
                format!("jobs `{other}` and `{name}` would both be written to `{folder}/`"),
                "rename one of the jobs, or emit them separately",
            )
        },
    });
    let services = doc.services.iter().map(|svc| Unit {
        name: &svc.service,
        sites: svc.roles.iter().map(|r| r.group.site.as_str()).collect(),
        rendered: service::render(svc, target, options),
        collision: |other, name, folder| {
            job::error(
                codes::emit::SHARED_OUTPUT_FOLDER,
                format!("`{other}` and service `{name}` would both be written to `{folder}/`"),
                "rename the service or the job, or emit them separately",
            )
        },
    });
    let mut manifests = Vec::new();
    let mut folders: BTreeMap<String, &str> = BTreeMap::new();
    let mut sites = layout::FolderSites::new();
    for unit in jobs.chain(services) {
        match unit.rendered {
            Ok((folder, files)) => {
                sites.insert(folder.clone(), unit.sites.into_iter());
                if let Some(other) = folders.insert(folder.clone(), unit.name) {
                    diagnostics.push((unit.collision)(other, unit.name, &folder));
                }
                manifests.extend(files.into_iter().map(|m| Manifest {
                    path: format!("{folder}/{}", m.path),
                    contents: m.contents,
                }));
            }
            Err(mut errors) => diagnostics.append(&mut errors),
        }
    }
    if !diagnostics.is_empty() {
        return Err(diagnostics);
    }
    // What the jobs share (the Kubernetes cluster objects, once per site), beside the folders.
    manifests.extend(target.backend().render_shared(doc, options)?);
    manifests.sort_by(|a, b| a.path.cmp(&b.path));
    let paths: BTreeSet<&str> = manifests.iter().map(|m| m.path.as_str()).collect();
    debug_assert_eq!(paths.len(), manifests.len());
    Ok((manifests, sites))
}

/// A job or a service as [`render_folders`] writes it: its rendering (folder and files), the
/// sites of its groups, and the error when its folder is taken.
struct Unit<'a> {
    name: &'a str,
    sites: Vec<&'a str>,
    rendered: Result<(String, Vec<Manifest>), Vec<Diagnostic>>,
    collision: fn(&str, &str, &str) -> Diagnostic,
}

/// Renders one plan of `doc` for `target`; paths are relative to the job's folder.
pub fn render_plan(
    doc: &PlanDocument,
    plan: &Plan,
    target: Target,
    options: &Options,
) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
    render_job(doc, plan, target, options).map(|(_, files)| files)
}

/// Renders one plan of `doc` for `target`: the job's folder name and the files in it.
fn render_job(
    doc: &PlanDocument,
    plan: &Plan,
    target: Target,
    options: &Options,
) -> Result<(String, Vec<Manifest>), Vec<Diagnostic>> {
    let job = job::JobContext::new(doc, plan, options)?;
    let files = target.backend().render_job(&job, options)?;
    Ok((job.name, files))
}

#[cfg(test)]
mod tests {
    use super::{Options, Target, render};
    use loam_compiler::catalogue::builtin_sources;
    use loam_compiler::catalogue::facts::vendors;
    use loam_compiler::project::{ProjectFiles, check_project, plan_project};
    use loam_ir::diagnostics::codes;

    /// A job and a service named alike would share a folder: on every backend the emit is
    /// refused with L4008, in the service's words, and names both.
    #[test]
    fn a_service_may_not_take_a_jobs_folder() {
        let specs = ["llama3-8b-finetune", "llama31-70b-chat-service"].map(|name| {
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
        let mut doc = plan_project(&checked, 1).document;
        let options = Options::new(vendors(checked.catalogue.as_ref().unwrap()));
        assert_eq!((doc.plans.len(), doc.services.len()), (1, 1));
        // `llama3-8b-finetune` is already a DNS label: the folder has the job's name.
        let job = doc.plans[0].job.clone();
        doc.services[0].service.clone_from(&job);
        for target in Target::ALL {
            let errors = render(&doc, *target, &options).unwrap_err();
            let shared: Vec<&str> = errors
                .iter()
                .filter(|d| d.code == codes::emit::SHARED_OUTPUT_FOLDER)
                .map(|d| d.message.as_str())
                .collect();
            assert_eq!(
                shared,
                [format!(
                    "`{job}` and service `{job}` would both be written to `{job}/`"
                )],
                "{target:?}"
            );
        }
    }
}
