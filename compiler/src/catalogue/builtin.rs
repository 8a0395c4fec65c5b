//! The catalogue shipped in `specs/`, compiled into the binary so loam works with no flags.
//!
//! A test compares this list with the files on disk, so a new YAML file cannot be forgotten.

use super::model::Catalogue;
use loam_ir::span::FileId;

/// Declares the shipped files, each as `(display path, text)`.
macro_rules! shipped {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../../", $path)))),*]
    };
}

const SHIPPED: &[(&str, &str)] = shipped![
    "specs/devices/A10.yaml",
    "specs/devices/A100_SXM_40GB.yaml",
    "specs/devices/A100_SXM_80GB.yaml",
    "specs/devices/Ascend910B.yaml",
    "specs/devices/B200.yaml",
    "specs/devices/DCU_K100_AI.yaml",
    "specs/devices/GB200.yaml",
    "specs/devices/Gaudi2.yaml",
    "specs/devices/Gaudi3.yaml",
    "specs/devices/H100_HBM2e_96GB.yaml",
    "specs/devices/H100_SXM.yaml",
    "specs/devices/H20.yaml",
    "specs/devices/H200_SXM.yaml",
    "specs/devices/H800_SXM.yaml",
    "specs/devices/L40S.yaml",
    "specs/devices/MI250X.yaml",
    "specs/devices/MI300X.yaml",
    "specs/devices/QUADRO_RTX_8000.yaml",
    "specs/devices/RTX_2080.yaml",
    "specs/devices/RTX_3090.yaml",
    "specs/devices/T4.yaml",
    "specs/devices/TITAN_RTX.yaml",
    "specs/devices/V100_SXM2_16GB.yaml",
    "specs/pools/frontier.yaml",
    "specs/pools/lab.yaml",
    "specs/pools/xirang.yaml",
];

/// The shipped vendors: every catalogue knows them (a catalogue's own `vendors/` file of the
/// same name replaces one), so they are not among [`builtin_sources`] and do not move the
/// shipped catalogue's digest; they travel with loam's version, which every plan key holds.
const SHIPPED_VENDORS: &[(&str, &str)] = shipped![
    "specs/vendors/amd.yaml",
    "specs/vendors/huawei.yaml",
    "specs/vendors/hygon.yaml",
    "specs/vendors/intel.yaml",
    "specs/vendors/nvidia.yaml",
];

/// `(display path, text)` of every shipped vendor file, sorted by path.
pub fn shipped_vendors() -> Vec<(&'static str, &'static str)> {
    SHIPPED_VENDORS.to_vec()
}

/// `(display path, text)` of every shipped catalogue file, sorted by path.
pub fn builtin_sources() -> Vec<(&'static str, &'static str)> {
    SHIPPED.to_vec()
}

/// The shipped catalogue, loaded with file ids `0..n` in the order of [`builtin_sources`].
///
/// A test proves it loads without diagnostics; should that ever fail, this returns an empty
/// catalogue rather than panicking.
pub fn builtin() -> Catalogue {
    let sources: Vec<(FileId, &str, &str)> = builtin_sources()
        .into_iter()
        .enumerate()
        .map(|(i, (path, text))| (FileId(u32::try_from(i).unwrap_or(u32::MAX)), path, text))
        .collect();
    super::load(&sources).0.unwrap_or_default()
}

/// The shipped devices with one pool of the caller's instead of the shipped pools: for
/// benchmarks and tests that plan on a generated pool. `pool_path` is the pool's display path.
pub fn builtin_devices_with_pool(
    pool_path: &str,
    pool_text: &str,
) -> (Option<Catalogue>, Vec<loam_ir::diagnostics::Diagnostic>) {
    let mut sources: Vec<(FileId, &str, &str)> = builtin_sources()
        .into_iter()
        .filter(|(path, _)| path.starts_with("specs/devices/"))
        .enumerate()
        .map(|(i, (path, text))| (FileId(u32::try_from(i + 1).unwrap_or(u32::MAX)), path, text))
        .collect();
    sources.push((FileId(0), pool_path, pool_text));
    super::load(&sources)
}
