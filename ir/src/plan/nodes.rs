//! How a group's devices sit on its nodes: the one rule that every planned group keeps and that
//! `loam emit` checks (L4002), and the shape the planner gives a group of any size.

use super::GroupIr;

/// A group's nodes: `nodes` nodes, each running `per_node` of the group's devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeShape {
    /// Nodes the group takes.
    pub nodes: u64,
    /// Devices the group runs on each of them.
    pub per_node: u64,
}

impl NodeShape {
    /// The shape `group` states (`nodes`, `devices_per_node`).
    pub fn of(group: &GroupIr) -> NodeShape {
        NodeShape {
            nodes: group.nodes,
            per_node: group.devices_per_node,
        }
    }

    /// Whether `devices` devices run as this shape: every launcher starts the same number of
    /// ranks on each node of a group (torchrun's `--nproc-per-node`, Slurm's
    /// `--ntasks-per-node`, a JobSet's identical pods, the bare-metal hostfile's slots), so the
    /// devices are exactly `nodes × per_node`, with at least one of each.
    pub fn holds(self, devices: u64) -> bool {
        self.nodes > 0
            && self.per_node > 0
            && self.nodes.checked_mul(self.per_node) == Some(devices)
    }

    /// The shape the planner gives `devices` devices on a node group of `max_nodes` nodes of
    /// `node_size` devices, whose tensor-parallel groups of `tensor` ranks (ranks ordered tensor
    /// first) stay inside a node: the fewest nodes that each run the same number of devices, at
    /// most `node_size` and a multiple of `tensor`. A group of whole nodes keeps them; one that
    /// is not gets nodes it does not fill (12 devices on nodes of 8: at tensor degree 1 or 2,
    /// 2 nodes of 6; at 4, 3 nodes of 4).
    ///
    /// It [`NodeShape::holds`] for every positive `devices`. When no such shape fits in
    /// `max_nodes` nodes ([`NodeShape::fits`] is false), the tensor groups are left to span
    /// nodes if that fits, and otherwise the group takes the nodes it needs: a group the
    /// launchers can start, which the planner's search does not choose.
    pub fn place(devices: u64, node_size: u64, tensor: u64, max_nodes: u64) -> NodeShape {
        let keeps_tensor = |shape: &NodeShape| shape.per_node.is_multiple_of(tensor.max(1));
        let within = |shape: &NodeShape| shape.nodes <= max_nodes;
        let shapes = || Self::equal_nodes(devices, node_size);
        shapes()
            .find(|s| keeps_tensor(s) && within(s))
            .or_else(|| shapes().find(within))
            .or_else(|| shapes().find(keeps_tensor))
            .or_else(|| shapes().next())
            .unwrap_or(NodeShape {
                nodes: 0,
                per_node: 0,
            })
    }

    /// Whether [`NodeShape::place`] finds `devices` devices equal nodes within `max_nodes`
    /// nodes of `node_size` that keep every tensor group of `tensor` ranks inside a node.
    pub fn fits(devices: u64, node_size: u64, tensor: u64, max_nodes: u64) -> bool {
        Self::equal_nodes(devices, node_size)
            .any(|s| s.per_node.is_multiple_of(tensor.max(1)) && s.nodes <= max_nodes)
    }

    /// Every way to run `devices` devices as equal nodes of at most `node_size`, fewest nodes
    /// first (none for 0 devices).
    fn equal_nodes(devices: u64, node_size: u64) -> impl Iterator<Item = NodeShape> {
        let largest = node_size.max(1).min(devices);
        (1..=largest)
            .rev()
            .filter(move |per_node| devices.is_multiple_of(*per_node))
            .map(move |per_node| NodeShape {
                nodes: devices / per_node,
                per_node,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nodes enough for any group of these tests.
    const ANY: u64 = u64::MAX;

    fn shape(nodes: u64, per_node: u64) -> NodeShape {
        NodeShape { nodes, per_node }
    }

    #[test]
    fn whole_nodes_stay_whole_and_a_part_of_one_is_one_node() {
        // 16 devices on nodes of 8: 16 / 8 = 2 full nodes, at every tensor degree dividing 8.
        for tensor in [1, 2, 4, 8] {
            assert_eq!(NodeShape::place(16, 8, tensor, ANY), shape(2, 8));
        }
        // 4 devices on nodes of 8: part of one node.
        assert_eq!(NodeShape::place(4, 8, 4, ANY), shape(1, 4));
    }

    #[test]
    fn twelve_devices_on_nodes_of_eight_become_equal_nodes() {
        // 12 = 2 × 6: the largest divisor of 12 that is at most 8 is 6, a multiple of 1 and 2.
        assert_eq!(NodeShape::place(12, 8, 1, ANY), shape(2, 6));
        assert_eq!(NodeShape::place(12, 8, 2, ANY), shape(2, 6));
        // At tensor degree 4, 6 would split a tensor group over two nodes (ranks 4–7); the
        // largest divisor of 12 at most 8 that 4 divides is 4: 3 nodes of 4.
        assert_eq!(NodeShape::place(12, 8, 4, ANY), shape(3, 4));
        assert!(NodeShape::fits(12, 8, 4, 3));
        // What the planner used to write, 12 devices on 2 nodes of 8, breaks the rule.
        assert!(!shape(2, 8).holds(12));
    }

    #[test]
    fn a_node_group_too_small_for_equal_nodes_is_said_so() {
        // TP4 over 12 devices needs 3 nodes of 4; a node group of 2 nodes has room for the
        // devices (16) but not for that shape. The group still gets one the launchers can
        // start, 2 nodes of 6, which `fits` says is not what the plan assumed.
        assert!(!NodeShape::fits(12, 8, 4, 2));
        assert_eq!(NodeShape::place(12, 8, 4, 2), shape(2, 6));
        // 13 is prime and above 8: only 1 divides it within a node, so 13 nodes of 1.
        assert_eq!(NodeShape::place(13, 8, 1, ANY), shape(13, 1));
        assert!(!NodeShape::fits(13, 8, 1, 2));
        assert!(NodeShape::place(13, 8, 1, 2).holds(13));
    }

    /// Every group size the planner can ask for, on node sizes of the catalogues and a few odd
    /// ones, at every tensor degree that fits a node: the shape holds, no node runs more than it
    /// has, tensor groups stay inside a node (`tensor` itself divides the devices and fits a
    /// node, so some shape allows it), no shape with fewer nodes would do, and `fits` says
    /// exactly whether the node group has those nodes.
    #[test]
    fn every_placed_group_passes_the_rule_emit_checks() {
        for node_size in [1u64, 2, 4, 6, 8, 10, 16] {
            for tensor in (1..=node_size).filter(|t| [1, 2, 3, 4, 5, 8, 16].contains(t)) {
                for devices in (tensor..=600).step_by(tensor as usize) {
                    let placed = NodeShape::place(devices, node_size, tensor, ANY);
                    let case = format!("{devices} devices, nodes of {node_size}, tensor {tensor}");
                    assert!(placed.holds(devices), "{case}: {placed:?}");
                    assert!(placed.per_node <= node_size, "{case}: {placed:?}");
                    assert!(placed.per_node.is_multiple_of(tensor), "{case}: {placed:?}");
                    let fewer = (placed.per_node + 1..=node_size.min(devices))
                        .find(|p| devices.is_multiple_of(*p) && p.is_multiple_of(tensor));
                    assert_eq!(fewer, None, "{case}: {placed:?}");
                    for max_nodes in [1, 2, 3, 8, 64] {
                        let within = NodeShape::place(devices, node_size, tensor, max_nodes);
                        assert!(
                            within.holds(devices),
                            "{case}, {max_nodes} nodes: {within:?}"
                        );
                        assert_eq!(
                            NodeShape::fits(devices, node_size, tensor, max_nodes),
                            placed.nodes <= max_nodes,
                            "{case}, {max_nodes} nodes"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn no_devices_make_no_shape_that_holds() {
        assert!(!NodeShape::place(0, 8, 1, ANY).holds(0));
        assert!(!shape(0, 8).holds(0));
        assert!(!shape(2, 0).holds(0));
    }
}
