//! A vendor's software facts, from the catalogue's `vendors/<id>.yaml`: the collective library
//! and its environment, the Slurm GRES, the slice resource, the serving engines and their
//! images. The catalogue loads and validates them; the backends read them from here.

use crate::plan::GroupIr;
use crate::span::Span;
use crate::types::Engine;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A rank table a collective library reads: the file that lists a job's devices and their
/// addresses, written by an operator of the cluster rather than by loam.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RankTable {
    /// Ascend's `hccl.json`, which MindCluster's HCCL Controller (or Ascend Operator) writes into
    /// the ConfigMap `rings-config-<job>` of a Volcano job labelled `ring-controller.atlas`
    /// (Huawei MindCluster). Habana's HCCL on Intel Gaudi shares the library's name, not the
    /// table: its ranks meet at the torch.distributed rendezvous.
    Ascend,
}

/// What loam must know about a vendor's software to run its devices, from `vendors/<id>.yaml`:
/// the collective library and the environment it needs, the Slurm GRES its devices are, the
/// device-plugin resource of a slice, and the serving engines that run on its devices with their
/// container images. Adding a vendor is adding its file; no code names a vendor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Vendor {
    /// Vendor id, lowercase, the file's name (`nvidia`).
    pub id: String,
    /// Where the id is written.
    #[serde(skip)]
    pub id_span: Span,
    /// Display name (`NVIDIA`).
    pub name: String,
    /// The collective library its devices use (`nccl`, `rccl`, `hccl`).
    pub collective: String,
    /// Environment the collective library needs on every node of the vendor, sorted by name; a
    /// node group's own `env` adds to it and wins on the same name.
    pub collective_env: BTreeMap<String, String>,
    /// The rank table its collective library reads to find its peers, which the Kubernetes
    /// backend has the cluster's operator write for a job; `None` when the library finds its
    /// peers through the rendezvous alone. Skipped when serialised, so a job's catalogue inputs
    /// (its plan's digest) do not cover it: the planner never reads it, and the backends take it
    /// from the catalogue they emit with.
    #[serde(skip)]
    pub rank_table: Option<RankTable>,
    /// The Slurm generic resource its devices are declared as (`gpu`, `npu`, `dcu`).
    pub slurm_gres: String,
    /// The Kubernetes resource of one slice, with `{resource}` (the device's resource) and
    /// `{profile}` (the profile as the device plugin spells it) filled in; `None` when the
    /// vendor's devices are not sliced into resources of their own.
    pub slice_resource: Option<String>,
    /// The engine a service runs when it names none.
    pub default_engine: Engine,
    /// The serving engines that run on the vendor's devices, each with its container image.
    pub images: BTreeMap<Engine, String>,
    /// The engines of `images` whose vendor publishes no image: their image is the name the
    /// team's own build is pushed as, and the value says how to build it (`loam emit` says it
    /// is still to provide). Skipped when serialised, like `rank_table`: the planner never
    /// reads it.
    #[serde(skip)]
    pub unpublished: BTreeMap<Engine, String>,
    /// The file it was read from.
    pub file: String,
}

impl Vendor {
    /// The stand-in a device holds until its vendor is resolved; a device whose vendor never
    /// resolves is an error (L2019), so no loaded catalogue holds one.
    pub fn unresolved(id: &str) -> Vendor {
        Vendor {
            id: id.to_string(),
            id_span: Span::default(),
            name: String::new(),
            collective: String::new(),
            collective_env: BTreeMap::new(),
            rank_table: None,
            slurm_gres: String::new(),
            slice_resource: None,
            default_engine: Engine::Vllm,
            images: BTreeMap::new(),
            unpublished: BTreeMap::new(),
            file: String::new(),
        }
    }

    /// Whether `engine` runs on the vendor's devices.
    pub fn runs(&self, engine: Engine) -> bool {
        self.images.contains_key(&engine)
    }

    /// The Kubernetes resource of one slice `profile` of a device whose whole-device resource is
    /// `resource`, when the vendor names slices.
    pub fn slice_resource_of(&self, resource: &str, profile: &str) -> Option<String> {
        self.slice_resource.as_ref().map(|template| {
            template
                .replace("{resource}", resource)
                .replace("{profile}", profile)
        })
    }
}

/// The catalogue's vendors, and the vendor of each of its devices.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Vendors {
    /// Vendors by id.
    by_id: BTreeMap<String, Vendor>,
    /// The vendor id of each device id, for groups whose plan does not state its vendor (plans
    /// before format 1.6 have no `node`).
    of_device: BTreeMap<String, String>,
}

impl Vendors {
    /// The vendors by id, and the vendor id of each device id; what the catalogue's loader
    /// hands the backends (`loam_compiler::catalogue::facts::vendors`).
    pub fn new(by_id: BTreeMap<String, Vendor>, of_device: BTreeMap<String, String>) -> Vendors {
        Vendors { by_id, of_device }
    }

    /// The vendor of group `g`: the one its plan states, else its device's.
    pub fn of_group(&self, g: &GroupIr) -> Option<&Vendor> {
        let id = match g.node.as_ref() {
            Some(node) if !node.vendor.is_empty() => &node.vendor,
            _ => self.of_device.get(&g.device)?,
        };
        self.by_id.get(id)
    }

    /// The vendor `id`.
    pub fn get(&self, id: &str) -> Option<&Vendor> {
        self.by_id.get(id)
    }
}
