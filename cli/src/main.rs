//! The `loam` binary: runs the CLI library on the process's arguments and streams.

use std::process::ExitCode;

fn main() -> ExitCode {
    // Unlocked handles: `loam lsp` reads and writes the streams from threads of its own, which
    // a lock held here for the whole run would block.
    let code = loam_cli::run(
        std::env::args_os(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
        &mut std::io::stdin(),
    );
    ExitCode::from(code)
}
