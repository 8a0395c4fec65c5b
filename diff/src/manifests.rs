//! The manifests a job's plan turns into on each side, rendered by `loam-backends` as
//! `loam emit` writes them, and their unified diff.

use super::side::Side;
use loam_backends::{Options, Target};
use loam_compiler::catalogue::{builtin, facts};
use loam_ir::cluster::vendor::Vendors;
use loam_ir::plan::{FORMAT_VERSION, Plan, PlanDocument};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The manifests of one plan, by path; empty when the backend refuses the plan (an infeasible
/// plan has none).
pub fn render(plan: &Plan, side: &Side, target: Target) -> BTreeMap<String, String> {
    let doc = PlanDocument {
        format_version: FORMAT_VERSION.to_string(),
        catalogue_digest: side.catalogue_digest.clone().unwrap_or_default(),
        plans: vec![plan.clone()],
        services: Vec::new(),
    };
    let options = match &side.specs.catalogue {
        Some(catalogue) => Options {
            tenants: facts::tenancies(&doc, catalogue),
            node_groups: facts::node_group_devices(&doc, catalogue),
            // Every node group of the plan's sites, as `loam emit` passes them: without them
            // the diff's prerequisites held only the node groups the diffed job uses.
            sites: facts::site_node_groups(&doc, catalogue),
            ..Options::new(facts::vendors(catalogue))
        },
        None => Options::new(shipped_vendors()),
    };
    match loam_backends::render(&doc, target, &options) {
        Ok(manifests) => manifests
            .into_iter()
            .map(|m| (m.path, m.contents))
            .collect(),
        Err(_) => BTreeMap::new(),
    }
}

/// The most lines of one job's manifest diff; the rest is counted in a last line. A job that
/// moves sites rewrites every manifest (the review's six-job pull request was 348 KB of text):
/// the diff is for reading what changes, `loam emit` writes the whole manifests.
pub const MAX_DIFF_LINES: usize = 400;

/// The unified diff of two sets of rendered manifests, file by file in path order; `None` when
/// they are the same. Shared cluster files only at base (the prerequisites of a site the job
/// leaves) are one line, not a deletion: they stay while other jobs use them. At most
/// [`MAX_DIFF_LINES`] lines, then a line that counts the rest.
pub fn diff(old: &BTreeMap<String, String>, new: &BTreeMap<String, String>) -> Option<String> {
    let mut paths: Vec<&String> = old.keys().chain(new.keys()).collect();
    paths.sort();
    paths.dedup();
    let mut out = String::new();
    let mut left_behind = 0usize;
    for path in paths {
        let a = old.get(path).map_or("", String::as_str);
        let b = new.get(path).map_or("", String::as_str);
        if a == b {
            continue;
        }
        if b.is_empty() && loam_backends::change::is_shared(path) {
            left_behind += 1;
            continue;
        }
        let text = similar::TextDiff::from_lines(a, b)
            .unified_diff()
            .context_radius(2)
            .header(&format!("a/{path}"), &format!("b/{path}"))
            .to_string();
        out.push_str(&text);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    let lines = out.lines().count();
    if lines > MAX_DIFF_LINES {
        let kept: Vec<&str> = out.lines().take(MAX_DIFF_LINES).collect();
        out = format!(
            "{}\n# … {} more lines of this diff; `loam emit` writes the whole manifests\n",
            kept.join("\n"),
            lines - MAX_DIFF_LINES
        );
    }
    if left_behind > 0 {
        out.push_str(&format!(
            "# {left_behind} shared cluster files of the sites the job leaves are not shown: they stay while other jobs use them\n"
        ));
    }
    (!out.is_empty()).then_some(out)
}

/// The shipped catalogue's vendors, loaded once: what a side without a catalogue renders with.
fn shipped_vendors() -> Vendors {
    static SHIPPED: OnceLock<Vendors> = OnceLock::new();
    SHIPPED.get_or_init(|| facts::vendors(&builtin())).clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(entries: &[(&str, String)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(p, t)| ((*p).to_string(), t.clone()))
            .collect()
    }

    /// The review's pr8c (finding 7): a job that leaves a site read as deleting that site's
    /// namespaces and queues, 89 lines of the comment. They are one line now; the shared files
    /// the job brings to its new site are still shown whole (they must be applied).
    #[test]
    fn shared_files_left_behind_are_one_line_and_new_ones_are_shown() {
        let namespace =
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-nlp\n".to_string();
        let old = files(&[
            (
                "_prerequisites/shanghai/00-namespace-team-nlp.yaml",
                namespace.clone(),
            ),
            (
                "_prerequisites/shanghai/00-namespace-team-cv.yaml",
                namespace.clone(),
            ),
            ("shanghai/job-a/20-jobset.yaml", "replicas: 64\n".into()),
        ]);
        let new = files(&[
            (
                "_prerequisites/guiyang/00-namespace-team-nlp.yaml",
                namespace,
            ),
            ("guiyang/job-a/20-jobset.yaml", "replicas: 32\n".into()),
        ]);
        let shown = diff(&old, &new).unwrap();
        assert!(!shown.contains("a/_prerequisites/shanghai"), "{shown}");
        assert!(
            shown.contains("+++ b/_prerequisites/guiyang/00-namespace-team-nlp.yaml"),
            "{shown}"
        );
        assert!(
            shown.contains("-replicas: 64") && shown.contains("+replicas: 32"),
            "{shown}"
        );
        assert!(
            shown.ends_with("# 2 shared cluster files of the sites the job leaves are not shown: they stay while other jobs use them\n"),
            "{shown}"
        );
    }

    #[test]
    fn a_long_diff_is_cut_at_the_bound_and_counts_the_rest() {
        let old = files(&[("site/job/a.yaml", String::new())]);
        let body: String = (0..1_000).map(|i| format!("line: {i}\n")).collect();
        let new = files(&[("site/job/a.yaml", body)]);
        let shown = diff(&old, &new).unwrap();
        // 1,000 added lines, a `---`, a `+++` and a `@@` header: 1,003 lines, 400 kept.
        assert_eq!(shown.lines().count(), MAX_DIFF_LINES + 1, "{shown}");
        assert!(
            shown.ends_with(
                "# … 603 more lines of this diff; `loam emit` writes the whole manifests\n"
            ),
            "{shown}"
        );
    }
}
