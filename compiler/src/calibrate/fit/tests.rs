//! The fit's rules on synthetic runs, and the few-shot accuracy on the shared published-run file
//! (issue 30: per family with at least 8 runs, fit on 3 chosen by a fixed seed, predict the rest).

use super::*;
use crate::calibrate::calibrate_prepared;
use crate::hardware::DeviceFigures;

const CSV: &str = include_str!("../../../../tests/data/training_runs_calibration.csv");

fn catalogue_device(id: &str) -> Option<DeviceFigures> {
    thread_local! {
        static CATALOGUE: crate::catalogue::Catalogue = crate::catalogue::builtin();
    }
    CATALOGUE.with(|c| c.device(id).map(|d| d.figures()))
}

fn prepared() -> Vec<Prepared> {
    calibrate_prepared(CSV, &catalogue_device).unwrap().1
}

/// splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", 2014):
/// the fixed-seed choice of the rows to fit on.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `k` distinct indices of `0..n`, by a partial Fisher–Yates shuffle seeded with `seed`.
fn choose(n: usize, k: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut state = seed;
    for i in 0..k.min(n) {
        let j = i + (splitmix(&mut state) % (n - i) as u64) as usize;
        order.swap(i, j);
    }
    order.truncate(k.min(n));
    order.sort_unstable();
    order
}

/// The seed of the few-shot test: the number.
const SEED: u64 = 30;

#[test]
fn runs_generated_with_a_known_gemm_factor_give_that_factor_back_shrunk() {
    // Four runs of one family "measured" as the model predicts them with a GEMM factor of 0.85.
    // Four runs allow one factor (one per three runs, at least one), the GEMM share; the fit
    // finds f̂ = 0.85 and shrinks it with n = 4, k = 1: 0.85^(4/5) = 0.8781.
    let truth = Factors {
        gemm: 0.85,
        ..Factors::ONE
    };
    let family: Vec<Prepared> = prepared()
        .into_iter()
        .filter(|r| r.family == "nemo2407")
        .take(4)
        .map(|mut r| {
            r.measured = predict(&r, &truth).unwrap();
            r
        })
        .collect();
    let refs: Vec<&Prepared> = family.iter().collect();
    let fit = fit(&refs);
    assert_eq!(fit.runs, 4);
    assert_eq!(fit.fitted, vec!["gemm"]);
    assert!((fit.factors.gemm - 0.8781).abs() < 0.002, "{fit:?}");
    assert_eq!((fit.factors.scale_out, fit.factors.scale_up), (1.0, 1.0));
}

#[test]
fn never_more_factors_than_runs_and_one_run_keeps_the_priors_uncertainty() {
    let rows = prepared();
    let one: Vec<&Prepared> = rows.iter().filter(|r| r.family == "sc21").take(1).collect();
    let fit = fit(&one);
    assert_eq!(fit.fitted.len(), 1);
    // n = 1, one factor: no degree of freedom is left, so the spread is the prior's 0.30, and
    // the shrinkage keeps 0.30 · 1/(1+1) = 0.15 of the prior: sqrt(0.30² + 0.15²) = 0.3354.
    assert!(
        (fit.uncertainty - 0.3354).abs() < 1e-3,
        "{}",
        fit.uncertainty
    );
}

#[test]
fn the_shipped_model_is_factors_of_one() {
    let rows = prepared();
    let row = rows.first().unwrap();
    let mut cluster = row.cluster.clone();
    Factors::ONE.apply(&mut cluster);
    assert_eq!(cluster, row.cluster);
}

/// The few-shot protocol of issue 30 ("Numbers") on the shared file, with the measured figures
/// of the family under test multiplied by `slowdown` (1.0: the file as published; the other
/// families, which the starting model is fitted on, stay as published). For each source family with at least 8
/// costed runs, start from the model refitted without that family (`loam calibrate
/// --cross-validate`'s fold: a site and stack the model never saw), fit the factors on 3 of its
/// runs chosen by [`SEED`] and predict the others. Prints the table (`--nocapture`) and returns
/// the pooled medians over the held-back runs: (left-out model, few-shot) in percent, and each
/// family's medians (left-out, few-shot).
fn few_shot_table(slowdown: f64) -> (f64, f64, Vec<(f64, f64)>) {
    let rows = prepared();
    let mut families: std::collections::BTreeMap<&str, Vec<&Prepared>> = Default::default();
    for r in &rows {
        families.entry(r.family.as_str()).or_default().push(r);
    }
    println!("measured × {slowdown}");
    println!(
        "{:<12} {:>5} {:>5} {:>10} {:>9} {:>7}",
        "family", "runs", "held", "left-out", "few-shot", "gemm"
    );
    let mut pooled = [Vec::new(), Vec::new()];
    let mut per_family = Vec::new();
    for (family, members) in &families {
        if members.len() < 8 {
            continue;
        }
        let others: Vec<&Prepared> = rows.iter().filter(|r| r.family != *family).collect();
        let prior = crate::calibrate::cross::fit(&others);
        let unseen: Vec<Prepared> = members
            .iter()
            .map(|r| {
                let mut r = (*r).clone();
                r.cluster.fitted = prior;
                r.measured *= slowdown;
                r
            })
            .collect();
        let picked = choose(unseen.len(), 3, SEED);
        let train: Vec<&Prepared> = picked.iter().filter_map(|i| unseen.get(*i)).collect();
        let held: Vec<&Prepared> = (0..unseen.len())
            .filter(|i| !picked.contains(i))
            .filter_map(|i| unseen.get(i))
            .collect();
        let fit = fit(&train);
        let left_out: Vec<f64> = held
            .iter()
            .map(|r| abs_error_pct(r, &Factors::ONE))
            .collect();
        let few_shot: Vec<f64> = held
            .iter()
            .map(|r| abs_error_pct(r, &fit.factors))
            .collect();
        let median = |v: &Vec<f64>| super::super::median(v.clone());
        println!(
            "{:<12} {:>5} {:>5} {:>9.1}% {:>8.1}% {:>7.3}",
            family,
            members.len(),
            held.len(),
            median(&left_out),
            median(&few_shot),
            fit.factors.gemm,
        );
        per_family.push((median(&left_out), median(&few_shot)));
        for (sink, values) in pooled.iter_mut().zip([left_out, few_shot]) {
            sink.extend(values);
        }
    }
    let [left_out, few_shot] = pooled.map(super::super::median);
    let met = per_family.iter().filter(|(_, f)| *f <= 5.0).count();
    println!(
        "pooled held-back runs: left-out {left_out:.1}%, few-shot {few_shot:.1}%; \
         {met} of {} families within 5 %",
        per_family.len()
    );
    (left_out, few_shot, per_family)
}

/// The published runs as they are. Measured (docs/calibration.md): per family the few-shot
/// median stays within the 5 % or within 0.6 points of the left-out model's
/// (korthikanti 3.2 → 3.1 %, nemo2407 6.9 → 7.3 %, sc21 0.6 → 4.0 %, tt2412 8.7 → 9.3 %):
/// three runs cannot tell a family's shift from its layouts' spread, and where the model without
/// the family is already within a point (sc21), one factor fitted on three runs moves the rest by
/// their spread. Two of the four families meet the 5 % goal. Pooled over the 24 held-back runs
/// it is 3.2 → 6.0 %: sc21's and korthikanti's twelve runs sit below 4.5 % left out, and the
/// pooled median is the twelfth and thirteenth run, so a point on a few of those moves it.
#[test]
fn few_shot_on_the_published_runs_costs_little_where_there_is_no_shift() {
    let (_, few_shot, families) = few_shot_table(1.0);
    for (left_out, few) in &families {
        // Within the goal, or close to the model without the family.
        assert!(
            *few <= (left_out + 2.5).max(5.0),
            "few-shot {few:.1}% vs left-out {left_out:.1}%"
        );
    }
    assert!(few_shot <= 7.0, "few-shot {few_shot:.1}%");
    assert!(families.iter().filter(|(_, f)| *f <= 5.0).count() >= 2);
}

/// The case calibration is for: a site slower than its datasheet (clocks, power caps, a slower
/// stack). The family's runs measure 0.85 × what was published, so the left-out model is off by
/// at least 1/0.85 − 1 = 17.6 % on a run it had exactly (20.3 % pooled when written); three runs
/// give most of the shift back (7.9 % pooled when written: the GEMM factor slows the compute,
/// not the communication, and the shrinkage keeps a quarter of the prior).
#[test]
fn few_shot_recovers_most_of_a_site_slower_than_its_datasheet() {
    let (left_out, few_shot, _) = few_shot_table(0.85);
    assert!(left_out > 17.0, "{left_out}");
    assert!(
        few_shot < left_out / 2.0,
        "few-shot {few_shot:.1}% vs {left_out:.1}%"
    );
}

#[test]
fn runs_with_a_constant_fixed_cost_per_step_give_it_back_shrunk() {
    // Twelve runs "measured" as the model predicts them with 0.5 s more per step (a data
    // loader the site adds to every step). No family of the shared file has twelve costed runs,
    // so these are its first twelve rows, each on its own cluster figures (the fit only reads
    // each row's figures). Twelve runs allow four factors (one per three runs); the fit finds
    // the multipliers at 1.0 and f̂ = 0.5 s, and shrinks the additive factor toward 0 with the
    // weight of the multipliers, n = 12, k = 1: 0.5 · 12/13 = 0.4615 s.
    let truth = Factors {
        fixed_s: 0.5,
        ..Factors::ONE
    };
    let costed: Vec<Prepared> = prepared()
        .into_iter()
        .filter(|r| predict(r, &truth).is_some())
        .take(12)
        .collect();
    let runs = measured_under(&costed, &truth);
    let refs: Vec<&Prepared> = runs.iter().collect();
    let fit = fit(&refs);
    println!("{fit:?}");
    assert_eq!(fit.runs, 12);
    assert!(fit.fitted.contains(&"fixed_s"), "{fit:?}");
    assert!((fit.factors.fixed_s - 0.4615).abs() < 0.01, "{fit:?}");
    assert!((fit.factors.gemm - 1.0).abs() < 0.01, "{fit:?}");
    // The shipped model's runs give no fixed cost back.
    let plain = measured_under(&runs, &Factors::ONE);
    let refs: Vec<&Prepared> = plain.iter().collect();
    assert!(fit_of(&refs).factors.fixed_s < 0.005);
}

fn fit_of(rows: &[&Prepared]) -> Fit {
    fit(rows)
}

/// `runs` "measured" as the model predicts them under `factors`: a site that differs from the
/// shipped model by exactly those factors.
fn measured_under(runs: &[Prepared], factors: &Factors) -> Vec<Prepared> {
    runs.iter()
        .map(|r| {
            let mut r = r.clone();
            r.measured = predict(&r, factors).unwrap();
            r
        })
        .collect()
}

/// A site whose attention kernel runs at 0.6 of the shipped rate (an older kernel than
/// FlashAttention-2), measured on fifteen published layouts of different widths and sequence
/// lengths (every fourth costed row of the shared file): fifteen runs allow five factors, and
/// attention's share of a step differs between them, so the fit can tell it from the GEMM
/// factor. The runs are exact, so the best fit is the truth, and shrunk with n = 15, k = 1:
/// 0.6^(15/16) = 0.6193; the multipliers stay at 1.0.
#[test]
fn runs_with_a_slower_attention_kernel_give_the_attention_factor_back_shrunk() {
    let truth = Factors {
        attention: 0.6,
        ..Factors::ONE
    };
    let costed: Vec<Prepared> = prepared()
        .into_iter()
        .filter(|r| predict(r, &truth).is_some())
        .step_by(4)
        .take(15)
        .collect();
    let runs = measured_under(&costed, &truth);
    assert_eq!(runs.len(), 15);
    let refs: Vec<&Prepared> = runs.iter().collect();
    let fit = fit(&refs);
    println!("{fit:?}");
    assert!(fit.fitted.contains(&"attention"), "{fit:?}");
    assert!((fit.factors.attention - 0.6193).abs() < 0.01, "{fit:?}");
    assert!((fit.factors.gemm - 1.0).abs() < 0.01, "{fit:?}");
    // The shipped model's runs give the shipped attention back.
    let plain = measured_under(&runs, &Factors::ONE);
    let refs: Vec<&Prepared> = plain.iter().collect();
    assert!((fit_of(&refs).factors.attention - 1.0).abs() < 0.005);
}

/// Fifteen runs of one layout move alike under any attention factor: halving it moves each by
/// the same share, so it cannot be told from the GEMM factor and is not fitted, however many
/// runs there are. A slower attention kernel then reads as a slower GEMM.
#[test]
fn runs_of_one_layout_leave_attention_to_the_gemm_factor() {
    let truth = Factors {
        attention: 0.6,
        ..Factors::ONE
    };
    let one = prepared()
        .into_iter()
        .find(|r| r.family == "nemo2407")
        .unwrap();
    let mut run = one.clone();
    run.measured = predict(&one, &truth).unwrap();
    let runs = vec![run; 15];
    let refs: Vec<&Prepared> = runs.iter().collect();
    let fit = fit(&refs);
    assert!(!fit.fitted.contains(&"attention"), "{fit:?}");
    assert!(fit.factors.gemm < 1.0, "{fit:?}");
}
