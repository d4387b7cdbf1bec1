//! The strftime subset nsq_to_file's `--datetime-format` takes (its copy of
//! jehiah/go-strftime): `%Y %y %m %d %H %I %M %S %p %B %b %A %a %Z %z %%`; anything else is
//! kept as written. Times are UTC (nsq_to_file uses the local time zone; the file names
//! differ only where the zone is not UTC).

use nsq_common::utc_date::Civil;

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
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// `format` with the time `t` put in.
pub fn strftime(format: &str, t: &Civil) -> String {
    let mut out = String::with_capacity(format.len() + 8);
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(&spec) = chars.peek() else {
            out.push('%');
            break;
        };
        let month = MONTHS[(t.month as usize + 11) % 12];
        let day = DAYS[t.weekday as usize % 7];
        let hour12 = match t.hour % 12 {
            0 => 12,
            h => h,
        };
        let s = match spec {
            'Y' => format!("{:04}", t.year),
            'y' => format!("{:02}", t.year.rem_euclid(100)),
            'm' => format!("{:02}", t.month),
            'd' => format!("{:02}", t.day),
            'H' => format!("{:02}", t.hour),
            'I' => format!("{hour12:02}"),
            'M' => format!("{:02}", t.minute),
            'S' => format!("{:02}", t.second),
            'p' => (if t.hour < 12 { "AM" } else { "PM" }).to_string(),
            'B' => month.to_string(),
            'b' => month[..3].to_string(),
            'A' => day.to_string(),
            'a' => day[..3].to_string(),
            'Z' => "UTC".to_string(),
            'z' => "+0000".to_string(),
            '%' => "%".to_string(),
            other => format!("%{other}"),
        };
        chars.next();
        out.push_str(&s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let t = Civil::from_unix(1_763_744_714); // Friday 2025-11-21 17:05:14 UTC
        assert_eq!(strftime("%Y-%m-%d_%H", &t), "2025-11-21_17");
        assert_eq!(
            strftime("%y%M%S %I%p %a %b %A %B", &t),
            "250514 05PM Fri Nov Friday November"
        );
        assert_eq!(strftime("100%% %Z%z %q %", &t), "100% UTC+0000 %q %");
    }
}
