//! What the tests check the partition against: the reference programmes the min-max search
//! replaced, and the whole bisection the floor bound's early stop must agree with.

use super::super::{PipelineShape, PipelineSpec};
use super::{Costing, MODES, span, stager, useful_pace};

/// A programme the tests compare the min-max partition with.
#[derive(Debug, Clone, Copy)]
pub(in crate::plan::pair::pipeline) enum Reference {
    /// The scan the partition replaced, which stopped at the first end no faster than the best.
    Scan,
    /// Every end up to the first that cannot run.
    Exhaustive,
}

/// One configuration's partition by the min-max search and by the reference programmes: stage
/// ranges and the slowest stage's pace.
pub(in crate::plan::pair::pipeline) type Compared = [Option<(Vec<(usize, usize)>, f64)>; 3];

/// The partitions of one configuration, see [`Compared`]: the search's, the exhaustive
/// programme's and the old scan's.
pub(in crate::plan::pair::pipeline) fn compare_partitions(
    spec: &PipelineSpec<'_>,
    costing: &Costing<'_, '_>,
    shape: PipelineShape,
) -> Compared {
    let stager = stager(spec, costing, shape);
    let slowest = |stages: Vec<(usize, usize)>| {
        let pace = stages
            .iter()
            .enumerate()
            .map(|(k, &(i, j))| stager.cost(k, i, j).map_or(f64::INFINITY, |c| c.paced))
            .fold(0.0, f64::max);
        (stages, pace)
    };
    let fast = stager.partition(f64::INFINITY).map(|stages| {
        stages
            .into_iter()
            .map(|(i, j, _)| (i, j))
            .collect::<Vec<_>>()
    });
    [
        fast.map(slowest),
        stager.partition_by(Reference::Exhaustive).map(slowest),
        stager.partition_by(Reference::Scan).map(slowest),
    ]
}

/// Checks [`Stager::least_slowest_if`] on one configuration against the whole bisection, for
/// paces that `useful` accepts up to: the bound itself, its neighbouring floats, a millionth and
/// a tenth either side, twice and half of it, and none; and that the spread bound
/// ([`super::Stager::spread_floor`]) is at most the bound. Returns the bound and the spread
/// bound.
pub(in crate::plan::pair::pipeline) fn check_least_slowest(
    spec: &PipelineSpec<'_>,
    costing: &Costing<'_, '_>,
    shape: PipelineShape,
) -> (f64, f64) {
    let stager = stager(spec, costing, shape);
    let least = stager.least_slowest();
    let spread = stager.spread_floor();
    assert!(
        spread <= least,
        "{shape:?}: spread {spread} above the bound {least}"
    );
    let limits = [
        least,
        least.next_up(),
        least.next_down(),
        least * (1.0 + 1e-6),
        least * (1.0 - 1e-6),
        least * 1.1,
        least * 0.9,
        least * 2.0,
        least * 0.5,
        f64::INFINITY,
        0.0,
    ];
    for limit in limits {
        let useful = |pace: f64| pace <= limit;
        let answer = stager.least_slowest_if(useful);
        assert_eq!(
            answer.is_some(),
            useful(least),
            "{shape:?}: bound {least}, limit {limit}"
        );
        if let Some(from) = answer {
            // A pace the search may start the cap from: accepted, no lower than the bound, and
            // the same cap as from the bound itself.
            assert!(
                useful(from) && from >= least,
                "{shape:?}: {from} from {least}"
            );
            assert_eq!(
                useful_pace(from, useful).to_bits(),
                useful_pace(least, useful).to_bits(),
                "{shape:?}: cap from {from} and from the bound {least}, limit {limit}"
            );
        }
    }
    (least, spread)
}

/// Checks every stage floor of one configuration against the stage costs: for each stage
/// `k`, start `i` and end `j` among the cuts, `floor(k, i, j, rank)` is at most the stage's
/// paced time wherever it runs (`rank` its recomputation's), and never decreases as `j` grows
/// or as `i` falls. Returns the floors checked and how many of them counted the backward that
/// hides the reduction ([`super::Stager::unhidden_floor`] above `contention × reduce`).
pub(in crate::plan::pair::pipeline) fn check_floors(
    spec: &PipelineSpec<'_>,
    costing: &Costing<'_, '_>,
    shape: PipelineShape,
) -> (usize, usize) {
    let stager = stager(spec, costing, shape);
    let cuts = stager.cuts().to_vec();
    let (mut checked, mut tight) = (0, 0);
    for k in 0..stager.stage_count() {
        let g = usize::from(k >= shape.stages[0] as usize);
        for (a, &i) in cuts.iter().enumerate() {
            let mut last = f64::NEG_INFINITY;
            for &j in cuts.iter().skip(a + 1) {
                let floor = stager.floor(k, i, j, 0);
                assert!(
                    floor >= last,
                    "{shape:?} stage {k} [{i}, {j}): {floor} < {last}"
                );
                last = floor;
                if let Some(&before) = a.checked_sub(1).and_then(|b| cuts.get(b)) {
                    let wider = stager.floor(k, before, j, 0);
                    assert!(
                        wider >= floor,
                        "{shape:?} stage {k} [{before}, {j}) below [{i}, {j})"
                    );
                }
                if let Some(cost) = stager.cost(k, i, j) {
                    let rank = MODES.iter().position(|m| *m == cost.recompute).unwrap_or(0);
                    let ranked = stager.floor(k, i, j, rank);
                    assert!(
                        floor <= cost.paced && ranked <= cost.paced,
                        "{shape:?} stage {k} [{i}, {j}): floors {floor} and {ranked} above {}",
                        cost.paced
                    );
                }
                let (Some(side), Some(per)) = (stager.sides.get(g), stager.per_side.get(g)) else {
                    continue;
                };
                let params = span(stager.params, i, j);
                let least = params * per.reduce_per_param * per.contention.clamp(0.0, 1.0);
                if stager.unhidden_floor(side, per, params, i, j) > least {
                    tight += 1;
                }
                checked += 1;
            }
        }
    }
    (checked, tight)
}
