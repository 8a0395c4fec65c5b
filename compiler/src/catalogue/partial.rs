//! A catalogue with errors, loaded without its broken files, so that a broken pool blocks only
//! the specs that use it (gitops review finding 9: a pool file left with four quota errors made
//! every spec of every pool "does not check").
//!
//! The broken files are the files of the whole load's errors. They are left out and the rest is
//! loaded again; what fails only because something is gone (a pool whose node groups use a
//! device whose file was left out, a site calibration of a pool left out) is left out in turn,
//! until the rest loads clean. Each round leaves out at least one more file, so there are at
//! most as many rounds as files. A broken vendor or calibration file changes figures of devices
//! or sites that still load (leaving a vendor file out would bring back the shipped vendor of
//! that name), and an error outside any file says nothing of where it is: then nothing loads,
//! as before.

use super::codes;
use super::load::{Kind, fingerprint, kind_of, load, stem};
use super::model::{Catalogue, Withheld};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::span::FileId;
use std::collections::{BTreeMap, BTreeSet};

/// Loads the catalogue of `sources` as [`load`] does; when it has errors, loads what does not
/// depend on its broken files, with those files' pools and devices in
/// [`Catalogue::withheld`]. The diagnostics are always the whole load's. The partial
/// catalogue's digest and sources are the whole set's: a plan made against it records what it
/// was read against.
pub fn load_partial(sources: &[(FileId, &str, &str)]) -> (Option<Catalogue>, Vec<Diagnostic>) {
    let (whole, diags) = load(sources);
    if whole.is_some() {
        return (whole, diags);
    }
    let paths: BTreeMap<FileId, &str> = sources.iter().map(|(id, path, _)| (*id, *path)).collect();
    let mut left_out: BTreeSet<FileId> = BTreeSet::new();
    // The file at fault for each file left out: itself, or the device file it lost.
    let mut fault: BTreeMap<FileId, FileId> = BTreeMap::new();
    // The errors of the last load: the whole one's first, then each partial one's.
    let mut last: Option<Vec<Diagnostic>> = None;
    for _ in 0..=sources.len() {
        let found = last.as_deref().unwrap_or(&diags);
        let Some(now) = error_files(found, &paths) else {
            return (None, diags);
        };
        let fresh: Vec<FileId> = now.difference(&left_out).copied().collect();
        if fresh.is_empty() {
            return (None, diags);
        }
        // What this round leaves out may explain its own files' errors (a pool and its
        // calibration, a device and the pool that uses it).
        let gone: BTreeSet<FileId> = left_out.iter().chain(&fresh).copied().collect();
        for id in &fresh {
            if !can_leave_out(paths.get(id).copied()) && !lost_its_pool(*id, found, &gone, &paths) {
                return (None, diags);
            }
            let cause = lost_device(*id, found, &gone, &paths).unwrap_or(*id);
            fault.insert(*id, cause);
        }
        left_out = gone;
        let kept: Vec<(FileId, &str, &str)> = sources
            .iter()
            .filter(|(id, _, _)| !left_out.contains(id))
            .copied()
            .collect();
        let (partial, more) = load(&kept);
        if let Some(mut catalogue) = partial {
            catalogue.withheld = withheld(&fault, &paths);
            (catalogue.sources, catalogue.digest) = fingerprint(sources);
            return (Some(catalogue), diags);
        }
        last = Some(more);
    }
    (None, diags)
}

/// The files of the error diagnostics; `None` when an error is in no file of `paths`.
fn error_files(diags: &[Diagnostic], paths: &BTreeMap<FileId, &str>) -> Option<BTreeSet<FileId>> {
    let mut files = BTreeSet::new();
    for d in diags.iter().filter(|d| d.is_error()) {
        let file = d.span?.file;
        if !paths.contains_key(&file) {
            return None;
        }
        files.insert(file);
    }
    Some(files)
}

/// Whether leaving the file out changes nothing but what it defines: a pool, a device, a runs
/// store (measured runs change no plan), or a file in no catalogue folder.
fn can_leave_out(path: Option<&str>) -> bool {
    path.is_some_and(|path| {
        matches!(
            kind_of(path),
            Some(Kind::Pool | Kind::Device | Kind::Runs) | None
        )
    })
}

/// Whether `file` is a site calibration whose every error is that its pool is gone (left out):
/// it calibrates only that pool, so leaving it out changes nothing that loads.
fn lost_its_pool(
    file: FileId,
    diags: &[Diagnostic],
    left_out: &BTreeSet<FileId>,
    paths: &BTreeMap<FileId, &str>,
) -> bool {
    if paths.get(&file).copied().and_then(kind_of) != Some(Kind::Calibration) {
        return false;
    }
    let gone: Vec<String> = left_out
        .iter()
        .filter_map(|id| paths.get(id).copied())
        .filter(|path| kind_of(path) == Some(Kind::Pool))
        .map(|path| format!("unknown pool `{}`", stem(path)))
        .collect();
    diags
        .iter()
        .filter(|d| d.is_error() && d.span.is_some_and(|s| s.file == file))
        .all(|d| d.code == codes::UNKNOWN_SITE && gone.contains(&d.message))
}

/// The device file, left out, that `file` (a pool) lost, when every error of `file` is a
/// device it no longer finds; `None` when `file` has errors of its own.
fn lost_device(
    file: FileId,
    diags: &[Diagnostic],
    left_out: &BTreeSet<FileId>,
    paths: &BTreeMap<FileId, &str>,
) -> Option<FileId> {
    let gone_devices: Vec<(FileId, String)> = left_out
        .iter()
        .filter_map(|id| Some((*id, *paths.get(id)?)))
        .filter(|(_, path)| kind_of(path) == Some(Kind::Device))
        .map(|(id, path)| (id, format!("`{}`", stem(path))))
        .collect();
    let mut cause = None;
    for d in diags.iter().filter(|d| d.is_error()) {
        if d.span.is_none_or(|s| s.file != file) {
            continue;
        }
        let lost = (d.code == codes::UNKNOWN_DEVICE)
            .then(|| {
                gone_devices
                    .iter()
                    .find(|(_, ticked)| d.message.contains(ticked.as_str()))
            })
            .flatten();
        match lost {
            Some((device, _)) => cause = cause.or(Some(*device)),
            None => return None,
        }
    }
    cause
}

/// The pools and devices of the files left out, each with the display path of the file at
/// fault.
fn withheld(fault: &BTreeMap<FileId, FileId>, paths: &BTreeMap<FileId, &str>) -> Withheld {
    let mut out = Withheld::default();
    for (file, cause) in fault {
        let (Some(path), Some(cause)) = (paths.get(file), paths.get(cause)) else {
            continue;
        };
        let entry = match kind_of(path) {
            Some(Kind::Pool) => &mut out.pools,
            Some(Kind::Device) => &mut out.devices,
            _ => continue,
        };
        entry.insert(stem(path).to_string(), (*cause).to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped catalogue's files, `path` edited by `edit`.
    fn shipped_with(path: &str, edit: impl Fn(&str) -> String) -> Vec<(String, String)> {
        let files: Vec<(String, String)> = super::super::builtin_sources()
            .into_iter()
            .map(|(p, t)| {
                (
                    p.to_string(),
                    if p == path { edit(t) } else { t.to_string() },
                )
            })
            .collect();
        assert!(files.iter().any(|(p, _)| p == path), "no {path}");
        files
    }

    fn triples(files: &[(String, String)]) -> Vec<(FileId, &str, &str)> {
        (0u32..)
            .zip(files)
            .map(|(i, (p, t))| (FileId(i), p.as_str(), t.as_str()))
            .collect()
    }

    #[test]
    fn a_clean_catalogue_loads_whole_with_nothing_withheld() {
        let files = shipped_with("specs/pools/lab.yaml", str::to_string);
        let (whole, diags) = load(&triples(&files));
        let (partial, partial_diags) = load_partial(&triples(&files));
        assert_eq!(whole, partial);
        assert_eq!(diags, partial_diags);
        assert!(partial.unwrap().withheld.is_empty());
    }

    /// The review's pr8a: a pool file with errors leaves out that pool only; the other pools and
    /// every device load, and the diagnostics are the whole load's.
    #[test]
    fn a_broken_pool_file_withholds_only_its_pool() {
        let path = "specs/pools/xirang.yaml";
        let files = shipped_with(path, |t| {
            t.replacen("price: ", "price: [not, a, price] #", 1)
        });
        let (whole, diags) = load(&triples(&files));
        assert!(whole.is_none());
        let (partial, partial_diags) = load_partial(&triples(&files));
        assert_eq!(diags, partial_diags);
        let partial = partial.unwrap();
        assert_eq!(
            partial.pools.keys().collect::<Vec<_>>(),
            ["frontier", "lab"]
        );
        assert_eq!(partial.devices.len(), 23);
        assert_eq!(
            partial.withheld.pools,
            BTreeMap::from([("xirang".to_string(), path.to_string())])
        );
        assert!(partial.withheld.devices.is_empty());
        // What the plan records it was read against: every file, the broken one included.
        assert_eq!(partial.sources.len(), files.len());
        let clean = shipped_with(path, str::to_string);
        assert_ne!(partial.digest, load(&triples(&clean)).0.unwrap().digest);
    }

    /// A device file with an error of its own (typical power above the limit) leaves out the
    /// device, and then the pool whose node groups use it, naming the device's file as the
    /// cause; the pools that do not use it load.
    #[test]
    fn a_broken_device_file_withholds_the_device_and_the_pools_that_use_it() {
        let path = "specs/devices/H20.yaml";
        let files = shipped_with(path, |t| t.replace("typical: 320W", "typical: 500W"));
        assert!(load(&triples(&files)).0.is_none());
        let partial = load_partial(&triples(&files)).0.unwrap();
        assert!(!partial.devices.contains_key("H20"));
        assert!(partial.pools.contains_key("frontier") && partial.pools.contains_key("lab"));
        let fault = BTreeMap::from([("H20".to_string(), path.to_string())]);
        assert_eq!(partial.withheld.devices, fault);
        assert_eq!(
            partial.withheld.pools,
            BTreeMap::from([("xirang".to_string(), path.to_string())])
        );
    }

    /// A site calibration of xirang, as `loam calibrate --fit` writes it.
    const CALIBRATION: &str = "pool: xirang
site: shanghai
devices:
  H100_SXM:
    runs: 3
    run_ids: [a, b, c]
    first_run: \"2026-12-01\"
    last_run: \"2026-12-03\"
    fitted: [gemm]
    gemm: 0.8459
    scale_out: 1.0000
    scale_up: 1.0000
    throughput_uncertainty: 0.0500
    median_abs_error_pct: 2.00
";

    /// A calibration of a pool left out goes with it (it calibrates nothing that loads); a
    /// calibration that is broken itself stops everything, since leaving it out would plan its
    /// site uncalibrated.
    #[test]
    fn a_calibration_goes_with_its_pool_and_a_broken_one_blocks_all() {
        let pool = "specs/pools/xirang.yaml";
        let calibration = "specs/calibration/xirang-shanghai.yaml".to_string();
        let mut clean = shipped_with(pool, str::to_string);
        clean.push((calibration.clone(), CALIBRATION.to_string()));
        let (whole, diags) = load(&triples(&clean));
        assert!(whole.is_some(), "{diags:#?}");
        let mut broken_pool = shipped_with(pool, |t| {
            t.replacen("price: ", "price: [not, a, price] #", 1)
        });
        broken_pool.push((calibration.clone(), CALIBRATION.to_string()));
        let partial = load_partial(&triples(&broken_pool)).0.unwrap();
        assert_eq!(
            partial.pools.keys().collect::<Vec<_>>(),
            ["frontier", "lab"]
        );
        assert_eq!(partial.withheld.pools["xirang"], pool);
        let mut broken_calibration = shipped_with(pool, str::to_string);
        broken_calibration.push((calibration, CALIBRATION.replace("gemm: 0.8459", "gemm: 90")));
        let (whole, diags) = load(&triples(&broken_calibration));
        assert!(whole.is_none() && !diags.is_empty());
        assert_eq!(load_partial(&triples(&broken_calibration)), (None, diags));
    }

    /// Leaving a vendor file out would bring back the shipped vendor of that name with other
    /// figures, so a broken vendor file blocks the whole catalogue, as before.
    #[test]
    fn a_broken_vendor_file_blocks_the_whole_catalogue() {
        let path = "specs/vendors/nvidia.yaml";
        let shipped = super::super::shipped_vendors()
            .into_iter()
            .find(|(p, _)| *p == path)
            .unwrap()
            .1;
        let mut files = shipped_with("specs/pools/lab.yaml", str::to_string);
        files.push((
            path.to_string(),
            shipped.replace("slurm_gres: gpu", "slurm_gres: gpu\nunheard_of: 1"),
        ));
        let (whole, diags) = load(&triples(&files));
        assert!(whole.is_none() && diags.iter().any(Diagnostic::is_error));
        assert_eq!(load_partial(&triples(&files)), (None, diags));
    }
}
