//! How loam writes numbers for people: significant digits, thousands separators, durations,
//! money, bytes, percentages and parallel layouts, in one place for the core's prose (`why`,
//! alternatives, reasons) and the CLI's renderers.
//!
//! Rounding is Rust's: `{:.N}` rounds the exact binary value, ties to even (`2.5` → `2`,
//! `0.5` → `0`). Where two outputs write the same quantity differently (a duration from seconds
//! in the planner's sentences, from hours in the plan table), each has its own function, so no
//! output changes when a caller moves here.

use crate::plan::{LayoutIr, Plan};
use crate::types::{Hetero, Recompute};

mod visible;
pub use visible::{bounded, is_hidden, visible, visible_lines};

/// `text` safe inside a markdown table cell or list item: `|` escaped, lines joined.
pub fn table_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// `text` with its first letter upper-case, as a sentence starts.
pub fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Significant digits of the numbers in the Plan JSON.
pub const SIGNIFICANT_DIGITS: usize = 5;

/// `x` to [`SIGNIFICANT_DIGITS`] significant digits, so JSON diffs show only changes that
/// matter; `0.0` for zero (negative zero included), non-finite values unchanged.
pub fn significant(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return if x.is_finite() { 0.0 } else { x };
    }
    format!("{x:.prec$e}", prec = SIGNIFICANT_DIGITS - 1)
        .parse()
        .unwrap_or(x)
}

/// A whole number with thousands separators: `1234567.8` → `1,234,568`. The sign is kept only
/// when the rounded number is not zero (`-0.4` → `0`).
pub fn thousands(x: f64) -> String {
    let whole = format!("{:.0}", x.abs());
    let mut out = String::with_capacity(whole.len() + whole.len() / 3 + 1);
    for (i, ch) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if x < -0.5 { format!("-{out}") } else { out }
}

/// An amount of money, whole, with thousands separators and the currency: `310,000 CNY`.
pub fn money(amount: f64, currency: &str) -> String {
    format!("{} {currency}", thousands(amount))
}

/// A small amount of money with cents where they matter: `5.56 CNY` below 100, else as
/// [`money`] (`1,250 CNY`). For prices per unit (per million tokens, per hour).
pub fn price(amount: f64, currency: &str) -> String {
    if amount.abs() < 100.0 {
        format!("{amount:.2} {currency}")
    } else {
        money(amount, currency)
    }
}

/// `n` with `digits` decimals, or more (up to four) when that would show a non-zero number as
/// zero: `decimals(0.004, 1)` → `0.004`.
pub fn decimals(n: f64, digits: usize) -> String {
    let mut more = digits;
    let mut text = format!("{n:.more$}");
    while n != 0.0 && more < 4 && is_zero(&text) {
        more += 1;
        text = format!("{n:.more$}");
    }
    text
}

/// `+1.5` / `-0.3` with `digits` decimals, or more (up to four) when that would round a real
/// change to zero; `±0.0` for none (or one too small for four decimals).
pub fn signed(n: f64, digits: usize) -> String {
    let mut text = format!("{n:+.digits$}");
    let mut more = digits;
    while is_zero(&text) && n != 0.0 && more < 4 {
        more += 1;
        text = format!("{n:+.more$}");
    }
    if is_zero(&text) {
        format!("±{:.digits$}", 0.0)
    } else {
        text
    }
}

/// Whether a formatted number reads as zero (`0`, `-0.00`, `+0.0`).
fn is_zero(text: &str) -> bool {
    text.trim_start_matches(['+', '-'])
        .chars()
        .all(|c| c == '0' || c == '.')
}

/// A ratio in percent with one decimal and a space before the sign: `0.412` → `41.2 %`.
pub fn percent(ratio: f64) -> String {
    format!("{:.1} %", 100.0 * ratio)
}

/// A change as a ratio, in percent with its sign: `0.05` → `+5.0 %`, `-0.05` → `-5.0 %`.
pub fn percent_signed(ratio: f64) -> String {
    format!("{:+.1} %", 100.0 * ratio)
}

/// A relative uncertainty in whole percent, with `±` and a space before the sign: `0.3` →
/// `±30 %` (more decimals only when whole percent would show zero: `0.004` → `±0.4 %`).
pub fn plus_minus(ratio: f64) -> String {
    format!("±{} %", decimals(100.0 * ratio, 0))
}

/// A compute rate in TFLOP/s with one decimal: `4.589e14` → `458.9 TFLOP/s`.
pub fn tflops(flops_per_s: f64) -> String {
    format!("{:.1} TFLOP/s", flops_per_s / 1e12)
}

/// A duration given in seconds, as the planner's sentences write it: seconds below two minutes
/// (`90 s`), minutes below two hours (`95 min`), hours below two days (`36.0 h`), else days
/// (`29.1 days`). The unit follows the magnitude, so a negative duration reads like its
/// positive one.
pub fn duration(seconds: f64) -> String {
    let hours = seconds / 3600.0;
    if seconds.abs() < 120.0 {
        format!("{seconds:.0} s")
    } else if hours.abs() < 2.0 {
        format!("{:.0} min", seconds / 60.0)
    } else if hours.abs() < 48.0 {
        format!("{hours:.1} h")
    } else {
        format!("{:.1} days", hours / 24.0)
    }
}

/// A latency given in seconds, as service plans write it: milliseconds below a second
/// (`38 ms`, `4.2 ms` below 10 ms), else seconds with two decimals (`1.45 s`).
pub fn latency(seconds: f64) -> String {
    if seconds < 0.01 {
        format!("{:.1} ms", seconds * 1e3)
    } else if seconds < 1.0 {
        format!("{:.0} ms", seconds * 1e3)
    } else {
        format!("{seconds:.2} s")
    }
}

/// A duration given in hours, as the plan table writes it: hours below two days (`5.2 h`, also
/// any negative number), else days (`29.1 days`).
pub fn hours_or_days(hours: f64) -> String {
    if hours < 48.0 {
        format!("{hours:.1} h")
    } else {
        format!("{:.1} days", hours / 24.0)
    }
}

/// Bytes in the largest fitting unit with one decimal: `1.2 PB`, `48.0 TB`, else GiB
/// (`80.0 GiB`; device memory is counted in binary units).
pub fn bytes(bytes: f64) -> String {
    use crate::units::GIB;
    if bytes >= 1e15 {
        format!("{:.1} PB", bytes / 1e15)
    } else if bytes >= 1e12 {
        format!("{:.1} TB", bytes / 1e12)
    } else {
        format!("{:.1} GiB", bytes / GIB)
    }
}

impl From<&LayoutIr> for LayoutIr {
    fn from(l: &LayoutIr) -> Self {
        *l
    }
}

/// The parallel degrees: `TP8 PP4 DP16`, then `CP`, `EP` and `VP` when above 1.
pub fn layout_degrees(l: impl Into<LayoutIr>) -> String {
    let l = l.into();
    let mut text = format!("TP{} PP{} DP{}", l.tensor, l.pipeline, l.data);
    for (prefix, degree) in [
        ("CP", l.context),
        ("EP", l.expert),
        ("VP", l.virtual_stages),
    ] {
        if degree > 1 {
            text.push_str(&format!(" {prefix}{degree}"));
        }
    }
    text
}

/// The layout in one short line, as the planner's summaries and reasons write it:
/// `TP8 PP4 DP16 mb1 ZeRO-1 recompute selective`.
pub fn layout_short(l: impl Into<LayoutIr>) -> String {
    let l = l.into();
    format!(
        "{} mb{} ZeRO-{} recompute {}{}",
        layout_degrees(l),
        l.micro_batch,
        l.zero,
        recompute_text(&l),
        match (l.tensor_overlap, l.expert_overlap) {
            (true, true) => " tensor-overlap expert-overlap",
            (true, false) => " tensor-overlap",
            (false, true) => " expert-overlap",
            (false, false) => "",
        }
    )
}

/// What a layout line adds when the tensor-parallel collectives overlap the GEMMs, or the
/// expert all-to-alls another micro-batch's compute (the plan's time assumes it, so a reader
/// comparing two plans sees why one is faster); nothing otherwise.
fn overlap_text(l: &LayoutIr) -> &'static str {
    match (l.tensor_overlap, l.expert_overlap) {
        (true, true) => " · tensor overlap · expert overlap",
        (true, false) => " · tensor overlap",
        (false, true) => " · expert overlap",
        (false, false) => "",
    }
}

/// The layout as the plan table and markdown write it:
/// `TP8 PP4 DP16 · micro-batch 1 · ZeRO-1 · recompute selective`.
pub fn layout_line(l: impl Into<LayoutIr>) -> String {
    let l = l.into();
    format!(
        "{} · micro-batch {} · ZeRO-{} · recompute {}{}",
        layout_degrees(l),
        l.micro_batch,
        l.zero,
        recompute_text(&l),
        overlap_text(&l)
    )
}

/// The layout in one line: `TP8 PP4 DP16 · micro-batch 1 · ZeRO-1 · recompute selective`; for
/// a heterogeneous data-parallel plan, each group's joined by ` + `.
pub fn plan_layout_line(plan: &Plan) -> String {
    format!("{}{}", plan_layout_degrees(plan), dispatch_text(plan))
}

/// What a plan's layout line adds when its experts' tokens go once to each node that holds one
/// of a token's experts (the plan's time assumes it, `workload.expert_dispatch`); nothing for
/// the all-to-all or where the experts are not split.
fn dispatch_text(plan: &Plan) -> String {
    let split = plan.layout.as_ref().is_some_and(|l| l.expert > 1)
        || plan
            .groups
            .iter()
            .any(|g| g.layout.is_some_and(|l| l.expert > 1));
    match plan.workload.expert_dispatch {
        Some(dispatch) if split && !dispatch.is_all_to_all() => format!(" · {dispatch} dispatch"),
        _ => String::new(),
    }
}

/// [`plan_layout_line`] without what it says of the expert dispatch.
fn plan_layout_degrees(plan: &Plan) -> String {
    if is_data_split(plan) {
        return group_layout_lines(plan).join(" + ");
    }
    if let (Some(l), true) = (&plan.layout, plan.groups.len() > 1) {
        // A pipeline over two device types: each type has its own tensor degree and stages,
        // so one headline `TP` would misstate one of them.
        let groups: Vec<String> = plan
            .groups
            .iter()
            .enumerate()
            .map(|(g, group)| {
                let stages = plan.stages.iter().filter(|s| s.group == g as u64).count();
                format!(
                    "{} TP{} PP{stages}",
                    group.device,
                    group.tensor.unwrap_or(l.tensor)
                )
            })
            .collect();
        return format!(
            "{} · DP{} · micro-batch {} · ZeRO-{} · recompute {}{}",
            groups.join(" + "),
            l.data,
            l.micro_batch,
            l.zero,
            l.recompute,
            overlap_text(l)
        );
    }
    plan.layout.as_ref().map_or_else(|| "-".into(), layout_line)
}

/// Whether each group of the plan runs whole replicas on its share of the batch.
fn is_data_split(plan: &Plan) -> bool {
    plan.hetero == Some(Hetero::Data)
}

/// Each group's own layout and share of the batch: `H20: TP1 PP1 DP64 … · 128 sequences`.
pub fn group_layout_lines(plan: &Plan) -> Vec<String> {
    plan.groups
        .iter()
        .filter_map(|g| {
            let layout = layout_line(g.layout.as_ref()?);
            let share = g
                .sequences_per_step
                .map_or(String::new(), |s| format!(" · {s} sequences per step"));
            Some(format!("{}: {layout}{share}", g.device))
        })
        .collect()
}

/// The layout in a narrow table column, every degree written (expert parallelism left out):
/// `t8 p4 d16 c1 v1 b1 z1 selective` (`full/2` under partial recomputation of 2 blocks per
/// chunk).
pub fn layout_compact(l: impl Into<LayoutIr>) -> String {
    let l = l.into();
    format!(
        "t{} p{} d{} c{} v{} b{} z{} {}",
        l.tensor,
        l.pipeline,
        l.data,
        l.context,
        l.virtual_stages,
        l.micro_batch,
        l.zero,
        match l.recompute_layers {
            Some(k) if l.recompute == Recompute::Full => format!("full/{k}"),
            _ => l.recompute.to_string(),
        }
    )
}

/// The recomputation in words: the mode, and under partial recomputation the blocks of each
/// chunk replayed (`full (2 blocks per chunk)`).
pub fn recompute_text(l: &LayoutIr) -> String {
    match l.recompute_layers {
        Some(1) if l.recompute == Recompute::Full => "full (1 block per chunk)".to_string(),
        Some(k) if l.recompute == Recompute::Full => format!("full ({k} blocks per chunk)"),
        _ => l.recompute.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Recompute;

    #[test]
    fn significant_keeps_five_digits() {
        assert_eq!(significant(0.0), 0.0);
        assert!(significant(-0.0).is_sign_positive());
        assert_eq!(significant(123_456.7), 123_460.0);
        assert_eq!(significant(-123_456.7), -123_460.0);
        assert_eq!(significant(0.000_123_456_7), 0.000_123_46);
        assert_eq!(significant(1.234_55e30), 1.2346e30);
        assert_eq!(significant(2.5), 2.5);
        // Exact ties go to even.
        assert_eq!(significant(10_000.5), 10_000.0);
        assert_eq!(significant(10_001.5), 10_002.0);
        assert_eq!(significant(f64::INFINITY), f64::INFINITY);
        assert_eq!(significant(f64::NEG_INFINITY), f64::NEG_INFINITY);
        assert!(significant(f64::NAN).is_nan());
    }

    #[test]
    fn thousands_groups_whole_numbers() {
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(-0.0), "0");
        assert_eq!(thousands(7.0), "7");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!(thousands(999.5), "1,000");
        assert_eq!(thousands(1_234_567.8), "1,234,568");
        assert_eq!(thousands(-1_234_567.8), "-1,234,568");
        assert_eq!(thousands(123_456.0), "123,456");
        assert_eq!(thousands(1e21), "1,000,000,000,000,000,000,000");
        assert_eq!(thousands(f64::INFINITY), "inf");
        assert_eq!(thousands(f64::NAN), "NaN");
    }

    #[test]
    fn thousands_rounds_ties_to_even_and_drops_the_sign_of_zero() {
        assert_eq!(thousands(0.5), "0");
        assert_eq!(thousands(1.5), "2");
        assert_eq!(thousands(2.5), "2");
        assert_eq!(thousands(-0.4), "0");
        assert_eq!(thousands(-0.5), "0");
        assert_eq!(thousands(-0.6), "-1");
        assert_eq!(thousands(-2.5), "-2");
    }

    #[test]
    fn money_is_whole_with_its_currency() {
        assert_eq!(money(310_000.4, "CNY"), "310,000 CNY");
        assert_eq!(money(-1500.0, "USD"), "-1,500 USD");
        assert_eq!(money(12.0, ""), "12 ");
    }

    #[test]
    fn decimals_show_small_numbers_as_non_zero() {
        assert_eq!(decimals(0.0, 1), "0.0");
        assert_eq!(decimals(12.345, 1), "12.3");
        assert_eq!(decimals(0.004, 1), "0.004");
        assert_eq!(decimals(-0.004, 2), "-0.004");
        assert_eq!(decimals(0.000_01, 1), "0.0000");
        assert_eq!(decimals(0.25, 1), "0.2");
        assert_eq!(decimals(1e20, 1), "100000000000000000000.0");
    }

    #[test]
    fn signed_shows_the_sign_and_real_changes() {
        assert_eq!(signed(1.5, 1), "+1.5");
        assert_eq!(signed(-0.3, 1), "-0.3");
        assert_eq!(signed(0.0, 1), "±0.0");
        assert_eq!(signed(-0.0, 2), "±0.00");
        assert_eq!(signed(0.004, 1), "+0.004");
        assert_eq!(signed(-0.000_01, 1), "±0.0");
        assert_eq!(signed(0.25, 1), "+0.2");
    }

    #[test]
    fn percentages_have_one_decimal() {
        assert_eq!(percent(0.412), "41.2 %");
        assert_eq!(percent(0.0), "0.0 %");
        assert_eq!(percent(-0.05), "-5.0 %");
        assert_eq!(percent(12.0), "1200.0 %");
        assert_eq!(percent_signed(0.05), "+5.0 %");
        assert_eq!(percent_signed(-0.05), "-5.0 %");
        assert_eq!(percent_signed(0.0), "+0.0 %");
    }

    #[test]
    fn uncertainties_are_whole_percent_unless_that_reads_zero() {
        assert_eq!(plus_minus(0.3), "±30 %");
        assert_eq!(plus_minus(0.25), "±25 %");
        assert_eq!(plus_minus(0.004), "±0.4 %");
    }

    #[test]
    fn durations_from_seconds_pick_the_unit_by_magnitude() {
        assert_eq!(duration(0.0), "0 s");
        assert_eq!(duration(119.0), "119 s");
        assert_eq!(duration(120.0), "2 min");
        assert_eq!(duration(7199.0), "120 min");
        assert_eq!(duration(7200.0), "2.0 h");
        assert_eq!(duration(47.9 * 3600.0), "47.9 h");
        assert_eq!(duration(48.0 * 3600.0), "2.0 days");
        assert_eq!(duration(30.0 * 86_400.0), "30.0 days");
        assert_eq!(duration(-90.0), "-90 s");
        assert_eq!(duration(-3.0 * 86_400.0), "-3.0 days");
        assert_eq!(duration(-0.3), "-0 s");
    }

    #[test]
    fn durations_from_hours_are_hours_or_days() {
        assert_eq!(hours_or_days(0.0), "0.0 h");
        assert_eq!(hours_or_days(0.25), "0.2 h");
        assert_eq!(hours_or_days(47.96), "48.0 h");
        assert_eq!(hours_or_days(48.0), "2.0 days");
        assert_eq!(hours_or_days(698.4), "29.1 days");
        assert_eq!(hours_or_days(-100.0), "-100.0 h");
    }

    #[test]
    fn bytes_use_the_largest_unit() {
        assert_eq!(bytes(0.0), "0.0 GiB");
        assert_eq!(bytes(80.0 * 1_073_741_824.0), "80.0 GiB");
        assert_eq!(bytes(999e9), "930.4 GiB");
        assert_eq!(bytes(48e12), "48.0 TB");
        assert_eq!(bytes(1.25e15), "1.2 PB");
        // Below every threshold, so a negative size is written in GiB.
        assert_eq!(bytes(-1e15), "-931322.6 GiB");
    }

    fn layout() -> LayoutIr {
        LayoutIr {
            tensor: 8,
            pipeline: 4,
            data: 16,
            context: 1,
            expert: 1,
            virtual_stages: 1,
            pipeline_split: Some(crate::types::SplitRule::Balanced),
            micro_batch: 1,
            zero: 1,
            recompute: Recompute::Selective,
            recompute_layers: None,
            sequence_parallel: Some(true),
            tensor_overlap: false,
            expert_overlap: false,
        }
    }

    #[test]
    fn layouts_in_their_three_spellings() {
        let l = layout();
        assert_eq!(layout_degrees(l), "TP8 PP4 DP16");
        assert_eq!(
            layout_short(l),
            "TP8 PP4 DP16 mb1 ZeRO-1 recompute selective"
        );
        assert_eq!(
            layout_line(l),
            "TP8 PP4 DP16 · micro-batch 1 · ZeRO-1 · recompute selective"
        );
        assert_eq!(layout_compact(l), "t8 p4 d16 c1 v1 b1 z1 selective");
        // A layout whose tensor collectives overlap the GEMMs says so in its lines.
        let overlapped = LayoutIr {
            tensor_overlap: true,
            ..l
        };
        assert_eq!(
            layout_short(overlapped),
            "TP8 PP4 DP16 mb1 ZeRO-1 recompute selective tensor-overlap"
        );
        assert_eq!(
            layout_line(overlapped),
            "TP8 PP4 DP16 · micro-batch 1 · ZeRO-1 · recompute selective · tensor overlap"
        );
        // So does one whose expert all-to-alls run beside another micro-batch, alone or with it.
        let experts = LayoutIr {
            expert: 8,
            virtual_stages: 2,
            expert_overlap: true,
            ..l
        };
        assert_eq!(
            layout_short(experts),
            "TP8 PP4 DP16 EP8 VP2 mb1 ZeRO-1 recompute selective expert-overlap"
        );
        assert_eq!(
            layout_line(LayoutIr {
                tensor_overlap: true,
                ..experts
            }),
            "TP8 PP4 DP16 EP8 VP2 · micro-batch 1 · ZeRO-1 · recompute selective · tensor overlap \
             · expert overlap"
        );
    }

    #[test]
    fn layouts_name_the_degrees_above_one() {
        let l = LayoutIr {
            context: 2,
            expert: 4,
            virtual_stages: 3,
            micro_batch: 2,
            zero: 3,
            recompute: Recompute::None,
            ..layout()
        };
        assert_eq!(layout_degrees(l), "TP8 PP4 DP16 CP2 EP4 VP3");
        assert_eq!(
            layout_line(l),
            "TP8 PP4 DP16 CP2 EP4 VP3 · micro-batch 2 · ZeRO-3 · recompute none"
        );
        assert_eq!(layout_compact(l), "t8 p4 d16 c2 v3 b2 z3 none");
    }
}
