//! What a pull request changes in the catalogue, line by line, the way Infracost names the price
//! that moved: `specs/pools/xirang.yaml sites[shanghai].node_groups[sh-h100-a].price: 32.0 CNY →
//! 40.0 CNY`. The digests say only *that* the catalogue changed; these lines say what.
//!
//! Both sides' catalogue files are read as YAML and compared leaf by leaf; a list item with a
//! `name` (or `id`) is named by it, so a reordered list or an added site reads as such. A file
//! that does not parse on one side is left to the diagnostics. A site's calibration
//! (`calibration/<pool>-<site>.yaml`, written by `loam calibrate --fit`) is named by what a
//! reviewer weighs: the factors that moved and the runs behind them.

use super::side::Side;
use loam_compiler::calibrate::site::{
    DeviceCalibration, EngineCalibration, SiteCalibration, parse,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The most changed leaves listed (the rest are counted).
pub const MOST: usize = 8;

/// The catalogue's changes between the sides, one line each, at most [`MOST`] and then a count
/// of the rest; empty when the catalogue did not change.
pub fn lines(base: &Side, head: &Side) -> Vec<String> {
    if base.catalogue_digest.is_some() && base.catalogue_digest == head.catalogue_digest {
        return Vec::new();
    }
    let (old, new) = (files(base), files(head));
    let names: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let mut found = Vec::new();
    for name in names {
        if let Some(lines) = calibration_lines(old.get(name), new.get(name)) {
            found.extend(lines.into_iter().map(|l| format!("{name} {l}")));
            continue;
        }
        match (old.get(name), new.get(name)) {
            (Some(_), None) => found.push(format!("{name} removed")),
            (None, Some(_)) => found.push(format!("{name} added")),
            (Some(a), Some(b)) if a != b => {
                let (Ok(a), Ok(b)) = (
                    serde_saphyr::from_str::<Value>(a),
                    serde_saphyr::from_str::<Value>(b),
                ) else {
                    continue;
                };
                let mut leaves = Vec::new();
                walk(&a, &b, "", &mut leaves);
                found.extend(leaves.into_iter().map(|l| format!("{name} {l}")));
            }
            _ => {}
        }
    }
    if found.len() > MOST {
        let more = found.len() - MOST;
        found.truncate(MOST);
        found.push(format!("… and {more} more"));
    }
    found
}

/// The catalogue files of a side (the sources that are not spec files), by name.
fn files(side: &Side) -> BTreeMap<String, String> {
    let specs: BTreeSet<&str> = side.specs.files.iter().map(String::as_str).collect();
    side.specs
        .sources
        .iter()
        .filter(|(_, f)| !specs.contains(f.name.as_str()))
        .map(|(_, f)| (f.name.clone(), f.text.clone()))
        .collect()
}

/// A calibration file's changes, one line per device type whose factors or runs changed:
/// `calibration of shanghai H100_SXM: gemm 1 → 0.92 (3 runs, 2026-12-01 to 2026-12-03, ±6.1 %)`,
/// then one per serving engine whose efficiency or runs changed.
/// `None` when either side is not a calibration file that parses (then the file is compared as
/// YAML, or left to the diagnostics).
fn calibration_lines(old: Option<&String>, new: Option<&String>) -> Option<Vec<String>> {
    let read = |text: Option<&String>| -> Option<Option<SiteCalibration>> {
        match text {
            None => Some(None),
            Some(t) => parse(t).ok().map(Some),
        }
    };
    let (old, new) = (read(old)?, read(new)?);
    let any = new.as_ref().or(old.as_ref())?;
    let (pool, site) = (any.pool.clone(), any.site.clone());
    let devices =
        |c: &Option<SiteCalibration>| c.as_ref().map(|c| c.devices.clone()).unwrap_or_default();
    let (before, after) = (devices(&old), devices(&new));
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut lines = Vec::new();
    for device in names {
        let was = before.get(device);
        let is = after.get(device);
        if was == is {
            continue;
        }
        // The multipliers are 1 and the fixed seconds per step 0 in the shipped model.
        let factor = |d: Option<&DeviceCalibration>, f: fn(&DeviceCalibration) -> f64, shipped| {
            d.map_or(shipped, f)
        };
        let mut moved: Vec<String> = [
            (
                "gemm",
                (|d: &DeviceCalibration| d.gemm) as fn(&DeviceCalibration) -> f64,
            ),
            ("scale-out", |d: &DeviceCalibration| d.scale_out),
            ("scale-up", |d: &DeviceCalibration| d.scale_up),
            ("attention", |d: &DeviceCalibration| d.attention),
        ]
        .into_iter()
        .map(|(label, f)| (label, f, 1.0, ""))
        .chain([(
            "fixed",
            (|d: &DeviceCalibration| d.fixed_s) as fn(&DeviceCalibration) -> f64,
            0.0,
            " s per step",
        )])
        .filter_map(|(label, f, shipped, unit)| {
            let (a, b) = (factor(was, f, shipped), factor(is, f, shipped));
            (a != b).then(|| format!("{label} {} → {}{unit}", number(a), number(b)))
        })
        .collect();
        if moved.is_empty() {
            moved.push("factors unchanged".into());
        }
        let basis = match is {
            Some(d) => format!(
                "{} run{}, {} to {}, ±{} %",
                d.runs,
                if d.runs == 1 { "" } else { "s" },
                d.first_run,
                d.last_run,
                number(d.throughput_uncertainty * 100.0)
            ),
            None => "removed: the shipped model again".into(),
        };
        lines.push(format!(
            "calibration of {pool} {site} {device}: {} ({basis})",
            moved.join(", ")
        ));
    }
    let engines =
        |c: &Option<SiteCalibration>| c.as_ref().map(|c| c.serving.clone()).unwrap_or_default();
    let (before, after) = (engines(&old), engines(&new));
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    for engine in names {
        let (was, is) = (before.get(engine), after.get(engine));
        if was == is {
            continue;
        }
        let efficiency = |e: Option<&EngineCalibration>| e.map_or(1.0, |e| e.efficiency);
        let (a, b) = (efficiency(was), efficiency(is));
        let moved = if a == b {
            "efficiency unchanged".to_string()
        } else {
            format!("efficiency {} → {}", number(a), number(b))
        };
        let basis = match is {
            Some(e) => format!(
                "{} serving run{}, {} to {}, ±{} %",
                e.runs,
                if e.runs == 1 { "" } else { "s" },
                e.first_run,
                e.last_run,
                number(e.throughput_uncertainty * 100.0)
            ),
            None => "removed: the shipped model again".into(),
        };
        lines.push(format!(
            "serving calibration of {pool} {site} {engine}: {moved} ({basis})"
        ));
    }
    Some(lines)
}

/// A factor or a percentage as people read it: at most four decimals, no trailing zeros.
fn number(value: f64) -> String {
    let text = format!("{value:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

/// A scalar as the catalogue writes it.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "nothing".into(),
        other => {
            let text = other.to_string();
            if text.chars().count() > 60 {
                format!("{}…", text.chars().take(60).collect::<String>())
            } else {
                text
            }
        }
    }
}

/// A list item's name: its `name` or `id`.
fn item_name(value: &Value) -> Option<String> {
    let map = value.as_object()?;
    ["name", "id"]
        .iter()
        .find_map(|k| map.get(*k).and_then(Value::as_str))
        .map(str::to_string)
}

/// The leaves that differ between `a` (base) and `b` (head) under `path`.
fn walk(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    if a == b {
        return;
    }
    let join = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                match (x.get(key), y.get(key)) {
                    (Some(va), Some(vb)) => walk(va, vb, &join(key), out),
                    (Some(_), None) => out.push(format!("{} removed", join(key))),
                    (None, Some(vb)) => out.push(format!("{}: {} (new)", join(key), scalar(vb))),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            let named = |items: &Vec<Value>| -> Option<BTreeMap<String, Value>> {
                items
                    .iter()
                    .map(|v| item_name(v).map(|n| (n, v.clone())))
                    .collect()
            };
            match (named(x), named(y)) {
                (Some(nx), Some(ny)) if nx.len() == x.len() && ny.len() == y.len() => {
                    let names: BTreeSet<&String> = nx.keys().chain(ny.keys()).collect();
                    for name in names {
                        let at = format!("{path}[{name}]");
                        match (nx.get(name), ny.get(name)) {
                            (Some(va), Some(vb)) => walk(va, vb, &at, out),
                            (Some(_), None) => out.push(format!("{at} removed")),
                            (None, Some(_)) => out.push(format!("{at} added")),
                            (None, None) => {}
                        }
                    }
                }
                _ if x.len() == y.len() => {
                    for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                        walk(va, vb, &format!("{path}[{i}]"), out);
                    }
                }
                _ => out.push(format!("{path}: {} → {} items", x.len(), y.len())),
            }
        }
        _ => out.push(format!("{path}: {} → {}", scalar(a), scalar(b))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves(a: &str, b: &str) -> Vec<String> {
        let (a, b): (Value, Value) = (
            serde_saphyr::from_str(a).unwrap(),
            serde_saphyr::from_str(b).unwrap(),
        );
        let mut out = Vec::new();
        walk(&a, &b, "", &mut out);
        out
    }

    #[test]
    fn a_price_is_named_by_its_site_and_node_group() {
        let base = "sites:\n  - name: shanghai\n    node_groups:\n      - name: sh-h100-a\n        price: 32.0 CNY\n      - name: sh-l40s\n        price: 9.0 CNY\n";
        let head = base.replace("32.0 CNY", "40.0 CNY");
        assert_eq!(
            leaves(base, &head),
            ["sites[shanghai].node_groups[sh-h100-a].price: 32.0 CNY → 40.0 CNY"]
        );
    }

    const CALIBRATION: &str = "pool: xirang\nsite: shanghai\ndevices:\n  H100_SXM:\n    runs: 3\n    run_ids: [a, b, c]\n    first_run: \"2026-12-01\"\n    last_run: \"2026-12-03\"\n    fitted: [gemm]\n    gemm: 0.9200\n    scale_out: 1.0000\n    scale_up: 1.0000\n    throughput_uncertainty: 0.0610\n    median_abs_error_pct: 1.2\n";

    #[test]
    fn a_calibration_is_named_by_the_factors_that_moved_and_the_runs_behind_them() {
        let added = calibration_lines(None, Some(&CALIBRATION.to_string())).unwrap();
        assert_eq!(
            added,
            [
                "calibration of xirang shanghai H100_SXM: gemm 1 → 0.92 (3 runs, 2026-12-01 to 2026-12-03, ±6.1 %)"
            ]
        );
        let refit = CALIBRATION
            .replace("gemm: 0.9200", "gemm: 0.9000")
            .replace("runs: 3", "runs: 4")
            .replace("2026-12-03", "2026-12-04");
        assert_eq!(
            calibration_lines(Some(&CALIBRATION.to_string()), Some(&refit)).unwrap(),
            [
                "calibration of xirang shanghai H100_SXM: gemm 0.92 → 0.9 (4 runs, 2026-12-01 to 2026-12-04, ±6.1 %)"
            ]
        );
        assert_eq!(
            calibration_lines(Some(&CALIBRATION.to_string()), None).unwrap(),
            [
                "calibration of xirang shanghai H100_SXM: gemm 0.92 → 1 (removed: the shipped model again)"
            ]
        );
        // A fixed cost per step, fitted beside the GEMM factor: named in seconds.
        let fixed = CALIBRATION.replace(
            "scale_up: 1.0000\n",
            "scale_up: 1.0000\n    fixed_s: 0.4615\n",
        );
        assert_eq!(
            calibration_lines(Some(&CALIBRATION.to_string()), Some(&fixed)).unwrap(),
            [
                "calibration of xirang shanghai H100_SXM: fixed 0 → 0.4615 s per step (3 runs, 2026-12-01 to 2026-12-03, ±6.1 %)"
            ]
        );
        // An attention factor, fitted from fifteen runs: a multiplier like the others.
        let attention = CALIBRATION.replace(
            "scale_up: 1.0000\n",
            "scale_up: 1.0000\n    attention: 0.6193\n",
        );
        assert_eq!(
            calibration_lines(Some(&CALIBRATION.to_string()), Some(&attention)).unwrap(),
            [
                "calibration of xirang shanghai H100_SXM: attention 1 → 0.6193 (3 runs, 2026-12-01 to 2026-12-03, ±6.1 %)"
            ]
        );
        // A serving engine's efficiency, fitted at the site: named with its runs.
        let serving = format!(
            "{CALIBRATION}serving:\n  vllm:\n    runs: 3\n    run_ids: [s1, s2, s3]\n    first_run: \"2026-12-01\"\n    last_run: \"2026-12-03\"\n    efficiency: 0.7452\n    throughput_uncertainty: 0.0956\n    median_abs_error_pct: 5.0\n"
        );
        assert_eq!(
            calibration_lines(Some(&CALIBRATION.to_string()), Some(&serving)).unwrap(),
            [
                "serving calibration of xirang shanghai vllm: efficiency 1 → 0.7452 (3 serving runs, 2026-12-01 to 2026-12-03, ±9.56 %)"
            ]
        );
        // A pool file is not a calibration: compared leaf by leaf as before.
        let pool = "sites:\n  - name: shanghai\n    pue: 1.3\n".to_string();
        assert_eq!(calibration_lines(None, Some(&pool)), None);
    }

    #[test]
    fn a_removed_site_and_a_new_field_are_said_as_such() {
        let base = "sites:\n  - name: shanghai\n    pue: 1.3\n  - name: guiyang\n    pue: 1.2\n";
        let head = "sites:\n  - name: guiyang\n    pue: 1.2\n    carbon: 0.4\n";
        assert_eq!(
            leaves(base, head),
            [
                "sites[guiyang].carbon: 0.4 (new)",
                "sites[shanghai] removed"
            ]
        );
    }
}
