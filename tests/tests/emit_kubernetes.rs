//! Conformance of the Kubernetes manifests with the admission rules of Kueue and JobSet (and
//! Volcano), over every example and every plan fixture: what a cluster would refuse or leave
//! pending forever, found before anyone applies the files.
//!
//! The rules, each of which [`every_rule_can_fail`] breaks once on purpose:
//! - `topology`: a podset topology annotation names a level of the Topology of the
//!   ResourceFlavor whose node labels the pod selects;
//! - `queue`: the queue-name label names a LocalQueue whose ClusterQueue exists and admits the
//!   namespace; a Volcano job's queue exists;
//! - `priority`: the priority-class label (Kueue) or `priorityClassName` (Volcano) names an
//!   existing class;
//! - `order`: in apply order (sorted paths, then documents) and in Argo CD sync waves every
//!   namespace, queue, class, flavor and topology comes before what needs it;
//! - `covered`: every resource a pod requests is covered by its ClusterQueue, which lists the
//!   pod's flavor;
//! - `layout`: tensor × pipeline stages × data × context of each group's arguments is the
//!   group's device count, and the groups match the plan's;
//! - `qos`: requests equal limits;
//! - `grace`: the termination grace period exceeds `LOAM_GRACE_S`.

use loam_backends::{Flavor, Options, Target, render};
use loam_ir::cluster::{QuotaShare, Tenancy};
use loam_ir::names::dns_label;
use loam_ir::plan::PlanDocument;
use loam_tests::{repo_root, run_cli};
use serde_json::Value;
use std::collections::BTreeMap;

/// One object of the output: file, position in it, the object.
#[derive(Clone, Debug)]
struct Obj {
    path: String,
    index: usize,
    doc: Value,
    /// The site cluster it is applied to: its folder under `_prerequisites/` or the job's, or
    /// for a job at one site the site of the job's pods.
    site: String,
}

impl Obj {
    fn kind(&self) -> &str {
        self.doc["kind"].as_str().unwrap_or("")
    }
    fn name(&self) -> &str {
        self.doc["metadata"]["name"].as_str().unwrap_or("")
    }
    fn namespace(&self) -> Option<&str> {
        self.doc["metadata"]["namespace"].as_str()
    }
    /// The cluster (site folder) the object is applied to.
    fn site(&self) -> String {
        self.site.clone()
    }
    fn wave(&self) -> i64 {
        self.doc["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]
            .as_str()
            .and_then(|w| w.parse().ok())
            .unwrap_or(i64::MAX)
    }
    fn before(&self, other: &Obj) -> bool {
        (self.path.as_str(), self.index) < (other.path.as_str(), other.index)
            && self.wave() < other.wave()
    }
}

/// The pod templates of a JobSet or Volcano Job: (group name, template).
fn pods(o: &Obj) -> Vec<(String, Value)> {
    let spec = &o.doc["spec"];
    let list = match o.kind() {
        "JobSet" => spec["replicatedJobs"].as_array(),
        "Job" if o.doc["apiVersion"] == "batch.volcano.sh/v1alpha1" => spec["tasks"].as_array(),
        _ => None,
    };
    list.into_iter()
        .flatten()
        .map(|r| {
            let t = if o.kind() == "JobSet" {
                &r["template"]["spec"]["template"]
            } else {
                &r["template"]
            };
            (r["name"].as_str().unwrap().to_string(), t.clone())
        })
        .collect()
}

/// The node labels a pod requires (`In` with one value).
fn selected(pod: &Value) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let terms = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"];
    for term in terms.as_array().into_iter().flatten() {
        for e in term["matchExpressions"].as_array().into_iter().flatten() {
            if e["operator"] == "In" && e["values"].as_array().map(Vec::len) == Some(1) {
                found.insert(
                    e["key"].as_str().unwrap().to_string(),
                    e["values"][0].as_str().unwrap().to_string(),
                );
            }
        }
    }
    found
}

fn find<'a>(
    objs: &'a [Obj],
    site: &str,
    kind: &str,
    ns: Option<&str>,
    name: &str,
) -> Option<&'a Obj> {
    objs.iter()
        .find(|o| o.site() == site && o.kind() == kind && o.name() == name && o.namespace() == ns)
}

/// The flavor whose node labels the pod selects.
fn flavor_of<'a>(objs: &'a [Obj], site: &str, pod: &Value) -> Option<&'a Obj> {
    let sel = selected(pod);
    objs.iter().find(|o| {
        o.site() == site
            && o.kind() == "ResourceFlavor"
            && o.doc["spec"]["nodeLabels"]
                .as_object()
                .is_some_and(|labels| {
                    labels
                        .iter()
                        .all(|(k, v)| sel.get(k).map(String::as_str) == v.as_str())
                })
    })
}

/// Every violation of the rules in `objs` (the output of one emit) against `doc`.
fn violations(objs: &[Obj], doc: &PlanDocument) -> Vec<String> {
    let mut bad = Vec::new();
    // order: namespaces and cluster objects before their users.
    for o in objs {
        let site = o.site();
        if let Some(ns) = o.namespace() {
            // A service's objects are at the sites of its roles: its namespace must exist at one.
            let namespace = if site.is_empty() {
                objs.iter()
                    .find(|n| n.kind() == "Namespace" && n.name() == ns && n.namespace().is_none())
            } else {
                find(objs, &site, "Namespace", None, ns)
            };
            match namespace {
                Some(n) if n.before(o) => {}
                _ => bad.push(format!(
                    "order: {} {} before its namespace {ns}",
                    o.path,
                    o.name()
                )),
            }
        }
        let mut needs: Vec<(&str, Option<&str>, String)> = Vec::new();
        match o.kind() {
            "LocalQueue" => needs.push((
                "ClusterQueue",
                None,
                o.doc["spec"]["clusterQueue"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )),
            "ClusterQueue" => {
                for g in o.doc["spec"]["resourceGroups"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    for f in g["flavors"].as_array().into_iter().flatten() {
                        needs.push((
                            "ResourceFlavor",
                            None,
                            f["name"].as_str().unwrap().to_string(),
                        ));
                    }
                }
            }
            "ResourceFlavor" => {
                if let Some(t) = o.doc["spec"]["topologyName"].as_str() {
                    needs.push(("Topology", None, t.to_string()));
                }
            }
            _ => {}
        }
        for (kind, ns, name) in needs {
            match find(objs, &site, kind, ns, &name) {
                Some(d) if d.before(o) => {}
                _ => bad.push(format!(
                    "order: {} {} needs {kind} {name} before it",
                    o.path,
                    o.name()
                )),
            }
        }
    }
    for o in objs.iter().filter(|o| !pods(o).is_empty()) {
        let site = o.site();
        let ns = o.namespace().unwrap_or("");
        let plan = doc
            .plans
            .iter()
            .find(|p| {
                dns_label(&p.job, 32) == o.name()
                    || loam_ir::names::job_label(&p.job).ok().as_deref() == Some(o.name())
            })
            .unwrap();
        let labels = &o.doc["metadata"]["labels"];
        let volcano = o.kind() == "Job";
        // queue and priority
        let mut cluster_queue = None;
        if volcano {
            let q = o.doc["spec"]["queue"].as_str().unwrap_or("");
            if !find(objs, &site, "Queue", None, q).is_some_and(|d| d.before(o)) {
                bad.push(format!(
                    "queue: {} names Volcano queue {q}, which is not applied before it",
                    o.path
                ));
            }
            let pc = o.doc["spec"]["priorityClassName"].as_str().unwrap_or("");
            if !find(objs, &site, "PriorityClass", None, pc).is_some_and(|d| d.before(o)) {
                bad.push(format!(
                    "priority: {} names PriorityClass {pc:?}, which is not applied before it",
                    o.path
                ));
            }
        } else {
            let q = labels["kueue.x-k8s.io/queue-name"].as_str().unwrap_or("");
            match find(objs, &site, "LocalQueue", Some(ns), q) {
                Some(lq) if lq.before(o) => {
                    let cq_name = lq.doc["spec"]["clusterQueue"].as_str().unwrap_or("");
                    match find(objs, &site, "ClusterQueue", None, cq_name) {
                        Some(cq)
                            if cq.doc["spec"]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
                                == ns =>
                        {
                            cluster_queue = Some(cq);
                        }
                        _ => bad.push(format!(
                            "queue: {}: LocalQueue {q} feeds no ClusterQueue admitting {ns}",
                            o.path
                        )),
                    }
                }
                _ => bad.push(format!(
                    "queue: {} names LocalQueue {ns}/{q}, which is not applied before it",
                    o.path
                )),
            }
            let pc = labels["kueue.x-k8s.io/priority-class"]
                .as_str()
                .unwrap_or("");
            if !find(objs, &site, "WorkloadPriorityClass", None, pc).is_some_and(|d| d.before(o)) {
                bad.push(format!("priority: {} names WorkloadPriorityClass {pc:?}, which is not applied before it", o.path));
            }
        }
        for (group, pod) in pods(o) {
            let ann = &pod["metadata"]["annotations"];
            let flavor = flavor_of(objs, &site, &pod);
            // topology
            for key in [
                "kueue.x-k8s.io/podset-required-topology",
                "kueue.x-k8s.io/podset-preferred-topology",
            ] {
                if let Some(level) = ann[key].as_str() {
                    let levels = flavor
                        .and_then(|f| f.doc["spec"]["topologyName"].as_str())
                        .and_then(|t| find(objs, &site, "Topology", None, t))
                        .map(|t| {
                            t.doc["spec"]["levels"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .map(|l| l["nodeLabel"].as_str().unwrap().to_string())
                                .collect::<Vec<_>>()
                        })
                        .unwrap_or_default();
                    if !levels.iter().any(|l| l == level) {
                        bad.push(format!("topology: {} group {group}: {key} {level} is no level of its flavor's Topology {levels:?}", o.path));
                    }
                }
            }
            let c = &pod["spec"]["containers"][0];
            // qos
            if c["resources"]["requests"] != c["resources"]["limits"] {
                bad.push(format!(
                    "qos: {} group {group}: requests differ from limits",
                    o.path
                ));
            }
            // covered
            if let Some(cq) = cluster_queue {
                let rg = &cq.doc["spec"]["resourceGroups"];
                let covered: Vec<&str> = rg
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|g| {
                        g["coveredResources"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|r| r.as_str().unwrap())
                    })
                    .collect();
                for r in c["resources"]["requests"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| k)
                {
                    if !covered.contains(&r.as_str()) {
                        bad.push(format!("covered: {} group {group} requests {r}, which ClusterQueue {} does not cover", o.path, cq.name()));
                    }
                }
                let listed = flavor.is_some_and(|f| {
                    rg.as_array().unwrap().iter().any(|g| {
                        g["flavors"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .any(|x| x["name"] == f.name())
                    })
                });
                if !listed {
                    bad.push(format!(
                        "covered: {} group {group}: no flavor of ClusterQueue {} selects its nodes",
                        o.path,
                        cq.name()
                    ));
                }
            }
            // grace
            let grace_s = c["env"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == "LOAM_GRACE_S")
                .and_then(|e| e["value"].as_str())
                .and_then(|v| v.parse::<u64>().ok());
            let period = pod["spec"]["terminationGracePeriodSeconds"]
                .as_u64()
                .unwrap_or(0);
            if grace_s.is_none_or(|g| period <= g) {
                bad.push(format!("grace: {} group {group}: terminationGracePeriodSeconds {period} does not exceed LOAM_GRACE_S {grace_s:?}", o.path));
            }
            // layout
            let index: usize = c["env"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == "LOAM_GROUP")
                .and_then(|e| e["value"].as_str())
                .unwrap()
                .parse()
                .unwrap();
            let g = &plan.groups[index];
            let args: BTreeMap<String, String> = c["args"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|a| {
                    a.as_str()?
                        .strip_prefix("--")?
                        .split_once('=')
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                })
                .collect();
            let num = |k: &str| args.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            let stages = match args.get("pipeline-stages").and_then(|s| s.split_once('-')) {
                Some((a, b)) => {
                    (b.parse::<u64>().unwrap() + 1 - a.parse::<u64>().unwrap())
                        / num("virtual-stages").max(1)
                }
                None => num("pipeline-parallel"),
            };
            let product =
                num("tensor-parallel") * stages * num("data-parallel") * num("context-parallel");
            let nodes = if volcano {
                o.doc["spec"]["tasks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|t| t["name"] == group.as_str())
                    .unwrap()["replicas"]
                    .as_u64()
            } else {
                o.doc["spec"]["replicatedJobs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|t| t["name"] == group.as_str())
                    .unwrap()["template"]["spec"]["parallelism"]
                    .as_u64()
            };
            let tensor = g
                .tensor
                .or(g.layout.map(|l| l.tensor))
                .or(plan.layout.map(|l| l.tensor));
            if product != g.devices
                || nodes != Some(g.nodes)
                || Some(num("tensor-parallel")) != tensor
            {
                bad.push(format!("layout: {} group {group}: tp×pp×dp×cp = {product}, {nodes:?} nodes; the plan's group has {} devices on {} nodes, tensor {tensor:?}", o.path, g.devices, g.nodes));
            }
        }
    }
    bad
}

/// The tenants of the fixtures as the catalogue describes them.
fn options(flavor: Flavor) -> Options {
    let mut options = Options {
        flavor,
        ..loam_tests::shipped_options()
    };
    let mut nlp = Tenancy {
        namespace: "team-nlp".to_string(),
        queue: "nlp-train".to_string(),
        ..Tenancy::derived("nlp")
    };
    nlp.quotas.insert(
        "H100_SXM".to_string(),
        QuotaShare {
            guaranteed: 256,
            elastic: 256,
        },
    );
    loam_tests::tools::insert_nlp(&mut options, &nlp);
    options
}

/// Parses rendered manifests into objects.
fn objects(files: Vec<(String, String)>) -> Vec<Obj> {
    objects_in(files, false)
}

/// The objects of `files` as `loam emit` writes them: one folder per site cluster, whose name is
/// each object's site (`<site>/_prerequisites/…`, `<site>/<job>/…`).
fn objects_by_site(files: Vec<(String, String)>) -> Vec<Obj> {
    objects_in(files, true)
}

fn objects_in(files: Vec<(String, String)>, by_site: bool) -> Vec<Obj> {
    let mut objs = Vec::new();
    for (path, text) in files {
        let docs: Vec<Value> =
            serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        objs.extend(docs.into_iter().enumerate().map(|(index, doc)| Obj {
            path: path.clone(),
            index,
            doc,
            site: String::new(),
        }));
    }
    let folder = |path: &str| path.rsplit_once('/').map_or("", |(f, _)| f).to_string();
    let mut pod_sites: BTreeMap<String, String> = BTreeMap::new();
    for o in &objs {
        if let Some((_, pod)) = pods(o).first() {
            let site = pod["metadata"]["annotations"]["loam.io/site"]
                .as_str()
                .unwrap_or("");
            pod_sites.insert(folder(&o.path), dns_label(site, 40));
        }
    }
    for o in &mut objs {
        let parts: Vec<&str> = o.path.split('/').collect();
        o.site = if by_site {
            parts[0].to_string()
        } else if parts[0] == "_prerequisites" || parts.len() == 3 {
            parts[1].to_string()
        } else {
            pod_sites.get(&folder(&o.path)).cloned().unwrap_or_default()
        };
    }
    objs.sort_by(|a, b| (&a.path, a.index).cmp(&(&b.path, b.index)));
    objs
}

/// Every case: name, flavour, objects, plans.
fn cases() -> Vec<(String, Vec<Obj>, PlanDocument)> {
    let mut cases = Vec::new();
    for flavor in [Flavor::Jobset, Flavor::Volcano] {
        for entry in std::fs::read_dir(repo_root().join("tests/cases/emit/plans")).unwrap() {
            let path = entry.unwrap().path();
            let doc: PlanDocument =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let Ok(files) = render(&doc, Target::Kubernetes, &options(flavor)) else {
                continue;
            };
            let files = files.into_iter().map(|m| (m.path, m.contents)).collect();
            cases.push((
                format!("{} {flavor:?}", path.display()),
                objects(files),
                doc,
            ));
        }
        let mut examples: Vec<_> = std::fs::read_dir(repo_root().join("examples"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "loam"))
            .collect();
        examples.sort();
        for path in examples {
            let p = path.to_string_lossy().into_owned();
            let (code, out, err) = run_cli(&["plan", &p, "--format", "json"], "");
            assert_eq!(code, 0, "{err}");
            let doc: PlanDocument = serde_json::from_str(&out).unwrap();
            // Two tests build these cases at once: each emit gets a folder of its own.
            let scratch = tempfile::tempdir().unwrap();
            let dir = scratch.path().join("out");
            let d = dir.to_string_lossy().into_owned();
            let fl = if flavor == Flavor::Volcano {
                "volcano"
            } else {
                "jobset"
            };
            let (code, _, err) = run_cli(
                &[
                    "emit",
                    &p,
                    "--backend",
                    "kubernetes",
                    "--flavor",
                    fl,
                    "--out",
                    &d,
                ],
                "",
            );
            assert_eq!(code, 0, "{err}");
            let mut files = Vec::new();
            let mut stack = vec![dir.clone()];
            while let Some(folder) = stack.pop() {
                for e in std::fs::read_dir(&folder).unwrap() {
                    let e = e.unwrap().path();
                    if e.is_dir() {
                        stack.push(e);
                    } else if e.extension().is_some_and(|x| x == "yaml") {
                        let rel = e
                            .strip_prefix(&dir)
                            .unwrap()
                            .to_string_lossy()
                            .replace('\\', "/");
                        files.push((rel, std::fs::read_to_string(&e).unwrap()));
                    }
                }
            }
            cases.push((format!("{p} {flavor:?}"), objects_by_site(files), doc));
        }
    }
    cases
}

#[test]
fn every_example_and_fixture_meets_the_admission_rules() {
    let cases = cases();
    assert!(cases.len() > 20, "{} cases", cases.len());
    let mut all = Vec::new();
    for (name, objs, doc) in &cases {
        // A service-only spec has Deployments, not batch jobs (tests/tests/emit_services.rs).
        assert!(
            doc.plans.is_empty() || objs.iter().any(|o| !pods(o).is_empty()),
            "{name}: no job"
        );
        all.extend(
            violations(objs, doc)
                .into_iter()
                .map(|v| format!("{name}: {v}")),
        );
    }
    assert!(all.is_empty(), "{}", all.join("\n"));
}

/// The two-site fixture gets one manifest set per site, a rendezvous Service in the first and
/// the address from the operator's ConfigMap in the second; node ranks stay global.
#[test]
fn a_plan_over_two_sites_gets_a_manifest_set_per_site() {
    let doc: PlanDocument = serde_json::from_str(
        &std::fs::read_to_string(
            repo_root().join("tests/cases/emit/plans/hetero-h100-ascend.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let files = render(&doc, Target::Kubernetes, &options(Flavor::Jobset)).unwrap();
    let objs = objects(files.into_iter().map(|m| (m.path, m.contents)).collect());
    let jobsets: Vec<&Obj> = objs.iter().filter(|o| o.kind() == "JobSet").collect();
    assert_eq!(
        jobsets.iter().map(|o| o.path.as_str()).collect::<Vec<_>>(),
        [
            "llama3-70b-hetero/guiyang/20-jobset.yaml",
            "llama3-70b-hetero/shanghai/20-jobset.yaml"
        ]
    );
    assert!(objs.iter().any(|o| o.kind() == "Service"
        && o.path.starts_with("llama3-70b-hetero/shanghai/")
        && o.doc["spec"]["type"] == "LoadBalancer"));
    let env = |o: &Obj| pods(o)[0].1["spec"]["containers"][0]["env"].clone();
    let gy = env(jobsets[0]);
    let master = gy
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "PET_MASTER_ADDR")
        .unwrap();
    assert_eq!(
        master["valueFrom"]["configMapKeyRef"]["name"],
        "llama3-70b-hetero-rendezvous"
    );
    let offset = gy
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "NODE_RANK_OFFSET")
        .unwrap();
    assert_eq!(offset["value"], "16");
}

/// Each rule finds a manifest broken on purpose.
#[test]
fn every_rule_can_fail() {
    let doc: PlanDocument = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("tests/cases/emit/plans/two-node-lab.json"))
            .unwrap(),
    )
    .unwrap();
    let good = |flavor| {
        let files = render(&doc, Target::Kubernetes, &options(flavor)).unwrap();
        objects(files.into_iter().map(|m| (m.path, m.contents)).collect())
    };
    assert_eq!(
        violations(&good(Flavor::Jobset), &doc),
        Vec::<String>::new()
    );
    assert_eq!(
        violations(&good(Flavor::Volcano), &doc),
        Vec::<String>::new()
    );
    type Break = Box<dyn Fn(&mut Vec<Obj>)>;
    let breaks: Vec<(&str, Flavor, Break)> = vec![
        (
            "topology",
            Flavor::Jobset,
            Box::new(move |objs| {
                let js = objs.iter_mut().find(|o| o.kind() == "JobSet").unwrap();
                js.doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"]
                    ["kueue.x-k8s.io/podset-preferred-topology"] = "rack".into();
            }),
        ),
        (
            "queue",
            Flavor::Jobset,
            Box::new(|objs| objs.retain(|o| o.kind() != "LocalQueue")),
        ),
        (
            "queue",
            Flavor::Volcano,
            Box::new(|objs| objs.retain(|o| o.kind() != "Queue")),
        ),
        (
            "priority",
            Flavor::Jobset,
            Box::new(|objs| {
                let js = objs.iter_mut().find(|o| o.kind() == "JobSet").unwrap();
                js.doc["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "urgent".into();
            }),
        ),
        (
            "priority",
            Flavor::Volcano,
            Box::new(|objs| objs.retain(|o| o.kind() != "PriorityClass")),
        ),
        (
            "order",
            Flavor::Jobset,
            Box::new(|objs| {
                let ns = objs.iter_mut().find(|o| o.kind() == "Namespace").unwrap();
                ns.path = ns.path.replace("00-namespace", "99-namespace");
            }),
        ),
        (
            "covered",
            Flavor::Jobset,
            Box::new(|objs| {
                let cq = objs
                    .iter_mut()
                    .find(|o| o.kind() == "ClusterQueue")
                    .unwrap();
                cq.doc["spec"]["resourceGroups"][0]["coveredResources"] =
                    serde_json::json!(["cpu", "memory"]);
            }),
        ),
        (
            "layout",
            Flavor::Jobset,
            Box::new(|objs| {
                let js = objs.iter_mut().find(|o| o.kind() == "JobSet").unwrap();
                let args = js.doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["args"].as_array_mut().unwrap();
                for a in args.iter_mut() {
                    if a.as_str()
                        .is_some_and(|s| s.starts_with("--data-parallel="))
                    {
                        *a = "--data-parallel=3".into();
                    }
                }
            }),
        ),
        (
            "qos",
            Flavor::Jobset,
            Box::new(|objs| {
                let js = objs.iter_mut().find(|o| o.kind() == "JobSet").unwrap();
                js.doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"]
                    [0]["resources"]["limits"]["cpu"] = "1".into();
            }),
        ),
        (
            "grace",
            Flavor::Jobset,
            Box::new(|objs| {
                let js = objs.iter_mut().find(|o| o.kind() == "JobSet").unwrap();
                js.doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] =
                    30.into();
            }),
        ),
    ];
    for (rule, flavor, break_it) in breaks {
        let mut objs = good(flavor);
        break_it(&mut objs);
        objs.sort_by(|a, b| (&a.path, a.index).cmp(&(&b.path, b.index)));
        let found = violations(&objs, &doc);
        assert!(
            found.iter().any(|v| v.starts_with(&format!("{rule}:"))),
            "{rule} ({flavor:?}) not found: {found:#?}"
        );
    }
}

/// Kueue lends only unused nominal quota: the ClusterQueues of a pool's cohort at a site must
/// hold every device of the node groups they use (the tenants' guaranteed quota plus the
/// lender queue's unreserved rest), or a job within its tenant's guaranteed + elastic quota
/// could never be admitted. The lender admits nothing (no namespace, no LocalQueue) and
/// borrows nothing.
#[test]
fn the_cohort_holds_every_device_of_the_node_groups_it_uses() {
    let catalogue = loam_compiler::catalogue::builtin();
    let mut devices: BTreeMap<String, u64> = BTreeMap::new();
    for pool in ["xirang", "frontier", "lab"] {
        for (_, group) in catalogue.pool(pool).unwrap().node_groups() {
            devices.insert(dns_label(&group.name.value, 63), group.devices());
        }
    }
    let mut lenders = 0;
    for (name, objs, _) in cases().iter().filter(|(n, _, _)| n.ends_with("Jobset")) {
        if !name.starts_with(&repo_root().join("examples").to_string_lossy().into_owned()) {
            continue;
        }
        let queues: Vec<&Obj> = objs.iter().filter(|o| o.kind() == "ClusterQueue").collect();
        let mut held: BTreeMap<(String, String), u64> = BTreeMap::new();
        for q in &queues {
            let lender = q.name().starts_with("unreserved-");
            if lender {
                lenders += 1;
                assert!(
                    q.doc["spec"]["namespaceSelector"].is_null(),
                    "{name}: {:?}",
                    q.doc
                );
                assert!(
                    !objs
                        .iter()
                        .any(|o| o.kind() == "LocalQueue"
                            && o.doc["spec"]["clusterQueue"] == q.name()),
                    "{name}: a LocalQueue feeds the lender"
                );
            }
            for group in q.doc["spec"]["resourceGroups"].as_array().unwrap() {
                for flavor in group["flavors"].as_array().unwrap() {
                    let f = flavor["name"].as_str().unwrap().to_string();
                    for r in flavor["resources"].as_array().unwrap() {
                        let resource = r["name"].as_str().unwrap();
                        if lender {
                            assert!(r["borrowingLimit"] == "0" || r["borrowingLimit"] == "0Mi");
                        }
                        if resource.contains('/') && !resource.starts_with("rdma/") {
                            let n: u64 = r["nominalQuota"].as_str().unwrap().parse().unwrap();
                            *held.entry((q.site(), f.clone())).or_default() += n;
                        }
                    }
                }
            }
        }
        for ((site, flavor), n) in &held {
            let Some(total) = devices.get(flavor) else {
                continue;
            };
            assert!(
                n >= total,
                "{name}: the cohort at {site} holds {n} devices of {flavor}, which has {total}"
            );
        }
    }
    assert!(lenders > 0, "no example emits a lender queue");
}
