//! One bound NFQUEUE: configuration, the packet loop and verdicts.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libc::c_int;

use crate::procfs::{self, ProcQueue};
use crate::sys;
use crate::InlineError;

/// How to bind and configure one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueConfig {
    /// Queue number, as in `iptables -j NFQUEUE --queue-num N`.
    pub queue: u16,
    /// Most packets the kernel holds for this queue while they wait for a
    /// verdict (`NFQA_CFG_QUEUE_MAXLEN`); beyond it new packets are dropped,
    /// or accepted with `fail_open`. Default 4096; 0 is refused.
    pub max_len: u32,
    /// `NFQA_CFG_F_FAIL_OPEN`: when the queue is full (or the socket's
    /// receive buffer overflows) the kernel accepts new packets instead of
    /// dropping them, unseen by us. Default false: an IPS fails closed.
    pub fail_open: bool,
    /// Bytes of each packet copied to user space (`NFQNL_COPY_PACKET` with
    /// this range). Default 65535, the whole packet; the kernel caps it at
    /// 65531 and treats 0 as that maximum. Longer packets arrive truncated.
    pub copy_range: u32,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            queue: 0,
            max_len: 4096,
            fail_open: false,
            copy_range: 65535,
        }
    }
}

/// A packet the kernel holds until [`Queue::verdict`] is called with its id.
#[derive(Debug, Clone, Copy)]
pub struct QueuedPacket<'a> {
    /// The kernel's id for the packet in this queue (increasing from 1).
    pub id: u32,
    /// Timestamp in ns since the epoch: the kernel's receive timestamp when
    /// it sends one (`NFQA_TIMESTAMP`, present when the skb has one), else
    /// the time the packet was read from the socket.
    pub ts_ns: i64,
    /// The IP packet, from the IP header on (no link-layer header), at most
    /// `copy_range` bytes.
    pub data: &'a [u8],
    /// EtherType of the packet: 0x0800 IPv4, 0x86dd IPv6.
    pub hw_protocol: u16,
    /// Interface index the packet came in on, 0 if none (locally sent).
    pub indev: u32,
    /// Interface index the packet goes out on, 0 if not known yet
    /// (PREROUTING) or none (INPUT).
    pub outdev: u32,
    /// The packet's netfilter mark when it was queued (0: none).
    pub mark: u32,
}

/// What happens to a held packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// `NF_ACCEPT`: the packet goes on through the rest of the ruleset.
    Accept,
    /// `NF_DROP`: the packet is discarded.
    Drop,
}

impl Verdict {
    fn raw(self) -> u32 {
        match self {
            Verdict::Accept => sys::NF_ACCEPT,
            Verdict::Drop => sys::NF_DROP,
        }
    }
}

/// Counters of one queue. `received = accepted + dropped + held`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Packets handed to [`Queue::poll`]'s callback (or waiting to be).
    pub received: u64,
    /// Packets given [`Verdict::Accept`].
    pub accepted: u64,
    /// Packets given [`Verdict::Drop`].
    pub dropped: u64,
    /// Packets received that have had no verdict yet.
    pub held: u64,
    /// Kernel: packets dropped because the queue held `max_len` packets
    /// (not counted with fail-open, which accepts them). 0 when
    /// `/proc/net/netfilter/nfnetlink_queue` cannot be read.
    pub queue_dropped: u64,
    /// Kernel: packets dropped because the netlink socket's receive buffer
    /// was full (not counted with fail-open). 0 when unreadable.
    pub user_dropped: u64,
    /// Times a read on the socket reported ENOBUFS (receive buffer overrun;
    /// the packets concerned are counted in `user_dropped` by the kernel).
    pub enobufs: u64,
}

/// A packet that arrived while no callback was running (during a
/// configuration request that libnetfilter_queue answers by reading the
/// socket); handed over at the start of the next [`Queue::poll`].
struct Owned {
    id: u32,
    ts_ns: i64,
    data: Vec<u8>,
    hw_protocol: u16,
    indev: u32,
    outdev: u32,
    mark: u32,
}

impl Owned {
    fn packet(&self) -> QueuedPacket<'_> {
        QueuedPacket {
            id: self.id,
            ts_ns: self.ts_ns,
            data: &self.data,
            hw_protocol: self.hw_protocol,
            indev: self.indev,
            outdev: self.outdev,
            mark: self.mark,
        }
    }
}

type Sink<'f> = &'f mut dyn FnMut(QueuedPacket<'_>);

/// State the C callback reaches through its `data` pointer. Allocated with
/// `Box::into_raw` in [`Queue::open`] and freed in `Drop` after the handle
/// is closed, so the pointer stays valid for every callback.
#[derive(Default)]
struct Shared {
    /// While [`Queue::poll`] runs `nfq_handle_packet`: a pointer to its
    /// `Sink` local; null otherwise.
    sink: Option<*mut c_void>,
    delivered: usize,
    backlog: VecDeque<Owned>,
    /// Ids received and not yet given a verdict, with the mark each
    /// packet was queued with.
    pending: HashMap<u32, u32>,
    received: u64,
    /// Packet messages without a packet header (cannot be verdicted).
    malformed: u64,
    panic: Option<Box<dyn Any + Send>>,
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// Messages read per [`Queue::poll`] call at most (one packet each), so a
/// busy queue still returns to the caller regularly.
const MAX_MESSAGES_PER_POLL: usize = 64;

extern "C" fn on_packet(
    _qh: *mut sys::nfq_q_handle,
    _nfmsg: *mut sys::nfgenmsg,
    nfad: *mut sys::nfq_data,
    data: *mut c_void,
) -> c_int {
    // A panic must not unwind into C; anything unexpected is recorded and
    // re-raised by `poll` once the C frames are gone.
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `data` is the `Shared` pointer passed to nfq_create_queue,
        // alive until `Queue` is dropped (after nfq_close). libnetfilter_queue
        // calls back only from inside calls that `Queue` methods make with
        // `&mut self`, during which no other reference to `Shared` exists.
        let shared = unsafe { &mut *(data as *mut Shared) };
        handle(shared, nfad);
    }));
    if let Err(p) = result {
        // SAFETY: as above; the closure's borrow ended with the unwind.
        let shared = unsafe { &mut *(data as *mut Shared) };
        shared.panic.get_or_insert(p);
    }
    0
}

fn handle(shared: &mut Shared, nfad: *mut sys::nfq_data) {
    // SAFETY: `nfad` is the parsed message libnetfilter_queue passes to the
    // callback, valid for the duration of the callback.
    let hdr = unsafe { sys::nfq_get_msg_packet_hdr(nfad) };
    if hdr.is_null() {
        shared.malformed += 1;
        return;
    }
    // SAFETY: non-null pointer into the message buffer; the struct is
    // packed, so read it unaligned.
    let hdr = unsafe { std::ptr::read_unaligned(hdr) };
    let id = u32::from_be(hdr.packet_id);
    let mut payload: *mut u8 = std::ptr::null_mut();
    // SAFETY: valid `nfad`; the library stores a pointer into the message
    // buffer (or leaves it) and returns the length or -1.
    let len = unsafe { sys::nfq_get_payload(nfad, &mut payload) };
    let data: &[u8] = if len > 0 && !payload.is_null() {
        // SAFETY: the payload attribute lies inside the receive buffer, which
        // outlives the callback; `len` is its length as the library parsed it.
        unsafe { std::slice::from_raw_parts(payload, len as usize) }
    } else {
        &[]
    };
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: valid `nfad` and a writable timeval.
    // (time_t/suseconds_t are i64 on 64-bit Linux, narrower on some 32-bit.)
    #[allow(clippy::useless_conversion)]
    let ts_ns = if unsafe { sys::nfq_get_timestamp(nfad, &mut tv) } == 0 && tv.tv_sec > 0 {
        i64::from(tv.tv_sec) * 1_000_000_000 + i64::from(tv.tv_usec) * 1_000
    } else {
        now_ns()
    };
    // SAFETY: valid `nfad`; these return 0 when the attribute is absent.
    let (indev, outdev) = unsafe { (sys::nfq_get_indev(nfad), sys::nfq_get_outdev(nfad)) };
    // SAFETY: valid `nfad`; 0 when the packet has no mark.
    let mark = unsafe { sys::nfq_get_nfmark(nfad) };
    let pkt = QueuedPacket {
        id,
        ts_ns,
        data,
        hw_protocol: u16::from_be(hdr.hw_protocol),
        indev,
        outdev,
        mark,
    };
    shared.received += 1;
    shared.pending.insert(id, mark);
    match shared.sink {
        Some(sink) if shared.panic.is_none() => {
            // SAFETY: `sink` points at `poll`'s `Sink` local, which lives
            // across the nfq_handle_packet call that led here.
            let sink = unsafe { &mut *(sink as *mut Sink<'_>) };
            shared.delivered += 1;
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| sink(pkt))) {
                shared.panic = Some(p);
            }
        }
        _ => shared.backlog.push_back(Owned {
            id,
            ts_ns,
            data: data.to_vec(),
            hw_protocol: pkt.hw_protocol,
            indev,
            outdev,
            mark,
        }),
    }
}

/// One NFQUEUE bound to this process, owned by one worker thread.
///
/// Packets that the ruleset sends to the queue are held by the kernel from
/// the moment they are queued until [`Queue::verdict`] (or
/// [`Queue::verdict_batch`]) names them. Dropping the `Queue` unbinds it;
/// the kernel then drops the packets still held, so a worker that stops
/// gives its verdicts first.
pub struct Queue {
    h: *mut sys::nfq_handle,
    qh: *mut sys::nfq_q_handle,
    fd: c_int,
    shared: *mut Shared,
    buf: Vec<u64>,
    queue: u16,
    portid: u32,
    accepted: u64,
    dropped: u64,
    enobufs: u64,
    proc_file: Option<File>,
}

// SAFETY: the handles and the `Shared` allocation belong to this `Queue`
// alone and are used only through `&mut self` (Queue is not Sync), so moving
// it to another thread moves all of them together. libnetfilter_queue keeps
// no thread-local state for a handle.
unsafe impl Send for Queue {}

impl Queue {
    /// Binds queue `cfg.queue` in the network namespace of the calling
    /// thread and configures copy range, queue length and fail-open.
    ///
    /// Errors: [`InlineError::Permission`] without `CAP_NET_ADMIN`,
    /// [`InlineError::Busy`] when another socket (another process, or
    /// another `Queue` of this one) has the queue bound,
    /// [`InlineError::Config`] for `max_len` 0, [`InlineError::Netlink`] when
    /// the kernel refuses a setting.
    pub fn open(cfg: &QueueConfig) -> Result<Queue, InlineError> {
        if cfg.max_len == 0 {
            return Err(InlineError::Config(format!(
                "queue {}: max_len 0 would hold no packet",
                cfg.queue
            )));
        }
        // SAFETY: no preconditions; returns null (errno set) on failure.
        let h = unsafe { sys::nfq_open() };
        if h.is_null() {
            let e = io::Error::last_os_error();
            return Err(InlineError::Io(io::Error::new(
                e.kind(),
                format!(
                    "queue {}: opening a netfilter netlink socket: {e}",
                    cfg.queue
                ),
            )));
        }
        // SAFETY: `h` is a live handle.
        let fd = unsafe { sys::nfq_fd(h) };
        let bufsize = cfg.copy_range.min(65535) as usize + 8192;
        let mut q = Queue {
            h,
            qh: std::ptr::null_mut(),
            fd,
            shared: Box::into_raw(Box::default()),
            buf: vec![0u64; bufsize.div_ceil(8)],
            queue: cfg.queue,
            portid: 0,
            accepted: 0,
            dropped: 0,
            enobufs: 0,
            // Opened now, in the namespace of the queue; reads later follow
            // this namespace whatever thread calls `stats`.
            proc_file: File::open(procfs::path()).ok(),
        };
        // From here on `Drop` releases everything.
        // SAFETY: live handle; `on_packet` matches `nfq_callback`; the data
        // pointer stays valid until `Drop` (see `Shared`).
        let qh = unsafe { sys::nfq_create_queue(h, cfg.queue, on_packet, q.shared.cast()) };
        if qh.is_null() {
            return Err(q.bind_error(io::Error::last_os_error()));
        }
        q.qh = qh;
        let n = cfg.queue;
        // SAFETY: live queue handle.
        let rc = unsafe { sys::nfq_set_mode(qh, sys::NFQNL_COPY_PACKET, cfg.copy_range) };
        check(rc, || {
            format!("queue {n}: setting copy range {}", cfg.copy_range)
        })?;
        // SAFETY: live queue handle.
        let rc = unsafe { sys::nfq_set_queue_maxlen(qh, cfg.max_len) };
        check(rc, || format!("queue {n}: setting max_len {}", cfg.max_len))?;
        let flags = if cfg.fail_open {
            sys::NFQA_CFG_F_FAIL_OPEN
        } else {
            0
        };
        // SAFETY: live queue handle.
        let rc = unsafe { sys::nfq_set_queue_flags(qh, sys::NFQA_CFG_F_FAIL_OPEN, flags) };
        check(rc, || {
            format!(
                "queue {n}: setting fail-open {} (kernel >= 3.6 needed)",
                cfg.fail_open
            )
        })?;
        q.grow_rcvbuf(cfg);
        q.portid = q.own_portid().unwrap_or(0);
        Ok(q)
    }

    /// The queue number.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// Waits at most `timeout` for packets and hands each to `f`, returning
    /// how many it handed over. The packets stay held by the kernel until
    /// [`Queue::verdict`]; `data` borrows the receive buffer, so copy what
    /// must outlive the call. At most 64 socket reads per call.
    ///
    /// A zero `timeout` only takes what is already there. If `f` panics the
    /// panic goes on after the library's frames are left; packets read in
    /// the meantime are handed over by the next call.
    pub fn poll(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(QueuedPacket<'_>),
    ) -> Result<usize, InlineError> {
        let mut n = 0;
        // Packets that came in during configuration requests.
        loop {
            // SAFETY: no callback can run here (no library call in flight),
            // so this is the only reference to `Shared`.
            let next = unsafe { (*self.shared).backlog.pop_front() };
            match next {
                Some(p) => {
                    f(p.packet());
                    n += 1;
                }
                None => break,
            }
        }
        let wait = if n > 0 { Duration::ZERO } else { timeout };
        if !self.wait_readable(wait)? {
            return Ok(n);
        }
        let mut sink: Sink<'_> = f;
        for _ in 0..MAX_MESSAGES_PER_POLL {
            let bytes = self.buf.len() * 8;
            // SAFETY: `buf` is writable for `bytes` bytes; the fd is ours.
            let r = unsafe {
                libc::recv(
                    self.fd,
                    self.buf.as_mut_ptr().cast(),
                    bytes,
                    libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EINTR) => break,
                    Some(libc::ENOBUFS) => {
                        self.enobufs += 1;
                        continue;
                    }
                    _ => {
                        return Err(InlineError::Io(io::Error::new(
                            e.kind(),
                            format!("queue {}: recv: {e}", self.queue),
                        )))
                    }
                }
            }
            let r = r as usize;
            if r == 0 {
                break;
            }
            if r > bytes {
                return Err(InlineError::Netlink(format!(
                    "queue {}: a {r}-byte message does not fit the {bytes}-byte buffer",
                    self.queue
                )));
            }
            // SAFETY: only reference to `Shared` while no library call runs.
            unsafe {
                (*self.shared).sink = Some((&mut sink as *mut Sink<'_>).cast());
                (*self.shared).delivered = 0;
            }
            // SAFETY: live handle; `buf` holds `r` bytes just received and is
            // 8-byte aligned, as netlink headers want. Callbacks reach
            // `Shared` and `sink`, both alive across the call.
            let rc =
                unsafe { sys::nfq_handle_packet(self.h, self.buf.as_mut_ptr().cast(), r as c_int) };
            let err = io::Error::last_os_error();
            // SAFETY: the call returned; no callback runs any more.
            let shared = unsafe { &mut *self.shared };
            shared.sink = None;
            n += shared.delivered;
            if let Some(p) = shared.panic.take() {
                resume_unwind(p);
            }
            if rc < 0 {
                return Err(InlineError::Netlink(format!(
                    "queue {}: kernel reported an error: {err} ({n} packet(s) handed over in this call still need verdicts)",
                    self.queue
                )));
            }
        }
        Ok(n)
    }

    /// Gives the verdict for packet `id`. Errors for an id that is not held
    /// (never received, or already given a verdict) without asking the
    /// kernel.
    pub fn verdict(&mut self, id: u32, v: Verdict) -> Result<(), InlineError> {
        self.verdict_with_data(id, v, &[])
    }

    /// [`Queue::verdict`] with the packet replaced by `data` (an IPS
    /// rewrite: the kernel sends `data` on instead of the packet it
    /// queued); empty `data` keeps the packet as it was.
    pub fn verdict_with_data(
        &mut self,
        id: u32,
        v: Verdict,
        data: &[u8],
    ) -> Result<(), InlineError> {
        self.verdict_marked(id, v, data, None).map(|_| ())
    }

    /// [`Queue::verdict_with_data`] that also changes the packet's mark
    /// (`nfq_set_mark`): with `mark` `(value, mask)` the packet goes on
    /// with mark `(old & !mask) | (value & mask)`, `old` being the mark it
    /// was queued with (`nfq_set_verdict2`). Returns the mark the packet
    /// goes on with.
    pub fn verdict_marked(
        &mut self,
        id: u32,
        v: Verdict,
        data: &[u8],
        mark: Option<(u32, u32)>,
    ) -> Result<u32, InlineError> {
        let len = u32::try_from(data.len()).map_err(|_| {
            InlineError::Netlink(format!(
                "queue {}: packet {id}: changed packet too large",
                self.queue
            ))
        })?;
        // SAFETY: no library call in flight; the only reference to `Shared`.
        let shared = unsafe { &mut *self.shared };
        let Some(old) = shared.pending.remove(&id) else {
            return Err(InlineError::Netlink(format!(
                "queue {}: no packet with id {id} is waiting for a verdict",
                self.queue
            )));
        };
        let new = mark.map_or(old, |(value, mask)| (old & !mask) | (value & mask));
        let buf = if data.is_empty() {
            std::ptr::null()
        } else {
            data.as_ptr()
        };
        // SAFETY: live queue handle; `buf` is null with length 0, or
        // `data`'s `len` bytes, alive across the call (the library copies
        // them into its message).
        let rc = unsafe {
            match mark {
                Some(_) => sys::nfq_set_verdict2(self.qh, id, v.raw(), new, len, buf),
                None => sys::nfq_set_verdict(self.qh, id, v.raw(), len, buf),
            }
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            // SAFETY: as above.
            unsafe { (*self.shared).pending.insert(id, old) };
            return Err(InlineError::Io(io::Error::new(
                e.kind(),
                format!("queue {}: verdict for packet {id}: {e}", self.queue),
            )));
        }
        self.count(v, 1);
        Ok(new)
    }

    /// Gives verdict `v` to every held packet whose id is `up_to_id` or
    /// lower (in the kernel's wrapping id order) in one message
    /// (`NFQNL_MSG_VERDICT_BATCH`). Returns how many packets that covered;
    /// 0 sends nothing.
    pub fn verdict_batch(&mut self, up_to_id: u32, v: Verdict) -> Result<usize, InlineError> {
        // SAFETY: no library call in flight; the only reference to `Shared`.
        let shared = unsafe { &mut *self.shared };
        let covered: Vec<u32> = shared
            .pending
            .keys()
            .copied()
            .filter(|&id| up_to_id.wrapping_sub(id) < 0x8000_0000)
            .collect();
        if covered.is_empty() {
            return Ok(0);
        }
        // SAFETY: live queue handle.
        let rc = unsafe { sys::nfq_set_verdict_batch(self.qh, up_to_id, v.raw()) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return Err(InlineError::Io(io::Error::new(
                e.kind(),
                format!("queue {}: batch verdict up to {up_to_id}: {e}", self.queue),
            )));
        }
        // SAFETY: as above.
        let shared = unsafe { &mut *self.shared };
        for id in &covered {
            shared.pending.remove(id);
        }
        self.count(v, covered.len() as u64);
        Ok(covered.len())
    }

    /// Our counters plus the kernel's drop counters for this queue.
    pub fn stats(&mut self) -> QueueStats {
        // SAFETY: no library call in flight; the only reference to `Shared`.
        let shared = unsafe { &*self.shared };
        let mut s = QueueStats {
            received: shared.received,
            accepted: self.accepted,
            dropped: self.dropped,
            held: shared.pending.len() as u64,
            enobufs: self.enobufs,
            ..QueueStats::default()
        };
        if let Some(k) = self.kernel_entry(true) {
            s.queue_dropped = k.queue_dropped;
            s.user_dropped = k.user_dropped;
        }
        s
    }

    fn count(&mut self, v: Verdict, n: u64) {
        match v {
            Verdict::Accept => self.accepted += n,
            Verdict::Drop => self.dropped += n,
        }
    }

    /// Waits until the socket is readable or `timeout` passes.
    fn wait_readable(&self, timeout: Duration) -> Result<bool, InlineError> {
        let mut pfd = libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // Round up so that 0 < timeout < 1 ms still waits.
        let ms = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as c_int;
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(false);
            }
            return Err(InlineError::Io(io::Error::new(
                e.kind(),
                format!("queue {}: poll: {e}", self.queue),
            )));
        }
        Ok(rc > 0)
    }

    /// This queue's line in /proc/net/netfilter/nfnetlink_queue; `ours`
    /// also requires our socket's port id.
    fn kernel_entry(&mut self, ours: bool) -> Option<ProcQueue> {
        let file = self.proc_file.as_mut()?;
        file.seek(SeekFrom::Start(0)).ok()?;
        let mut text = String::new();
        file.read_to_string(&mut text).ok()?;
        procfs::parse(&text).into_iter().find(|e| {
            e.queue_num == self.queue && (!ours || self.portid == 0 || e.peer_portid == self.portid)
        })
    }

    fn bind_error(&mut self, err: io::Error) -> InlineError {
        let n = self.queue;
        match err.raw_os_error() {
            // The kernel answers EPERM both without CAP_NET_ADMIN and when
            // another socket owns the queue; the proc file tells them apart.
            Some(libc::EPERM) | Some(libc::EBUSY) | Some(libc::EACCES) => {
                if let Some(holder) = self.kernel_entry(false) {
                    InlineError::Busy(format!(
                        "queue {n} is already bound by another netlink socket (port id {}, \
                         which is the holder's pid for its first such socket); one queue \
                         serves one worker",
                        holder.peer_portid
                    ))
                } else if err.raw_os_error() == Some(libc::EBUSY) {
                    InlineError::Busy(format!("queue {n} is already bound"))
                } else {
                    InlineError::Permission(format!("binding queue {n}"))
                }
            }
            _ => InlineError::Netlink(format!("binding queue {n}: {err}")),
        }
    }

    /// A receive buffer that holds about `max_len` small packets, so that
    /// bursts are not lost to ENOBUFS: 2 KiB a packet, 1 to 32 MiB.
    /// SO_RCVBUFFORCE (we have CAP_NET_ADMIN) passes rmem_max; best effort.
    fn grow_rcvbuf(&self, cfg: &QueueConfig) {
        let want = (cfg.max_len as usize)
            .saturating_mul(2048)
            .clamp(1 << 20, 32 << 20) as c_int;
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
            // SAFETY: our fd, a valid int option of the right size.
            let rc = unsafe {
                libc::setsockopt(
                    self.fd,
                    libc::SOL_SOCKET,
                    opt,
                    (&want as *const c_int).cast(),
                    std::mem::size_of::<c_int>() as libc::socklen_t,
                )
            };
            if rc == 0 {
                return;
            }
        }
    }

    fn own_portid(&self) -> Option<u32> {
        // SAFETY: sockaddr_nl is plain old data.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t;
        // SAFETY: our fd; `addr` is writable for `len` bytes.
        let rc = unsafe {
            libc::getsockname(
                self.fd,
                (&mut addr as *mut libc::sockaddr_nl).cast(),
                &mut len,
            )
        };
        (rc == 0).then_some(addr.nl_pid)
    }
}

fn check(rc: c_int, what: impl FnOnce() -> String) -> Result<(), InlineError> {
    if rc < 0 {
        let e = io::Error::last_os_error();
        return Err(InlineError::Netlink(format!("{}: {e}", what())));
    }
    Ok(())
}

impl Drop for Queue {
    fn drop(&mut self) {
        if !self.qh.is_null() {
            // SAFETY: live queue handle, destroyed once. Unbinding makes the
            // kernel drop the packets still held.
            unsafe { sys::nfq_destroy_queue(self.qh) };
        }
        // SAFETY: live handle, closed once; closes the socket.
        unsafe { sys::nfq_close(self.h) };
        // SAFETY: allocated by Box::into_raw in `open`; no callback can run
        // after nfq_close.
        drop(unsafe { Box::from_raw(self.shared) });
    }
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("queue", &self.queue)
            .field("portid", &self.portid)
            .finish_non_exhaustive()
    }
}
