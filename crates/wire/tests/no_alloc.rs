//! `decode` must not allocate: a counting global allocator watches this
//! thread while a spread of frames is decoded.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use vigil_wire::{decode, linktype};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static WATCHING: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if WATCHING.with(|w| w.get()) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn decode_does_not_allocate() {
    let t = tcp(
        1,
        80,
        0x18,
        &[2, 4, 5, 0xb4, 1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2],
        b"payload",
    );
    let mut vx = vec![0x08, 0, 0, 0, 0, 0, 1, 0];
    vx.extend_from_slice(&eth(0x0800, &ipv4(6, &t)));
    let frames = vec![
        (linktype::ETHERNET, eth(0x0800, &ipv4(6, &t))),
        (
            linktype::ETHERNET,
            eth(0x8100, &vlan(3, 0x86dd, &ipv6(6, &t))),
        ),
        (
            linktype::ETHERNET,
            eth(0x0800, &ipv4(17, &udp(1, 4789, &vx))),
        ),
        (linktype::RAW, ipv6(44, &frag6(6, 0, true, 9, &t))),
        (linktype::RAW, ipv4(47, &[0, 0, 0x08, 0x00, 0x45])),
        (linktype::ETHERNET, vec![0; 10]),
    ];
    let mut ips = 0;
    WATCHING.with(|w| w.set(true));
    for (lt, f) in &frames {
        let p = decode(*lt, f);
        ips += usize::from(p.ip.is_some()) + p.events.len();
    }
    WATCHING.with(|w| w.set(false));
    assert!(ips >= 5);
    assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 0);
}
