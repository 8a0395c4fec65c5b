//! `loam diff --format markdown` as a pull-request comment, on a repository of the shipped
//! examples and the six changes platform teams make: more tokens (the job no longer meets its
//! deadline), another device list, a catalogue price, a new job, a deleted job, a spec error.
//! Each comment must say in its first lines what changes, what it costs and whether it will
//! run; the totals must agree with `loam plan` of each revision; a comment for many jobs must
//! fit GitHub's limit.

use crate::git_repo;

use git_repo::{TempRepo, spec};
use serde_json::Value;

/// The examples the repository holds: a cost-bound pretraining, a small fine-tune, an MoE, an
/// interruptible job (whose window sets its time).
const EXAMPLES: [&str; 4] = [
    "llama3-70b-pretrain",
    "llama3-8b-finetune",
    "mixtral-8x7b-moe",
    "interruptible-cost-7b",
];

fn example(name: &str) -> String {
    std::fs::read_to_string(format!("../examples/{name}.loam")).unwrap()
}

/// A repository on `main` with the catalogue and the examples under `jobs/`.
fn repository() -> TempRepo {
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    for name in EXAMPLES {
        repo.write(&format!("jobs/{name}.loam"), example(name));
    }
    repo.commit("the examples");
    repo
}

/// Runs the pull request's diff in every format: exit code, markdown, JSON.
fn diff(repo: &TempRepo, branch: &str) -> (u8, String, Value) {
    let (code, markdown, err) = repo.loam(&[
        "diff",
        "--base",
        "main",
        "--head",
        branch,
        "--format",
        "markdown",
        "--detailed-exitcode",
    ]);
    let (json_code, json, _) = repo.loam(&[
        "diff", "--base", "main", "--head", branch, "--format", "json",
    ]);
    assert_eq!(code == 1, json_code == 1, "{err}");
    (code, markdown, serde_json::from_str(&json).unwrap())
}

/// The plans of the work tree, by job name, as `loam plan --format json` gives them.
fn plans(repo: &TempRepo) -> serde_json::Map<String, Value> {
    let catalogue = repo.path().join("specs");
    let jobs = repo.path().join("jobs");
    let (_, json, _) = repo.loam(&[
        "plan",
        "--format",
        "json",
        "--catalogue",
        catalogue.to_str().unwrap(),
        jobs.to_str().unwrap(),
    ]);
    let doc: Value = serde_json::from_str(&json).unwrap();
    doc["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["job"].as_str().unwrap().to_string(), p.clone()))
        .collect()
}

fn cost(plan: &Value) -> f64 {
    plan["estimate"]["cost"]["amount"].as_f64().unwrap()
}

/// The first lines of the comment, before any table: what a reviewer reads in ten seconds.
fn headline(markdown: &str) -> String {
    markdown.lines().take(4).collect::<Vec<_>>().join("\n")
}

fn job_rows(markdown: &str) -> Vec<&str> {
    markdown
        .lines()
        .filter(|l| l.starts_with("| `") && !l.starts_with("| `nlp`"))
        .filter(|l| {
            ["| `~` |", "| `+` |", "| `-` |", "| `-/+` |", "| `!` |"]
                .iter()
                .any(|s| l.starts_with(s))
        })
        .collect()
}

#[test]
fn six_pull_requests_each_say_what_changes_what_it_costs_and_whether_it_runs() {
    let mut repo = repository();
    let base = plans(&repo);

    // 1. Twice the tokens: the job misses its deadline and budget.
    repo.branch("tokens");
    let path = "jobs/llama3-70b-pretrain.loam";
    repo.write(path, repo.read(path).replace("= 2T", "= 4T"));
    repo.commit("twice the tokens");
    let doubled = plans(&repo);
    assert!(
        !doubled["llama3-70b-pretrain"]["feasible"]
            .as_bool()
            .unwrap()
    );
    repo.checkout("main");
    let (code, markdown, json) = diff(&repo, "tokens");
    assert_eq!(code, 1, "an infeasible head fails the check: {markdown}");
    assert!(
        headline(&markdown).contains("Will not run: 1 job infeasible"),
        "{markdown}"
    );
    let rows = job_rows(&markdown);
    assert_eq!(rows.len(), 1, "{markdown}");
    assert!(
        rows[0].starts_with("| `!` | `llama3-70b-pretrain` |"),
        "{}",
        rows[0]
    );
    assert!(
        rows[0].contains("**infeasible**: misses the deadline by"),
        "{}",
        rows[0]
    );
    let job = json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job"] == "llama3-70b-pretrain")
        .unwrap();
    assert_eq!(job["actions"], serde_json::json!(["infeasible"]));
    assert!(
        job["classification"].is_null(),
        "no manifests are judged for a job that will not run"
    );
    assert_eq!(json["summary"]["infeasible"], 1);
    // The located planner error is in the comment, not an instruction to run a command.
    assert!(markdown.contains("L3003"), "{markdown}");
    assert!(
        markdown.contains("jobs/llama3-70b-pretrain.loam:"),
        "{markdown}"
    );

    // 2. Another device list: the job moves to another device type.
    repo.branch("devices");
    let path = "jobs/llama3-8b-finetune.loam";
    repo.write(
        path,
        repo.read(path).replace(
            "max_devices = 16",
            "devices     = [H800_SXM]\n    max_devices = 16",
        ),
    );
    repo.commit("only H800");
    let moved = plans(&repo);
    repo.checkout("main");
    let (code, markdown, json) = diff(&repo, "devices");
    assert_eq!(code, 2, "{markdown}");
    let rows = job_rows(&markdown);
    assert_eq!(rows.len(), 1, "{markdown}");
    assert!(rows[0].contains("`llama3-8b-sft`"), "{}", rows[0]);
    assert!(
        rows[0].contains("placement.devices H100_SXM → H800_SXM"),
        "{}",
        rows[0]
    );
    let delta = cost(&moved["llama3-8b-sft"]) - cost(&base["llama3-8b-sft"]);
    let total = json["totals"].as_array().unwrap().last().unwrap();
    assert!(total["tenant"].is_null());
    let reported = total["delta"]["cost"]["CNY"].as_f64().unwrap();
    assert!(
        (reported - delta).abs() <= 1e-4 * delta.abs().max(1.0),
        "{reported} vs {delta}"
    );

    // 3. A price no chosen plan pays (an alternative's node group): nothing changes.
    repo.branch("unchosen-price");
    let pool = repo.read("specs/pools/xirang.yaml");
    let at = pool.find("name: uq-a100-a").unwrap();
    let price = at + pool[at..].find("price: ").unwrap();
    let end = price + pool[price..].find(" CNY").unwrap();
    let mut changed = pool.clone();
    changed.replace_range(price..end, "price: 99.0");
    repo.write("specs/pools/xirang.yaml", changed);
    repo.commit("a price no plan pays");
    let repriced = plans(&repo);
    repo.checkout("main");
    let (code, markdown, _) = diff(&repo, "unchosen-price");
    let same = |a: &Value, b: &Value| a["estimate"] == b["estimate"] && a["groups"] == b["groups"];
    let unchanged = base.iter().all(|(name, plan)| same(plan, &repriced[name]));
    assert!(unchanged, "the price must be one no chosen plan pays");
    assert_eq!(
        code, 0,
        "a job whose chosen plan is unchanged does not appear: {markdown}"
    );
    assert!(job_rows(&markdown).is_empty(), "{markdown}");
    assert!(headline(&markdown).contains("No changes"), "{markdown}");

    // 4. A price the chosen plans pay: exactly the jobs whose chosen plan changed appear.
    repo.branch("price");
    let pool = repo.read("specs/pools/xirang.yaml");
    repo.write(
        "specs/pools/xirang.yaml",
        pool.replacen("price: 32.0 CNY", "price: 33.0 CNY", 1),
    );
    repo.commit("H100 costs more");
    let repriced = plans(&repo);
    repo.checkout("main");
    let (code, markdown, json) = diff(&repo, "price");
    assert_eq!(code, 2, "{markdown}");
    let expected: Vec<&String> = base
        .keys()
        .filter(|name| !same(&base[*name], &repriced[*name]))
        .collect();
    assert!(!expected.is_empty());
    let rows = job_rows(&markdown);
    assert_eq!(rows.len(), expected.len(), "{markdown}");
    for name in &expected {
        assert!(
            rows.iter().any(|r| r.contains(&format!("`{name}`"))),
            "{name}: {markdown}"
        );
    }
    let delta: f64 = expected
        .iter()
        .map(|n| cost(&repriced[*n]) - cost(&base[*n]))
        .sum();
    let reported = json["totals"].as_array().unwrap().last().unwrap()["delta"]["cost"]["CNY"]
        .as_f64()
        .unwrap();
    assert!(
        (reported - delta).abs() <= 1e-4 * delta.abs(),
        "{reported} vs {delta}"
    );
    assert!(markdown.contains("| tenant | jobs changed | device-hours | cost | energy | carbon |"));

    // 5. A new job.
    repo.branch("add");
    repo.write("jobs/qwen-7b.loam", spec("qwen-7b", 64, 8));
    repo.commit("a new job");
    repo.checkout("main");
    let (code, markdown, json) = diff(&repo, "add");
    assert_eq!(code, 2, "{markdown}");
    assert!(
        headline(&markdown).contains("1 to add, 0 to change, 0 to destroy"),
        "{markdown}"
    );
    let rows = job_rows(&markdown);
    assert_eq!(rows.len(), 1);
    assert!(rows[0].starts_with("| `+` | `qwen-7b` |"), "{}", rows[0]);
    assert_eq!(
        json["totals"].as_array().unwrap().last().unwrap()["delta"]["jobs"],
        1
    );
    // What the new job does to admission across the pool is said, and only for changed jobs.
    let admission = json["admission_changes"].as_array().unwrap();
    let new_job = admission.iter().find(|c| c["job"] == "qwen-7b").unwrap();
    assert!(new_job["before"].is_null(), "{new_job}");
    assert!(markdown.contains("### Admission changes"), "{markdown}");
    assert!(
        markdown.contains(new_job["sentence"].as_str().unwrap()),
        "{markdown}"
    );
    assert!(admission.iter().all(|c| c["before"] != c["after"]));

    // 6. A deleted job: its cost leaves the totals.
    repo.branch("delete");
    repo.remove("jobs/mixtral-8x7b-moe.loam");
    repo.commit("no more mixtral");
    repo.checkout("main");
    let (code, markdown, json) = diff(&repo, "delete");
    assert_eq!(code, 2, "{markdown}");
    assert!(
        headline(&markdown).contains("0 to add, 0 to change, 1 to destroy"),
        "{markdown}"
    );
    let reported = json["totals"].as_array().unwrap().last().unwrap()["delta"]["cost"]["CNY"]
        .as_f64()
        .unwrap();
    let removed = cost(&base["mixtral-8x7b"]);
    assert!(
        (reported + removed).abs() <= 1e-4 * removed,
        "{reported} vs -{removed}"
    );

    // 7. A spec error: the comment shows the located error and the check fails.
    repo.branch("error");
    let path = "jobs/llama3-70b-pretrain.loam";
    repo.write(path, repo.read(path).replace("hidden   =", "hiden   ="));
    repo.commit("a typo");
    repo.checkout("main");
    let (code, markdown, _) = diff(&repo, "error");
    assert_eq!(code, 1, "{markdown}");
    assert!(
        headline(&markdown).contains("Will not run: 1 spec with errors"),
        "{markdown}"
    );
    assert!(
        markdown.contains("unknown field `hiden` in `model`"),
        "{markdown}"
    );
    assert!(
        markdown.contains("jobs/llama3-70b-pretrain.loam:"),
        "{markdown}"
    );
    assert!(markdown.contains("did you mean `hidden`?"), "{markdown}");
    // Its cost is not counted as saved.
    assert!(!markdown.contains("(-17,"), "{markdown}");
}

#[test]
fn an_interruptible_job_shows_its_window_time_everywhere() {
    let repo = repository();
    let plan = &plans(&repo)["qwen-7b-continued"];
    let window_h = plan["schedule"]["train_time_h"].as_f64().unwrap();
    let training_h = plan["estimate"]["train_time_h"].as_f64().unwrap();
    assert!(window_h > training_h);
    let days = format!("{:.1} days", window_h / 24.0);
    let (_, table, _) = repo.loam(&["plan"]);
    let block = table
        .split("\n\n")
        .find(|b| b.contains("qwen-7b-continued"))
        .unwrap();
    let time = block
        .lines()
        .find(|l| l.trim_start().starts_with("time"))
        .unwrap();
    assert!(time.contains(&days), "{time}");
    let (_, markdown, _) = repo.loam(&["plan", "--format", "markdown"]);
    assert!(markdown.contains(&format!("| time | {days}")), "{markdown}");
    assert!(
        markdown.contains("| schedule | interruptible"),
        "{markdown}"
    );
    // The deadline's slack is the window's.
    let deadline_h = 60.0 * 24.0;
    let spare = deadline_h - window_h - plan["data"]["transfer_h"].as_f64().unwrap_or(0.0);
    let why = plan["why"].as_str().unwrap();
    // Minutes below two hours, hours below two days, else days (`loam_ir::display::duration`).
    let stated = if spare < 2.0 {
        format!("({:.0} min to spare)", spare * 60.0)
    } else if spare < 48.0 {
        format!("({spare:.1} h to spare)")
    } else {
        format!("({:.1} days to spare)", spare / 24.0)
    };
    assert!(why.contains(&stated), "{why} vs {stated}");
}

#[test]
fn a_comment_for_many_changed_jobs_fits_githubs_limit() {
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    for i in 0..240 {
        let name = format!("team-job-{i:03}-with-a-long-descriptive-name");
        repo.write(&format!("jobs/{name}.loam"), spec(&name, 64, 8));
    }
    repo.commit("many jobs");
    for i in 0..240 {
        let name = format!("team-job-{i:03}-with-a-long-descriptive-name");
        repo.write(&format!("jobs/{name}.loam"), spec(&name, 128, 16));
    }
    repo.commit("every job doubles its batch");
    let (code, markdown, err) = repo.loam(&[
        "diff",
        "--base",
        "HEAD~1",
        "--format",
        "markdown",
        "--detailed-exitcode",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(markdown.len() < 60_000, "{} characters", markdown.len());
    assert!(
        headline(&markdown).contains("0 to add, 0 to change, 240 to replace, 0 to destroy"),
        "{}",
        headline(&markdown)
    );
    // The totals and the verdict come whole; what was left out is said.
    assert!(markdown.contains("| tenant | jobs changed |"));
    assert!(
        markdown.contains("Left out to stay under 60,000 characters"),
        "{markdown}"
    );
    assert!(
        !markdown.contains("apiVersion"),
        "no whole manifest in a comment"
    );
}

/// The services of the plan of the work tree, by name, as `loam plan --format json` gives them.
fn service_plans(repo: &TempRepo) -> serde_json::Map<String, Value> {
    let catalogue = repo.path().join("specs");
    let jobs = repo.path().join("jobs");
    let (_, json, _) = repo.loam(&[
        "plan",
        "--format",
        "json",
        "--catalogue",
        catalogue.to_str().unwrap(),
        jobs.to_str().unwrap(),
    ]);
    let doc: Value = serde_json::from_str(&json).unwrap();
    doc["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["service"].as_str().unwrap().to_string(), p.clone()))
        .collect()
}

/// The review's pr7 (docs/gitops.md, finding 1): three times the chat service's traffic used
/// to read "No changes" with exit 0. Now it is a change like a job's, in every format, with its
/// devices and its cost per month; deleting the service and breaking its spec are said too.
#[test]
fn a_services_traffic_change_is_a_change_in_every_format() {
    let mut repo = repository();
    repo.write(
        "jobs/llama31-70b-chat-service.loam",
        example("llama31-70b-chat-service"),
    );
    repo.commit("the chat service");
    let base = service_plans(&repo)["llama31-70b-chat"].clone();

    repo.branch("traffic");
    let path = "jobs/llama31-70b-chat-service.loam";
    let spec = repo.read(path);
    assert!(spec.contains("    rate = 20 "), "{spec}");
    repo.write(path, spec.replace("    rate = 20 ", "    rate = 60 "));
    repo.commit("chat: 3x traffic for launch");
    let head = service_plans(&repo)["llama31-70b-chat"].clone();
    repo.checkout("main");

    // Three times the requests need more replicas: more devices and a bigger bill.
    let devices = |p: &Value| p["estimate"]["devices"].as_u64().unwrap();
    let monthly = |p: &Value| p["estimate"]["cost_per_month"]["amount"].as_f64().unwrap();
    assert!(devices(&head) > devices(&base));
    assert!(monthly(&head) > monthly(&base));

    let (code, markdown, json) = diff(&repo, "traffic");
    assert_eq!(code, 2, "a service change is a change: {markdown}");
    let head_lines = headline(&markdown);
    assert!(
        head_lines.contains("0 to add, 1 to change, 0 to destroy")
            && head_lines.contains("4 jobs unchanged"),
        "{head_lines}"
    );
    // One row for the service: its verdict names the traffic, its devices and monthly cost
    // carry their deltas (the numbers `loam plan` gives each side).
    let row = markdown
        .lines()
        .find(|l| l.starts_with("| `~` | `llama31-70b-chat` |"))
        .unwrap_or_else(|| panic!("{markdown}"));
    assert!(
        row.contains("traffic.peak_rate 20.0 requests/s → 60.0 requests/s"),
        "{row}"
    );
    let added = devices(&head) - devices(&base);
    assert!(
        row.contains(&format!("{} (+{added}, ", devices(&head))),
        "{row}"
    );
    assert!(
        markdown.contains(
            "| tenant | services changed | devices at the busiest hour | cost per month |"
        ),
        "{markdown}"
    );
    let entry = json["services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["service"] == "llama31-70b-chat")
        .unwrap();
    assert_eq!(entry["actions"], serde_json::json!(["update"]));
    assert_eq!(json["summary"]["change"], 1);
    let total = json["service_totals"].as_array().unwrap().last().unwrap();
    assert!(total["tenant"].is_null());
    let delta = monthly(&head) - monthly(&base);
    let reported = total["delta"]["cost_per_month"]["CNY"].as_f64().unwrap();
    assert!(
        (reported - delta).abs() <= 1e-4 * delta,
        "{reported} vs {delta}"
    );
    assert_eq!(total["delta"]["devices"], added);
    // The job totals are not touched: a monthly bill is never added to a run's cost.
    let jobs_total = json["totals"].as_array().unwrap().last().unwrap();
    assert_eq!(jobs_total["delta"]["cost"]["CNY"], 0.0);

    for format in ["text", "github"] {
        let (code, out, _) = repo.loam(&[
            "diff",
            "--base",
            "main",
            "--head",
            "traffic",
            "--format",
            format,
            "--detailed-exitcode",
        ]);
        assert_eq!(code, 2, "{format}: {out}");
        assert!(!out.contains("No changes"), "{format}: {out}");
        assert!(
            out.contains("Plan: 0 to add, 1 to change, 0 to destroy."),
            "{format}: {out}"
        );
        assert!(
            out.contains("service \"llama31-70b-chat\" will be updated in place"),
            "{format}: {out}"
        );
    }

    // The HTML page of the same diff lists the service with its devices and monthly cost,
    // and leads with the same headline.
    let (code, page, _) = repo.loam(&[
        "diff", "--base", "main", "--head", "traffic", "--format", "html",
    ]);
    assert_eq!(code, 0, "{page}");
    let row = format!(
        "<td>~ update</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
        devices(&base),
        devices(&head)
    );
    assert!(page.contains(&row), "{row}");
    assert!(page.contains(">llama31-70b-chat</a>"), "the service's row");
    assert!(page.contains("<p>services +"), "the headline");

    // A deleted service is destroyed; a service whose spec breaks does not check.
    repo.branch("no-chat");
    repo.remove(path);
    repo.commit("no more chat");
    repo.checkout("main");
    let (code, markdown, _) = diff(&repo, "no-chat");
    assert_eq!(code, 2, "{markdown}");
    assert!(
        markdown.contains("| `-` | `llama31-70b-chat` |"),
        "{markdown}"
    );
    repo.branch("typo");
    let spec = repo.read(path);
    repo.write(path, spec.replace("tpot ", "tpto "));
    repo.commit("a typo in the service");
    repo.checkout("main");
    let (code, markdown, _) = diff(&repo, "typo");
    assert_eq!(code, 1, "{markdown}");
    let head_lines = headline(&markdown);
    assert!(
        head_lines.contains("Will not run: 1 spec with errors")
            && !head_lines.contains("No changes"),
        "{head_lines}"
    );
    assert!(
        markdown.contains("| `!` | `llama31-70b-chat` | `nlp` | **does not check**"),
        "{markdown}"
    );
}

/// The review's pr8a (docs/gitops.md, finding 9): a pool file that no longer loads is the
/// catalogue's error, named by its repository-relative path (also in the work tree), not "12
/// specs with errors"; and it blocks only the specs of that pool: a spec on another pool is
/// checked and planned as before.
#[test]
fn a_broken_catalogue_is_named_as_the_cause_by_its_relative_path() {
    let mut repo = repository();
    repo.write(
        "jobs/llama2-70b-lora-gaudi2.loam",
        example("llama2-70b-lora-gaudi2"),
    );
    repo.commit("a job on the frontier pool");
    let pool = "specs/pools/xirang.yaml";
    let text = repo.read(pool);
    let at = text.find("price: ").unwrap();
    let mut broken = text.clone();
    broken.replace_range(at..at + "price: ".len(), "price: [not, a, price] #");
    repo.write(pool, broken);
    let (code, markdown, err) = repo.loam(&[
        "diff",
        "--base",
        "main",
        "--format",
        "markdown",
        "--detailed-exitcode",
    ]);
    assert_eq!(code, 1, "{err}");
    let head_lines = headline(&markdown);
    // The 4 examples on xirang are not "specs with errors": the pool file is the cause. The
    // job on frontier is planned, unchanged.
    assert!(
        head_lines.contains("Will not run: the catalogue has ")
            && head_lines.contains(" in 1 file, 4 plans not made")
            && head_lines.contains("1 job unchanged"),
        "{head_lines}"
    );
    assert!(!head_lines.contains("specs with errors"), "{head_lines}");
    assert!(markdown.contains("specs/pools/xirang.yaml:"), "{markdown}");
    assert!(
        markdown.contains("specs/pools/xirang.yaml, which it uses, does not load at work tree"),
        "{markdown}"
    );
    let root = repo.path().to_str().unwrap().to_string();
    assert!(!markdown.contains(&root), "an absolute path: {markdown}");
    assert!(!err.contains(&root), "an absolute path: {err}");
    let (_, json, _) = repo.loam(&["diff", "--base", "main", "--format", "json"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    let lora = json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job"] == "llama2-70b-lora")
        .unwrap();
    // "no-op": planned at head as at base (a job without a plan at head is an error).
    assert_eq!(lora["actions"], serde_json::json!(["no-op"]), "{lora}");
    assert_eq!(json["summary"]["unplanned"], 4, "{}", json["summary"]);
    assert_eq!(json["summary"]["errors"], 0, "{}", json["summary"]);
    // `loam check` says the same per spec: the pool's specs are blocked by the pool file
    // (L2121), the frontier spec checks clean.
    let (catalogue, jobs) = (repo.path().join("specs"), repo.path().join("jobs"));
    let (code, _, err) = repo.loam(&[
        "check",
        "--catalogue",
        catalogue.to_str().unwrap(),
        jobs.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.matches("L2121").count(), 4, "{err}");
    assert!(
        err.contains("pool `xirang` is not loaded: `[REPO]/specs/pools/xirang.yaml` has"),
        "{err}"
    );
    assert!(!err.contains("llama2-70b-lora-gaudi2.loam:"), "{err}");
}

/// The review's pr2 (docs/gitops.md, finding 7): a job moved to other devices read "1 to add,
/// 0 to change, 1 to destroy", its reason led with a manifest field, and its details listed the
/// namespace and queues of the site it left as removed. Now it is one replacement, led by the
/// placement, with the site's shared objects in one line.
#[test]
fn a_job_that_moves_is_one_replacement_led_by_its_placement() {
    let mut repo = repository();
    repo.branch("devices");
    let path = "jobs/llama3-8b-finetune.loam";
    repo.write(
        path,
        repo.read(path).replace(
            "max_devices = 16",
            "devices     = [H800_SXM]\n    max_devices = 16",
        ),
    );
    repo.commit("only H800");
    repo.checkout("main");
    let (code, markdown, json) = diff(&repo, "devices");
    assert_eq!(code, 2, "{markdown}");
    assert!(
        headline(&markdown).contains("0 to add, 0 to change, 1 to replace, 0 to destroy"),
        "{markdown}"
    );
    assert_eq!(json["summary"]["replace"], 1);
    assert_eq!(json["summary"]["destroy"], 0);
    let row = job_rows(&markdown)[0];
    assert!(
        row.contains("replace: placement.devices H100_SXM → H800_SXM"),
        "{row}"
    );
    // The sites' shared objects: one line in the comment, each of them in the JSON.
    assert!(
        markdown.contains("shared cluster objects (the namespaces, queues and priority classes"),
        "{markdown}"
    );
    assert!(!markdown.contains("Namespace/"), "{markdown}");
    let job = json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job"] == "llama3-8b-sft")
        .unwrap();
    let shared = job["classification"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["effect"] == "cluster")
        .count();
    assert!(shared > 3, "{shared}");
}

/// The review's pr3 (docs/gitops.md, finding 11): a catalogue pull request showed only two
/// digests. The comment names the price that moved, by site and node group; a vendor file is
/// read at both revisions (the base side used to leave `specs/vendors/` out, so a vendor
/// change went unseen).
#[test]
fn a_catalogue_change_is_named_line_by_line() {
    let mut repo = repository();
    let shipped = std::fs::read_to_string("../specs/vendors/nvidia.yaml").unwrap();
    repo.write("specs/vendors/nvidia.yaml", shipped);
    repo.commit("the NVIDIA vendor file");
    repo.branch("price");
    let pool = repo.read("specs/pools/xirang.yaml");
    repo.write(
        "specs/pools/xirang.yaml",
        pool.replacen("price: 32.0 CNY", "price: 36.0 CNY", 1),
    );
    let vendor = repo.read("specs/vendors/nvidia.yaml");
    repo.write(
        "specs/vendors/nvidia.yaml",
        vendor.replace(
            "docker.io/lmsysorg/sglang:v0.5.6.post2",
            "docker.io/lmsysorg/sglang:v0.5.0",
        ),
    );
    repo.commit("H100 costs more; sglang pinned");
    repo.checkout("main");
    let (_, markdown, json) = diff(&repo, "price");
    let changes: Vec<&str> = json["catalogue_changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        changes,
        [
            "specs/pools/xirang.yaml sites[shanghai].node_groups[sh-h100-a].price: 32.0 CNY → 36.0 CNY",
            "specs/vendors/nvidia.yaml serving.images.sglang: docker.io/lmsysorg/sglang:v0.5.6.post2 → docker.io/lmsysorg/sglang:v0.5.0",
        ]
    );
    assert!(
        markdown.contains("_catalogue change: specs/pools/xirang.yaml sites[shanghai].node_groups[sh-h100-a].price: 32.0 CNY → 36.0 CNY_"),
        "{markdown}"
    );
}

/// A pull request that adds a site's calibration (`loam calibrate --fit`'s file) names the
/// factor that moved and the runs behind it, and the job at that site is re-planned with it
/// (issue 30: the diff names a calibration change as it names a price). The file is the one
/// the fit writes for three runs measured 8 % below the shipped GEMM share.
#[test]
fn a_calibration_is_named_by_its_factors_and_moves_the_site_s_job() {
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    repo.write(
        "jobs/llama3-70b-pretrain.loam",
        example("llama3-70b-pretrain"),
    );
    repo.commit("the 70B job");
    repo.branch("calibrate");
    repo.write(
        "specs/calibration/xirang-shanghai.yaml",
        "pool: xirang\nsite: shanghai\ndevices:\n  H100_SXM:\n    runs: 3\n    run_ids: [r1, r2, r3]\n    first_run: \"2026-12-01\"\n    last_run: \"2026-12-03\"\n    fitted: [gemm]\n    gemm: 0.9200\n    scale_out: 1.0000\n    scale_up: 1.0000\n    throughput_uncertainty: 0.0610\n    median_abs_error_pct: 1.2\n",
    );
    repo.commit("shanghai's H100 calibrated from three runs");
    repo.checkout("main");
    let (_, markdown, json) = diff(&repo, "calibrate");
    let changes: Vec<&str> = json["catalogue_changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        changes,
        [
            "specs/calibration/xirang-shanghai.yaml calibration of xirang shanghai H100_SXM: gemm 1 → 0.92 (3 runs, 2026-12-01 to 2026-12-03, ±6.1 %)"
        ],
        "{json:#}"
    );
    assert!(
        markdown.contains("calibration of xirang shanghai H100_SXM"),
        "{markdown}"
    );
    // The job planned on shanghai's H100 before: with 8 % less GEMM throughput it is
    // re-planned (a new layout: a replacement) and finishes later, by at most 1 / 0.92 (only
    // the GEMM share of the step slows down; communication and the rest do not).
    assert_eq!(json["summary"]["replace"], 1, "{json:#}");
    let finish = &json["schedule"]["jobs"][0]["finish_h"];
    let (before, after) = (finish[0].as_f64().unwrap(), finish[1].as_f64().unwrap());
    assert!(
        after > before && after <= before / 0.92,
        "{before} → {after}"
    );
}

/// The newcomer's finding (docs/gitops.md): `loam diff` printed every warning of every job on
/// standard error, 265 lines on a repository with no change. The changed spec's warnings come
/// in full; the others' as one count per code.
#[test]
fn only_the_changed_specs_warnings_come_in_full() {
    let mut repo = repository();
    repo.branch("sft");
    let path = "jobs/llama3-8b-finetune.loam";
    repo.write(
        path,
        repo.read(path)
            .replace("global_batch = 64", "global_batch = 128"),
    );
    repo.commit("a bigger batch");
    repo.checkout("main");
    let (_, _, err) = repo.loam(&[
        "diff", "--base", "main", "--head", "sft", "--format", "markdown",
    ]);
    // The fine-tune's L3007 (a throughput above every published run on its device), located.
    assert!(err.contains("╭─[jobs/llama3-8b-finetune.loam:"), "{err}");
    for unchanged in EXAMPLES.iter().filter(|e| **e != "llama3-8b-finetune") {
        assert!(
            !err.contains(&format!("╭─[jobs/{unchanged}.loam:")),
            "{unchanged}: {err}"
        );
    }
    // With nothing changed, no warning is shown in full.
    let (_, _, err) = repo.loam(&[
        "diff", "--base", "main", "--head", "main", "--format", "text",
    ]);
    assert!(!err.contains("╭─["), "{err}");
}

/// The review's pr6 (docs/gitops.md, finding 10): a job whose spec has a typo read "is removed"
/// in the admission changes. It is not removed: it is not placed because it does not check.
#[test]
fn a_job_that_does_not_check_is_not_said_to_be_removed() {
    let mut repo = repository();
    repo.branch("typo");
    let path = "jobs/llama3-8b-finetune.loam";
    repo.write(path, repo.read(path).replace("global_batch", "global_bach"));
    repo.commit("a typo");
    repo.checkout("main");
    let (code, markdown, json) = diff(&repo, "typo");
    assert_eq!(code, 1, "{markdown}");
    let change = json["admission_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["job"] == "llama3-8b-sft")
        .unwrap_or_else(|| panic!("{json}"));
    let sentence = change["sentence"].as_str().unwrap();
    assert!(
        sentence
            .starts_with("`llama3-8b-sft` is not placed: its spec does not check at typo; it was "),
        "{sentence}"
    );
    assert!(
        !markdown.contains("`llama3-8b-sft` is removed"),
        "{markdown}"
    );
}

/// The review's finding 13: the diff page of a 500-spec pull request listed 480 "no change"
/// rows (515 KB). More than 20 unchanged jobs are one row.
#[test]
fn the_diff_page_counts_many_unchanged_jobs_in_one_row() {
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    for i in 0..25 {
        let name = format!("job-{i:02}");
        repo.write(&format!("jobs/{name}.loam"), spec(&name, 64, 8));
    }
    repo.commit("25 jobs");
    repo.write("jobs/job-00.loam", spec("job-00", 128, 8));
    repo.commit("one batch doubles");
    let (code, page, err) = repo.loam(&[
        "diff", "--base", "HEAD~1", "--head", "HEAD", "--format", "html",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(page.contains("… and 24 unchanged jobs"), "the count row");
    assert!(!page.contains(">job-01<"), "an unchanged job listed");
    assert!(page.contains("job-00"), "the changed job");
}
