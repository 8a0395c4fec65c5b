//! How a group's nodes run a job, as the Plan IR states it for the backends: the catalogue's pod
//! requests, fabric, taints and Slurm limits of the node group, the site's topology levels, the
//! collective library of the device's vendor, and the device-plugin resource of a slice (both
//! from the vendor's file, `vendors/<id>.yaml`).

use super::placement::Placement;
use crate::catalogue::{Device, NodeGroup, Site, SliceProfile, model::SlicingKind};
use loam_ir::plan::{NodeIr, RdmaIr, TolerationIr};

/// Bytes in a GiB.
use loam_ir::units::GIB;

/// The node facts of placement `o` for pods that take `per_node` of each node's devices: the
/// catalogue's pod requests are a whole node's, so a pod on part of a node asks for its share
/// (whole cores, at least one), leaving the rest to other jobs.
pub(crate) fn node_ir(o: &Placement<'_>, per_node: u64) -> NodeIr {
    node_ir_at(o.site, o.group, o.device, per_node)
}

/// The node facts of node group `group` at `site` (of `device`s) for pods that take `per_node`
/// of each node's devices: a job's placement or a service's replicas.
pub(crate) fn node_ir_at(site: &Site, group: &NodeGroup, device: &Device, per_node: u64) -> NodeIr {
    let run = &group.run;
    let share = per_node as f64 / f64::from(group.devices_per_node.value.max(1));
    let share = share.clamp(0.0, 1.0);
    NodeIr {
        vendor: device.vendor.clone(),
        collective: device.vendor_facts.collective.clone(),
        cpus: scaled_cpus(run.cpus, share),
        memory_gib: loam_ir::display::significant(run.memory_bytes * share / GIB),
        shm_gib: loam_ir::display::significant(run.shm_bytes * share / GIB),
        rdma: run.rdma.as_ref().map(|(resource, n)| RdmaIr {
            resource: resource.clone(),
            per_node: u64::from(*n),
        }),
        // The vendor's collective environment, then the node group's, which wins on a name.
        env: device
            .vendor_facts
            .collective_env
            .iter()
            .chain(&run.env)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        tolerations: run
            .taints
            .iter()
            .map(|(key, value, effect)| TolerationIr {
                key: key.clone(),
                value: value.clone(),
                effect: effect.clone(),
            })
            .collect(),
        topology_levels: site.topology_levels.clone(),
        slurm_max_time_min: run.slurm_max_time_s.map(|s| (s / 60.0).floor() as u64),
        slurm_features: run.slurm_features.clone(),
        slurm_containers: run.slurm_containers,
        slice_resource: None,
    }
}

/// `share` of `cpus` whole cores, at least one when the node has any.
fn scaled_cpus(cpus: u32, share: f64) -> u64 {
    if cpus == 0 {
        return 0;
    }
    ((f64::from(cpus) * share).floor() as u64).max(1)
}

/// Puts the group's pods on one `fraction` slice of a device: cores, memory and shared memory
/// shrink with it, and a job on one slice of one node needs no RDMA fabric.
pub(crate) fn on_slice(node: &mut NodeIr, resource: String, fraction: f64) {
    let fraction = fraction.clamp(0.0, 1.0);
    node.cpus = if node.cpus == 0 {
        0
    } else {
        ((node.cpus as f64 * fraction).floor() as u64).max(1)
    };
    node.memory_gib = loam_ir::display::significant(node.memory_gib * fraction);
    node.shm_gib = loam_ir::display::significant(node.shm_gib * fraction);
    node.rdma = None;
    node.slice_resource = Some(resource);
}

/// The Kubernetes resource a pod requests for one `profile` slice of `device`: the vendor's
/// `slice_resource` template with the device's resource and the profile as the device plugin
/// spells it. NVIDIA's plugin names MIG devices by profile (`nvidia.com/mig-1g.10gb`); Ascend's
/// names a static vNPU after its template, `vir05_1c_16g` → `5c.1cpu.16g` (AI cores, AI CPUs,
/// memory). Other slicing (time-sliced vGPU) shares the whole-device resource.
pub fn slice_resource(device: &Device, profile: &SliceProfile) -> String {
    let name = match device.slicing {
        Some(SlicingKind::Mig) => profile.name.clone(),
        Some(SlicingKind::Vnpu) => vnpu_name(&profile.name),
        Some(SlicingKind::Vgpu) | None => return device.kubernetes_resource.clone(),
    };
    // The catalogue refuses a MIG or vNPU device whose vendor names no slice resource.
    device
        .vendor_facts
        .slice_resource_of(&device.kubernetes_resource, &name)
        .unwrap_or_else(|| device.kubernetes_resource.clone())
}

/// The Ascend device plugin's name of a static vNPU template: `vir05_1c_16g` → `5c.1cpu.16g`.
fn vnpu_name(template: &str) -> String {
    let mut parts = template.trim_start_matches("vir").split('_');
    let cores = parts.next().unwrap_or_default().trim_start_matches('0');
    let mut name = format!("{cores}c");
    for part in parts {
        if let Some(cpus) = part.strip_suffix('c') {
            name.push_str(&format!(".{cpus}cpu"));
        } else {
            name.push('.');
            name.push_str(part);
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names in the vendors' device-plugin documentation.
    #[test]
    fn slices_get_the_device_plugins_resource_names() {
        let catalogue = crate::catalogue::builtin();
        let name = |device: &str, profile: &str| {
            let d = catalogue.device(device).unwrap();
            let p = d.slice_profiles.iter().find(|p| p.name == profile).unwrap();
            slice_resource(d, p)
        };
        assert_eq!(name("H100_SXM", "1g.10gb"), "nvidia.com/mig-1g.10gb");
        assert_eq!(
            name("Ascend910B", "vir05_1c_16g"),
            "huawei.com/Ascend910-5c.1cpu.16g"
        );
        assert_eq!(
            name("Ascend910B", "vir12_3c_32g"),
            "huawei.com/Ascend910-12c.3cpu.32g"
        );
    }
}
