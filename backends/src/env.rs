//! The one template environment: every registered backend's templates and the common ones,
//! embedded at build time, strict about undefined values, with the escaping filters registered.
//!
//! Its formatter refuses to print a string that no escaping filter marked safe, so a template
//! cannot put a spec's string into a manifest unescaped by mistake. Every backend renders a job's
//! template through [`render_one`], a failure being L4009 ([`template_error`]).

use crate::escape::{json_ascii, shell_quote, yaml_quote};
use crate::job::JobContext;
use loam_ir::diagnostics::{Diagnostic, codes};
use minijinja::value::Value;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, UndefinedBehavior};
use std::sync::OnceLock;

/// The templates no one backend owns: `(name, source)`, names `common/<file>.j2`. Each backend
/// lists its own ([`crate::Backend::templates`]).
const COMMON: &[(&str, &str)] = &[(
    "common/window.sh.j2",
    include_str!("../templates/common/window.sh.j2"),
)];

/// The environment with every template loaded, built once per process and shared: every
/// job's manifests render from it, and building it (parsing every template) was most of
/// rendering a job (about 8 % of a warm `loam diff` of 500 specs). Fails only if a template
/// does not parse, which the crate's tests rule out.
pub fn environment() -> Result<&'static Environment<'static>, Error> {
    static SHARED: OnceLock<Environment<'static>> = OnceLock::new();
    if let Some(env) = SHARED.get() {
        return Ok(env);
    }
    let env = build()?;
    Ok(SHARED.get_or_init(|| env))
}

/// A new environment with every template loaded (see [`environment`]).
fn build() -> Result<Environment<'static>, Error> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_keep_trailing_newline(true);
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_formatter(|out, _state, value| {
        if value.as_str().is_some() && !value.is_safe() {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("string {value:?} printed without an escaping filter (yaml, sh, json)"),
            ));
        }
        write!(out, "{value}").map_err(Error::from)
    });
    env.add_filter("yaml", yaml);
    env.add_filter("sh", sh);
    env.add_filter("json_ascii", |s: String| {
        Value::from_safe_string(json_ascii(&s))
    });
    env.add_filter("indent_block", indent_block);
    env.add_filter("word", word);
    let backends = crate::Target::ALL.iter().map(|t| t.backend().templates());
    for (name, source) in std::iter::once(COMMON).chain(backends).flatten() {
        env.add_template(name, source)?;
    }
    Ok(env)
}

/// Renders `template` with `ctx`, turning a template error into L4009.
pub(crate) fn render_one(
    env: &minijinja::Environment<'_>,
    job: &JobContext<'_>,
    template: &str,
    ctx: Value,
) -> Result<String, Vec<Diagnostic>> {
    env.get_template(template)
        .and_then(|t| t.render(ctx))
        .map_err(|e| vec![template_error(&job.job, &e)])
}

/// L4009: a template failed, which is a bug in loam.
pub(crate) fn template_error(job: &str, e: &minijinja::Error) -> Diagnostic {
    crate::job::error(
        codes::emit::INTERNAL_ERROR,
        format!("internal error rendering job `{job}`: {e}"),
        "report this as a bug in loam, with the plan JSON",
    )
}

/// `yaml`: strings become double-quoted YAML scalars; numbers and booleans print as they are.
fn yaml(value: Value) -> Result<Value, Error> {
    match value.as_str() {
        Some(s) => Ok(Value::from_safe_string(yaml_quote(s))),
        None if value.is_number() || value.kind() == minijinja::value::ValueKind::Bool => {
            Ok(Value::from_safe_string(value.to_string()))
        }
        None => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("yaml filter applied to {value:?}"),
        )),
    }
}

/// `sh`: one single-quoted shell word.
fn sh(value: Value) -> Result<Value, Error> {
    match value.as_str() {
        Some(s) => Ok(Value::from_safe_string(shell_quote(s))),
        None if value.is_number() => Ok(Value::from_safe_string(value.to_string())),
        None => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("sh filter applied to {value:?}"),
        )),
    }
}

/// `word`: a string already known to be plain (a DNS label, a partition name, a number with
/// units): printed as it is, or an error when it holds anything a shell or YAML would read
/// specially.
fn word(value: Value) -> Result<Value, Error> {
    match value.as_str() {
        Some(s)
            if !s.is_empty()
                && s.bytes().all(|b| {
                    b.is_ascii_alphanumeric()
                        || matches!(b, b'.' | b'_' | b'-' | b'/' | b':' | b'@' | b',' | b'=')
                }) =>
        {
            Ok(Value::from_safe_string(s.to_string()))
        }
        None if value.is_number() => Ok(Value::from_safe_string(value.to_string())),
        _ => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("word filter applied to {value:?}, which is not a plain word"),
        )),
    }
}

/// `indent_block(n)`: every line after the first indented by `n` spaces (for YAML block
/// scalars). The text must already be safe (e.g. from `json_ascii`).
fn indent_block(value: Value, n: usize) -> Result<Value, Error> {
    if !value.is_safe() {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "indent_block needs escaped text",
        ));
    }
    let text = value.to_string();
    let pad = " ".repeat(n);
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.lines().enumerate() {
        if i > 0 {
            out.push('\n');
            out.push_str(&pad);
        }
        out.push_str(line);
    }
    Ok(Value::from_safe_string(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders `source` in the real environment (its filters and formatter) with `x = "x"`.
    fn render(source: &str) -> Result<String, Error> {
        let mut env = build()?;
        env.add_template_owned("t", source.to_string())?;
        env.get_template("t")?
            .render(minijinja::context! { x => "x", n => 3 })
    }

    #[test]
    fn every_template_parses() {
        assert!(environment().is_ok());
    }

    #[test]
    fn strings_need_a_filter_and_undefined_values_fail() {
        assert_eq!(
            render("{{ x|yaml }} {{ x|sh }} {{ n }} {{ x|word }}").unwrap(),
            "\"x\" 'x' 3 x"
        );
        assert!(render("{{ y|yaml }}").is_err());
        assert!(render("{{ (x ~ ' y')|word }}").is_err());
        let e = render("{{ x }}").unwrap_err();
        let d = crate::env::template_error("demo", &e);
        insta::assert_snapshot!(
            "template_error",
            format!(
                "error[{}]: {}\n  = help: {}",
                d.code,
                d.message,
                d.help.unwrap_or_default()
            )
        );
    }
}
