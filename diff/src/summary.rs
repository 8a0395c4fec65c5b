//! The counts a diff is summed up in, over jobs and services, and the sentences every format
//! leads with: the verdict (`will not run: …`, `1 to add, 2 to change, 0 to destroy`, `no
//! changes`) and the summary line.

/// How many jobs and services are added, changed, replaced and destroyed. A replacement (a
/// renamed job, or one whose manifests a running job cannot take) is counted as itself, not
/// as Terraform's one add and one destroy: a job that moves is not a deletion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Jobs and services created.
    pub add: usize,
    /// Jobs and services updated in place.
    pub change: usize,
    /// Jobs replaced (the old objects go, the new ones come and resume from a checkpoint).
    pub replace: usize,
    /// Jobs and services destroyed.
    pub destroy: usize,
    /// Jobs without changes.
    pub unchanged: usize,
    /// Services without changes.
    pub unchanged_services: usize,
    /// Jobs planned at head that cannot run as planned.
    pub infeasible: usize,
    /// Services planned at head that no deployment serves within their targets and budget.
    pub infeasible_services: usize,
    /// Jobs, services or files that do not check at head.
    pub errors: usize,
    /// Errors in the catalogue at head, and in how many of its files.
    pub catalogue_errors: (usize, usize),
    /// Jobs and services not planned at head because the catalogue does not load, or a
    /// catalogue file they use does not.
    pub unplanned: usize,
    /// Whether the catalogue at head has errors and still loaded without its broken files, so
    /// only the specs that use them were not planned.
    pub catalogue_partly: bool,
}

impl Summary {
    /// Whether anything changes.
    pub fn has_changes(&self) -> bool {
        self.add + self.change + self.replace + self.destroy > 0
    }

    /// Whether the head cannot be applied as it is: a job is infeasible or a spec does not check.
    pub fn blocks(&self) -> bool {
        self.infeasible + self.infeasible_services + self.errors + self.catalogue_errors.0 > 0
    }

    /// `1 to add, 2 to change, 0 to destroy`, with `1 to replace` before the destroys when a
    /// job is replaced.
    pub fn counts(&self) -> String {
        let replace = if self.replace > 0 {
            format!("{} to replace, ", self.replace)
        } else {
            String::new()
        };
        format!(
            "{} to add, {} to change, {replace}{} to destroy",
            self.add, self.change, self.destroy
        )
    }

    /// What blocks the head: `1 job infeasible, 1 spec with errors`; empty when nothing does.
    fn blockers(&self) -> String {
        let mut blockers = Vec::new();
        let (errors, files) = self.catalogue_errors;
        if errors > 0 {
            // The catalogue is the cause: its files are named, not every spec it stops.
            blockers.push(if self.catalogue_partly {
                format!(
                    "the catalogue has {} in {}",
                    plural(errors, "error"),
                    plural(files, "file")
                )
            } else {
                format!(
                    "the catalogue does not load ({} in {})",
                    plural(errors, "error"),
                    plural(files, "file")
                )
            });
            if self.unplanned > 0 {
                blockers.push(format!("{} not made", plural(self.unplanned, "plan")));
            }
        }
        if self.infeasible > 0 {
            blockers.push(format!("{} infeasible", plural(self.infeasible, "job")));
        }
        if self.infeasible_services > 0 {
            blockers.push(format!(
                "{} infeasible",
                plural(self.infeasible_services, "service")
            ));
        }
        if self.errors > 0 {
            blockers.push(format!(
                "{} {} with errors",
                self.errors,
                if self.errors == 1 { "spec" } else { "specs" }
            ));
        }
        blockers.join(", ")
    }

    /// The verdict a reviewer reads first: `will not run: 1 job infeasible, 1 spec with
    /// errors`, `1 to add, 2 to change, 0 to destroy`, or `no changes`.
    pub fn verdict(&self) -> String {
        if self.blocks() {
            return format!("will not run: {}", self.blockers());
        }
        if self.has_changes() {
            self.counts()
        } else {
            "no changes".to_string()
        }
    }

    /// `Plan: 1 to add, 2 to change, 0 to destroy.`, `No changes. The plans match.`, or, when
    /// the head cannot be applied, `Will not run: 1 job infeasible.` first (never "no
    /// changes" then: a spec with errors is not a head that matches).
    pub fn line(&self) -> String {
        let plan = if self.has_changes() {
            format!("Plan: {}.", self.counts())
        } else {
            "No changes. The plans match.".to_string()
        };
        if !self.blocks() {
            return plan;
        }
        let mut line = format!("Will not run: {}.", self.blockers());
        if self.has_changes() {
            line.push(' ');
            line.push_str(&plan);
        }
        line
    }

    /// What stays the same: `12 jobs and 3 services unchanged`; empty when nothing does.
    pub fn unchanged_text(&self) -> String {
        let jobs = (self.unchanged > 0).then(|| plural(self.unchanged, "job"));
        let services =
            (self.unchanged_services > 0).then(|| plural(self.unchanged_services, "service"));
        match (jobs, services) {
            (Some(j), Some(s)) => format!("{j} and {s} unchanged"),
            (Some(one), None) | (None, Some(one)) => format!("{one} unchanged"),
            (None, None) => String::new(),
        }
    }

    /// [`Summary::line`] followed by how many jobs and services stay unchanged, as text and
    /// markdown show it.
    pub fn line_with_unchanged(&self) -> String {
        let mut line = self.line();
        let unchanged = self.unchanged_text();
        if !unchanged.is_empty() {
            line.push_str(&format!(" {unchanged}."));
        }
        line
    }
}

/// `1 job`, `3 services`.
fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_head_never_reads_no_changes() {
        // The review's pr6: a typo in one spec, the other 11 jobs unchanged.
        let typo = Summary {
            errors: 1,
            unchanged: 11,
            ..Summary::default()
        };
        assert_eq!(
            typo.line_with_unchanged(),
            "Will not run: 1 spec with errors. 11 jobs unchanged."
        );
        // An infeasible job and a replaced one: the verdict first, then the plan.
        let both = Summary {
            infeasible: 1,
            replace: 1,
            unchanged_services: 3,
            ..Summary::default()
        };
        assert_eq!(
            both.line_with_unchanged(),
            "Will not run: 1 job infeasible. Plan: 0 to add, 0 to change, 1 to replace, 0 to destroy. 3 services unchanged."
        );
        assert_eq!(Summary::default().line(), "No changes. The plans match.");
    }

    #[test]
    fn a_broken_catalogue_is_one_cause_not_a_count_of_specs() {
        let broken = Summary {
            catalogue_errors: (4, 1),
            unplanned: 12,
            ..Summary::default()
        };
        assert!(broken.blocks());
        assert_eq!(
            broken.verdict(),
            "will not run: the catalogue does not load (4 errors in 1 file), 12 plans not made"
        );
        // Loaded without the broken pool file: only the specs of that pool are not planned.
        let partly = Summary {
            catalogue_errors: (4, 1),
            unplanned: 3,
            catalogue_partly: true,
            unchanged: 1,
            ..Summary::default()
        };
        assert_eq!(
            partly.verdict(),
            "will not run: the catalogue has 4 errors in 1 file, 3 plans not made"
        );
    }
}
