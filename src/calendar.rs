//! Calendar dates from Unix time, in UTC, for what the tool prints and records (a
//! snapshot's date, a node lock's start). No time zones, no parsing.

/// Days since 1970-01-01 → (year, month, day), Howard Hinnant's algorithm, e.g.
/// `20_789` → `(2026, 12, 2)`.
/// See: https://howardhinnant.github.io/date_algorithms.html#civil_from_days
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM:SS UTC`, e.g. `2026-12-02 19:45:01 UTC`.
pub fn utc(seconds: u64) -> String {
    let (year, month, day) = civil_from_days(i64::try_from(seconds / 86_400).unwrap_or_default());
    let rest = seconds % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

/// Today's date in UTC, e.g. `2026-12-02`.
pub fn today() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs() / 86_400);
    let (year, month, day) = civil_from_days(i64::try_from(days).unwrap_or(0));
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_789), (2026, 12, 2));
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_796_240_701), "2026-12-02 19:45:01 UTC");
    }
}
