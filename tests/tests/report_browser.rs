//! Every example's report page, rendered by `loam report` and opened in a real headless Chromium
//! over the DevTools protocol, at a desktop width (1280×900) and a phone's (390×844): no console
//! error or warning, no uncaught exception, no failed or blocked request; every figure its plan
//! calls for, each with a title, a description, a caption and a table of its numbers, drawn at a
//! size above zero; no two labels of one figure overlapping; nothing wider than the window; a
//! screenshot that is not blank; and no script, event handler or outside address in the page.
//! The checker itself is tested first, on small hand-written pages.
//!
//! The screenshots land in `target/report-screenshots/<example>-<width>.png` for people to look
//! at. With `LOAM_WRITE_README_SCREENSHOT=1` the test also writes the README's picture,
//! `docs/images/report-hetero-70b.png`: the top 1600 px of `examples/hetero-70b-guiyang.loam`'s
//! page at 1280 wide.
//!
//! Chromium comes from `scripts/backend-tools.sh` (Debian's `chromium`); without it the tests
//! skip with a message, unless `CI` or `LOAM_REQUIRE_TOOLS` is set. Run them alone with
//! `cargo test -p loam-tests --test report_browser`.

use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::protocol::cdp::{Emulation, Network, Page};
use headless_chrome::{Browser, LaunchOptions, Tab};
use loam_tests::repo_root;
use loam_tests::tools::{chromium, have_chromium};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

/// A window the page is shown in.
#[derive(Debug, Clone, Copy)]
struct Viewport {
    /// The layout width in CSS pixels.
    width: u32,
    /// The height in CSS pixels.
    height: u32,
    /// A phone: the layout viewport is the device width (with the page's `<meta name=viewport>`).
    mobile: bool,
}

impl Viewport {
    /// How messages and screenshot names call it.
    fn name(self) -> String {
        format!("{}px", self.width)
    }
}

const DESKTOP: Viewport = Viewport {
    width: 1280,
    height: 900,
    mobile: false,
};
const PHONE: Viewport = Viewport {
    width: 390,
    height: 844,
    mobile: true,
};

/// The figure kinds the page may draw.
const FIGURE_KINDS: [&str; 9] = [
    "placement",
    "schedule",
    "step-time",
    "memory",
    "alternatives",
    "data",
    "service",
    "diff",
    "totals",
];

/// A screenshot is blank unless at least this share of its pixels differs from its most common
/// colour…
const MIN_INKED_SHARE: f64 = 0.02;
/// …and it holds at least this many colours (antialiased text alone brings dozens).
const MIN_COLOURS: usize = 8;
/// Screenshots are at most this tall (Chromium's largest texture is 16384 px).
const MAX_SCREENSHOT_HEIGHT: f64 = 16_000.0;
/// The README's picture (written with `LOAM_WRITE_README_SCREENSHOT=1`): the top this many CSS
/// pixels of this example's page at the desktop width, in this file.
const README_SCREENSHOT_HEIGHT: f64 = 1600.0;
const README_EXAMPLE: &str = "hetero-70b-guiyang";
const README_SCREENSHOT: &str = "docs/images/report-hetero-70b.png";

/// Everything the page is measured by, in one place: a function of the window's width (CSS px)
/// that returns a JSON string, read by `page_problems`, `figure_problems` and `missing`.
/// Labels are `<text>` elements with visible, non-empty text; two overlap when their boxes
/// intersect by more than 1 px both ways. On a phone the layout viewport grows to fit a page
/// that is too wide (the phone zooms out), so widths are compared with the window's, not with
/// `innerWidth`.
const MEASURE_JS: &str = r#"(async (windowWidth) => {
  await document.fonts.ready;
  const r1 = (x) => Math.round(x * 10) / 10;
  const squash = (s) => (s ?? '').replace(/\s+/g, ' ').trim();
  const short = (s) => { s = squash(s); return s.length > 60 ? s.slice(0, 57) + '…' : s; };
  const hidden = (el) => {
    const style = getComputedStyle(el);
    return style.display === 'none' || style.visibility === 'hidden' || style.visibility === 'collapse';
  };
  const where = (el) => {
    const section = el.closest('section');
    const figure = el.closest('figure[data-figure]');
    const parts = [];
    if (section) parts.push(section.id ? '#' + section.id : 'section');
    if (figure) parts.push('figure ' + figure.dataset.figure);
    return parts.join(' ') || el.tagName.toLowerCase();
  };
  const outermost = (root) => [...root.querySelectorAll('svg')].filter((s) => !s.parentElement.closest('svg'));

  const svgs = outermost(document).map((svg) => {
    const box = svg.getBoundingClientRect();
    const labels = [...svg.querySelectorAll('text')]
      .filter((t) => squash(t.textContent) !== '' && !hidden(t))
      .map((t) => ({ text: short(t.textContent), box: t.getBoundingClientRect() }))
      .filter((l) => l.box.width > 0 && l.box.height > 0);
    const overlaps = [];
    for (let i = 0; i < labels.length; i++) {
      for (let j = i + 1; j < labels.length; j++) {
        const a = labels[i].box, b = labels[j].box;
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1 && h > 1) overlaps.push({ a: labels[i].text, b: labels[j].text, w: r1(w), h: r1(h) });
      }
    }
    return { where: where(svg), left: r1(box.left), right: r1(box.right), width: r1(box.width), height: r1(box.height), labels: labels.length, overlaps };
  });

  const figures = [...document.querySelectorAll('figure[data-figure]')].map((figure) => {
    const own = outermost(figure);
    const svg = own[0];
    const kids = svg ? [...svg.children] : [];
    const first = (tag, i) => kids[i] && kids[i].tagName.toLowerCase() === tag ? squash(kids[i].textContent) : null;
    const labelledBy = svg ? (svg.getAttribute('aria-labelledby') ?? '') : '';
    const section = figure.closest('section');
    return {
      where: where(figure),
      section: section ? section.id : null,
      kind: figure.dataset.figure,
      isFigureClass: figure.classList.contains('figure'),
      svgs: own.length,
      role: svg ? svg.getAttribute('role') : null,
      svgWidth: svg ? r1(svg.getBoundingClientRect().width) : 0,
      svgHeight: svg ? r1(svg.getBoundingClientRect().height) : 0,
      labelledBy,
      unknownLabels: labelledBy.split(/\s+/).filter((id) => id && !document.getElementById(id)),
      title: first('title', 0),
      desc: first('desc', 1),
      caption: figure.querySelector('figcaption') ? squash(figure.querySelector('figcaption').textContent) : null,
      tables: figure.querySelectorAll('details table').length,
      bodyRows: figure.querySelectorAll('details table tbody tr').length,
    };
  });

  const sections = [...document.querySelectorAll('section.job, section.service')].map((section) => ({
    kind: section.classList.contains('job') ? 'job' : 'service',
    id: section.id,
    name: section.querySelector('h2') ? squash(section.querySelector('h2').textContent) : null,
    figures: [...section.querySelectorAll('figure[data-figure]')].map((f) => f.dataset.figure),
    text: squash(section.textContent),
  }));

  const handlers = [], outside = [], brokenFragments = [];
  const addressed = new Set(['src', 'href', 'srcset', 'action', 'formaction', 'poster', 'data']);
  for (const el of document.querySelectorAll('*')) {
    for (const attr of el.attributes) {
      const name = attr.localName.toLowerCase();
      const tag = el.tagName.toLowerCase();
      if (name.startsWith('on')) handlers.push(tag + ' ' + attr.name + ' (' + where(el) + ')');
      if (!addressed.has(name) || (name === 'data' && tag !== 'object')) continue;
      const value = attr.value.trim();
      if (value.startsWith('#')) {
        const id = decodeURIComponent(value.slice(1));
        if (id !== '' && !document.getElementById(id)) brokenFragments.push(tag + ' ' + attr.name + '="' + short(value) + '"');
      } else if (!value.toLowerCase().startsWith('data:')) {
        outside.push(tag + ' ' + attr.name + '="' + short(value) + '" (' + where(el) + ')');
      }
    }
  }

  const csp = document.querySelector('meta[http-equiv="Content-Security-Policy" i]');
  const viewport = document.querySelector('meta[name="viewport" i]');
  const root = document.documentElement;
  const tooWide = [...document.querySelectorAll('body *')]
    .filter((el) => el.getBoundingClientRect().right > windowWidth + 0.5)
    .filter((el) => !el.parentElement || el.parentElement.getBoundingClientRect().right <= windowWidth + 0.5)
    .slice(0, 5)
    .map((el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.split(/\s+/).join('.') : '') + ' (' + where(el) + ', right edge ' + r1(el.getBoundingClientRect().right) + ')');
  return JSON.stringify({
    doctype: document.doctype ? document.doctype.name : null,
    compatMode: document.compatMode,
    csp: csp ? csp.getAttribute('content') : null,
    viewport: viewport ? viewport.getAttribute('content') : null,
    innerWidth: window.innerWidth,
    scrollWidth: root.scrollWidth,
    contentWidth: Math.max(root.scrollWidth, document.body ? document.body.scrollWidth : 0),
    contentHeight: Math.max(root.scrollHeight, document.body ? document.body.scrollHeight : 0),
    tooWide,
    scripts: document.querySelectorAll('script').length,
    handlers,
    outside,
    brokenFragments,
    svgs,
    figures,
    sections,
  });
})"#;

/// The page's contract: exactly this policy.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/// A DevTools command of type `$method` built from its JSON parameters: the crate's generated
/// types have many optional fields, which JSON leaves out.
macro_rules! command {
    ($method:ty, $params:expr) => {
        serde_json::from_value::<$method>($params).unwrap()
    };
}

/// One browser for the whole test binary, shared by the tests running at the same time and closed
/// (its process killed, its profile removed) when the last of them lets go: a browser kept in a
/// static would outlive the tests, since statics are never dropped. (With `--test-threads=1`
/// each test launches its own, about a second each.)
struct Session {
    /// Kept for its process; pages are shown in `pager`'s one tab.
    _browser: Browser,
    /// One page at a time, so timings and layouts do not depend on the other tests.
    pager: Mutex<Pager>,
}

/// The tab every page is shown in, and what it reported.
struct Pager {
    tab: Arc<Tab>,
    /// Problems the tab reported since the last page was opened (see `event_problem`).
    events: Arc<Mutex<Vec<String>>>,
    /// Pages opened so far: each address gets its own query, so the poll for the loaded page
    /// cannot mistake the previous one for it.
    opened: u64,
}

/// The shared session, or `None` (after a message) where Chromium is missing outside CI.
fn session() -> Option<Arc<Session>> {
    static SHARED: Mutex<Weak<Session>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(session) = shared.upgrade() {
        return Some(session);
    }
    if !have_chromium() {
        return None;
    }
    let options = LaunchOptions::default_builder()
        .path(chromium())
        .headless(true)
        // CI runs as root, where Chromium's sandbox cannot start.
        .sandbox(false)
        .window_size(Some((DESKTOP.width, DESKTOP.height)))
        // The examples' reports are rendered before their pages are opened; keep the connection.
        .idle_browser_timeout(Duration::from_secs(600))
        // No GPU in CI, and headless needs no display. `--disable-dev-shm-usage` (a container's
        // /dev/shm is small) is among the crate's default arguments.
        .enable_gpu(false)
        .args(vec![
            std::ffi::OsStr::new("--hide-scrollbars"),
            std::ffi::OsStr::new("--mute-audio"),
        ])
        .build()
        .unwrap();
    let browser = Browser::new(options).unwrap();
    let tab = browser.new_tab().unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    // The address of every request, to name the ones that fail.
    let requests = Mutex::new(BTreeMap::new());
    tab.add_event_listener(Arc::new(move |event: &Event| {
        let mut requests = requests.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(line) = event_problem(event, &mut requests) {
            sink.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(line);
        }
    }))
    .unwrap();
    tab.enable_log().unwrap();
    tab.enable_runtime().unwrap();
    tab.call_method(command!(Network::Enable, json!({})))
        .unwrap();
    let session = Arc::new(Session {
        _browser: browser,
        pager: Mutex::new(Pager {
            tab,
            events,
            opened: 0,
        }),
    });
    *shared = Arc::downgrade(&session);
    Some(session)
}

/// How long a page may take to load.
const LOAD_TIMEOUT: Duration = Duration::from_secs(30);

impl Session {
    /// Opens `url` at `viewport`, measures it and takes its screenshot, and with `readme` the
    /// README's picture of its top too.
    fn open(&self, url: &str, viewport: Viewport, readme: bool) -> Shown {
        let mut pager = self.pager.lock().unwrap_or_else(PoisonError::into_inner);
        pager.opened += 1;
        let query = format!("?loam-open={}", pager.opened);
        let tab = Arc::clone(&pager.tab);
        tab.call_method(command!(
            Emulation::SetDeviceMetricsOverride,
            json!({
                "width": viewport.width,
                "height": viewport.height,
                "deviceScaleFactor": 1,
                "mobile": viewport.mobile,
            })
        ))
        .unwrap();
        pager
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        tab.navigate_to(&format!("{url}{query}")).unwrap();
        // The crate's `wait_until_navigated` waits for the network to be idle for half a
        // second; a page that loads nothing is done at its `load` event.
        let loaded = format!(
            "location.search === {} && document.readyState === 'complete'",
            Value::from(query.clone())
        );
        let deadline = Instant::now() + LOAD_TIMEOUT;
        while !tab
            .evaluate(&loaded, false)
            .is_ok_and(|r| r.value == Some(Value::Bool(true)))
        {
            assert!(
                Instant::now() < deadline,
                "{url} did not load in {LOAD_TIMEOUT:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let measure = measure(&tab, viewport);
        let png = screenshot(&tab, &measure, None);
        let readme_png = readme.then(|| {
            screenshot(
                &tab,
                &measure,
                Some((f64::from(viewport.width), README_SCREENSHOT_HEIGHT)),
            )
        });
        // One more round trip: every event sent before it has reached the listener.
        tab.evaluate("0", false).unwrap();
        let events = pager
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Shown {
            viewport,
            measure,
            events,
            png,
            readme_png,
        }
    }
}

/// What a page showed.
struct Shown {
    viewport: Viewport,
    /// `MEASURE_JS`'s result.
    measure: Value,
    /// Console errors and warnings, uncaught exceptions, failed requests, in order.
    events: Vec<String>,
    /// The whole page (up to `MAX_SCREENSHOT_HEIGHT`).
    png: Vec<u8>,
    /// The top `README_SCREENSHOT_HEIGHT` pixels, when asked for.
    readme_png: Option<Vec<u8>>,
}

/// An event that is a problem, as a line; `None` for the others. `requests` maps the requests
/// seen so far to their addresses.
fn event_problem(event: &Event, requests: &mut BTreeMap<String, String>) -> Option<String> {
    use headless_chrome::protocol::cdp::Log::LogEntryLevel;
    use headless_chrome::protocol::cdp::Runtime::ConsoleAPICalledEventTypeOption as Console;
    match event {
        Event::LogEntryAdded(e) => {
            let entry = &e.params.entry;
            let level = match entry.level {
                LogEntryLevel::Error => "error",
                LogEntryLevel::Warning => "warning",
                _ => return None,
            };
            Some(format!(
                "console {level} ({:?}): {}{}",
                entry.source,
                entry.text,
                entry
                    .url
                    .as_deref()
                    .map(|u| format!(" [{u}]"))
                    .unwrap_or_default()
            ))
        }
        Event::RuntimeConsoleAPICalled(e) => {
            let level = match e.params.Type {
                Console::Error => "error",
                Console::Warning => "warning",
                Console::Assert => "assert",
                _ => return None,
            };
            let text: Vec<String> = e
                .params
                .args
                .iter()
                .map(|a| match &a.value {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => a.description.clone().unwrap_or_default(),
                })
                .collect();
            Some(format!("console.{level}: {}", text.join(" ")))
        }
        Event::RuntimeExceptionThrown(e) => {
            let details = &e.params.exception_details;
            let what = details
                .exception
                .as_ref()
                .and_then(|x| x.description.clone())
                .unwrap_or_else(|| details.text.clone());
            Some(format!(
                "uncaught exception at line {}: {what}",
                details.line_number + 1
            ))
        }
        Event::NetworkRequestWillBeSent(e) => {
            let p = &e.params;
            requests.insert(p.request_id.clone(), p.request.url.clone());
            None
        }
        Event::NetworkLoadingFailed(e) => {
            let p = &e.params;
            Some(format!(
                "request for {} failed: {}{}",
                requests
                    .get(&p.request_id)
                    .map_or("an unknown address", String::as_str),
                p.error_text,
                p.blocked_reason
                    .as_ref()
                    .map(|r| format!(" (blocked: {r:?})"))
                    .unwrap_or_default()
            ))
        }
        _ => None,
    }
}

/// Runs `MEASURE_JS` in the tab.
fn measure(tab: &Tab, viewport: Viewport) -> Value {
    let call = format!("({MEASURE_JS})({})", viewport.width);
    let result = tab.evaluate(&call, true).unwrap();
    match result.value {
        Some(Value::String(json)) => serde_json::from_str(&json).unwrap(),
        _ => panic!(
            "measuring the page failed: {}",
            result.description.unwrap_or_default()
        ),
    }
}

/// A PNG of the page from its top left: all of it, or at most `size` (width, height) CSS pixels.
fn screenshot(tab: &Tab, measure: &Value, size: Option<(f64, f64)>) -> Vec<u8> {
    let content_width = measure["contentWidth"].as_f64().unwrap_or(1.0).max(1.0);
    let content_height = measure["contentHeight"].as_f64().unwrap_or(1.0).max(1.0);
    let (width, height) = size.unwrap_or((content_width, content_height));
    let width = width.min(content_width);
    let height = height.min(content_height).min(MAX_SCREENSHOT_HEIGHT);
    let shot = tab
        .call_method(command!(
            Page::CaptureScreenshot,
            json!({
            "format": "png",
            "fromSurface": true,
            "captureBeyondViewport": true,
            "optimizeForSpeed": true,
            "clip": { "x": 0, "y": 0, "width": width, "height": height, "scale": 1 },
            })
        ))
        .unwrap();
    base64::Engine::decode(&base64::engine::general_purpose::STANDARD, shot.data).unwrap()
}

/// Why a screenshot counts as blank, if it does: too few pixels away from the most common colour,
/// or too few colours.
fn blankness(png_bytes: &[u8]) -> Option<String> {
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
fn page_problems(page: &Shown) -> Vec<String> {
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
    problems.extend(blankness(&page.png));
    problems
}

/// What is wrong with one `<figure data-figure>`: its kind, its one svg (role, labels, `<title>`
/// and `<desc>` first, a size), its caption and its table.
fn figure_problems(figure: &Value) -> Vec<String> {
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
fn list(items: &Value) -> String {
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
fn list_is_empty(items: &Value) -> bool {
    items.as_array().is_none_or(Vec::is_empty)
}

/// What the plan JSON asks of one section of the page.
#[derive(Debug, Clone, PartialEq)]
struct Wanted {
    /// `job` or `service`.
    kind: &'static str,
    name: String,
    /// The figures it must have; none for an infeasible plan.
    figures: Vec<&'static str>,
    /// The reasons an infeasible plan must show.
    reasons: Vec<String>,
}

/// The sections and figures a plan document calls for: a feasible job has `placement`,
/// `schedule`, `step-time` and `memory`, plus `alternatives` and `data` when it has any; a
/// feasible service has `placement` and `service`; an infeasible one shows its reasons.
fn wanted(plan: &Value) -> Vec<Wanted> {
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
fn missing(measure: &Value, wanted: &[Wanted]) -> Vec<String> {
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

/// A scratch folder for the pages this test writes, removed at the end.
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("loam-report-browser-")
        .tempdir()
        .unwrap()
}

/// `file://` address of a page.
fn file_url(path: &Path) -> String {
    format!("file://{}", path.canonicalize().unwrap().display())
}

/// Writes a hand-written page and opens it at `viewport`.
fn open_page(session: &Session, dir: &Path, name: &str, html: &str, viewport: Viewport) -> Shown {
    let path = dir.join(format!("{name}.html"));
    std::fs::write(&path, html).unwrap();
    session.open(&file_url(&path), viewport, false)
}

/// Writes a hand-written page, opens it at `viewport` and returns the checker's problems.
fn check_page(
    session: &Session,
    dir: &Path,
    name: &str,
    html: &str,
    viewport: Viewport,
) -> Vec<String> {
    page_problems(&open_page(session, dir, name, html, viewport))
}

/// A small page that keeps the contract: one job section with one figure.
fn good_page(svg_body: &str, extra_head: &str, extra_body: &str) -> String {
    format!(
        r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>test page</title>
<style>
body {{ font-family: "DejaVu Sans", sans-serif; margin: 16px; color: #222; background: #fff; }}
svg {{ max-width: 100%; height: auto; display: block; }}
</style>{extra_head}
</head><body>
<nav><a href="#job-demo">demo</a></nav>
<section class="job" id="job-demo"><h2>demo</h2>
<p>Runs on 64 H800 at site a for 12.5 days.</p>
<figure class="figure" data-figure="placement">
<svg role="img" aria-labelledby="t1 d1" viewBox="0 0 300 120" width="600" height="240">
<title id="t1">Placement of demo</title><desc id="d1">64 devices at site a.</desc>
<rect x="10" y="10" width="120" height="60" fill="#4a7fb5"/>
<rect x="150" y="10" width="120" height="60" fill="#e39b3b"/>
{svg_body}
</svg>
<figcaption>Where demo runs: two node groups at site a.</figcaption>
<details><summary>Numbers</summary><table><thead><tr><th>group</th><th>devices</th></tr></thead>
<tbody><tr><td>a-h800</td><td>64</td></tr></tbody></table></details>
</figure>
</section>{extra_body}
</body></html>
"##
    )
}

/// Labels of the good page that do not overlap, one of them hidden on top of another.
const APART: &str = r#"<text x="20" y="100" font-size="12">group a</text>
<text x="160" y="100" font-size="12">group b</text>
<text x="20" y="100" font-size="12" visibility="hidden">hidden on top</text>
<text x="20" y="100" font-size="12"> </text>"#;

/// The checker's tests share one session: `None` skips them where Chromium is missing.
macro_rules! session_or_skip {
    () => {
        match session() {
            Some(session) => session,
            None => return,
        }
    };
}

#[test]
fn the_checker_passes_a_page_that_keeps_the_contract() {
    let session = session_or_skip!();
    let dir = scratch();
    for viewport in [DESKTOP, PHONE] {
        let page = open_page(
            &session,
            dir.path(),
            "good",
            &good_page(APART, "", ""),
            viewport,
        );
        let problems = page_problems(&page);
        let plan = json!({"plans": [{"job": "demo", "feasible": true, "alternatives": [], "data": {"options": []}}]});
        let wanted = wanted(&plan);
        // The good page has one figure of the four a feasible job needs: exactly three missing.
        let missing = missing(&page.measure, &wanted);
        assert_eq!(missing.len(), 3, "{missing:#?}");
        assert!(missing.iter().all(|m| m.starts_with("job demo: no figure")));
        assert!(
            problems.is_empty(),
            "{}: a page that keeps the contract has problems: {problems:#?}",
            viewport.name()
        );
    }
}

#[test]
fn the_checker_finds_overlapping_labels() {
    let session = session_or_skip!();
    let dir = scratch();
    let overlapping = r#"<text x="20" y="100" font-size="14">tensor 8</text>
<text x="26" y="104" font-size="14">pipeline 4</text>"#;
    let problems = check_page(
        &session,
        dir.path(),
        "overlap",
        &good_page(overlapping, "", ""),
        DESKTOP,
    );
    assert!(
        problems.iter().any(|p| p.contains(
            "#job-demo figure placement: labels \"tensor 8\" and \"pipeline 4\" overlap"
        )),
        "{problems:#?}"
    );
    assert_eq!(problems.len(), 1, "only the overlap: {problems:#?}");
}

#[test]
fn the_checker_finds_a_page_wider_than_the_window() {
    let session = session_or_skip!();
    let dir = scratch();
    let wide =
        r#"<div class="wide" style="width: 700px; height: 20px; background: #eee">wide</div>"#;
    let problems = check_page(
        &session,
        dir.path(),
        "wide",
        &good_page(APART, "", wide),
        PHONE,
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("the page is 7") && p.contains("div.wide")),
        "{problems:#?}"
    );
    // The same page fits on a desktop.
    let problems = check_page(
        &session,
        dir.path(),
        "wide",
        &good_page(APART, "", wide),
        DESKTOP,
    );
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_checker_finds_console_errors_exceptions_and_blocked_requests() {
    let session = session_or_skip!();
    let dir = scratch();
    // A page without the policy, so its script runs: an error, a warning, an exception.
    let noisy = good_page(APART, "", "")
        .replace(&format!("<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"), "")
        .replace(
            "</body>",
            "<script>console.error('boom'); console.warn('careful'); throw new Error('thrown');</script></body>",
        );
    let problems = check_page(&session, dir.path(), "noisy", &noisy, DESKTOP);
    for wanted in [
        "console.error: boom",
        "console.warning: careful",
        "uncaught exception",
        "the page has 1 <script>",
        "the Content-Security-Policy meta is null",
    ] {
        assert!(
            problems.iter().any(|p| p.contains(wanted)),
            "{wanted}: {problems:#?}"
        );
    }
    // With the policy, an image from outside is blocked, and an inline handler refused.
    let blocked = good_page(
        APART,
        "",
        r#"<img src="https://example.invalid/logo.png" alt="logo" onerror="console.error('x')">"#,
    );
    let problems = check_page(&session, dir.path(), "blocked", &blocked, DESKTOP);
    for wanted in [
        "request for https://example.invalid/logo.png failed:",
        "an address outside the page: img src=\"https://example.invalid/logo.png\"",
        "an event handler attribute: img onerror",
    ] {
        assert!(
            problems.iter().any(|p| p.contains(wanted)),
            "{wanted}: {problems:#?}"
        );
    }
    assert!(
        problems.iter().any(|p| p.starts_with("console error")),
        "the policy's refusal is a console error: {problems:#?}"
    );
}

#[test]
fn the_checker_finds_a_blank_page_and_a_broken_figure() {
    let session = session_or_skip!();
    let dir = scratch();
    let blank = format!(
        r#"<!doctype html><html><head><meta http-equiv="Content-Security-Policy" content="{CSP}"><meta name="viewport" content="width=device-width"></head><body></body></html>"#
    );
    let problems = check_page(&session, dir.path(), "blank", &blank, DESKTOP);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0].starts_with("the screenshot is blank"),
        "{problems:#?}"
    );

    let broken = good_page(APART, "", "")
        .replace(
            r#"<title id="t1">Placement of demo</title><desc id="d1">64 devices at site a.</desc>"#,
            "",
        )
        .replace(
            "<figcaption>Where demo runs: two node groups at site a.</figcaption>",
            "",
        )
        .replace(
            "<tbody><tr><td>a-h800</td><td>64</td></tr></tbody>",
            "<tbody></tbody>",
        )
        .replace(
            r#"width="600" height="240">"#,
            r#"width="0" height="0" style="width:0;height:0">"#,
        )
        .replace(r##"href="#job-demo""##, r##"href="#job-gone""##);
    let problems = check_page(&session, dir.path(), "broken", &broken, DESKTOP);
    for wanted in [
        "figure placement: the svg's aria-labelledby \"t1 d1\" names no element",
        "figure placement: no text in a <title>",
        "figure placement: no text in a <desc>",
        "figure placement: no text in a <figcaption>",
        "figure placement: the table has no <tbody> row",
        "figure placement: the svg is drawn 0×0 px",
        "a link to no element of the page: a href=\"#job-gone\"",
    ] {
        assert!(
            problems.iter().any(|p| p.contains(wanted)),
            "{wanted}: {problems:#?}"
        );
    }
}

#[test]
fn the_plan_says_which_figures_a_page_needs() {
    let plan = json!({
        "plans": [
            {"job": "big", "feasible": true, "alternatives": [{"summary": "x"}], "data": {"options": [{}]}},
            {"job": "small", "feasible": true, "alternatives": [], "data": {"options": []}},
            {"job": "late", "feasible": false, "reasons": ["misses the deadline by 4.1 days"]},
        ],
        "services": [
            {"service": "chat", "feasible": true},
            {"service": "rag", "feasible": false, "reasons": ["over budget"]},
        ],
    });
    let wanted = wanted(&plan);
    let summary: Vec<(String, Vec<&str>, usize)> = wanted
        .iter()
        .map(|w| {
            (
                format!("{} {}", w.kind, w.name),
                w.figures.clone(),
                w.reasons.len(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "job big".to_string(),
                vec![
                    "placement",
                    "schedule",
                    "step-time",
                    "memory",
                    "alternatives",
                    "data"
                ],
                0
            ),
            (
                "job small".to_string(),
                vec!["placement", "schedule", "step-time", "memory"],
                0
            ),
            ("job late".to_string(), vec![], 1),
            ("service chat".to_string(), vec!["placement", "service"], 0),
            ("service rag".to_string(), vec![], 1),
        ]
    );
    let measure = json!({"sections": [
        {"kind": "job", "id": "job-late", "name": "late", "figures": [], "text": "late misses the deadline by 4.1 days"},
        {"kind": "service", "id": "svc-chat", "name": "chat", "figures": ["placement"], "text": ""},
    ]});
    let missing = missing(&measure, &wanted[2..4]);
    assert_eq!(
        missing,
        vec![
            "service chat: the section's id \"svc-chat\" does not start with \"service-\"",
            "service chat: no figure \"service\" (the section has: placement)",
        ]
    );
}

/// The examples, sorted.
fn examples() -> Vec<PathBuf> {
    let mut examples: Vec<PathBuf> = std::fs::read_dir(repo_root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "loam"))
        .map(|p| p.strip_prefix(repo_root()).unwrap().to_path_buf())
        .collect();
    examples.sort();
    examples
}

/// Runs the CLI from the repository root.
fn loam(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_loam-under-test"))
        .args(["--color", "never"])
        .args(args)
        .current_dir(repo_root())
        .output()
        .unwrap()
}

/// The first line of a command's error output that says something.
fn first_line(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(nothing on stderr)")
        .to_string()
}

/// The example's plan document and its report page, or why either failed.
fn render(example: &Path, out: &Path) -> Result<Value, String> {
    let example = example.to_str().unwrap();
    let plan = loam(&["plan", "--format", "json", example]);
    if !matches!(plan.status.code(), Some(0 | 1)) {
        return Err(format!(
            "`loam plan --format json` exited with {:?}: {}",
            plan.status.code(),
            first_line(&plan.stderr)
        ));
    }
    let plan: Value = serde_json::from_slice(&plan.stdout)
        .map_err(|e| format!("the plan JSON does not parse: {e}"))?;
    let report = loam(&["report", example, "--out", out.to_str().unwrap()]);
    if !report.status.success() || !out.is_file() {
        return Err(format!(
            "`loam report` exited with {:?} and wrote {}: {}",
            report.status.code(),
            if out.is_file() { "the page" } else { "no page" },
            first_line(&report.stderr)
        ));
    }
    Ok(plan)
}

#[test]
#[allow(clippy::print_stderr)] // the timing and the list of failures are for the person running it
fn every_example_report_renders_cleanly_in_a_browser() {
    let session = session_or_skip!();
    let started = Instant::now();
    let dir = scratch();
    let shots = repo_root().join("target/report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    // `LOAM_WRITE_README_SCREENSHOT=1` also writes the README's picture of the hetero-70b page.
    let write_readme = std::env::var_os("LOAM_WRITE_README_SCREENSHOT").is_some_and(|v| v == "1");
    let mut failures: Vec<String> = Vec::new();
    let mut browser_time = Duration::ZERO;
    for example in examples() {
        let name = example.file_stem().unwrap().to_str().unwrap().to_string();
        let out = dir.path().join(format!("{name}.html"));
        let plan = match render(&example, &out) {
            Ok(plan) => plan,
            Err(why) => {
                failures.push(format!("{name}: {why}"));
                continue;
            }
        };
        let wanted = wanted(&plan);
        let opened = Instant::now();
        for viewport in [DESKTOP, PHONE] {
            let readme = write_readme && viewport.width == DESKTOP.width && name == README_EXAMPLE;
            let page = session.open(&file_url(&out), viewport, readme);
            std::fs::write(
                shots.join(format!("{name}-{}.png", viewport.width)),
                &page.png,
            )
            .unwrap();
            if let Some(png) = &page.readme_png {
                let to = repo_root().join(README_SCREENSHOT);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::write(&to, png).unwrap();
            }
            let problems = page_problems(&page)
                .into_iter()
                .chain(missing(&page.measure, &wanted));
            failures.extend(problems.map(|p| format!("{name} at {}: {p}", viewport.name())));
        }
        browser_time += opened.elapsed();
    }
    eprintln!(
        "report_browser: {:.1} s in all, {:.1} s in the browser; screenshots in {}",
        started.elapsed().as_secs_f64(),
        browser_time.as_secs_f64(),
        shots.strip_prefix(repo_root()).unwrap().display()
    );
    assert!(
        failures.is_empty(),
        "{} problem(s) in the examples' reports:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
