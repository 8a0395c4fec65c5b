//! The hardware figures the cost model reads: one device type, and a homogeneous cluster of it.
//!
//! The catalogue converts its richer device and node-group records into these; the calibration
//! harness builds them from a CSV row. Keeping them small keeps the cost model independent of how
//! the catalogue is written.

use crate::types::Precision;
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
    /// Devices in one scale-up domain (one node).
    pub devices_per_node: u32,
    /// Typical board power in watts.
    pub tdp_watts: f64,
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
