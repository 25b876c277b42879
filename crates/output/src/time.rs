//! Packet-time formatting, always in UTC.
//!
//! Suricata formats times in the local zone of the sensor; Vigil always uses
//! UTC (`+0000`) so that a run's output is the same on every machine. The
//! conversion from a day count to a civil date is Howard Hinnant's
//! `civil_from_days`, which is exact over the whole `i64` second range we
//! accept (proleptic Gregorian calendar, no leap seconds).

use std::io::{self, Write};

const SECS_PER_DAY: i64 = 86_400;
const NANOS_PER_SEC: u32 = 1_000_000_000;

/// A broken-down UTC time, to the microsecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    pub year: i64,
    /// 1..=12
    pub month: u32,
    /// 1..=31
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    /// 0..=999_999
    pub micros: u32,
}

impl UtcTime {
    /// Converts seconds since the Unix epoch plus a nanosecond part.
    ///
    /// `nanos` above one second are carried into `secs`; sub-microsecond
    /// digits are truncated, as Suricata does with a `timeval`.
    pub fn from_unix(secs: i64, nanos: u32) -> Self {
        let secs = secs.saturating_add(i64::from(nanos / NANOS_PER_SEC));
        let nanos = nanos % NANOS_PER_SEC;
        let days = secs.div_euclid(SECS_PER_DAY);
        // rem_euclid of a positive divisor is in 0..86400, fits u32.
        let sod = secs.rem_euclid(SECS_PER_DAY) as u32;
        let (year, month, day) = civil_from_days(days);
        UtcTime {
            year,
            month,
            day,
            hour: sod / 3600,
            minute: sod % 3600 / 60,
            second: sod % 60,
            micros: nanos / 1000,
        }
    }
}

/// Howard Hinnant's `civil_from_days`: days since 1970-01-01 to
/// (year, month, day) in the proleptic Gregorian calendar.
///
/// Valid for every `days` that a `i64` second count divided by 86400 can
/// produce (the arithmetic stays far from overflow).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32; // [1, 31]
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // [1, 12]
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn write_year<W: Write + ?Sized>(w: &mut W, year: i64, width: usize) -> io::Result<()> {
    if year < 0 {
        write!(w, "-{:0width$}", year.unsigned_abs(), width = width)
    } else {
        write!(w, "{:0width$}", year, width = width)
    }
}

/// EVE's ISO 8601 form: `2021-12-27T17:39:01.666724+0000`.
pub fn write_iso8601<W: Write + ?Sized>(w: &mut W, secs: i64, nanos: u32) -> io::Result<()> {
    let secs = secs.saturating_add(i64::from(nanos / NANOS_PER_SEC));
    let nanos = nanos % NANOS_PER_SEC;
    let mut b = *b"0000-00-00T00:00:00.000000+0000";
    // Records come in packet order, so most share a recent one's second
    // (a flow record's start and end interleave with the packet times):
    // the date and time of day of recent seconds are kept per thread, and
    // only the microseconds are written afresh (converting and writing
    // the whole time was 8% of the merge thread's instructions).
    let slot = secs.rem_euclid(SECOND_SLOTS as i64) as usize;
    let cached = SECONDS.with(|c| {
        let (s, prefix) = c[slot].get();
        (s == secs).then_some(prefix)
    });
    let prefix = match cached {
        Some(p) => p,
        None => {
            let t = UtcTime::from_unix(secs, 0);
            // Every capture's years: the digits written straight (a
            // timestamp is in every record, and `write!`'s padded
            // integers cost about 50 times as much).
            if !(0..=9999).contains(&t.year) {
                write_year(w, t.year, 4)?;
                return write!(
                    w,
                    "-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+0000",
                    t.month,
                    t.day,
                    t.hour,
                    t.minute,
                    t.second,
                    nanos / 1000
                );
            }
            let mut p = *b"0000-00-00T00:00:00";
            digits(&mut p[0..4], t.year as u32);
            digits(&mut p[5..7], t.month);
            digits(&mut p[8..10], t.day);
            digits(&mut p[11..13], t.hour);
            digits(&mut p[14..16], t.minute);
            digits(&mut p[17..19], t.second);
            SECONDS.with(|c| c[slot].set((secs, p)));
            p
        }
    };
    b[..19].copy_from_slice(&prefix);
    digits(&mut b[20..26], nanos / 1000);
    w.write_all(&b)
}

/// Seconds [`write_iso8601`] keeps, each in the slot of its value modulo
/// this.
const SECOND_SLOTS: usize = 16;

thread_local! {
    /// Seconds [`write_iso8601`] wrote and their `YYYY-MM-DDTHH:MM:SS`
    /// (`i64::MIN`: none yet).
    static SECONDS: [std::cell::Cell<(i64, [u8; 19])>; SECOND_SLOTS] =
        const { [const { std::cell::Cell::new((i64::MIN, [0; 19])) }; SECOND_SLOTS] };
}

/// Writes `v`'s last `out.len()` decimal digits into `out`, zero-padded.
fn digits(out: &mut [u8], mut v: u32) {
    for d in out.iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// fast.log's form: `12/27/2021-17:39:01.666724`.
pub fn write_fastlog_time<W: Write + ?Sized>(w: &mut W, secs: i64, nanos: u32) -> io::Result<()> {
    let t = UtcTime::from_unix(secs, nanos);
    write!(w, "{:02}/{:02}/", t.month, t.day)?;
    write_year(w, t.year, 2)?;
    write!(
        w,
        "-{:02}:{:02}:{:02}.{:06}",
        t.hour, t.minute, t.second, t.micros
    )
}

/// stats.log's `Date:` form: `12/27/2021 -- 17:39:01`.
pub(crate) fn write_statslog_date<W: Write + ?Sized>(w: &mut W, secs: i64) -> io::Result<()> {
    let t = UtcTime::from_unix(secs, 0);
    write!(w, "{}/{}/", t.month, t.day)?;
    write_year(w, t.year, 4)?;
    write!(w, " -- {:02}:{:02}:{:02}", t.hour, t.minute, t.second)
}

/// The ISO 8601 form as a `String` (convenience for callers and tests; the
/// writers format straight into their buffers).
pub fn iso8601(secs: i64, nanos: u32) -> String {
    let mut v = Vec::with_capacity(32);
    // Writing to a Vec cannot fail.
    let _ = write_iso8601(&mut v, secs, nanos);
    // Only ASCII digits and punctuation are written.
    String::from_utf8(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fast(secs: i64, nanos: u32) -> String {
        let mut v = Vec::new();
        write_fastlog_time(&mut v, secs, nanos).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn epoch() {
        assert_eq!(iso8601(0, 0), "1970-01-01T00:00:00.000000+0000");
        assert_eq!(fast(0, 0), "01/01/1970-00:00:00.000000");
    }

    #[test]
    fn dev_pcap_alert_time() {
        // First alert of /work/shared/pcaps/dev/expected-alerts.jsonl.
        assert_eq!(
            iso8601(1_640_626_741, 666_724_000),
            "2021-12-27T17:39:01.666724+0000"
        );
        assert_eq!(
            fast(1_640_626_741, 666_724_999),
            "12/27/2021-17:39:01.666724"
        );
    }

    /// The per-second cache gives each time its own second, however the
    /// calls interleave, and years outside 0..=9999 still take the slow
    /// path.
    #[test]
    fn consecutive_and_interleaved_seconds() {
        let times = [
            (
                1_640_626_741,
                666_724_000,
                "2021-12-27T17:39:01.666724+0000",
            ),
            (1_640_626_741, 1_000, "2021-12-27T17:39:01.000001+0000"),
            (1_640_626_742, 0, "2021-12-27T17:39:02.000000+0000"),
            (
                1_640_626_741,
                999_999_999,
                "2021-12-27T17:39:01.999999+0000",
            ),
            (
                1_640_626_741,
                1_000_000_000,
                "2021-12-27T17:39:02.000000+0000",
            ),
            (-62_198_755_200, 0, "-0001-01-01T00:00:00.000000+0000"),
            (1_640_626_742, 5_000, "2021-12-27T17:39:02.000005+0000"),
            (253_402_300_800, 0, "10000-01-01T00:00:00.000000+0000"),
            (1_640_626_742, 5_000, "2021-12-27T17:39:02.000005+0000"),
            // The same slot (16 seconds apart), one after the other.
            (1_640_626_758, 0, "2021-12-27T17:39:18.000000+0000"),
            (1_640_626_742, 7_000, "2021-12-27T17:39:02.000007+0000"),
        ];
        for (secs, nanos, want) in times {
            assert_eq!(iso8601(secs, nanos), want, "{secs} {nanos}");
        }
    }

    #[test]
    fn negative_times() {
        assert_eq!(iso8601(-1, 0), "1969-12-31T23:59:59.000000+0000");
        // -0.5 s is represented as secs=-1, nanos=500ms.
        assert_eq!(iso8601(-1, 500_000_000), "1969-12-31T23:59:59.500000+0000");
        assert_eq!(iso8601(-86_400, 0), "1969-12-31T00:00:00.000000+0000");
        // 1900-03-01: 1900 is not a leap year.
        assert_eq!(
            iso8601(-2_203_891_200, 0),
            "1900-03-01T00:00:00.000000+0000"
        );
        assert_eq!(
            iso8601(-2_203_977_600, 0),
            "1900-02-28T00:00:00.000000+0000"
        );
    }

    #[test]
    fn leap_years() {
        // 2000 is a leap year (divisible by 400).
        assert_eq!(iso8601(951_782_400, 0), "2000-02-29T00:00:00.000000+0000");
        assert_eq!(iso8601(951_868_800, 0), "2000-03-01T00:00:00.000000+0000");
        // 2024-02-29 and the last second of a leap year.
        assert_eq!(iso8601(1_709_164_800, 0), "2024-02-29T00:00:00.000000+0000");
        assert_eq!(
            iso8601(1_735_689_599, 999_999_999),
            "2024-12-31T23:59:59.999999+0000"
        );
        // 2100 is not.
        assert_eq!(iso8601(4_107_542_400, 0), "2100-03-01T00:00:00.000000+0000");
        assert_eq!(iso8601(4_107_456_000, 0), "2100-02-28T00:00:00.000000+0000");
    }

    #[test]
    fn nanos_carry_and_truncate() {
        assert_eq!(iso8601(0, 1_999_999_999), "1970-01-01T00:00:01.999999+0000");
        assert_eq!(iso8601(59, 999), "1970-01-01T00:00:59.000000+0000");
    }

    #[test]
    fn extreme_values_do_not_panic() {
        let _ = iso8601(i64::MAX, u32::MAX);
        let _ = iso8601(i64::MIN, 0);
        let _ = fast(i64::MIN, u32::MAX);
        let t = UtcTime::from_unix(-62_135_596_800, 0); // 0001-01-01
        assert_eq!((t.year, t.month, t.day), (1, 1, 1));
        let t = UtcTime::from_unix(-62_135_596_801, 0); // 0000-12-31
        assert_eq!((t.year, t.month, t.day), (0, 12, 31));
        assert_eq!(
            iso8601(-62_198_755_200, 0),
            "-0001-01-01T00:00:00.000000+0000"
        );
    }

    #[test]
    fn digit_path_and_formatter_path_agree() {
        // Years 0..=9999 take the digit path; the years around it the
        // formatter's, and both must give the same shape.
        assert_eq!(
            iso8601(253_402_300_799, 999_999_000),
            "9999-12-31T23:59:59.999999+0000"
        );
        assert_eq!(
            iso8601(253_402_300_800, 0),
            "10000-01-01T00:00:00.000000+0000"
        );
        assert_eq!(
            iso8601(-62_167_219_200, 1_000),
            "0000-01-01T00:00:00.000001+0000"
        );
        for secs in [0i64, 1_640_626_741, 86_399, 951_868_800, 4_107_542_399] {
            let t = UtcTime::from_unix(secs, 123_456_789);
            let mut slow = Vec::new();
            write_year(&mut slow, t.year, 4).unwrap();
            write!(
                slow,
                "-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+0000",
                t.month, t.day, t.hour, t.minute, t.second, t.micros
            )
            .unwrap();
            assert_eq!(iso8601(secs, 123_456_789).as_bytes(), &slow[..]);
        }
    }

    #[test]
    fn civil_from_days_matches_a_day_by_day_walk() {
        // Walk forward from 1600-01-01 for 1000 years checking continuity.
        let start = civil_days_of(1600, 1, 1);
        let (mut y, mut m, mut d) = (1600i64, 1u32, 1u32);
        for days in start..start + 366_000 {
            assert_eq!(civil_from_days(days), (y, m, d));
            let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            let mdays = match m {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            d += 1;
            if d > mdays {
                d = 1;
                m += 1;
                if m > 12 {
                    m = 1;
                    y += 1;
                }
            }
        }
    }

    /// Hinnant's days_from_civil, used only to seed the walk above.
    fn civil_days_of(y: i64, m: u32, d: u32) -> i64 {
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(m);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    #[test]
    fn statslog_date() {
        let mut v = Vec::new();
        write_statslog_date(&mut v, 1_640_626_741).unwrap();
        assert_eq!(String::from_utf8(v).unwrap(), "12/27/2021 -- 17:39:01");
    }
}
