//! Date arithmetic expressions in UTC: `$dateAdd`, `$dateSubtract`, `$dateDiff` and
//! `$dateTrunc` with the units year, quarter, month, week, day, hour, minute, second and
//! millisecond (months clamp to the end of the month, differences count unit boundaries
//! crossed, like MongoDB).
//!
//! Not for: time zones other than UTC (rejected), or calendar field extraction
//! (`expr/ops/date.rs`).

use crate::query::error::QueryError;
use crate::query::expr::ops::date::{
    check_timezone, civil_time, date_millis, days_from_civil, DateOperator,
};
use crate::query::expr::ops::operator::type_name;
use crate::query::value::number::Number;
use bson::Bson;

const MS_PER_DAY: i64 = 86_400_000;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Year,
    Quarter,
    Month,
    Week,
    Day,
    Hour,
    Minute,
    Second,
    Millisecond,
}

fn unit(v: Option<&Bson>, op: &str) -> Result<Unit, QueryError> {
    let Some(Bson::String(s)) = v else {
        return Err(QueryError::location(
            5439013,
            format!(
                "{op} requires 'unit' to be a string, but got {}",
                type_name(v)
            ),
        ));
    };
    Ok(match s.as_str() {
        "year" => Unit::Year,
        "quarter" => Unit::Quarter,
        "month" => Unit::Month,
        "week" => Unit::Week,
        "day" => Unit::Day,
        "hour" => Unit::Hour,
        "minute" => Unit::Minute,
        "second" => Unit::Second,
        "millisecond" => Unit::Millisecond,
        other => {
            return Err(QueryError::failed_to_parse(format!(
                "unknown time unit value: {other}"
            )))
        }
    })
}

fn fixed_length(u: Unit) -> Option<i64> {
    match u {
        Unit::Week => Some(7 * MS_PER_DAY),
        Unit::Day => Some(MS_PER_DAY),
        Unit::Hour => Some(3_600_000),
        Unit::Minute => Some(60_000),
        Unit::Second => Some(1000),
        Unit::Millisecond => Some(1),
        _ => None,
    }
}

fn months_per(u: Unit) -> i64 {
    match u {
        Unit::Year => 12,
        Unit::Quarter => 3,
        _ => 1,
    }
}

fn days_in_month(year: i64, month: u32) -> u32 {
    let (next_year, next_month) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    (days_from_civil(next_year, next_month, 1) - days_from_civil(year, month, 1)) as u32
}

/// `millis` moved by whole months, the day clamped to the target month's length; `None`
/// beyond the representable dates.
fn add_months(millis: i64, months: i64) -> Option<i64> {
    let t = civil_time(millis);
    let total = i128::from(t.year) * 12 + i128::from(t.month) - 1 + i128::from(months);
    let year = i64::try_from(total.div_euclid(12)).ok()?;
    if year.abs() > 300_000_000 {
        return None;
    }
    let month = (total.rem_euclid(12) + 1) as u32;
    let day = t.day.min(days_in_month(year, month));
    days_from_civil(year, month, day)
        .checked_mul(MS_PER_DAY)?
        .checked_add(millis.rem_euclid(MS_PER_DAY))
}

fn week_start(v: Option<&Bson>) -> Result<i64, QueryError> {
    // Days after Sunday that weeks start on.
    Ok(match v {
        None | Some(Bson::Null) => 0,
        Some(Bson::String(s)) => match s.to_lowercase().as_str() {
            "sunday" | "sun" => 0,
            "monday" | "mon" => 1,
            "tuesday" | "tue" => 2,
            "wednesday" | "wed" => 3,
            "thursday" | "thu" => 4,
            "friday" | "fri" => 5,
            "saturday" | "sat" => 6,
            other => {
                return Err(QueryError::failed_to_parse(format!(
                    "unknown startOfWeek value: {other}"
                )))
            }
        },
        Some(other) => {
            return Err(QueryError::failed_to_parse(format!(
                "startOfWeek must be a string, found {}",
                type_name(Some(other))
            )))
        }
    })
}

/// Start (in ms) of the `bin`-unit period containing `millis`; like MongoDB, bins are
/// counted from 2000-01-01 (for weeks, from the first `first_weekday` on or after it).
fn period_start(millis: i64, u: Unit, bin: i64, first_weekday: i64) -> i64 {
    const REFERENCE_DAY: i64 = 10_957; // 2000-01-01
    match u {
        Unit::Year | Unit::Quarter | Unit::Month => {
            let t = civil_time(millis);
            let index = (t.year - 2000) * 12 + i64::from(t.month) - 1;
            let step = months_per(u).saturating_mul(bin);
            let start = index - index.rem_euclid(step) + 2000 * 12;
            days_from_civil(start.div_euclid(12), (start.rem_euclid(12) + 1) as u32, 1)
                .saturating_mul(MS_PER_DAY)
        }
        Unit::Week => {
            // Day 3 since the epoch (1970-01-04) was a Sunday.
            let weekday = |day: i64| (day - 3).rem_euclid(7);
            let reference = REFERENCE_DAY + (first_weekday - weekday(REFERENCE_DAY)).rem_euclid(7);
            let days = millis.div_euclid(MS_PER_DAY);
            let week_len = 7i64.saturating_mul(bin);
            (days - (days - reference).rem_euclid(week_len)).saturating_mul(MS_PER_DAY)
        }
        other => {
            let length = fixed_length(other).unwrap_or(1).saturating_mul(bin);
            let reference = i128::from(REFERENCE_DAY * MS_PER_DAY);
            let offset = (i128::from(millis) - reference).rem_euclid(i128::from(length));
            (i128::from(millis) - offset) as i64
        }
    }
}

fn integer(v: Option<&Bson>, what: &str, op: &str) -> Result<i64, QueryError> {
    v.and_then(Number::from_bson)
        .and_then(Number::to_exact_i64)
        .ok_or_else(|| {
            QueryError::location(
                5166405,
                format!("{op} expects integer {what}, found {}", type_name(v)),
            )
        })
}

/// Whether [`apply`] evaluates `op` (the date arithmetic, parsing and parts operators);
/// [`super::date::apply`] evaluates the others.
pub fn evaluates(op: DateOperator) -> bool {
    matches!(
        op,
        DateOperator::DateAdd
            | DateOperator::DateSubtract
            | DateOperator::DateDiff
            | DateOperator::DateTrunc
            | DateOperator::DateFromParts
            | DateOperator::DateFromString
            | DateOperator::DateToParts
    )
}

/// Applies a date arithmetic operator to its evaluated named arguments.
pub fn apply(op: DateOperator, args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    let null = Ok(Some(Bson::Null));
    let date = |millis: i64| Ok(Some(Bson::DateTime(bson::DateTime::from_millis(millis))));
    match op {
        DateOperator::DateAdd | DateOperator::DateSubtract => {
            let name = if op == DateOperator::DateAdd {
                "$dateAdd"
            } else {
                "$dateSubtract"
            };
            check_timezone(arg(3))?;
            if arg(1).is_none() || matches!(arg(2), None | Some(Bson::Null)) {
                return null;
            }
            let Some(start) = date_millis(arg(0), name)? else {
                return null;
            };
            let u = unit(arg(1), name)?;
            let mut amount = integer(arg(2), "amount", name)?;
            if op == DateOperator::DateSubtract {
                amount = amount.saturating_neg();
            }
            match fixed_length(u) {
                Some(length) => date(start.saturating_add(amount.saturating_mul(length))),
                None => match add_months(start, amount.saturating_mul(months_per(u))) {
                    Some(moved) => date(moved),
                    None => Err(QueryError::location(5166406, format!("{name} overflowed"))),
                },
            }
        }
        DateOperator::DateDiff => date_diff(args),
        DateOperator::DateFromParts => date_from_parts(args),
        DateOperator::DateFromString => {
            check_timezone(arg(2))?;
            let on_error = args.get(3).cloned().flatten();
            let text = match arg(0) {
                None | Some(Bson::Null | Bson::Undefined) => {
                    return Ok(Some(args.get(4).cloned().flatten().unwrap_or(Bson::Null)))
                }
                Some(Bson::String(s)) => s.clone(),
                Some(other) => {
                    if let Some(fallback) = on_error {
                        return Ok(Some(fallback));
                    }
                    return Err(QueryError {
                        code: 241,
                        code_name: "ConversionFailure",
                        message: format!(
                            "$dateFromString requires that 'dateString' be a string, found: {} with value {other}",
                            type_name(Some(other))
                        ),
                    });
                }
            };
            match parse_date_string(&text) {
                Some(millis) => date(millis),
                None => match on_error {
                    Some(fallback) => Ok(Some(fallback)),
                    None => Err(QueryError {
                        code: 241,
                        code_name: "ConversionFailure",
                        message: format!("Error parsing date string '{text}'"),
                    }),
                },
            }
        }
        DateOperator::DateToParts => {
            check_timezone(arg(1))?;
            let Some(millis) = date_millis(arg(0), "$dateToParts")? else {
                return null;
            };
            let t = civil_time(millis);
            let iso = matches!(arg(2), Some(v) if crate::query::value::truthy::truthy(v));
            let mut parts = bson::Document::new();
            if iso {
                let (week_year, week) = t.iso_week();
                parts.insert("isoWeekYear", Bson::Int32(week_year as i32));
                parts.insert("isoWeek", Bson::Int32(week as i32));
                parts.insert("isoDayOfWeek", Bson::Int32(t.iso_day_of_week() as i32));
            } else {
                parts.insert("year", Bson::Int32(t.year as i32));
                parts.insert("month", Bson::Int32(t.month as i32));
                parts.insert("day", Bson::Int32(t.day as i32));
            }
            parts.insert("hour", Bson::Int32(t.hour as i32));
            parts.insert("minute", Bson::Int32(t.minute as i32));
            parts.insert("second", Bson::Int32(t.second as i32));
            parts.insert("millisecond", Bson::Int32(t.millisecond as i32));
            Ok(Some(Bson::Document(parts)))
        }
        _ => {
            check_timezone(arg(3))?;
            let Some(millis) = date_millis(arg(0), "$dateTrunc")? else {
                return null;
            };
            if matches!(arg(1), None | Some(Bson::Null)) {
                return null;
            }
            let u = unit(arg(1), "$dateTrunc")?;
            let bin = match arg(2) {
                None | Some(Bson::Null) => 1,
                other => integer(other, "binSize", "$dateTrunc")?,
            };
            if bin <= 0 {
                return Err(QueryError::location(
                    5439017,
                    "$dateTrunc requires 'binSize' to be greater than 0",
                ));
            }
            date(period_start(millis, u, bin, week_start(arg(4))?))
        }
    }
}

/// `$dateDiff`: whole units between two dates, in a timezone, weeks from `startOfWeek`.
fn date_diff(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    let null = Ok(Some(Bson::Null));
    check_timezone(arg(3))?;
    let (Some(start), Some(end)) = (
        date_millis(arg(0), "$dateDiff")?,
        date_millis(arg(1), "$dateDiff")?,
    ) else {
        return null;
    };
    if matches!(arg(2), None | Some(Bson::Null)) {
        return null;
    }
    let u = unit(arg(2), "$dateDiff")?;
    let first_weekday = week_start(arg(4))?;
    let count = match u {
        Unit::Year | Unit::Quarter | Unit::Month => {
            let (a, b) = (civil_time(start), civil_time(end));
            let months = (b.year * 12 + i64::from(b.month)) - (a.year * 12 + i64::from(a.month));
            match u {
                Unit::Year => b.year - a.year,
                Unit::Quarter => {
                    let quarter = |t: &crate::query::expr::ops::date::CivilTime| {
                        t.year * 4 + i64::from((t.month - 1) / 3)
                    };
                    quarter(&b) - quarter(&a)
                }
                _ => months,
            }
        }
        other => {
            let length = fixed_length(other).unwrap_or(1);
            let span = i128::from(period_start(end, other, 1, first_weekday))
                - i128::from(period_start(start, other, 1, first_weekday));
            (span / i128::from(length)) as i64
        }
    };
    Ok(Some(Bson::Int64(count)))
}

/// `$dateFromParts`: a date from calendar parts (missing parts take their defaults, a null part gives null).
fn date_from_parts(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    let null = Ok(Some(Bson::Null));
    let date = |millis: i64| Ok(Some(Bson::DateTime(bson::DateTime::from_millis(millis))));
    check_timezone(arg(7))?;
    let part = |i: usize, name: &str, default: i64| -> Result<Option<i64>, QueryError> {
        match arg(i) {
            None => Ok(Some(default)),
            Some(Bson::Null | Bson::Undefined) => Ok(None),
            other => Ok(Some(integer(other, name, "$dateFromParts")?)),
        }
    };
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second), Some(ms)) = (
        part(0, "year", 1970)?,
        part(1, "month", 1)?,
        part(2, "day", 1)?,
        part(3, "hour", 0)?,
        part(4, "minute", 0)?,
        part(5, "second", 0)?,
        part(6, "millisecond", 0)?,
    ) else {
        return null;
    };
    if !(1..=9999).contains(&year) {
        return Err(QueryError::location(
            40523,
            format!("'year' must evaluate to an integer in the range 1 to 9999, found {year}"),
        ));
    }
    // Out-of-range parts carry over, as in MongoDB (month 14 is February next year).
    let Some(with_months) = add_months(days_from_civil(year, 1, 1) * MS_PER_DAY, month - 1) else {
        return Err(QueryError::location(5166406, "$dateFromParts overflowed"));
    };
    let offset = (day - 1)
        .saturating_mul(MS_PER_DAY)
        .saturating_add(hour.saturating_mul(3_600_000))
        .saturating_add(minute.saturating_mul(60_000))
        .saturating_add(second.saturating_mul(1000))
        .saturating_add(ms);
    date(with_months.saturating_add(offset))
}

/// ISO 8601 dates as `$dateFromString` reads them without a format: a date
/// (`2020-01-31`), optionally with a time (`T10:00`, `T10:00:00`, `T10:00:00.123`) and a `Z`
/// or numeric UTC offset.
fn parse_date_string(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(dt) = bson::DateTime::parse_rfc3339_str(text) {
        return Some(dt.timestamp_millis());
    }
    let (date_part, time_part) = match text.split_once(['T', ' ']) {
        Some((d, t)) => (d, Some(t)),
        None => (text, None),
    };
    let mut fields = date_part.split('-');
    let year: i64 = fields.next()?.parse().ok()?;
    let month: u32 = fields.next()?.parse().ok()?;
    let day: u32 = fields.next()?.parse().ok()?;
    if fields.next().is_some()
        || !(0..=9999).contains(&year)
        || !(1..=12).contains(&month)
        || day == 0
        || day > 31
    {
        return None;
    }
    let mut millis = days_from_civil(year, month, day).checked_mul(MS_PER_DAY)?;
    if let Some(time) = time_part {
        let time = time.strip_suffix('Z').unwrap_or(time);
        let mut pieces = time.split(':');
        let hour: i64 = pieces.next()?.parse().ok()?;
        let minute: i64 = pieces.next().map(str::parse).transpose().ok()?.unwrap_or(0);
        let seconds: f64 = pieces
            .next()
            .map(str::parse)
            .transpose()
            .ok()?
            .unwrap_or(0.0);
        if pieces.next().is_some() || hour > 23 || minute > 59 || !(0.0..61.0).contains(&seconds) {
            return None;
        }
        millis += hour * 3_600_000 + minute * 60_000 + (seconds * 1000.0).round() as i64;
    }
    Some(millis)
}

#[cfg(test)]
mod tests {
    use crate::query::expr::Expression;
    use bson::{doc, Bson, Document};

    fn e(expr: Document) -> Bson {
        Expression::parse(&Bson::Document(expr))
            .unwrap()
            .evaluate(&doc! {})
            .unwrap()
    }

    fn date(s: &str) -> Bson {
        Bson::DateTime(bson::DateTime::parse_rfc3339_str(s).unwrap())
    }

    #[test]
    fn extreme_dates_do_not_overflow() {
        let far = Bson::DateTime(bson::DateTime::from_millis(i64::MIN));
        let big = Bson::Int64(i64::MAX);
        let _ = Expression::parse(&Bson::Document(
            doc! {"$dateAdd": {"startDate": far.clone(), "unit": "month", "amount": big.clone()}},
        ))
        .unwrap()
        .evaluate(&doc! {});
        let _ = e(doc! {"$dateAdd": {"startDate": far.clone(), "unit": "day", "amount": big}});
        let _ = e(doc! {"$dateTrunc": {"date": far.clone(), "unit": "month", "binSize": 7}});
        let _ = e(doc! {"$dateTrunc": {"date": far.clone(), "unit": "week", "binSize": 3}});
        let _ = e(doc! {"$dateTrunc": {"date": far.clone(), "unit": "hour", "binSize": i64::MAX}});
        let _ = e(
            doc! {"$dateDiff": {"startDate": far, "endDate": Bson::DateTime(bson::DateTime::from_millis(i64::MAX)), "unit": "second"}},
        );
    }

    #[test]
    fn from_parts_from_string_to_parts() {
        assert_eq!(
            e(doc! {"$dateFromParts": {"year": 2017, "month": 14, "day": 1, "hour": 12}}),
            date("2018-02-01T12:00:00Z")
        );
        assert_eq!(
            e(doc! {"$dateFromString": {"dateString": "2017-02-08T12:10:40.787Z"}}),
            date("2017-02-08T12:10:40.787Z")
        );
        assert_eq!(
            e(doc! {"$dateFromString": {"dateString": "2017-02-08"}}),
            date("2017-02-08T00:00:00Z")
        );
        assert_eq!(
            e(
                doc! {"$dateFromString": {"dateString": "99999999999999999-01-01", "onError": "bad"}}
            ),
            Bson::String("bad".into())
        );
        assert_eq!(
            e(doc! {"$dateFromString": {"dateString": "nope", "onError": "bad"}}),
            Bson::String("bad".into())
        );
        assert_eq!(
            e(doc! {"$dateToParts": {"date": date("2017-01-01T01:29:09.123Z")}}),
            Bson::Document(
                doc! {"year": 2017, "month": 1, "day": 1, "hour": 1, "minute": 29, "second": 9, "millisecond": 123}
            )
        );
    }

    #[test]
    fn add_diff_trunc() {
        let jan31 = date("2020-01-31T10:00:00Z");
        assert_eq!(
            e(doc! {"$dateAdd": {"startDate": jan31.clone(), "unit": "month", "amount": 1}}),
            date("2020-02-29T10:00:00Z")
        );
        assert_eq!(
            e(doc! {"$dateAdd": {"startDate": jan31.clone(), "unit": "day", "amount": 2}}),
            date("2020-02-02T10:00:00Z")
        );
        assert_eq!(
            e(doc! {"$dateSubtract": {"startDate": jan31.clone(), "unit": "year", "amount": 1}}),
            date("2019-01-31T10:00:00Z")
        );
        assert_eq!(
            e(
                doc! {"$dateDiff": {"startDate": date("2020-12-31T23:00:00Z"), "endDate": date("2021-01-01T01:00:00Z"), "unit": "year"}}
            ),
            Bson::Int64(1)
        );
        assert_eq!(
            e(
                doc! {"$dateDiff": {"startDate": date("2020-01-01T23:00:00Z"), "endDate": date("2020-01-03T01:00:00Z"), "unit": "day"}}
            ),
            Bson::Int64(2)
        );
        assert_eq!(
            e(doc! {"$dateTrunc": {"date": jan31.clone(), "unit": "month"}}),
            date("2020-01-01T00:00:00Z")
        );
        assert_eq!(
            e(doc! {"$dateTrunc": {"date": jan31.clone(), "unit": "quarter"}}),
            date("2020-01-01T00:00:00Z")
        );
        // 2020-01-31 is a Friday; its week (starting Sunday) began 2020-01-26.
        assert_eq!(
            e(doc! {"$dateTrunc": {"date": jan31.clone(), "unit": "week"}}),
            date("2020-01-26T00:00:00Z")
        );
        assert_eq!(
            e(doc! {"$dateTrunc": {"date": jan31, "unit": "hour", "binSize": 6}}),
            date("2020-01-31T06:00:00Z")
        );
    }
}
