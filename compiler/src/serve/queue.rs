//! Latency at a load: continuous batching's steady state (Little's law over the decode batch,
//! prefill chunks interleaved with decode steps) and the wait for prefill, as percentiles.

use super::fitted::ServeFitted;
use super::model::{
    ReplicaShape, ServedModel, decode_step_s_with, kv_transfer_s, prefill_s_with, replica_memory,
};
use loam_ir::types::Engine;

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

/// Counted: prompt tokens one prefill chunk carries beside the decode batch (the default
/// `max_num_batched_tokens` of vLLM's chunked prefill and TensorRT-LLM's `max_num_tokens`,
/// 8192): the prefill cost per token is that of a full chunk.
pub const PREFILL_CHUNK_TOKENS: f64 = 8192.0;

/// Counted: the utilisation above which a queue is called unstable (its waits diverge as
/// 1/(1−ρ); 0.98 leaves two per cent of headroom).
pub const STABLE_UTILISATION: f64 = 0.98;

/// Counted: fixed-point iterations of the batch under a request rate (the batch converges
/// geometrically; 30 is far past the float's precision at every calibration row).
const RATE_ITERATIONS: usize = 30;

/// Waiting-time quantile at `fraction` of a queue at utilisation `rho` with mean service time
/// `service`: the M/M/1 tail `P(W > t) = ρ·e^{−t(1−ρ)/s}` (a request waits only with
/// probability ρ), so `t = s/(1−ρ)·ln(ρ/(1−p))` above the share that does not wait.
pub fn wait_quantile_s(rho: f64, service: f64, fraction: f64) -> f64 {
    if rho <= 0.0 || service <= 0.0 {
        return 0.0;
    }
    if rho >= 1.0 {
        return f64::INFINITY;
    }
    let miss = (1.0 - fraction).clamp(1e-6, 1.0);
    if rho <= miss {
        return 0.0;
    }
    service / (1.0 - rho) * libm::log(rho / miss)
}

/// Tokens of KV cache the engine sets aside per running sequence: TensorRT-LLM's default
/// scheduler (`GUARANTEED_NO_EVICT`) reserves a request's whole length, the paged engines hold
/// what it has so far, on average half its output.
fn reserved_tokens(engine: Engine, input: f64, output: f64) -> f64 {
    match engine {
        Engine::Trtllm => input + output,
        _ => input + output / 2.0,
    }
}

/// Most sequences that run at once: `max_batch`, and the KV cache that fits.
fn batch_limit(model: &ServedModel, shape: &ReplicaShape<'_>, input: f64, output: f64) -> f64 {
    let memory = replica_memory(model, shape);
    let per_sequence = reserved_tokens(model.engine, input, output).max(1.0);
    f64::from(shape.max_batch.max(1))
        .min(memory.kv_tokens / per_sequence)
        .max(1.0)
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
    operating_point_with(
        model,
        shape,
        &ServeFitted::SHIPPED.with_efficiency(shape.efficiency),
        traffic,
        load,
        fraction,
    )
}

/// [`operating_point`] with explicit fitted constants (what the calibration fit varies).
pub fn operating_point_with(
    model: &ServedModel,
    shape: &ReplicaShape<'_>,
    fitted: &ServeFitted,
    traffic: &Traffic,
    load: Load,
    fraction: f64,
) -> OperatingPoint {
    let [input, input_p50, input_p99] = traffic.input;
    let [output, _, output_p99] = traffic.output;
    let input = input.max(1.0);
    let output = output.max(1.0);
    let max_batch = batch_limit(model, shape, input, output);
    let context = input + output / 2.0;
    let prefill = |tokens: f64, prompt: f64| prefill_s_with(model, shape, fitted, tokens, prompt);
    let step_at = |b: f64| decode_step_s_with(model, shape, fitted, b, context);
    let prefill_one = prefill(input, input);
    let per_token = prefill(PREFILL_CHUNK_TOKENS, input) / PREFILL_CHUNK_TOKENS;
    let unlimited = |batch: f64, rate: f64, ttft: f64, step: f64| {
        let e2e = ttft + output_p99 * step;
        OperatingPoint {
            batch,
            requests_per_s: rate,
            output_tokens_per_s: rate * output,
            ttft_p50_s: ttft,
            ttft_s: ttft,
            tpot_p50_s: step,
            tpot_s: step,
            e2e_s: e2e,
            utilisation: 1.0,
            stable: true,
        }
    };
    match load {
        Load::Offline => {
            let b = max_batch;
            let step = step_at(b);
            let rate = 1.0 / (input * per_token + output * step / b);
            let prefill_share = (rate * input * per_token).min(0.999);
            unlimited(
                b,
                rate,
                prefill(b * input, input),
                step / (1.0 - prefill_share),
            )
        }
        Load::StaticBatch(n) => {
            let n = n.max(1.0);
            let b = n.min(max_batch);
            let waves = n / b;
            let step = step_at(b);
            let first = prefill(b * input, input);
            let wave = first + (output - 1.0).max(0.0) * step;
            let ttft = first + (waves - 1.0).max(0.0) / 2.0 * wave;
            unlimited(b, n / (waves * wave), ttft, step)
        }
        Load::Concurrency(c) => {
            let c = c.max(1.0);
            let b = c.min(max_batch);
            let step = step_at(b);
            let rate = 1.0 / (input * per_token + output * step / b);
            let prefill_share = (rate * input * per_token).min(0.999);
            let tpot = step / (1.0 - prefill_share);
            // Little's law over the closed loop: c requests, each `c / rate` seconds in the
            // system, of which the decode takes `output · tpot`; the rest is waiting for a slot
            // and the prefill.
            let ttft = (c / rate - output * tpot).max(prefill_one);
            unlimited(b, rate, ttft, tpot)
        }
        Load::Rate(r) => {
            let r = r.max(0.0);
            let prefill_share = r * input * per_token;
            let stretch = 1.0 / (1.0 - prefill_share).max(1e-3);
            // Little's law: batch = rate × time in decode; iterate to the fixed point.
            let mut b = 1.0_f64;
            for _ in 0..RATE_ITERATIONS {
                b = (r * output * step_at(b) * stretch).clamp(1.0, max_batch);
            }
            let step = step_at(b);
            let tpot_p50 = step * stretch;
            let decode_share = (r * output * step / b).min(1.0);
            let utilisation = prefill_share + decode_share * (1.0 - prefill_share).max(0.0);
            let stable = utilisation < STABLE_UTILISATION
                && prefill_share < STABLE_UTILISATION
                && r * output * tpot_p50 <= max_batch;
            // A request at the asked percentile decodes beside more prefill chunks: its steps
            // stretch by the prefill share once more.
            let tpot = tpot_p50 * (1.0 + prefill_share.clamp(0.0, 1.0));
            let ttft_p50 = prefill(input_p50, input_p50)
                + wait_quantile_s(prefill_share, prefill_one, 0.5)
                + step;
            let ttft = prefill(input_p99, input_p99)
                + wait_quantile_s(prefill_share, prefill_one, fraction)
                + step;
            OperatingPoint {
                batch: b,
                requests_per_s: r,
                output_tokens_per_s: r * output,
                ttft_p50_s: ttft_p50,
                ttft_s: ttft,
                tpot_p50_s: tpot_p50,
                tpot_s: tpot,
                e2e_s: ttft + output_p99 * tpot,
                utilisation,
                stable,
            }
        }
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
    // Each side at its own site's engine efficiency.
    disaggregated_point_with(
        model,
        [prefill, decode],
        [
            &ServeFitted::SHIPPED.with_efficiency(prefill.efficiency),
            &ServeFitted::SHIPPED.with_efficiency(decode.efficiency),
        ],
        [prefill_replicas, decode_replicas],
        traffic,
        rate,
        link_bandwidth,
        fraction,
    )
}

/// [`disaggregated_point`] with explicit fitted constants for each side (what the calibration
/// fit varies): `[prefill, decode]` shapes, constants and replicas.
#[allow(clippy::too_many_arguments)]
pub fn disaggregated_point_with(
    model: &ServedModel,
    [prefill, decode]: [&ReplicaShape<'_>; 2],
    [prefill_fitted, decode_fitted]: [&ServeFitted; 2],
    [prefill_replicas, decode_replicas]: [u32; 2],
    traffic: &Traffic,
    rate: f64,
    link_bandwidth: f64,
    fraction: f64,
) -> OperatingPoint {
    let [input, input_p50, input_p99] = traffic.input;
    let [output, _, output_p99] = traffic.output;
    let input = input.max(1.0);
    let output = output.max(1.0);
    let prefill_rate = rate / f64::from(prefill_replicas.max(1));
    let decode_rate = rate / f64::from(decode_replicas.max(1));
    let prefill_one = prefill_s_with(model, prefill, prefill_fitted, input, input);
    let per_token = prefill_s_with(model, prefill, prefill_fitted, PREFILL_CHUNK_TOKENS, input)
        / PREFILL_CHUNK_TOKENS;
    let rho = prefill_rate * input * per_token;
    let context = input + output / 2.0;
    let max_batch = batch_limit(model, decode, input, output);
    let mut b = 1.0_f64;
    for _ in 0..RATE_ITERATIONS {
        let step = decode_step_s_with(model, decode, decode_fitted, b, context);
        b = (decode_rate * output * step).clamp(1.0, max_batch);
    }
    let step = decode_step_s_with(model, decode, decode_fitted, b, context);
    let decode_share = decode_rate * output * step / max_batch;
    let stable = rho < STABLE_UTILISATION && decode_rate * output * step <= max_batch;
    let ttft = prefill_s_with(model, prefill, prefill_fitted, input_p99, input_p99)
        + wait_quantile_s(rho, prefill_one, fraction)
        + kv_transfer_s(model, input_p99, link_bandwidth)
        + step;
    let ttft_p50 = prefill_s_with(model, prefill, prefill_fitted, input_p50, input_p50)
        + wait_quantile_s(rho, prefill_one, 0.5)
        + kv_transfer_s(model, input_p50, link_bandwidth)
        + step;
    OperatingPoint {
        batch: b,
        requests_per_s: rate,
        output_tokens_per_s: rate * output,
        ttft_p50_s: ttft_p50,
        ttft_s: ttft,
        tpot_p50_s: step,
        tpot_s: step,
        e2e_s: ttft + output_p99 * step,
        utilisation: rho.max(decode_share),
        stable,
    }
}
