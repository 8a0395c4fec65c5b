//! Disaggregated deployments: prefill replicas on one node group hand each prompt's KV cache to
//! decode replicas on another (or the same) group of the same site and vendor, so a
//! compute-rich card can prefill and a bandwidth-rich one decode.

use super::candidates::{CapacityPoint, Deployment, Role, degrees, largest, meets};
use super::{Demand, Place};
use crate::serve::{
    Load, ServedModel, disaggregated_point, kv_transfer_s, operating_point, replica_memory,
};
use loam_ir::types::Engine;

/// How many prefill and decode shapes of each site are paired: the cheapest per request of
/// each kind. Counted: enough to pair every device type of a site's few groups.
const SHAPES_PER_SIDE: usize = 4;

/// Replicas on the other side when one side's capacity is measured alone: enough that it never
/// limits. Counted.
const AMPLE: u32 = 1_000_000;

/// The decode batch the search tries for decode replicas. Counted: vLLM's default
/// `max_num_seqs`, and twice and four times it for bandwidth-rich cards.
const DECODE_BATCHES: &[u32] = &[64, 128, 256, 512];

/// A shape measured alone on one side.
struct Side<'a> {
    role: Role<'a>,
    /// Requests per second one replica carries within its share of the targets.
    capacity: f64,
}

/// Adds the disaggregated deployments of `places` to `out`.
pub(crate) fn pairs<'a>(
    demand: &Demand<'a>,
    places: &[Place<'a>],
    served: &dyn Fn(Engine) -> ServedModel,
    out: &mut Vec<Deployment<'a>>,
    rejected: &mut Vec<String>,
) {
    let Some(rate) = demand.peak_rate else {
        // A closed loop of clients is sized aggregated; its rate depends on the latency.
        return;
    };
    let mut prefills: Vec<Side<'a>> = Vec::new();
    let mut decodes: Vec<Side<'a>> = Vec::new();
    for place in places {
        let model = served(place.engine);
        for (tensor, pipeline, expert) in degrees(demand, place) {
            let base = Role {
                role: "prefill",
                place: *place,
                tensor,
                pipeline,
                expert,
                max_batch: 1,
                max_model_len: demand.max_model_len,
                replicas: 1,
                capacity: 0.0,
            };
            if !replica_memory(&model, &base.shape()).fits {
                continue;
            }
            let prefill = Role {
                max_batch: 64,
                ..base
            };
            let capacity = alone(demand, &model, &prefill, rate);
            if capacity > 0.0 {
                prefills.push(Side {
                    role: prefill,
                    capacity,
                });
            }
            for &max_batch in DECODE_BATCHES {
                let decode = Role {
                    role: "decode",
                    max_batch,
                    ..base
                };
                let capacity = alone(demand, &model, &decode, rate);
                if capacity > 0.0 {
                    decodes.push(Side {
                        role: decode,
                        capacity,
                    });
                }
            }
        }
    }
    let cheapest = |sides: &mut Vec<Side<'a>>| {
        sides.sort_by(|a, b| {
            per_request(a)
                .total_cmp(&per_request(b))
                .then_with(|| a.role.shape_label().cmp(&b.role.shape_label()))
        });
    };
    cheapest(&mut prefills);
    cheapest(&mut decodes);
    let mut tried = 0usize;
    for p in prefills.iter().take(SHAPES_PER_SIDE) {
        for d in decodes.iter().take(SHAPES_PER_SIDE) {
            let (pp, dp) = (&p.role.place, &d.role.place);
            // The KV cache crosses between replicas of one engine and one vendor's memory
            // layout, over one site's RDMA fabric.
            if pp.site.name.value != dp.site.name.value
                || pp.engine != dp.engine
                || pp.device.vendor != dp.device.vendor
            {
                continue;
            }
            tried += 1;
            if let Some(deployment) = pair(demand, served(pp.engine), p, d, rate) {
                out.push(deployment);
            }
        }
    }
    if tried > 0 && out.iter().all(|d| d.roles.len() < 2) {
        rejected.push(
            "disaggregated: no prefill and decode pair of one site meets the targets together"
                .to_string(),
        );
    }
}

/// Requests per second one replica of `role` carries with the other side ample: a prefill
/// replica within the TTFT target, a decode replica within the TPOT target.
fn alone(demand: &Demand<'_>, model: &ServedModel, role: &Role<'_>, rate: f64) -> f64 {
    let shape = role.shape();
    let (prefills, decodes) = if role.role == "prefill" {
        (1, AMPLE)
    } else {
        (AMPLE, 1)
    };
    largest(rate.max(1.0) * 4.0, |r| {
        let p = disaggregated_point(
            model,
            &shape,
            &shape,
            prefills,
            decodes,
            &demand.traffic,
            r,
            link_bandwidth(&role.place, &role.place),
            demand.fraction,
        );
        let within = if role.role == "prefill" {
            demand.ttft.is_none_or(|t| p.ttft_s <= t)
        } else {
            demand.tpot.is_none_or(|t| p.tpot_s <= t)
        };
        p.stable && within
    })
}

/// Cost per request per second of capacity: what one replica costs over what it carries.
fn per_request(side: &Side<'_>) -> f64 {
    side.role.devices_per_replica() as f64 * side.role.place.price / side.capacity.max(1e-9)
}

/// Bytes per second one prompt's KV cache crosses from a prefill to a decode replica: the
/// slower side's scale-out bandwidth per device (RDMA between nodes of one site).
fn link_bandwidth(prefill: &Place<'_>, decode: &Place<'_>) -> f64 {
    prefill
        .group
        .scale_out_per_device()
        .min(decode.group.scale_out_per_device())
}

/// Sizes prefill and decode replicas for `rate` and checks the pair meets the targets.
fn pair<'a>(
    demand: &Demand<'a>,
    model: ServedModel,
    prefill: &Side<'a>,
    decode: &Side<'a>,
    rate: f64,
) -> Option<Deployment<'a>> {
    let link = link_bandwidth(&prefill.role.place, &decode.role.place);
    let mut np = (rate / prefill.capacity).ceil().max(1.0) as u32;
    let mut nd = (rate / decode.capacity).ceil().max(1.0) as u32;
    let (ps, ds) = (prefill.role.shape(), decode.role.shape());
    let at = |np: u32, nd: u32, rate: f64| {
        disaggregated_point(
            &model,
            &ps,
            &ds,
            np,
            nd,
            &demand.traffic,
            rate,
            link,
            demand.fraction,
        )
    };
    let mut point = at(np, nd, rate);
    // Each side was sized with the other ample; add a replica to the side that misses.
    for _ in 0..8 {
        if meets(demand, &point) {
            break;
        }
        if demand.ttft.is_some_and(|t| point.ttft_s > t) {
            np += 1;
        } else {
            nd += 1;
        }
        point = at(np, nd, rate);
    }
    if !meets(demand, &point) {
        return None;
    }
    let devices = |role: &Role<'_>, n: u32| role.devices_per_replica() * u64::from(n);
    if devices(&prefill.role, np) + devices(&decode.role, nd) > prefill.role.place.available
        && prefill.role.place.group.name.value == decode.role.place.group.name.value
    {
        return None;
    }
    if devices(&prefill.role, np) > prefill.role.place.available
        || devices(&decode.role, nd) > decode.role.place.available
    {
        return None;
    }
    // The whole deployment at the heaviest rate it carries within the targets, what a benchmark
    // heavier than the busiest hour is compared with (`loam runs check`). Each side alone carries
    // at most its replicas' capacities, so their sum bounds the search.
    let bound = f64::from(np) * prefill.capacity + f64::from(nd) * decode.capacity;
    let heaviest = largest(bound.max(rate), |r| meets(demand, &at(np, nd, r)));
    let at_capacity = CapacityPoint {
        point: at(np, nd, heaviest),
        devices: devices(&prefill.role, np) + devices(&decode.role, nd),
    };
    let per_replica_decode = operating_point(
        &model,
        &ds,
        &demand.traffic,
        Load::Rate(rate / f64::from(nd)),
        demand.fraction,
    );
    Some(Deployment {
        roles: vec![
            Role {
                replicas: u64::from(np),
                capacity: prefill.capacity,
                ..prefill.role
            },
            Role {
                replicas: u64::from(nd),
                capacity: decode.capacity,
                ..decode.role
            },
        ],
        point,
        capacity: prefill.capacity.min(decode.capacity),
        concurrency_at_capacity: (decode.capacity
            * (per_replica_decode.ttft_p50_s
                + demand.traffic.output[0] * per_replica_decode.tpot_p50_s))
            .min(f64::from(decode.role.max_batch)),
        kv_transfer_s: Some(kv_transfer_s(&model, demand.traffic.input[0], link)),
        at_capacity: Some(at_capacity),
    })
}
