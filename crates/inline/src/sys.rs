//! The part of libnetfilter_queue's API this crate calls (declarations from
//! `<libnetfilter_queue/libnetfilter_queue.h>`, version 1.0.x: the
//! `nfq_*` handle API that Suricata and Snort use too).

#![allow(non_camel_case_types)]

use libc::{c_char, c_int, c_uchar, c_uint, c_void, timeval};

/// Opaque library handle (one netlink socket).
#[repr(C)]
pub struct nfq_handle {
    _private: [u8; 0],
}

/// Opaque per-queue handle.
#[repr(C)]
pub struct nfq_q_handle {
    _private: [u8; 0],
}

/// Opaque parsed packet message, valid during a callback.
#[repr(C)]
pub struct nfq_data {
    _private: [u8; 0],
}

/// `struct nfgenmsg` (unused by this crate, passed to callbacks).
#[repr(C)]
pub struct nfgenmsg {
    _private: [u8; 0],
}

/// `struct nfqnl_msg_packet_hdr`: packed, fields in network byte order.
#[repr(C, packed)]
#[derive(Clone, Copy)]
pub struct nfqnl_msg_packet_hdr {
    pub packet_id: u32,
    pub hw_protocol: u16,
    pub hook: u8,
}

pub type nfq_callback = unsafe extern "C" fn(
    qh: *mut nfq_q_handle,
    nfmsg: *mut nfgenmsg,
    nfad: *mut nfq_data,
    data: *mut c_void,
) -> c_int;

/// `NFQNL_COPY_PACKET` from `enum nfqnl_config_mode`.
pub const NFQNL_COPY_PACKET: u8 = 2;
/// `NFQA_CFG_F_FAIL_OPEN`: accept instead of drop when the queue is full.
pub const NFQA_CFG_F_FAIL_OPEN: u32 = 1 << 0;
/// `NF_DROP` / `NF_ACCEPT` verdicts.
pub const NF_DROP: u32 = 0;
pub const NF_ACCEPT: u32 = 1;

#[link(name = "netfilter_queue")]
extern "C" {
    pub fn nfq_open() -> *mut nfq_handle;
    pub fn nfq_close(h: *mut nfq_handle) -> c_int;
    pub fn nfq_fd(h: *mut nfq_handle) -> c_int;
    pub fn nfq_create_queue(
        h: *mut nfq_handle,
        num: u16,
        cb: nfq_callback,
        data: *mut c_void,
    ) -> *mut nfq_q_handle;
    pub fn nfq_destroy_queue(qh: *mut nfq_q_handle) -> c_int;
    pub fn nfq_handle_packet(h: *mut nfq_handle, buf: *mut c_char, len: c_int) -> c_int;
    pub fn nfq_set_mode(qh: *mut nfq_q_handle, mode: u8, len: c_uint) -> c_int;
    pub fn nfq_set_queue_maxlen(qh: *mut nfq_q_handle, queuelen: u32) -> c_int;
    pub fn nfq_set_queue_flags(qh: *mut nfq_q_handle, mask: u32, flags: u32) -> c_int;
    pub fn nfq_set_verdict(
        qh: *mut nfq_q_handle,
        id: u32,
        verdict: u32,
        data_len: u32,
        buf: *const c_uchar,
    ) -> c_int;
    /// `nfq_set_verdict` that also sets the packet's mark (host order).
    pub fn nfq_set_verdict2(
        qh: *mut nfq_q_handle,
        id: u32,
        verdict: u32,
        mark: u32,
        data_len: u32,
        buf: *const c_uchar,
    ) -> c_int;
    pub fn nfq_set_verdict_batch(qh: *mut nfq_q_handle, id: u32, verdict: u32) -> c_int;
    pub fn nfq_get_msg_packet_hdr(nfad: *mut nfq_data) -> *mut nfqnl_msg_packet_hdr;
    pub fn nfq_get_timestamp(nfad: *mut nfq_data, tv: *mut timeval) -> c_int;
    pub fn nfq_get_indev(nfad: *mut nfq_data) -> u32;
    pub fn nfq_get_outdev(nfad: *mut nfq_data) -> u32;
    /// The packet's mark (host order; 0 when it has none).
    pub fn nfq_get_nfmark(nfad: *mut nfq_data) -> u32;
    pub fn nfq_get_payload(nfad: *mut nfq_data, data: *mut *mut c_uchar) -> c_int;
}
