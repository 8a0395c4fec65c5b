//! A new accelerator vendor is data only: a fixture catalogue adds a made-up vendor `acme`
//! (`vendors/acme.yaml`: its own collective library `accl` and its environment, the Slurm GRES
//! `xpu`, a slice resource and a serving image), one device of it and a pool, and every backend
//! emits a job and a service on it without any code naming the vendor. Before the vendor facts
//! were data, such a device silently got NCCL, `--gpus-per-node` and the `gpu` GRES.

use loam_backends::{Flavor, Manifest, Options, Target, render};
use loam_compiler::catalogue::builtin_sources;
use loam_compiler::catalogue::facts::{node_group_devices, tenancies, vendors};
use loam_compiler::project::{ProjectFiles, check_project, plan_project};

const VENDOR: &str = r#"id: acme
name: "Acme"
collective:
  library: accl
  env:
    ACCL_SOCKET_IFNAME: eth7
slurm_gres: xpu
slice_resource: "acme.example/xpu-{profile}"
serving:
  default_engine: vllm
  images:
    vllm: registry.acme.example/vllm-acme:1.0
"#;

const DEVICE: &str = r#"id: XPU_1
name: "Acme XPU 1"
vendor: acme
status: unverified
source: "made up for a test"
peak_dense:
  bf16: 500TFLOPS
precisions: [fp32, bf16]
features: [flash_attention]
memory: 96GiB
memory_bandwidth: 3TB/s
scale_up:
  fabric: AcmeLink
  bandwidth: 600GB/s
devices_per_node: 8
power:
  tdp: 700W
  typical: 560W
software:
  stack: rocm
  min_version: "6.0"
kubernetes_resource: acme.example/xpu
slicing:
  kind: mig
  profiles:
    - { name: "half", memory: 48GiB, compute: 0.5 }
reliability:
  mtbf: 40000h
  basis: "assumed"
"#;

const POOL: &str = r#"id: acme
name: "Acme pool"
currency:
  base: CNY
  rates:
    USD: 7.15
sites:
  - name: anvil
    region: cn-east-2
    city: Hangzhou
    carbon_intensity: 500
    pue: 1.3
    storage_bandwidth: 50GB/s
    power_price:
      currency: CNY
      per_kwh: [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    topology:
      nodes_per_block: 8
      block_uplink: 3.2Tbps
      latency: 5us
    node_groups:
      - name: anvil-xpu
        device: XPU_1
        nodes: 4
        devices_per_node: 8
        free_devices: 32
        nics: { count: 8, bandwidth: 400Gbps }
        price: 20 CNY
        software: { driver: "6.1", version: "6.1" }
        slurm_partition: anvil-xpu
        pod: { cpus: 96, memory: 1600GiB, shm: 256GiB }
tenants:
  - name: nlp
    checkpoint_root: /ckpt/nlp
    kubernetes_namespace: team-nlp
    slurm_account: nlp
    queue: nlp-train
    quota:
      - { device: XPU_1, guaranteed: 16, elastic: 16 }
"#;

const SPEC: &str = r#"job "acme-8b" {
  tenant = "nlp"
  model {
    layers   = 32
    hidden   = 4096
    ffn      = 14336
    heads    = 32
    kv_heads = 8
    vocab    = 128256
    seq_len  = 4096
    params   = 8B
  }
  train {
    tokens       = 2B
    global_batch = 64
    precision    = bf16
  }
  resources {
    pool        = acme
    max_devices = 16
  }
  goal {
    optimize = time
    deadline = 2d
  }
}

service "acme-chat" {
  tenant = "nlp"
  model {
    layers   = 32
    hidden   = 4096
    ffn      = 14336
    heads    = 32
    kv_heads = 8
    vocab    = 128256
    seq_len  = 8192
    params   = 8B
  }
  serve {
    weights   = "meta-llama/Llama-3.1-8B-Instruct"
    precision = bf16
  }
  traffic {
    dataset = chat
    rate    = 4
  }
  targets {
    ttft = 2s
    tpot = 50ms
  }
  resources {
    pool = acme
  }
}
"#;

/// The shipped catalogue plus the made-up vendor, its device and its pool.
fn catalogue_files() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = builtin_sources()
        .into_iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
    files.push(("specs/vendors/acme.yaml".to_string(), VENDOR.to_string()));
    files.push(("specs/devices/XPU_1.yaml".to_string(), DEVICE.to_string()));
    files.push(("specs/pools/acme.yaml".to_string(), POOL.to_string()));
    files
}

/// Every file of one target's manifests, joined.
fn emitted(target: Target, flavor: Flavor) -> String {
    let checked = check_project(
        ProjectFiles {
            catalogue: catalogue_files(),
            specs: vec![("acme.loam".to_string(), SPEC.as_bytes().to_vec())],
        },
        2,
    );
    assert_eq!(checked.errors(), 0, "{:#?}", checked.diagnostics);
    let planned = plan_project(&checked, 2);
    let doc = &planned.document;
    let catalogue = checked.catalogue.as_ref().unwrap();
    let options = Options {
        flavor,
        tenants: tenancies(doc, catalogue),
        node_groups: node_group_devices(doc, catalogue),
        ..Options::new(vendors(catalogue))
    };
    let manifests: Vec<Manifest> =
        render(doc, target, &options).unwrap_or_else(|d| panic!("{d:#?}"));
    manifests
        .iter()
        .map(|m| format!("=== {}\n{}", m.path, m.contents))
        .collect()
}

#[test]
fn a_made_up_vendor_reaches_every_backend_from_its_file_alone() {
    // The plan states the vendor and its library (the Plan IR's `node`).
    let checked = check_project(
        ProjectFiles {
            catalogue: catalogue_files(),
            specs: vec![("acme.loam".to_string(), SPEC.as_bytes().to_vec())],
        },
        2,
    );
    assert_eq!(checked.errors(), 0, "{:#?}", checked.diagnostics);
    let planned = plan_project(&checked, 2);
    assert_eq!(
        (
            planned.document.plans.len(),
            planned.document.services.len()
        ),
        (1, 1),
        "{:#?}",
        planned.diagnostics
    );
    let plan = &planned.document.plans[0];
    assert!(plan.feasible, "{:?}", plan.reasons);
    let node = plan.groups[0].node.as_ref().unwrap();
    assert_eq!(
        (node.vendor.as_str(), node.collective.as_str()),
        ("acme", "accl")
    );
    assert_eq!(
        node.env.get("ACCL_SOCKET_IFNAME").map(String::as_str),
        Some("eth7")
    );
    let service = &planned.document.services[0];
    assert!(service.feasible, "{:?}", service.reasons);
    assert_eq!(
        service.engine.as_str(),
        "vllm",
        "the vendor's default engine"
    );

    // Slurm: the job asks for the vendor's GRES (`--gres=xpu:N`, never `--gpus-per-node`,
    // which exists for the `gpu` GRES only), the service's tasks for `gres=xpu:N`, and both
    // export the library's environment.
    let slurm = emitted(Target::Slurm, Flavor::Jobset);
    assert!(slurm.contains("#SBATCH --gres=xpu:"), "{slurm}");
    assert!(!slurm.contains("gpus-per-node"), "{slurm}");
    assert!(!slurm.contains("gres=gpu"), "{slurm}");
    assert!(slurm.contains("ACCL_SOCKET_IFNAME"), "{slurm}");

    // Kubernetes (JobSet and Volcano): pods request the device's own resource and run the
    // vendor's serving image; no NVIDIA name appears.
    for flavor in [Flavor::Jobset, Flavor::Volcano] {
        let k8s = emitted(Target::Kubernetes, flavor);
        assert!(k8s.contains("\"acme.example/xpu\": \"8\""), "{k8s}");
        assert!(k8s.contains("registry.acme.example/vllm-acme:1.0"), "{k8s}");
        assert!(k8s.contains("ACCL_SOCKET_IFNAME"), "{k8s}");
        assert!(!k8s.contains("nvidia.com"), "{k8s}");
        assert!(k8s.contains("\"collective\": \"accl\""), "{k8s}");
    }

    // Bare metal: the launchers export the library's environment and start the vendor's image.
    let baremetal = emitted(Target::Baremetal, Flavor::Jobset);
    assert!(baremetal.contains("ACCL_SOCKET_IFNAME"), "{baremetal}");
    assert!(!baremetal.contains("nvidia.com"), "{baremetal}");
}

/// Issue 31, finding 22: an engine its vendor publishes no image for (LMDeploy on Ascend: the
/// shipped `vendors/huawei.yaml` lists it under `serving.unpublished`) is still to provide, with
/// how to build it, until `--serving-image` names the team's build. The chat example, moved to
/// Ascend 910B with LMDeploy in bf16, is the service.
#[test]
fn an_unpublished_engine_image_is_still_to_provide() {
    let dir = tempfile::tempdir().unwrap();
    let example = std::fs::read_to_string(
        loam_tests::repo_root().join("examples/llama31-70b-chat-service.loam"),
    )
    .unwrap();
    let mut spec = example.clone();
    for (from, to) in [
        ("precision = fp8 ", "precision = bf16 "),
        ("engine    = vllm ", "engine    = lmdeploy "),
        (
            "    pool = xirang\n",
            "    pool = xirang\n    devices = [Ascend910B]\n",
        ),
    ] {
        assert!(spec.contains(from), "{from}");
        spec = spec.replacen(from, to, 1);
    }
    let path = dir.path().join("chat.loam");
    std::fs::write(&path, spec).unwrap();
    let emit = |out: &str, extra: &[&str]| {
        let out = dir.path().join(out);
        let mut args = vec![
            "emit",
            path.to_str().unwrap(),
            "--backend",
            "kubernetes",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let (code, _, err) = loam_tests::run_cli(&args, "");
        assert_eq!(code, 0, "{err}");
        let manifests: String = walk(&out);
        (err, manifests)
    };
    let (err, manifests) = emit("a", &[]);
    assert!(
        err.contains(
            "still to provide: Huawei publishes no `lmdeploy` image: `lmdeploy-aarch64-ascend:latest` is the name the manifests pull; build it from docker/Dockerfile_aarch64_ascend"
        ),
        "{err}"
    );
    assert!(
        manifests.contains("image: \"lmdeploy-aarch64-ascend:latest\""),
        "{manifests}"
    );
    let (err, manifests) = emit(
        "b",
        &["--serving-image", "registry.example/lmdeploy-ascend:0.10"],
    );
    assert!(!err.contains("publishes no"), "{err}");
    assert!(manifests.contains("image: \"registry.example/lmdeploy-ascend:0.10\""));
    // The example as shipped (vLLM on NVIDIA or AMD, both published) leaves no image to build.
    std::fs::write(&path, example).unwrap();
    let (err, _) = emit("c", &[]);
    assert!(!err.contains("publishes no"), "{err}");
}

/// Every file under `dir`, concatenated in path order.
fn walk(dir: &std::path::Path) -> String {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

/// Deploy review finding 13, decided (docs/backends.md): a tenant's Volcano queue counts each
/// Kubernetes resource name, so device types that share one (`nvidia.com/gpu` for H100, H800
/// and B200) are summed in one line, and a cluster that registers them under names of their own
/// gets a line per type from the catalogue's `kubernetes_resource` alone. research at frontier's
/// campus (deepseek-v3-pretrain) is guaranteed H100 16,384, H800 2,048 and B200 256
/// (`specs/pools/frontier.yaml`): with the shipped devices one line of 18,688, with H800 and
/// B200 renamed three lines of 16,384, 2,048 and 256.
#[test]
fn a_volcano_queue_has_a_line_per_resource_name_the_catalogue_gives() {
    let queue = |renamed: bool| -> serde_json::Value {
        let catalogue: Vec<(String, String)> = builtin_sources()
            .into_iter()
            .map(|(p, t)| {
                let t = match (renamed, p) {
                    (true, p) if p.ends_with("devices/H800_SXM.yaml") => t.replace(
                        "kubernetes_resource: nvidia.com/gpu",
                        "kubernetes_resource: nvidia.com/h800",
                    ),
                    (true, p) if p.ends_with("devices/B200.yaml") => t.replace(
                        "kubernetes_resource: nvidia.com/gpu",
                        "kubernetes_resource: nvidia.com/b200",
                    ),
                    _ => t.to_string(),
                };
                (p.to_string(), t)
            })
            .collect();
        let spec =
            std::fs::read(loam_tests::repo_root().join("examples/deepseek-v3-pretrain.loam"))
                .unwrap();
        let checked = check_project(
            ProjectFiles {
                catalogue,
                specs: vec![("deepseek.loam".to_string(), spec)],
            },
            2,
        );
        assert_eq!(checked.errors(), 0, "{:#?}", checked.diagnostics);
        let planned = plan_project(&checked, 2);
        let doc = &planned.document;
        let catalogue = checked.catalogue.as_ref().unwrap();
        let options = Options {
            flavor: Flavor::Volcano,
            tenants: tenancies(doc, catalogue),
            node_groups: node_group_devices(doc, catalogue),
            sites: loam_compiler::catalogue::facts::site_node_groups(doc, catalogue),
            ..Options::new(vendors(catalogue))
        };
        let manifests = render(doc, Target::Kubernetes, &options).unwrap();
        let file = manifests
            .iter()
            .find(|m| m.path.ends_with("campus/30-queue-research.yaml"))
            .unwrap();
        serde_saphyr::from_str(&file.contents).unwrap()
    };
    let count = |v: &serde_json::Value| -> f64 {
        v.as_f64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .unwrap()
    };
    let shipped = queue(false);
    let resource = &shipped["spec"]["guarantee"]["resource"];
    assert_eq!(count(&resource["nvidia.com/gpu"]), 18_688.0, "{shipped:#}");
    assert!(resource.get("nvidia.com/h800").is_none());
    let renamed = queue(true);
    let resource = &renamed["spec"]["guarantee"]["resource"];
    for (name, devices) in [
        ("nvidia.com/gpu", 16_384.0),
        ("nvidia.com/h800", 2_048.0),
        ("nvidia.com/b200", 256.0),
    ] {
        assert_eq!(count(&resource[name]), devices, "{name}: {renamed:#}");
        assert_eq!(
            count(&renamed["spec"]["capability"][name]),
            devices,
            "{name}"
        );
    }
}
