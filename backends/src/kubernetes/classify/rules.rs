//! Which fields of which Kubernetes kinds a running job's objects may change, with the source of
//! each rule; `docs/gitops.md` shows the same table.
//!
//! A field path is a list of segments: map keys as they are written (label keys keep their dots
//! and slashes) and `*` for any list index. The longest rule whose path is a prefix of a changed
//! field decides; a field no rule names is immutable, and a kind no table names is replaced
//! whole: loam never claims an update in place that it cannot point to a rule for.

/// What a change of a field does to a running job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mutability {
    /// The API server (or the operator's webhook) accepts the change on a running object.
    Mutable,
    /// The change is refused (or ignored) on a running object: delete and create it again.
    Immutable,
}

/// One rule: a field path prefix, whether it may change, and why.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// Segments of the field path; `*` matches any list index.
    pub path: &'static [&'static str],
    /// Whether a change under this path may be applied to a running object.
    pub mutability: Mutability,
    /// Why, in a few words, for the reason shown to the user.
    pub why: &'static str,
}

/// The rules of one kind.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// API group (`""` for the core group), as in `apiVersion` before the `/`.
    pub group: &'static str,
    /// `kind`.
    pub kind: &'static str,
    /// A shared cluster object (queue, flavour, priority class): its changes update the cluster,
    /// not the job.
    pub shared: bool,
    /// Why a field that no rule names may not change.
    pub default_why: &'static str,
    /// The rules, in any order.
    pub rules: &'static [Rule],
}

const fn mutable(path: &'static [&'static str], why: &'static str) -> Rule {
    Rule {
        path,
        mutability: Mutability::Mutable,
        why,
    }
}

const fn immutable(path: &'static [&'static str], why: &'static str) -> Rule {
    Rule {
        path,
        mutability: Mutability::Immutable,
        why,
    }
}

const METADATA: &str = "labels and annotations may change on any object";
/// Kueue's job webhook (`jobframework` `validateUpdateForQueueName`): the queue of an unsuspended
/// job is fixed.
const QUEUE: &str = "Kueue refuses a new queue for a running job";
/// Kueue's job webhook (`validateUpdateForWorkloadPriorityClassName`): fixed on a running job in
/// most Kueue releases, so loam does not count on the releases that allow it.
const PRIORITY: &str = "Kueue refuses a new priority class for a running job";

/// The kinds loam knows, job objects first.
pub const KINDS: &[Kind] = &[
    Kind {
        group: "jobset.x-k8s.io",
        kind: "JobSet",
        shared: false,
        default_why: "not known to be mutable on a running JobSet",
        rules: &[
            mutable(&["metadata", "labels"], METADATA),
            mutable(&["metadata", "annotations"], METADATA),
            immutable(&["metadata", "labels", "kueue.x-k8s.io/queue-name"], QUEUE),
            immutable(
                &["metadata", "labels", "kueue.x-k8s.io/priority-class"],
                PRIORITY,
            ),
            // JobSet's validating webhook (`ValidateUpdate`) compares `replicatedJobs` whole; it
            // lets pod labels, annotations, node selectors, tolerations and scheduling gates
            // change only while the JobSet is suspended, which a running one is not.
            immutable(&["spec", "replicatedJobs"], "immutable on a running JobSet"),
            immutable(&["spec", "managedBy"], "immutable on a JobSet"),
            // CEL rules `self == oldSelf` on the JobSet CRD.
            immutable(&["spec", "network"], "immutable on a JobSet"),
            immutable(&["spec", "successPolicy"], "immutable on a JobSet"),
            immutable(&["spec", "failurePolicy"], "immutable on a JobSet"),
            immutable(&["spec", "startupPolicy"], "immutable on a JobSet"),
            immutable(&["spec", "volumeClaimPolicies"], "immutable on a JobSet"),
            mutable(
                &["spec", "suspend"],
                "a JobSet may be suspended and resumed",
            ),
            mutable(
                &["spec", "ttlSecondsAfterFinished"],
                "neither the webhook nor the CRD fixes it",
            ),
        ],
    },
    Kind {
        group: "batch",
        kind: "Job",
        shared: false,
        default_why: "not known to be mutable on a running Job",
        rules: &[
            mutable(&["metadata", "labels"], METADATA),
            mutable(&["metadata", "annotations"], METADATA),
            immutable(&["metadata", "labels", "kueue.x-k8s.io/queue-name"], QUEUE),
            immutable(
                &["metadata", "labels", "kueue.x-k8s.io/priority-class"],
                PRIORITY,
            ),
            // Kubernetes `ValidateJobSpecUpdate`: the template may change only in its
            // scheduling directives and only while the Job is suspended.
            immutable(
                &["spec", "template"],
                "a running Job's pod template is immutable",
            ),
            immutable(&["spec", "completions"], "immutable on a Job"),
            immutable(&["spec", "selector"], "immutable on a Job"),
            immutable(&["spec", "completionMode"], "immutable on a Job"),
            immutable(&["spec", "podFailurePolicy"], "immutable on a Job"),
            mutable(&["spec", "parallelism"], "a Job may be scaled"),
            mutable(&["spec", "suspend"], "a Job may be suspended and resumed"),
            mutable(&["spec", "activeDeadlineSeconds"], "mutable on a Job"),
            mutable(&["spec", "ttlSecondsAfterFinished"], "mutable on a Job"),
            mutable(&["spec", "backoffLimit"], "mutable on a Job"),
        ],
    },
    Kind {
        group: "batch.volcano.sh",
        kind: "Job",
        shared: false,
        // Volcano's job admission webhook (`validateJobUpdate`): "other fields under spec are
        // not allowed to mutate", and tasks may not be added or removed.
        default_why: "immutable once a Volcano Job is created",
        rules: &[
            mutable(&["metadata", "labels"], METADATA),
            mutable(&["metadata", "annotations"], METADATA),
            mutable(&["spec", "minAvailable"], "Volcano allows rescaling a Job"),
            mutable(
                &["spec", "priorityClassName"],
                "Volcano allows a new priority",
            ),
            mutable(
                &["spec", "tasks", "*", "replicas"],
                "Volcano allows rescaling a task",
            ),
            mutable(
                &["spec", "tasks", "*", "minAvailable"],
                "Volcano allows rescaling a task",
            ),
        ],
    },
    Kind {
        group: "",
        kind: "ConfigMap",
        shared: false,
        default_why: "not known to be mutable on a ConfigMap",
        rules: &[
            mutable(&["metadata", "labels"], METADATA),
            mutable(&["metadata", "annotations"], METADATA),
            // Mounted ConfigMaps are refreshed by the kubelet; the trainer reads the plan when it
            // starts, so a running trainer sees it at its next restart.
            mutable(
                &["data"],
                "ConfigMap data may change; trainers read it at their next start",
            ),
            mutable(
                &["binaryData"],
                "ConfigMap data may change; trainers read it at their next start",
            ),
            immutable(&["immutable"], "`immutable: true` cannot be undone"),
        ],
    },
    // The daily window of an interruptible job (`40-window.yaml`): a CronJob that suspends and
    // resumes the JobSet, and the account and role it runs with. None of them is the running
    // job: a new schedule is taken by the next run of the CronJob.
    Kind {
        group: "batch",
        kind: "CronJob",
        shared: false,
        default_why: "not known to be mutable on a CronJob",
        rules: &[
            mutable(&["metadata", "labels"], METADATA),
            mutable(&["metadata", "annotations"], METADATA),
            // Kubernetes `ValidateCronJobUpdate` (`pkg/apis/batch/validation`) validates the new
            // spec and refuses no change of it: schedule, suspend, time zone and job template.
            mutable(
                &["spec"],
                "a CronJob's schedule and template may change; its next run takes them",
            ),
        ],
    },
    Kind {
        group: "",
        kind: "ServiceAccount",
        shared: false,
        default_why: "not known to be mutable on a ServiceAccount",
        rules: &[
            mutable(&["metadata", "labels"], METADATA),
            mutable(&["metadata", "annotations"], METADATA),
            mutable(&["secrets"], "a ServiceAccount's secrets may change"),
            mutable(
                &["imagePullSecrets"],
                "a ServiceAccount's secrets may change",
            ),
            mutable(
                &["automountServiceAccountToken"],
                "a ServiceAccount's token mount may change",
            ),
        ],
    },
    Kind {
        group: "rbac.authorization.k8s.io",
        kind: "Role",
        shared: false,
        default_why: "not known to be mutable on a Role",
        rules: &[
            mutable(&["metadata", "labels"], METADATA),
            mutable(&["metadata", "annotations"], METADATA),
            mutable(&["rules"], "a Role's rules may change"),
        ],
    },
    Kind {
        group: "rbac.authorization.k8s.io",
        kind: "RoleBinding",
        shared: false,
        // Kubernetes `ValidateRoleBindingUpdate` (`pkg/apis/rbac/validation`): `roleRef` is
        // immutable, the subjects are not.
        default_why: "a RoleBinding's roleRef cannot change",
        rules: &[
            mutable(&["metadata", "labels"], METADATA),
            mutable(&["metadata", "annotations"], METADATA),
            mutable(&["subjects"], "a RoleBinding's subjects may change"),
        ],
    },
    shared("kueue.x-k8s.io", "LocalQueue"),
    shared("kueue.x-k8s.io", "ClusterQueue"),
    shared("kueue.x-k8s.io", "ResourceFlavor"),
    shared("kueue.x-k8s.io", "WorkloadPriorityClass"),
    shared("kueue.x-k8s.io", "AdmissionCheck"),
    shared("kueue.x-k8s.io", "Cohort"),
    shared("kueue.x-k8s.io", "Topology"),
    shared("scheduling.volcano.sh", "Queue"),
    shared("scheduling.k8s.io", "PriorityClass"),
    shared("", "Namespace"),
    shared("", "PersistentVolumeClaim"),
];

const fn shared(group: &'static str, kind: &'static str) -> Kind {
    Kind {
        group,
        kind,
        shared: true,
        default_why: "a shared cluster object",
        rules: &[],
    }
}

/// The rules of `kind` in API group `group`, if loam knows it.
pub fn find(group: &str, kind: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|k| k.group == group && k.kind == kind)
}

/// Whether a rule's path is a prefix of `path`.
fn matches(rule: &[&str], path: &[String]) -> bool {
    rule.len() <= path.len()
        && rule
            .iter()
            .zip(path)
            .all(|(r, p)| *r == p || (*r == "*" && p.parse::<usize>().is_ok()))
}

/// The rule that decides a change at `path` (the longest matching one), or `None` when no rule
/// names it (then it is immutable: see [`Kind::default_why`]).
pub fn decide(kind: &Kind, path: &[String]) -> Option<&'static Rule> {
    kind.rules
        .iter()
        .filter(|r| matches(r.path, path))
        .max_by_key(|r| r.path.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn the_longest_rule_decides() {
        let jobset = find("jobset.x-k8s.io", "JobSet").unwrap();
        let label = decide(jobset, &path(&["metadata", "labels", "team"])).unwrap();
        assert_eq!(label.mutability, Mutability::Mutable);
        let queue = decide(
            jobset,
            &path(&["metadata", "labels", "kueue.x-k8s.io/queue-name"]),
        )
        .unwrap();
        assert_eq!(queue.mutability, Mutability::Immutable);
        let args = path(&["spec", "replicatedJobs", "0", "template", "spec"]);
        assert_eq!(
            decide(jobset, &args).unwrap().mutability,
            Mutability::Immutable
        );
        assert!(decide(jobset, &path(&["spec", "coordinator"])).is_none());
    }

    #[test]
    fn volcano_tasks_may_rescale_but_not_change_their_template() {
        let job = find("batch.volcano.sh", "Job").unwrap();
        let replicas = path(&["spec", "tasks", "1", "replicas"]);
        assert_eq!(
            decide(job, &replicas).unwrap().mutability,
            Mutability::Mutable
        );
        assert!(decide(job, &path(&["spec", "tasks", "1", "template"])).is_none());
        assert!(decide(job, &path(&["spec", "tasks", "x", "replicas"])).is_none());
    }
}
