//! Software requirements of a job (`software = ["CUDA>=12.0"]`) against the node groups it may
//! use: the stack must be one a device runs, and some allowed node group must have a version
//! that satisfies the comparison (versions compare numerically, part by part).

use super::check_job::{Allowed, did_you_mean};
use crate::catalogue::compare_versions;
use crate::catalogue::{NodeGroup, Stack};
use crate::check::ResourcesSpec;
use loam_ir::diagnostics::codes::catalogue as codes;
use loam_ir::diagnostics::{Diagnostic, Diagnostics};
use std::cmp::Ordering;

/// Every software stack a requirement may name.
const STACKS: &[Stack] = &[
    Stack::Cuda,
    Stack::Rocm,
    Stack::Cann,
    Stack::Dtk,
    Stack::Synapseai,
];

/// A software requirement such as `CUDA>=12.0`: stack, comparison, version.
struct Requirement<'a> {
    stack: &'a str,
    op: &'a str,
    version: &'a str,
}

fn parse_requirement(text: &str) -> Option<Requirement<'_>> {
    let at = text.find(['<', '>', '=', '!'])?;
    let (stack, rest) = text.split_at(at);
    let op_len = rest
        .find(|c: char| !matches!(c, '<' | '>' | '=' | '!'))
        .unwrap_or(rest.len());
    let (op, version) = rest.split_at(op_len);
    let (stack, version) = (stack.trim(), version.trim());
    let valid_op = matches!(op, ">=" | ">" | "=" | "==" | "<=" | "<" | "!=");
    (valid_op && !stack.is_empty() && crate::catalogue::parse_version(version).is_some())
        .then_some(Requirement { stack, op, version })
}

fn satisfies(installed: &str, op: &str, wanted: &str) -> bool {
    let Some(order) = compare_versions(installed, wanted) else {
        return false;
    };
    match op {
        ">=" => order != Ordering::Less,
        ">" => order == Ordering::Greater,
        "<=" => order != Ordering::Greater,
        "<" => order == Ordering::Less,
        "!=" => order != Ordering::Equal,
        _ => order == Ordering::Equal,
    }
}

pub(crate) fn check_software(
    resources: &ResourcesSpec,
    allowed: &Allowed<'_>,
    diags: &mut Diagnostics,
) {
    let stack_of = |g: &NodeGroup| {
        allowed
            .devices
            .iter()
            .find(|d| d.id.value == g.device.value)
            .map(|d| d.stack)
    };
    for text in &resources.software {
        let Some(req) = parse_requirement(&text.value) else {
            diags.push(
                Diagnostic::error(
                    codes::SOFTWARE_UNMET,
                    format!(
                        "expected a requirement such as \"CUDA>=12.0\", found \"{}\"",
                        text.value
                    ),
                    text.span,
                    "not a software requirement",
                )
                .with_help(
                    "write a stack name, a comparison (>=, >, =, <=, <, !=) and a dotted version",
                ),
            );
            continue;
        };
        let Some(stack) = STACKS
            .iter()
            .copied()
            .find(|s| s.as_str().eq_ignore_ascii_case(req.stack))
        else {
            diags.push(
                Diagnostic::error(
                    codes::SOFTWARE_UNMET,
                    format!("unknown software stack `{}`", req.stack),
                    text.span,
                    "no device runs a stack of this name",
                )
                .with_help(did_you_mean(
                    &req.stack.to_lowercase(),
                    STACKS.iter().map(|s| s.as_str()),
                    "stacks",
                )),
            );
            continue;
        };
        let running: Vec<&NodeGroup> = allowed
            .groups
            .iter()
            .map(|(_, g)| *g)
            .filter(|g| stack_of(g) == Some(stack))
            .collect();
        if running
            .iter()
            .any(|g| satisfies(&g.software_version.value, req.op, req.version))
        {
            continue;
        }
        let newest = running.iter().copied().max_by(|a, b| {
            compare_versions(&a.software_version.value, &b.software_version.value)
                .unwrap_or(Ordering::Equal)
                .then_with(|| b.name.value.cmp(&a.name.value))
        });
        let mut diagnostic = Diagnostic::error(
            codes::SOFTWARE_UNMET,
            format!("no allowed node group meets `{}`", text.value),
            text.span,
            match newest {
                Some(_) => format!(
                    "no allowed node group has {}{}{}",
                    req.stack, req.op, req.version
                ),
                None => format!("no allowed node group runs {}", req.stack),
            },
        );
        diagnostic = match newest {
            Some(g) => diagnostic
                .with_related(
                    g.software_version.span,
                    format!("the newest {} of the allowed node groups", req.stack),
                )
                .with_help(format!(
                    "relax the requirement (the allowed node groups have {} up to {}), or allow other devices or sites",
                    req.stack, g.software_version.value
                )),
            None => diagnostic.with_help(format!(
                "allow devices that run {} (its stack is `{}`), or drop the requirement",
                req.stack,
                stack.as_str()
            )),
        };
        diags.push(diagnostic);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_parse_and_compare() {
        let r = parse_requirement("CUDA >= 12.0").unwrap();
        assert_eq!((r.stack, r.op, r.version), ("CUDA", ">=", "12.0"));
        assert!(parse_requirement("CUDA").is_none());
        assert!(parse_requirement("CUDA=>12").is_none());
        assert!(parse_requirement(">=12").is_none());
        assert!(satisfies("12.4", ">=", "12.0"));
        assert!(!satisfies("12.4", ">=", "12.10"));
        assert!(satisfies("8.0", "==", "8"));
        assert!(satisfies("5.7", "<", "6"));
    }
}
