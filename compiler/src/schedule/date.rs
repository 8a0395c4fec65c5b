//! Calendar dates and UTC date-times as the schedule reads them (`2026-03-01`,
//! `2026-03-01T08:30`, `2026-03-01T08:30:00Z`): parsed without a clock or a time-zone database,
//! as minutes since 1970-01-01 00:00 UTC.

/// Minutes since 1970-01-01 00:00 UTC.
pub type Minutes = i64;

/// Days from 1970-01-01 to `year-month-day` in the proleptic Gregorian calendar (Howard
/// Hinnant's `days_from_civil`, "chrono-Compatible Low-Level Date Algorithms", 2013).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `year-month-day` of a day count from 1970-01-01 (Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The number in `text` of exactly `digits` ASCII digits.
fn number(text: &str, digits: usize) -> Option<i64> {
    (text.len() == digits && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// A date `YYYY-MM-DD` as days since 1970-01-01, or what is wrong with it.
pub fn parse_date(text: &str) -> Result<i64, String> {
    let mut parts = text.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("`{text}` is not a date: write YYYY-MM-DD"));
    };
    let (Some(year), Some(month), Some(day)) = (number(y, 4), number(m, 2), number(d, 2)) else {
        return Err(format!("`{text}` is not a date: write YYYY-MM-DD"));
    };
    if !(1..=12).contains(&month) {
        return Err(format!("`{text}`: month {month} is not 1–12"));
    }
    if !(1..=days_in_month(year, month)).contains(&day) {
        return Err(format!(
            "`{text}`: {year}-{month:02} has {} days",
            days_in_month(year, month)
        ));
    }
    Ok(days_from_civil(year, month, day))
}

/// A date or a UTC date-time (`YYYY-MM-DD`, `YYYY-MM-DDTHH:MM`, `…:SS`, optional `Z`) as
/// minutes since 1970-01-01 00:00 UTC (seconds are dropped), or what is wrong with it.
pub fn parse_date_time(text: &str) -> Result<Minutes, String> {
    let (date, time) = match text.split_once('T') {
        Some((d, t)) => (d, Some(t.strip_suffix('Z').unwrap_or(t))),
        None => (text, None),
    };
    let days = parse_date(date)?;
    let minutes = match time {
        None => 0,
        Some(t) => {
            let fields: Vec<&str> = t.split(':').collect();
            let hm = match fields.as_slice() {
                [h, m] | [h, m, _] => number(h, 2).zip(number(m, 2)),
                _ => None,
            };
            let seconds_ok = match fields.as_slice() {
                [_, _, s] => number(s, 2).is_some_and(|s| s < 60),
                _ => true,
            };
            match hm {
                Some((h, m)) if h < 24 && m < 60 && seconds_ok => h * 60 + m,
                _ => {
                    return Err(format!(
                        "`{text}` is not a UTC date-time: write YYYY-MM-DDTHH:MM (UTC)"
                    ));
                }
            }
        }
    };
    Ok(days * 1440 + minutes)
}

/// Days since 1970-01-01 as `YYYY-MM-DD`.
pub fn format_date(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_and_bad_ones_are_named() {
        // 2026-01-05 is 56 years and 4 days after 1970-01-01: 56 × 365 + 14 leap days (1972 …
        // 2024) + 4 = 20,458.
        assert_eq!(parse_date("2026-01-05"), Ok(20_458));
        assert_eq!(format_date(20_458), "2026-01-05");
        assert_eq!(
            parse_date("2024-02-29").map(format_date).as_deref(),
            Ok("2024-02-29")
        );
        assert!(
            parse_date("2026-02-29")
                .unwrap_err()
                .contains("has 28 days")
        );
        assert!(parse_date("2026-13-01").unwrap_err().contains("month 13"));
        assert!(parse_date("26-1-5").is_err());
        // 08:30 is 510 minutes into the day.
        assert_eq!(
            parse_date_time("2026-01-05T08:30Z"),
            Ok(20_458 * 1440 + 510)
        );
        assert_eq!(
            parse_date_time("2026-01-05T08:30:59"),
            Ok(20_458 * 1440 + 510)
        );
        assert!(parse_date_time("2026-01-05T24:00").is_err());
        assert!(parse_date_time("2026-01-05 08:30").is_err());
    }
}
