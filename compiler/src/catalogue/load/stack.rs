//! Reading a pool's `stack`: what its nodes' software does that changes a plan's time, as
//! defaults for the specs planned on the pool.

use super::Cx;
use crate::catalogue::codes;
use crate::catalogue::model::PoolStack;
use crate::catalogue::raw;
use loam_ir::diagnostics::Diagnostic;
use loam_ir::types::ExpertDispatch;

impl Cx<'_, '_> {
    /// The pool's stack defaults (none when the file has no `stack`), or `None` with a
    /// diagnostic when a value is not one loam knows.
    pub(super) fn pool_stack(&mut self, raw: Option<&raw::PoolStack>) -> Option<PoolStack> {
        let Some(raw) = raw else {
            return Some(PoolStack::default());
        };
        let mut stack = PoolStack::default();
        if let Some(word) = &raw.expert_dispatch {
            match ExpertDispatch::from_keyword(&word.value) {
                Some(dispatch) => stack.expert_dispatch = Some(dispatch),
                None => {
                    let d = Diagnostic::error(
                        codes::WRONG_TYPE,
                        format!(
                            "unknown expert dispatch `{}`, expected one of {}",
                            word.value.escape_debug(),
                            ExpertDispatch::keywords().join(", ")
                        ),
                        self.span(word),
                        "not an expert dispatch",
                    )
                    .with_help(
                        "`deduplicated` for DeepEP or HybridEP (one copy of a token per node), \
                         `all_to_all` for Megatron-Core's all-to-all",
                    );
                    self.push(d);
                    return None;
                }
            }
        }
        Some(stack)
    }
}
