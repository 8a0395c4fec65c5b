//! Latency at a load: continuous batching's steady state (Little's law over the decode batch)
//! and the wait for prefill, as percentiles.

use super::model::{
    ReplicaShape, ServedModel, decode_step_s, kv_transfer_s, prefill_s, replica_memory,
};

/// Request lengths in tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Traffic {
    /// Prompt tokens: mean, median, 99th percentile.
    pub input: [f64; 3],
    /// Generated tokens: mean, median, 99th percentile.
    pub output: [f64; 3],
}

impl Traffic {
    /// Every request `input` tokens in and `output` out.
    pub fn fixed(input: f64, output: f64) -> Traffic {
        Traffic {
            input: [input; 3],
            output: [output; 3],
        }
    }
}

/// How requests arrive at one replica.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// Poisson arrivals at this many requests per second.
    Rate(f64),
    /// This many requests in flight at once (a closed loop).
    Concurrency(f64),
    /// Every request queued at once; the engine batches as many as fit.
    Offline,
    /// Batches of this many requests, each run to completion before the next.
    StaticBatch(f64),
}

/// A replica's steady state at a load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OperatingPoint {
    /// Mean sequences in the decode batch.
    pub batch: f64,
    /// Requests completed per second.
    pub requests_per_s: f64,
    /// Output tokens per second.
    pub output_tokens_per_s: f64,
    /// Median time to first token, seconds.
    pub ttft_p50_s: f64,
    /// Time to first token at the asked percentile, seconds.
    pub ttft_s: f64,
    /// Median time per output token, seconds.
    pub tpot_p50_s: f64,
    /// Time per output token at the asked percentile, seconds.
    pub tpot_s: f64,
    /// End-to-end latency at the asked percentile, seconds.
    pub e2e_s: f64,
    /// Share of time the replica is busy.
    pub utilisation: f64,
    /// Whether the replica keeps up with the load (a queue that grows without bound does not).
    pub stable: bool,
}

/// Waiting-time quantile of an M/D/1-like queue at utilisation `rho` with service time `s`:
/// the mean wait (Pollaczek–Khinchine) stretched by the exponential tail's `-ln(1-p)`.
fn wait_s(rho: f64, service: f64, fraction: f64) -> f64 {
    if rho <= 0.0 {
        return 0.0;
    }
    if rho >= 1.0 {
        return f64::INFINITY;
    }
    let mean = rho * service / (2.0 * (1.0 - rho));
    let tail = -libm::log(1.0 - fraction.min(0.999));
    mean * tail.max(0.0) / 1.0_f64.max(1.0)
}

/// The steady state of one aggregated replica under `load`, with latencies at `fraction`
/// (0.99 for p99).
pub fn operating_point(
    model: &ServedModel,
    shape: &ReplicaShape<'_>,
    traffic: &Traffic,
    load: Load,
    fraction: f64,
) -> OperatingPoint {
    let [input, input_p50, input_p99] = traffic.input;
    let [output, _, output_p99] = traffic.output;
    let memory = replica_memory(model, shape);
    let per_request_tokens = input + output / 2.0;
    let kv_batch_limit = (memory.kv_tokens / per_request_tokens.max(1.0)).max(1.0);
    let max_batch = f64::from(shape.max_batch.max(1)).min(kv_batch_limit);
    let context = input + output / 2.0;
    let prefill_one = prefill_s(model, shape, input, input);
    let prefill_per_token = prefill_s(model, shape, input * 64.0, input) / (input * 64.0);

    let (batch, rate) = match load {
        Load::Offline => {
            let b = max_batch;
            let step = decode_step_s(model, shape, b, context);
            let per_request = output * step / b + input * prefill_per_token;
            (b, 1.0 / per_request)
        }
        Load::StaticBatch(b) => {
            let b = b.min(max_batch);
            let prefill = prefill_s(model, shape, input * b, input);
            let decode = output * decode_step_s(model, shape, b, context);
            (b, b / (prefill + decode))
        }
        Load::Concurrency(c) => {
            let b = c.min(max_batch);
            let step = decode_step_s(model, shape, b, context);
            let per_request = output * step / b + input * prefill_per_token;
            (
                b,
                (1.0 / per_request).min(c / (output * step + prefill_one)),
            )
        }
        Load::Rate(r) => {
            // Little's law: batch = rate × time in decode; iterate to the fixed point.
            let mut b = 1.0_f64;
            for _ in 0..30 {
                let step = decode_step_s(model, shape, b, context);
                let prefill_share = r * input * prefill_per_token;
                let tpot = step / (1.0 - prefill_share).max(1e-3);
                b = (r * output * tpot).clamp(1.0, max_batch);
            }
            (b, r)
        }
    };
    let step = decode_step_s(model, shape, batch, context);
    let prefill_share = (rate * input * prefill_per_token).min(0.999);
    let decode_share = (rate * output * step / batch.max(1.0)).min(1.0);
    let utilisation = prefill_share + decode_share * (1.0 - prefill_share);
    let stable = match load {
        Load::Rate(r) => {
            utilisation < 0.98 && r * output * step / (1.0 - prefill_share) <= max_batch
        }
        _ => true,
    };
    let tpot_p50 = step / (1.0 - prefill_share).max(1e-3);
    let tpot = tpot_p50
        * (1.0 + prefill_s(model, shape, input_p99, input_p99) / (step * 20.0).max(1e-9)).min(2.0);
    let wait = match load {
        Load::Rate(_) => wait_s(prefill_share, prefill_one, fraction),
        Load::Offline | Load::StaticBatch(_) => 0.0,
        Load::Concurrency(_) => 0.0,
    };
    let ttft_p50 =
        prefill_s(model, shape, input_p50, input_p50) + wait_s(prefill_share, prefill_one, 0.5);
    let ttft = prefill_s(model, shape, input_p99.max(input), input_p99.max(input)) + wait;
    let e2e = ttft + output_p99 * tpot;
    OperatingPoint {
        batch,
        requests_per_s: rate,
        output_tokens_per_s: rate * output,
        ttft_p50_s: ttft_p50,
        ttft_s: ttft,
        tpot_p50_s: tpot_p50,
        tpot_s: tpot,
        e2e_s: e2e,
        utilisation,
        stable,
    }
}

/// The steady state of a disaggregated deployment: `prefill_replicas` replicas of `prefill`
/// and `decode_replicas` of `decode` sharing `rate` requests per second, the KV cache crossing
/// `link_bandwidth` bytes/s per request.
#[allow(clippy::too_many_arguments)]
pub fn disaggregated_point(
    model: &ServedModel,
    prefill: &ReplicaShape<'_>,
    decode: &ReplicaShape<'_>,
    prefill_replicas: u32,
    decode_replicas: u32,
    traffic: &Traffic,
    rate: f64,
    link_bandwidth: f64,
    fraction: f64,
) -> OperatingPoint {
    let [input, input_p50, input_p99] = traffic.input;
    let [output, _, output_p99] = traffic.output;
    let prefill_rate = rate / f64::from(prefill_replicas.max(1));
    let decode_rate = rate / f64::from(decode_replicas.max(1));
    let prefill_one = prefill_s(model, prefill, input, input);
    let rho = prefill_rate * prefill_one;
    let transfer = kv_transfer_s(model, input_p99, link_bandwidth);
    let memory = replica_memory(model, decode);
    let context = input + output / 2.0;
    let kv_batch_limit = (memory.kv_tokens / context.max(1.0)).max(1.0);
    let max_batch = f64::from(decode.max_batch.max(1)).min(kv_batch_limit);
    let mut b = 1.0_f64;
    for _ in 0..30 {
        let step = decode_step_s(model, decode, b, context);
        b = (decode_rate * output * step).clamp(1.0, max_batch);
    }
    let step = decode_step_s(model, decode, b, context);
    let stable = rho < 0.98 && decode_rate * output * step <= max_batch;
    let ttft = prefill_s(model, prefill, input_p99, input_p99)
        + wait_s(rho, prefill_one, fraction)
        + transfer;
    let ttft_p50 = prefill_s(model, prefill, input_p50, input_p50)
        + wait_s(rho, prefill_one, 0.5)
        + kv_transfer_s(model, input_p50, link_bandwidth);
    OperatingPoint {
        batch: b,
        requests_per_s: rate,
        output_tokens_per_s: rate * output,
        ttft_p50_s: ttft_p50,
        ttft_s: ttft,
        tpot_p50_s: step,
        tpot_s: step * 1.1,
        e2e_s: ttft + output_p99 * step * 1.1,
        utilisation: rho.max(decode_rate * output * step / max_batch),
        stable,
    }
}
