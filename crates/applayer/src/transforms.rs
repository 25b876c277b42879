//! The rule transforms ET Open uses, as pure functions over byte buffers,
//! with Suricata's semantics (`detect-transform-*.c`).
//!
//! A transform that cannot apply (no match for `pcrexform`, nothing
//! decoded by `from_base64`) leaves the buffer as it was, as Suricata does.

use md5::{Digest as _, Md5};
use sha1::Sha1;
use sha2::Sha256;

/// `isspace()` in the C locale.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `dotprefix`: a `.` in front (so `.example.com` matches whole labels).
pub fn dotprefix(input: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(input.len() + 1);
    v.push(b'.');
    v.extend_from_slice(input);
    v
}

/// `domain` (Suricata 8): the registrable domain of a host name by the
/// Public Suffix List (`www.example.co.uk` -> `example.co.uk`), with
/// Suricata's `psl` crate. A name with no registrable domain (a bare
/// public suffix such as `co.uk`, an empty label) leaves the buffer empty;
/// a suffix the list does not know counts as a one-label suffix (the
/// list's default `*` rule), so `a.b.unknowntld` gives `b.unknowntld`.
pub fn domain(input: &[u8]) -> Vec<u8> {
    if input.is_empty() {
        return Vec::new();
    }
    psl::domain(input).map_or_else(Vec::new, |d| d.as_bytes().to_vec())
}

/// `tld` (Suricata 8): the public suffix of a host name's registrable
/// domain (`www.example.co.uk` -> `co.uk`). As in Suricata, the name must
/// have a registrable domain: a bare suffix (`co.uk`) leaves the buffer
/// empty.
pub fn tld(input: &[u8]) -> Vec<u8> {
    if input.is_empty() {
        return Vec::new();
    }
    psl::domain(input).map_or_else(Vec::new, |d| d.suffix().as_bytes().to_vec())
}

/// `strip_whitespace`: every whitespace byte removed.
pub fn strip_whitespace(input: &[u8]) -> Vec<u8> {
    input.iter().copied().filter(|&c| !is_space(c)).collect()
}

/// `compress_whitespace`: each run of whitespace reduced to its first byte.
pub fn compress_whitespace(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    let mut prev_space = false;
    for &c in input {
        let sp = is_space(c);
        if !(sp && prev_space) {
            out.push(c);
        }
        prev_space = sp;
    }
    out
}

pub fn to_lowercase(input: &[u8]) -> Vec<u8> {
    input.to_ascii_lowercase()
}

pub fn to_uppercase(input: &[u8]) -> Vec<u8> {
    input.to_ascii_uppercase()
}

/// `url_decode`: `%XX` decoded and `+` to space; invalid escapes kept.
pub fn url_decode(input: &[u8]) -> Vec<u8> {
    let plus: Vec<u8> = input
        .iter()
        .map(|&c| if c == b'+' { b' ' } else { c })
        .collect();
    crate::http::uri::percent_decode(&plus)
}

/// `to_md5`: the 16 raw digest bytes.
pub fn to_md5(input: &[u8]) -> Vec<u8> {
    Md5::digest(input).to_vec()
}

/// `to_sha1`: the 20 raw digest bytes.
pub fn to_sha1(input: &[u8]) -> Vec<u8> {
    Sha1::digest(input).to_vec()
}

/// `to_sha256`: the 32 raw digest bytes.
pub fn to_sha256(input: &[u8]) -> Vec<u8> {
    Sha256::digest(input).to_vec()
}

/// `xor:"key"`: each byte XORed with the key, cycling.
pub fn xor(input: &[u8], key: &[u8]) -> Vec<u8> {
    if key.is_empty() {
        return input.to_vec();
    }
    input
        .iter()
        .zip(key.iter().cycle())
        .map(|(a, b)| a ^ b)
        .collect()
}

/// `xor: offset O, extract N K`: the key is the `N` bytes at `K` of the
/// buffer itself; the bytes from `O` on are XORed with it (those before
/// `O` are kept). A key out of the buffer empties it.
pub fn xor_extract(input: &[u8], offset: usize, key_len: usize, key_at: usize) -> Vec<u8> {
    let Some(key) = key_at
        .checked_add(key_len)
        .and_then(|end| input.get(key_at..end))
    else {
        return Vec::new();
    };
    let start = offset.min(input.len());
    let mut out = input[..start].to_vec();
    out.extend_from_slice(&xor(&input[start..], key));
    out
}

/// `subslice: offset[, nbytes][, truncate]` (Suricata 8). A negative
/// offset counts from the end, a negative `nbytes` ends that many bytes
/// before the end. Out of range gives an empty buffer, unless `truncate`
/// clamps the bounds to the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subslice {
    pub offset: i64,
    pub nbytes: Option<i64>,
    pub truncate: bool,
}

pub fn subslice(input: &[u8], s: &Subslice) -> Vec<u8> {
    let len = input.len() as i64;
    let mut start = if s.offset < 0 {
        len + s.offset
    } else {
        s.offset
    };
    if start < 0 {
        if !s.truncate {
            return Vec::new();
        }
        start = 0;
    }
    if start > len {
        return Vec::new();
    }
    let mut end = match s.nbytes {
        None => len,
        Some(n) if n < 0 => len + n,
        Some(n) => start + n,
    };
    if end > len {
        if !s.truncate {
            return Vec::new();
        }
        end = len;
    }
    if end <= start {
        return Vec::new();
    }
    input[start as usize..end as usize].to_vec()
}

/// `gunzip` / `zlib_deflate`: the inflated buffer, at most `max` bytes;
/// what inflated before an error is kept.
pub fn decompress(input: &[u8], gzip: bool, max: usize) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    let reader: Box<dyn Read> = if gzip {
        Box::new(flate2::bufread::GzDecoder::new(input))
    } else {
        Box::new(flate2::bufread::ZlibDecoder::new(input))
    };
    let _ = reader.take(max as u64).read_to_end(&mut out);
    out
}

/// `from_base64` decoding modes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Base64Mode {
    /// Stop at the first byte outside the alphabet (the default).
    #[default]
    Rfc4648,
    /// Skip bytes outside the alphabet (MIME).
    Rfc2045,
    /// Fail on any byte outside the alphabet.
    Strict,
}

/// `from_base64` options: `bytes`, `offset`, `mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Base64Options {
    pub bytes: Option<usize>,
    pub offset: usize,
    pub mode: Base64Mode,
}

fn b64val(c: u8) -> Option<u8> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    })
}

/// Base64 decoding with Suricata's modes; `None` when nothing decoded (or
/// strict mode met a bad byte).
pub fn base64_decode(input: &[u8], mode: Base64Mode) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(input.len() / 4 * 3 + 3);
    base64_decode_into(input, mode, &mut out).then_some(out)
}

/// [`base64_decode`] appending to `out` (a reused buffer: no allocation
/// once it is large enough); `false` when nothing decoded (or strict
/// mode met a bad byte, in which case `out` is left as it was).
pub fn base64_decode_into(input: &[u8], mode: Base64Mode, out: &mut Vec<u8>) -> bool {
    let start = out.len();
    let mut acc: u32 = 0;
    let mut n = 0;
    for &c in input {
        if c == b'=' {
            break;
        }
        match b64val(c) {
            Some(v) => {
                acc = acc << 6 | u32::from(v);
                n += 1;
                if n == 4 {
                    out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]);
                    acc = 0;
                    n = 0;
                }
            }
            None => match mode {
                Base64Mode::Rfc2045 => continue,
                Base64Mode::Rfc4648 => break,
                Base64Mode::Strict => {
                    out.truncate(start);
                    return false;
                }
            },
        }
    }
    match n {
        2 => out.push((acc >> 4) as u8),
        3 => out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]),
        _ => {}
    }
    out.len() > start
}

/// `from_base64`: decodes `bytes` bytes from `offset`; the buffer is kept
/// when nothing decodes.
pub fn from_base64(input: &[u8], opts: &Base64Options) -> Vec<u8> {
    let start = opts.offset.min(input.len());
    let end = match opts.bytes {
        Some(b) => start.saturating_add(b).min(input.len()),
        None => input.len(),
    };
    base64_decode(&input[start..end], opts.mode).unwrap_or_else(|| input.to_vec())
}

/// `strip_pseudo_headers`: drops `\r\n`-separated lines that start with
/// `:` (HTTP/2 pseudo headers).
pub fn strip_pseudo_headers(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    let mut rest = input;
    while !rest.is_empty() {
        let (line, next) = match memchr::memmem::find(rest, b"\r\n") {
            Some(i) => (&rest[..i + 2], &rest[i + 2..]),
            None => (rest, &b""[..]),
        };
        if line.first() != Some(&b':') {
            out.extend_from_slice(line);
        }
        rest = next;
    }
    out
}

/// `header_lowercase`: header names (up to the first `:` of each line)
/// lower-cased, values untouched.
pub fn header_lowercase(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    let mut in_name = true;
    for &c in input {
        if in_name {
            if c == b':' {
                in_name = false;
            }
            out.push(c.to_ascii_lowercase());
        } else {
            if c == b'\n' {
                in_name = true;
            }
            out.push(c);
        }
    }
    out
}

/// `pcrexform`: the first capture group of a PCRE match replaces the
/// buffer.
#[derive(Clone, Debug)]
pub struct Pcrexform {
    re: pcre2::bytes::Regex,
}

/// A `pcrexform` pattern that does not compile or has no capture group.
#[derive(Debug, thiserror::Error)]
pub enum PcrexformError {
    #[error("pcrexform: {0}")]
    Compile(#[from] pcre2::Error),
    #[error("pcrexform: the expression needs a capture group")]
    NoCapture,
}

impl Pcrexform {
    pub fn new(pattern: &str) -> Result<Self, PcrexformError> {
        let re = pcre2::bytes::RegexBuilder::new()
            .jit_if_available(true)
            .build(pattern)?;
        if re.captures_len() < 2 {
            return Err(PcrexformError::NoCapture);
        }
        Ok(Pcrexform { re })
    }

    /// The first capture of the first match, or the input when there is
    /// none.
    pub fn apply(&self, input: &[u8]) -> Vec<u8> {
        match self.re.captures(input) {
            Ok(Some(c)) => match c.get(1) {
                Some(m) => m.as_bytes().to_vec(),
                None => input.to_vec(),
            },
            _ => input.to_vec(),
        }
    }
}

/// One transform with its options, as a rule lists them.
#[derive(Clone, Debug)]
pub enum Transform {
    DotPrefix,
    Domain,
    Tld,
    StripWhitespace,
    CompressWhitespace,
    ToLowercase,
    ToUppercase,
    UrlDecode,
    ToMd5,
    ToSha1,
    ToSha256,
    Xor(Vec<u8>),
    FromBase64(Base64Options),
    StripPseudoHeaders,
    HeaderLowercase,
    Pcrexform(Pcrexform),
    /// `xor` with a key taken from the buffer: offset, key length, key
    /// position.
    XorExtract(usize, usize, usize),
    Subslice(Subslice),
    Gunzip(usize),
    ZlibDeflate(usize),
}

impl Transform {
    pub fn apply(&self, input: &[u8]) -> Vec<u8> {
        match self {
            Transform::DotPrefix => dotprefix(input),
            Transform::Domain => domain(input),
            Transform::Tld => tld(input),
            Transform::StripWhitespace => strip_whitespace(input),
            Transform::CompressWhitespace => compress_whitespace(input),
            Transform::ToLowercase => to_lowercase(input),
            Transform::ToUppercase => to_uppercase(input),
            Transform::UrlDecode => url_decode(input),
            Transform::ToMd5 => to_md5(input),
            Transform::ToSha1 => to_sha1(input),
            Transform::ToSha256 => to_sha256(input),
            Transform::Xor(k) => xor(input, k),
            Transform::FromBase64(o) => from_base64(input, o),
            Transform::StripPseudoHeaders => strip_pseudo_headers(input),
            Transform::HeaderLowercase => header_lowercase(input),
            Transform::Pcrexform(p) => p.apply(input),
            Transform::XorExtract(o, n, k) => xor_extract(input, *o, *n, *k),
            Transform::Subslice(s) => subslice(input, s),
            Transform::Gunzip(m) => decompress(input, true, *m),
            Transform::ZlibDeflate(m) => decompress(input, false, *m),
        }
    }
}

/// Applies a chain of transforms in order.
pub fn apply_all(transforms: &[Transform], input: &[u8]) -> Vec<u8> {
    let mut buf = input.to_vec();
    for t in transforms {
        buf = t.apply(&buf);
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_transforms() {
        assert_eq!(dotprefix(b"example.com"), b".example.com");
        assert_eq!(strip_whitespace(b" a \t b\r\n"), b"ab");
        assert_eq!(compress_whitespace(b"a  \t b\r\n\r\nc"), b"a b\rc");
        assert_eq!(to_lowercase(b"AbC"), b"abc");
        assert_eq!(to_uppercase(b"AbC"), b"ABC");
        assert_eq!(url_decode(b"a%20b+c%zz"), b"a b c%zz");
        assert_eq!(xor(b"\x01\x02\x03", b"\x01\x01"), b"\x00\x03\x02");
        assert_eq!(
            crate::hex_lower(&to_md5(b"abc")),
            "900150983cd24fb0d6963f7d28e17f72"
        );
        assert_eq!(
            crate::hex_lower(&to_sha1(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            crate::hex_lower(&to_sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn domain_and_tld() {
        let cases: &[(&[u8], &[u8], &[u8])] = &[
            (b"www.example.com", b"example.com", b"com"),
            (b"example.com", b"example.com", b"com"),
            (b"a.b.example.co.uk", b"example.co.uk", b"co.uk"),
            (b"webshop.oisf.net", b"oisf.net", b"net"),
            // A bare public suffix has no registrable domain.
            (b"co.uk", b"", b""),
            (b"com", b"", b""),
            // Unknown suffix: the list's default rule (one label).
            (b"a.b.unknowntld", b"b.unknowntld", b"unknowntld"),
            // Wildcard and private rules of the list.
            (
                b"x.execute-api.cn-north-1.amazonaws.com.cn",
                b"x.execute-api.cn-north-1.amazonaws.com.cn",
                b"execute-api.cn-north-1.amazonaws.com.cn",
            ),
            (b"", b"", b""),
            (b"..", b"", b""),
            (b".", b"", b""),
        ];
        for (input, d, t) in cases {
            assert_eq!(
                domain(input),
                *d,
                "domain of {:?}",
                String::from_utf8_lossy(input)
            );
            assert_eq!(
                tld(input),
                *t,
                "tld of {:?}",
                String::from_utf8_lossy(input)
            );
        }
        // Any bytes: never a panic.
        for input in [&b"\xff\xfe.\x00"[..], b"a..b", b"-.-", &[b'a'; 300]] {
            let _ = domain(input);
            let _ = tld(input);
        }
    }

    #[test]
    fn base64() {
        let o = Base64Options::default();
        assert_eq!(from_base64(b"SGVsbG8=", &o), b"Hello");
        assert_eq!(from_base64(b"SGVsbG8", &o), b"Hello");
        assert_eq!(from_base64(b"SGVs bG8=", &o), b"Hel");
        let mime = Base64Options {
            mode: Base64Mode::Rfc2045,
            ..o
        };
        assert_eq!(from_base64(b"SGVs\r\nbG8=", &mime), b"Hello");
        let strict = Base64Options {
            mode: Base64Mode::Strict,
            ..o
        };
        assert_eq!(from_base64(b"SGVs bG8=", &strict), b"SGVs bG8=");
        let off = Base64Options {
            offset: 4,
            bytes: Some(8),
            ..o
        };
        assert_eq!(from_base64(b"xxxxSGVsbG8=yyyy", &off), b"Hello");
    }

    #[test]
    fn subslice_bounds() {
        let ua = b"curl/7.64.1";
        let s = |offset, nbytes, truncate| {
            let v = subslice(
                ua,
                &Subslice {
                    offset,
                    nbytes,
                    truncate,
                },
            );
            String::from_utf8(v).unwrap()
        };
        assert_eq!(s(-6, None, false), "7.64.1");
        assert_eq!(s(-10, Some(3), false), "url");
        assert_eq!(s(1, Some(-3), false), "url/7.6");
        assert_eq!(s(0, Some(13), false), "");
        assert_eq!(s(1, Some(30), true), "url/7.64.1");
        assert_eq!(s(-20, None, false), "");
        assert_eq!(s(-20, Some(5), true), "curl/");
        assert_eq!(s(0, Some(-30), true), "");
        assert_eq!(s(-11, Some(-6), true), "curl/");
        assert_eq!(s(20, Some(2), true), "");
    }

    #[test]
    fn xor_with_extracted_key() {
        assert_eq!(xor_extract(b"/0@QDX", 2, 1, 1), b"/0path");
        assert_eq!(xor_extract(b"abc", 0, 1, 200), b"");
    }

    #[test]
    fn inflate() {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b"This is compressed").unwrap();
        let gz = e.finish().unwrap();
        assert_eq!(decompress(&gz, true, 1024), b"This is compressed");
        assert_eq!(decompress(&gz, true, 8), b"This is ");
        assert_eq!(decompress(b"junk", true, 8), b"");
    }

    #[test]
    fn header_transforms() {
        assert_eq!(
            strip_pseudo_headers(b":method: GET\r\nHost: x\r\n:path: /\r\nA: b\r\n"),
            b"Host: x\r\nA: b\r\n"
        );
        assert_eq!(
            header_lowercase(b"Host: X\r\nUser-Agent: Moz\r\n"),
            b"host: X\r\nuser-agent: Moz\r\n"
        );
    }

    #[test]
    fn pcrexform() {
        let p = Pcrexform::new(r"id=(\d+)").unwrap();
        assert_eq!(p.apply(b"/x?id=1234&y"), b"1234");
        assert_eq!(p.apply(b"nothing"), b"nothing");
        assert!(Pcrexform::new("nocapture").is_err());
    }
}
