//! `loam check`: parse and type-check spec files, check them against the catalogue, report
//! every problem.

use crate::Context;
use crate::args::{CheckArgs, CheckFormat};
use crate::render::diagnostics::{render_text, to_json};
use crate::session::load_checked;
use serde_json::json;
use std::path::Path;

/// Runs `loam check`; exit 0 when clean, 1 on errors in specs or in the catalogue.
pub fn run(
    args: &CheckArgs,
    catalogue_dir: Option<&Path>,
    cx: &mut Context<'_>,
) -> Result<u8, crate::io::IoError> {
    let specs = load_checked(&args.paths, catalogue_dir)?;
    if specs.files.is_empty() && specs.catalogue_errors == 0 {
        let message = crate::io::no_specs_found(&args.paths);
        if args.format == CheckFormat::Github {
            let text = message.trim_end().trim_start_matches("error: ");
            cx.print(&format!("::error title=loam check::{text}\n"));
        }
        cx.eprint(&message);
        return Ok(1);
    }
    let errors = specs.errors();
    match args.format {
        CheckFormat::Github => {
            cx.print(&crate::render::github::render(
                &specs.diagnostics,
                &specs.sources,
            ));
            cx.print(&format!(
                "::notice title=loam check::checked {} {}, {} {}, {} {}: {errors} {}\n",
                specs.files.len(),
                plural(specs.files.len(), "file"),
                specs.jobs.len(),
                plural(specs.jobs.len(), "job"),
                specs.services.len(),
                plural(specs.services.len(), "service"),
                plural(errors, "error")
            ));
        }
        CheckFormat::Json => {
            let diagnostics: Vec<_> = specs
                .diagnostics
                .iter()
                .map(|d| to_json(d, &specs.sources))
                .collect();
            let doc = json!({
                "files": specs.files.len(), "jobs": specs.jobs.len(),
                "services": specs.services.len(),
                "errors": errors, "diagnostics": diagnostics,
            });
            cx.print_json(&doc);
        }
        CheckFormat::Text => {
            cx.eprint(&render_text(&specs.diagnostics, &specs.sources, cx.color));
            // Services are counted when there are any, so a file of jobs reads as it always has.
            let services = match specs.services.len() {
                0 => String::new(),
                n => format!(", {n} {}", plural(n, "service")),
            };
            let summary = format!(
                "checked {} {}, {} {}{services}: ",
                specs.files.len(),
                plural(specs.files.len(), "file"),
                specs.jobs.len(),
                plural(specs.jobs.len(), "job")
            );
            if specs.catalogue.is_none() {
                cx.eprint(&format!(
                    "the catalogue has {errors} {}; no spec was checked\n",
                    plural(errors, "error")
                ));
            } else if errors == 0 {
                cx.print(&format!("{summary}no problems\n"));
            } else {
                cx.eprint(&format!("{summary}{errors} {}\n", plural(errors, "error")));
            }
        }
    }
    Ok(u8::from(errors > 0))
}

/// `word` or `words`.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}
