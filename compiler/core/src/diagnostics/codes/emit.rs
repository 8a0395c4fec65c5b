//! Diagnostic codes of the emit phase: turning plans into Kubernetes, Slurm and bare-metal
//! manifests (`loam-backends`).

super::codes! {
    "L4001" => "infeasible plan cannot be emitted",
    "L4002" => "incomplete plan",
    "L4003" => "checkpoint path outside the tenant's root",
    "L4004" => "name unusable in a manifest",
    "L4005" => "unsupported Slurm version",
    "L4006" => "node group without a Slurm partition",
    "L4007" => "unsupported plan format version",
    "L4008" => "two jobs share an output folder",
    "L4009" => "internal template error",
}
