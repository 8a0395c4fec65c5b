//! What a link's transport leaves a collective of its bandwidth: peer-to-peer over the scale-up
//! fabric, or staged through host memory where the device refuses peer-to-peer over PCIe; RDMA
//! or TCP sockets between nodes.
//!
//! The collective model ([`super::network`]) gives every link `bandwidth × LINK_EFFICIENCY`
//! (nccl-tests bus bandwidth on InfiniBand and NVLink). A device without PCIe peer-to-peer and a
//! network that NCCL drives over TCP sockets reach less: these functions give the bandwidth the
//! collective model must be handed for the link to reach its transport's share.

use super::LINK_EFFICIENCY;

/// Physical: bus bandwidth of NCCL's host-memory path (the SHM transport, which NCCL takes when
/// the driver refuses peer-to-peer between two PCIe devices) as a share of what the collective
/// model gives a peer-to-peer link of the same PCIe generation (one-way bandwidth ×
/// `LINK_EFFICIENCY`). Eight RTX 2080 on PCIe Gen3 x16 (16 GB/s one way), profiled by the Sailor
/// authors: an all-reduce over 8 ranks at 1.47 GB/s algorithm bandwidth, 2.57 GB/s bus bandwidth
/// (`2·7/8 × 1.47`), and 2.73 GB/s over 2 ranks (eth-easl/sailor,
/// `sailor/Planner/baselines/Galvatron/profiles/OPT-350/RTX-2080/hw_prof.json`); TITAN RTX on
/// the same servers 2.8 GB/s. `2.6 / (16 × 0.8) = 0.20`. The traffic crosses PCIe twice and the
/// host's memory once, so the host, not the link, sets the pace (NVIDIA/nccl#1639: "on PCI
/// systems, the performance you get is usually determined by the bandwidth your CPU and memory
/// can deliver").
pub const HOST_STAGED_SHARE: f64 = 0.2;

/// Physical: share of an Ethernet link's line rate that NCCL's TCP socket transport reaches with
/// large messages: "not more than 60 % of wire speed over 32 Gbps networks" (NVIDIA/nccl#209),
/// 4–6 GB/s of bus bandwidth over 100 Gb/s TCP (NVIDIA/nccl#450). Every byte is copied through
/// host memory and the kernel's socket stack, where RDMA moves it from device memory.
pub const TCP_SOCKET_EFFICIENCY: f64 = 0.6;

/// How NCCL moves bytes between two nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// InfiniBand, RoCE or EFA: `LINK_EFFICIENCY` of the line rate.
    Rdma,
    /// TCP sockets over Ethernet: [`TCP_SOCKET_EFFICIENCY`] of it.
    Sockets,
}

impl Transport {
    /// The share of the line rate a large collective reaches.
    pub fn efficiency(self) -> f64 {
        match self {
            Transport::Rdma => LINK_EFFICIENCY,
            Transport::Sockets => TCP_SOCKET_EFFICIENCY,
        }
    }

    /// What a node's line rate (bytes/s) counts as in the collective model, which applies
    /// `LINK_EFFICIENCY` to every link: the rate itself over RDMA, scaled by the transport's
    /// share over `LINK_EFFICIENCY` otherwise.
    pub fn line_rate_in_model(self, line_rate: f64) -> f64 {
        line_rate * self.efficiency() / LINK_EFFICIENCY
    }
}

/// The scale-up bandwidth the collective model reads for a device, one direction, from the
/// catalogue's bidirectional figure: half of it with peer-to-peer, [`HOST_STAGED_SHARE`] of that
/// half where the device has none (GeForce and TITAN cards on PCIe: collectives and pipeline sends
/// inside the node go through host memory).
pub fn scale_up_one_way(bidirectional: f64, peer_to_peer: bool) -> f64 {
    let one_way = bidirectional / 2.0;
    if peer_to_peer {
        one_way
    } else {
        one_way * HOST_STAGED_SHARE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_staged_pcie_reaches_what_the_sailor_profile_measured() {
        // PCIe Gen3 x16, 32 GB/s both directions: 16 GB/s one way with peer-to-peer; without it
        // 16 × 0.2 = 3.2 GB/s, which the collective model runs at × 0.8 = 2.56 GB/s of bus
        // bandwidth, the 2.57 GB/s eight RTX 2080 reached in the profile.
        assert_eq!(scale_up_one_way(32e9, true), 16e9);
        let staged = scale_up_one_way(32e9, false);
        assert!((staged - 3.2e9).abs() < 1.0);
        assert!((staged * LINK_EFFICIENCY - 2.56e9).abs() < 1.0);
    }

    #[test]
    fn tcp_sockets_reach_less_of_the_line_than_rdma() {
        // 10 Gb/s Ethernet = 1.25 GB/s: over sockets 0.6 × 1.25 = 0.75 GB/s, which the model
        // (× 0.8) reaches from 0.9375 GB/s; over RDMA the line rate as it is.
        let line = 10e9 / 8.0;
        assert_eq!(Transport::Rdma.line_rate_in_model(line), line);
        let sockets = Transport::Sockets.line_rate_in_model(line);
        assert!((sockets - 0.9375e9).abs() < 1.0);
        assert!((sockets * LINK_EFFICIENCY - 0.75e9).abs() < 1.0);
    }
}
