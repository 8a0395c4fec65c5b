//! What every catalogue file shares: read as its kind's YAML with its id checked against the
//! file's name, identifiers the language refers to, and dotted versions.

use super::{Cx, stem};
use crate::catalogue::codes;
use crate::catalogue::raw::Loc;
use crate::catalogue::values::parse_version;
use crate::catalogue::yaml::schema_error;
use loam_ir::diagnostics::Diagnostic;

impl Cx<'_, '_> {
    /// The file read as a `kind` file (`device`, `pool`, `vendor`), its `id` checked against
    /// the file's name and as an identifier; `None`, with the schema error, when it does not
    /// parse as one.
    pub(super) fn read_as<T: serde::de::DeserializeOwned>(
        &mut self,
        kind: &str,
        id: impl Fn(&T) -> &Loc<String>,
    ) -> Option<T> {
        let raw: T = match serde_saphyr::from_str(self.source.text) {
            Ok(raw) => raw,
            Err(e) => {
                let d = schema_error(&self.source, &e, kind);
                self.push(d);
                return None;
            }
        };
        self.check_file_id(id(&raw), kind);
        self.identifier(id(&raw), &format!("{kind} id"));
        Some(raw)
    }

    /// Checks that a device, pool or vendor id matches its file name.
    fn check_file_id(&mut self, id: &Loc<String>, what: &str) {
        let stem = stem(self.source.path);
        if id.value != stem {
            let d = Diagnostic::error(
                codes::ID_MISMATCH,
                format!(
                    "{what} id `{}` does not match the file name `{stem}`",
                    id.value
                ),
                self.span(id),
                format!("expected `{stem}`"),
            )
            .with_help(format!(
                "rename the file to `{}.yaml` or the id to `{stem}`",
                id.value
            ));
            self.push(d);
        }
    }

    /// Checks that a name the language refers to is an identifier.
    pub(super) fn identifier(&mut self, name: &Loc<String>, what: &str) {
        let text = &name.value;
        let mut chars = text.chars();
        let ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            let d = Diagnostic::error(
                codes::INVALID_NAME,
                format!("expected an identifier for the {what}, found `{text}`"),
                self.span(name),
                "specs cannot refer to this name",
            )
            .with_help(
                "use letters, digits and `_`, starting with a letter, e.g. `guiyang` or `H100_SXM`",
            );
            self.push(d);
        }
    }

    /// Checks a dotted version such as `12.4` or `550.54.15`.
    pub(super) fn version(&mut self, version: &Loc<String>, field: &str) {
        if parse_version(&version.value).is_none() {
            let d = Diagnostic::error(
                codes::WRONG_TYPE,
                format!(
                    "expected a dotted version in `{field}`, found `{}`",
                    version.value
                ),
                self.span(version),
                "not a version",
            )
            .with_help("write the version as numbers separated by dots, in quotes, e.g. \"12.4\"");
            self.push(d);
        }
    }
}
