#!/usr/bin/env python3
"""Repeat a classic pcap N times, each copy a distinct set of flows.

usage: repeat_pcap.py IN.pcap OUT.pcap N

Copy k (0 .. N-1) is the input with
- timestamps shifted by k * (the capture's span + one day), so copies
  follow one another and the flows of one copy have timed out before the
  next starts (the growth benchmark checks that memory stays flat);
- IPv4 addresses with k XORed into their third octet and IPv6 addresses
  with k XORed into their fourteenth byte, so flows stay distinct while
  RFC 1918 and other prefix-based address groups ($HOME_NET) still hold
  the same hosts. The IPv4 header checksum is recomputed and the TCP/UDP
  checksum adjusted for the new addresses (RFC 1624), so checksums that
  were right stay right.
Copy 0 is the input unchanged. Ethernet (with 802.1Q/802.1ad tags), raw
IP and Linux cooked captures are rewritten; other records are copied as
they are, as are records too short to parse.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcaplib  # noqa: E402

DAY = 86400


def csum_fold(s):
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def ip_checksum(hdr):
    if len(hdr) % 2:
        hdr += b"\0"
    s = sum(struct.unpack("!%dH" % (len(hdr) // 2), hdr))
    return (~csum_fold(s)) & 0xFFFF


def adjust(old_csum, old_bytes, new_bytes):
    """RFC 1624 eq. 3: HC' = ~(~HC + ~m + m')."""
    s = (~old_csum) & 0xFFFF
    for i in range(0, len(old_bytes), 2):
        m = struct.unpack("!H", old_bytes[i : i + 2])[0]
        m2 = struct.unpack("!H", new_bytes[i : i + 2])[0]
        s += ((~m) & 0xFFFF) + m2
    return (~csum_fold(s)) & 0xFFFF


def fix_l4(pkt, l4_off, proto, old_addrs, new_addrs, first_fragment):
    if not first_fragment:
        return
    if proto == 6 and len(pkt) >= l4_off + 18:
        pos = l4_off + 16
    elif proto == 17 and len(pkt) >= l4_off + 8:
        pos = l4_off + 6
    else:
        return
    old = struct.unpack("!H", pkt[pos : pos + 2])[0]
    if proto == 17 and old == 0:
        return  # no UDP checksum (IPv4)
    new = adjust(old, old_addrs, new_addrs)
    if proto == 17 and new == 0:
        new = 0xFFFF
    pkt[pos : pos + 2] = struct.pack("!H", new)


def rewrite_ip(pkt, off, k):
    if len(pkt) < off + 1:
        return
    ver = pkt[off] >> 4
    if ver == 4 and len(pkt) >= off + 20:
        ihl = (pkt[off] & 0x0F) * 4
        if ihl < 20 or len(pkt) < off + ihl:
            return
        old = bytes(pkt[off + 12 : off + 20])
        new = bytearray(old)
        new[2] ^= k
        new[6] ^= k
        pkt[off + 12 : off + 20] = new
        pkt[off + 10 : off + 12] = b"\0\0"
        pkt[off + 10 : off + 12] = struct.pack("!H", ip_checksum(bytes(pkt[off : off + ihl])))
        frag = struct.unpack("!H", pkt[off + 6 : off + 8])[0] & 0x1FFF
        fix_l4(pkt, off + ihl, pkt[off + 9], old, bytes(new), frag == 0)
    elif ver == 6 and len(pkt) >= off + 40:
        old = bytes(pkt[off + 8 : off + 40])
        new = bytearray(old)
        new[13] ^= k
        new[16 + 13] ^= k
        pkt[off + 8 : off + 40] = new
        # The common case only: TCP or UDP right after the fixed header.
        fix_l4(pkt, off + 40, pkt[off + 6], old, bytes(new), True)


def rewrite(linktype, data, k):
    pkt = bytearray(data)
    if linktype == 1:  # Ethernet
        off, et = 14, None
        if len(pkt) < 14:
            return data
        et = struct.unpack("!H", pkt[12:14])[0]
        while et in (0x8100, 0x88A8) and len(pkt) >= off + 4:
            et = struct.unpack("!H", pkt[off + 2 : off + 4])[0]
            off += 4
        if et in (0x0800, 0x86DD):
            rewrite_ip(pkt, off, k)
    elif linktype in (101, 12, 228, 229):  # raw IP
        rewrite_ip(pkt, 0, k)
    elif linktype == 113 and len(pkt) >= 16:  # Linux cooked
        if struct.unpack("!H", pkt[14:16])[0] in (0x0800, 0x86DD):
            rewrite_ip(pkt, 16, k)
    return bytes(pkt)


def main(src, dst, n):
    with open(src, "rb") as f:
        try:
            gh, end, _, linktype = pcaplib.read_header(f)
        except ValueError as ex:
            sys.exit(str(ex))
        records = list(pcaplib.records(f, end))
    if not records:
        sys.exit("no records")
    span = max(r[0] for r in records) - min(r[0] for r in records)
    shift = span + DAY
    with open(dst, "wb") as g:
        g.write(gh)
        for k in range(n):
            for ts, frac, cap, length, data in records:
                out = data if k == 0 else rewrite(linktype, data, k & 0xFF)
                g.write(struct.pack(end + "IIII", ts + k * shift, frac, cap, length))
                g.write(out)
    print(f"{n} copies of {len(records)} records, {shift} s apart -> {dst}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
