//! How long a collective takes before its first byte moves, and at what share of the link it
//! then moves, by the algorithm and protocol NCCL runs it with: NCCL's own tuning model
//! (NVIDIA/nccl `src/graph/tuning.cc`, `ncclTopoTuneModel` and its default tuner constants).
//!
//! NCCL costs each (algorithm, protocol) pair as `latency + bytes / bandwidth` and runs the
//! cheapest. A ring of `n` ranks over `N` nodes takes `n − 1` steps per pass (two passes for an
//! all-reduce), `N − 1` of them across the network, each step paying the hop's latency; a tree
//! all-reduce pays `2 × ((n/N − 1) intra-node hops + log2 N network levels)`. The protocols trade
//! latency for bandwidth: LL moves 8-byte words with their flags (half the bandwidth, sub-µs
//! hops), LL128 128-byte lines with 8 bytes of flags (120/128 of it), Simple whole chunks with a
//! fence per step (all of it, the longest hops). So a small collective over many ranks costs
//! its steps, not its bytes: an all-gather over 1,024 ranks on 128 nodes takes at least
//! `6.6 + 896 × 1.0 + 127 × 2.7 ≈ 1,245 µs` whatever its size (LL), where a log-depth tree
//! would take a few tens.
//!
//! Not modelled: NVLink SHARP (NVLS), CollNet and PAT (switch- or one-rank-per-node
//! algorithms that need hardware or settings loam does not know about), the per-channel caps on
//! LL and LL128 bandwidth, and PCIe's hop latencies (every scale-up hop is costed as NVLink's).

/// One NCCL protocol's figures, in seconds, from the default tuner constants.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Protocol {
    /// Share of the link bandwidth the protocol moves payload at (`busBw × .5` for LL,
    /// `× 0.92` (120/128) for LL128 in `ncclTopoTuneModel`).
    pub bandwidth_share: f64,
    /// Fixed cost of a ring collective (`baseLatencies[RING]`).
    ring_base: f64,
    /// Fixed cost of a tree collective (`baseLatencies[TREE]`).
    tree_base: f64,
    /// A ring step over NVLink (`hwLatencies[NVLINK][RING]`).
    ring_scale_up: f64,
    /// A ring step over the network (`hwLatencies[NET][RING]`).
    ring_network: f64,
    /// A tree hop over NVLink (`hwLatencies[NVLINK][TREE]`).
    tree_scale_up: f64,
    /// A tree level over the network (`hwLatencies[NET][TREE]`); also a ring's network step
    /// with one rank per node ("latencies are fully exposed").
    tree_network: f64,
    /// The floor on a multi-node ring's intra-node step: the network proxy's overhead per step
    /// (`getNetOverhead`: 1 µs on x86), three times it under Simple.
    net_overhead: f64,
}

/// Physical (NCCL's default tuner constants): LL, LL128 and Simple, in NCCL's order.
pub(crate) const PROTOCOLS: [Protocol; 3] = [
    Protocol {
        bandwidth_share: 0.5,
        ring_base: 6.6e-6,
        tree_base: 6.8e-6,
        ring_scale_up: 0.6e-6,
        ring_network: 2.7e-6,
        tree_scale_up: 0.6e-6,
        tree_network: 5.0e-6,
        net_overhead: 1.0e-6,
    },
    Protocol {
        bandwidth_share: 0.92,
        ring_base: 14.0e-6,
        tree_base: 14.0e-6,
        ring_scale_up: 1.9e-6,
        ring_network: 4.0e-6,
        tree_scale_up: 1.25e-6,
        tree_network: 8.5e-6,
        net_overhead: 1.0e-6,
    },
    Protocol {
        bandwidth_share: 1.0,
        ring_base: 8.4e-6,
        tree_base: 8.4e-6,
        ring_scale_up: 3.4e-6,
        ring_network: 14.0e-6,
        tree_scale_up: 4.0e-6,
        tree_network: 14.0e-6,
        net_overhead: 3.0e-6,
    },
];

/// The shape of a collective NCCL costs: ranks, the nodes (scale-up domains) they span, and
/// whether it is an all-reduce (two ring passes) or an all-gather / reduce-scatter (one).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    /// Ranks in the group.
    pub ranks: f64,
    /// Scale-up domains the group spans.
    pub nodes: f64,
    /// Two passes (reduce-scatter then all-gather) rather than one.
    pub all_reduce: bool,
}

impl Protocol {
    /// Seconds a ring collective of `span` spends on its steps' latency; `network` is the
    /// site's one-way latency between nodes, which a step across the network pays at least.
    pub(crate) fn ring_latency(&self, span: Span, network: f64) -> f64 {
        let passes = if span.all_reduce { 2.0 } else { 1.0 };
        let steps = passes * (span.ranks - 1.0).max(0.0);
        let crossings = passes * (span.nodes - 1.0).max(0.0);
        let multi_node = span.nodes > 1.0;
        let scale_up = if multi_node {
            self.ring_scale_up.max(self.net_overhead)
        } else {
            self.ring_scale_up
        };
        let per_node = span.ranks / span.nodes.max(1.0);
        let across = if per_node <= 1.0 {
            self.tree_network
        } else {
            self.ring_network
        }
        .max(network);
        self.ring_base + (steps - crossings) * scale_up + crossings * across
    }

    /// Seconds a tree all-reduce of `span` spends on latency (NCCL's double binary tree: a
    /// chain inside each node, a tree of depth `log2 N` across them), with `network` as in
    /// [`Protocol::ring_latency`].
    pub(crate) fn tree_latency(&self, span: Span, network: f64) -> f64 {
        let per_node = (span.ranks / span.nodes.max(1.0) - 1.0).max(0.0);
        // `log2i` in NCCL: on integers, so the result is identical everywhere.
        let levels = f64::from((span.nodes.max(1.0) as u64).ilog2());
        self.tree_base
            + 2.0 * (per_node * self.tree_scale_up + levels * self.tree_network.max(network))
    }
}

/// Physical (NCCL's tuning model): tree bandwidth as a share of the ring's for an all-reduce
/// (`busBw × .92` for trees in `ncclTopoTuneModel`).
pub(crate) const TREE_BANDWIDTH_SHARE: f64 = 0.92;

/// Seconds of a collective of `span` whose bytes would take `transfer` seconds at the links'
/// full bandwidth: the cheapest of NCCL's rings (and, for a multi-node all-reduce, trees) under
/// each protocol, as NCCL picks it.
pub(crate) fn collective_seconds(span: Span, transfer: f64, network: f64) -> f64 {
    if span.ranks <= 1.0 {
        return 0.0;
    }
    let mut best = f64::INFINITY;
    for protocol in &PROTOCOLS {
        let moving = transfer / protocol.bandwidth_share;
        best = best.min(protocol.ring_latency(span, network) + moving);
        if span.all_reduce && span.nodes > 1.0 {
            best = best.min(protocol.tree_latency(span, network) + moving / TREE_BANDWIDTH_SHARE);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(ranks: f64, nodes: f64, all_reduce: bool) -> Span {
        Span {
            ranks,
            nodes,
            all_reduce,
        }
    }

    fn close(got: f64, want_us: f64) -> bool {
        (got * 1e6 - want_us).abs() < 1e-6
    }

    #[test]
    fn a_small_all_gather_over_a_thousand_ranks_costs_its_ring_steps() {
        // 1,024 ranks on 128 nodes of 8: 1,023 ring steps, 127 of them across the network.
        // With NCCL's figures alone (no slower network), LL is cheapest for a payload that
        // would take 1 µs at full bandwidth: 6.6 + 896 × max(0.6, 1.0 proxy overhead) +
        // 127 × 2.7 = 1,245.5 µs, plus 2 µs at half the bandwidth. LL128 would take
        // 14 + 896 × 1.9 + 127 × 4.0 = 2,224.4 µs, Simple 8.4 + 896 × 3.4 + 127 × 14 = 4,832.8.
        let span = group(1024.0, 128.0, false);
        let [ll, ll128, simple] = PROTOCOLS;
        assert!(close(ll.ring_latency(span, 0.0), 1245.5));
        assert!(close(ll128.ring_latency(span, 0.0), 2224.4));
        assert!(close(simple.ring_latency(span, 0.0), 4832.8));
        assert!(close(collective_seconds(span, 1e-6, 0.0), 1247.5));
        // A site whose one-way latency between nodes is 5 µs makes every network step at
        // least that: 6.6 + 896 + 127 × 5 = 1,537.6 µs.
        assert!(close(ll.ring_latency(span, 5e-6), 1537.6));
        // A large payload runs at Simple's full bandwidth: 100 ms + 4,832.8 µs, against
        // 100 / 0.92 ms + 2,224.4 µs under LL128.
        assert!(close(collective_seconds(span, 0.1, 0.0), 104_832.8));
    }

    #[test]
    fn a_small_all_reduce_over_many_nodes_takes_the_tree() {
        // 1,024 ranks on 128 nodes: the double binary tree has 7 levels across nodes and a
        // chain of 7 hops inside each, both ways: LL 6.8 + 2 × (7 × 0.6 + 7 × 5.0) = 85.2 µs,
        // where the ring's 2,046 steps would take 6.6 + 1,792 × 1.0 + 254 × 2.7 = 2,484.4 µs.
        let span = group(1024.0, 128.0, true);
        let ll = PROTOCOLS[0];
        assert!(close(ll.tree_latency(span, 0.0), 85.2));
        assert!(close(ll.ring_latency(span, 0.0), 2484.4));
        // A payload of 1 µs at full bandwidth: the tree under LL, at half the bandwidth and
        // the tree's 0.92 of the ring's.
        assert!(close(
            collective_seconds(span, 1e-6, 0.0),
            85.2 + 2.0 / 0.92
        ));
        // Inside one node there is no tree: a ring of 8 under Simple for a large payload,
        // 8.4 + 14 × 3.4 = 56 µs on top of the bytes.
        let node = group(8.0, 1.0, true);
        assert!(close(collective_seconds(node, 0.01, 0.0), 10_056.0));
    }

    #[test]
    fn one_rank_per_node_pays_the_tree_latency_on_every_network_step() {
        // 16 ranks on 16 nodes, all-gather: every step crosses the network, and NCCL costs
        // those steps at its tree latency ("latencies are fully exposed"): LL
        // 6.6 + 15 × 5.0 = 81.6 µs where 8 ranks per node would pay 2.7 per crossing.
        let span = group(16.0, 16.0, false);
        assert!(close(PROTOCOLS[0].ring_latency(span, 0.0), 81.6));
        // A lone rank has nothing to exchange.
        let alone = group(1.0, 1.0, true);
        assert_eq!(collective_seconds(alone, 1.0, 0.0), 0.0);
    }
}
