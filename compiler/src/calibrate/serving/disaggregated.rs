//! A measured disaggregated deployment costed as the planner sizes one: prefill replicas hand
//! each prompt's KV cache to decode replicas over the node group's scale-out
//! (`serve::disaggregated_point_with`), at the run's request rate, or at the rate its bounded
//! concurrency sustains (Little's law over the closed loop of clients).

use super::PreparedServing;
use crate::runs::store::serving::PrefillRole;
use crate::serve::{Load, OperatingPoint, ServeFitted, disaggregated_point_with};

/// Doublings of the rate bracket from one request per second (up to 2^40 requests per second).
/// Counted.
const BRACKET_DOUBLINGS: usize = 40;

/// Bisection steps for the rate a bounded concurrency sustains: the bracket to 2^-30 of itself.
/// Counted.
const RATE_STEPS: usize = 30;

/// The whole deployment's operating point under the row's load, both roles at `fitted`.
pub(super) fn point(
    row: &PreparedServing,
    prefill: PrefillRole,
    fitted: &ServeFitted,
) -> OperatingPoint {
    let prefill_shape = row.shape(prefill.tensor, prefill.pipeline, prefill.max_batch);
    let decode_shape = row.shape(row.tensor, row.pipeline, row.max_batch);
    let at = |rate: f64| {
        disaggregated_point_with(
            &row.model,
            [&prefill_shape, &decode_shape],
            [fitted, fitted],
            [prefill.replicas, row.replicas],
            &row.traffic,
            rate,
            row.scale_out_bandwidth,
            0.5,
        )
    };
    let rate = match row.load {
        Load::Rate(r) => r,
        Load::Concurrency(clients) => sustained_rate(clients, row.traffic.output[0], &at),
        // No bound on the requests in flight: the deployment runs at its capacity (`prepare`
        // costs a disaggregated row only under the two loads above, since such a run's TTFT
        // is its queue's).
        Load::Offline | Load::StaticBatch(_) => {
            sustained_rate(f64::INFINITY, row.traffic.output[0], &at)
        }
    };
    at(rate)
}

/// The largest request rate at which `clients` requests in flight, each in the system for its
/// median TTFT and `output` tokens at the median TPOT, fit (`rate × latency ≤ clients`, the
/// closed loop's Little's law) and the deployment is stable. Both sides grow with the rate, so a
/// bisection finds it.
fn sustained_rate(clients: f64, output: f64, at: &dyn Fn(f64) -> OperatingPoint) -> f64 {
    let within = |rate: f64| {
        let p = at(rate);
        p.stable && rate * (p.ttft_p50_s + output * p.tpot_p50_s) <= clients
    };
    let (mut low, mut high) = (0.0_f64, 1.0_f64);
    for _ in 0..BRACKET_DOUBLINGS {
        if !within(high) {
            break;
        }
        low = high;
        high *= 2.0;
    }
    for _ in 0..RATE_STEPS {
        let mid = 0.5 * (low + high);
        if within(mid) {
            low = mid;
        } else {
            high = mid;
        }
    }
    low
}

#[cfg(test)]
mod tests;
