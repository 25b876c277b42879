//! Response body content decoding (gzip, deflate) with a cap on what is
//! inflated.

use std::io::Write;

use flate2::write::{DeflateDecoder, GzDecoder, ZlibDecoder};

/// A sink that keeps at most `cap` bytes and counts the rest, so that one
/// small compressed write can never allocate without bound.
pub(crate) struct CappedSink {
    pub buf: Vec<u8>,
    pub cap: usize,
    pub produced: u64,
}

impl Write for CappedSink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.produced = self.produced.saturating_add(data.len() as u64);
        let room = self.cap.saturating_sub(self.buf.len());
        let n = room.min(data.len());
        self.buf.extend_from_slice(&data[..n]);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Coding {
    Gzip,
    Deflate,
}

enum Inflater {
    /// Deflate whose first two bytes are not yet known: zlib-wrapped or raw.
    Undecided(Vec<u8>),
    Gzip(GzDecoder<CappedSink>),
    Zlib(ZlibDecoder<CappedSink>),
    Raw(DeflateDecoder<CappedSink>),
    Failed,
}

/// Result of feeding compressed bytes.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct InflateOutcome {
    pub failed: bool,
    pub limit_hit: bool,
}

/// Streaming decoder for one body. `take()` hands out what was inflated so
/// far; the total inflated is bounded by `limit`.
pub(crate) struct BodyDecoder {
    inflater: Inflater,
    limit: usize,
    delivered: u64,
    limit_hit: bool,
}

impl BodyDecoder {
    pub fn new(coding: Coding, limit: usize) -> Self {
        let inflater = match coding {
            Coding::Gzip => Inflater::Gzip(GzDecoder::new(Self::sink(limit))),
            Coding::Deflate => Inflater::Undecided(Vec::new()),
        };
        BodyDecoder {
            inflater,
            limit,
            delivered: 0,
            limit_hit: false,
        }
    }

    fn sink(limit: usize) -> CappedSink {
        CappedSink {
            buf: Vec::new(),
            cap: limit,
            produced: 0,
        }
    }

    /// Feeds compressed bytes and appends newly inflated bytes to `out`.
    pub fn feed(&mut self, data: &[u8], out: &mut Vec<u8>) -> InflateOutcome {
        let outcome = InflateOutcome::default();
        if self.limit_hit {
            return outcome;
        }
        if let Inflater::Undecided(head) = &mut self.inflater {
            head.extend_from_slice(data);
            if head.len() < 2 {
                return outcome;
            }
            let (b0, b1) = (head[0], head[1]);
            let zlib = b0 & 0x0f == 8 && (u16::from(b0) << 8 | u16::from(b1)) % 31 == 0;
            let head = std::mem::take(head);
            self.inflater = if zlib {
                Inflater::Zlib(ZlibDecoder::new(Self::sink(self.limit)))
            } else {
                Inflater::Raw(DeflateDecoder::new(Self::sink(self.limit)))
            };
            return self.write(&head, out);
        }
        self.write(data, out)
    }

    fn write(&mut self, data: &[u8], out: &mut Vec<u8>) -> InflateOutcome {
        let mut outcome = InflateOutcome::default();
        let (res, sink) = match &mut self.inflater {
            // Output stays inside the decoder until a flush.
            Inflater::Gzip(d) => (d.write_all(data).and_then(|_| d.flush()), d.get_mut()),
            Inflater::Zlib(d) => (d.write_all(data).and_then(|_| d.flush()), d.get_mut()),
            Inflater::Raw(d) => (d.write_all(data).and_then(|_| d.flush()), d.get_mut()),
            Inflater::Undecided(_) | Inflater::Failed => return outcome,
        };
        out.extend_from_slice(&sink.buf);
        self.delivered += sink.buf.len() as u64;
        sink.buf.clear();
        sink.cap = self.limit.saturating_sub(self.delivered as usize);
        if sink.produced >= self.limit as u64 {
            self.limit_hit = true;
            outcome.limit_hit = true;
        }
        if res.is_err() {
            self.inflater = Inflater::Failed;
            outcome.failed = true;
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
    use flate2::Compression;

    fn roundtrip(coding: Coding, compressed: &[u8], limit: usize) -> (Vec<u8>, InflateOutcome) {
        let mut d = BodyDecoder::new(coding, limit);
        let mut out = Vec::new();
        let mut last = InflateOutcome::default();
        for b in compressed.chunks(1) {
            let o = d.feed(b, &mut out);
            last.failed |= o.failed;
            last.limit_hit |= o.limit_hit;
        }
        (out, last)
    }

    #[test]
    fn gzip_zlib_raw() {
        let text = b"hello hello hello world".repeat(10);
        let mut g = GzEncoder::new(Vec::new(), Compression::default());
        g.write_all(&text).unwrap();
        let g = g.finish().unwrap();
        assert_eq!(roundtrip(Coding::Gzip, &g, 1 << 20).0, text);
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(&text).unwrap();
        assert_eq!(
            roundtrip(Coding::Deflate, &z.finish().unwrap(), 1 << 20).0,
            text
        );
        let mut r = DeflateEncoder::new(Vec::new(), Compression::default());
        r.write_all(&text).unwrap();
        assert_eq!(
            roundtrip(Coding::Deflate, &r.finish().unwrap(), 1 << 20).0,
            text
        );
    }

    #[test]
    fn bomb_is_capped() {
        let zeros = vec![0u8; 10 << 20];
        let mut g = GzEncoder::new(Vec::new(), Compression::best());
        g.write_all(&zeros).unwrap();
        let g = g.finish().unwrap();
        let (out, o) = roundtrip(Coding::Gzip, &g, 4096);
        assert_eq!(out.len(), 4096);
        assert!(o.limit_hit);
    }

    #[test]
    fn garbage_fails() {
        let (_, o) = roundtrip(Coding::Gzip, b"not gzip at all, sorry", 1024);
        assert!(o.failed);
    }
}
