//! Linux NFQUEUE inline packet source: the kernel holds each packet that
//! an iptables/nftables rule sends to a queue until user space gives a
//! verdict, which is how Vigil runs as an IPS (`vigil run -q 0:3`, one queue
//! per worker, like Suricata's `-q`).
//!
//! # What it does
//!
//! [`Queue::open`] binds one queue number in the network namespace of the
//! calling thread and configures it ([`QueueConfig`]: copy range, queue
//! length, fail-open). The worker that owns it calls [`Queue::poll`] in a
//! loop; each call waits at most a time-out for packets and hands each to a
//! callback as a [`QueuedPacket`] (the IP packet, its kernel id, interfaces,
//! timestamp), borrowed from the receive buffer. The worker inspects it and
//! calls [`Queue::verdict`] with the id (or [`Queue::verdict_batch`] for
//! every held packet up to an id). [`parse_queue_spec`] reads `-q`
//! arguments (`0`, `0:3`); [`Queue::stats`] adds the kernel's drop counters
//! for the queue to ours.
//!
//! # Why libnetfilter_queue (and what that means for the licence)
//!
//! Three ways to talk NFQUEUE from Rust were weighed:
//!
//! * the `nfq` crate (0.2.5, pure Rust, MIT/Apache): supports fail-open,
//!   queue length and copy range, but its released version exposes no file
//!   descriptor and has only a blocking or a non-blocking `recv`, so a
//!   worker cannot wait with a time-out (to flush flows, reload rules or
//!   stop) except by sleeping and spinning; it has no batch verdict, a
//!   verdict needs the received `Message` object itself (kept alive with an
//!   `Arc` on a 72 KiB receive buffer), and its parser `assert!`s on
//!   malformed messages;
//! * the `nfqueue` binding crate (0.9.1): unmaintained since 2017, ignores
//!   errors, no fail-open;
//! * a small FFI to Debian's libnetfilter_queue (the netfilter project's own
//!   library, the one Suricata and Snort use): fail-open
//!   (`nfq_set_queue_flags`), queue length, copy range, batch verdicts,
//!   the socket's descriptor for `poll(2)`, and the message encoding and
//!   parsing done by its maintainers.
//!
//! This crate uses the last: `src/sys.rs` declares the 16 functions it
//! calls, and no netlink message is encoded here. **Licence:**
//! libnetfilter_queue (and libnfnetlink under it) is GPL-2.0-or-later. This
//! crate's source stays MIT, but a Vigil binary that links it is a combined
//! work that must be distributed under the GPL's terms. Switching to a
//! pure-Rust backend later (`nfq` once it exposes its descriptor) changes
//! nothing in this crate's API.
//!
//! # How verdicts work
//!
//! Each queued packet gets an id (increasing from 1 per queue). The kernel
//! keeps the packet (counted in the queue's length) until a verdict message
//! names the id: [`Verdict::Accept`] lets it continue through the ruleset,
//! [`Verdict::Drop`] discards it. Verdicts may come in any order. The queue
//! keeps the set of held ids: a verdict for an id that is not held is an
//! error here rather than a silent no-op in the kernel, and
//! [`QueueStats`]`::held` tells how many wait. When the `Queue` is dropped
//! the kernel unbinds it and drops the packets still held, so a worker
//! stopping gives its verdicts first.
//!
//! # How the queue length, fail-open and bypass work
//!
//! At most [`QueueConfig::max_len`] packets are held at once. A packet that
//! arrives when the queue is full (the worker is too slow or stuck) is
//! dropped and counted in [`QueueStats::queue_dropped`]; with
//! [`QueueConfig::fail_open`] (`NFQA_CFG_F_FAIL_OPEN`) the kernel accepts it
//! instead, uninspected and uncounted. The same holds when the socket's
//! receive buffer overflows ([`QueueStats::user_dropped`]). Fail-open keeps
//! the network up when the IPS falls behind; fail-closed (the default)
//! keeps uninspected traffic out. Separately, iptables' `--queue-bypass`
//! decides what happens when *no* process has the queue bound: with it the
//! packets are accepted, without it they are dropped.
//!
//! # Details
//!
//! * Network namespaces: the queue belongs to the namespace of the thread
//!   that opened it; [`Queue::stats`] reads the kernel figures of that
//!   namespace from whichever thread calls it.
//! * Privileges: binding needs `CAP_NET_ADMIN` ([`InlineError::Permission`]);
//!   a queue bound by another socket is [`InlineError::Busy`] (the kernel
//!   answers EPERM for both; the queue's line in
//!   `/proc/net/netfilter/nfnetlink_queue` tells them apart).
//! * GSO: the queue does not ask for GSO packets (`NFQA_CFG_F_GSO` unset),
//!   so the kernel segments them before queueing and every packet is at
//!   most the MTU.
//! * Packets that arrive while the library waits for the answer to a
//!   configuration request are kept and handed over by the next `poll`.

mod error;
mod procfs;
mod queue;
mod reject;
mod spec;
mod sys;

pub use error::InlineError;
pub use queue::{Queue, QueueConfig, QueueStats, QueuedPacket, Verdict};
pub use reject::{ethernet_answer, ethernet_ip_offset, reject_answers, RawSender, RejectInfo};
pub use spec::{parse_queue_spec, parse_queue_specs};
