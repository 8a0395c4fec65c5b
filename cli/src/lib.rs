//! The loam command-line interface as a library: `run` takes the arguments and the output
//! streams and returns the exit code, so tests drive the CLI in-process.
//!
//! This crate is the only place that touches files, the terminal and the environment; the
//! compiler core receives text and returns values and diagnostics.

pub mod args;
pub mod catalogue_source;
mod commands;
pub mod gitops;
pub mod io;
pub mod plan_cache;
pub mod render;
pub mod session;

use args::{Cli, Color, Command};
use clap::Parser;
use std::ffi::OsString;
use std::io::{IsTerminal, Read, Write};

/// Where a command writes and reads, and how.
pub struct Context<'a> {
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    stdin: &'a mut dyn Read,
    /// Whether to colour diagnostics.
    pub color: bool,
    /// What became of standard output: once a write failed, nothing more is written to it.
    out_state: OutState,
}

/// Whether standard output still takes what a command prints.
enum OutState {
    Open,
    /// The reader went away (`loam … | head`): not an error, the rest is dropped quietly.
    Closed,
    /// A write failed (a full disk, `/dev/full`): the run ends with exit 2.
    Failed(std::io::Error),
}

impl Context<'_> {
    /// Writes to standard output. The first failure is kept and ends the run with exit 2
    /// ([`run`]), so a truncated output file never passes for a complete one.
    pub fn print(&mut self, text: &str) {
        if !matches!(self.out_state, OutState::Open) {
            return;
        }
        if let Err(e) = self.out.write_all(text.as_bytes()) {
            self.out_state = closed_or_failed(e);
        }
    }

    /// Writes to standard error. A failure there cannot be reported anywhere, so it is dropped.
    pub fn eprint(&mut self, text: &str) {
        let _ = self.err.write_all(text.as_bytes());
    }

    /// Flushes standard output (buffered writes fail only here) and says how it went.
    fn finish_output(&mut self) -> Option<std::io::Error> {
        if matches!(self.out_state, OutState::Open)
            && let Err(e) = self.out.flush()
        {
            self.out_state = closed_or_failed(e);
        }
        let _ = self.err.flush();
        match std::mem::replace(&mut self.out_state, OutState::Closed) {
            OutState::Failed(e) => Some(e),
            OutState::Open | OutState::Closed => None,
        }
    }

    /// Writes a JSON document to standard output, pretty and with a final newline.
    pub fn print_json(&mut self, value: &serde_json::Value) {
        let text = serde_json::to_string_pretty(value).unwrap_or_default();
        self.print(&text);
        self.print("\n");
    }

    /// Reads all of standard input as UTF-8 text, at most [`io::SPEC_SIZE_LIMIT`] bytes (the
    /// limit of a spec file), so `< /dev/zero` is an error rather than exhausted memory.
    pub fn read_stdin(&mut self) -> Result<String, io::IoError> {
        let mut text = String::new();
        let limit = io::SPEC_SIZE_LIMIT;
        (&mut self.stdin)
            .take(limit + 1)
            .read_to_string(&mut text)
            .map_err(|e| io::IoError(format!("cannot read standard input: {e}")))?;
        if text.len() as u64 > limit {
            return Err(io::IoError(format!(
                "standard input is larger than {} MiB, the most loam reads as a spec",
                limit >> 20
            )));
        }
        Ok(text)
    }
}

/// Runs loam with `args` (program name first). Returns the exit code: 0 success, 1 problems in
/// the specs, 2 usage or I/O errors.
pub fn run(
    args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    out: &mut dyn Write,
    err: &mut dyn Write,
    stdin: &mut dyn Read,
) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let rendered = e.render().to_string();
            if e.use_stderr() {
                let _ = err.write_all(rendered.as_bytes());
            } else if let Err(e) = out
                .write_all(rendered.as_bytes())
                .and_then(|()| out.flush())
                && e.kind() != std::io::ErrorKind::BrokenPipe
            {
                let _ = writeln!(err, "error: cannot write standard output: {e}");
                return 2;
            }
            return code;
        }
    };
    let color = match cli.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let mut cx = Context {
        out,
        err,
        stdin,
        color,
        out_state: OutState::Open,
    };
    io::notes::clear();
    let result = match &cli.command {
        Command::Check(a) => commands::check::run(a, cli.catalogue.as_deref(), &mut cx),
        Command::Fmt(a) => commands::fmt::run(a, &mut cx),
        Command::Explain(a) => Ok(commands::explain::run(a, &mut cx)),
        Command::Completions(a) => Ok(commands::completions::run(a, &mut cx)),
        Command::Catalogue(a) => commands::catalogue::run(a, cli.catalogue.as_deref(), &mut cx),
        Command::Plan(a) => commands::plan::run(a, cli.catalogue.as_deref(), &mut cx),
        Command::Schedule(a) => commands::schedule::run(a, cli.catalogue.as_deref(), &mut cx),
        Command::Calibrate(a) => commands::calibrate::run(a, cli.catalogue.as_deref(), &mut cx),
        Command::Emit(a) => commands::emit::run(a, cli.catalogue.as_deref(), &mut cx),
        Command::Diff(a) => commands::diff::run(a, cli.catalogue.as_deref(), &mut cx),
        Command::Report(a) => commands::report::run(a, cli.catalogue.as_deref(), &mut cx),
        Command::Runs(a) => commands::runs::run(a, cli.catalogue.as_deref(), &mut cx),
        Command::Schema => Ok(commands::schema::run(&mut cx)),
        Command::Lsp => commands::lsp::run(cli.catalogue.as_deref()),
    };
    let notes = io::notes::take();
    cx.eprint(&notes);
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            cx.eprint(&format!("error: {e}\n"));
            2
        }
    };
    match cx.finish_output() {
        Some(e) => {
            cx.eprint(&format!("error: cannot write standard output: {e}\n"));
            2
        }
        None => code,
    }
}

/// A failed write to standard output: a closed pipe ends output quietly, anything else fails.
fn closed_or_failed(e: std::io::Error) -> OutState {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        OutState::Closed
    } else {
        OutState::Failed(e)
    }
}
