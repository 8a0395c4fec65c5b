//! Diagnostic codes of the emit phase: turning plans into Kubernetes, Slurm and bare-metal
//! manifests (`loam-backends`).

super::codes! {
    INFEASIBLE_PLAN = "L4001" => "infeasible plan cannot be emitted",
    INCOMPLETE_PLAN = "L4002" => "incomplete plan",
    CHECKPOINT_OUTSIDE_ROOT = "L4003" => "checkpoint path outside the tenant's root",
    UNUSABLE_NAME = "L4004" => "name unusable in a manifest",
    UNSUPPORTED_SLURM_VERSION = "L4005" => "unsupported Slurm version",
    NO_SLURM_PARTITION = "L4006" => "node group without a Slurm partition",
    UNSUPPORTED_FORMAT = "L4007" => "unsupported plan format version",
    SHARED_OUTPUT_FOLDER = "L4008" => "two jobs share an output folder",
    INTERNAL_ERROR = "L4009" => "internal template error",
    OTHER_CATALOGUE = "L4010" => "plan made with another catalogue",
    SLURM_JOB_SPANS_SITES = "L4011" => "Slurm job spans sites",
    INCONSISTENT_PLAN = "L4012" => "plan does not agree with the catalogue or its spec",
}
