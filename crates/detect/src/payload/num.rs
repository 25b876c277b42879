//! Number extraction for the byte_* keywords, as Suricata's
//! `ByteExtractUint64` (binary) and `ByteExtractStringUint64` (C
//! `strtoull` over a NUL-terminated copy of the bytes) do it.

use vigil_rules::{Endian, NumBase};

/// Reads `bytes` (1..=8 of them) as an unsigned integer.
#[inline]
pub(crate) fn binary(bytes: &[u8], endian: Endian) -> u64 {
    match endian {
        Endian::Big => bytes.iter().fold(0u64, |v, &b| (v << 8) | b as u64),
        Endian::Little => bytes.iter().rev().fold(0u64, |v, &b| (v << 8) | b as u64),
    }
}

/// `strtoull(copy_of(bytes), &end, base)` with Suricata's error handling:
/// `None` when no digit was read or the value overflowed (both make the
/// keyword fail), else the value and the number of bytes consumed
/// (leading white space, sign and `0x` prefix included).
pub(crate) fn string(bytes: &[u8], base: NumBase) -> Option<(u64, usize)> {
    let mut base: u64 = match base {
        NumBase::Dec => 10,
        NumBase::Hex => 16,
        NumBase::Oct => 8,
        // Not a string conversion; callers never ask. strtoull base 0.
        NumBase::Binary => 0,
    };
    // The copy is NUL-terminated: an embedded NUL ends the string.
    let s = match memchr::memchr(0, bytes) {
        Some(n) => &bytes[..n],
        None => bytes,
    };
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        i += 1;
    }
    let mut negative = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        negative = s[i] == b'-';
        i += 1;
    }
    let hex_prefix = i + 2 < s.len()
        && s[i] == b'0'
        && (s[i + 1] | 0x20) == b'x'
        && s[i + 2].is_ascii_hexdigit();
    if (base == 16 || base == 0) && hex_prefix {
        i += 2;
        base = 16;
    } else if base == 0 {
        base = if i < s.len() && s[i] == b'0' { 8 } else { 10 };
    }
    let first_digit = i;
    let mut acc: u64 = 0;
    let mut overflow = false;
    while i < s.len() {
        let d = match s[i] {
            c @ b'0'..=b'9' => (c - b'0') as u64,
            c @ b'a'..=b'z' => (c - b'a') as u64 + 10,
            c @ b'A'..=b'Z' => (c - b'A') as u64 + 10,
            _ => break,
        };
        if d >= base {
            break;
        }
        match acc.checked_mul(base).and_then(|a| a.checked_add(d)) {
            Some(a) => acc = a,
            None => overflow = true,
        }
        i += 1;
    }
    if i == first_digit || overflow {
        return None;
    }
    Some((if negative { acc.wrapping_neg() } else { acc }, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_endianness() {
        assert_eq!(binary(&[1, 2], Endian::Big), 0x0102);
        assert_eq!(binary(&[1, 2], Endian::Little), 0x0201);
        assert_eq!(binary(&[0xff; 8], Endian::Big), u64::MAX);
    }

    #[test]
    fn strtoull_like() {
        assert_eq!(string(b"1234", NumBase::Dec), Some((1234, 4)));
        assert_eq!(string(b"12ab", NumBase::Dec), Some((12, 2)));
        assert_eq!(string(b" 12 ", NumBase::Dec), Some((12, 3)));
        assert_eq!(string(b"+7", NumBase::Dec), Some((7, 2)));
        assert_eq!(string(b"-1", NumBase::Dec), Some((u64::MAX, 2)));
        assert_eq!(string(b"ab", NumBase::Dec), None);
        assert_eq!(string(b"", NumBase::Dec), None);
        assert_eq!(string(b"1f", NumBase::Hex), Some((31, 2)));
        assert_eq!(string(b"0x1f", NumBase::Hex), Some((31, 4)));
        assert_eq!(string(b"0xg", NumBase::Hex), Some((0, 1)));
        assert_eq!(string(b"17", NumBase::Oct), Some((15, 2)));
        assert_eq!(string(b"18", NumBase::Oct), Some((1, 1)));
        assert_eq!(string(b"1\x002", NumBase::Dec), Some((1, 1)));
        assert_eq!(string(b"99999999999999999999", NumBase::Dec), None);
        assert_eq!(
            string(b"18446744073709551615", NumBase::Dec),
            Some((u64::MAX, 20))
        );
    }
}
