//! Cells printed the way `kubectl get` prints them.

use serde_json::Value;

/// kubectl's `HumanDuration` (k8s.io/apimachinery/pkg/util/duration), from seconds.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        return if days == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{days}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// Seconds since the Unix epoch of an RFC 3339 timestamp: in UTC as the API server
/// writes them (`2024-01-02T03:04:05Z`, optionally with fractional seconds), or with
/// an offset (`+02:00`), as a CRD's own date fields may hold and kubectl reads. None
/// otherwise.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let (text, offset) = match text.strip_suffix(['Z', 'z']) {
        Some(utc) => (utc, 0),
        None => split_offset(text)?,
    };
    Some(utc_seconds(text)? - offset)
}

/// `text` without its `±HH:MM` offset, and the offset in seconds.
fn split_offset(text: &str) -> Option<(&str, i64)> {
    let cut = text.len().checked_sub(6)?;
    let (rest, offset) = (text.get(..cut)?, text.get(cut..)?);
    let sign = match offset.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (hours, minutes) = offset.get(1..)?.split_once(':')?;
    let two_digits = |part: &str| part.len() == 2 && part.bytes().all(|b| b.is_ascii_digit());
    if !(two_digits(hours) && two_digits(minutes)) {
        return None;
    }
    let (hours, minutes) = (hours.parse::<i64>().ok()?, minutes.parse::<i64>().ok()?);
    if hours > 23 || minutes > 59 {
        return None;
    }
    Some((rest, sign * (hours * 3600 + minutes * 60)))
}

/// Seconds since the epoch of `DATE T TIME` read as UTC.
fn utc_seconds(text: &str) -> Option<i64> {
    let (date, time) = text.split_once('T')?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (d.next()??, d.next()??, d.next()??);
    let time = time.split('.').next()?;
    let mut t = time.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (hour, minute, second) = (t.next()??, t.next()??, t.next()??);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second)
}

/// A cell as kubectl prints it (k8s.io/cli-runtime's table printer): nothing for a
/// null cell (the Table API's "no value"; `<none>` is what the API server itself
/// writes for some built-in columns), text cut at its first line break with `...`,
/// numbers as Go prints them, dates as ages relative to `now` (seconds since the
/// epoch).
pub fn cell_text(value: &Value, column_type: &str, now: i64) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) if column_type == "date" => match parse_timestamp(s) {
            Some(t) => human_duration(now - t),
            None => first_line(s),
        },
        Value::String(s) => first_line(s),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => go_float(f),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

fn first_line(s: &str) -> String {
    match s.find(['\n', '\r', '\x0c']) {
        Some(cut) => format!("{}...", &s[..cut]),
        None => s.to_string(),
    }
}

/// A float64 as Go's `fmt.Sprint` writes it: the shortest text that reads back, with
/// an exponent below 1e-4 and from 1e21 (`0.5`, `100`, `1e+21`).
fn go_float(f: f64) -> String {
    if f == 0.0 || (1e-4..1e21).contains(&f.abs()) {
        return format!("{f}");
    }
    let text = format!("{f:e}");
    match text.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => text,
    }
}

/// `text` cut to at most `max` bytes at a character's boundary, with `…` when cut.
pub fn shortened(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut cut = max;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn human_duration_matches_kubectl() {
        let cases = [
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (150, "2m30s"),
            (600, "10m"),
            (3 * 3600 - 1, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 120, "3h2m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (50 * 3600, "2d2h"),
            (8 * 86400, "8d"),
            (730 * 86400, "2y"),
            (731 * 86400, "2y1d"),
            (8 * 365 * 86400, "8y"),
        ];
        for (seconds, expected) in cases {
            assert_eq!(human_duration(seconds), expected, "{seconds}s");
        }
    }

    #[test]
    fn timestamps_parse_as_utc_epoch_seconds() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_timestamp("2000-03-01T00:00:01Z"), Some(951_868_801));
        assert_eq!(
            parse_timestamp("2026-11-22T02:14:26.123456Z"),
            Some(1_795_313_666)
        );
        assert_eq!(parse_timestamp("not a date"), None);
        assert_eq!(parse_timestamp("2026-13-01T00:00:00Z"), None);
        assert_eq!(
            parse_timestamp("2026-11-22T02:14:26+01:00"),
            parse_timestamp("2026-11-22T01:14:26Z")
        );
        assert_eq!(
            parse_timestamp("2026-11-22T02:14:26.5-05:30"),
            parse_timestamp("2026-11-22T07:44:26Z")
        );
        assert_eq!(parse_timestamp("2026-11-22T02:14:26+1:00"), None);
        assert_eq!(parse_timestamp("2026-11-22T02:14:26+24:00"), None);
        assert_eq!(parse_timestamp("+01:00"), None);
        assert_eq!(parse_timestamp("2026-11-22T02:14:26"), None);
    }

    #[test]
    fn cells_print_like_kubectl() {
        assert_eq!(cell_text(&Value::Null, "string", 0), "");
        assert_eq!(cell_text(&json!("two\nlines"), "string", 0), "two...");
        assert_eq!(cell_text(&json!(0.5), "number", 0), "0.5");
        assert_eq!(cell_text(&json!(100.0), "number", 0), "100");
        assert_eq!(cell_text(&json!(1e21), "number", 0), "1e+21");
        assert_eq!(cell_text(&json!(0.00001), "number", 0), "1e-05");
        assert_eq!(cell_text(&json!(3), "integer", 0), "3");
        assert_eq!(cell_text(&json!(true), "boolean", 0), "true");
        assert_eq!(cell_text(&json!("mysql"), "string", 0), "mysql");
        assert_eq!(cell_text(&json!("1970-01-01T00:00:00Z"), "date", 90), "90s");
        assert_eq!(cell_text(&json!("garbage"), "date", 90), "garbage");
    }
}
