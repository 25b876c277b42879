//! Packet batches: the unit that travels from the reader to a worker.
//!
//! A batch owns one contiguous byte arena holding the frames and a small
//! record per packet. Batches are recycled through a pool, so steady-state
//! reading allocates nothing per packet. A frame read from a mapped
//! capture is not copied: its record points into a window of the mapping
//! that the batch holds a handle on ([`vigil_source::MapWindow`]).

use crossbeam_channel::{Receiver, Sender};

/// One packet's place in a batch.
#[derive(Debug, Clone, Copy)]
pub struct PacketRecord {
    /// 1-based position in the input (Suricata's `pcap_cnt`).
    pub index: u64,
    /// Packet time in nanoseconds since the epoch.
    pub ts_ns: i64,
    pub linktype: u32,
    /// Bytes as captured: the arena range, or the range of
    /// [`Batch::windows`]`[window]` when `window` is set.
    pub start: u32,
    pub len: u32,
    /// Length on the wire.
    pub orig_len: u32,
    /// A datagram rebuilt from fragments (raw IP, link type 228/229),
    /// placed right after the fragment that completed it.
    pub rebuilt: bool,
    /// Defragmentation findings about this fragment ([`DEFRAG_OVERLAP`]
    /// ...), raised as decoder events on it.
    pub defrag: u8,
    /// A tunnel pseudo-packet: the packet this many tunnels down in the
    /// frame (`vigil_wire::decode_at`); 0 for the frame itself.
    pub tunnel: u8,
    /// Not a packet: the input's clock reached a new second at `index`
    /// (sent to every worker, so flow timeouts happen at the same input
    /// position whatever the worker count).
    pub marker: bool,
    /// An FTP data connection its control channel announced: the index
    /// in [`Batch::ftp_data`] of the command and file name (the reader's
    /// expectation table, `crate::expect`).
    pub ftp_data: Option<u32>,
    /// The index in [`Batch::decoded`] of the packet as the reader
    /// decoded it (to steer it), when it did: the worker then takes those
    /// fields instead of decoding the bytes again ([`Batch::packet`]).
    pub decoded: Option<u32>,
    /// The index in [`Batch::windows`] of the mapped capture's window
    /// that holds the bytes, when they were not copied into the arena.
    pub window: Option<u32>,
}

/// [`PacketRecord::defrag`]: the fragment overlapped earlier ones.
pub const DEFRAG_OVERLAP: u8 = 1;
/// ... would make the datagram larger than 65535 bytes.
pub const DEFRAG_TOO_LARGE: u8 = 2;
/// ... was not used (a limit was reached).
pub const DEFRAG_IGNORED: u8 = 4;
/// ... could not be kept within `defrag.memcap` (the exception policy
/// `defrag.memcap-policy` applies to it).
pub const DEFRAG_MEMCAP: u8 = 8;

/// Where [`Batch::place`] put a record's bytes.
struct Placed {
    start: u32,
    len: u32,
    window: Option<u32>,
}

/// Packets for one worker.
#[derive(Debug, Default)]
pub struct Batch {
    pub records: Vec<PacketRecord>,
    pub arena: Vec<u8>,
    /// Every packet with an index up to this one that belongs to the
    /// receiving worker is in this batch or an earlier one.
    pub upto: u64,
    /// What the records' [`PacketRecord::ftp_data`] point to.
    pub ftp_data: Vec<vigil_applayer::ftpdata::FtpDataInfo>,
    /// What the records' [`PacketRecord::decoded`] point to: decoded
    /// fields without their bytes (`Packet::rebind`).
    pub decoded: Vec<vigil_wire::Packet<'static>>,
    /// What the records' [`PacketRecord::window`] point to.
    pub windows: Vec<std::sync::Arc<vigil_source::MapWindow>>,
}

impl Batch {
    pub fn clear(&mut self) {
        self.records.clear();
        self.arena.clear();
        self.upto = 0;
        self.ftp_data.clear();
        self.decoded.clear();
        // Lets the mapped capture's windows go (their last handle may be
        // this batch's).
        self.windows.clear();
    }

    /// Gives the last record the fields its reader decoded from the same
    /// bytes at the same tunnel depth (`p` as `decode_at` returned it).
    /// Taken by value: a move, where a clone costs a hundred instructions.
    pub fn tag_decoded(&mut self, p: vigil_wire::Packet<'_>) {
        if let Some(r) = self.records.last_mut() {
            r.decoded = Some(self.decoded.len() as u32);
            self.decoded.push(p.rebind(&[]));
        }
    }

    /// A record's packet: the reader's decode over the batch's copy of
    /// the bytes when the record has one, else decoded here. Both are the
    /// same (`decode_at` of the same bytes and depth).
    pub fn packet(&self, r: &PacketRecord) -> vigil_wire::Packet<'_> {
        let data = self.data(r);
        match r.decoded.and_then(|i| self.decoded.get(i as usize)) {
            Some(p) => p.clone().rebind(data),
            None => vigil_wire::decode_at(r.linktype, data, r.tunnel),
        }
    }

    /// Marks the last record as the first data of an expected FTP data
    /// connection.
    pub fn tag_ftp_data(&mut self, info: vigil_applayer::ftpdata::FtpDataInfo) {
        if let Some(r) = self.records.last_mut() {
            r.ftp_data = Some(self.ftp_data.len() as u32);
            self.ftp_data.push(info);
        }
    }

    /// The FTP data connection a record opens, when it does.
    pub fn ftp_data_of(&self, r: &PacketRecord) -> Option<&vigil_applayer::ftpdata::FtpDataInfo> {
        self.ftp_data.get(r.ftp_data? as usize)
    }

    pub fn push(&mut self, index: u64, ts_ns: i64, linktype: u32, data: &[u8], orig_len: u32) {
        self.push_record(index, ts_ns, linktype, data, orig_len, false, 0);
    }

    /// [`Self::push`] with the defragmentation fields.
    #[allow(clippy::too_many_arguments)]
    pub fn push_record(
        &mut self,
        index: u64,
        ts_ns: i64,
        linktype: u32,
        data: &[u8],
        orig_len: u32,
        rebuilt: bool,
        defrag: u8,
    ) {
        let at = self.place(data, None);
        self.push_at(index, ts_ns, linktype, at, orig_len, rebuilt, defrag, 0);
    }

    /// [`Self::push_record`] for a frame of the input: when the source
    /// lent its bytes from a mapped capture, the record points there and
    /// the batch keeps a handle on the window instead of copying them.
    #[allow(clippy::too_many_arguments)]
    pub fn push_frame(
        &mut self,
        index: u64,
        ts_ns: i64,
        linktype: u32,
        data: &[u8],
        lent: Option<vigil_source::Lent<'_>>,
        orig_len: u32,
        defrag: u8,
        tunnel: u8,
    ) {
        let at = self.place(data, lent);
        self.push_at(index, ts_ns, linktype, at, orig_len, false, defrag, tunnel);
    }

    /// The tunnel pseudo-packet `depth` tunnels down in the frame `data`
    /// (placed after the frame's own record).
    pub fn push_tunnel(
        &mut self,
        index: u64,
        ts_ns: i64,
        linktype: u32,
        data: &[u8],
        orig_len: u32,
        depth: u8,
    ) {
        let at = self.place(data, None);
        self.push_at(index, ts_ns, linktype, at, orig_len, false, 0, depth);
    }

    /// Where a record's bytes will be: the lent window's range (the batch
    /// holding one handle per window in a row), else a copy in the arena.
    fn place(&mut self, data: &[u8], lent: Option<vigil_source::Lent<'_>>) -> Placed {
        let len = data.len() as u32;
        let Some(l) = lent else {
            let start = self.arena.len() as u32;
            self.arena.extend_from_slice(data);
            return Placed {
                start,
                len,
                window: None,
            };
        };
        if !self
            .windows
            .last()
            .is_some_and(|last| std::sync::Arc::ptr_eq(last, l.window))
        {
            self.windows.push(l.window.clone());
        }
        Placed {
            start: l.off,
            len,
            window: Some(self.windows.len() as u32 - 1),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push_at(
        &mut self,
        index: u64,
        ts_ns: i64,
        linktype: u32,
        at: Placed,
        orig_len: u32,
        rebuilt: bool,
        defrag: u8,
        tunnel: u8,
    ) {
        self.records.push(PacketRecord {
            index,
            ts_ns,
            linktype,
            start: at.start,
            len: at.len,
            orig_len,
            rebuilt,
            defrag,
            tunnel,
            marker: false,
            ftp_data: None,
            decoded: None,
            window: at.window,
        });
    }

    /// A clock marker (see [`PacketRecord::marker`]).
    pub fn push_marker(&mut self, index: u64, ts_ns: i64) {
        self.records.push(PacketRecord {
            index,
            ts_ns,
            linktype: 0,
            start: self.arena.len() as u32,
            len: 0,
            orig_len: 0,
            rebuilt: false,
            defrag: 0,
            tunnel: 0,
            marker: true,
            ftp_data: None,
            decoded: None,
            window: None,
        });
    }

    pub fn data(&self, r: &PacketRecord) -> &[u8] {
        match r.window {
            Some(w) => self.windows[w as usize].bytes(r.start, r.len),
            None => &self.arena[r.start as usize..(r.start + r.len) as usize],
        }
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

/// A pool of reusable batches shared by the reader and the workers.
#[derive(Debug, Clone)]
pub struct BatchPool {
    give: Sender<Batch>,
    take: Receiver<Batch>,
    /// Packets a batch is filled to: a new batch has room for that many
    /// decodes, which it would otherwise grow to by doubling, copying the
    /// decodes it holds at each step.
    packets: usize,
}

impl BatchPool {
    pub fn new() -> Self {
        Self::with_packets(0)
    }

    /// A pool whose new batches have room for `packets` decodes.
    pub fn with_packets(packets: usize) -> Self {
        let (give, take) = crossbeam_channel::unbounded();
        BatchPool {
            give,
            take,
            packets,
        }
    }

    /// A cleared batch. The reader clears a recycled batch here rather
    /// than the worker in [`BatchPool::put`]: clearing drops the batch's
    /// handles on the mapped capture's windows, and dropping a window's
    /// last handle releases its pages (a system call that unmaps 256
    /// pages), work that belongs beside the reading, off the workers.
    pub fn get(&self) -> Batch {
        let mut b = self.take.try_recv().unwrap_or_else(|_| {
            let mut b = Batch::default();
            // Not touched until written: no resident memory until used.
            b.decoded.reserve(self.packets);
            b
        });
        b.clear();
        b
    }

    /// Returns a batch to the pool, as it is: the next [`BatchPool::get`]
    /// clears it.
    pub fn put(&self, b: Batch) {
        // The pool lives as long as any engine thread; a closed pool only
        // means the run is ending, and the batch can be dropped.
        let _ = self.give.send(b);
    }
}

impl Default for BatchPool {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_craft::PacketBuilder;
    use vigil_wire::decode_at;

    fn frames() -> (Vec<u8>, Vec<u8>) {
        let b = PacketBuilder::new();
        let (c, s) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let tcp = b.tcp(c, 40000, s, 80, 1, 1, 0x18, b"GET / HTTP/1.1\r\n\r\n");
        // The same packet inside an IP-in-IP tunnel.
        let (oc, os) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        let tunnel = b.eth_ip(oc, os, 4, &tcp[14..]);
        (tcp, tunnel)
    }

    #[test]
    fn a_record_carries_its_readers_decode_and_gives_back_the_same_packet() {
        let (tcp, tunnel) = frames();
        let mut batch = Batch::default();
        // What the reader decoded travels without its bytes; the batch
        // puts its own copy of the bytes back.
        batch.push(1, 0, 1, &tcp, tcp.len() as u32);
        batch.tag_decoded(decode_at(1, &tcp, 0));
        batch.push_tunnel(2, 0, 1, &tunnel, tunnel.len() as u32, 1);
        batch.tag_decoded(decode_at(1, &tunnel, 1));
        // A record without one is decoded from the bytes.
        batch.push(3, 0, 1, &tunnel, tunnel.len() as u32);
        let r = batch.records.clone();
        assert_eq!(
            r.iter().map(|r| r.decoded).collect::<Vec<_>>(),
            [Some(0), Some(1), None]
        );
        for (rec, (bytes, depth)) in r.iter().zip([(&tcp, 0), (&tunnel, 1), (&tunnel, 0)]) {
            let p = batch.packet(rec);
            assert_eq!(
                format!("{p:?}"),
                format!("{:?}", decode_at(1, bytes, depth))
            );
            // The bytes are the batch's, not the reader's.
            assert!(std::ptr::eq(p.data, batch.data(rec)));
        }
        assert_eq!(batch.packet(&r[0]).payload(), b"GET / HTTP/1.1\r\n\r\n");
        assert_eq!(batch.packet(&r[1]).payload(), b"GET / HTTP/1.1\r\n\r\n");
        assert!(batch.packet(&r[2]).inner_tunnel);
        // A recycled batch forgets the decodes with the records.
        batch.clear();
        assert!(batch.decoded.is_empty());
        batch.push(1, 0, 1, &tunnel, tunnel.len() as u32);
        assert_eq!(batch.records[0].decoded, None);
        assert!(batch.packet(&batch.records[0]).inner_tunnel);
    }

    #[test]
    fn a_frame_lent_from_a_mapped_capture_is_not_copied_and_its_window_goes_with_the_batch() {
        let (tcp, tunnel) = frames();
        let path =
            std::env::temp_dir().join(format!("vigil-batch-lent-{}.pcap", std::process::id()));
        let ts = vigil_craft::pcap::Ts::default();
        vigil_craft::pcap::write_pcap_file(&path, &[(ts, tcp.clone()), (ts, tunnel.clone())])
            .unwrap();
        let mut src = vigil_source::PcapSource::open(&path).unwrap();
        let mut batch = Batch::default();
        let mut window = None;
        while let Some(p) = src.next_packet().unwrap() {
            let l = p.lent.expect("a mapped file lends its packets");
            window = Some(std::sync::Arc::downgrade(l.window));
            batch.push_frame(p.index, 0, p.linktype, p.data, p.lent, p.orig_len, 0, 0);
            batch.tag_decoded(decode_at(p.linktype, p.data, 0));
            if p.index == 2 {
                // The tunnel's pseudo-packet: the same bytes, one level down.
                batch.push_frame(p.index, 0, p.linktype, p.data, p.lent, p.orig_len, 0, 1);
                batch.tag_decoded(decode_at(p.linktype, p.data, 1));
            }
        }
        // Not lent: copied into the arena.
        batch.push_frame(3, 0, 1, &tcp, None, tcp.len() as u32, 0, 0);
        drop(src);
        // Nothing was copied but the last frame, and the window is held once.
        assert_eq!(batch.arena, tcp);
        assert_eq!(batch.windows.len(), 1);
        let r = batch.records.clone();
        assert_eq!(
            r.iter().map(|r| (r.window, r.tunnel)).collect::<Vec<_>>(),
            [(Some(0), 0), (Some(0), 0), (Some(0), 1), (None, 0)]
        );
        for (rec, want) in r.iter().zip([&tcp, &tunnel, &tunnel, &tcp]) {
            assert_eq!(batch.data(rec), &want[..]);
        }
        assert_eq!(batch.packet(&r[2]).payload(), b"GET / HTTP/1.1\r\n\r\n");
        // The batch kept the window alive after the reader went. A worker
        // puts it back as it is; the reader's next `get` clears it, and
        // so lets the window go, on the reader's thread.
        let window = window.unwrap();
        assert!(window.upgrade().is_some());
        let pool = BatchPool::new();
        pool.put(batch);
        assert!(window.upgrade().is_some());
        let batch = pool.get();
        assert!(window.upgrade().is_none());
        assert!(batch.is_empty() && batch.arena.is_empty() && batch.windows.is_empty());
        std::fs::remove_file(&path).unwrap();
    }
}
