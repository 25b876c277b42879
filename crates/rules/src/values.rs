//! Small value parsers shared by the keyword parsers: numbers, integer
//! comparisons, quoted strings.

use crate::ast::IntCmp;

/// Removes one pair of surrounding double quotes, if present.
pub(crate) fn strip_quotes(s: &str) -> &str {
    let t = s.trim();
    if t.len() >= 2 && t.starts_with('"') && t.ends_with('"') {
        t[1..t.len() - 1].trim()
    } else {
        t
    }
}

/// Removes backslash escapes (`\"` -> `"`, `\;` -> `;`, `\\` -> `\`, ...).
pub(crate) fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(n) => out.push(n),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Parses an unsigned number the way Suricata's byte keywords do:
/// `0x` hexadecimal, a leading `0` octal (when all digits are octal),
/// decimal otherwise.
pub(crate) fn parse_u64(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let r = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else if t.len() > 1 && t.starts_with('0') && t.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        u64::from_str_radix(&t[1..], 8)
    } else if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        t.parse::<u64>()
    } else {
        return Err(format!("invalid number '{t}'"));
    };
    r.map_err(|_| format!("invalid or too large number '{t}'"))
}

/// Decimal (or `0x` hex) unsigned number with an upper bound.
pub(crate) fn parse_uint_max(s: &str, max: u64) -> Result<u64, String> {
    let t = strip_quotes(s);
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).map_err(|_| format!("invalid number '{t}'"))?
    } else if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        t.parse::<u64>()
            .map_err(|_| format!("number '{t}' too large"))?
    } else {
        return Err(format!("invalid number '{t}'"));
    };
    if v > max {
        return Err(format!("number {v} out of range (max {max})"));
    }
    Ok(v)
}

pub(crate) fn parse_u32(s: &str) -> Result<u32, String> {
    parse_uint_max(s, u32::MAX as u64).map(|v| v as u32)
}

pub(crate) fn parse_u16(s: &str) -> Result<u16, String> {
    parse_uint_max(s, u16::MAX as u64).map(|v| v as u16)
}

/// Signed decimal (or `0x`/`-0x` hex) number.
pub(crate) fn parse_i64(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b.trim_start()),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).map_err(|_| format!("invalid number '{t}'"))?
    } else if !body.is_empty() && body.bytes().all(|b| b.is_ascii_digit()) {
        body.parse::<i64>()
            .map_err(|_| format!("number '{t}' too large"))?
    } else {
        return Err(format!("invalid number '{t}'"));
    };
    Ok(if neg { -v } else { v })
}

pub(crate) fn parse_i32(s: &str) -> Result<i32, String> {
    let v = parse_i64(s)?;
    i32::try_from(v).map_err(|_| format!("number {v} out of range"))
}

/// A number as Suricata's integer keywords read it: decimal with an
/// optional `kb`/`mb`/`gb` (or `kib`...) unit, or `0x` hexadecimal.
fn uint_value(s: &str, max: u64) -> Result<u64, String> {
    let t = s.trim();
    let v = if let Some(h) = t.strip_prefix("0x") {
        u64::from_str_radix(h, 16).map_err(|_| format!("invalid number '{t}'"))?
    } else {
        let digits = t.bytes().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return Err(format!("invalid number '{t}'"));
        }
        let n: u64 = t[..digits]
            .parse()
            .map_err(|_| format!("number '{t}' too large"))?;
        let unit = match t[digits..].to_ascii_lowercase().as_str() {
            "" => 1u64,
            "kb" | "kib" => 1 << 10,
            "mb" | "mib" => 1 << 20,
            "gb" | "gib" => 1 << 30,
            _ => return Err(format!("invalid number '{t}'")),
        };
        n.checked_mul(unit)
            .ok_or_else(|| format!("number '{t}' too large"))?
    };
    if v > max {
        return Err(format!("value {v} out of range (max {max})"));
    }
    Ok(v)
}

/// Parses Suricata's unsigned integer comparison syntax (dsize, ttl,
/// itype, icode, bsize, tcp.mss, ...): `N`, `=N`, `<N`, `<=N`, `>N`,
/// `>=N`, `!N`, `!=N`, `A-B` / `A<>B` (exclusive), `!A-B`, `&M=V`,
/// `&M!=V`.
pub fn parse_uint_cmp(s: &str, max: u64) -> Result<IntCmp, String> {
    let t = strip_quotes(s);
    if t.is_empty() {
        return Err("empty value".into());
    }
    if let Some(r) = t.strip_prefix('&') {
        let (m, v, neg) = if let Some((m, v)) = r.split_once("!=") {
            (m, v, true)
        } else if let Some((m, v)) = r.split_once('=') {
            (m, v, false)
        } else {
            return Err(format!("invalid bitmask comparison '{t}'"));
        };
        let mask = uint_value(m, max)?;
        let value = uint_value(v, max)?;
        if value & mask != value {
            return Err(format!("bitmask comparison '{t}' can never match"));
        }
        return Ok(if neg {
            IntCmp::NotBitmask { mask, value }
        } else {
            IntCmp::Bitmask { mask, value }
        });
    }
    let (neg, body) = match t.strip_prefix('!') {
        Some(b) if !b.starts_with('=') => (true, b.trim_start()),
        _ => (false, t),
    };
    let interval = if let Some(p) = body.find("<>") {
        Some((&body[..p], &body[p + 2..]))
    } else if body.as_bytes().first().is_some_and(|b| b.is_ascii_digit()) {
        body.split_once('-')
    } else {
        None
    };
    if let Some((a, b)) = interval {
        if a.trim().is_empty() {
            return Err(format!("invalid range '{t}'"));
        }
        let lo = uint_value(a, max)?;
        let hi = uint_value(b, max)?;
        if hi <= lo || hi - lo <= 1 {
            return Err(format!(
                "range '{t}' can never match (bounds are exclusive)"
            ));
        }
        return Ok(if neg {
            IntCmp::NotRangeEx(lo, hi)
        } else {
            IntCmp::RangeEx(lo, hi)
        });
    }
    let (op, rest): (fn(u64) -> IntCmp, &str) = if let Some(r) = t.strip_prefix(">=") {
        (IntCmp::Ge, r)
    } else if let Some(r) = t.strip_prefix("<=") {
        (IntCmp::Le, r)
    } else if let Some(r) = t.strip_prefix('>') {
        (IntCmp::Gt, r)
    } else if let Some(r) = t.strip_prefix('<') {
        (IntCmp::Lt, r)
    } else if let Some(r) = t.strip_prefix("!=") {
        (IntCmp::Ne, r)
    } else if let Some(r) = t.strip_prefix('!') {
        (IntCmp::Ne, r)
    } else if let Some(r) = t.strip_prefix('=') {
        (IntCmp::Eq, r)
    } else {
        (IntCmp::Eq, t)
    };
    let v = uint_value(rest, max)?;
    let cmp = op(v);
    match cmp {
        IntCmp::Lt(0) | IntCmp::Ge(0) => {
            Err(format!("comparison '{t}' is always false or always true"))
        }
        IntCmp::Gt(x) | IntCmp::Le(x) if x == max => {
            Err(format!("comparison '{t}' is always false or always true"))
        }
        c => Ok(c),
    }
}

/// A size as Suricata writes it (`ParseSizeString`): a number with an
/// optional `kb`, `mb` or `gb` suffix (any case, a space allowed), in
/// bytes (1 kb = 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let (num, mult) = [
        ("kib", 1u64 << 10),
        ("mib", 1 << 20),
        ("gib", 1 << 30),
        ("kb", 1 << 10),
        ("mb", 1 << 20),
        ("gb", 1 << 30),
        ("b", 1),
    ]
    .iter()
    .find_map(|(suf, m)| lower.strip_suffix(suf).map(|n| (n.trim_end(), *m)))
    .unwrap_or((lower.as_str(), 1));
    let whole = num.split('.').next().unwrap_or("");
    if num.is_empty()
        || whole.is_empty()
        || !num.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        || num.bytes().filter(|&b| b == b'.').count() > 1
    {
        return Err(format!("invalid size '{t}'"));
    }
    let v: f64 = num.parse().map_err(|_| format!("invalid size '{t}'"))?;
    let bytes = v * mult as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("size '{t}' too large"));
    }
    Ok(bytes as u64)
}

/// Splits at commas, trimming each part.
pub(crate) fn split_commas(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim)
}

/// True for names usable as byte_extract / byte_math variables.
pub(crate) fn is_var_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uint_forms() {
        assert_eq!(parse_uint_cmp("5", 255), Ok(IntCmp::Eq(5)));
        assert_eq!(parse_uint_cmp("=5", 255), Ok(IntCmp::Eq(5)));
        assert_eq!(parse_uint_cmp("<5", 255), Ok(IntCmp::Lt(5)));
        assert_eq!(parse_uint_cmp("<=5", 255), Ok(IntCmp::Le(5)));
        assert_eq!(parse_uint_cmp(">5", 255), Ok(IntCmp::Gt(5)));
        assert_eq!(parse_uint_cmp(">= 5", 255), Ok(IntCmp::Ge(5)));
        assert_eq!(parse_uint_cmp("!5", 255), Ok(IntCmp::Ne(5)));
        assert_eq!(parse_uint_cmp("!=5", 255), Ok(IntCmp::Ne(5)));
        assert_eq!(parse_uint_cmp("1<>5", 255), Ok(IntCmp::RangeEx(1, 5)));
        assert_eq!(parse_uint_cmp("1-5", 255), Ok(IntCmp::RangeEx(1, 5)));
        assert_eq!(parse_uint_cmp("!1-5", 255), Ok(IntCmp::NotRangeEx(1, 5)));
        assert_eq!(
            parse_uint_cmp("&0x0f=3", 255),
            Ok(IntCmp::Bitmask { mask: 15, value: 3 })
        );
        assert_eq!(parse_uint_cmp("1kb", u64::MAX), Ok(IntCmp::Eq(1024)));
        assert!(parse_uint_cmp("256", 255).is_err());
        assert!(parse_uint_cmp("<0", 255).is_err());
        assert!(parse_uint_cmp(">255", 255).is_err());
        assert!(parse_uint_cmp("4<>5", 255).is_err());
        assert!(parse_uint_cmp("abc", 255).is_err());
        assert!(parse_uint_cmp("", 255).is_err());
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_u64("0x10"), Ok(16));
        assert_eq!(parse_u64("010"), Ok(8));
        assert_eq!(parse_u64("10"), Ok(10));
        assert!(parse_u64("x").is_err());
        assert_eq!(parse_i32("-12"), Ok(-12));
        assert!(parse_i32("99999999999").is_err());
    }
}
