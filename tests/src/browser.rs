//! A headless Chromium driven over the DevTools protocol, for the report tests: one shared
//! browser per test binary, pages opened at a viewport, measured by one script and
//! screenshotted ([`checks`] judges what it measured).

use crate::tools::{chromium, have_chromium};
use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::protocol::cdp::{Emulation, Network, Page};
use headless_chrome::{Browser, LaunchOptions, Tab};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

pub mod checks;

/// A window the page is shown in.
#[derive(Debug, Clone, Copy)]
pub struct Viewport {
    /// The layout width in CSS pixels.
    pub width: u32,
    /// The height in CSS pixels.
    pub height: u32,
    /// A phone: the layout viewport is the device width (with the page's `<meta name=viewport>`).
    pub mobile: bool,
}

impl Viewport {
    /// How messages and screenshot names call it.
    pub fn name(self) -> String {
        format!("{}px", self.width)
    }
}

/// A desktop window.
pub const DESKTOP: Viewport = Viewport {
    width: 1280,
    height: 900,
    mobile: false,
};
/// A phone held upright.
pub const PHONE: Viewport = Viewport {
    width: 390,
    height: 844,
    mobile: true,
};

/// The figure kinds the page may draw.
pub const FIGURE_KINDS: [&str; 11] = [
    "placement",
    "schedule",
    "step-time",
    "memory",
    "alternatives",
    "data",
    "service",
    "diff",
    "totals",
    "gantt",
    "utilisation",
];

/// A screenshot is blank unless at least this share of its pixels differs from its most common
/// colour…
pub const MIN_INKED_SHARE: f64 = 0.02;
/// …and it holds at least this many colours (antialiased text alone brings dozens).
pub const MIN_COLOURS: usize = 8;
/// Screenshots are at most this tall (Chromium's largest texture is 16384 px).
pub const MAX_SCREENSHOT_HEIGHT: f64 = 16_000.0;
/// The README's picture (written with `LOAM_WRITE_README_SCREENSHOT=1`): the top this many CSS
/// pixels of this example's page at the desktop width, in this file.
pub const README_SCREENSHOT_HEIGHT: f64 = 1600.0;
/// The example the README shows.
pub const README_EXAMPLE: &str = "hetero-70b-guiyang";
/// Where the README's picture is.
pub const README_SCREENSHOT: &str = "docs/images/report-hetero-70b.png";

/// Everything the page is measured by, in one place: a function of the window's width (CSS px)
/// that returns a JSON string, read by `page_problems`, `figure_problems` and `missing`.
/// Labels are `<text>` elements with visible, non-empty text; two overlap when their boxes
/// intersect by more than 1 px both ways. On a phone the layout viewport grows to fit a page
/// that is too wide (the phone zooms out), so widths are compared with the window's, not with
/// `innerWidth`.
pub const MEASURE_JS: &str = r#"(async (windowWidth) => {
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

/// Run with the print media emulated: each `<details>` whose content would not print, as where it
/// is. A closed one's content sits under `content-visibility: hidden` unless the print style
/// sheet shows it; script still gets its boxes laid out, so sizes cannot tell, `checkVisibility`
/// can.
pub const PRINT_JS: &str = r#"(() => JSON.stringify([...document.querySelectorAll('details')]
  .filter((d) => [...d.children]
    .filter((c) => c.tagName.toLowerCase() !== 'summary')
    .some((c) => !c.checkVisibility()))
  .map((d) => {
    const figure = d.closest('figure[data-figure]');
    const section = d.closest('section');
    return (section && section.id ? '#' + section.id + ' ' : '') + (figure ? 'figure ' + figure.dataset.figure : 'details' + (d.id ? '#' + d.id : ''));
  })))()"#;

/// The page's contract: exactly this policy.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

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
pub struct Session {
    /// Kept for its process; pages are shown in `pager`'s one tab.
    pub _browser: Browser,
    /// One page at a time, so timings and layouts do not depend on the other tests.
    pub pager: Mutex<Pager>,
}

/// The tab every page is shown in, and what it reported.
pub struct Pager {
    /// The one tab.
    pub tab: Arc<Tab>,
    /// Problems the tab reported since the last page was opened (see `event_problem`).
    pub events: Arc<Mutex<Vec<String>>>,
    /// Pages opened so far: each address gets its own query, so the poll for the loaded page
    /// cannot mistake the previous one for it.
    pub opened: u64,
}

/// The shared session, or `None` (after a message) where Chromium is missing outside CI.
pub fn session() -> Option<Arc<Session>> {
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
pub const LOAD_TIMEOUT: Duration = Duration::from_secs(30);

impl Session {
    /// Opens `url` at `viewport`, measures it and takes its screenshot, and with `readme` the
    /// README's picture of its top too.
    pub fn open(&self, url: &str, viewport: Viewport, readme: bool) -> Shown {
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
        let unprinted = unprinted(&tab);
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
            unprinted,
            events,
            png,
            readme_png,
        }
    }
}

/// What a page showed.
pub struct Shown {
    /// The window it was shown in.
    pub viewport: Viewport,
    /// `MEASURE_JS`'s result.
    pub measure: Value,
    /// The `<details>` whose content would not print (`PRINT_JS`).
    pub unprinted: Vec<String>,
    /// Console errors and warnings, uncaught exceptions, failed requests, in order.
    pub events: Vec<String>,
    /// The whole page (up to `MAX_SCREENSHOT_HEIGHT`).
    pub png: Vec<u8>,
    /// The top `README_SCREENSHOT_HEIGHT` pixels, when asked for.
    pub readme_png: Option<Vec<u8>>,
}

/// An event that is a problem, as a line; `None` for the others. `requests` maps the requests
/// seen so far to their addresses.
pub fn event_problem(event: &Event, requests: &mut BTreeMap<String, String>) -> Option<String> {
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
pub fn measure(tab: &Tab, viewport: Viewport) -> Value {
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

/// Runs `PRINT_JS` with the print media emulated, then emulates the screen again.
pub fn unprinted(tab: &Tab) -> Vec<String> {
    let media = |media: &str| {
        tab.call_method(command!(
            Emulation::SetEmulatedMedia,
            json!({ "media": media })
        ))
        .unwrap();
    };
    media("print");
    let result = tab.evaluate(PRINT_JS, false).unwrap();
    media("");
    match result.value {
        Some(Value::String(json)) => serde_json::from_str(&json).unwrap(),
        _ => panic!(
            "measuring the printed page failed: {}",
            result.description.unwrap_or_default()
        ),
    }
}

/// A PNG of the page from its top left: all of it, or at most `size` (width, height) CSS pixels.
pub fn screenshot(tab: &Tab, measure: &Value, size: Option<(f64, f64)>) -> Vec<u8> {
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
