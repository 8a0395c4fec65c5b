//! The Kubernetes findings of the deploy review (issue 31), one test each: every shipped
//! example is planned together, as `loam emit examples/` does, and the manifests are read as a
//! platform engineer would before applying them. Each test fails on the output the review read.

use loam_backends::{Flavor, Manifest, Options, Target, render};
use loam_compiler::catalogue::builtin_sources;
use loam_compiler::catalogue::facts::{node_group_devices, site_node_groups, tenancies, vendors};
use loam_compiler::catalogue::model::Catalogue;
use loam_compiler::project::{ProjectFiles, check_project, plan_project};
use loam_ir::plan::PlanDocument;
use loam_tests::repo_root;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Every example planned in one project, and the catalogue it was planned with.
fn examples() -> &'static (PlanDocument, Catalogue) {
    static PLANNED: OnceLock<(PlanDocument, Catalogue)> = OnceLock::new();
    PLANNED.get_or_init(|| {
        let mut specs = Vec::new();
        for entry in std::fs::read_dir(repo_root().join("examples")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "loam") {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                specs.push((name, std::fs::read(&path).unwrap()));
            }
        }
        specs.sort();
        plan_with_builtin(specs)
    })
}

/// `specs` checked and planned against the built-in catalogue, which must take them clean.
fn plan_with_builtin(specs: Vec<(String, Vec<u8>)>) -> (PlanDocument, Catalogue) {
    let checked = check_project(
        ProjectFiles {
            catalogue: builtin_sources()
                .into_iter()
                .map(|(p, t)| (p.to_string(), t.to_string()))
                .collect(),
            specs,
        },
        2,
    );
    assert_eq!(checked.errors(), 0, "{:#?}", checked.diagnostics);
    let planned = plan_project(&checked, 2);
    assert!(!planned.has_errors(), "{:#?}", planned.diagnostics);
    (planned.document, checked.catalogue.unwrap())
}

/// The 70B chat example served on MI300X: tenant `vision`, which has an MI300X quota at xirang
/// (`nlp`, the example's tenant, has none, so the example itself is planned on H800).
fn mi300x_chat() -> &'static PlanDocument {
    static PLANNED: OnceLock<PlanDocument> = OnceLock::new();
    PLANNED.get_or_init(|| {
        let text =
            std::fs::read_to_string(repo_root().join("examples/llama31-70b-chat-service.loam"))
                .unwrap();
        let mut spec = text;
        for (from, to) in [
            ("tenant   = \"nlp\"", "tenant   = \"vision\""),
            (
                "    pool = xirang\n",
                "    pool = xirang\n    devices = [MI300X]\n",
            ),
        ] {
            assert!(spec.contains(from), "{from}");
            spec = spec.replacen(from, to, 1);
        }
        let spec = ("chat-mi300x.loam".to_string(), spec.into_bytes());
        let (doc, _) = plan_with_builtin(vec![spec]);
        assert!(
            doc.services.iter().all(|s| s.feasible),
            "{:#?}",
            doc.services
        );
        doc
    })
}

/// What `loam emit` renders for `doc`: the options come from the catalogue and `doc` alone.
fn emit(doc: &PlanDocument, flavor: Flavor) -> BTreeMap<String, String> {
    let catalogue = &examples().1;
    let options = Options {
        flavor,
        tenants: tenancies(doc, catalogue),
        node_groups: node_group_devices(doc, catalogue),
        sites: site_node_groups(doc, catalogue),
        ..Options::new(vendors(catalogue))
    };
    render(doc, Target::Kubernetes, &options)
        .unwrap_or_else(|d| panic!("{d:#?}"))
        .into_iter()
        .map(|Manifest { path, contents }| (path, contents))
        .collect()
}

/// `doc` with only the jobs and services whose names `keep` accepts.
fn subset(doc: &PlanDocument, keep: impl Fn(&str) -> bool) -> PlanDocument {
    PlanDocument {
        plans: doc.plans.iter().filter(|p| keep(&p.job)).cloned().collect(),
        services: doc
            .services
            .iter()
            .filter(|s| keep(&s.service))
            .cloned()
            .collect(),
        ..doc.clone()
    }
}

/// The one YAML document of `text`.
fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("{e}:\n{text}"))
}

/// The file at the path ending in `suffix`.
fn file<'a>(files: &'a BTreeMap<String, String>, suffix: &str) -> (&'a String, &'a String) {
    files
        .iter()
        .find(|(p, _)| p.ends_with(suffix))
        .unwrap_or_else(|| panic!("no {suffix} in {:#?}", files.keys().collect::<Vec<_>>()))
}

/// A ClusterQueue's nominal quota and borrowing limit of `resource` in `flavor`.
fn quota(queue: &Value, flavor: &str, resource: &str) -> (String, String) {
    for group in queue["spec"]["resourceGroups"].as_array().unwrap() {
        for f in group["flavors"].as_array().unwrap() {
            if f["name"] != flavor {
                continue;
            }
            for r in f["resources"].as_array().unwrap() {
                if r["name"] == resource {
                    let text = |v: &Value| match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    return (text(&r["nominalQuota"]), text(&r["borrowingLimit"]));
                }
            }
        }
    }
    panic!("no {resource} in flavor {flavor} of {queue:#}")
}

/// Finding 1: tenant `research` exists in pools frontier and xirang with different quotas, and
/// `nlp` has queue `nlp` in frontier and `nlp-train` in xirang. Emitted with every other
/// example, the frontier jobs must still get frontier's tenancy: `specs/pools/frontier.yaml`
/// guarantees research 2,048 H800 with no elastic share, so the campus ClusterQueue holds
/// nominal 2048, borrowing 0 on `fr-h800` (the review found xirang's 128 + 128), and the
/// Gaudi 2 LoRA job is queued on frontier's `nlp`, not xirang's `nlp-train`.
#[test]
fn a_tenant_gets_its_own_pools_queue_and_quota_whatever_else_is_emitted() {
    let (doc, _) = examples();
    let all = emit(doc, Flavor::Jobset);
    let (_, research) = file(&all, "_prerequisites/campus/30-clusterqueue-research.yaml");
    let research = yaml(research);
    assert_eq!(
        quota(&research, "fr-h800", "nvidia.com/gpu"),
        ("2048".to_string(), "0".to_string())
    );
    let (_, lora) = file(&all, "llama2-70b-lora/20-jobset.yaml");
    let lora = yaml(lora);
    assert_eq!(
        lora["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "nlp",
        "{lora:#}"
    );
}

/// Findings 1 and 9: a job's files, and the prerequisites of its sites, do not depend on which
/// other jobs are emitted with it. Each job and service is emitted alone and compared, file
/// by file, with the same paths of the whole set; and each site's prerequisites folder holds the
/// same files either way (a tenant with no job in the run still gets its queue at a site where
/// the catalogue gives it quota, so its guarantee is not lent away).
#[test]
fn a_jobs_files_are_the_same_alone_and_with_every_other_example() {
    let (doc, _) = examples();
    let all = emit(doc, Flavor::Jobset);
    let names: Vec<String> = doc
        .plans
        .iter()
        .map(|p| p.job.clone())
        .chain(doc.services.iter().map(|s| s.service.clone()))
        .collect();
    let mut differ = Vec::new();
    for name in &names {
        let alone = emit(&subset(doc, |n| n == name), Flavor::Jobset);
        for (path, text) in &alone {
            if all.get(path) != Some(text) {
                differ.push(format!("{name}: {path}"));
            }
        }
        // A service alone at a site gets only its namespace there (finding 24): the site
        // folders are compared for jobs.
        let is_job = doc.plans.iter().any(|p| &p.job == name);
        for site in alone
            .keys()
            .filter(|_| is_job)
            .filter_map(|p| p.strip_prefix("_prerequisites/"))
            .filter_map(|p| p.split_once('/'))
            .map(|(site, _)| site)
            .collect::<std::collections::BTreeSet<_>>()
        {
            let folder = format!("_prerequisites/{site}/");
            let files = |set: &BTreeMap<String, String>| -> Vec<String> {
                set.keys()
                    .filter(|p| p.starts_with(&folder))
                    .cloned()
                    .collect()
            };
            if files(&alone) != files(&all) {
                differ.push(format!("{name}: the files of {folder}"));
            }
        }
    }
    assert!(differ.is_empty(), "{differ:#?}");
}

/// Finding 2: every claim a training pod mounts exists in the pod's namespace at its site, as
/// a ReadWriteMany PersistentVolumeClaim (64 to 2,048 pods mount it from different nodes), under
/// both flavours. The review found claim `checkpoints` in every JobSet and no PVC anywhere.
#[test]
fn every_checkpoint_claim_a_pod_mounts_is_emitted_read_write_many() {
    let (doc, _) = examples();
    for flavor in [Flavor::Jobset, Flavor::Volcano] {
        let all = emit(doc, flavor);
        // (site folder, namespace, claim) of every PVC.
        let mut claims = Vec::new();
        for (path, text) in all.iter().filter(|(p, _)| p.contains("/00-pvc-")) {
            let pvc = yaml(text);
            assert_eq!(pvc["kind"], "PersistentVolumeClaim", "{path}");
            assert_eq!(
                pvc["spec"]["accessModes"],
                serde_json::json!(["ReadWriteMany"]),
                "{path}"
            );
            let site = path.split('/').nth(1).unwrap().to_string();
            claims.push((
                site,
                pvc["metadata"]["namespace"].as_str().unwrap().to_string(),
                pvc["metadata"]["name"].as_str().unwrap().to_string(),
            ));
        }
        let mut mounted = 0;
        for (path, text) in all
            .iter()
            .filter(|(p, _)| p.ends_with("-job.yaml") || p.ends_with("jobset.yaml"))
        {
            let job = yaml(text);
            let namespace = job["metadata"]["namespace"].as_str().unwrap();
            let site = text
                .split("loam.io/site")
                .nth(1)
                .and_then(|rest| rest.lines().next())
                .and_then(|rest| rest.split(": ").nth(1))
                .map(|s| loam_ir::names::dns_label(s.trim_matches('"'), 40))
                .unwrap_or_else(|| panic!("{path}: no site"));
            for claim in text.split("claimName: ").skip(1) {
                let claim = claim.lines().next().unwrap().trim_matches('"').to_string();
                mounted += 1;
                assert!(
                    claims.contains(&(site.clone(), namespace.to_string(), claim.clone())),
                    "{flavor:?} {path}: claim {claim} in {namespace} at {site} is not emitted; PVCs: {claims:?}"
                );
            }
        }
        assert!(mounted >= doc.plans.len(), "{mounted} mounts");
    }
}

/// The documents of every `.yaml` file whose path ends in `suffix`.
fn documents(files: &BTreeMap<String, String>, suffix: &str) -> Vec<(String, Value)> {
    files
        .iter()
        .filter(|(p, _)| p.ends_with(suffix))
        .flat_map(|(p, text)| {
            let docs: Vec<Value> = serde_saphyr::from_multiple(text).unwrap();
            docs.into_iter().map(move |d| (p.clone(), d))
        })
        .collect()
}

/// The engine containers of a Deployment or LeaderWorkerSet.
fn engine_containers(workload: &Value) -> Vec<&Value> {
    let spec = &workload["spec"];
    [
        &spec["template"]["spec"]["containers"],
        &spec["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"],
        &spec["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"],
    ]
    .into_iter()
    .filter_map(Value::as_array)
    .flatten()
    .filter(|c| c["name"] == "engine")
    .collect()
}

/// Finding 4: every vLLM engine with the NIXL connector (the disaggregated 70B chat and RAG
/// examples) tells its peers its pod IP in `VLLM_NIXL_SIDE_CHANNEL_HOST` (downward API);
/// vLLM's default, `localhost`, fails every transfer between pods.
#[test]
fn every_nixl_engine_advertises_its_pod_ip() {
    let (doc, _) = examples();
    let all = emit(doc, Flavor::Jobset);
    let mut nixl = 0;
    for (path, workload) in documents(&all, "-deployment.yaml")
        .into_iter()
        .chain(documents(&all, "-leaderworkerset.yaml"))
    {
        for c in engine_containers(&workload) {
            if !c.to_string().contains("NixlConnector") {
                continue;
            }
            nixl += 1;
            let host = c["env"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|e| e["name"] == "VLLM_NIXL_SIDE_CHANNEL_HOST");
            assert_eq!(
                host.map(|e| &e["valueFrom"]["fieldRef"]["fieldPath"]),
                Some(&Value::from("status.podIP")),
                "{path}"
            );
        }
    }
    // One disaggregated vLLM example (llama31-70b-chat): a prefill and a decode role.
    assert_eq!(nixl, 2, "{nixl} NIXL engines");
}

/// Finding 5: an engine pod on AMD devices (`amd.com/gpu`, the 70B chat example on MI300X)
/// runs a ROCm build of its engine, never the CUDA-only `vllm/vllm-openai` the review found.
#[test]
fn engines_on_amd_devices_run_a_rocm_image() {
    let all = emit(mi300x_chat(), Flavor::Jobset);
    let mut amd = 0;
    for (path, workload) in documents(&all, "-deployment.yaml")
        .into_iter()
        .chain(documents(&all, "-leaderworkerset.yaml"))
    {
        for c in engine_containers(&workload) {
            if c["resources"]["limits"].get("amd.com/gpu").is_none() {
                continue;
            }
            amd += 1;
            let image = c["image"].as_str().unwrap();
            assert!(
                image.contains("rocm") && !image.contains("vllm/vllm-openai"),
                "{path}: {image}"
            );
        }
    }
    assert!(amd >= 1, "{amd} engines on AMD devices");
}

/// Finding 5: `loam emit --serving-image` replaces every engine's image (the review found the
/// option in the library and no flag for it).
#[test]
fn the_serving_image_can_be_chosen_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let spec = repo_root().join("examples/llama31-70b-chat-service.loam");
    let (code, _, err) = loam_tests::run_cli(
        &[
            "emit",
            spec.to_str().unwrap(),
            "--backend",
            "kubernetes",
            "--serving-image",
            "registry.example/vllm-rocm:0.11.2",
            "--out",
            out.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let written = written(&out);
    let (_, prefill) = file(&written, "/llama31-70b-chat/10-prefill-deployment.yaml");
    assert!(
        prefill.contains("image: \"registry.example/vllm-rocm:0.11.2\""),
        "{prefill}"
    );
}

/// A Kubernetes quantity as a number (`256`, `51200m`).
fn quantity(q: &Value) -> f64 {
    let text = match q {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match text.strip_suffix('m') {
        Some(milli) => milli.parse::<f64>().unwrap() / 1000.0,
        None => text.parse().unwrap(),
    }
}

/// Finding 8: every autoscaler's requests-running target can be exceeded by 10 % (the HPA's
/// default tolerance) without passing the engine's own cap on running requests, so a busy
/// role scales up. The review found prefill targets of 256 against `--max-num-seqs 64` (70B
/// chat) and 64 against 16. For the 70B chat prefill the target is now 0.8 × 64 = 51.2.
#[test]
fn every_autoscaler_target_is_reachable_below_the_engines_cap() {
    let (doc, _) = examples();
    let all = emit(doc, Flavor::Jobset);
    let mut checked = 0;
    for (path, hpa) in documents(&all, "-hpa.yaml") {
        let target = quantity(&hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"]);
        let workload_name = hpa["spec"]["scaleTargetRef"]["name"].as_str().unwrap();
        let folder = path.rsplit_once('/').unwrap().0;
        let workloads = documents(&all, "-deployment.yaml")
            .into_iter()
            .chain(documents(&all, "-leaderworkerset.yaml"));
        let (_, workload) = workloads
            .filter(|(p, _)| p.starts_with(folder))
            .find(|(_, w)| w["metadata"]["name"] == workload_name)
            .unwrap_or_else(|| panic!("{path}: no {workload_name}"));
        let engine = engine_containers(&workload)[0].clone();
        let words: Vec<String> = engine["command"]
            .as_array()
            .into_iter()
            .chain(engine["args"].as_array())
            .flatten()
            .filter_map(|w| w.as_str().map(str::to_string))
            .collect();
        let cap = words
            .windows(2)
            .find(|w| w[0] == "--max-num-seqs" || w[0] == "--max-running-requests")
            .map(|w| w[1].parse::<f64>().unwrap())
            .unwrap_or_else(|| panic!("{path}: no cap in {words:?}"));
        assert!(
            target * 1.1 <= cap,
            "{path}: target {target} × 1.1 exceeds the engine's cap {cap}"
        );
        if workload_name == "llama31-70b-chat-prefill" {
            assert!((target - 51.2).abs() < 1e-9, "{path}: {target}");
        }
        checked += 1;
    }
    assert!(checked >= 4, "{checked} autoscalers");
}

/// The newcomer's first service finding: a pod's cpu and memory were the node's divided by the
/// node's device count twice. On an MI300X node of zhongwei (`specs/pools/xirang.yaml`: pod
/// 160 cpus, 1,800 GiB, 8 devices) a pod with d devices gets 160·d/8 = 20·d cpus and
/// 1,800·1,024·d/8 = 230,400·d MiB: a one-device pod of the 70B chat gets 20 cpus and
/// 230400Mi (the review found 2 and 28800Mi).
#[test]
fn a_service_pod_gets_its_devices_share_of_the_node_once() {
    let all = emit(mi300x_chat(), Flavor::Jobset);
    let mut checked = 0;
    for (path, workload) in documents(&all, "-deployment.yaml") {
        for c in engine_containers(&workload) {
            let limits = &c["resources"]["limits"];
            let Some(devices) = limits.get("amd.com/gpu") else {
                continue;
            };
            let d: u64 = devices.as_str().unwrap().parse().unwrap();
            assert_eq!(limits["cpu"], Value::from((20 * d).to_string()), "{path}");
            assert_eq!(
                limits["memory"],
                Value::from(format!("{}Mi", 230_400 * d)),
                "{path}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 1, "{checked} MI300X engine pods");
}

/// Finding 24: a site with services only (zhongwei: the 70B chat of nlp and the Qwen3
/// assistant of research on H800, no job) gets no Kueue object, since Kueue may not be
/// installed there; its tenants' namespaces are still written.
#[test]
fn a_site_with_services_only_gets_no_kueue_objects() {
    let (doc, _) = examples();
    let all = emit(doc, Flavor::Jobset);
    let zhongwei: Vec<&String> = all
        .keys()
        .filter(|p| p.starts_with("_prerequisites/zhongwei/"))
        .collect();
    assert_eq!(
        zhongwei,
        [
            "_prerequisites/zhongwei/00-namespace-team-nlp.yaml",
            "_prerequisites/zhongwei/00-namespace-team-research.yaml"
        ],
        "{zhongwei:#?}"
    );
}

/// Finding 23: every namespace a pod with the IPC_LOCK capability runs in (RDMA jobs) is
/// labelled for the Pod Security Standards' privileged level: baseline forbids adding
/// IPC_LOCK, and the Job controller could create no pod.
#[test]
fn namespaces_of_pods_that_lock_memory_allow_it() {
    let (doc, _) = examples();
    let all = emit(doc, Flavor::Jobset);
    let mut locked = 0;
    for (path, text) in all.iter().filter(|(p, _)| p.ends_with("20-jobset.yaml")) {
        if !text.contains("IPC_LOCK") {
            continue;
        }
        locked += 1;
        let namespace = yaml(text)["metadata"]["namespace"]
            .as_str()
            .unwrap()
            .to_string();
        let labelled = documents(&all, &format!("/00-namespace-{namespace}.yaml"));
        assert!(!labelled.is_empty(), "{path}: no namespace {namespace}");
        for (ns_path, ns) in labelled {
            assert_eq!(
                ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "privileged",
                "{ns_path}"
            );
        }
    }
    assert!(locked > 0, "no job locks memory");
}

/// Finding 16: each site's Volcano Job of a plan over two sites (the shanghai H100 + guiyang
/// Ascend fixture) turns off the svc plugin's NetworkPolicy, which admits only the job's own
/// pods at that site and would drop the peer site's traffic; a one-site job keeps it.
#[test]
fn a_volcano_job_over_two_sites_lets_the_other_site_in() {
    let doc: PlanDocument = serde_json::from_str(
        &std::fs::read_to_string(
            repo_root().join("tests/cases/emit/plans/hetero-h100-ascend.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let options = Options {
        flavor: Flavor::Volcano,
        ..loam_tests::shipped_options()
    };
    let files = render(&doc, Target::Kubernetes, &options).unwrap_or_else(|d| panic!("{d:#?}"));
    let jobs: Vec<_> = files
        .iter()
        .filter(|m| m.path.ends_with("20-volcano-job.yaml"))
        .collect();
    assert_eq!(jobs.len(), 2, "one Volcano Job per site");
    for m in jobs {
        let job = yaml(&m.contents);
        assert_eq!(
            job["spec"]["plugins"]["svc"],
            serde_json::json!(["--disable-network-policy"]),
            "{}",
            m.path
        );
    }
    let (doc, _) = examples();
    let one_site = emit(&subset(doc, |n| n == "llama3-70b-mixed"), Flavor::Volcano);
    let (_, text) = file(&one_site, "20-volcano-job.yaml");
    assert_eq!(yaml(text)["spec"]["plugins"]["svc"], serde_json::json!([]));
}

/// Finding 28: a rollout never takes a role below its replicas (maxUnavailable 0, maxSurge 1:
/// with one replica, maxSurge 0 was an outage while the new pod loaded its weights), and every
/// role that runs two or more replicas has a PodDisruptionBudget letting drains take one pod at
/// a time, selecting exactly the role's pods.
#[test]
fn rollouts_and_drains_keep_a_role_serving() {
    let (doc, _) = examples();
    let all = emit(doc, Flavor::Jobset);
    let mut budgets = 0;
    for (path, workload) in documents(&all, "-deployment.yaml")
        .into_iter()
        .chain(documents(&all, "-leaderworkerset.yaml"))
        .filter(|(p, _)| !p.ends_with("40-router.yaml"))
    {
        let spec = &workload["spec"];
        let update = if spec["rolloutStrategy"].is_object() {
            &spec["rolloutStrategy"]["rollingUpdateConfiguration"]
        } else {
            &spec["strategy"]["rollingUpdate"]
        };
        assert_eq!(update["maxUnavailable"], 0, "{path}");
        assert_eq!(update["maxSurge"], 1, "{path}");
        let name = workload["metadata"]["name"].as_str().unwrap();
        let folder = path.rsplit_once('/').unwrap().0;
        let hpa = documents(&all, "-hpa.yaml")
            .into_iter()
            .find(|(p, h)| p.starts_with(folder) && h["spec"]["scaleTargetRef"]["name"] == name);
        let min = hpa.map_or_else(
            || spec["replicas"].as_u64().unwrap_or(1),
            |(_, h)| h["spec"]["minReplicas"].as_u64().unwrap(),
        );
        let pdb = documents(&all, "-pdb.yaml")
            .into_iter()
            .find(|(p, b)| p.starts_with(folder) && b["metadata"]["name"] == name);
        if min > 1 {
            let (pdb_path, pdb) = pdb.unwrap_or_else(|| panic!("{path}: {min} replicas, no PDB"));
            assert_eq!(pdb["spec"]["maxUnavailable"], 1, "{pdb_path}");
            assert_eq!(
                pdb["spec"]["selector"]["matchLabels"], spec["selector"]["matchLabels"],
                "{pdb_path}"
            );
            budgets += 1;
        } else {
            assert!(
                pdb.is_none(),
                "{path}: a single replica with a PDB blocks drains"
            );
        }
    }
    assert!(budgets >= 1, "no role with two or more replicas");
}

/// Finding 6 (decided: services stay outside Kueue and never preempt): every service pod's
/// PriorityClass has `preemptionPolicy: Never`, so a service rollout or scale-up never evicts a
/// training pod (which runs at pod priority 0 under Kueue and would spend its restart budget),
/// and its name differs from every class the prerequisites define (one cluster-scoped name
/// cannot both preempt and not).
#[test]
fn services_never_preempt_training() {
    let (doc, _) = examples();
    for flavor in [Flavor::Jobset, Flavor::Volcano] {
        let all = emit(doc, flavor);
        let prerequisite_classes: Vec<Value> = documents(&all, ".yaml")
            .into_iter()
            .filter(|(p, d)| p.starts_with("_prerequisites/") && d["kind"] == "PriorityClass")
            .map(|(_, d)| d["metadata"]["name"].clone())
            .collect();
        let mut services = 0;
        for (path, class) in documents(&all, ".yaml")
            .into_iter()
            .filter(|(p, d)| !p.starts_with("_prerequisites/") && d["kind"] == "PriorityClass")
        {
            services += 1;
            assert_eq!(class["preemptionPolicy"], "Never", "{path}");
            assert!(
                !prerequisite_classes.contains(&class["metadata"]["name"]),
                "{path}: {} is also a prerequisite",
                class["metadata"]["name"]
            );
        }
        assert_eq!(services, doc.services.len(), "{flavor:?}");
    }
}

/// Finding 13: a tenant's Volcano queue reserves its guaranteed quota in `spec.guarantee`,
/// which Volcano's default `proportion` plugin reads (it never reads `deserved`): research at
/// campus (deepseek-v3-pretrain) reserves frontier's H100 16,384 + H800 2,048 + B200 256 =
/// 18,688 `nvidia.com/gpu` (`specs/pools/frontier.yaml`), its guarantee and its `deserved`
/// alike.
#[test]
fn a_volcano_queue_reserves_its_guarantee() {
    let (doc, _) = examples();
    let all = emit(doc, Flavor::Volcano);
    let (_, text) = file(&all, "_prerequisites/campus/30-queue-research.yaml");
    let queue = yaml(text);
    assert_eq!(
        quantity(&queue["spec"]["guarantee"]["resource"]["nvidia.com/gpu"]),
        18_688.0,
        "{queue:#}"
    );
    assert_eq!(
        queue["spec"]["guarantee"]["resource"],
        queue["spec"]["deserved"]
    );
}

/// Finding 22 and the newcomer's 7.4: `loam emit` names each placeholder it leaves (the trainer
/// image and command, the default storage class) and the gated weights a service loads, and
/// drops each one the engineer provides.
#[test]
fn emit_names_the_placeholders_it_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let spec = repo_root().join("examples/llama3-8b-finetune.loam");
    let spec = spec.to_str().unwrap();
    let out = dir.path().join("a");
    let (code, _, err) = loam_tests::run_cli(
        &[
            "emit",
            spec,
            "--backend",
            "kubernetes",
            "--out",
            out.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    for needed in [
        "still to provide: the trainer image `ghcr.io/loam-dev/trainer:latest` is a placeholder",
        "still to provide: the trainer command `loam-train` is a placeholder",
        "still to provide: the checkpoint volumes use the cluster's default storage class",
    ] {
        assert!(err.contains(needed), "{needed} missing in:\n{err}");
    }
    let out = dir.path().join("b");
    let (code, _, err) = loam_tests::run_cli(
        &[
            "emit",
            spec,
            "--backend",
            "kubernetes",
            "--image",
            "registry.example/trainer:1.0",
            "--trainer",
            "torchrun train.py",
            "--checkpoint-storage-class",
            "cephfs",
            "--out",
            out.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("still to provide"), "{err}");
    let chat = repo_root().join("examples/llama31-70b-chat-service.loam");
    let out = dir.path().join("c");
    let (code, _, err) = loam_tests::run_cli(
        &[
            "emit",
            chat.to_str().unwrap(),
            "--backend",
            "kubernetes",
            "--out",
            out.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("still to provide: the engines load the weights `meta-llama/"),
        "{err}"
    );
}

/// Finding 7: a Volcano job mixing Ascend and NVIDIA groups at one site (llama3-70b-mixed at
/// guiyang: 96 Ascend pods and 48 H800 pods) gets no MindCluster rank table or label, which
/// MindCluster would never complete (it counts all 144 replicas and caches only the 96 NPU
/// pods); a job of Ascend groups only (the two-site fixture's guiyang site) keeps it.
#[test]
fn a_volcano_job_mixing_vendors_at_a_site_waits_for_no_rank_table() {
    let (doc, _) = examples();
    let mixed = emit(&subset(doc, |n| n == "llama3-70b-mixed"), Flavor::Volcano);
    let text: String = mixed.values().cloned().collect();
    assert!(
        text.contains("H800") && text.contains("Ascend"),
        "not a mixed job"
    );
    for ascend_only in [
        "15-rank-table.yaml",
        "ring-controller.atlas",
        "RANK_TABLE_FILE",
    ] {
        assert!(
            !mixed.keys().any(|p| p.contains(ascend_only)) && !text.contains(ascend_only),
            "{ascend_only} in the mixed job"
        );
    }
    let doc: PlanDocument = serde_json::from_str(
        &std::fs::read_to_string(
            repo_root().join("tests/cases/emit/plans/hetero-h100-ascend.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let options = Options {
        flavor: Flavor::Volcano,
        ..loam_tests::shipped_options()
    };
    let files = render(&doc, Target::Kubernetes, &options).unwrap_or_else(|d| panic!("{d:#?}"));
    assert!(
        files
            .iter()
            .any(|m| m.path.ends_with("guiyang/15-rank-table.yaml")),
        "the Ascend-only site lost its rank table"
    );
}

/// Finding 15: the rendezvous load balancer of a plan over two sites admits only the networks
/// given (`loadBalancerSourceRanges`), since the c10d TCPStore behind it has no
/// authentication; without them `loam emit` says it is open.
#[test]
fn the_rendezvous_load_balancer_admits_only_the_given_networks() {
    let doc: PlanDocument = serde_json::from_str(
        &std::fs::read_to_string(
            repo_root().join("tests/cases/emit/plans/hetero-h100-ascend.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let open = loam_tests::shipped_options();
    assert!(
        loam_backends::still_to_provide(&doc, Target::Kubernetes, &open)
            .iter()
            .any(|n| n.contains("--rendezvous-source-ranges")),
        "an open rendezvous goes unmentioned"
    );
    let options = Options {
        rendezvous_source_ranges: vec!["10.20.0.0/16".to_string(), "10.30.0.0/16".to_string()],
        ..loam_tests::shipped_options()
    };
    assert!(
        !loam_backends::still_to_provide(&doc, Target::Kubernetes, &options)
            .iter()
            .any(|n| n.contains("--rendezvous-source-ranges"))
    );
    let files = render(&doc, Target::Kubernetes, &options).unwrap_or_else(|d| panic!("{d:#?}"));
    let service = files
        .iter()
        .find(|m| m.path.ends_with("30-rendezvous-service.yaml"))
        .expect("a rendezvous Service");
    assert_eq!(
        yaml(&service.contents)["spec"]["loadBalancerSourceRanges"],
        serde_json::json!(["10.20.0.0/16", "10.30.0.0/16"])
    );
}

/// Finding 12 (Volcano): the interruptible example with a daily window (qwen-7b-continued)
/// gets `maxRetry` = its restart budget (the JobSet's `maxRestarts`) + one resume per window
/// opening, ⌈training hours / window hours⌉, since Volcano counts each `ResumeJob` as a retry;
/// with the budget alone it failed after about six windows.
#[test]
fn a_volcano_window_job_has_a_retry_per_window_opening() {
    let (doc, _) = examples();
    let job = "qwen-7b-continued";
    let plan = doc.plans.iter().find(|p| p.job == job).unwrap();
    let schedule = plan.schedule.as_ref().expect("a window");
    let train_h = plan.estimate.as_ref().unwrap().train_time_h;
    let openings = (train_h / schedule.hours_per_day as f64).ceil() as u64;
    assert!(openings > 6, "{openings} openings");
    let only = subset(doc, |n| n == job);
    let jobsets = emit(&only, Flavor::Jobset);
    let (_, jobset) = file(&jobsets, "20-jobset.yaml");
    let budget = yaml(jobset)["spec"]["failurePolicy"]["maxRestarts"]
        .as_u64()
        .unwrap();
    let volcano = emit(&only, Flavor::Volcano);
    let (_, vjob) = file(&volcano, "20-volcano-job.yaml");
    assert_eq!(
        yaml(vjob)["spec"]["maxRetry"].as_u64().unwrap(),
        budget + openings
    );
}

/// Finding 12 (JobSet): an interrupted trainer exits 75 (the contract's checkpoint-request
/// exit), which fails its Job by the pod failure policy (reason `PodFailurePolicy`), and the
/// JobSet restarts on that reason without spending `maxRestarts`; any other failure still
/// fails the Job by its backoff limit of 0 and spends the budget.
#[test]
fn an_interrupted_jobset_restarts_without_spending_its_budget() {
    let (doc, _) = examples();
    let all = emit(doc, Flavor::Jobset);
    let mut jobsets = 0;
    for (path, text) in all.iter().filter(|(p, _)| p.ends_with("20-jobset.yaml")) {
        jobsets += 1;
        let js = yaml(text);
        assert_eq!(
            js["spec"]["failurePolicy"]["rules"],
            serde_json::json!([{
                "name": "interrupted",
                "action": "RestartJobSetAndIgnoreMaxRestarts",
                "onJobFailureReasons": ["PodFailurePolicy"]
            }]),
            "{path}"
        );
        for rj in js["spec"]["replicatedJobs"].as_array().unwrap() {
            let job = &rj["template"]["spec"];
            assert_eq!(job["backoffLimit"], 0, "{path}");
            assert_eq!(
                job["podFailurePolicy"]["rules"],
                serde_json::json!([{
                    "action": "FailJob",
                    "onExitCodes": {"containerName": "trainer", "operator": "In", "values": [75]}
                }]),
                "{path}"
            );
            assert_eq!(job["template"]["spec"]["restartPolicy"], "Never", "{path}");
        }
    }
    assert_eq!(jobsets, doc.plans.len());
}

/// Every file under `dir`, by path relative to it (`/` separators).
fn written(dir: &std::path::Path) -> BTreeMap<String, String> {
    fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy();
                out.insert(
                    rel.replace('\\', "/"),
                    std::fs::read_to_string(&path).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Finding 10: `kubectl apply -R -f out/` applied every site's objects to one cluster, where
/// `nlp-train` (defined at campus, guiyang and shanghai) kept the last site's flavors. `loam
/// emit examples/` now writes one folder per site cluster: the top-level folders are exactly
/// the sites of the jobs and services, each holds its own `_prerequisites/`, no object is
/// written twice within a site's folder (the last-file-wins merge), and every pod template in
/// `out/<site>/` is annotated with that site.
#[test]
fn each_site_folder_applies_exactly_one_clusters_objects() {
    let out = std::env::temp_dir().join(format!("loam-by-site-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let folder = repo_root().join("examples");
    let (code, _, err) = loam_tests::run_cli(
        &[
            "emit",
            &folder.to_string_lossy(),
            "--backend",
            "kubernetes",
            "--out",
            &out.to_string_lossy(),
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let files = written(&out);
    let _ = std::fs::remove_dir_all(&out);
    let doc = &examples().0;
    let sites: std::collections::BTreeSet<String> = doc
        .plans
        .iter()
        .flat_map(|p| p.groups.iter().map(|g| g.site.clone()))
        .chain(
            doc.services
                .iter()
                .flat_map(|s| s.roles.iter().map(|r| r.group.site.clone())),
        )
        .collect();
    let top: std::collections::BTreeSet<String> = files
        .keys()
        .map(|p| p.split('/').next().unwrap().to_string())
        .collect();
    assert_eq!(top, sites, "the output's top-level folders are the sites");
    let mut seen: BTreeMap<(String, String, String, String), String> = BTreeMap::new();
    for (path, text) in &files {
        let site = path.split('/').next().unwrap();
        assert!(
            files
                .keys()
                .any(|p| p.starts_with(&format!("{site}/_prerequisites/"))),
            "{site} has no _prerequisites/ of its own"
        );
        for doc in serde_saphyr::from_multiple::<Value>(text).unwrap() {
            if doc.is_null() {
                continue;
            }
            let key = (
                site.to_string(),
                doc["kind"].as_str().unwrap_or_default().to_string(),
                doc["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                doc["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
            if let Some(first) = seen.insert(key.clone(), path.clone()) {
                panic!("{key:?} is written by {first} and {path}: one apply keeps the last");
            }
            let text = serde_json::to_string(&doc).unwrap();
            for (i, _) in text.match_indices("\"loam.io/site\":\"") {
                let rest = &text[i + "\"loam.io/site\":\"".len()..];
                let annotated = &rest[..rest.find('"').unwrap()];
                assert_eq!(
                    annotated, site,
                    "{path}: a pod of {annotated} in {site}'s folder"
                );
            }
        }
    }
}

/// Newcomer review, 5.6 and 7.6: `vllm serve meta-llama/Llama-3.1-8B-Instruct` ran with no
/// `HF_TOKEN` (a gated repository answers 401) and no weight volume (every restart downloaded
/// 16 GB again). Every engine container of every example service now reads `HF_TOKEN` from the
/// Secret `hf-token` (key `token`, optional: open weights need none), keeps `HF_HOME` on the
/// claim `<service>-model-cache` mounted at `/models`, and that claim is emitted ReadWriteMany
/// in the service's folder, in its namespace; `loam emit` names the Secret.
#[test]
fn every_engine_gets_a_token_reference_and_a_weight_cache() {
    let (doc, _) = examples();
    let all = emit(doc, Flavor::Jobset);
    let mut engines = 0;
    for (path, workload) in documents(&all, "-deployment.yaml")
        .into_iter()
        .chain(documents(&all, "-leaderworkerset.yaml"))
    {
        let folder = path.rsplit_once('/').unwrap().0;
        let service = folder.rsplit('/').next().unwrap();
        let claim_name = format!("{service}-model-cache");
        let (claim_path, claim) = documents(&all, &format!("{folder}/05-model-cache-pvc.yaml"))
            .pop()
            .unwrap_or_else(|| panic!("{path}: no weight cache claim in {folder}"));
        assert_eq!(
            claim["metadata"]["name"],
            claim_name.as_str(),
            "{claim_path}"
        );
        assert_eq!(
            claim["metadata"]["namespace"], workload["metadata"]["namespace"],
            "{claim_path}"
        );
        assert_eq!(
            claim["spec"]["accessModes"][0], "ReadWriteMany",
            "{claim_path}"
        );
        let pod_specs = [
            &workload["spec"]["template"]["spec"],
            &workload["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"],
            &workload["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"],
        ];
        for pod in pod_specs.into_iter().filter(|p| p.is_object()) {
            let Some(engine) = pod["containers"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["name"] == "engine"))
            else {
                continue;
            };
            engines += 1;
            let env = |name: &str| {
                engine["env"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|e| e["name"] == name)
                    .cloned()
                    .unwrap_or_else(|| panic!("{path}: no {name}"))
            };
            let token = &env("HF_TOKEN")["valueFrom"]["secretKeyRef"];
            assert_eq!(token["name"], "hf-token", "{path}");
            assert_eq!(token["key"], "token", "{path}");
            assert_eq!(token["optional"], true, "{path}");
            assert_eq!(env("HF_HOME")["value"], "/models/huggingface", "{path}");
            let mounted = engine["volumeMounts"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|m| m["name"] == "model-cache" && m["mountPath"] == "/models");
            let claimed = pod["volumes"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|v| v["persistentVolumeClaim"]["claimName"] == claim_name.as_str());
            assert!(mounted && claimed, "{path}: no model-cache volume");
        }
    }
    assert!(
        engines >= 3,
        "{engines} engine pods: every example service has one at least"
    );
    let (_, out, err) = loam_tests::run_cli(
        &[
            "emit",
            &repo_root()
                .join("examples/rag-llama31-8b-service.loam")
                .to_string_lossy(),
            "--backend",
            "kubernetes",
            "--out",
            &std::env::temp_dir()
                .join(format!("loam-hf-{}", std::process::id()))
                .to_string_lossy(),
            "--force",
        ],
        "",
    );
    assert!(
        err.contains("needs its token in the Secret `hf-token` (key `token`) of namespace `team-"),
        "{out}{err}"
    );
}

/// Finding 22: the window's CronJobs ran `docker.io/alpine/k8s:1.33.0` and nothing could
/// replace it, while docker.io is often unreachable from the mainland sites. `--window-image`
/// names a mirror; without it the pinned default stays.
#[test]
fn the_window_image_can_be_chosen_on_the_command_line() {
    let spec = repo_root().join("examples/interruptible-cost-7b.loam");
    let window = |extra: &[&str]| -> String {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut args = vec![
            "emit",
            spec.to_str().unwrap(),
            "--backend",
            "kubernetes",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let (code, _, err) = loam_tests::run_cli(&args, "");
        assert_eq!(code, 0, "{err}");
        let written = written(&out);
        file(&written, "/40-window.yaml").1.clone()
    };
    let mirrored = window(&["--window-image", "registry.example/alpine/k8s:1.33.0"]);
    assert!(
        mirrored.contains("image: \"registry.example/alpine/k8s:1.33.0\""),
        "{mirrored}"
    );
    assert!(!mirrored.contains("docker.io/alpine/k8s"), "{mirrored}");
    let default = window(&[]);
    assert!(
        default.contains("image: \"docker.io/alpine/k8s:1.33.0\""),
        "{default}"
    );
}
