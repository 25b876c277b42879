//! EVE objects written straight to JSON text, with no tree.
//!
//! The transaction records of the busiest protocols (DNS, HTTP, TLS,
//! FTP, SMB, DCERPC) are written here on the worker: building a
//! `serde_json::Value` tree cost a `String` per key, a `BTreeMap` per
//! object and their frees, a tenth of a worker's time on real traffic.
//!
//! The text is what serialising the tree gave, byte for byte: members of
//! each object in key order (a `serde_json::Map` is a `BTreeMap`), and
//! strings escaped, numbers printed by serde_json itself. Members may be
//! written in any order: [`JsonText`] keeps where each one starts and
//! ends, and on closing an object puts them in key order when they are
//! not (most objects are written in order and only checked). A key
//! written twice keeps its last value, as `Map::insert` does. Keys
//! compare by their escaped bytes: the map's order for every key with
//! nothing to escape, which is all of the writers' keys.

use serde_json::ser::{CompactFormatter, Formatter};
use serde_json::Value;

/// One member of an open object: its key and its `"key":value` text.
#[derive(Clone, Copy)]
struct Member {
    /// The key's bytes (between the quotes) in `out`.
    key: (u32, u32),
    /// The member's text, `"key":value`, in `out`; `end` is set when the
    /// next member starts or the object closes.
    start: u32,
    end: u32,
}

enum Frame {
    Object {
        /// Where the members start (after `{`).
        content: usize,
        /// The object's first entry in `members`.
        base: usize,
    },
    Array {
        count: usize,
    },
}

/// A JSON text being written; see the module documentation.
pub struct JsonText {
    out: Vec<u8>,
    scratch: Scratch,
}

/// What a [`JsonText`] keeps of the objects it writes, reused by the
/// next one on the thread (no allocation per record once warm).
#[derive(Default)]
struct Scratch {
    frames: Vec<Frame>,
    members: Vec<Member>,
    /// For reordering an object's members.
    tmp: Vec<u8>,
}

thread_local! {
    static SPARE: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

impl Default for JsonText {
    fn default() -> Self {
        Self::new()
    }
}

impl JsonText {
    pub fn new() -> Self {
        let mut scratch = SPARE.with(|s| s.take());
        scratch.frames.clear();
        scratch.members.clear();
        JsonText {
            out: Vec::with_capacity(512),
            scratch,
        }
    }

    /// The text written. Only `&str` and serde_json's escaping reach the
    /// buffer, so it is UTF-8; were it not, it is decoded lossily rather
    /// than panicking.
    pub fn into_string(self) -> String {
        debug_assert!(self.scratch.frames.is_empty(), "unclosed JSON value");
        let JsonText { out, scratch } = self;
        SPARE.with(|s| *s.borrow_mut() = scratch);
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

    /// Before a value: the separator in an array.
    fn value_start(&mut self) {
        if let Some(Frame::Array { count }) = self.scratch.frames.last_mut() {
            if *count > 0 {
                self.out.push(b',');
            }
            *count += 1;
        }
    }

    /// Starts a member of the innermost object; its value follows.
    pub fn key(&mut self, k: &str) -> &mut Self {
        let Some(Frame::Object { base, .. }) = self.scratch.frames.last() else {
            debug_assert!(false, "a key outside an object");
            return self;
        };
        let at = self.out.len() as u32;
        if self.scratch.members.len() > *base {
            if let Some(prev) = self.scratch.members.last_mut() {
                prev.end = at;
            }
            self.out.push(b',');
        }
        let start = self.out.len() as u32;
        if k.bytes()
            .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
        {
            // A plain key (all of the writers' but the rare data-named
            // ones) needs no escaping.
            self.out.push(b'"');
            self.out.extend_from_slice(k.as_bytes());
            self.out.push(b'"');
        } else {
            self.escaped(k);
        }
        let key = (start + 1, self.out.len() as u32 - 1);
        self.out.push(b':');
        self.scratch.members.push(Member {
            key,
            start,
            end: start,
        });
        self
    }

    fn escaped(&mut self, s: &str) {
        // serde_json's escaping; writing to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.out, s);
    }

    pub fn str(&mut self, v: &str) -> &mut Self {
        self.value_start();
        self.escaped(v);
        self
    }

    /// Bytes as a string, invalid UTF-8 replaced (what
    /// `String::from_utf8_lossy` gives).
    pub fn lossy(&mut self, v: &[u8]) -> &mut Self {
        // Valid UTF-8 (nearly always) is checked by `from_utf8`'s
        // word-at-a-time ASCII path, faster than `from_utf8_lossy`'s
        // chunking, which is left for the rest.
        match std::str::from_utf8(v) {
            Ok(s) => self.str(s),
            Err(_) => self.str(&String::from_utf8_lossy(v)),
        }
    }

    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.value_start();
        let _ = CompactFormatter.write_u64(&mut self.out, v);
        self
    }

    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.value_start();
        let _ = CompactFormatter.write_i64(&mut self.out, v);
        self
    }

    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.value_start();
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        self
    }

    pub fn null(&mut self) -> &mut Self {
        self.value_start();
        self.out.extend_from_slice(b"null");
        self
    }

    /// A tree, serialised as serde_json does.
    pub fn value(&mut self, v: &Value) -> &mut Self {
        self.value_start();
        let _ = serde_json::to_writer(&mut self.out, v);
        self
    }

    /// An object, its members written by `f`.
    pub fn obj(&mut self, f: impl FnOnce(&mut Self)) -> &mut Self {
        self.open_obj();
        f(self);
        self.close_obj();
        self
    }

    /// An array, its values written by `f`.
    pub fn arr(&mut self, f: impl FnOnce(&mut Self)) -> &mut Self {
        self.value_start();
        self.out.push(b'[');
        self.scratch.frames.push(Frame::Array { count: 0 });
        f(self);
        self.scratch.frames.pop();
        self.out.push(b']');
        self
    }

    /// An array of strings.
    pub fn strs<S: AsRef<str>>(&mut self, v: impl IntoIterator<Item = S>) -> &mut Self {
        self.arr(|w| {
            for s in v {
                w.str(s.as_ref());
            }
        })
    }

    pub fn open_obj(&mut self) {
        self.value_start();
        self.out.push(b'{');
        self.scratch.frames.push(Frame::Object {
            content: self.out.len(),
            base: self.scratch.members.len(),
        });
    }

    pub fn close_obj(&mut self) {
        let Some(Frame::Object { content, base }) = self.scratch.frames.pop() else {
            debug_assert!(false, "closing an object that is not open");
            return;
        };
        let end = self.out.len() as u32;
        if let Some(last) = self
            .scratch
            .members
            .get_mut(base..)
            .and_then(|m| m.last_mut())
        {
            last.end = end;
        }
        self.order(content, base);
        self.scratch.members.truncate(base);
        self.out.push(b'}');
    }

    /// Puts the members of the object closing in key order (keeping the
    /// last of equal keys) when they are not already.
    fn order(&mut self, content: usize, base: usize) {
        let out = &self.out;
        let key = |m: &Member| &out[m.key.0 as usize..m.key.1 as usize];
        let ms = &mut self.scratch.members[base..];
        if ms.windows(2).all(|p| key(&p[0]) < key(&p[1])) {
            return;
        }
        // Stable: equal keys keep their order, and the last one stays.
        ms.sort_by(|a, b| key(a).cmp(key(b)));
        self.scratch.tmp.clear();
        let mut first = true;
        for (i, m) in ms.iter().enumerate() {
            if ms.get(i + 1).is_some_and(|n| key(n) == key(m)) {
                continue;
            }
            if !first {
                self.scratch.tmp.push(b',');
            }
            first = false;
            self.scratch
                .tmp
                .extend_from_slice(&out[m.start as usize..m.end as usize]);
        }
        self.out.truncate(content);
        self.out.extend_from_slice(&self.scratch.tmp);
    }

    // Members, key and value together.

    pub fn field_str(&mut self, k: &str, v: &str) -> &mut Self {
        self.key(k).str(v)
    }

    pub fn field_lossy(&mut self, k: &str, v: &[u8]) -> &mut Self {
        self.key(k).lossy(v)
    }

    pub fn field_u64(&mut self, k: &str, v: impl Into<u64>) -> &mut Self {
        self.key(k).u64(v.into())
    }

    pub fn field_i64(&mut self, k: &str, v: impl Into<i64>) -> &mut Self {
        self.key(k).i64(v.into())
    }

    pub fn field_bool(&mut self, k: &str, v: bool) -> &mut Self {
        self.key(k).bool(v)
    }

    pub fn field_value(&mut self, k: &str, v: &Value) -> &mut Self {
        self.key(k).value(v)
    }

    pub fn field_obj(&mut self, k: &str, f: impl FnOnce(&mut Self)) -> &mut Self {
        self.key(k).obj(f)
    }

    pub fn field_arr(&mut self, k: &str, f: impl FnOnce(&mut Self)) -> &mut Self {
        self.key(k).arr(f)
    }

    /// A member whose value is an array of byte strings (lossy), written
    /// only when there is at least one.
    pub fn field_lossy_list<'a>(
        &mut self,
        k: &str,
        v: impl IntoIterator<Item = &'a [u8]>,
    ) -> &mut Self {
        let mut v = v.into_iter().peekable();
        if v.peek().is_some() {
            self.field_arr(k, |w| {
                for b in v {
                    w.lossy(b);
                }
            });
        }
        self
    }

    pub fn field_strs<S: AsRef<str>>(
        &mut self,
        k: &str,
        v: impl IntoIterator<Item = S>,
    ) -> &mut Self {
        self.key(k).strs(v)
    }
}

/// An object written by `f`, as text.
pub fn object(f: impl FnOnce(&mut JsonText)) -> String {
    let mut w = JsonText::new();
    w.obj(f);
    w.into_string()
}

/// The tree of an object written as text (for callers that want a
/// `Value`; the text is what the engine logs).
pub fn tree(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_in_key_order_as_a_map_serialises() {
        let s = object(|w| {
            w.field_u64("version", 3u8)
                .field_str("type", "a\"b\\c\n\u{1}é")
                .field_bool("aa", true)
                .field_i64("neg", -5)
                .field_obj("z", |w| {
                    w.field_str("b", "x").field_str("a", "y");
                })
                .field_arr("answers", |w| {
                    w.obj(|w| {
                        w.field_str("rrname", "n").field_str("rdata", "1.2.3.4");
                    })
                    .str("s")
                    .u64(7)
                    .null();
                })
                .field_lossy("bytes", b"ok\xff")
                .field_value("tree", &json!({"b": 1, "a": [true]}))
                .field_lossy_list("none", std::iter::empty())
                .field_lossy_list("list", [&b"x"[..], b"\xfe"]);
        });
        let tree = json!({
            "version": 3, "type": "a\"b\\c\n\u{1}é", "aa": true, "neg": -5,
            "z": {"b": "x", "a": "y"},
            "answers": [{"rrname": "n", "rdata": "1.2.3.4"}, "s", 7, null],
            "bytes": "ok\u{fffd}", "tree": {"b": 1, "a": [true]}, "list": ["x", "\u{fffd}"],
        });
        assert_eq!(s, serde_json::to_string(&tree).unwrap());
        assert!(
            s.starts_with("{\"aa\":true,\"answers\":[{\"rdata\":"),
            "{s}"
        );
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        let s = object(|w| {
            w.field_u64("b", 1u8)
                .field_u64("a", 1u8)
                .field_u64("b", 2u8);
        });
        assert_eq!(s, r#"{"a":1,"b":2}"#);
        let s = object(|w| {
            w.field_u64("a", 1u8).field_u64("a", 2u8);
        });
        assert_eq!(s, r#"{"a":2}"#);
    }

    #[test]
    fn keys_are_ordered_by_their_bytes_shorter_first() {
        let s = object(|w| {
            w.field_u64("rrname_truncated", 1u8)
                .field_u64("rrname", 2u8)
                .field_u64("a", 3u8)
                .field_u64("A", 4u8)
                .field_obj("e", |_| {})
                .field_arr("d", |_| {});
        });
        assert_eq!(
            s,
            r#"{"A":4,"a":3,"d":[],"e":{},"rrname":2,"rrname_truncated":1}"#
        );
        assert_eq!(object(|_| {}), "{}");
    }
}
