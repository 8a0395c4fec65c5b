//! The `loam` binary, built inside the test crate so that tests can run it as a process (in a
//! folder of their own, from a shell, as the README's tour does): Cargo hands integration tests
//! the paths of their own package's binaries only. It is `cli/src/main.rs` exactly.

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
