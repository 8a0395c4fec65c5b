//! What a calibration CSV that cannot be read gets wrong, in words: the line, the column by name
//! when there is one, and never the `csv` crate's Debug text (`UnequalLengths { pos: … }`).

use super::{CalibrationError, bad};

/// The error of reading a record or deserialising a row, with `headers` the file's header.
pub(super) fn describe(error: &csv::Error, headers: &[String]) -> CalibrationError {
    let line = error.position().map_or(0, csv::Position::line);
    match error.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => CalibrationError::BadLine {
            line,
            message: format!(
                "{len} fields where the header has {expected_len} (an unbalanced quote, a \
                 missing or an extra comma)"
            ),
        },
        csv::ErrorKind::Utf8 { .. } => CalibrationError::BadLine {
            line,
            message: "the line is not UTF-8 text".to_string(),
        },
        csv::ErrorKind::Deserialize { err, .. } => {
            let message = err.kind().to_string();
            match err.field().and_then(|f| headers.get(f as usize)) {
                Some(column) => bad(line, column, message),
                None => {
                    header_problem(&message).unwrap_or(CalibrationError::BadLine { line, message })
                }
            }
        }
        _ => CalibrationError::BadLine {
            line,
            message: error.to_string(),
        },
    }
}

/// A deserialisation error that is about the header, not the row: a column that is missing or
/// written twice. Reported on line 1, where the header is, naming the column.
fn header_problem(message: &str) -> Option<CalibrationError> {
    let named = |prefix: &str| {
        message
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix('`'))
            .map(str::to_string)
    };
    if let Some(column) = named("missing field `") {
        return Some(bad(1, &column, "the header has no such column"));
    }
    named("duplicate field `").map(|column| bad(1, &column, "the header names this column twice"))
}
