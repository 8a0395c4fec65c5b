//! The hardware figures the cost model reads: one device type, and a homogeneous cluster of it.
//!
//! The catalogue converts its richer device and node-group records into these; the calibration
//! harness builds them from a CSV row. Keeping them small keeps the cost model independent of how
//! the catalogue is written.

use crate::cost::FittedConstants;
use loam_ir::types::Precision;
use serde::Serialize;
use std::collections::BTreeMap;

/// Datasheet figures of one accelerator type, in base units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceFigures {
    /// Catalogue id, e.g. `H100_SXM`.
    pub id: String,
    /// Peak dense FLOP/s per precision (no sparsity). A precision absent here is unsupported.
    pub peak_flops: BTreeMap<Precision, f64>,
    /// Memory capacity in bytes.
    pub memory_bytes: f64,
    /// Memory bandwidth in bytes/s.
    pub memory_bandwidth: f64,
    /// Scale-up fabric bandwidth per device in bytes/s, one direction (half the bidirectional
    /// datasheet figure).
    pub scale_up_bandwidth: f64,
    /// Devices in one node.
    pub devices_per_node: u32,
    /// Devices on one scale-up fabric, a whole number of nodes (one node on most devices).
    pub scale_up_domain: u32,
    /// Typical board power in watts.
    pub tdp_watts: f64,
    /// What share of `peak_flops` real kernels sustain on this device.
    pub efficiency: Efficiency,
}

/// Measured kernel throughput of one device as a share of its datasheet peak: the physical side
/// of "how fast does a GEMM run here", which the cost model no longer derives from one formula
/// fitted on NVIDIA parts. The catalogue carries each figure with its source
/// (`docs/catalogue.md`, "efficiency").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Efficiency {
    /// Best large-GEMM throughput per precision over the dense peak of that precision (the
    /// "maximum achievable matmul FLOPS" of a shape sweep). A precision absent here takes the
    /// figure of its 16-bit neighbour (see [`Efficiency::gemm`]).
    pub gemm: BTreeMap<Precision, f64>,
    /// Causal flash-attention forward throughput over the 16-bit dense peak.
    pub attention_forward: f64,
    /// Causal flash-attention backward throughput over the 16-bit dense peak.
    pub attention_backward: f64,
    /// Relative uncertainty of a throughput predicted from these figures (0.2 = ±20 %): zero
    /// when they are measured, stated when they are estimates.
    pub uncertainty: f64,
}

impl Efficiency {
    /// Figures for a device nobody has measured: the lower end of the measured accelerators
    /// (MI300X sustains 51 % of its BF16 peak in GEMMs, A100 87 %) with a ±30 % uncertainty,
    /// rather than the efficiency of any one vendor's part.
    pub fn unmeasured() -> Efficiency {
        Efficiency {
            gemm: BTreeMap::from([(Precision::Bf16, 0.6)]),
            attention_forward: 0.35,
            attention_backward: 0.3,
            uncertainty: 0.3,
        }
    }

    /// The GEMM share of `precision`: its own figure, else the 16-bit one (fp16 and bf16 share
    /// the tensor path; an unmeasured fp8 or tf32 path is taken no better than 16-bit), else the
    /// lowest figure given.
    pub fn gemm(&self, precision: Precision) -> f64 {
        let sixteen = self
            .gemm
            .get(&Precision::Bf16)
            .or_else(|| self.gemm.get(&Precision::Fp16));
        self.gemm
            .get(&precision)
            .or(sixteen)
            .copied()
            .unwrap_or_else(|| {
                self.gemm
                    .values()
                    .copied()
                    .fold(f64::INFINITY, f64::min)
                    .min(1.0)
            })
    }
}

/// A homogeneous set of nodes of one device type and how they are networked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterFigures {
    /// The device in every node.
    pub device: DeviceFigures,
    /// Devices per node actually populated (usually `device.devices_per_node`).
    pub devices_per_node: u32,
    /// Number of nodes available.
    pub nodes: u32,
    /// Scale-out bandwidth of one node in bytes/s, one direction, all NICs together.
    pub node_network_bandwidth: f64,
    /// Number of NICs per node (devices share them when fewer than `devices_per_node`).
    pub nics_per_node: u32,
    /// One-way latency between two nodes in seconds.
    pub network_latency_s: f64,
    /// The switch blocks the nodes sit in, when the fabric is not a full-bisection fat tree;
    /// `None` when every node reaches every other at its full NIC bandwidth.
    pub block: Option<SwitchBlock>,
    /// The cost model's fitted constants: [`FittedConstants::SHIPPED`] everywhere but in
    /// `loam calibrate --cross-validate`, which refits them without one source family.
    pub fitted: FittedConstants,
}

/// A switch block: nodes under one leaf/spine block at full bisection, and the block's uplink to
/// the rest of the fabric, which traffic between blocks shares.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SwitchBlock {
    /// Nodes in one block.
    pub nodes: u32,
    /// Uplink bandwidth of one block in bytes/s, one direction.
    pub uplink: f64,
}

impl ClusterFigures {
    /// Total devices in the cluster.
    pub fn devices(&self) -> u64 {
        u64::from(self.nodes) * u64::from(self.devices_per_node)
    }
}
