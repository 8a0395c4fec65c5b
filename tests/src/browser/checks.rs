//! What makes a report page fail: problems in what [`super::MEASURE_JS`] measured, blank
//! screenshots, and the figures a plan calls for.

use super::*;

/// Why a screenshot counts as blank, if it does: too few pixels away from the most common colour,
/// or too few colours.
pub fn blankness(png_bytes: &[u8]) -> Option<String> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let pixels = (info.width as usize) * (info.height as usize);
    // A sample of at most ~250,000 pixels keeps this quick on long pages in a debug build.
    let stride = (pixels / 250_000).max(1);
    let mut colours: BTreeMap<[u8; 3], usize> = BTreeMap::new();
    let mut sampled = 0usize;
    for pixel in buf[..info.line_size * info.height as usize]
        .chunks_exact(channels)
        .step_by(stride)
    {
        let rgb = match channels {
            1 | 2 => [pixel[0]; 3],
            _ => [pixel[0], pixel[1], pixel[2]],
        };
        *colours.entry(rgb).or_default() += 1;
        sampled += 1;
    }
    let most = colours.values().copied().max().unwrap_or(0);
    let inked = (sampled - most) as f64 / sampled.max(1) as f64;
    if inked < MIN_INKED_SHARE || colours.len() < MIN_COLOURS {
        Some(format!(
            "the screenshot is blank: {:.2} % of pixels differ from the most common colour (at least {:.0} % wanted), {} colours (at least {MIN_COLOURS} wanted)",
            inked * 100.0,
            MIN_INKED_SHARE * 100.0,
            colours.len()
        ))
    } else {
        None
    }
}

/// Every problem of a page that needs no plan: events, the document, the width, the figures'
/// parts, overlapping labels, forbidden content and a blank screenshot.
pub fn page_problems(page: &Shown) -> Vec<String> {
    let m = &page.measure;
    let mut problems: Vec<String> = page.events.clone();
    if m["doctype"] != "html" || m["compatMode"] != "CSS1Compat" {
        problems.push(format!(
            "no <!doctype html> (doctype {}, {})",
            m["doctype"], m["compatMode"]
        ));
    }
    if m["csp"] != CSP {
        problems.push(format!(
            "the Content-Security-Policy meta is {}, not \"{CSP}\"",
            m["csp"]
        ));
    }
    let window = f64::from(page.viewport.width);
    let inner = m["innerWidth"].as_f64().unwrap_or(0.0);
    let scroll = m["scrollWidth"].as_f64().unwrap_or(0.0);
    let device_width = m["viewport"]
        .as_str()
        .is_some_and(|c| c.replace(' ', "").contains("width=device-width"));
    if page.viewport.mobile && !device_width {
        problems.push(format!(
            "the viewport meta is {}: without `width=device-width` a phone lays the page out 980 px wide and zooms out",
            m["viewport"]
        ));
    } else if scroll > window || scroll > inner {
        problems.push(format!(
            "the page is {scroll} px wide in a {window} px window; sticking out: {}",
            list(&m["tooWide"])
        ));
    } else if inner != window {
        problems.push(format!(
            "the layout viewport is {inner} px wide in a {window} px window"
        ));
    }
    for svg in m["svgs"].as_array().into_iter().flatten() {
        let at = svg["where"].as_str().unwrap_or("svg");
        let right = svg["right"].as_f64().unwrap_or(0.0);
        if right > window + 0.5 {
            problems.push(format!(
                "{at}: the svg's right edge is at {right} px, past the {window} px window"
            ));
        }
        for o in svg["overlaps"].as_array().into_iter().flatten() {
            problems.push(format!(
                "{at}: labels \"{}\" and \"{}\" overlap by {}×{} px",
                o["a"].as_str().unwrap_or(""),
                o["b"].as_str().unwrap_or(""),
                o["w"],
                o["h"]
            ));
        }
    }
    for figure in m["figures"].as_array().into_iter().flatten() {
        problems.extend(figure_problems(figure));
    }
    if m["scripts"].as_u64().unwrap_or(0) > 0 {
        problems.push(format!("the page has {} <script> element(s)", m["scripts"]));
    }
    for (key, what) in [
        ("handlers", "an event handler attribute"),
        ("outside", "an address outside the page"),
        ("brokenFragments", "a link to no element of the page"),
    ] {
        for item in m[key].as_array().into_iter().flatten() {
            problems.push(format!("{what}: {}", item.as_str().unwrap_or("")));
        }
    }
    for at in &page.unprinted {
        problems.push(format!("{at}: printed, its numbers would be folded away"));
    }
    problems.extend(blankness(&page.png));
    problems
}

/// What is wrong with one `<figure data-figure>`: its kind, its one svg (role, labels, `<title>`
/// and `<desc>` first, a size), its caption and its table.
pub fn figure_problems(figure: &Value) -> Vec<String> {
    let at = figure["where"].as_str().unwrap_or("figure");
    let kind = figure["kind"].as_str().unwrap_or("");
    let mut problems = Vec::new();
    let mut wrong = |what: String| problems.push(format!("{at}: {what}"));
    if !FIGURE_KINDS.contains(&kind) {
        wrong(format!("data-figure=\"{kind}\" is not a known kind"));
    }
    if figure["isFigureClass"] != true {
        wrong("the figure lacks class=\"figure\"".to_string());
    }
    if figure["svgs"] != 1 {
        wrong(format!("{} <svg> elements, not one", figure["svgs"]));
    }
    if figure["role"] != "img" {
        wrong(format!("the svg's role is {}, not \"img\"", figure["role"]));
    }
    if figure["labelledBy"] == "" || !list_is_empty(&figure["unknownLabels"]) {
        wrong(format!(
            "the svg's aria-labelledby {} names no element (unknown: {})",
            figure["labelledBy"],
            list(&figure["unknownLabels"])
        ));
    }
    for (key, part) in [
        ("title", "a <title> as the svg's first child"),
        ("desc", "a <desc> as the svg's second child"),
        ("caption", "a <figcaption>"),
    ] {
        if figure[key].as_str().is_none_or(str::is_empty) {
            wrong(format!("no text in {part}"));
        }
    }
    if figure["tables"].as_u64().unwrap_or(0) == 0 {
        wrong("no <table> in a <details>".to_string());
    } else if figure["bodyRows"].as_u64().unwrap_or(0) == 0 {
        wrong("the table has no <tbody> row".to_string());
    }
    let (width, height) = (&figure["svgWidth"], &figure["svgHeight"]);
    if figure["svgs"] != 0
        && (width.as_f64().unwrap_or(0.0) <= 0.0 || height.as_f64().unwrap_or(0.0) <= 0.0)
    {
        wrong(format!("the svg is drawn {width}×{height} px"));
    }
    problems
}

/// A JSON array of strings as one line.
pub fn list(items: &Value) -> String {
    let items: Vec<&str> = items
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if items.is_empty() {
        "nothing found".to_string()
    } else {
        items.join("; ")
    }
}

/// Whether a JSON value is no array or an empty one.
pub fn list_is_empty(items: &Value) -> bool {
    items.as_array().is_none_or(Vec::is_empty)
}

/// What the plan JSON asks of one section of the page.
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    /// `job` or `service`.
    pub kind: &'static str,
    /// The section's job or service name.
    pub name: String,
    /// The figures it must have; none for an infeasible plan.
    pub figures: Vec<&'static str>,
    /// The reasons an infeasible plan must show.
    pub reasons: Vec<String>,
}

/// The sections and figures a plan document calls for: a feasible job has `placement`,
/// `schedule`, `step-time` and `memory`, plus `alternatives` and `data` when it has any; a
/// feasible service has `placement` and `service`; an infeasible one shows its reasons.
pub fn wanted(plan: &Value) -> Vec<Wanted> {
    let mut wanted = Vec::new();
    let non_empty = |v: &Value| v.as_array().is_some_and(|a| !a.is_empty());
    let reasons = |v: &Value| -> Vec<String> {
        v["reasons"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    for job in plan["plans"].as_array().into_iter().flatten() {
        let feasible = job["feasible"] == true;
        let mut figures = Vec::new();
        if feasible {
            figures.extend(["placement", "schedule", "step-time", "memory"]);
            if non_empty(&job["alternatives"]) {
                figures.push("alternatives");
            }
            if non_empty(&job["data"]["options"]) {
                figures.push("data");
            }
        }
        wanted.push(Wanted {
            kind: "job",
            name: job["job"].as_str().unwrap_or("").to_string(),
            figures,
            reasons: reasons(job),
        });
    }
    for service in plan["services"].as_array().into_iter().flatten() {
        let feasible = service["feasible"] == true;
        wanted.push(Wanted {
            kind: "service",
            name: service["service"].as_str().unwrap_or("").to_string(),
            figures: if feasible {
                vec!["placement", "service"]
            } else {
                Vec::new()
            },
            reasons: reasons(service),
        });
    }
    wanted
}

/// What the page lacks of what the plan calls for: a section per job and service (found by its
/// `<h2>`), each with its figures, or its reasons when infeasible.
pub fn missing(measure: &Value, wanted: &[Wanted]) -> Vec<String> {
    let sections: Vec<&Value> = measure["sections"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let mut problems = Vec::new();
    for want in wanted {
        let of_kind = || sections.iter().filter(|s| s["kind"] == want.kind);
        let section = of_kind()
            .find(|s| s["name"] == want.name.as_str())
            .or_else(|| {
                of_kind().find(|s| s["name"].as_str().is_some_and(|n| n.contains(&want.name)))
            });
        let Some(section) = section else {
            problems.push(format!(
                "no <section class=\"{}\"> with an <h2> naming {} {}",
                want.kind, want.kind, want.name
            ));
            continue;
        };
        let id = section["id"].as_str().unwrap_or("");
        if !id.starts_with(&format!("{}-", want.kind)) {
            problems.push(format!(
                "{} {}: the section's id \"{id}\" does not start with \"{}-\"",
                want.kind, want.name, want.kind
            ));
        }
        let has: Vec<&str> = section["figures"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for figure in &want.figures {
            if !has.contains(figure) {
                problems.push(format!(
                    "{} {}: no figure \"{figure}\" (the section has: {})",
                    want.kind,
                    want.name,
                    if has.is_empty() {
                        "none".to_string()
                    } else {
                        has.join(", ")
                    }
                ));
            }
        }
        let text = section["text"].as_str().unwrap_or("");
        for reason in &want.reasons {
            let reason = reason.split_whitespace().collect::<Vec<_>>().join(" ");
            if !text.contains(&reason) {
                problems.push(format!(
                    "{} {}: the reason \"{reason}\" is not shown",
                    want.kind, want.name
                ));
            }
        }
    }
    problems
}
