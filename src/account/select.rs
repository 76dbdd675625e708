//! Which requests an account view counts and how it groups them in time: `--since` / `--until`
//! (civil days, inclusive, in `--timezone`), `--project`, and the period a request falls in
//! (day, week, month, 5-hour block), all in one IANA time zone.

use jiff::civil::{Date, Weekday};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// A flag value `account` cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// `--since` / `--until` is not a date.
    #[error("{flag} `{value}` is not a date; use YYYY-MM-DD or YYYYMMDD, e.g. {flag} 2025-10-01")]
    Date {
        /// The flag, `--since` or `--until`.
        flag: &'static str,
        /// What was given.
        value: String,
    },
    /// `--timezone` names no zone of the bundled tz database.
    #[error("--timezone `{0}` is not an IANA time zone; e.g. --timezone UTC, --timezone America/New_York, --timezone Asia/Tokyo")]
    Zone(String),
    /// `--since` is after `--until`.
    #[error("--since {since} is after --until {until}")]
    Order {
        /// The first day asked for.
        since: String,
        /// The last day asked for.
        until: String,
    },
    /// `--start-of-week` is not a day name.
    #[error("--start-of-week `{0}` is not a day; use sunday or monday (or any day name)")]
    Weekday(String),
}

/// What an account view counts: a window of civil days and one project, in a time zone.
#[derive(Debug, Clone)]
pub struct Selection {
    /// The zone days, weeks, months and block labels are told in.
    pub tz: TimeZone,
    /// The zone's name as given (`UTC`, `Asia/Tokyo`), for headers.
    pub tz_name: String,
    /// First day counted (inclusive), in `tz`.
    pub since: Option<Date>,
    /// Last day counted (inclusive), in `tz`.
    pub until: Option<Date>,
    /// Only sessions of this project (its label as the views print it).
    pub project: Option<String>,
    /// The first day of a week for the weekly view.
    pub week_start: Weekday,
}

impl Default for Selection {
    fn default() -> Self {
        Selection {
            tz: TimeZone::UTC,
            tz_name: "UTC".into(),
            since: None,
            until: None,
            project: None,
            week_start: Weekday::Sunday,
        }
    }
}

/// `YYYY-MM-DD` or `YYYYMMDD` (ccusage accepts both).
pub fn parse_date(flag: &'static str, value: &str) -> Result<Date, SelectError> {
    let v = value.trim();
    let err = || SelectError::Date {
        flag,
        value: value.to_string(),
    };
    if v.len() == 8 && v.bytes().all(|b| b.is_ascii_digit()) {
        return Date::strptime("%Y%m%d", v).map_err(|_| err());
    }
    v.parse::<Date>().map_err(|_| err())
}

/// An IANA zone from the bundled database.
pub fn parse_zone(name: &str) -> Result<TimeZone, SelectError> {
    TimeZone::get(name.trim()).map_err(|_| SelectError::Zone(name.to_string()))
}

/// `sunday`, `monday`, ... (first three letters suffice).
pub fn parse_weekday(name: &str) -> Result<Weekday, SelectError> {
    let n = name.trim().to_ascii_lowercase();
    let days = [
        ("sunday", Weekday::Sunday),
        ("monday", Weekday::Monday),
        ("tuesday", Weekday::Tuesday),
        ("wednesday", Weekday::Wednesday),
        ("thursday", Weekday::Thursday),
        ("friday", Weekday::Friday),
        ("saturday", Weekday::Saturday),
    ];
    days.iter()
        .find(|(d, _)| n.len() >= 3 && d.starts_with(&n))
        .map(|(_, w)| *w)
        .ok_or(SelectError::Weekday(name.to_string()))
}

impl Selection {
    /// A selection from the flags' values; the system zone when `tz` is `None` (as ccusage).
    pub fn from_flags(
        tz: Option<&str>,
        since: Option<&str>,
        until: Option<&str>,
        project: Option<&str>,
        week_start: &str,
    ) -> Result<Selection, SelectError> {
        let (tz, tz_name) = match tz {
            Some(name) => (parse_zone(name)?, name.trim().to_string()),
            None => {
                let z = TimeZone::system();
                let name = z.iana_name().unwrap_or("UTC").to_string();
                (z, name)
            }
        };
        let since = since.map(|s| parse_date("--since", s)).transpose()?;
        let until = until.map(|s| parse_date("--until", s)).transpose()?;
        if let (Some(a), Some(b)) = (since, until) {
            if a > b {
                return Err(SelectError::Order {
                    since: a.to_string(),
                    until: b.to_string(),
                });
            }
        }
        Ok(Selection {
            tz,
            tz_name,
            since,
            until,
            project: project.map(str::to_string),
            week_start: parse_weekday(week_start)?,
        })
    }

    fn zoned(&self, epoch_ms: u64) -> jiff::ZonedDateTime {
        let ts = Timestamp::from_millisecond(epoch_ms as i64).unwrap_or(Timestamp::UNIX_EPOCH);
        ts.to_zoned_datetime(self.tz.clone())
    }

    /// The civil day of an instant in the selection's zone.
    pub fn date(&self, epoch_ms: u64) -> Date {
        self.zoned(epoch_ms).date()
    }

    /// Whether a request sent at `epoch_ms` falls within `--since` .. `--until`.
    pub fn in_window(&self, epoch_ms: u64) -> bool {
        let d = self.date(epoch_ms);
        self.since.is_none_or(|s| d >= s) && self.until.is_none_or(|u| d <= u)
    }

    /// Whether a session of `project` is counted.
    pub fn in_project(&self, project: &str) -> bool {
        self.project.as_deref().is_none_or(|p| p == project)
    }

    /// `YYYY-MM-DD`.
    pub fn day_key(&self, epoch_ms: u64) -> String {
        self.date(epoch_ms).to_string()
    }

    /// The first day (`YYYY-MM-DD`) of the week the instant falls in.
    pub fn week_key(&self, epoch_ms: u64) -> String {
        let d = self.date(epoch_ms);
        let back = (i64::from(d.weekday().to_sunday_zero_offset())
            - i64::from(self.week_start.to_sunday_zero_offset()))
        .rem_euclid(7);
        d.checked_sub(back.days()).unwrap_or(d).to_string()
    }

    /// `YYYY-MM`.
    pub fn month_key(&self, epoch_ms: u64) -> String {
        self.date(epoch_ms).strftime("%Y-%m").to_string()
    }

    /// `YYYY-MM-DD HH:MM` in the zone (block starts, last activity).
    pub fn minute_label(&self, epoch_ms: u64) -> String {
        self.zoned(epoch_ms).strftime("%Y-%m-%d %H:%M").to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_parse_in_both_forms_and_name_the_flag() {
        let d = parse_date("--since", "20251001").unwrap();
        assert_eq!(d, parse_date("--since", "2025-10-01").unwrap());
        let e = parse_date("--until", "2025-13-01").unwrap_err().to_string();
        assert!(
            e.contains("--until `2025-13-01`") && e.contains("YYYYMMDD"),
            "{e}"
        );
        assert!(parse_zone("Mars/Olympus").is_err());
        assert_eq!(parse_weekday("Mon").unwrap(), Weekday::Monday);
    }

    #[test]
    fn days_weeks_and_months_follow_the_zone() {
        // 2025-10-01T02:30:00Z = 1_759_285_800_000 ms. In New York (EDT, UTC−4) it is
        // 2025-09-30 22:30: the previous day, the previous month; 2025-09-30 is a Tuesday, so its
        // week (Sunday start) began 2025-09-28, (Monday start) 2025-09-29.
        let t = 1_759_285_800_000;
        let ny =
            Selection::from_flags(Some("America/New_York"), None, None, None, "sunday").unwrap();
        assert_eq!(ny.day_key(t), "2025-09-30");
        assert_eq!(ny.month_key(t), "2025-09");
        assert_eq!(ny.week_key(t), "2025-09-28");
        let utc = Selection::from_flags(Some("UTC"), None, None, None, "monday").unwrap();
        assert_eq!(utc.day_key(t), "2025-10-01");
        assert_eq!(utc.month_key(t), "2025-10");
        // 2025-10-01 is a Wednesday: its Monday-start week began 2025-09-29.
        assert_eq!(utc.week_key(t), "2025-09-29");
        let win = Selection::from_flags(
            Some("America/New_York"),
            Some("2025-10-01"),
            Some("20251001"),
            None,
            "sunday",
        )
        .unwrap();
        assert!(!win.in_window(t), "22:30 on Sept 30 in New York");
        assert!(
            win.in_window(t + 2 * 3_600_000),
            "00:30 on Oct 1 in New York"
        );
    }
}
