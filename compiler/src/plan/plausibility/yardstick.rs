//! What a plan on a device is held to: the device's own best published run in the job's
//! precision, else the best model FLOPs utilisation (MFU) a published run of its vendor reached
//! in that precision, else the best MFU of any published run in that precision (in any
//! precision when the file has none in it).
//!
//! Every figure is read from the catalogue's `best_published` blocks, which hold the fastest run
//! of each device and precision in the calibration file (a calibration test keeps them equal to
//! the file's rows). A device's fastest run in model FLOP/s is also its best MFU (one peak per
//! device and precision), so the best MFU of a vendor, or of the whole file, is the largest
//! `best_published / peak` over those devices: nothing here is a typed-in percentage.

use crate::catalogue::{Catalogue, Device};
use loam_ir::display;
use loam_ir::types::Precision;

/// One published run as a yardstick: the device it ran on, its precision, its model FLOP/s per
/// device and that figure's share of the device's dense peak in the precision.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PublishedRun<'a> {
    pub(crate) device: &'a Device,
    pub(crate) precision: Precision,
    pub(crate) model_flops: f64,
    pub(crate) mfu: f64,
    pub(crate) run: &'a str,
}

/// Which published runs a device is compared with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Yardstick<'a> {
    /// The device's own best run in the job's precision: compared in model FLOP/s.
    Own(PublishedRun<'a>),
    /// No run on the device in the precision: the best MFU of its vendor's runs in it.
    Vendor(PublishedRun<'a>),
    /// No run of the vendor in the precision: the best MFU of any run in it, or, when no run
    /// at all used the precision, of any run.
    File(PublishedRun<'a>),
}

impl<'a> Yardstick<'a> {
    /// The yardstick of `device` in `precision` on `catalogue`; `None` when the catalogue holds
    /// no published run at all, or the device has no peak in the precision (no MFU to compare).
    pub(crate) fn of(
        catalogue: &'a Catalogue,
        device: &'a Device,
        precision: Precision,
    ) -> Option<Yardstick<'a>> {
        let runs = published_runs(catalogue);
        if let Some(own) = runs
            .iter()
            .find(|r| r.device.id.value == device.id.value && r.precision == precision)
        {
            return Some(Yardstick::Own(*own));
        }
        device.peak(precision)?;
        let best = |keep: &dyn Fn(&PublishedRun<'_>) -> bool| {
            runs.iter()
                .filter(|r| keep(r))
                .copied()
                .reduce(|a, b| if b.mfu > a.mfu { b } else { a })
        };
        if let Some(vendor) = best(&|r: &PublishedRun<'_>| {
            r.precision == precision && r.device.vendor == device.vendor
        }) {
            return Some(Yardstick::Vendor(vendor));
        }
        best(&|r: &PublishedRun<'_>| r.precision == precision)
            .or_else(|| best(&|_: &PublishedRun<'_>| true))
            .map(Yardstick::File)
    }

    /// The most model FLOP/s per device of `device` in `precision` that stays within the
    /// published record: the run's own figure, or its MFU times this device's peak.
    pub(crate) fn ceiling(&self, device: &Device, precision: Precision) -> f64 {
        match self {
            Yardstick::Own(run) => run.model_flops,
            Yardstick::Vendor(run) | Yardstick::File(run) => {
                run.mfu * device.peak(precision).unwrap_or(0.0)
            }
        }
    }

    /// The sentence after "above": what the plan exceeds, with the run named.
    pub(crate) fn describe(&self, device: &Device, precision: Precision) -> String {
        match self {
            Yardstick::Own(run) => format!(
                "the best published run ({}, `{}`)",
                display::tflops(run.model_flops),
                run.run
            ),
            Yardstick::Vendor(run) => format!(
                "the best MFU of a published run on {} devices in {precision}, {} (`{}` on {}), since no run on {} is published",
                device.vendor,
                display::percent(run.mfu),
                run.run,
                run.device.id.value,
                device.id.value
            ),
            Yardstick::File(run) => format!(
                "the best MFU of any published run{}, {} (`{}` on {}), since no run on {} devices in {precision} is published",
                if run.precision == precision {
                    format!(" in {precision}")
                } else {
                    String::new()
                },
                display::percent(run.mfu),
                run.run,
                run.device.id.value,
                device.vendor
            ),
        }
    }
}

/// Every device's best published run per precision, in catalogue order (devices by id,
/// precisions in their order), with its MFU; a run on a device without a peak in its precision
/// is left out (the catalogue refuses such a figure anyway).
pub(crate) fn published_runs(catalogue: &Catalogue) -> Vec<PublishedRun<'_>> {
    catalogue
        .devices
        .values()
        .flat_map(|device| {
            device
                .best_published
                .iter()
                .filter_map(move |(precision, best)| {
                    let peak = device.peak(*precision).filter(|p| *p > 0.0)?;
                    Some(PublishedRun {
                        device,
                        precision: *precision,
                        model_flops: best.model_flops.value,
                        mfu: best.model_flops.value / peak,
                        run: best.run.as_str(),
                    })
                })
        })
        .collect()
}
