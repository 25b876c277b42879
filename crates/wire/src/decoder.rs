//! The decoding context every layer works on.
//!
//! A [`Decoder`] owns the [`Packet`] being filled and the layer budget.
//! Each layer module adds methods to it taking the absolute byte range
//! (`off..end`) its header starts at; `end` is where the enclosing layer
//! says the data stops (IP total length, UDP length ...), so trailing bytes
//! never leak upwards. All ranges handed out are within the frame by
//! construction: an offset only grows after the bytes it skips were seen.

use std::ops::Range;

use crate::{DecoderEvent, IpInfo, Packet, L4};

/// Suricata's default `decoder.max-layers`.
pub(crate) const MAX_LAYERS: u8 = 16;

pub(crate) struct Decoder<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) pkt: Packet<'a>,
    layers: u8,
}

impl<'a> Decoder<'a> {
    pub(crate) fn new(linktype: u32, data: &'a [u8]) -> Self {
        Decoder {
            data,
            pkt: Packet::empty(linktype, data),
            layers: 0,
        }
    }

    pub(crate) fn finish(self) -> Packet<'a> {
        self.pkt
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

    /// Decodes an encapsulated packet with `inner`. If it yields an IP
    /// layer, that becomes the packet's IP and transport and the outermost
    /// IP header moves to `outer_ip`; otherwise the outer layers stay as
    /// they were. Events of the inner layers are kept either way.
    pub(crate) fn tunnel(&mut self, inner: impl FnOnce(&mut Self)) {
        if !self.enter_layer() {
            return;
        }
        let outer_before = self.pkt.outer_ip.take();
        let ip = self.pkt.ip.take();
        let l4 = std::mem::replace(&mut self.pkt.l4, L4::None);
        let l4_header = std::mem::take(&mut self.pkt.l4_header);
        let payload = std::mem::take(&mut self.pkt.payload);

        inner(self);

        if self.pkt.ip.is_some() {
            self.pkt.outer_ip = outer_before.or(ip);
        } else {
            self.pkt.outer_ip = outer_before;
            self.pkt.ip = ip;
            self.set_l4(l4, l4_header, payload);
        }
    }
}
