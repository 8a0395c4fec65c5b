//! One row of a heterogeneous-run CSV (the columns of `tests/data/hetero_runs_calibration.csv`),
//! read leniently: every cell is text, and each part a costing needs is parsed on its own, so a
//! row that cannot be read yields a reason, never an error of the whole file.
//!
//! The formats are the shared file's: `gpu_mix` like `16xRTX-2080 + 8xRTX-3090` or
//! `64xV100-16GB: 8x p3.8xlarge (4 GPU) + 32x p3.2xlarge (1 GPU)`, `stage_layout` like
//! `S0[RTX-3090x8 / RTX-2080x8]:modules 0-11 | S1[Titan-RTXx8]:modules 12-25` (module 0 is the
//! embedding, modules 1 to `layers` the blocks, `layers + 1` the head; ` / ` separates the
//! data-parallel replicas of a stage, which may be different device types).

use crate::cost::transport::Transport;
use loam_ir::types::Precision;

/// The columns whose presence marks a CSV as this kind.
pub(super) const MARKER_COLUMNS: [&str; 3] = ["point_id", "gpu_mix", "stage_layout"];

/// The catalogue id of a device as the shared file names it (`RTX-3090`, `Titan-RTX`,
/// `V100-16GB`, `Quadro RTX8000` …); `None` for a name it does not know.
pub(super) fn catalogue_id(name: &str) -> Option<&'static str> {
    let key: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    let key = key.strip_prefix("nvidia").unwrap_or(&key);
    let key = key.strip_prefix("geforce").unwrap_or(key);
    let key = key.strip_prefix("tesla").unwrap_or(key);
    Some(match key {
        "rtx3090" => "RTX_3090",
        "titanrtx" => "TITAN_RTX",
        "rtx2080" => "RTX_2080",
        // DTFM's p3 instances carry the SXM2 16 GB part.
        "v10016gb" | "v100sxm216gb" => "V100_SXM2_16GB",
        "t4" => "T4",
        "a10" => "A10",
        "rtx8000" | "quadrortx8000" => "QUADRO_RTX_8000",
        "h800" => "H800_SXM",
        "h20" => "H20",
        _ => return None,
    })
}

/// `count x name` at the start of `text` (`8xRTX-3090`, `8x p3.8xlarge`): the count and the
/// rest, trimmed.
fn counted(text: &str) -> Option<(u32, &str)> {
    let text = text.trim();
    let digits = text.chars().take_while(char::is_ascii_digit).count();
    let count = text.get(..digits)?.parse::<u32>().ok().filter(|n| *n > 0)?;
    let rest = text.get(digits..)?.strip_prefix('x')?.trim();
    (!rest.is_empty()).then_some((count, rest))
}

/// `text` without any parenthesised remark (`T4 (GCP EU)` → `T4`).
fn without_remarks(text: &str) -> &str {
    text.split('(').next().unwrap_or(text).trim()
}

/// The devices of a row and, where the mix names them, its node shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct GpuMix {
    /// `(count, device name as written)`.
    pub(super) devices: Vec<(u32, String)>,
    /// `(nodes, devices per node)`, from `8x p3.8xlarge (4 GPU)`; empty when not named.
    pub(super) node_shapes: Vec<(u32, u32)>,
}

/// Reads `gpu_mix`; `Err` says what does not read.
pub(super) fn parse_gpu_mix(text: &str) -> Result<GpuMix, String> {
    let (devices_text, shapes_text) = match text.split_once(':') {
        Some((d, s)) => (d, Some(s)),
        None => (text, None),
    };
    let devices = devices_text
        .split('+')
        .map(|part| {
            counted(part)
                .map(|(n, name)| (n, without_remarks(name).to_string()))
                .ok_or_else(|| format!("`{}` is not `<count>x<device>`", part.trim()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let node_shapes = match shapes_text {
        None => Vec::new(),
        Some(shapes) => shapes
            .split('+')
            .map(|part| {
                let (nodes, rest) = counted(part)
                    .ok_or_else(|| format!("`{}` is not `<count>x <node>`", part.trim()))?;
                let inside = rest
                    .split_once('(')
                    .and_then(|(_, r)| r.split_once(')'))
                    .map(|(inner, _)| inner.trim());
                let per_node = inside
                    .and_then(|inner| inner.split_whitespace().next())
                    .and_then(|n| n.parse::<u32>().ok())
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("`{}` does not say its GPUs per node", part.trim()))?;
                Ok((nodes, per_node))
            })
            .collect::<Result<Vec<_>, String>>()?,
    };
    Ok(GpuMix {
        devices,
        node_shapes,
    })
}

/// One data-parallel replica of a stage: a tensor-parallel group of `devices` devices of one
/// type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ReplicaText {
    /// The device as written (`RTX-3090`).
    pub(super) device: String,
    /// Devices in the replica.
    pub(super) devices: u32,
}

/// One pipeline stage of a published layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StageText {
    /// Its data-parallel replicas, in the order written.
    pub(super) replicas: Vec<ReplicaText>,
    /// First and last module it holds, inclusive.
    pub(super) modules: [u32; 2],
}

/// Reads a per-stage `stage_layout` (`S0[RTX-3090x2]:modules 0-11 | S1[…]:modules 12-25`) and
/// checks that its stages hold modules `0..=layers + 1` once each, in order; `Err` says what is
/// wrong.
pub(super) fn parse_stage_layout(text: &str, layers: u32) -> Result<Vec<StageText>, String> {
    let mut stages = Vec::new();
    for (k, part) in text.split('|').enumerate() {
        let part = part.trim();
        let bad = |what: &str| format!("stage {k} (`{part}`): {what}");
        let label = format!("S{k}[");
        let body = part
            .strip_prefix(&label)
            .ok_or_else(|| bad(&format!("expected `S{k}[`")))?;
        let (replicas_text, rest) = body.split_once(']').ok_or_else(|| bad("no closing `]`"))?;
        let replicas = replicas_text
            .split('/')
            .map(|r| {
                let r = r.trim();
                // The count follows the last `x`: `Titan-RTXx8`.
                let (device, count) = r
                    .rsplit_once('x')
                    .ok_or_else(|| bad(&format!("replica `{r}` is not `<device>x<count>`")))?;
                let devices = count
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| bad(&format!("replica `{r}` has no device count")))?;
                let device = device.trim();
                if device.is_empty() {
                    return Err(bad(&format!("replica `{r}` names no device")));
                }
                Ok(ReplicaText {
                    device: device.to_string(),
                    devices,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let range = rest
            .trim()
            .strip_prefix(':')
            .map(str::trim)
            .and_then(|r| r.strip_prefix("modules"))
            .ok_or_else(|| bad("expected `:modules <first>-<last>`"))?;
        let (first, last) = range
            .trim()
            .split_once('-')
            .and_then(|(a, b)| Some((a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?)))
            .ok_or_else(|| bad("the module range does not read"))?;
        stages.push(StageText {
            replicas,
            modules: [first, last],
        });
    }
    let mut next = 0;
    for (k, stage) in stages.iter().enumerate() {
        let [first, last] = stage.modules;
        if first != next || last < first {
            return Err(format!(
                "stage {k} holds modules {first}-{last}, expected a range from {next}"
            ));
        }
        next = last + 1;
    }
    if next != layers + 2 {
        return Err(format!(
            "the stages hold modules 0-{}, the model has 0-{} (embedding, {layers} blocks, head)",
            next.saturating_sub(1),
            layers + 1
        ));
    }
    Ok(stages)
}

/// The training precision the `precision` column states (`fp16`, `fp32 likely (…)`), and
/// whether the source only said it was likely.
pub(super) fn parse_precision(text: &str) -> Option<(Precision, bool)> {
    let word: String = text
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    let precision = Precision::from_keyword(&word)?;
    Some((precision, text.contains("likely")))
}

/// The transport NCCL runs between nodes on the network `text` describes: RDMA where it names
/// an RDMA fabric (InfiniBand, RoCE, EFA), else TCP sockets, which NCCL falls back to whenever a
/// node has no RDMA device.
pub(super) fn stated_transport(text: &str) -> Transport {
    let lower = text.to_ascii_lowercase();
    let rdma = ["infiniband", "roce", "efa", "rdma"].iter().any(|fabric| {
        lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w == *fabric)
    });
    if rdma {
        Transport::Rdma
    } else {
        Transport::Sockets
    }
}

/// The first bandwidth the text states in bits per second (`10 Gbps`, `0.45 Gb/s`, `100 Gbit/s`)
/// or bytes per second (`25 GB/s`), in bytes per second.
pub(super) fn stated_bandwidth(text: &str) -> Option<f64> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == '(' || c == ')')
        .filter(|w| !w.is_empty())
        .collect();
    for (i, word) in words.iter().enumerate() {
        // The unit either follows the number (`10 Gbps`) or is glued to it (`10Gbps`).
        let digits = word
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .count();
        let Some(value) = word.get(..digits).and_then(|n| n.parse::<f64>().ok()) else {
            continue;
        };
        let glued = word.get(digits..).unwrap_or("");
        let unit = if glued.is_empty() {
            words.get(i + 1).copied().unwrap_or("")
        } else {
            glued
        };
        let bytes_per_s = match unit {
            "Gbps" | "Gb/s" | "Gbit/s" => value * 1e9 / 8.0,
            "Mbps" | "Mb/s" => value * 1e6 / 8.0,
            "GB/s" => value * 1e9,
            _ => continue,
        };
        if bytes_per_s > 0.0 {
            return Some(bytes_per_s);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stage_layouts_with_mixed_replicas() {
        let text =
            "S0[RTX-3090x8 / RTX-2080x8]:modules 0-11 | S1[Titan-RTXx8 / RTX-2080x8]:modules 12-25";
        let stages = parse_stage_layout(text, 24).unwrap();
        assert_eq!(stages.len(), 2);
        assert_eq!(stages[0].modules, [0, 11]);
        assert_eq!(stages[1].modules, [12, 25]);
        assert_eq!(
            stages[1].replicas,
            vec![
                ReplicaText {
                    device: "Titan-RTX".into(),
                    devices: 8
                },
                ReplicaText {
                    device: "RTX-2080".into(),
                    devices: 8
                }
            ]
        );
        let one = parse_stage_layout("S0[Titan-RTXx2 / RTX-3090x2]:modules 0-25", 24).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].replicas.len(), 2);
    }

    #[test]
    fn garbled_stage_layouts_say_what_is_wrong() {
        for (text, needle) in [
            (
                "S0[RTX-3090x8]:modules 0-11 | S1[RTX-2080x8]:modules 13-25",
                "expected a range from 12",
            ),
            ("S0[RTX-3090x8]:modules 0-11", "the model has 0-25"),
            ("S0[RTX-3090]:modules 0-25", "is not `<device>x<count>`"),
            ("S0[RTX-3090x8:modules 0-25", "no closing"),
            ("S1[RTX-3090x8]:modules 0-25", "expected `S0[`"),
            ("S0[RTX-3090x8]:layers 0-25", "expected `:modules"),
            ("S0[RTX-3090x8]:modules zero-25", "does not read"),
            ("S0[x8]:modules 0-25", "names no device"),
            ("", "expected `S0[`"),
        ] {
            let err = parse_stage_layout(text, 24).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn reads_gpu_mixes_and_node_shapes() {
        let mix = parse_gpu_mix("16xRTX-2080 + 8xRTX-3090 + 8xTitan-RTX").unwrap();
        assert_eq!(mix.devices[0], (16, "RTX-2080".to_string()));
        assert!(mix.node_shapes.is_empty());
        let dtfm =
            parse_gpu_mix("64xV100-16GB: 8x p3.8xlarge (4 GPU) + 32x p3.2xlarge (1 GPU)").unwrap();
        assert_eq!(dtfm.devices, vec![(64, "V100-16GB".to_string())]);
        assert_eq!(dtfm.node_shapes, vec![(8, 4), (32, 1)]);
        let erben = parse_gpu_mix("1xQuadro RTX8000 (on-prem) + 8xT4 (GCP EU)").unwrap();
        assert_eq!(erben.devices[0].1, "Quadro RTX8000");
        assert_eq!(erben.devices[1], (8, "T4".to_string()));
        assert!(parse_gpu_mix("lots of GPUs").is_err());
        assert!(parse_gpu_mix("8xV100: 2x p3 (four GPU)").is_err());
    }

    #[test]
    fn names_map_to_catalogue_ids() {
        for (name, id) in [
            ("RTX-3090", "RTX_3090"),
            ("Titan-RTX", "TITAN_RTX"),
            ("RTX-2080", "RTX_2080"),
            ("V100-16GB", "V100_SXM2_16GB"),
            ("T4", "T4"),
            ("A10", "A10"),
            ("Quadro RTX8000", "QUADRO_RTX_8000"),
            ("RTX8000", "QUADRO_RTX_8000"),
            ("H800", "H800_SXM"),
            ("H20", "H20"),
        ] {
            assert_eq!(catalogue_id(name), Some(id), "{name}");
        }
        assert_eq!(catalogue_id("RTX-4090"), None);
    }

    #[test]
    fn reads_precisions_and_bandwidths() {
        assert_eq!(
            parse_precision("fp32 likely (no --fp16/--bf16 in the launch script)"),
            Some((Precision::Fp32, true))
        );
        assert_eq!(parse_precision("fp16"), Some((Precision::Fp16, false)));
        assert_eq!(parse_precision(""), None);
        assert_eq!(parse_precision("mixed"), None);
        assert_eq!(
            stated_bandwidth("10 Gbps inter-instance (artifact)"),
            Some(10e9 / 8.0)
        );
        assert_eq!(
            stated_bandwidth("single-stream TCP RTX8000->EU T4 0.45 Gb/s, ICMP 16.73 ms"),
            Some(0.45e9 / 8.0)
        );
        assert_eq!(
            stated_bandwidth("Lambda VMs: 3.3 Gb/s, 0.3 ms"),
            Some(3.3e9 / 8.0)
        );
        assert_eq!(stated_bandwidth("not stated in artifact"), None);
        assert_eq!(
            stated_transport("InfiniBand (bandwidth not retrieved)"),
            Transport::Rdma
        );
        assert_eq!(stated_transport("100 Gb/s RoCE"), Transport::Rdma);
        assert_eq!(
            stated_transport("10 Gbps inter-instance (artifact)"),
            Transport::Sockets
        );
        // A word that merely contains a fabric's letters is not one.
        assert_eq!(
            stated_transport("Lambda refabricated VMs"),
            Transport::Sockets
        );
        assert_eq!(
            stated_bandwidth("InfiniBand (bandwidth not retrieved)"),
            None
        );
    }
}
