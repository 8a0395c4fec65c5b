//! One row of a calibration CSV read leniently, cell by cell: the heterogeneous-run and the
//! serving files both read their rows through it, so a cell is blank, a count or a number by
//! one rule.

use std::collections::BTreeMap;

use super::CalibrationError;

/// One CSV row: each named column's text, trimmed (absent columns read as blank).
#[derive(Debug, Clone, Default)]
pub(super) struct Cells {
    cells: BTreeMap<String, String>,
}

impl Cells {
    /// The row from its header and cells; cells beyond the header are ignored and missing ones
    /// are blank.
    pub(super) fn new(headers: &[String], cells: &csv::StringRecord) -> Cells {
        let cells = headers
            .iter()
            .enumerate()
            .map(|(i, h)| (h.clone(), cells.get(i).unwrap_or("").trim().to_string()))
            .collect();
        Cells { cells }
    }

    /// The column's text, `""` when blank or absent.
    pub(super) fn text(&self, column: &str) -> &str {
        self.cells.get(column).map_or("", String::as_str)
    }

    /// The column as a positive whole number; `None` when blank, zero or not a number.
    pub(super) fn count(&self, column: &str) -> Option<u32> {
        self.text(column).parse::<u32>().ok().filter(|n| *n > 0)
    }

    /// The column as a positive finite number at most 10^15; `None` when blank, not a number or
    /// larger (a `1e308` is a typo that made every statistic NaN).
    pub(super) fn number(&self, column: &str) -> Option<f64> {
        self.text(column)
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0 && *v <= 1e15)
    }
}

/// Every row of a calibration CSV with a non-blank cell, cell by cell: the heterogeneous
/// calibration and the error by regime read their files through it.
pub(super) fn read_rows(csv_text: &str) -> Result<Vec<Cells>, CalibrationError> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(csv_text.as_bytes());
    let headers: Vec<String> = reader
        .headers()
        .map_err(|e| super::csv_errors::describe(&e, &[]))?
        .iter()
        .map(str::to_string)
        .collect();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| super::csv_errors::describe(&e, &headers))?;
        if !record.iter().all(str::is_empty) {
            rows.push(Cells::new(&headers, &record));
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::Cells;

    fn row(header: &[&str], cells: &[&str]) -> Cells {
        let headers: Vec<String> = header.iter().map(|h| h.to_string()).collect();
        Cells::new(&headers, &csv::StringRecord::from(cells.to_vec()))
    }

    #[test]
    fn cells_read_by_column_blank_when_absent() {
        // Three headers, two cells and one extra: `c` is missing, the extra has no column.
        let r = row(&["a", "b", "c"], &[" 8 ", "x"]);
        assert_eq!(r.text("a"), "8");
        assert_eq!(r.count("a"), Some(8));
        assert_eq!(r.text("c"), "");
        assert_eq!(r.text("nowhere"), "");
        assert_eq!(row(&["a"], &["1", "2"]).text("a"), "1");
    }

    #[test]
    fn counts_and_numbers_are_positive_and_bounded() {
        let r = row(
            &["zero", "neg", "frac", "huge", "nan", "ok"],
            &["0", "-3", "2.5", "1e308", "NaN", "1e15"],
        );
        assert_eq!(r.count("zero"), None);
        assert_eq!(r.count("neg"), None);
        assert_eq!(r.count("frac"), None);
        assert_eq!(r.number("frac"), Some(2.5));
        assert_eq!(r.number("zero"), None);
        assert_eq!(r.number("neg"), None);
        // 1e308 is above the 10^15 bound; NaN is not finite; 10^15 itself reads.
        assert_eq!(r.number("huge"), None);
        assert_eq!(r.number("nan"), None);
        assert_eq!(r.number("ok"), Some(1e15));
    }
}
