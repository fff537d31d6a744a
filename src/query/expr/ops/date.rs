//! Date expression operators in UTC: $year, $month, $dayOfMonth, $hour, $minute, $second,
//! $millisecond, $dayOfWeek, $dayOfYear, $isoDayOfWeek, $week, $isoWeek, $isoWeekYear,
//! $dateToString (with the common `%` specifiers) and $toDate, plus the civil-calendar
//! arithmetic they share.
//!
//! Not for: time zones other than UTC (rejected), or $dateAdd/$dateDiff/$dateTrunc.

use crate::query::error::QueryError;
use crate::query::expr::ops::operator::type_name;
use crate::query::value::number::Number;
use bson::Bson;

/// Date operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateOperator {
    /// `$year`
    Year,
    /// `$month`
    Month,
    /// `$dayOfMonth`
    DayOfMonth,
    /// `$hour`
    Hour,
    /// `$minute`
    Minute,
    /// `$second`
    Second,
    /// `$millisecond`
    Millisecond,
    /// `$dayOfWeek` (1 = Sunday)
    DayOfWeek,
    /// `$dayOfYear`
    DayOfYear,
    /// `$isoDayOfWeek` (1 = Monday)
    IsoDayOfWeek,
    /// `$week` (0–53, weeks starting on Sunday)
    Week,
    /// `$isoWeek` (1–53, ISO 8601 weeks starting on Monday)
    IsoWeek,
    /// `$isoWeekYear` (the ISO 8601 week-numbering year, a long)
    IsoWeekYear,
    /// `$dateToString` with arguments (format, date, timezone, onNull)
    DateToString,
    /// `$toDate`
    ToDate,
    /// `$dateAdd` (startDate, unit, amount, timezone)
    DateAdd,
    /// `$dateSubtract` (startDate, unit, amount, timezone)
    DateSubtract,
    /// `$dateDiff` (startDate, endDate, unit, timezone, startOfWeek)
    DateDiff,
    /// `$dateTrunc` (date, unit, binSize, timezone, startOfWeek)
    DateTrunc,
    /// `$dateFromParts` (year, month, day, hour, minute, second, millisecond, timezone)
    DateFromParts,
    /// `$dateFromString` (dateString, format, timezone, onError, onNull)
    DateFromString,
    /// `$dateToParts` (date, timezone, iso8601)
    DateToParts,
}

/// Operators that only take named arguments, with the argument names in order.
pub fn named_operator(name: &str) -> Option<(DateOperator, &'static [&'static str])> {
    Some(match name {
        "$dateAdd" => (
            DateOperator::DateAdd,
            &["startDate", "unit", "amount", "timezone"],
        ),
        "$dateSubtract" => (
            DateOperator::DateSubtract,
            &["startDate", "unit", "amount", "timezone"],
        ),
        "$dateDiff" => (
            DateOperator::DateDiff,
            &["startDate", "endDate", "unit", "timezone", "startOfWeek"],
        ),
        "$dateTrunc" => (
            DateOperator::DateTrunc,
            &["date", "unit", "binSize", "timezone", "startOfWeek"],
        ),
        "$dateFromParts" => (
            DateOperator::DateFromParts,
            &[
                "year",
                "month",
                "day",
                "hour",
                "minute",
                "second",
                "millisecond",
                "timezone",
            ],
        ),
        "$dateFromString" => (
            DateOperator::DateFromString,
            &["dateString", "format", "timezone", "onError", "onNull"],
        ),
        "$dateToParts" => (DateOperator::DateToParts, &["date", "timezone", "iso8601"]),
        _ => return None,
    })
}

/// The named arguments of `$dateToString`, in argument order.
pub const DATE_TO_STRING_ARGS: [&str; 4] = ["format", "date", "timezone", "onNull"];

/// The operator for a name, with its arity.
pub fn lookup(name: &str) -> Option<(DateOperator, usize, Option<usize>)> {
    use DateOperator::*;
    Some(match name {
        "$year" => (Year, 1, Some(1)),
        "$month" => (Month, 1, Some(1)),
        "$dayOfMonth" => (DayOfMonth, 1, Some(1)),
        "$hour" => (Hour, 1, Some(1)),
        "$minute" => (Minute, 1, Some(1)),
        "$second" => (Second, 1, Some(1)),
        "$millisecond" => (Millisecond, 1, Some(1)),
        "$dayOfWeek" => (DayOfWeek, 1, Some(1)),
        "$dayOfYear" => (DayOfYear, 1, Some(1)),
        "$isoDayOfWeek" => (IsoDayOfWeek, 1, Some(1)),
        "$week" => (Week, 1, Some(1)),
        "$isoWeek" => (IsoWeek, 1, Some(1)),
        "$isoWeekYear" => (IsoWeekYear, 1, Some(1)),
        "$toDate" => (ToDate, 1, Some(1)),
        _ => return None,
    })
}

/// A moment split into calendar fields (UTC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CivilTime {
    /// Proleptic Gregorian year.
    pub year: i64,
    /// 1–12.
    pub month: u32,
    /// 1–31.
    pub day: u32,
    /// 0–23.
    pub hour: u32,
    /// 0–59.
    pub minute: u32,
    /// 0–59.
    pub second: u32,
    /// 0–999.
    pub millisecond: u32,
    /// Days since 1970-01-01.
    pub days_since_epoch: i64,
}

/// Days since 1970-01-01 to (year, month, day), Howard Hinnant's algorithm.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day) to days since 1970-01-01.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Splits milliseconds since the epoch into calendar fields.
pub fn civil_time(millis: i64) -> CivilTime {
    let days = millis.div_euclid(86_400_000);
    let in_day = millis.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    CivilTime {
        year,
        month,
        day,
        hour: (in_day / 3_600_000) as u32,
        minute: (in_day / 60_000 % 60) as u32,
        second: (in_day / 1000 % 60) as u32,
        millisecond: (in_day % 1000) as u32,
        days_since_epoch: days,
    }
}

impl CivilTime {
    /// 1 (Sunday) … 7 (Saturday).
    pub fn day_of_week(&self) -> u32 {
        // 1970-01-01 was a Thursday (5 in this numbering).
        ((self.days_since_epoch + 4).rem_euclid(7) + 1) as u32
    }

    /// 1 (Monday) … 7 (Sunday).
    pub fn iso_day_of_week(&self) -> u32 {
        ((self.days_since_epoch + 3).rem_euclid(7) + 1) as u32
    }

    /// 1 … 366.
    pub fn day_of_year(&self) -> u32 {
        (self.days_since_epoch - days_from_civil(self.year, 1, 1) + 1) as u32
    }

    /// Week of the year, weeks starting on Sunday, days before the first Sunday in week 0.
    pub fn week(&self) -> u32 {
        (self.day_of_year() + 6 - self.day_of_week() + 1) / 7
    }

    /// ISO 8601 week number and week-based year.
    pub fn iso_week(&self) -> (i64, u32) {
        let weekday = i64::from(self.iso_day_of_week());
        let thursday = self.days_since_epoch - weekday + 4;
        let (year, _, _) = civil_from_days(thursday);
        let week = (thursday - days_from_civil(year, 1, 1)) / 7 + 1;
        (year, week as u32)
    }
}

/// Milliseconds since the epoch of a date-like value (Date, Timestamp, ObjectId); `None`
/// for null or missing.
pub fn date_millis(value: Option<&Bson>, op: &str) -> Result<Option<i64>, QueryError> {
    match value {
        None | Some(Bson::Null) | Some(Bson::Undefined) => Ok(None),
        Some(Bson::DateTime(dt)) => Ok(Some(dt.timestamp_millis())),
        Some(Bson::Timestamp(ts)) => Ok(Some(i64::from(ts.time) * 1000)),
        Some(Bson::ObjectId(oid)) => Ok(Some(oid.timestamp().timestamp_millis())),
        Some(other) => Err(QueryError::location(
            16006,
            format!(
                "can't convert from BSON type {} to Date ({op})",
                type_name(Some(other))
            ),
        )),
    }
}

/// The `{date: …, timezone: …}` argument form is unpacked by the parser; only UTC is known.
pub fn check_timezone(tz: Option<&Bson>) -> Result<(), QueryError> {
    match tz {
        None | Some(Bson::Null) => Ok(()),
        Some(Bson::String(s))
            if matches!(
                s.as_str(),
                "UTC" | "GMT" | "Z" | "+00:00" | "+0000" | "+00" | "Etc/UTC"
            ) =>
        {
            Ok(())
        }
        Some(other) => Err(QueryError::not_supported(format!(
            "time zone {other} is not supported by docgate (UTC only)"
        ))),
    }
}

/// Applies a date operator to evaluated arguments.
pub fn apply(op: DateOperator, args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    if op == DateOperator::ToDate {
        return to_date(arg(0));
    }
    if op == DateOperator::DateToString {
        check_timezone(arg(2))?;
        let Some(millis) = date_millis(arg(1), "$dateToString")? else {
            return Ok(match args.get(3) {
                Some(Some(on_null)) => Some(on_null.clone()),
                _ => Some(Bson::Null),
            });
        };
        let format = match arg(0) {
            None => "%Y-%m-%dT%H:%M:%S.%LZ".to_string(),
            Some(Bson::String(f)) => f.clone(),
            Some(other) => {
                return Err(QueryError::location(
                    18533,
                    format!("$dateToString requires that 'format' be a string, found: {} with value {other}", type_name(Some(other))),
                ))
            }
        };
        return Ok(Some(Bson::String(format_date(&format, millis)?)));
    }
    check_timezone(arg(1))?;
    let Some(millis) = date_millis(arg(0), "date operator")? else {
        return Ok(Some(Bson::Null));
    };
    let t = civil_time(millis);
    let value = match op {
        DateOperator::Year => return Ok(Some(Bson::Int32(t.year as i32))),
        DateOperator::Month => t.month,
        DateOperator::DayOfMonth => t.day,
        DateOperator::Hour => t.hour,
        DateOperator::Minute => t.minute,
        DateOperator::Second => t.second,
        DateOperator::Millisecond => t.millisecond,
        DateOperator::DayOfWeek => t.day_of_week(),
        DateOperator::DayOfYear => t.day_of_year(),
        DateOperator::IsoDayOfWeek => t.iso_day_of_week(),
        DateOperator::Week => t.week(),
        DateOperator::IsoWeek => t.iso_week().1,
        // A long, as MongoDB's `TimeZone::isoYear` answers (the other parts are ints).
        DateOperator::IsoWeekYear => return Ok(Some(Bson::Int64(t.iso_week().0))),
        _ => 0,
    };
    Ok(Some(Bson::Int32(value as i32)))
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Renders `millis` with MongoDB's `$dateToString` format specifiers.
pub fn format_date(format: &str, millis: i64) -> Result<String, QueryError> {
    let t = civil_time(millis);
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(spec) = chars.next() else {
            return Err(QueryError::location(
                18535,
                "Unmatched '%' at end of format string",
            ));
        };
        let piece = match spec {
            'Y' => format!("{:04}", t.year),
            'm' => format!("{:02}", t.month),
            'd' => format!("{:02}", t.day),
            'H' => format!("{:02}", t.hour),
            'M' => format!("{:02}", t.minute),
            'S' => format!("{:02}", t.second),
            'L' => format!("{:03}", t.millisecond),
            'j' => format!("{:03}", t.day_of_year()),
            'w' => t.day_of_week().to_string(),
            'u' => t.iso_day_of_week().to_string(),
            'U' => format!("{:02}", t.week()),
            'V' => format!("{:02}", t.iso_week().1),
            'G' => format!("{:04}", t.iso_week().0),
            'z' => "+0000".to_string(),
            'Z' => "+000".to_string(),
            'b' => MONTHS[(t.month as usize).saturating_sub(1) % 12][..3].to_string(),
            'B' => MONTHS[(t.month as usize).saturating_sub(1) % 12].to_string(),
            '%' => "%".to_string(),
            other => {
                return Err(QueryError::location(
                    18536,
                    format!("Invalid format character '%{other}' in format string"),
                ))
            }
        };
        out.push_str(&piece);
    }
    Ok(out)
}

fn to_date(value: Option<&Bson>) -> Result<Option<Bson>, QueryError> {
    let millis = match value {
        None | Some(Bson::Null) | Some(Bson::Undefined) => return Ok(Some(Bson::Null)),
        Some(Bson::DateTime(dt)) => dt.timestamp_millis(),
        Some(Bson::String(s)) => bson::DateTime::parse_rfc3339_str(s.trim())
            .map(|d| d.timestamp_millis())
            .map_err(|_| QueryError {
                code: 241,
                code_name: "ConversionFailure",
                message: format!("Error parsing date string '{s}'"),
            })?,
        Some(v @ (Bson::Timestamp(_) | Bson::ObjectId(_))) => {
            date_millis(Some(v), "$toDate")?.unwrap_or(0)
        }
        Some(other) => match Number::from_bson(other) {
            Some(n) => {
                let f = n.to_f64();
                if !f.is_finite() {
                    return Err(QueryError {
                        code: 241,
                        code_name: "ConversionFailure",
                        message: format!("Conversion would overflow target type in $convert with no onError value: {other}"),
                    });
                }
                n.to_exact_i64().unwrap_or(f.trunc() as i64)
            }
            None => {
                return Err(QueryError {
                    code: 241,
                    code_name: "ConversionFailure",
                    message: format!(
                        "Unsupported conversion from {} to date in $convert with no onError value",
                        type_name(Some(other))
                    ),
                })
            }
        },
    };
    Ok(Some(Bson::DateTime(bson::DateTime::from_millis(millis))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(millis: i64) -> Option<Bson> {
        Some(Bson::DateTime(bson::DateTime::from_millis(millis)))
    }

    #[test]
    fn calendar_round_trip() {
        for days in [-800_000, -1, 0, 1, 59, 365, 11_016, 19_000, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn fields_and_format() {
        // 2014-01-01T08:15:39.736Z, the example of MongoDB's manual (a Wednesday).
        let t = 1_388_564_139_736;
        let get = |op| apply(op, &[date(t)]).unwrap().unwrap();
        assert_eq!(get(DateOperator::Year), Bson::Int32(2014));
        assert_eq!(get(DateOperator::Month), Bson::Int32(1));
        assert_eq!(get(DateOperator::DayOfMonth), Bson::Int32(1));
        assert_eq!(get(DateOperator::Hour), Bson::Int32(8));
        assert_eq!(get(DateOperator::Minute), Bson::Int32(15));
        assert_eq!(get(DateOperator::Second), Bson::Int32(39));
        assert_eq!(get(DateOperator::Millisecond), Bson::Int32(736));
        assert_eq!(get(DateOperator::DayOfWeek), Bson::Int32(4));
        assert_eq!(get(DateOperator::DayOfYear), Bson::Int32(1));
        assert_eq!(get(DateOperator::Week), Bson::Int32(0));
        assert_eq!(
            format_date("%Y-%m-%dT%H:%M:%S.%LZ", t).unwrap(),
            "2014-01-01T08:15:39.736Z"
        );
        assert_eq!(
            format_date("%j %w %u %V %G %%", t).unwrap(),
            "001 4 3 01 2014 %"
        );
        assert!(format_date("%Q", t).is_err());
        assert_eq!(
            apply(DateOperator::Year, &[Some(Bson::Null)]).unwrap(),
            Some(Bson::Null)
        );
        assert_eq!(
            apply(
                DateOperator::ToDate,
                &[Some(Bson::String("2014-01-01T08:15:39.736Z".into()))]
            )
            .unwrap(),
            date(t)
        );
        assert_eq!(
            apply(DateOperator::ToDate, &[Some(Bson::Int64(t))]).unwrap(),
            date(t)
        );
    }
}
