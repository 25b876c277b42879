//! Minimal pcap and pcapng writers, for tests and the demo.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Link types (<https://www.tcpdump.org/linktypes.html>).
pub const LINKTYPE_NULL: u32 = 0;
pub const LINKTYPE_ETHERNET: u32 = 1;
pub const LINKTYPE_RAW: u32 = 101;
pub const LINKTYPE_LINUX_SLL: u32 = 113;
pub const LINKTYPE_IPV4: u32 = 228;
pub const LINKTYPE_IPV6: u32 = 229;

/// A timestamp as (seconds since the epoch, fraction). For [`PcapWriter`]
/// the fraction is in the file's unit: microseconds unless the writer was
/// made with `nanos: true`.
pub type Ts = (i64, u32);

/// Layout of a classic pcap file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcapFormat {
    /// Nanosecond magic (0xa1b23c4d) instead of microsecond (0xa1b2c3d4).
    pub nanos: bool,
    /// Big-endian headers instead of little-endian.
    pub big_endian: bool,
    pub snaplen: u32,
}

impl Default for PcapFormat {
    fn default() -> Self {
        PcapFormat {
            nanos: false,
            big_endian: false,
            snaplen: 262_144,
        }
    }
}

/// Writes a classic pcap file.
pub struct PcapWriter<W: Write> {
    w: W,
    format: PcapFormat,
}

impl<W: Write> PcapWriter<W> {
    /// Little-endian, microsecond pcap with the given link type.
    pub fn new(w: W, linktype: u32) -> io::Result<Self> {
        Self::with_format(w, linktype, PcapFormat::default())
    }

    pub fn with_format(mut w: W, linktype: u32, format: PcapFormat) -> io::Result<Self> {
        let magic: u32 = if format.nanos {
            0xa1b2_3c4d
        } else {
            0xa1b2_c3d4
        };
        let mut h = Vec::with_capacity(24);
        let be = format.big_endian;
        put32(&mut h, be, magic);
        put16(&mut h, be, 2);
        put16(&mut h, be, 4);
        put32(&mut h, be, 0); // thiszone
        put32(&mut h, be, 0); // sigfigs
        put32(&mut h, be, format.snaplen);
        put32(&mut h, be, linktype);
        w.write_all(&h)?;
        Ok(PcapWriter { w, format })
    }

    /// Writes one record; `ts.1` is micro- or nanoseconds per the format.
    pub fn write_packet(&mut self, ts: Ts, data: &[u8]) -> io::Result<()> {
        self.write_record(ts, data, data.len() as u32)
    }

    /// Writes one record whose original length may exceed the captured data.
    pub fn write_record(&mut self, ts: Ts, data: &[u8], orig_len: u32) -> io::Result<()> {
        let be = self.format.big_endian;
        let mut h = Vec::with_capacity(16);
        put32(&mut h, be, ts.0 as u32);
        put32(&mut h, be, ts.1);
        put32(&mut h, be, data.len() as u32);
        put32(&mut h, be, orig_len);
        self.w.write_all(&h)?;
        self.w.write_all(data)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    pub fn into_inner(self) -> W {
        self.w
    }
}

/// Writes `frames` (microsecond timestamps) as an Ethernet pcap at `path`.
pub fn write_pcap_file(path: &Path, frames: &[(Ts, Vec<u8>)]) -> io::Result<()> {
    let mut w = PcapWriter::new(BufWriter::new(File::create(path)?), LINKTYPE_ETHERNET)?;
    for (ts, data) in frames {
        w.write_packet(*ts, data)?;
    }
    w.into_inner().flush()
}

/// Writes a classic pcap into memory.
pub fn pcap_bytes(linktype: u32, frames: &[(Ts, Vec<u8>)]) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), linktype).expect("write to Vec");
    for (ts, data) in frames {
        w.write_packet(*ts, data).expect("write to Vec");
    }
    w.into_inner()
}

#[derive(Clone, Copy, Debug)]
struct NgIface {
    units_per_sec: u128,
    tsoffset: i64,
}

/// Writes a pcapng file: section header, interface descriptions and
/// enhanced / simple / obsolete packet blocks.
pub struct PcapNgWriter<W: Write> {
    w: W,
    big_endian: bool,
    ifaces: Vec<NgIface>,
}

/// Block type codes.
pub const PCAPNG_SHB: u32 = 0x0a0d_0d0a;
pub const PCAPNG_IDB: u32 = 1;
pub const PCAPNG_OPB: u32 = 2;
pub const PCAPNG_SPB: u32 = 3;
pub const PCAPNG_EPB: u32 = 6;

impl<W: Write> PcapNgWriter<W> {
    /// Starts a little-endian section.
    pub fn new(w: W) -> io::Result<Self> {
        Self::with_endianness(w, false)
    }

    pub fn with_endianness(w: W, big_endian: bool) -> io::Result<Self> {
        let mut me = PcapNgWriter {
            w,
            big_endian,
            ifaces: Vec::new(),
        };
        me.new_section(big_endian)?;
        Ok(me)
    }

    /// Writes a section header block: a new section, with no interfaces.
    pub fn new_section(&mut self, big_endian: bool) -> io::Result<()> {
        self.big_endian = big_endian;
        self.ifaces.clear();
        let mut body = Vec::new();
        put32(&mut body, big_endian, 0x1a2b_3c4d);
        put16(&mut body, big_endian, 1);
        put16(&mut body, big_endian, 0);
        body.extend_from_slice(&[0xff; 8]); // section length: unknown
        self.write_block(PCAPNG_SHB, &body)
    }

    /// Adds an interface with microsecond timestamps; returns its id.
    pub fn add_interface(&mut self, linktype: u32) -> io::Result<u32> {
        self.add_interface_with(linktype, 0, None, None)
    }

    /// Adds an interface; `tsresol` is the raw if_tsresol byte (10^-n, or
    /// 2^-n with the top bit set), `tsoffset` if_tsoffset in seconds.
    pub fn add_interface_with(
        &mut self,
        linktype: u32,
        snaplen: u32,
        tsresol: Option<u8>,
        tsoffset: Option<i64>,
    ) -> io::Result<u32> {
        let be = self.big_endian;
        let mut body = Vec::new();
        put16(&mut body, be, linktype as u16);
        put16(&mut body, be, 0);
        put32(&mut body, be, snaplen);
        if let Some(r) = tsresol {
            put16(&mut body, be, 9);
            put16(&mut body, be, 1);
            body.extend_from_slice(&[r, 0, 0, 0]);
        }
        if let Some(o) = tsoffset {
            put16(&mut body, be, 14);
            put16(&mut body, be, 8);
            if be {
                body.extend_from_slice(&o.to_be_bytes());
            } else {
                body.extend_from_slice(&o.to_le_bytes());
            }
        }
        if tsresol.is_some() || tsoffset.is_some() {
            put32(&mut body, be, 0); // opt_endofopt
        }
        self.write_block(PCAPNG_IDB, &body)?;
        let r = tsresol.unwrap_or(6);
        let units_per_sec = if r & 0x80 != 0 {
            1u128 << (r & 0x7f).min(63)
        } else {
            10u128.pow(u32::from(r.min(19)))
        };
        self.ifaces.push(NgIface {
            units_per_sec,
            tsoffset: tsoffset.unwrap_or(0),
        });
        Ok(self.ifaces.len() as u32 - 1)
    }

    /// Converts (seconds, nanoseconds) to the interface's timestamp units.
    pub fn ts_units(&self, if_id: u32, secs: i64, nanos: u32) -> u64 {
        let i = self.ifaces.get(if_id as usize).copied().unwrap_or(NgIface {
            units_per_sec: 1_000_000,
            tsoffset: 0,
        });
        let s = secs.saturating_sub(i.tsoffset).max(0) as u128;
        (s * i.units_per_sec + u128::from(nanos) * i.units_per_sec / 1_000_000_000) as u64
    }

    /// Writes an enhanced packet block; `ts` is (seconds, nanoseconds),
    /// converted with the interface's if_tsresol / if_tsoffset.
    pub fn write_packet(&mut self, if_id: u32, ts: (i64, u32), data: &[u8]) -> io::Result<()> {
        let units = self.ts_units(if_id, ts.0, ts.1);
        self.write_epb(if_id, units, data, data.len() as u32)
    }

    /// Writes an enhanced packet block with a raw timestamp.
    pub fn write_epb(
        &mut self,
        if_id: u32,
        ts_units: u64,
        data: &[u8],
        orig_len: u32,
    ) -> io::Result<()> {
        let be = self.big_endian;
        let mut body = Vec::with_capacity(20 + data.len() + 3);
        put32(&mut body, be, if_id);
        put32(&mut body, be, (ts_units >> 32) as u32);
        put32(&mut body, be, ts_units as u32);
        put32(&mut body, be, data.len() as u32);
        put32(&mut body, be, orig_len);
        body.extend_from_slice(data);
        self.write_block(PCAPNG_EPB, &body)
    }

    /// Writes a simple packet block (interface 0, no timestamp).
    pub fn write_spb(&mut self, data: &[u8], orig_len: u32) -> io::Result<()> {
        let mut body = Vec::with_capacity(4 + data.len() + 3);
        put32(&mut body, self.big_endian, orig_len);
        body.extend_from_slice(data);
        self.write_block(PCAPNG_SPB, &body)
    }

    /// Writes an obsolete packet block (type 2).
    pub fn write_opb(
        &mut self,
        if_id: u16,
        ts_units: u64,
        data: &[u8],
        orig_len: u32,
    ) -> io::Result<()> {
        let be = self.big_endian;
        let mut body = Vec::with_capacity(20 + data.len() + 3);
        put16(&mut body, be, if_id);
        put16(&mut body, be, 0); // drops count
        put32(&mut body, be, (ts_units >> 32) as u32);
        put32(&mut body, be, ts_units as u32);
        put32(&mut body, be, data.len() as u32);
        put32(&mut body, be, orig_len);
        body.extend_from_slice(data);
        self.write_block(PCAPNG_OPB, &body)
    }

    /// Writes any block: type, length, `body` padded to 4 bytes, length.
    pub fn write_block(&mut self, block_type: u32, body: &[u8]) -> io::Result<()> {
        let be = self.big_endian;
        let pad = (4 - body.len() % 4) % 4;
        let len = (12 + body.len() + pad) as u32;
        let mut h = Vec::with_capacity(8);
        put32(&mut h, be, block_type);
        put32(&mut h, be, len);
        self.w.write_all(&h)?;
        self.w.write_all(body)?;
        self.w.write_all(&[0u8; 3][..pad])?;
        let mut t = Vec::with_capacity(4);
        put32(&mut t, be, len);
        self.w.write_all(&t)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    pub fn into_inner(self) -> W {
        self.w
    }
}

fn put16(v: &mut Vec<u8>, be: bool, x: u16) {
    v.extend_from_slice(&if be { x.to_be_bytes() } else { x.to_le_bytes() });
}

fn put32(v: &mut Vec<u8>, be: bool, x: u32) {
    v.extend_from_slice(&if be { x.to_be_bytes() } else { x.to_le_bytes() });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcap_layout() {
        let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET).unwrap();
        w.write_packet((0x0102_0304, 5), &[0xaa, 0xbb]).unwrap();
        let b = w.into_inner();
        assert_eq!(&b[..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
        assert_eq!(&b[20..24], &[1, 0, 0, 0]);
        assert_eq!(
            &b[24..40],
            &[4, 3, 2, 1, 5, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0]
        );
        assert_eq!(&b[40..], &[0xaa, 0xbb]);

        let fmt = PcapFormat {
            nanos: true,
            big_endian: true,
            snaplen: 65535,
        };
        let w = PcapWriter::with_format(Vec::new(), LINKTYPE_RAW, fmt).unwrap();
        let b = w.into_inner();
        assert_eq!(&b[..4], &[0xa1, 0xb2, 0x3c, 0x4d]);
        assert_eq!(&b[20..24], &[0, 0, 0, 101]);
    }

    #[test]
    fn pcapng_layout() {
        let mut w = PcapNgWriter::new(Vec::new()).unwrap();
        let id = w
            .add_interface_with(LINKTYPE_ETHERNET, 0, Some(9), None)
            .unwrap();
        assert_eq!(w.ts_units(id, 2, 5), 2_000_000_005);
        w.write_packet(id, (2, 5), &[1, 2, 3, 4, 5]).unwrap();
        let b = w.into_inner();
        assert_eq!(&b[..4], &[0x0a, 0x0d, 0x0d, 0x0a]);
        assert_eq!(&b[4..8], &28u32.to_le_bytes());
        assert_eq!(&b[8..12], &[0x4d, 0x3c, 0x2b, 0x1a]);
        let idb = &b[28..];
        assert_eq!(&idb[..8], &[1, 0, 0, 0, 32, 0, 0, 0]);
        assert_eq!(&idb[16..24], &[9, 0, 1, 0, 9, 0, 0, 0]);
        let epb = &idb[32..];
        assert_eq!(&epb[..8], &[6, 0, 0, 0, 40, 0, 0, 0]);
        assert_eq!(epb.len(), 40);
        assert_eq!(&epb[36..40], &40u32.to_le_bytes());
    }
}
