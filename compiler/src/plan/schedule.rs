//! Cheap hours for interruptible jobs: the daily window of hours, from the site's power price
//! by hour of day, in which the job runs so that its energy costs least while the deadline
//! still holds.
//!
//! An interruptible job gives its devices back outside the window, so it pays device-hours only
//! while it runs; what changes is the price of the energy, and how long it takes in wall-clock
//! time (`train hours × 24 / window hours`).

use super::single::round;
use loam_ir::plan::ScheduleIr;

/// Shortest daily window considered, in hours.
const MIN_WINDOW_H: usize = 8;

/// What the window is chosen from.
pub(crate) struct Window<'a> {
    /// Price per kWh for each hour 0..23 at the site, in the plan's currency.
    pub(crate) prices: &'a [f64],
    /// Energy of the whole run in kWh (facility power included).
    pub(crate) energy_kwh: f64,
    /// Hours of training when run around the clock.
    pub(crate) train_h: f64,
    /// Hours before training can start (data transfer).
    pub(crate) lead_h: f64,
    /// The deadline in hours, if any.
    pub(crate) deadline_h: Option<f64>,
}

/// The cheapest daily window that meets the deadline and saves money, if any.
pub(crate) fn cheapest_window(w: &Window<'_>) -> Option<ScheduleIr> {
    let hours = w.prices.len();
    if hours < MIN_WINDOW_H || w.energy_kwh <= 0.0 {
        return None;
    }
    let mean = w.prices.iter().sum::<f64>() / hours as f64;
    let mut best: Option<(f64, usize, usize)> = None;
    for length in (MIN_WINDOW_H..hours).rev() {
        let wall_h = w.lead_h + w.train_h * hours as f64 / length as f64;
        if w.deadline_h.is_some_and(|d| wall_h > d) {
            continue;
        }
        for start in 0..hours {
            let price = (0..length)
                .filter_map(|k| w.prices.get((start + k) % hours))
                .sum::<f64>()
                / length as f64;
            // Strictly cheaper only, so ties keep the longer window and the earlier start.
            if best.is_none_or(|(p, _, _)| price < p - 1e-12) {
                best = Some((price, start, length));
            }
        }
    }
    let (price, start, length) = best?;
    let saving = w.energy_kwh * (mean - price);
    if saving <= 0.0 {
        return None;
    }
    Some(ScheduleIr {
        start_hour: start as u64,
        hours_per_day: length as u64,
        power_price_per_kwh: round(price),
        saving: round(saving),
        train_time_h: round(w.train_h * hours as f64 / length as f64),
        time_zone: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tariff() -> Vec<f64> {
        // Cheap nights 0–6, dear evenings 17–20.
        (0..24)
            .map(|h| match h {
                0..=6 | 23 => 0.3,
                17..=20 => 0.9,
                _ => 0.6,
            })
            .collect()
    }

    #[test]
    fn the_window_centres_on_the_cheap_hours_and_saves_the_difference() {
        let prices = tariff();
        let w = Window {
            prices: &prices,
            energy_kwh: 1000.0,
            train_h: 24.0,
            lead_h: 0.0,
            deadline_h: None,
        };
        let s = cheapest_window(&w).unwrap();
        assert_eq!(s.hours_per_day, 8);
        assert_eq!(s.start_hour, 23);
        let mean: f64 = prices.iter().sum::<f64>() / 24.0;
        assert!((s.saving - 1000.0 * (mean - 0.3)).abs() < 1e-6 * s.saving);
        assert!((s.train_time_h - 72.0).abs() < 1e-9);
    }

    #[test]
    fn a_tight_deadline_widens_the_window_or_rules_it_out() {
        let prices = tariff();
        let mut w = Window {
            prices: &prices,
            energy_kwh: 1000.0,
            train_h: 24.0,
            lead_h: 0.0,
            deadline_h: Some(40.0),
        };
        let s = cheapest_window(&w).unwrap();
        assert!(s.hours_per_day >= 15, "{s:?}");
        assert!(s.train_time_h <= 40.0);
        w.deadline_h = Some(24.5);
        assert_eq!(cheapest_window(&w), None);
    }

    #[test]
    fn a_flat_tariff_has_nothing_to_save() {
        let prices = vec![0.5; 24];
        let w = Window {
            prices: &prices,
            energy_kwh: 1000.0,
            train_h: 10.0,
            lead_h: 0.0,
            deadline_h: None,
        };
        assert_eq!(cheapest_window(&w), None);
    }
}
