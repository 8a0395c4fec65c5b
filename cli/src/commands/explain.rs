//! `loam explain CODE`: print a diagnostic code's explanation page.

use crate::Context;
use crate::args::ExplainArgs;
use loam_ir::diagnostics::codes;

/// Prints the page; exit 2 for an unknown code.
pub fn run(args: &ExplainArgs, cx: &mut Context<'_>) -> u8 {
    match codes::lookup(args.code.trim()) {
        Some(info) => {
            cx.print(info.explanation);
            0
        }
        None => {
            let known: Vec<&str> = codes::all().iter().map(|c| c.code.as_str()).collect();
            let hint = loam_compiler::suggest::closest(&args.code, known.iter().copied())
                .map(|near| format!("; did you mean `{near}`?"))
                .unwrap_or_default();
            cx.eprint(&format!(
                "error: unknown diagnostic code `{}`{hint}\n",
                args.code
            ));
            2
        }
    }
}
