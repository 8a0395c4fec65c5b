//! The Ascend rank table follows the vendor's `collective.rank_table`, not the library's name:
//! Ascend and Intel Gaudi both call their collective library HCCL, and before the rank table
//! was vendor data a Gaudi job under Volcano got Ascend's `rings-config-<job>` ConfigMap, its
//! `ring-controller.atlas` label and `RANK_TABLE_FILE`.

use crate::{Flavor, Options, Target, render};
use loam_compiler::catalogue::builtin_sources;
use loam_compiler::catalogue::facts::{node_group_devices, tenancies, vendors};
use loam_compiler::project::{ProjectFiles, check_project, plan_project};

/// Every manifest of shipped example `name` for Kubernetes under Volcano, `=== path` then text.
fn volcano_manifests(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(format!("{name}.loam"));
    let spec = std::fs::read(&path).unwrap();
    let checked = check_project(
        ProjectFiles {
            catalogue: builtin_sources()
                .into_iter()
                .map(|(p, t)| (p.to_string(), t.to_string()))
                .collect(),
            specs: vec![(format!("{name}.loam"), spec)],
        },
        1,
    );
    assert_eq!(checked.errors(), 0, "{:#?}", checked.diagnostics);
    let planned = plan_project(&checked, 1);
    let doc = &planned.document;
    let catalogue = checked.catalogue.as_ref().unwrap();
    let options = Options {
        flavor: Flavor::Volcano,
        tenants: tenancies(doc, catalogue),
        node_groups: node_group_devices(doc, catalogue),
        ..Options::new(vendors(catalogue))
    };
    render(doc, Target::Kubernetes, &options)
        .unwrap_or_else(|d| panic!("{d:#?}"))
        .iter()
        .map(|m| format!("=== {}\n{}\n", m.path, m.contents))
        .collect()
}

/// The Gaudi 2 example's group runs HCCL (its plan says so), yet nothing of Ascend's rank table
/// is emitted: no `15-rank-table.yaml`, no ConfigMap `rings-config-<job>`, no
/// `ring-controller.atlas` label, no `RANK_TABLE_FILE`.
#[test]
fn a_gaudi_job_gets_no_ascend_rank_table() {
    let gaudi = volcano_manifests("llama2-70b-lora-gaudi2");
    assert!(gaudi.contains("\"collective\": \"hccl\""), "{gaudi}");
    assert!(gaudi.contains("20-volcano-job.yaml"), "{gaudi}");
    for ascend_only in [
        "15-rank-table.yaml",
        "rings-config-",
        "ring-controller.atlas",
        "RANK_TABLE_FILE",
    ] {
        assert!(!gaudi.contains(ascend_only), "{ascend_only} in:\n{gaudi}");
    }
}

/// A site whose groups are all Ascend still gets the rank table: the ConfigMap file, the ring
/// label `ascend-910b` (a 910B device) and the file's path in the pod. The two-site fixture's
/// guiyang site holds only its Ascend 910B group (its H100 group is at shanghai).
#[test]
fn an_ascend_only_site_still_gets_its_rank_table() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/cases/emit/plans/hetero-h100-ascend.json");
    let doc: loam_ir::plan::PlanDocument =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let options = Options {
        flavor: Flavor::Volcano,
        ..Options::new(vendors(&loam_compiler::catalogue::builtin()))
    };
    let files = render(&doc, Target::Kubernetes, &options).unwrap_or_else(|d| panic!("{d:#?}"));
    let guiyang: String = files
        .iter()
        .filter(|m| m.path.contains("/guiyang/"))
        .map(|m| format!("=== {}\n{}\n", m.path, m.contents))
        .collect();
    for expected in [
        "15-rank-table.yaml",
        "rings-config-",
        "ring-controller.atlas: ascend-910b",
        "RANK_TABLE_FILE",
    ] {
        assert!(
            guiyang.contains(expected),
            "{expected} missing in:\n{guiyang}"
        );
    }
}

/// The Guiyang example mixes 96 Ascend pods and 48 H800 pods in one Volcano job at one site:
/// MindCluster would count all 144 replicas and cache only the 96 NPU pods, so its rank table
/// would never complete (deploy review 7). The job gets no rank table and no ring label.
#[test]
fn a_job_mixing_ascend_and_other_devices_at_a_site_gets_no_rank_table() {
    let mixed = volcano_manifests("hetero-70b-guiyang");
    for ascend_only in [
        "15-rank-table.yaml",
        "ring-controller.atlas",
        "RANK_TABLE_FILE",
    ] {
        assert!(!mixed.contains(ascend_only), "{ascend_only} in:\n{mixed}");
    }
}
