//! Utilisation per site × device type per day: busy device-hours, the fewest free devices, and
//! fragmentation (free devices while a job waits for that device type and cannot use them).

use crate::admission::place::{Ledger, PoolRules};
use loam_ir::schedule::DayUsage;
use std::collections::BTreeMap;

/// One site × device type on one day, while it accumulates.
#[derive(Debug, Clone, Copy)]
struct Day {
    busy_device_h: f64,
    min_free: u64,
    max_fragmented: u64,
}

/// The accumulator over the horizon.
pub(crate) struct Usage {
    days: usize,
    /// (site, device) → devices.
    capacity: BTreeMap<(String, String), u64>,
    /// (site, device) → devices the services hold throughout (rule 15).
    held: BTreeMap<(String, String), u64>,
    /// (site, device) → one entry per day.
    per_day: BTreeMap<(String, String), Vec<Day>>,
}

impl Usage {
    /// An empty record of `rules`' node groups over `horizon_h`, whose devices exclude what the
    /// services hold (`held`, per node group), which counts as busy throughout.
    pub(crate) fn new(rules: &PoolRules, held: &BTreeMap<String, u64>, horizon_h: f64) -> Usage {
        let days = (horizon_h / 24.0).ceil().max(1.0) as usize;
        let mut capacity: BTreeMap<(String, String), u64> = BTreeMap::new();
        let mut held_by_type: BTreeMap<(String, String), u64> = BTreeMap::new();
        for (name, g) in &rules.groups {
            let key = (g.site.clone(), g.device.clone());
            let services = held.get(name).copied().unwrap_or(0);
            *capacity.entry(key.clone()).or_default() += g.devices + services;
            *held_by_type.entry(key).or_default() += services;
        }
        // The services' devices are busy every hour of the horizon, events or none.
        let per_day = capacity
            .iter()
            .map(|(k, &devices)| {
                let services = held_by_type.get(k).copied().unwrap_or(0);
                let days = (0..days)
                    .map(|d| Day {
                        busy_device_h: services as f64
                            * (horizon_h - d as f64 * 24.0).clamp(0.0, 24.0),
                        min_free: devices - services,
                        max_fragmented: 0,
                    })
                    .collect();
                (k.clone(), days)
            })
            .collect();
        Usage {
            days,
            capacity,
            held: held_by_type,
            per_day,
        }
    }

    /// The pool holds `ledger` from `from_h` to `to_h`, while jobs wait for `waiting` device
    /// types.
    pub(crate) fn record(
        &mut self,
        from_h: f64,
        to_h: f64,
        ledger: &Ledger,
        rules: &PoolRules,
        waiting: Vec<&str>,
    ) {
        if to_h <= from_h {
            return;
        }
        let mut used: BTreeMap<(&str, &str), u64> = BTreeMap::new();
        for (name, g) in &rules.groups {
            *used
                .entry((g.site.as_str(), g.device.as_str()))
                .or_default() += ledger.group_used(name);
        }
        let first = (from_h / 24.0).floor().max(0.0) as usize;
        for ((site, device), days) in &mut self.per_day {
            let devices = self.capacity.get(&(site.clone(), device.clone())).copied();
            let devices = devices.unwrap_or(0);
            let held = self
                .held
                .get(&(site.clone(), device.clone()))
                .copied()
                .unwrap_or(0);
            let room = devices.saturating_sub(held);
            let busy = used
                .get(&(site.as_str(), device.as_str()))
                .copied()
                .unwrap_or(0)
                .min(room);
            let free = room - busy;
            let fragmented = if waiting.contains(&device.as_str()) {
                free
            } else {
                0
            };
            let mut day = first;
            while day < self.days {
                let start = day as f64 * 24.0;
                let end = start + 24.0;
                if start >= to_h {
                    break;
                }
                let overlap = to_h.min(end) - from_h.max(start);
                if overlap > 0.0
                    && let Some(d) = days.get_mut(day)
                {
                    d.busy_device_h += busy as f64 * overlap;
                    d.min_free = d.min_free.min(free);
                    d.max_fragmented = d.max_fragmented.max(fragmented);
                }
                day += 1;
            }
        }
    }

    /// The days per site, then device type.
    pub(crate) fn finish(self) -> BTreeMap<String, BTreeMap<String, Vec<DayUsage>>> {
        let mut out: BTreeMap<String, BTreeMap<String, Vec<DayUsage>>> = BTreeMap::new();
        for ((site, device), days) in self.per_day {
            let devices = self
                .capacity
                .get(&(site.clone(), device.clone()))
                .copied()
                .unwrap_or(0);
            let rows = days
                .iter()
                .enumerate()
                .map(|(day, d)| DayUsage {
                    day: day as u64,
                    devices,
                    utilisation: if devices == 0 {
                        0.0
                    } else {
                        loam_ir::display::significant(d.busy_device_h / (24.0 * devices as f64))
                    },
                    free_devices: d.min_free,
                    fragmentation: d.max_fragmented,
                })
                .collect();
            out.entry(site).or_default().insert(device, rows);
        }
        out
    }
}
