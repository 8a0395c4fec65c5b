//! The accepted range of every catalogue number, declared once per kind of figure.
//!
//! A catalogue is hand-written YAML, so a typo (`1e26TFLOPS` for `1e3TFLOPS`, a price with a few
//! digits too many, `.nan`) is more likely than a device from the future. Each bound is generous,
//! far beyond any product of today, but physical: a value past it is refused with L2008 at its
//! place instead of planning with astronomic figures. docs/catalogue.md lists the same ranges.

pub(crate) use crate::units::Bounds;

const fn above_zero(max: f64, words: &'static str) -> Bounds {
    Bounds {
        min: 0.0,
        max,
        words,
    }
}

/// Memory of one device or slice: 16 TiB, about 60× the largest HBM stack shipped (288 GB).
pub(crate) const DEVICE_MEMORY: Bounds =
    above_zero(17_592_186_044_416.0, "above zero and at most 16 TiB");

/// Host memory and `/dev/shm` of one pod: 64 TiB, twice the largest single servers sold.
pub(crate) const HOST_MEMORY: Bounds =
    above_zero(70_368_744_177_664.0, "above zero and at most 64 TiB");

/// Every bandwidth (device memory, scale-up, NICs, storage, uplinks, links): 1 PB/s, over 100×
/// the fastest HBM (8 TB/s) and far past any network port.
pub(crate) const BANDWIDTH: Bounds = above_zero(1e15, "above zero and at most 1 PB/s");

/// Dense peak or published rate of one device: 1 EFLOP/s, about 100× the fastest accelerator's
/// sparse fp4 rate.
pub(crate) const FLOP_RATE: Bounds = above_zero(1e18, "above zero and at most 1,000,000 TFLOP/s");

/// Power of one device: 100 kW, about 70× the largest board power (1.4 kW).
pub(crate) const POWER: Bounds = above_zero(1e5, "above zero and at most 100 kW");

/// A device's mean time between failures: at least an hour (a device failing more often cannot
/// train at all; `1us` made every layout "not fit") and at most 100,000,000 h (11,000 years).
pub(crate) const MTBF: Bounds = Bounds {
    min: 3_600.0,
    max: 3.6e11,
    words: "between 1 h and 100,000,000 h",
};

/// Latency of a site's fabric or of a WAN link: 10 s, longer than a round trip to the Moon.
pub(crate) const LATENCY: Bounds = above_zero(10.0, "above zero and at most 10 s");

/// A site's restart time: a day; a longer restart is an outage, not a restart.
pub(crate) const RESTART_TIME: Bounds = above_zero(86_400.0, "above zero and at most 1 d");

/// A Slurm partition's time limit: at least a minute (Slurm counts whole minutes), at most ten
/// years.
pub(crate) const SLURM_MAX_TIME: Bounds = Bounds {
    min: 60.0,
    max: 315_360_000.0,
    words: "between 1 min (Slurm counts whole minutes) and 3650 d",
};

/// A dataset held at a site: 1 EB, about 100× the largest public web crawls.
pub(crate) const DATASET_SIZE: Bounds = above_zero(1e18, "above zero and at most 1,000 PB");

/// A price in the pool's base currency (per device-hour, per GB of egress, per kWh): at least 0
/// and at most 1,000,000,000, which no price reaches in any currency (an H100 hour is about
/// 50,000 in the currency with the smallest unit in use).
pub(crate) const PRICE: Bounds = Bounds {
    min: 0.0,
    max: 1e9,
    words: "an amount between 0 and 1,000,000,000",
};

/// An exchange rate to the base currency: between 1e-9 and 1e9, wide enough for any pair of
/// currencies in use.
pub(crate) const EXCHANGE_RATE: Bounds = Bounds {
    min: 1e-9,
    max: 1e9,
    words: "a positive exchange rate between 0.000000001 and 1,000,000,000",
};

/// Grid carbon intensity: 0 to 5,000 g CO2 per kWh; lignite, the dirtiest fuel, emits about 1,200.
pub(crate) const CARBON_INTENSITY: Bounds = Bounds {
    min: 0.0,
    max: 5_000.0,
    words: "grams of CO2 per kWh between 0 and 5000",
};

/// Power usage effectiveness of a site: 1 (every watt reaches the IT load) to 3 (the worst
/// surveyed data centres).
pub(crate) const PUE: Bounds = Bounds {
    min: 1.0,
    max: 3.0,
    words: "a power usage effectiveness between 1 and 3",
};

/// A measured kernel efficiency (share of the dense peak): at least 1 % (a lower figure is a
/// unit slip; `1e-300` made every layout "not fit") and at most 1.
pub(crate) const EFFICIENCY: Bounds = Bounds {
    min: 0.01,
    max: 1.0,
    words: "a fraction between 0.01 and 1",
};

/// Largest count of nodes in one node group or block: a million, ten times today's largest
/// clusters.
pub(crate) const MAX_NODES: i128 = 1_000_000;

/// Largest count of devices, NICs or RDMA devices per node: 1,024, well above the 72 of one
/// NVLink rack.
pub(crate) const MAX_PER_NODE: i128 = 1_024;

/// Largest count of CPUs one pod requests: 65,536, far above the largest servers.
pub(crate) const MAX_POD_CPUS: i128 = 65_536;

/// Largest count of devices in one quota or free in one group: 2^24, the language's own limit on
/// device counts.
pub(crate) const MAX_DEVICES: i128 = 16_777_216;
