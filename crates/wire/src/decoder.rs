//! The decoding context every layer works on.
//!
//! A [`Decoder`] owns the [`Packet`] being filled and the layer budget.
//! Each layer module adds methods to it taking the absolute byte range
//! (`off..end`) its header starts at; `end` is where the enclosing layer
//! says the data stops (IP total length, UDP length ...), so trailing bytes
//! never leak upwards. All ranges handed out are within the frame by
//! construction: an offset only grows after the bytes it skips were seen.

use std::ops::Range;

use crate::{DecoderEvent, IpInfo, Packet, Tunnel, TunnelKind, L4};

/// Suricata's default `decoder.max-layers`.
pub(crate) const MAX_LAYERS: u8 = 16;

pub(crate) struct Decoder<'a, 'p> {
    pub(crate) data: &'a [u8],
    /// The packet being decoded: the caller's, so that the result is
    /// written where it is returned rather than moved there (a packet is
    /// 416 bytes, and every frame is decoded on the reader thread).
    pub(crate) pkt: &'p mut Packet<'a>,
    layers: u8,
    /// Tunnels to descend into (the pseudo-packet depth asked for).
    max_tunnels: u8,
    /// Tunnels descended into so far.
    tunnels: u8,
}

impl<'a, 'p> Decoder<'a, 'p> {
    /// Decodes `data` into `pkt`, which holds `Packet::empty` of it.
    pub(crate) fn new(pkt: &'p mut Packet<'a>, data: &'a [u8], max_tunnels: u8) -> Self {
        Decoder {
            data,
            pkt,
            layers: 0,
            max_tunnels,
            tunnels: 0,
        }
    }

    #[inline]
    pub(crate) fn event(&mut self, e: DecoderEvent) {
        self.pkt.events.insert(e);
    }

    /// Counts one more decoded layer; `false` (with an event) once the
    /// budget is spent. Bounds recursion through nested tunnels.
    #[inline]
    pub(crate) fn enter_layer(&mut self) -> bool {
        self.layers = self.layers.saturating_add(1);
        if self.layers >= MAX_LAYERS {
            self.event(DecoderEvent::TooManyLayers);
            return false;
        }
        true
    }

    /// The frame bytes `off..end`, or nothing if that is not a valid range.
    #[inline]
    pub(crate) fn bytes(&self, off: usize, end: usize) -> &'a [u8] {
        self.data.get(off..end).unwrap_or(&[])
    }

    /// Records the transport layer.
    #[inline]
    pub(crate) fn set_l4(&mut self, l4: L4, header: Range<usize>, payload: Range<usize>) {
        self.pkt.l4 = l4;
        self.pkt.l4_header = header;
        self.pkt.payload = payload;
    }

    /// Records an IP layer whose transport this decoder does not parse:
    /// `L4::Other(proto)` with empty header and payload at `at`.
    #[inline]
    pub(crate) fn set_ip_other(&mut self, ip: IpInfo, proto: u8, at: usize) {
        self.pkt.ip = Some(ip);
        self.set_l4(L4::Other(proto), at..at, at..at);
    }

    /// Appends a VLAN id; `false` when three are already recorded.
    #[inline]
    pub(crate) fn push_vlan(&mut self, id: u16) -> bool {
        let n = usize::from(self.pkt.vlan_count);
        match self.pkt.vlan.get_mut(n) {
            Some(slot) => {
                *slot = id;
                self.pkt.vlan_count += 1;
                true
            }
            None => false,
        }
    }

    /// An encapsulated packet starts at `start`; `inner` decodes it.
    ///
    /// As in Suricata, the encapsulated packet is a packet of its own (a
    /// tunnel pseudo-packet): decoding at depth 0 stops here and marks the
    /// packet [`Packet::inner_tunnel`]; decoding at depth `k` descends `k`
    /// tunnels and the packet is the one found inside the `k`-th, with
    /// only its own layers' events, [`Packet::tunnel`] saying which tunnel
    /// carried it and `outer_ip` holding the outermost IP header.
    pub(crate) fn tunnel(&mut self, kind: TunnelKind, start: usize, inner: impl FnOnce(&mut Self)) {
        if self.tunnels >= self.max_tunnels {
            // Only a tunnel the next depth can enter counts.
            self.pkt.inner_tunnel = self.layers.saturating_add(1) < MAX_LAYERS;
            return;
        }
        if !self.enter_layer() {
            return;
        }
        if self.tunnels == 0 {
            self.pkt.outer_ip = self.pkt.ip.take();
            self.pkt.outer_ports = (self.pkt.src_port(), self.pkt.dst_port());
        }
        self.tunnels += 1;
        if self.tunnels == self.max_tunnels {
            self.pkt.events = crate::DecoderEvents::new();
        }
        self.pkt.ip = None;
        self.pkt.arp = false;
        self.set_l4(L4::None, start..start, start..start);
        self.pkt.link_header = start..start;
        self.pkt.tunnel = Some(Tunnel {
            kind,
            depth: self.tunnels,
            start,
        });
        inner(self);
    }
}
