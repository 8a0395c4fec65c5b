//! `loam fmt`: rewrite spec files in the canonical layout, or check that they are.

use crate::Context;
use crate::args::FmtArgs;
use crate::io::{self, IoError};
use crate::render::diagnostics::render_text;
use loam_compiler::fmt::format_source;
use loam_ir::diagnostics::codes::Phase;
use loam_ir::span::SourceMap;
use std::path::PathBuf;

/// Runs `loam fmt`. Exit 0 when done (or, with `--check`/`--diff`, when nothing would change);
/// 1 when a file does not parse or, with `--check`/`--diff`, when a file would change.
pub fn run(args: &FmtArgs, cx: &mut Context<'_>) -> Result<u8, IoError> {
    let from_stdin = args.stdin || args.paths.iter().any(|p| p.as_os_str() == "-");
    if from_stdin {
        let text = cx.read_stdin()?;
        return Ok(format_one("<stdin>", &text, cx, |formatted, cx| {
            cx.print(formatted);
            0
        }));
    }
    let files = io::find_spec_files(&args.paths)?;
    // Format everything first: a file that fails to parse stops the run before anything is written.
    let mut results: Vec<(PathBuf, String, String)> = Vec::new();
    let mut failed = false;
    for path in files {
        let bytes = io::read_spec(&path)?;
        let name = io::display(&path);
        match std::str::from_utf8(&bytes).ok().and_then(format_source) {
            Some(formatted) => {
                results.push((
                    path,
                    String::from_utf8_lossy(&bytes).into_owned(),
                    formatted,
                ));
            }
            None => {
                report_errors(&name, &bytes, cx);
                failed = true;
            }
        }
    }
    if failed {
        cx.eprint("error: files with syntax errors were not formatted; nothing was written\n");
        return Ok(1);
    }
    let changed: Vec<&(PathBuf, String, String)> = results
        .iter()
        .filter(|(_, before, after)| before != after)
        .collect();
    if args.check || args.diff {
        for (path, before, after) in &changed {
            let name = io::display(path);
            if args.diff {
                cx.print(&unified_diff(&name, before, after));
            } else {
                cx.eprint(&format!("would reformat {name}\n"));
            }
        }
        cx.eprint(&summary(changed.len(), results.len(), "would reformat"));
        return Ok(u8::from(!changed.is_empty()));
    }
    for (path, _, after) in &changed {
        // A linked spec is formatted at its target when that is inside the repository (the
        // link stays a link); a link out of it is refused, not replaced by a file.
        let root = io::write::repository_root(path);
        io::write::write_file(
            path,
            after.as_bytes(),
            io::write::Links::FollowInside,
            Some(&root),
        )?;
        cx.eprint(&format!("formatted {}\n", io::display(path)));
    }
    cx.eprint(&summary(changed.len(), results.len(), "formatted"));
    Ok(0)
}

/// The last line of a run over files: how many changed (or would) and how many were already in
/// the canonical layout, so a run that changes nothing still says what it looked at.
fn summary(changed: usize, files: usize, verb: &str) -> String {
    let plural = |n: usize| if n == 1 { "file" } else { "files" };
    let unchanged = files - changed;
    match (changed, unchanged) {
        (0, n) => format!("{n} {} already formatted\n", plural(n)),
        (c, 0) => format!("{verb} {c} {}\n", plural(c)),
        (c, n) => format!("{verb} {c} {}, {n} already formatted\n", plural(c)),
    }
}

fn format_one(
    name: &str,
    text: &str,
    cx: &mut Context<'_>,
    done: impl FnOnce(&str, &mut Context<'_>) -> u8,
) -> u8 {
    match format_source(text) {
        Some(formatted) => done(&formatted, cx),
        None => {
            report_errors(name, text.as_bytes(), cx);
            1
        }
    }
}

fn report_errors(name: &str, bytes: &[u8], cx: &mut Context<'_>) {
    // The formatter needs only a parse: report the syntax errors, not the checks.
    let mut sources = SourceMap::new();
    let id = sources.add(
        name.to_string(),
        String::from_utf8_lossy(bytes).into_owned(),
    );
    let syntax = match loam_compiler::syntax::decode_utf8(id, bytes) {
        Ok(text) => loam_compiler::syntax::parse(id, &text).diagnostics,
        Err(diagnostic) => vec![*diagnostic],
    };
    let syntax: Vec<_> = syntax
        .into_iter()
        .filter(|d| d.code.phase() == Phase::Syntax)
        .collect();
    cx.eprint(&render_text(&syntax, &sources, cx.color));
}

/// A unified diff of one file, `--- a/x` / `+++ b/x` style.
pub fn unified_diff(name: &str, before: &str, after: &str) -> String {
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}
