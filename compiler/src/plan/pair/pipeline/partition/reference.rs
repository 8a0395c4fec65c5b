//! What the tests check the partition against: the reference programmes the min-max search
//! replaced, and the whole bisection the floor bound's early stop must agree with.

use super::super::{PipelineShape, PipelineSpec};
use super::{Costing, stager, useful_pace};

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
/// a tenth either side, twice and half of it, and none. Returns the bound.
pub(in crate::plan::pair::pipeline) fn check_least_slowest(
    spec: &PipelineSpec<'_>,
    costing: &Costing<'_, '_>,
    shape: PipelineShape,
) -> f64 {
    let stager = stager(spec, costing, shape);
    let least = stager.least_slowest();
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
    least
}
