//! The page around the figures: the document shell and its style sheet, the verdict and totals
//! first, then a section per job and per service.

use crate::figure::Figure;
use crate::figures::{alternatives, data, diff, placement, schedule, service, step};
use crate::svg::esc;
use crate::text::{money_short, plan_where, verdict};
use crate::{DiffPage, PlanPage, Problem};
use loam_ir::cluster::ClusterMap;
use loam_ir::diff::Action;
use loam_ir::diff::values::{Value, sides};
use loam_ir::display::{capitalised, decimals, latency, percent, price, thousands};
use loam_ir::plan::{Plan, ServicePlan};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The style sheet: readable at 390 px and at 1280 px, printable, no external font.
const STYLE: &str = "\
:root{color-scheme:light}\
*{box-sizing:border-box}\
body{font-family:'DejaVu Sans',Verdana,sans-serif;color:#222;background:#fff;margin:0;line-height:1.45;font-size:15px}\
header,main{max-width:1000px;margin:0 auto;padding:0 16px}\
header{padding-top:12px}\
h1{font-size:1.45rem;margin:.6rem 0 .2rem}\
h2{font-size:1.25rem;border-top:2px solid #222;padding-top:.6rem;margin:2.2rem 0 .6rem}\
h3{font-size:1.05rem;margin:.2rem 0 .4rem}\
h1,p,li,dd,dt,figcaption{overflow-wrap:anywhere}\
th,td{overflow-wrap:normal}.num{white-space:nowrap}\
.meta{color:#595959;font-size:.85rem;margin:0}\
.verdict{font-size:1.1rem;font-weight:600}\
.ok{color:#00593F}.bad{color:#A33C00}\
.problems{border-left:4px solid #D55E00;background:#FFF4EC;padding:.4rem 1rem;margin:1rem 0}\
.problems h2{border:0;margin:.3rem 0;padding:0}\
.problems li,.warnings li{font-family:'DejaVu Sans Mono',monospace;font-size:.85rem}\
.figure{margin:1.6rem 0;break-inside:avoid}\
.drawing svg{display:block;width:100%;height:auto;max-width:760px}\
figcaption{color:#3d3d3d;font-size:.95rem;margin:.4rem 0}\
.legend{font-size:.9rem;padding-left:1.2rem;margin:.4rem 0}\
details{margin:.3rem 0}\
summary{cursor:pointer;color:#0061A0}\
.table-wrap{overflow-x:auto;max-width:100%}\
table{border-collapse:collapse;font-size:.85rem;margin:.3rem 0}\
caption{text-align:left;font-weight:600}\
th,td{padding:.2rem .5rem;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}\
.num{text-align:right;font-variant-numeric:tabular-nums}\
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:.6rem 0}\
dl.facts dt{font-weight:600}dl.facts dd{margin:0}\
nav ul{padding-left:1.2rem}\
a{color:#0061A0}\
@media (max-width:600px){body{font-size:14px}dl.facts{grid-template-columns:1fr}dl.facts dd{margin-bottom:.3rem}}\
@media print{summary{color:inherit;font-weight:600;list-style:none}\
details::details-content{display:block;content-visibility:visible}\
.figure{break-inside:auto}.drawing{break-inside:avoid}h3{break-after:avoid}\
h2{break-before:page}a{color:inherit;text-decoration:none}}";

/// The document around `body`.
fn document(title: &str, meta: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n<meta name=\"generator\" content=\"loam\">\n<title>{t}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<header><h1>{t}</h1><p class=\"meta\">{}</p></header>\n<main>\n{body}</main>\n</body>\n</html>\n",
        esc(meta),
        t = esc(title),
    )
}

/// A fragment id from a name: letters, digits, `-` and `_` kept, anything else `-`.
fn slug(prefix: &str, name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("{prefix}-{clean}")
}

/// Ids handed out once each, so two sections never share one.
#[derive(Default)]
struct Ids(BTreeMap<String, usize>);

impl Ids {
    fn take(&mut self, wanted: String) -> String {
        let n = self.0.entry(wanted.clone()).or_insert(0);
        *n += 1;
        if *n == 1 {
            wanted
        } else {
            format!("{wanted}-{n}")
        }
    }
}

/// `<ul>` of `items`, escaped.
fn bullets<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::from("<ul>");
    for item in items {
        let _ = write!(out, "<li>{}</li>", inline_code(item));
    }
    out.push_str("</ul>");
    out
}

/// `text` escaped, with each pair of backticks made a `<code>` span: notes and diagnostics
/// are written for the terminal and for markdown, and the page showed their backticks
/// literally (gitops review, finding 13). An unpaired backtick stays as it is.
fn inline_code(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return esc(text);
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("<code>{}</code>", esc(part))
            } else {
                esc(part)
            }
        })
        .collect()
}

/// Errors first, in a box; warnings (which each job's notes repeat) folded under them.
fn problems_html(problems: &[Problem]) -> String {
    let (errors, warnings): (Vec<&Problem>, Vec<&Problem>) = problems.iter().partition(|p| p.error);
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let lines = |ps: &[&Problem]| bullets(ps.iter().map(|p| p.line.as_str()));
    let mut out = String::new();
    if !errors.is_empty() {
        let _ = writeln!(
            out,
            "<section class=\"problems\" id=\"problems\"><h2>{}</h2>{}</section>",
            plural(errors.len(), "error"),
            lines(&errors)
        );
    }
    if !warnings.is_empty() {
        let _ = writeln!(
            out,
            "<details class=\"warnings\" id=\"warnings\"><summary>{} from checking and planning</summary>{}</details>",
            plural(warnings.len(), "warning"),
            lines(&warnings)
        );
    }
    out
}

fn facts(rows: &[(&str, String)]) -> String {
    let mut out = String::from("<dl class=\"facts\">");
    for (k, v) in rows.iter().filter(|(_, v)| !v.is_empty()) {
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
    }
    out.push_str("</dl>");
    out
}

/// Who owns a job or service and where it is planned, one line.
fn owner(tenant: &str, priority: loam_ir::types::Priority, pool: &str) -> String {
    format!("{tenant} · priority {priority} · pool {pool}")
}

fn list(title: &str, items: &[String]) -> String {
    if items.is_empty() {
        return String::new();
    }
    format!(
        "<h3>{}</h3>{}",
        esc(title),
        bullets(items.iter().map(String::as_str))
    )
}

fn figures_html(id: &str, figures: Vec<Option<Figure>>) -> String {
    let mut out = String::new();
    for f in figures.into_iter().flatten() {
        out.push_str(&f.html(&format!("{id}-{}", f.kind.name())));
    }
    out
}

/// Everything shown for one job.
fn job_section(plan: &Plan, id: &str, cluster: Option<&ClusterMap>) -> String {
    let mut out = format!(
        "<section class=\"job\" id=\"{}\"><h2>{}</h2><p class=\"verdict {}\">{}</p>",
        esc(id),
        esc(&plan.job),
        if plan.feasible { "ok" } else { "bad" },
        esc(&verdict(plan))
    );
    if !plan.why.is_empty() {
        let _ = write!(
            out,
            "<p><strong>Why this plan:</strong> {}</p>",
            esc(&plan.why)
        );
    }
    if !plan.feasible {
        out.push_str(&list("Why it cannot run", &plan.reasons));
    }
    let e = plan.estimate.as_ref();
    let w = &plan.workload;
    out.push_str(&facts(&[
        ("File", plan.file.clone()),
        ("Tenant", owner(&plan.tenant, plan.priority, &plan.pool)),
        (
            "Workload",
            format!(
                "{}B parameters, {} tokens, batch {} × {} tokens, {}",
                decimals(w.params / 1e9, 1),
                crate::text::count_short(w.tokens),
                w.global_batch,
                w.seq_len,
                w.precision
            ),
        ),
        (
            "Layout",
            plan.layout
                .as_ref()
                .map(|l| loam_ir::display::layout_line(*l))
                .unwrap_or_default(),
        ),
        (
            "Throughput",
            e.map(|e| {
                format!(
                    "{} tokens/s · {} s per step · {} MFU",
                    thousands(e.tokens_per_s),
                    decimals(e.step_time_s, 2),
                    percent(e.mfu)
                )
            })
            .unwrap_or_default(),
        ),
        (
            "Cost",
            e.map(|e| {
                format!(
                    "{} · {} MWh · {} t CO2",
                    loam_ir::display::money(e.cost.amount, &e.cost.currency),
                    crate::text::grouped(e.energy_kwh / 1e3, 1),
                    crate::text::grouped(e.carbon_kg / 1e3, 1)
                )
            })
            .unwrap_or_default(),
        ),
        (
            "Checkpoints",
            plan.checkpoint
                .as_ref()
                .map(|c| {
                    format!(
                        "every {} min to {} ({} s each)",
                        decimals(c.interval_min, 0),
                        c.path,
                        decimals(c.write_s, 1)
                    )
                })
                .unwrap_or_default(),
        ),
    ]));
    if plan.feasible {
        let data: Vec<(&str, &str, f64)> = plan
            .data
            .as_ref()
            .map(|d| {
                d.sources
                    .iter()
                    .map(|s| (s.name.as_str(), s.site.as_str(), s.size_gb))
                    .collect()
            })
            .unwrap_or_default();
        let usage = placement::Usage {
            pool: &plan.pool,
            groups: plan.groups.iter().map(|g| (g, None)).collect(),
            data,
        };
        out.push_str(&figures_html(
            id,
            vec![
                Some(placement::figure(
                    &format!("{id}-map"),
                    &plan.job,
                    &usage,
                    cluster,
                )),
                alternatives::figure(&format!("{id}-alt"), plan),
                data::figure(&format!("{id}-data"), plan),
                step::step_time(&format!("{id}-step"), plan),
                step::memory(&format!("{id}-mem"), plan, cluster),
                schedule::figure(&format!("{id}-pipe"), plan),
            ],
        ));
    }
    out.push_str(&list("Notes", &plan.notes));
    out.push_str("</section>\n");
    out
}

/// Everything shown for one service.
fn service_section(plan: &ServicePlan, id: &str, cluster: Option<&ClusterMap>) -> String {
    let verdict = match &plan.estimate {
        Some(e) if plan.feasible => format!(
            "Serves {} output tokens/s on {} devices, {} per million tokens, {} per month.",
            thousands(e.output_tokens_per_s),
            e.devices,
            price(
                e.cost_per_million_tokens.amount,
                &e.cost_per_million_tokens.currency
            ),
            money_short(e.cost_per_month.amount, &e.cost_per_month.currency)
        ),
        _ => format!(
            "Cannot serve as asked: {}",
            plan.reasons
                .first()
                .cloned()
                .unwrap_or_else(|| "no deployment meets the targets".to_string())
        ),
    };
    let mut out = format!(
        "<section class=\"service\" id=\"{}\"><h2>{}</h2><p class=\"verdict {}\">{}</p>",
        esc(id),
        esc(&plan.service),
        if plan.feasible { "ok" } else { "bad" },
        esc(&verdict)
    );
    if !plan.why.is_empty() {
        let _ = write!(
            out,
            "<p><strong>Why this deployment:</strong> {}</p>",
            esc(&plan.why)
        );
    }
    if !plan.feasible {
        out.push_str(&list("Why it cannot serve", &plan.reasons));
    }
    let t = &plan.traffic;
    let pct = t.percentile.to_string();
    let roles: Vec<String> = plan
        .roles
        .iter()
        .map(|r| {
            format!(
                "{}: {} × {} devices of {} at {} (TP{} PP{} EP{}, batch {})",
                r.role,
                r.replicas,
                r.devices_per_replica,
                r.group.device,
                r.group.site,
                r.tensor,
                r.pipeline,
                r.expert,
                r.max_batch
            )
        })
        .collect();
    let e = plan.estimate.as_ref();
    out.push_str(&facts(&[
        ("File", plan.file.clone()),
        ("Tenant", owner(&plan.tenant, plan.priority, &plan.pool)),
        (
            "Engine",
            format!(
                "{} · {}",
                plan.engine,
                plan.mode.map(|m| m.to_string()).unwrap_or_default()
            ),
        ),
        ("Replicas", roles.join("; ")),
        (
            "Traffic",
            format!(
                "{} requests/s at the busiest hour · {} input / {} output tokens on average",
                decimals(t.peak_rate, 1),
                thousands(t.input_mean),
                thousands(t.output_mean)
            ),
        ),
        (
            "Latency",
            e.map(|e| {
                format!(
                    "{pct} TTFT {} · {pct} TPOT {} · {pct} end-to-end {}",
                    latency(e.ttft_s),
                    latency(e.tpot_s),
                    latency(e.e2e_s)
                )
            })
            .unwrap_or_default(),
        ),
    ]));
    if plan.feasible {
        let usage = placement::Usage {
            pool: &plan.pool,
            groups: plan
                .roles
                .iter()
                .map(|r| (&r.group, Some(r.role.as_str())))
                .collect(),
            data: Vec::new(),
        };
        out.push_str(&figures_html(
            id,
            vec![
                Some(placement::figure(
                    &format!("{id}-map"),
                    &plan.service,
                    &usage,
                    cluster,
                )),
                service::figure(&format!("{id}-front"), plan),
            ],
        ));
    }
    out.push_str(&list("Notes", &plan.notes));
    out.push_str("</section>\n");
    out
}

/// The page of a planned document.
pub fn plan(page: &PlanPage<'_>) -> String {
    let doc = page.document;
    let mut ids = Ids::default();
    let job_ids: Vec<String> = doc
        .plans
        .iter()
        .map(|p| ids.take(slug("job", &p.job)))
        .collect();
    let service_ids: Vec<String> = doc
        .services
        .iter()
        .map(|s| ids.take(slug("service", &s.service)))
        .collect();
    let mut body = String::new();
    // The verdict and the totals first.
    let blocked = doc.plans.iter().filter(|p| !p.feasible).count()
        + doc.services.iter().filter(|s| !s.feasible).count();
    let count = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let mut what = Vec::new();
    if !doc.plans.is_empty() {
        what.push(count(doc.plans.len(), "job"));
    }
    if !doc.services.is_empty() {
        what.push(count(doc.services.len(), "service"));
    }
    // "Will it run?" in the headline: a feasible job whose devices are not free now (L3005)
    // waits in the queue, which the headline said nothing of ("all can run as asked" while 5
    // of 12 jobs queued; gitops review, finding 5).
    let queued = doc
        .plans
        .iter()
        .filter(|p| {
            p.feasible
                && p.diagnostics
                    .iter()
                    .any(|d| d.code == loam_ir::diagnostics::codes::plan::QUEUES)
        })
        .count();
    let queue_note = match queued {
        0 => String::new(),
        1 => " 1 job queues until its devices are free.".to_string(),
        n => format!(" {n} jobs queue until their devices are free."),
    };
    let headline = if what.is_empty() {
        "Nothing planned.".to_string()
    } else if blocked == 0 {
        format!(
            "{} planned: all can run as asked.{queue_note}",
            what.join(" and ")
        )
    } else {
        format!(
            "{} planned: {blocked} cannot run as asked.{queue_note}",
            what.join(" and ")
        )
    };
    let _ = write!(
        body,
        "<section class=\"summary\" id=\"summary\"><p class=\"verdict {}\">{}</p>",
        if blocked == 0 && page.problems.iter().all(|p| !p.error) {
            "ok"
        } else {
            "bad"
        },
        esc(&headline)
    );
    let mut totals: BTreeMap<String, f64> = BTreeMap::new();
    let mut device_hours = 0.0;
    let mut carbon = 0.0;
    for p in &doc.plans {
        if let Some(e) = &p.estimate {
            *totals.entry(e.cost.currency.clone()).or_default() += e.cost.amount;
            device_hours += p.device_hours().unwrap_or(0.0);
            carbon += e.carbon_kg;
        }
    }
    if !doc.plans.is_empty() {
        let money: Vec<String> = totals.iter().map(|(c, a)| money_short(*a, c)).collect();
        let _ = write!(
            body,
            "<p>Jobs in total: <strong>{}</strong> · {} device-hours · {} t CO2.</p>",
            esc(&money.join(" + ")),
            thousands(device_hours),
            crate::text::grouped(carbon / 1e3, 1)
        );
        body.push_str("<div class=\"table-wrap\"><table><thead><tr><th scope=\"col\">job</th><th scope=\"col\">verdict</th><th scope=\"col\">where</th><th scope=\"col\" class=\"num\">time</th><th scope=\"col\" class=\"num\">cost</th></tr></thead><tbody>");
        for (p, id) in doc.plans.iter().zip(&job_ids) {
            let (time, cost) = p
                .estimate
                .as_ref()
                .map(|e| {
                    (
                        crate::text::days(p.wall_time_h().unwrap_or(e.train_time_h)),
                        money_short(e.cost.amount, &e.cost.currency),
                    )
                })
                .unwrap_or_default();
            let _ = write!(
                body,
                "<tr><th scope=\"row\"><a href=\"#{}\">{}</a></th><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                esc(id),
                esc(&p.job),
                if p.feasible { "runs" } else { "cannot run" },
                esc(&if p.feasible {
                    plan_where(p)
                } else {
                    String::new()
                }),
                esc(&time),
                esc(&cost)
            );
        }
        body.push_str("</tbody></table></div>");
    }
    if !doc.services.is_empty() {
        body.push_str("<div class=\"table-wrap\"><table><thead><tr><th scope=\"col\">service</th><th scope=\"col\">verdict</th><th scope=\"col\" class=\"num\">devices</th><th scope=\"col\" class=\"num\">per month</th></tr></thead><tbody>");
        for (s, id) in doc.services.iter().zip(&service_ids) {
            let (devices, month) = s
                .estimate
                .as_ref()
                .map(|e| {
                    (
                        e.devices.to_string(),
                        money_short(e.cost_per_month.amount, &e.cost_per_month.currency),
                    )
                })
                .unwrap_or_default();
            let _ = write!(
                body,
                "<tr><th scope=\"row\"><a href=\"#{}\">{}</a></th><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                esc(id),
                esc(&s.service),
                if s.feasible { "serves" } else { "cannot serve" },
                esc(&devices),
                esc(&month)
            );
        }
        body.push_str("</tbody></table></div>");
    }
    body.push_str("</section>\n");
    body.push_str(&problems_html(&page.problems));
    if let Some(schedule) = page.schedule {
        body.push_str(&crate::pool::section(
            schedule,
            &ids.take("pool".to_string()),
        ));
    }
    for (p, id) in doc.plans.iter().zip(&job_ids) {
        body.push_str(&job_section(p, id, page.cluster));
    }
    for (s, id) in doc.services.iter().zip(&service_ids) {
        body.push_str(&service_section(s, id, page.cluster));
    }
    let meta = format!(
        "Plan format {} · catalogue {} · drawn by loam from the plan; the numbers behind every figure are under it.",
        doc.format_version, doc.catalogue_digest
    );
    document(page.title, &meta, &body)
}

/// The services whose plans change: one table (devices at the busiest hour and cost per month,
/// before and after), then each service's changed attributes.
fn services_html(services: &[crate::ServiceChange], ids: &mut Ids) -> String {
    if services.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<div class=\"table-wrap\"><table><thead><tr><th scope=\"col\">service</th><th scope=\"col\">change</th><th scope=\"col\" class=\"num\">devices before</th><th scope=\"col\" class=\"num\">devices after</th><th scope=\"col\" class=\"num\">per month before</th><th scope=\"col\" class=\"num\">per month after</th></tr></thead><tbody>",
    );
    let mut details = String::new();
    for s in services {
        let id = ids.take(slug("service", &s.service));
        let _ = write!(
            out,
            "<tr><th scope=\"row\"><a href=\"#{}\">{}</a></th><td>{} {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&id),
            esc(&s.service),
            esc(s.action.symbol()),
            esc(s.action.verdict()),
            esc(&or_dash(&s.devices.0)),
            esc(&or_dash(&s.devices.1)),
            esc(&or_dash(&s.cost_per_month.0)),
            esc(&or_dash(&s.cost_per_month.1))
        );
        let _ = write!(
            details,
            "<section class=\"job\" id=\"{}\"><h3>{} service {} ({})</h3><p class=\"meta\">{}</p>",
            esc(&id),
            esc(s.action.symbol()),
            esc(&s.service),
            esc(s.action.verdict()),
            esc(&s.file)
        );
        if !s.changes.is_empty() {
            details.push_str("<div class=\"table-wrap\"><table><thead><tr><th scope=\"col\">attribute</th><th scope=\"col\">before</th><th scope=\"col\">after</th></tr></thead><tbody>");
            for change in &s.changes {
                let (before, after) = sides(change);
                let _ = write!(
                    details,
                    "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td></tr>",
                    esc(&change.key),
                    esc(&before),
                    esc(&after)
                );
            }
            details.push_str("</tbody></table></div>");
        }
        details.push_str("</section>");
    }
    out.push_str("</tbody></table></div>");
    out.push_str(&details);
    out
}

/// The page of a plan diff.
pub fn diff(page: &DiffPage<'_>) -> String {
    let mut ids = Ids::default();
    // The verdict leads, capitalised as a sentence, green unless a job will not run.
    let blocked = page
        .jobs
        .iter()
        .any(|j| matches!(j.action, Action::Infeasible | Action::Error));
    let headline = capitalised(page.verdict);
    let mut body = format!(
        "<section class=\"summary\" id=\"summary\"><p class=\"verdict {}\">{}</p>",
        if blocked { "bad" } else { "ok" },
        esc(&headline),
    );
    if !page.headline.is_empty() {
        // The headline names jobs in markdown's backticks; the page writes them plainly.
        let _ = write!(body, "<p>{}</p>", esc(&page.headline.replace('`', "")));
    }
    let _ = write!(
        body,
        "<p>From <strong>{}</strong> to <strong>{}</strong>.</p>",
        esc(page.base),
        esc(page.head)
    );
    body.push_str("<div class=\"table-wrap\"><table><thead><tr><th scope=\"col\">job</th><th scope=\"col\">change</th><th scope=\"col\" class=\"num\">days before</th><th scope=\"col\" class=\"num\">days after</th><th scope=\"col\" class=\"num\">cost before</th><th scope=\"col\" class=\"num\">cost after</th></tr></thead><tbody>");
    let figures_of = |p: Option<&Plan>| {
        p.and_then(|p| Some((p.wall_time_h()?, p.estimate.as_ref()?)))
            .map(|(wall_h, e)| {
                (
                    decimals(wall_h / 24.0, 1),
                    money_short(e.cost.amount, &e.cost.currency),
                )
            })
            .unwrap_or_default()
    };
    let mut sections = String::new();
    for change in &page.jobs {
        let changed = change.action != Action::NoOp;
        let (tb, cb) = figures_of(change.before);
        let (ta, ca) = figures_of(change.after);
        let name = if changed {
            let id = ids.take(slug("job", change.job));
            let mut s = format!(
                "<section class=\"job\" id=\"{}\"><h2>{} {} ({})</h2><p class=\"meta\">{}</p>",
                esc(&id),
                esc(change.action.symbol()),
                esc(change.job),
                esc(change.action.verdict()),
                esc(change.file)
            );
            if let Some(note) = change.note {
                let _ = write!(s, "<p>{}</p>", esc(note));
            }
            if let Some(after) = change.after {
                let _ = write!(
                    s,
                    "<p class=\"verdict {}\">{}</p>",
                    if after.feasible { "ok" } else { "bad" },
                    esc(&verdict(after))
                );
            }
            let mut figures = vec![diff::job(&format!("{id}-diff"), change)];
            if let Some(after) = change.after.filter(|p| p.feasible) {
                let usage = placement::Usage {
                    pool: &after.pool,
                    groups: after.groups.iter().map(|g| (g, None)).collect(),
                    data: after
                        .data
                        .as_ref()
                        .map(|d| {
                            d.sources
                                .iter()
                                .map(|s| (s.name.as_str(), s.site.as_str(), s.size_gb))
                                .collect()
                        })
                        .unwrap_or_default(),
                };
                figures.push(Some(placement::figure(
                    &format!("{id}-map"),
                    change.job,
                    &usage,
                    page.cluster,
                )));
            }
            s.push_str(&figures_html(&id, figures));
            s.push_str("</section>\n");
            sections.push_str(&s);
            format!("<a href=\"#{}\">{}</a>", esc(&id), esc(change.job))
        } else {
            esc(change.job)
        };
        let _ = write!(
            body,
            "<tr><th scope=\"row\">{name}</th><td>{} {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(change.action.symbol()),
            esc(change.action.verdict()),
            esc(&tb),
            esc(&ta),
            esc(&cb),
            esc(&ca)
        );
    }
    if page.unchanged_left_out > 0 {
        let _ = write!(
            body,
            "<tr><th scope=\"row\">… and {} unchanged jobs</th><td colspan=\"5\">not listed one by one (the JSON report has each)</td></tr>",
            page.unchanged_left_out
        );
    }
    body.push_str("</tbody></table></div>");
    body.push_str(&services_html(&page.services, &mut ids));
    if let Some(f) = diff::totals("totals", &page.tenants) {
        body.push_str(&f.html("totals-figure"));
    }
    body.push_str("</section>\n");
    body.push_str(&problems_html(&page.problems));
    if !page.schedule.is_empty() {
        body.push_str(
            "<section class=\"pool\" id=\"schedule\"><h2>The pool over time</h2><p>Every job scheduled together, before and after the change (docs/scheduling.md).</p><ul>",
        );
        for line in &page.schedule {
            let _ = write!(body, "<li>{}</li>", esc(line));
        }
        body.push_str("</ul></section>\n");
    }
    body.push_str(&sections);
    document(
        page.title,
        &format!(
            "Plan diff from {} to {}, drawn by loam.",
            page.base, page.head
        ),
        &body,
    )
}

/// A value as a table cell: `—` when the side has none.
fn or_dash(value: &Option<Value>) -> String {
    value.as_ref().map_or_else(|| "—".to_string(), Value::shown)
}
