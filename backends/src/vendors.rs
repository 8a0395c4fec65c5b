//! What the manifests do with the vendor facts of the catalogue's vendor files
//! (`vendors/<id>.yaml`): a group's collective library, its Slurm GRES, the device-plugin resource
//! of a slice and the serving engines' images. No backend names a vendor; a group whose vendor
//! the catalogue does not know cannot be emitted (L4012).

use loam_ir::cluster::vendor::Vendor;
use loam_ir::diagnostics::{Diagnostic, codes};
use loam_ir::plan::GroupIr;

/// L4012: group `index` of `what` (`job `x`` or `service `x``) runs on a vendor the catalogue
/// does not know, so nothing says how to run its devices.
pub(crate) fn unknown_vendor(what: &str, index: usize, g: &GroupIr) -> Diagnostic {
    let vendor = g
        .node
        .as_ref()
        .map(|n| n.vendor.as_str())
        .filter(|v| !v.is_empty());
    let which = vendor.map_or_else(
        || {
            format!(
                "device `{}` has no vendor in the catalogue",
                g.device.escape_debug()
            )
        },
        |v| format!("vendor `{}` is not in the catalogue", v.escape_debug()),
    );
    Diagnostic::unlocated(
        codes::emit::INCONSISTENT_PLAN,
        format!("the plan of {what} does not agree with the catalogue: group {index}'s {which}"),
    )
    .with_help("emit with the catalogue the plan was made with, or add the vendor's file `vendors/<id>.yaml` to it")
}

/// The Kubernetes resource a pod of group `g` requests: the slice's own resource when the plan
/// runs on a slice (the plan's, else the vendor's template filled with the slice), else the
/// device's.
pub(crate) fn device_resource(g: &GroupIr, vendor: &Vendor) -> String {
    if let Some(r) = g.node.as_ref().and_then(|n| n.slice_resource.clone()) {
        return r;
    }
    g.slice
        .as_ref()
        .and_then(|slice| vendor.slice_resource_of(&g.k8s_resource, slice))
        .unwrap_or_else(|| g.k8s_resource.clone())
}

/// The Slurm request for `n` devices per node of `vendor`: `gres=<name>:N` with the catalogue's
/// GRES name for every vendor, as training jobs ask (deploy review 27); `gpus-per-node` would
/// mean the `gpu` GRES whatever the vendor file says.
pub(crate) fn slurm_devices_per_node(vendor: &Vendor, n: u64) -> String {
    format!("gres={}:{n}", vendor.slurm_gres)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loam_compiler::catalogue::{builtin, facts};
    use loam_ir::cluster::vendor::Vendors;

    fn shipped() -> Vendors {
        facts::vendors(&builtin())
    }
    use loam_ir::plan::NodeIr;

    /// The shipped vendors' GRES give today's Slurm requests: `gpu` on NVIDIA and Intel, a
    /// typed GRES on Ascend (`npu`) and Hygon (`dcu`), all as `gres=<name>:N`.
    #[test]
    fn slurm_requests_follow_the_vendors_gres() {
        let vendors = shipped();
        let request = |id: &str| slurm_devices_per_node(vendors.get(id).unwrap(), 8);
        assert_eq!(request("nvidia"), "gres=gpu:8");
        assert_eq!(request("intel"), "gres=gpu:8");
        assert_eq!(request("huawei"), "gres=npu:8");
        assert_eq!(request("hygon"), "gres=dcu:8");
    }

    /// A group on a slice requests the slice the plan names; a plan without it gets the vendor's
    /// template filled with the slice (`nvidia.com/mig-1g.10gb`, `huawei.com/Ascend910-<slice>`);
    /// a group whose vendor and device are both unknown has no vendor.
    #[test]
    fn groups_find_their_vendor_and_slice_resource() {
        let vendors = shipped();
        let mut g: GroupIr = serde_json::from_value(serde_json::json!({
            "site": "a", "device": "H100_SXM", "nodes": 1, "devices": 1, "node_group": "g",
            "devices_per_node": 1, "k8s_resource": "nvidia.com/gpu", "slice": "1g.10gb"
        }))
        .unwrap();
        let nvidia = vendors.of_group(&g).unwrap();
        assert_eq!(device_resource(&g, nvidia), "nvidia.com/mig-1g.10gb");
        g.node = Some(NodeIr {
            vendor: "nvidia".to_string(),
            slice_resource: Some("nvidia.com/mig-2g.20gb".to_string()),
            ..NodeIr::default()
        });
        assert_eq!(device_resource(&g, nvidia), "nvidia.com/mig-2g.20gb");
        g.k8s_resource = "huawei.com/Ascend910".to_string();
        g.slice = Some("5c.1cpu.16g".to_string());
        g.node = None;
        g.device = "Ascend910B".to_string();
        let huawei = vendors.of_group(&g).unwrap();
        assert_eq!(huawei.id, "huawei");
        assert_eq!(
            device_resource(&g, huawei),
            "huawei.com/Ascend910-5c.1cpu.16g"
        );
        g.device = "XPU_9".to_string();
        assert!(vendors.of_group(&g).is_none());
    }
}
