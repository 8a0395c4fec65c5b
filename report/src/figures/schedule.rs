//! The pipeline schedule: the 1F1B (or interleaved 1F1B) timeline of every pipeline rank for the
//! first micro-batches of a step, simulated from the plan's own stage times, with forward,
//! backward, tensor-parallel communication, the bubble and the gradient reduction visible.

use crate::figure::{Figure, Kind, Table, palette};
use crate::svg::{Anchor, FONT, Scale, Svg, text_width, ticks};
use loam_ir::display::decimals;
use loam_ir::plan::Plan;

/// One pipeline rank as drawn.
#[derive(Debug, Clone)]
struct Rank {
    label: String,
    /// Seconds of one chunk's forward and backward for one micro-batch.
    chunk_s: f64,
    /// The forward's share of `chunk_s`.
    forward_share: f64,
    /// Of those, the share that is tensor-parallel communication.
    comm_share: f64,
    /// Index of the device type (colour).
    device: usize,
    sensitive: bool,
    /// The ops of its stages, and the sensitive ones with their precision.
    ops: String,
}

/// One operation in the timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Op {
    forward: bool,
    chunk: usize,
    micro_batch: usize,
    start: f64,
    end: f64,
}

/// The order in which rank `r` of `p` runs its forwards and backwards of `n` micro-batches over
/// `v` chunks: Megatron-LM's 1F1B, interleaved when `v > 1` (warm-up forwards, then one forward
/// and one backward in turn, then the remaining backwards).
fn order(r: usize, p: usize, v: usize, n: usize) -> Vec<(bool, usize, usize)> {
    let map = |k: usize, forward: bool| {
        let group = k / (p * v);
        let within = k % (p * v);
        let chunk = if forward {
            within / p
        } else {
            v - 1 - within / p
        };
        (forward, chunk, group * p + within % p)
    };
    let total = n * v;
    let warmup = if v == 1 {
        (p - r - 1).min(n)
    } else {
        ((p - r - 1) * 2 + (v - 1) * p).min(total)
    };
    let mut out = Vec::with_capacity(total * 2);
    let (mut f, mut b) = (0, 0);
    while f < warmup {
        out.push(map(f, true));
        f += 1;
    }
    while f < total {
        out.push(map(f, true));
        f += 1;
        out.push(map(b, false));
        b += 1;
    }
    while b < total {
        out.push(map(b, false));
        b += 1;
    }
    out
}

/// Start and end of every op of every rank; `None` if the order deadlocks (it does not for the
/// orders above; the check keeps a bug from looping).
fn simulate(ranks: &[Rank], v: usize, n: usize) -> Option<Vec<Vec<Op>>> {
    let p = ranks.len();
    let orders: Vec<Vec<(bool, usize, usize)>> = (0..p).map(|r| order(r, p, v, n)).collect();
    let mut done: Vec<Vec<Op>> = vec![Vec::new(); p];
    let finished = |done: &[Vec<Op>], rank: usize, forward: bool, chunk: usize, mb: usize| {
        done.get(rank).and_then(|ops| {
            ops.iter()
                .find(|o| o.forward == forward && o.chunk == chunk && o.micro_batch == mb)
                .map(|o| o.end)
        })
    };
    let mut progress = true;
    while progress {
        progress = false;
        for r in 0..p {
            let position = done.get(r).map_or(0, Vec::len);
            let Some(&(forward, chunk, mb)) = orders.get(r).and_then(|o| o.get(position)) else {
                continue;
            };
            let dependency = if forward {
                if r > 0 {
                    Some((r - 1, true, chunk))
                } else if chunk > 0 {
                    Some((p - 1, true, chunk - 1))
                } else {
                    None
                }
            } else if r + 1 < p {
                Some((r + 1, false, chunk))
            } else if chunk + 1 < v {
                Some((0, false, chunk + 1))
            } else {
                Some((r, true, chunk))
            };
            let ready = match dependency {
                None => Some(0.0),
                Some((dr, df, dc)) => finished(&done, dr, df, dc, mb),
            };
            let Some(ready) = ready else { continue };
            let rank = ranks.get(r)?;
            let ops = done.get_mut(r)?;
            let free = ops.last().map_or(0.0, |o| o.end);
            let start = ready.max(free);
            let share = if forward {
                rank.forward_share
            } else {
                1.0 - rank.forward_share
            };
            ops.push(Op {
                forward,
                chunk,
                micro_batch: mb,
                start,
                end: start + rank.chunk_s * share,
            });
            progress = true;
        }
    }
    let complete = done.iter().zip(&orders).all(|(d, o)| d.len() == o.len());
    complete.then_some(done)
}

/// One pipeline to draw: a plan's, or one group's in a plan that splits the batch over two
/// groups (each with its own pipeline).
struct Pipeline {
    /// A heading when the figure draws more than one.
    title: Option<String>,
    ranks: Vec<Rank>,
    /// Chunks per rank.
    v: usize,
    /// Micro-batches per step.
    m: usize,
    /// Micro-batches drawn.
    n: usize,
    timeline: Vec<Vec<Op>>,
}

/// The ranks of the pipeline laid out by `layout` over `stages`, `m` micro-batches per step,
/// each rank at the times its stages state (the cost model's own: format 1.13 gives them to
/// every plan); `None` when a stage states none.
fn pipeline(
    plan: &Plan,
    title: Option<String>,
    layout: &loam_ir::plan::LayoutIr,
    stages: &[loam_ir::plan::StageIr],
    m: usize,
    devices: &[&str],
) -> Option<Pipeline> {
    let p = layout.pipeline.max(1) as usize;
    let v = layout.virtual_stages.max(1) as usize;
    let ranks: Vec<Rank> = (0..p)
        .map(|r| {
            let chunks: Vec<_> = stages
                .iter()
                .filter(|s| s.rank.map_or(s.index as usize, |k| k as usize) == r)
                .collect();
            let group = chunks
                .first()
                .and_then(|s| plan.groups.get(s.group as usize));
            let device = group.map_or("", |g| g.device.as_str());
            let per_mb: f64 = chunks
                .iter()
                .map(|s| s.micro_batch_s)
                .sum::<Option<f64>>()?;
            let comm: f64 = chunks
                .iter()
                .map(|s| s.tensor_comm_s)
                .sum::<Option<f64>>()?;
            let forward: f64 = chunks.iter().map(|s| s.forward_s).sum::<Option<f64>>()?;
            if chunks.is_empty() || per_mb.is_nan() {
                return None;
            }
            let blocks: u64 = chunks
                .iter()
                .map(|s| s.layers[1].saturating_sub(s.layers[0]))
                .sum();
            let sensitive = chunks.iter().any(|s| !s.sensitive_ops.is_empty());
            let (forward_share, share) = if per_mb > 0.0 {
                (forward / per_mb, comm / per_mb)
            } else {
                (0.0, 0.0)
            };
            let mut label = if v > 1 {
                format!("rank {r} · {device} · {blocks} blocks in {v} chunks")
            } else if p > 1 {
                format!("stage {r} · {device} · {blocks} blocks")
            } else {
                format!("{device} · {blocks} blocks")
            };
            if sensitive {
                label.push_str(" ◆");
            }
            let mut ops: Vec<String> = chunks.iter().map(|s| s.ops.join(", ")).collect();
            let sensitive_ops: Vec<String> = chunks
                .iter()
                .flat_map(|s| s.sensitive_ops.iter().cloned())
                .collect();
            if !sensitive_ops.is_empty() {
                ops.push(format!("sensitive: {}", sensitive_ops.join(", ")));
            }
            Some(Rank {
                label,
                ops: ops.join("; "),
                chunk_s: per_mb / v as f64,
                forward_share,
                comm_share: share,
                device: devices.iter().position(|d| *d == device).unwrap_or(0),
                sensitive,
            })
        })
        .collect::<Option<_>>()?;
    // A few micro-batches: enough for the steady state to show between fill and drain (long
    // pipelines fill for long; one round of p micro-batches shows their shape).
    let rounds = if p > 8 { 1 } else { 2 };
    let mut n = m.min((rounds * p).max(4));
    if v > 1 {
        n = (n / p).max(1) * p;
    }
    let timeline = simulate(&ranks, v, n)?;
    Some(Pipeline {
        title,
        ranks,
        v,
        m,
        n,
        timeline,
    })
}

/// The pipelines of a plan: one, or one per group when the groups split the batch (format 1.9
/// plans state each group's layout and stages).
fn pipelines(plan: &Plan, devices: &[&str]) -> Option<Vec<Pipeline>> {
    let layout = plan.layout.as_ref()?;
    let per_group = plan.groups.len() > 1
        && plan
            .groups
            .iter()
            .all(|g| g.layout.is_some() && g.sequences_per_step.is_some() && !g.stages.is_empty());
    if per_group {
        // Both groups run the step's compute side by side, each on its own share of the batch.
        return plan
            .groups
            .iter()
            .map(|g| {
                let l = g.layout.as_ref()?;
                let m = (g.sequences_per_step? / (l.data.max(1) * l.micro_batch.max(1))).max(1);
                let title = format!(
                    "{} × {} ({}): {} sequences per step",
                    g.devices,
                    g.device,
                    loam_ir::display::layout_degrees(*l),
                    g.sequences_per_step?
                );
                pipeline(plan, Some(title), l, &g.stages, m as usize, devices)
            })
            .collect();
    }
    let m = (plan.workload.global_batch / (layout.data.max(1) * layout.micro_batch.max(1))).max(1);
    Some(vec![pipeline(
        plan,
        None,
        layout,
        &plan.stages,
        m as usize,
        devices,
    )?])
}

/// The figure, for a plan with a layout and an estimate.
pub fn figure(id: &str, plan: &Plan) -> Option<Figure> {
    let e = plan.estimate.as_ref()?;
    let b = &e.breakdown_s;
    let mut devices: Vec<&str> = Vec::new();
    for g in &plan.groups {
        if !devices.contains(&g.device.as_str()) {
            devices.push(&g.device);
        }
    }
    let pipes = pipelines(plan, &devices)?;
    let reduce_s = b.data_comm + b.other;
    let span = pipes
        .iter()
        .flat_map(|pipe| pipe.timeline.iter())
        .map(|ops| ops.last().map_or(0.0, |o| o.end))
        .fold(0.0, f64::max)
        + reduce_s;
    let width = 760.0;
    let label_w = pipes
        .iter()
        .flat_map(|pipe| pipe.ranks.iter())
        .map(|r| text_width(&r.label, FONT) * 1.1)
        .fold(0.0, f64::max)
        + 20.0;
    let left = 12.0 + label_w;
    let right = width - 16.0;
    let mut svg = Svg::new(id, width, 10.0);
    // Legend.
    let mut x = 12.0;
    let mut y = 16.0;
    let bubble = svg.hatch(palette::GRID);
    let mut items: Vec<(String, String)> = Vec::new();
    for (k, d) in devices.iter().enumerate() {
        let (light, dark) = palette::device(k);
        let suffix = if devices.len() > 1 {
            format!(" on {d}")
        } else {
            String::new()
        };
        items.push((light.to_string(), format!("forward{suffix}")));
        items.push((dark.to_string(), format!("backward{suffix}")));
    }
    items.push((palette::INK.to_string(), "tensor comm".to_string()));
    items.push((bubble.clone(), "idle (bubble)".to_string()));
    items.push((
        palette::PURPLE.to_string(),
        "gradient reduce + optimizer".to_string(),
    ));
    for (fill, name) in &items {
        let w = 17.0 + text_width(name, FONT) + 14.0;
        if x + w > width - 12.0 {
            x = 12.0;
            y += 20.0;
        }
        x = svg.legend_item(x, y, fill, name);
    }
    let t = ticks(0.0, span.max(f64::EPSILON), 6);
    let scale = Scale {
        domain: (0.0, t.last().copied().unwrap_or(span)),
        range: (left, right),
    };
    let mut top = y + 16.0;
    let rows: usize = pipes.iter().map(|pipe| pipe.ranks.len()).sum();
    // Long pipelines get thin rows, so the figure stays under a screen high.
    let compact = rows > 16;
    let (row_h, bar_h, label_size) = if compact {
        (16.0, 11.0, 11.0)
    } else {
        (26.0, 18.0, FONT)
    };
    for pipe in &pipes {
        if let Some(title) = &pipe.title {
            svg.text_styled(
                12.0,
                top + 12.0,
                Anchor::Start,
                FONT,
                true,
                palette::INK,
                title,
            );
            top += 22.0;
        }
        for (r, (rank, ops)) in pipe.ranks.iter().zip(&pipe.timeline).enumerate() {
            let ry = top + r as f64 * row_h;
            let colour = if rank.sensitive {
                palette::VERMILLION
            } else {
                palette::INK
            };
            svg.text_styled(
                12.0,
                ry + bar_h - 2.0,
                Anchor::Start,
                label_size,
                rank.sensitive,
                colour,
                &rank.label,
            );
            let last = ops.last().map_or(0.0, |o| o.end);
            svg.rect(
                scale.at(0.0),
                ry,
                scale.at(last) - scale.at(0.0),
                bar_h,
                &bubble,
                Some("idle: waiting for the stage before or after"),
            );
            let (light, dark) = palette::device(rank.device);
            for op in ops {
                let x0 = scale.at(op.start);
                let x1 = scale.at(op.end);
                let (fill, what) = if op.forward {
                    (light, "forward")
                } else {
                    (dark, "backward")
                };
                let chunk = if pipe.v > 1 {
                    format!(" chunk {}", op.chunk)
                } else {
                    String::new()
                };
                let tip = format!(
                    "{what} of micro-batch {}{chunk}: {} s",
                    op.micro_batch + 1,
                    decimals(op.end - op.start, 3)
                );
                // A white edge separates ops wide enough to see apart; on narrow ones it
                // would hide the colour.
                let edge = (x1 - x0 >= 4.0).then_some("#fff");
                // Long pipelines draw thousands of ops: no tooltip each (the table has the times),
                // which keeps the page a few hundred kilobytes.
                let tip = (!compact).then_some(tip.as_str());
                svg.rect_styled(x0, ry, x1 - x0, bar_h, fill, edge, tip);
                let comm = (x1 - x0) * rank.comm_share;
                if comm >= 0.5 {
                    svg.rect(
                        x1 - comm,
                        ry + bar_h - 4.0,
                        comm,
                        4.0,
                        palette::INK,
                        Some("tensor-parallel communication"),
                    );
                }
                let number = (op.micro_batch + 1).to_string();
                if !compact && x1 - x0 >= text_width(&number, 10.0) + 4.0 {
                    let colour = if op.forward { palette::INK } else { "#fff" };
                    svg.text_styled(
                        (x0 + x1) / 2.0,
                        ry + 12.0,
                        Anchor::Middle,
                        10.0,
                        false,
                        colour,
                        &number,
                    );
                }
            }
            if reduce_s > 0.0 {
                svg.rect(
                    scale.at(last),
                    ry,
                    scale.at(last + reduce_s) - scale.at(last),
                    bar_h,
                    palette::PURPLE,
                    Some(&format!(
                        "gradient reduction and optimizer step: {} s",
                        decimals(reduce_s, 3)
                    )),
                );
            }
        }
        top += pipe.ranks.len() as f64 * row_h + 6.0;
    }
    let axis_y = top - 4.0;
    let under = svg.bottom_axis(axis_y, &scale, &t, "seconds from the start of the step");
    svg.ensure_height(under);

    let mut table = Table::new(
        &[
            "rank",
            "runs",
            "s per micro-batch",
            "forward s",
            "backward s",
        ],
        &[false, false, true, true, true],
    );
    for pipe in &pipes {
        for rank in &pipe.ranks {
            let per_mb = rank.chunk_s * pipe.v as f64;
            let name = rank.label.trim_end_matches(" ◆");
            table.row(vec![
                pipe.title
                    .as_ref()
                    .map_or_else(|| name.to_string(), |t| format!("{t} · {name}")),
                rank.ops.clone(),
                decimals(per_mb, 3),
                decimals(per_mb * rank.forward_share, 3),
                decimals(per_mb * (1.0 - rank.forward_share), 3),
            ]);
        }
    }
    let bubble_share = if e.step_time_s > 0.0 {
        b.pipeline_bubble / e.step_time_s
    } else {
        0.0
    };
    let sensitive: Vec<String> = plan
        .stages
        .iter()
        .chain(plan.groups.iter().flat_map(|g| g.stages.iter()))
        .flat_map(|s| s.sensitive_ops.iter().cloned())
        .fold(Vec::new(), |mut acc, op| {
            if !acc.contains(&op) {
                acc.push(op);
            }
            acc
        });
    let shown: Vec<String> = pipes
        .iter()
        .map(|pipe| {
            let p = pipe.ranks.len();
            let interleaving = if pipe.v > 1 {
                format!(", interleaved over {} chunks per rank", pipe.v)
            } else {
                String::new()
            };
            if p > 1 {
                format!(
                    "the first {} of {} micro-batches on {p} pipeline stages (1F1B{interleaving})",
                    pipe.n, pipe.m
                )
            } else {
                format!(
                    "the first {} of {} micro-batches with no pipeline",
                    pipe.n, pipe.m
                )
            }
        })
        .collect();
    let mut caption = format!(
        "One step: {}. Hatched gaps are the bubble, stages waiting while the pipeline fills and drains ({} of the whole step); purple is the gradient reduction and optimizer step that ends it.",
        shown.join("; "),
        loam_ir::display::percent(bubble_share)
    );
    if pipes.len() > 1 {
        caption.push_str(" The two groups each take a share of the batch and reduce gradients together; each runs its micro-batches at its own stages' times.");
    }
    if devices.len() > 1 {
        caption.push_str(&format!(
            " Colours tell the device types apart ({}).",
            devices.join(", ")
        ));
    }
    if !sensitive.is_empty() {
        caption.push_str(&format!(
            " ◆ marks where the precision-sensitive ops run ({}).",
            sensitive.join(", ")
        ));
    }
    let desc = pipes
        .iter()
        .flat_map(|pipe| pipe.ranks.iter().map(move |r| (pipe.v, r)))
        .map(|(v, r)| {
            format!(
                "{}: {} s per micro-batch",
                r.label.trim_end_matches(" ◆"),
                decimals(r.chunk_s * v as f64, 3)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some(Figure {
        kind: Kind::Schedule,
        title: "Pipeline schedule".to_string(),
        svg: svg.finish(
            &format!("Pipeline schedule of {}", plan.job),
            &format!("{}. {desc}.", shown.join("; ")),
        ),
        caption,
        legend: Vec::new(),
        table,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks(p: usize) -> Vec<Rank> {
        (0..p)
            .map(|r| Rank {
                label: format!("stage {r}"),
                chunk_s: 3.0,
                forward_share: 1.0 / 3.0,
                comm_share: 0.0,
                device: 0,
                sensitive: false,
                ops: String::new(),
            })
            .collect()
    }

    #[test]
    fn one_f_one_b_has_the_textbook_bubble() {
        // p stages, n micro-batches of 1 s forward and 2 s backward: the step takes
        // (n + p − 1) × 3 s, and the bubble is (p − 1) × 3 s (Narayanan et al. 2021, §2.2).
        for (p, n) in [(4, 8), (2, 4), (6, 12)] {
            let t = simulate(&ranks(p), 1, n).unwrap();
            let end = t
                .iter()
                .map(|ops| ops.last().unwrap().end)
                .fold(0.0, f64::max);
            assert!(
                (end - ((n + p - 1) as f64) * 3.0).abs() < 1e-9,
                "p={p} n={n}: {end}"
            );
        }
    }

    #[test]
    fn interleaving_shrinks_the_bubble() {
        let p = 4;
        let n = 8;
        let plain = simulate(&ranks(p), 1, n).unwrap();
        let mut chunked = ranks(p);
        for r in &mut chunked {
            r.chunk_s /= 2.0;
        }
        let interleaved = simulate(&chunked, 2, n).unwrap();
        let end = |t: &Vec<Vec<Op>>| {
            t.iter()
                .map(|ops| ops.last().unwrap().end)
                .fold(0.0, f64::max)
        };
        assert!(
            end(&interleaved) < end(&plain),
            "{} vs {}",
            end(&interleaved),
            end(&plain)
        );
        // Every op of every chunk and micro-batch runs once.
        assert!(interleaved.iter().all(|ops| ops.len() == 2 * 2 * n));
    }
}
