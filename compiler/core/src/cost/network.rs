//! Collective and point-to-point times on the tier a group crosses.
//!
//! A group of `g` ranks laid out with stride `st` (ranks `st` apart in the global order, tensor
//! ranks innermost) keeps `k = min(g, devices_per_node / st)` members in each node. Collectives
//! are hierarchical (reduce-scatter inside the node over the scale-up fabric, across nodes over
//! the NICs, all-gather back), as NCCL does on multi-node rings and trees.

use super::{LINK_EFFICIENCY, SCALE_UP_HOP_LATENCY_S};
use crate::hardware::ClusterFigures;

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

/// Bandwidths in bytes/s a single device sees on each tier when every device of the node
/// communicates at once.
fn tier_bandwidths(cluster: &ClusterFigures) -> (f64, f64) {
    let dpn = f64::from(cluster.devices_per_node.max(1));
    let up = cluster.device.scale_up_bandwidth * LINK_EFFICIENCY;
    let net = cluster.node_network_bandwidth * LINK_EFFICIENCY / dpn;
    (up.max(1.0), net.max(1.0))
}

/// `ceil(log2(n))` for tree depths, on integers so the result is identical everywhere.
fn ceil_log2(n: f64) -> f64 {
    let n = n.max(1.0) as u64;
    f64::from(u64::BITS - n.saturating_sub(1).leading_zeros())
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
    let dpn = f64::from(cluster.devices_per_node.max(1));
    let (up, net) = tier_bandwidths(cluster);
    let k = group.per_node(dpn);
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
                (nodes - 1.0) / nodes * bytes / k / net
            } else {
                0.0
            };
            let latency = (k - 1.0) * SCALE_UP_HOP_LATENCY_S + 2.0 * ceil_log2(nodes) * alpha_net;
            passes * (intra + inter + latency)
        }
        Collective::AllToAll => {
            let g = group.size;
            let intra = (k - 1.0) / g * bytes / up;
            let inter = (g - k) / g * bytes / net;
            let latency = if nodes > 1.0 {
                alpha_net
            } else {
                SCALE_UP_HOP_LATENCY_S
            };
            intra + inter + latency
        }
    }
}

/// Seconds to send `bytes` from one rank to the rank `stride` places away.
pub(crate) fn p2p_time(bytes: f64, stride: f64, cluster: &ClusterFigures) -> f64 {
    if bytes <= 0.0 {
        return 0.0;
    }
    let dpn = f64::from(cluster.devices_per_node.max(1));
    let (up, net) = tier_bandwidths(cluster);
    if stride < dpn {
        bytes / up + SCALE_UP_HOP_LATENCY_S
    } else {
        bytes / net + cluster.network_latency_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_is_exact_on_integers() {
        assert_eq!(ceil_log2(1.0), 0.0);
        assert_eq!(ceil_log2(2.0), 1.0);
        assert_eq!(ceil_log2(3.0), 2.0);
        assert_eq!(ceil_log2(2048.0), 11.0);
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
