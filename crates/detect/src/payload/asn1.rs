//! The `asn1` keyword: the buffer decoded as a sequence of BER objects
//! (der-parser, as Suricata's own Rust implementation uses) from an
//! offset, matching when an object at any depth is malformed in a way the
//! rule names. Decoding stops at the first object that does not parse
//! (not ASN.1, or cut short): the objects before it are still checked.

use der_parser::ber::{parse_ber_recursive, BerObject, BerObjectContent, Tag};
use vigil_rules::Asn1;

/// Suricata's `asn1.max-frames` default: objects decoded per buffer and
/// nesting depth checked.
const MAX_FRAMES: usize = 30;

/// Whether `buf` holds an object `a` looks for; `last` is the end of the
/// previous match (`relative_offset` counts from it).
pub(super) fn matches(a: &Asn1, buf: &[u8], last: u32) -> bool {
    let offset = match (a.absolute_offset, a.relative_offset) {
        (Some(o), _) => u64::from(o),
        (None, Some(r)) => {
            let o = i64::from(last) + i64::from(r);
            // Suricata keeps the offset in 16 bits.
            if !(0..=i64::from(u16::MAX)).contains(&o) {
                return false;
            }
            o as u64
        }
        (None, None) => 0,
    };
    let Some(mut rest) = usize::try_from(offset).ok().and_then(|o| buf.get(o..)) else {
        return false;
    };
    if rest.is_empty() {
        return false;
    }
    let mut frames = 0;
    while !rest.is_empty() && frames < MAX_FRAMES {
        let Ok((next, obj)) = parse_ber_recursive(rest, MAX_FRAMES) else {
            break;
        };
        if check(&obj, a, MAX_FRAMES) {
            return true;
        }
        frames += 1;
        rest = next;
    }
    false
}

/// The object or one inside it (down to `depth` levels) is what `a` looks
/// for.
fn check(obj: &BerObject<'_>, a: &Asn1, depth: usize) -> bool {
    if depth == 0 {
        return false;
    }
    if check_one(obj, a) {
        return true;
    }
    obj.ref_iter().any(|o| check(o, a, depth - 1))
}

fn check_one(obj: &BerObject<'_>, a: &Asn1) -> bool {
    // An indefinite length (BER) counts as 0, as in Suricata.
    let len = obj.header.length().definite().unwrap_or(0);
    let data = obj.content.as_slice().unwrap_or(&[]);
    if let Some(max) = a.oversize_length {
        let max = max as usize;
        if len > max || data.len() > max {
            return true;
        }
    }
    let universal_primitive = obj.header.is_universal() && obj.header.is_primitive();
    if a.bitstring_overflow && universal_primitive && obj.header.tag() == Tag::BitString {
        // More unused bits than the string has.
        if let BerObjectContent::BitString(unused, _) = &obj.content {
            if len > 0 && usize::from(*unused) > len.saturating_mul(8) {
                return true;
            }
        }
    }
    if a.double_overflow && universal_primitive && obj.header.tag() == Tag::RealType {
        // A REAL in decimal encoding (first octet's two high bits clear)
        // longer than the 256 bytes MSASN1 copied it into.
        if len > 0 && data.first().is_some_and(|b| b & 0xc0 == 0) && (len > 256 || data.len() > 256)
        {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(f: impl FnOnce(&mut Asn1)) -> Asn1 {
        let mut a = Asn1::default();
        f(&mut a);
        a
    }

    #[test]
    fn oversize_length_at_any_depth() {
        // SEQUENCE { OCTET STRING (5 bytes) }
        let seq = [0x30, 0x07, 0x04, 0x05, 1, 2, 3, 4, 5];
        let a = opts(|a| a.oversize_length = Some(6));
        assert!(matches(&a, &seq, 0), "the sequence is 7 long");
        let a = opts(|a| a.oversize_length = Some(7));
        assert!(!matches(&a, &seq, 0));
        let a = opts(|a| a.oversize_length = Some(4));
        let inner_only = [0x04, 0x05, 1, 2, 3, 4, 5];
        assert!(matches(&a, &inner_only, 0));
    }

    #[test]
    fn offsets_absolute_and_relative() {
        let buf = [0xff, 0xff, 0x04, 0x03, 1, 2, 3];
        let a = opts(|a| {
            a.oversize_length = Some(2);
            a.absolute_offset = Some(2);
        });
        assert!(matches(&a, &buf, 0));
        let a = opts(|a| {
            a.oversize_length = Some(2);
            a.relative_offset = Some(1);
        });
        assert!(matches(&a, &buf, 1), "1 + 1 = 2");
        assert!(!matches(&a, &buf, 5), "1 + 5 = 6: not an object there");
        let a = opts(|a| {
            a.oversize_length = Some(2);
            a.relative_offset = Some(-3);
        });
        assert!(!matches(&a, &buf, 1), "before the buffer");
        assert!(!matches(&a, &buf, 70_000), "past the buffer");
    }

    #[test]
    fn bitstring_overflow() {
        // BIT STRING, length 2: unused-bits octet 0x20 (32 > 16 bits).
        let bad = [0x03, 0x02, 0x20, 0xff];
        let good = [0x03, 0x02, 0x07, 0x80];
        let a = opts(|a| a.bitstring_overflow = true);
        assert!(matches(&a, &bad, 0));
        assert!(matches(&a, &[0x03, 0x01, 0xff], 0), "255 unused bits of 8");
        assert!(!matches(&a, &good, 0));
        let a = opts(|a| a.double_overflow = true);
        assert!(!matches(&a, &bad, 0), "only the checks asked for");
    }

    #[test]
    fn double_overflow_needs_a_long_decimal_real() {
        let mut real = vec![0x09, 0x82, 0x01, 0x2c, 0x03];
        real.extend(std::iter::repeat_n(b'1', 299));
        let a = opts(|a| a.double_overflow = true);
        assert!(matches(&a, &real, 0), "decimal REAL of 300 bytes");
        let mut short = vec![0x09, 0x05, 0x03];
        short.extend_from_slice(b"1.25");
        assert!(!matches(&a, &short, 0));
    }

    #[test]
    fn garbage_and_truncated_input_never_match() {
        let a = opts(|a| {
            a.oversize_length = Some(0);
            a.bitstring_overflow = true;
            a.double_overflow = true;
        });
        assert!(!matches(&a, &[], 0));
        assert!(!matches(&a, &[0x30, 0x84, 0xff, 0xff, 0xff, 0xff], 0));
        let deep: Vec<u8> = std::iter::repeat_n([0x30u8, 0x80], 200).flatten().collect();
        let _ = matches(&a, &deep, 0);
        for n in 0..64u8 {
            let buf: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37).wrapping_add(n)).collect();
            let _ = matches(&a, &buf, u32::from(n));
        }
    }
}
