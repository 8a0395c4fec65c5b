//! The `loam` binary: runs the CLI library on the process's arguments and streams.

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = loam_cli::run(
        std::env::args_os(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
        &mut std::io::stdin().lock(),
    );
    ExitCode::from(code)
}
