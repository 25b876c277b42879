//! URI parsing and normalisation as libhtp does it under Suricata's default
//! (IDS) personality.
//!
//! The normalised form (`http.uri`) is path, `?query` and `#fragment` of
//! the request URI, never scheme or authority (`uri-include-all: no`).
//! The path is percent-decoded (`%XX`, `%uXXXX`; invalid escapes are kept),
//! backslashes become slashes, runs of slashes are compressed and dot
//! segments are removed (RFC 3986 §5.2.4). The query is percent-decoded
//! as libhtp's `htp_decode_query_inplace` does (`+` stays `+`: Suricata's
//! `query-plusspace-decode` is off by default). The fragment is
//! percent-decoded.
//!
//! Not done: libhtp's best-fit mapping of UTF-8 sequences in the path.

/// The parts of a request URI, borrowed from the raw form.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct UriParts<'a> {
    pub hostname: Option<&'a [u8]>,
    pub port: Option<&'a [u8]>,
    pub path: &'a [u8],
    pub query: Option<&'a [u8]>,
    pub fragment: Option<&'a [u8]>,
}

/// Splits a request-target into its parts. `authority_form` is set for
/// `CONNECT host:port`.
pub(crate) fn split_uri(uri: &[u8], authority_form: bool) -> UriParts<'_> {
    let mut parts = UriParts::default();
    if authority_form {
        let (h, p) = split_host_port(uri);
        parts.hostname = Some(h);
        parts.port = p;
        return parts;
    }
    let mut rest = uri;
    // Absolute form: scheme "://" authority.
    if let Some(pos) = find(rest, b"://") {
        let scheme = &rest[..pos];
        if !scheme.is_empty()
            && scheme
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
        {
            let after = &rest[pos + 3..];
            let end = after
                .iter()
                .position(|&c| matches!(c, b'/' | b'?' | b'#'))
                .unwrap_or(after.len());
            let authority = &after[..end];
            // Userinfo is dropped.
            let hostport = match authority.iter().rposition(|&c| c == b'@') {
                Some(at) => &authority[at + 1..],
                None => authority,
            };
            let (h, p) = split_host_port(hostport);
            parts.hostname = Some(h);
            parts.port = p;
            rest = &after[end..];
        }
    }
    let frag_at = rest.iter().position(|&c| c == b'#');
    let (before_frag, fragment) = match frag_at {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let (path, query) = match before_frag.iter().position(|&c| c == b'?') {
        Some(i) => (&before_frag[..i], Some(&before_frag[i + 1..])),
        None => (before_frag, None),
    };
    parts.path = path;
    parts.query = query;
    parts.fragment = fragment;
    parts
}

/// Splits `host[:port]`, `[v6]:port` into host and port.
pub(crate) fn split_host_port(s: &[u8]) -> (&[u8], Option<&[u8]>) {
    let s = trim(s);
    if s.first() == Some(&b'[') {
        if let Some(end) = s.iter().position(|&c| c == b']') {
            let host = &s[..=end];
            let rest = &s[end + 1..];
            return match rest.strip_prefix(b":") {
                Some(p) => (host, Some(p)),
                None => (host, None),
            };
        }
        return (s, None);
    }
    match s.iter().rposition(|&c| c == b':') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    }
}

/// Lower-cases a hostname and drops trailing dots (libhtp's
/// `htp_normalize_hostname_inplace`).
pub(crate) fn normalize_hostname(h: &[u8]) -> Vec<u8> {
    let mut v: Vec<u8> = h.iter().map(|c| c.to_ascii_lowercase()).collect();
    while v.last() == Some(&b'.') {
        v.pop();
    }
    v
}

/// Builds the normalised URI (`http.uri`).
pub(crate) fn normalize_uri(uri: &[u8], authority_form: bool) -> Vec<u8> {
    let parts = split_uri(uri, authority_form);
    if authority_form {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(uri.len());
    let path = if parts.path.is_empty() && parts.hostname.is_some() {
        &b"/"[..]
    } else {
        parts.path
    };
    let decoded = decode_path(path);
    out.extend_from_slice(&remove_dot_segments(&decoded));
    if let Some(q) = parts.query {
        out.push(b'?');
        out.extend_from_slice(&percent_decode(q));
    }
    if let Some(f) = parts.fragment {
        out.push(b'#');
        out.extend_from_slice(&percent_decode(f));
    }
    out
}

/// The value of a hex digit.
pub(crate) fn hexval(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Plain `%XX` decoding; invalid escapes are kept as they are.
pub(crate) fn percent_decode(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' && i + 2 < s.len() {
            if let (Some(h), Some(l)) = (hexval(s[i + 1]), hexval(s[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(s[i]);
        i += 1;
    }
    out
}

/// Best-fit mapping for `%uXXXX` code points beyond Latin-1 (libhtp maps
/// the full-width ASCII block; everything else becomes `?`).
fn bestfit(cp: u16) -> u8 {
    if cp < 0x100 {
        return cp as u8;
    }
    if (0xff01..=0xff5e).contains(&cp) {
        return (cp - 0xff01) as u8 + 0x21;
    }
    b'?'
}

/// Path decoding with the IDS personality: `%XX`, `%uXXXX`, backslash to
/// slash, slash runs compressed.
pub(crate) fn decode_path(s: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let mut c = s[i];
        let mut adv = 1;
        if c == b'%' {
            let next = s.get(i + 1).copied();
            if matches!(next, Some(b'u') | Some(b'U')) {
                if let Some(hex) = s.get(i + 2..i + 6) {
                    if hex.iter().all(|&h| hexval(h).is_some()) {
                        let cp = hex
                            .iter()
                            .fold(0u16, |acc, &h| acc << 4 | hexval(h).unwrap_or(0) as u16);
                        c = bestfit(cp);
                        adv = 6;
                    }
                }
            } else if let Some(&[h, l]) = s.get(i + 1..i + 3) {
                if let (Some(h), Some(l)) = (hexval(h), hexval(l)) {
                    c = h << 4 | l;
                    adv = 3;
                }
            }
        }
        if c == b'\\' {
            c = b'/';
        }
        if c == b'/' && out.last() == Some(&b'/') {
            // compress separators
        } else {
            out.push(c);
        }
        i += adv;
    }
    out
}

/// RFC 3986 §5.2.4 dot-segment removal.
pub(crate) fn remove_dot_segments(input: &[u8]) -> Vec<u8> {
    let mut inp = input;
    let mut out: Vec<u8> = Vec::with_capacity(input.len());
    while !inp.is_empty() {
        if let Some(r) = inp.strip_prefix(b"../") {
            inp = r;
        } else if let Some(r) = inp.strip_prefix(b"./") {
            inp = r;
        } else if inp.starts_with(b"/./") {
            inp = &inp[2..];
        } else if inp == b"/." {
            inp = b"/";
        } else if inp.starts_with(b"/../") || inp == b"/.." {
            inp = if inp.len() == 3 { b"/" } else { &inp[3..] };
            match out.iter().rposition(|&c| c == b'/') {
                Some(p) => out.truncate(p),
                None => out.clear(),
            }
        } else if inp == b"." || inp == b".." {
            inp = b"";
        } else {
            let start = usize::from(inp[0] == b'/');
            let end = inp[start..]
                .iter()
                .position(|&c| c == b'/')
                .map(|p| p + start)
                .unwrap_or(inp.len());
            out.extend_from_slice(&inp[..end]);
            inp = &inp[end..];
        }
    }
    out
}

pub(crate) fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c))
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c))
        .map(|p| p + 1)
        .unwrap_or(start);
    &s[start..end.max(start)]
}

pub(crate) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_like_libhtp() {
        let n = |u: &str| String::from_utf8(normalize_uri(u.as_bytes(), false)).unwrap();
        assert_eq!(n("/a/./b/../c"), "/a/c");
        assert_eq!(n("/a//b///c"), "/a/b/c");
        assert_eq!(n("/%41%2f%2e%2e/x"), "/x");
        // libhtp decodes the query too; `+` is not a space by default.
        assert_eq!(n("/a%20b?q=%41+%2B"), "/a b?q=A++");
        assert_eq!(n("/%zz%4"), "/%zz%4");
        assert_eq!(n("/a\\b"), "/a/b");
        assert_eq!(n("/%u0041%uff21"), "/AA");
        assert_eq!(n("http://Host:80/x/../y?z"), "/y?z");
        assert_eq!(n("http://host"), "/");
        assert_eq!(n("/../../etc/passwd"), "/etc/passwd");
        assert_eq!(n("/p#fr%41g"), "/p#frAg");
    }

    #[test]
    fn host_port() {
        assert_eq!(
            split_host_port(b"Example.com:8080"),
            (&b"Example.com"[..], Some(&b"8080"[..]))
        );
        assert_eq!(
            split_host_port(b"[::1]:80"),
            (&b"[::1]"[..], Some(&b"80"[..]))
        );
        assert_eq!(normalize_hostname(b"WWW.Example.COM."), b"www.example.com");
    }
}
