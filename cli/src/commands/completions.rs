//! `loam completions SHELL`: shell completion scripts generated from the clap definition.

use crate::Context;
use crate::args::{Cli, CompletionsArgs};
use clap::CommandFactory;

/// Prints the completion script for the shell.
pub fn run(args: &CompletionsArgs, cx: &mut Context<'_>) -> u8 {
    let mut command = Cli::command();
    let mut buffer = Vec::new();
    clap_complete::generate(args.shell, &mut command, "loam", &mut buffer);
    cx.print(&String::from_utf8_lossy(&buffer));
    0
}
