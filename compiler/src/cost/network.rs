//! Collective and point-to-point times on the tier a group crosses.
//!
//! A group of `g` ranks laid out with stride `st` (ranks `st` apart in the global order, tensor
//! ranks innermost) keeps `k = min(g, devices_per_node / st)` members in each node. Collectives
//! are hierarchical (reduce-scatter inside the node over the scale-up fabric, across nodes over
//! the NICs, all-gather back), as NCCL does on multi-node rings and trees; what each costs before
//! its bytes move, and at which share of the links they move, is NCCL's own model of its
//! algorithms and protocols ([`super::nccl`]).
//!
//! The scale-up tier is the device's fabric: one node on most devices, several on a rack-scale
//! fabric (GB200 NVL72 joins the 72 GPUs of 18 four-GPU trays over NVLink 5), so a group's
//! members are counted per scale-up domain ([`scale_up_devices`]) and only traffic between
//! domains crosses the NICs.
//!
//! A group whose nodes span more than one switch block sends part of its inter-node traffic over
//! the blocks' uplinks. With ranks in order, a ring of the group visits its nodes inside one block
//! one after another and leaves the block once, so of every `r` ring edges among the group's
//! nodes in a block one crosses the uplink. When every node of a block sends at its NIC rate,
//! the uplink carries `block nodes × NIC bandwidth / r`; past the uplink's bandwidth the
//! inter-node tier slows by that ratio ([`uplink_slowdown`]).

use super::nccl::{Span, collective_seconds};
use super::{LINK_EFFICIENCY, SCALE_UP_HOP_LATENCY_S};
use crate::hardware::ClusterFigures;
use crate::workload::routing::remote_copies_per_token;
use crate::workload::{ExpertDispatch, Layout, ModelDims, tp_per_layer};

/// The kind of a collective operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Collective {
    /// Reduce to every rank: reduce-scatter then all-gather, `2(n−1)/n · S` per rank.
    AllReduce,
    /// All-gather or reduce-scatter: `(n−1)/n · S` per rank.
    Gather,
    /// All-to-all: each rank sends `(n−1)/n · S` to the others.
    AllToAll,
}

/// How a group of ranks sits on the nodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Group {
    /// Ranks in the group.
    pub size: f64,
    /// Distance between consecutive members in the global rank order.
    pub stride: f64,
}

impl Group {
    /// Members of the group inside one node.
    fn per_node(&self, devices_per_node: f64) -> f64 {
        if self.stride >= devices_per_node {
            1.0
        } else {
            (devices_per_node / self.stride)
                .floor()
                .clamp(1.0, self.size.max(1.0))
        }
    }
}

/// Devices on one scale-up fabric: the cluster's node (which may hold fewer devices than the
/// device's full node), or the device's rack-scale domain when its fabric spans several nodes
/// (`scale_up.domain` in the catalogue, a whole number of full nodes).
pub(crate) fn scale_up_devices(cluster: &ClusterFigures) -> f64 {
    let device = &cluster.device;
    let node = cluster.devices_per_node.max(1);
    let spans_nodes = device.scale_up_domain > device.devices_per_node;
    f64::from(if spans_nodes {
        node.max(device.scale_up_domain)
    } else {
        node
    })
}

/// Bandwidths in bytes/s a single device sees on each tier when every device of the node
/// communicates at once.
fn tier_bandwidths(cluster: &ClusterFigures) -> (f64, f64) {
    let dpn = f64::from(cluster.devices_per_node.max(1));
    let up = cluster.device.scale_up_bandwidth * LINK_EFFICIENCY;
    let net = cluster.node_network_bandwidth * LINK_EFFICIENCY / dpn;
    (up.max(1.0), net.max(1.0))
}

/// How many times slower the inter-node tier runs for a `kind` collective over `group` because
/// its traffic between switch blocks shares their uplinks (1 inside one block, or on a
/// full-bisection fabric). A ring crosses the uplink on one edge of every `r` it has in a block;
/// an all-to-all sends every byte bound for a node outside the block over it.
pub(crate) fn uplink_slowdown(kind: Collective, group: Group, cluster: &ClusterFigures) -> f64 {
    let Some(block) = cluster.block else {
        return 1.0;
    };
    let dpn = f64::from(cluster.devices_per_node.max(1));
    let k = group.per_node(dpn);
    let nodes = (group.size / k).ceil();
    // Consecutive members sit `stride` ranks apart: that many nodes apart once it passes a node.
    let node_stride = (group.stride / dpn).max(1.0);
    let block_nodes = f64::from(block.nodes.max(1));
    if nodes <= 1.0 || nodes * node_stride <= block_nodes {
        return 1.0;
    }
    let members_per_block = (block_nodes / node_stride).floor().clamp(1.0, nodes);
    let crossing = match kind {
        Collective::AllReduce | Collective::Gather => 1.0 / members_per_block,
        Collective::AllToAll => 1.0 - members_per_block / nodes,
    };
    let demand = block_nodes * cluster.node_network_bandwidth * crossing;
    (demand / block.uplink.max(1.0)).max(1.0)
}

/// Seconds one collective over `group` on a buffer of `bytes` takes.
pub(crate) fn collective_time(
    kind: Collective,
    bytes: f64,
    group: Group,
    cluster: &ClusterFigures,
) -> f64 {
    if group.size <= 1.0 || bytes <= 0.0 {
        return 0.0;
    }
    let (up, net) = tier_bandwidths(cluster);
    // Members per scale-up domain, and the domains the group spans.
    let k = group.per_node(scale_up_devices(cluster));
    let nodes = (group.size / k).ceil();
    let alpha_net = cluster.network_latency_s;
    match kind {
        Collective::AllReduce | Collective::Gather => {
            let passes = if kind == Collective::AllReduce {
                2.0
            } else {
                1.0
            };
            let intra = (k - 1.0) / k * bytes / up;
            let inter = if nodes > 1.0 {
                (nodes - 1.0) / nodes * bytes / k / net * uplink_slowdown(kind, group, cluster)
            } else {
                0.0
            };
            let span = Span {
                ranks: group.size,
                nodes,
                all_reduce: kind == Collective::AllReduce,
            };
            collective_seconds(span, passes * (intra + inter), alpha_net)
        }
        Collective::AllToAll => {
            let g = group.size;
            let intra = (k - 1.0) / g * bytes / up;
            let inter = (g - k) / g * bytes / net * uplink_slowdown(kind, group, cluster);
            let latency = if nodes > 1.0 {
                alpha_net
            } else {
                SCALE_UP_HOP_LATENCY_S
            };
            intra + inter + latency
        }
    }
}

/// Seconds of one expert exchange (a dispatch or a combine) of `bytes` — the rank's tokens,
/// one copy per selected expert, as [`crate::workload::CommSizes::ep_buffer`] counts them —
/// over the expert `group`, as `dispatch` sends them. An all-to-all sends each copy to its
/// expert's rank ([`Collective::AllToAll`]). A deduplicated dispatch sends each token once to
/// every other scale-up domain that holds one of its experts
/// ([`remote_copies_per_token`] of its `top_k` copies cross) and forwards it there over the
/// domain's links to each expert not on the receiving rank (`(k − 1)/k` of the copies); the
/// combine returns the same way, reduced inside the domain first.
pub(crate) fn expert_exchange_time(
    bytes: f64,
    group: Group,
    cluster: &ClusterFigures,
    model: &ModelDims,
    dispatch: ExpertDispatch,
) -> f64 {
    if dispatch == ExpertDispatch::AllToAll || group.size <= 1.0 || bytes <= 0.0 {
        return collective_time(Collective::AllToAll, bytes, group, cluster);
    }
    let (up, net) = tier_bandwidths(cluster);
    let k = group.per_node(scale_up_devices(cluster));
    let domains = (group.size / k).ceil();
    let top_k = model.active_experts();
    let remote = remote_copies_per_token(
        dispatch,
        model.top_k,
        model.experts,
        model.expert_groups,
        domains,
    );
    let intra = (k - 1.0) / k * bytes / up;
    let inter =
        remote / top_k * bytes / net * uplink_slowdown(Collective::AllToAll, group, cluster);
    let latency = if domains > 1.0 {
        cluster.network_latency_s
    } else {
        SCALE_UP_HOP_LATENCY_S
    };
    intra + inter + latency
}

/// Seconds of one tensor-parallel collective of a block over `layout`'s tensor group (the
/// innermost ranks) on a buffer of `bytes`: an all-reduce, or with sequence parallelism the
/// reduce-scatter and all-gather it splits into.
pub(crate) fn tensor_collective_time(layout: &Layout, bytes: f64, cluster: &ClusterFigures) -> f64 {
    let group = Group {
        size: f64::from(layout.tensor.max(1)),
        stride: 1.0,
    };
    if layout.sequence_parallel {
        2.0 * collective_time(Collective::Gather, bytes, group, cluster)
    } else {
        collective_time(Collective::AllReduce, bytes, group, cluster)
    }
}

/// Seconds of every tensor-parallel collective of one block for one micro-batch: blocking, on
/// the critical path ([`tp_per_layer`] collectives of [`tensor_collective_time`]).
pub(crate) fn tensor_comm_per_layer(
    layout: &Layout,
    layers: u32,
    bytes: f64,
    cluster: &ClusterFigures,
) -> f64 {
    tp_per_layer(layout, layers) * tensor_collective_time(layout, bytes, cluster)
}

/// Seconds to send `bytes` from one rank to the rank `stride` places away.
pub(crate) fn p2p_time(bytes: f64, stride: f64, cluster: &ClusterFigures) -> f64 {
    if bytes <= 0.0 {
        return 0.0;
    }
    let (up, net) = tier_bandwidths(cluster);
    if stride < scale_up_devices(cluster) {
        bytes / up + SCALE_UP_HOP_LATENCY_S
    } else {
        bytes / net + cluster.network_latency_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::DeviceFigures;

    /// 64 nodes of 8 devices with 8 × 400 Gb/s NICs, in blocks of 32 nodes whose uplink carries
    /// `uplink_tbps` (102.4 Tb/s would be full bisection).
    fn blocked(uplink_tbps: f64) -> ClusterFigures {
        use crate::hardware::SwitchBlock;
        ClusterFigures {
            device: DeviceFigures {
                id: "X".into(),
                peak_flops: Default::default(),
                memory_bytes: 80e9,
                memory_bandwidth: 3e12,
                scale_up_bandwidth: 450e9,
                devices_per_node: 8,
                scale_up_domain: 8,
                tdp_watts: 700.0,
                efficiency: crate::hardware::Efficiency::unmeasured(),
            },
            devices_per_node: 8,
            nodes: 64,
            node_network_bandwidth: 8.0 * 400e9 / 8.0,
            nics_per_node: 8,
            network_latency_s: 5e-6,
            block: Some(SwitchBlock {
                nodes: 32,
                uplink: uplink_tbps * 1e12 / 8.0,
            }),
            fitted: crate::cost::FittedConstants::SHIPPED,
        }
    }

    #[test]
    fn uplinks_slow_only_groups_that_leave_their_block_past_the_uplink() {
        let quarter = blocked(25.6);
        // Inside one block: 32 nodes of data-parallel ranks at stride 8.
        let inside = Group {
            size: 32.0,
            stride: 8.0,
        };
        assert_eq!(
            uplink_slowdown(Collective::AllReduce, inside, &quarter),
            1.0
        );
        // 64 nodes at stride 8: the ring leaves each block once in 32 edges, well under a
        // quarter of the block's NIC bandwidth.
        let dense = Group {
            size: 64.0,
            stride: 8.0,
        };
        assert_eq!(uplink_slowdown(Collective::AllReduce, dense, &quarter), 1.0);
        // Replicas of 16 nodes (stride 128): 2 members per block, half the ring edges cross, and
        // the uplink carries a quarter of the NICs: twice as slow.
        let sparse = Group {
            size: 4.0,
            stride: 128.0,
        };
        let slow = uplink_slowdown(Collective::AllReduce, sparse, &quarter);
        assert!((slow - 2.0).abs() < 1e-9, "{slow}");
        let full = blocked(102.4);
        assert_eq!(uplink_slowdown(Collective::AllReduce, sparse, &full), 1.0);
        let none = ClusterFigures {
            block: None,
            fitted: crate::cost::FittedConstants::SHIPPED,
            ..quarter.clone()
        };
        assert_eq!(uplink_slowdown(Collective::AllReduce, sparse, &none), 1.0);
        // The collective's time grows with it.
        let bytes = 1e9;
        assert!(
            collective_time(Collective::AllReduce, bytes, sparse, &quarter)
                > 1.5 * collective_time(Collective::AllReduce, bytes, sparse, &none)
        );
    }

    #[test]
    fn a_rack_scale_fabric_keeps_a_racks_collectives_off_the_nics() {
        // GB200 NVL72: trays of 4 GPUs, 72 on one NVLink 5 domain at 900 GB/s one way, 4 ×
        // 400 Gb/s NICs per tray. An all-reduce of 1 GB over 64 consecutive ranks stays in the
        // rack: 2 × 63/64 · 1 GB / (0.8 · 900 GB/s) = 2.7344 ms, plus a ring of 126 NVLink
        // steps under Simple (cost::nccl: 8.4 + 126 × 3.4 = 436.8 µs) = 3.1712 ms. Counted by
        // tray it would cross the NICs: 2 × (3/4 · 1 GB / 720 GB/s + 15/16 · 1 GB / 4 / 40 GB/s)
        // = 2 × (1.0417 + 5.8594) ms = 13.8021 ms, plus the ring's 96 steps inside trays and 30
        // across them (8.4 + 96 × 3.4 + 30 × 14 = 754.8 µs) = 14.5569 ms.
        let mut nvl72 = blocked(102.4);
        nvl72.block = None;
        nvl72.devices_per_node = 4;
        nvl72.device.devices_per_node = 4;
        nvl72.device.scale_up_bandwidth = 900e9;
        nvl72.node_network_bandwidth = 4.0 * 400e9 / 8.0;
        nvl72.nodes = 18;
        let rack = Group {
            size: 64.0,
            stride: 1.0,
        };
        let by_tray = ClusterFigures {
            device: DeviceFigures {
                scale_up_domain: 4,
                ..nvl72.device.clone()
            },
            ..nvl72.clone()
        };
        nvl72.device.scale_up_domain = 72;
        let in_rack = collective_time(Collective::AllReduce, 1e9, rack, &nvl72);
        let over_nics = collective_time(Collective::AllReduce, 1e9, rack, &by_tray);
        assert!((in_rack * 1e3 - 3.1712).abs() < 1e-3, "{in_rack}");
        assert!((over_nics * 1e3 - 14.5569).abs() < 1e-3, "{over_nics}");
        // A point-to-point send to a rank in another tray of the rack rides NVLink too.
        assert!(p2p_time(1e9, 8.0, &nvl72) < p2p_time(1e9, 8.0, &by_tray) / 10.0);
    }

    #[test]
    fn group_members_per_node() {
        assert_eq!(
            Group {
                size: 8.0,
                stride: 1.0
            }
            .per_node(8.0),
            8.0
        );
        assert_eq!(
            Group {
                size: 32.0,
                stride: 2.0
            }
            .per_node(8.0),
            4.0
        );
        assert_eq!(
            Group {
                size: 32.0,
                stride: 8.0
            }
            .per_node(8.0),
            1.0
        );
        assert_eq!(
            Group {
                size: 2.0,
                stride: 1.0
            }
            .per_node(8.0),
            2.0
        );
    }
}
