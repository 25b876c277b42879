#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/).

Every seed is built here from hand-written frames, files and messages, or
from test data committed in this repository (demo/demo.rules, the TLS
captures of crates/applayer/tests/data); nothing comes from ../shared.
The layouts follow the targets' doc comments (fuzz/fuzz_targets/*.rs).
Deterministic: running it twice gives the same files.

Usage: scripts/fuzz_seed.py [CORPUS_DIR]   (default fuzz/corpus)
"""

import gzip
import os
import random
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


# ---- packet building -------------------------------------------------------

V4A, V4B = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
V6A = bytes.fromhex("20010db8000000000000000000000001")
V6B = bytes.fromhex("20010db8000000000000000000000002")


def eth(ethertype, payload):
    return bytes.fromhex("020000000002020000000001") + struct.pack("!H", ethertype) + payload


def vlan(vid, ethertype, payload):
    return struct.pack("!HH", vid, ethertype) + payload


def ipv4(proto, body, src=V4A, dst=V4B, opts=b"", flags_frag=0, ident=1):
    ihl = 5 + len(opts) // 4
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, 20 + len(opts) + len(body), ident,
                    flags_frag, 64, proto, 0, src, dst) + opts
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + body


def ipv6(nh, body, src=V6A, dst=V6B, hl=64):
    return struct.pack("!IHBB16s16s", 0x60000000, len(body), nh, hl, src, dst) + body


def tcp(sport, dport, flags, payload=b"", seq=1, ack=0, opts=b""):
    off = (20 + len(opts)) // 4
    return struct.pack("!HHIIBBHHH", sport, dport, seq, ack, off << 4, flags, 65535, 0, 0) + opts + payload


def udp(sport, dport, payload):
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


DNS_Q = bytes.fromhex("123401000001000000000000") + b"\x07example\x03com\x00\x00\x01\x00\x01"
DNS_R = (bytes.fromhex("123481800001000100000000") + b"\x07example\x03com\x00\x00\x01\x00\x01"
         + b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x0e\x10\x00\x04\x5d\xb8\xd8\x22")
HTTP_REQ = (b"GET /index.html?a=1&b=%2e%2e/x HTTP/1.1\r\nHost: www.example.com\r\n"
            b"User-Agent: fuzz/1.0\r\nCookie: a=b\r\nAccept: */*\r\n\r\n")
HTTP_POST = (b"POST /upload HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\n"
             b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
HTTP_RESP = (b"HTTP/1.1 200 OK\r\nServer: x\r\nContent-Type: text/html\r\n"
             b"Content-Length: 13\r\n\r\n<html>hi</html>"[:-2])
GZ_BODY = gzip.compress(b"hello, gzip body " * 8, mtime=0)
HTTP_GZIP = (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(GZ_BODY)
             + GZ_BODY)
HTTP_REQ2 = b"GET /../../etc/passwd HTTP/1.0\r\n\r\n"


def wire_frames():
    t = tcp(1234, 80, 0x18, HTTP_REQ, opts=bytes([2, 4, 5, 0xb4, 1, 1, 4, 2, 1, 3, 3, 7]))
    sack = tcp(80, 1234, 0x10, b"", opts=bytes([1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2]))
    u = udp(5353, 53, DNS_Q)
    v4t, v4u = ipv4(6, t), ipv4(17, u)
    v6t = ipv6(6, t)
    ext = bytes([60, 0, 1, 4, 0, 0, 0, 0]) + bytes([44, 0, 0, 0, 0, 0, 0, 0])
    ext += bytes([6, 0, 0, 1, 0, 0, 0, 7])  # fragment header, first fragment
    v6ext = ipv6(0, ext + t)
    gre = ipv4(47, bytes.fromhex("300008000000000100000002") + v4t)
    vxlan = ipv4(17, udp(1, 4789, bytes.fromhex("0800000000000100") + eth(0x8100, vlan(5, 0x86DD, v6t))))
    geneve = ipv4(17, udp(1, 6081, bytes.fromhex("010065580000010000010200") + eth(0x0800, v4t)))
    teredo = ipv4(17, udp(3544, 3544, v6t))
    erspan = ipv4(47, bytes.fromhex("100088be00000001") + bytes.fromhex("1005000000000001") + eth(0x0800, v4t))
    mpls = bytes.fromhex("0001000000010140") + v4t
    pppoe = bytes.fromhex("110000010000") + struct.pack("!H", len(v4u) + 2) + b"\x00\x21" + v4u
    icmp4 = ipv4(1, bytes([3, 1, 0, 0, 0, 0, 0, 0]) + ipv4(17, udp(1, 2, b"xx"))[:28])
    icmp6 = ipv6(58, bytes([128, 0, 0, 0, 0, 1, 0, 1]) + b"ping")
    frag = ipv4(17, u[:16], flags_frag=0x2000, ident=77)
    frag2 = ipv4(17, u[16:], flags_frag=2, ident=77)
    v4opt = ipv4(17, u, opts=bytes([0x07, 0x0f, 0x04]) + bytes(13) + bytes([0x94, 4, 0, 0]))
    sll = bytes.fromhex("00000001000601020304050600000800") + v4t
    sll2 = struct.pack("!HHIHBB8s", 0x86DD, 0, 2, 1, 0, 6, bytes(8)) + v6t
    null = struct.pack("<I", 2) + v4t
    loop = struct.pack("!I", 24) + v6t
    ppp = bytes([0xFF, 0x03, 0x00, 0x57]) + v6t
    # Link type index (see LINKTYPES in wire_decode.rs) and frame.
    NULL, ETH, PPP, RAW, LOOP, SLL, IPV4, IPV6, SLL2 = range(9)
    return [
        (ETH, eth(0x0800, v4t)), (ETH, eth(0x0800, ipv4(6, sack))),
        (ETH, eth(0x8100, vlan(7, 0x88A8, vlan(8, 0x0800, v4u)))),
        (ETH, eth(0x86DD, v6ext)), (ETH, eth(0x0800, v4opt)), (ETH, eth(0x0800, icmp4)),
        (ETH, eth(0x86DD, icmp6)), (ETH, eth(0x0800, gre)), (ETH, eth(0x0800, vxlan)),
        (ETH, eth(0x0800, geneve)), (ETH, eth(0x0800, teredo)), (ETH, eth(0x0800, erspan)), (ETH, eth(0x8847, mpls)),
        (ETH, eth(0x8864, pppoe)), (ETH, eth(0x0800, frag)), (ETH, eth(0x0800, frag2)),
        (RAW, ipv4(41, v6ext)), (RAW, ipv6(4, v4opt)), (IPV4, v4u), (IPV6, v6t),
        (SLL, sll), (SLL2, sll2), (NULL, null), (LOOP, loop), (PPP, ppp),
    ]


# ---- capture files ---------------------------------------------------------


def pcap(frames, linktype=1, nano=False, big=False):
    e = ">" if big else "<"
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, 65535, linktype)
    for i, f in enumerate(frames):
        out += struct.pack(e + "IIII", 1700000000 + i, 500 * i, len(f), len(f)) + f
    return out


def ng_block(btype, body):
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def pcapng(frames, tsresol=None, spb=False, sections=1):
    out = b""
    for _ in range(sections):
        out += ng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
        opts = b""
        if tsresol is not None:
            opts = struct.pack("<HHB", 9, 1, tsresol) + b"\0\0\0" + struct.pack("<HH", 0, 0)
        out += ng_block(1, struct.pack("<HHI", 1, 0, 65535) + opts)
        for i, f in enumerate(frames):
            if spb:
                out += ng_block(3, struct.pack("<I", len(f)) + f)
            else:
                ts = 1700000000000000 + i * 1000
                out += ng_block(6, struct.pack("<IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, len(f), len(f)) + f)
    return out


# ---- app-layer chunk encoding ----------------------------------------------


def chunks(messages):
    """messages: [(to_client, bytes)] -> the app-layer targets' layout."""
    out = b""
    for to_client, data in messages:
        while data:
            k = min(63, (len(data) - 1) // 7)
            n = k * 7 + 1
            out += bytes([(k << 2) | (1 if to_client else 0)]) + data[:n]
            data = data[n:]
    return out


GAP = lambda to_client: bytes([0x82 | (1 if to_client else 0)])  # noqa: E731
END = lambda to_client: bytes([0xC2 | (1 if to_client else 0)])  # noqa: E731


def der(tag, body):
    n = len(body)
    if n < 128:
        ln = bytes([n])
    elif n < 256:
        ln = bytes([0x81, n])
    else:
        ln = bytes([0x82, n >> 8, n & 0xFF])
    return bytes([tag]) + ln + body


def krb5_principal(names):
    return der(0x30, der(0xA0, der(2, b"\x01")) + der(0xA1, der(0x30, b"".join(der(0x1B, n.encode()) for n in names))))


def krb5_kdc_req(tag, cname, sname):
    """An AS-REQ (10) or TGS-REQ (12), as crates/applayer/src/krb5.rs builds it."""
    body = der(0xA0, der(3, b"\x00\x40\x81\x00\x10"))
    if cname:
        body += der(0xA1, krb5_principal(cname))
    body += der(0xA2, der(0x1B, b"EXAMPLE.ORG")) + der(0xA3, krb5_principal(sname))
    body += der(0xA5, der(0x18, b"20370913024805Z")) + der(0xA7, der(2, b"\x07"))
    body += der(0xA8, der(0x30, der(2, b"\x12") + der(2, b"\x17")))
    req = der(0x30, der(0xA1, der(2, b"\x05")) + der(0xA2, der(2, bytes([tag]))) + der(0xA4, der(0x30, body)))
    return der(0x60 | tag, req)


def krb5_enc(etype):
    return der(0x30, der(0xA0, der(2, bytes([etype]))) + der(0xA2, der(4, b"cipher")))


def krb5_kdc_rep(tag, etype, ticket_etype):
    ticket = der(0x61, der(0x30, der(0xA0, der(2, b"\x05")) + der(0xA1, der(0x1B, b"EXAMPLE.ORG"))
                           + der(0xA2, krb5_principal(["krbtgt", "EXAMPLE.ORG"])) + der(0xA3, krb5_enc(ticket_etype))))
    rep = der(0x30, der(0xA0, der(2, b"\x05")) + der(0xA1, der(2, bytes([tag]))) + der(0xA3, der(0x1B, b"EXAMPLE.ORG"))
              + der(0xA4, krb5_principal(["robin"])) + der(0xA5, ticket) + der(0xA6, krb5_enc(etype)))
    return der(0x60 | tag, rep)


def krb5_error(code):
    e = der(0x30, der(0xA0, der(2, b"\x05")) + der(0xA1, der(2, b"\x1e")) + der(0xA4, der(0x18, b"20210622092740Z"))
            + der(0xA5, der(2, b"\x01")) + der(0xA6, der(2, bytes([code]))) + der(0xA9, der(0x1B, b"EXAMPLE.ORG"))
            + der(0xAA, krb5_principal(["krbtgt", "EXAMPLE.ORG"])))
    return der(0x7E, e)


def tls_records():
    d = os.path.join(ROOT, "crates/applayer/tests/data")
    out = {}
    for name in ("tls12_client.bin", "tls12_server.bin", "tls13_client.bin"):
        with open(os.path.join(d, name), "rb") as f:
            out[name] = f.read()
    return out


# ---- rules and config files ------------------------------------------------

RULES = [
    'alert http $HOME_NET any -> $EXTERNAL_NET any (msg:"ET MALWARE x"; flow:established,to_server; http.method; content:"POST"; http.uri; content:"/gate.php"; fast_pattern; endswith; http.header_names; content:!"Referer"; pkt_data; pcre:"/^\\/[a-z]{4}\\.php$/U"; reference:url,example.com; classtype:trojan-activity; sid:2000001; rev:2; metadata:created_at 2020_01_01;)',
    'alert tcp $EXTERNAL_NET any -> $HOME_NET 445 (msg:"x"; flow:to_server,established; content:"|FF|SMB"; depth:5; offset:4; byte_extract:2,0,len,relative,little; byte_test:2,>,len,0,relative; byte_jump:4,len,relative,align,post_offset -2; isdataat:!10,relative; sid:1;)',
    'alert udp any any -> any 53 (msg:"dns"; dns.query; dotprefix; content:".evil.com"; nocase; endswith; bsize:<100; threshold:type limit,track by_src,count 1,seconds 60; sid:2;)',
    'alert ip [1.1.1.1,!1.1.1.2,[10.0.0.0/8,!10.1.0.0/16]] [80,!81,1024:] <> ![$HOME_NET,2001:db8::/32] any (msg:"h"; ttl:<5; dsize:10<>20; flags:SA,12; fragbits:+M; ip_proto:!6; tos:!x10; icmp_id:5; sid:3;)',
    'alert tcp $EXTERNAL_NET $HTTP_PORTS -> $HOME_NET any (msg:"y"; flow:to_client,established; file_data; content:"MZ"; within:2; flowbits:isset,a|b; flowbits:noalert; detection_filter:track by_dst,count 5,seconds 10; sid:4;)',
    'alert tcp any any -> any any (msg:"z"; flow.pkts:toserver,>3; flowint:cnt,+,1; xbits:isset,ET.x,track ip_pair,expire 60; tag:session,5,packets; urilen:5<>10,raw; stream_size:client,<,100; tcp.wscale:>7; ipopts:lsrr; sid:5;)',
    'alert tls any any -> any any (msg:"sni"; tls.sni; content:"example"; ja3.hash; content:"e7d705a3286e19ea42f587b344ee6865"; sid:6;)',
    'drop tcp any any -> any 80 (msg:"drop"; content:"attack"; sid:7;)',
    'pass http any any -> any any (msg:"pass"; http.host; content:"good"; sid:8;)',
    'alert http any any -> any any (msg:"resp"; http.stat_code; content:"200"; http.response_body; content:"hi"; sid:9;)',
]

CLASSIFICATION = b"""# config classification:shortname,short description,priority
config classification: not-suspicious,Not Suspicious Traffic,3
config classification: trojan-activity,A Network Trojan was detected, 1
config classification: bad,
"""
REFERENCE = b"""config reference: bugtraq   http://www.securityfocus.com/bid/
config reference: url       http://
config reference: cve,http://cve.mitre.org/cgi-bin/cvename.cgi?name=
"""
THRESHOLD = b"""threshold gen_id 1, sig_id 10, type limit, track by_src, count 1, seconds 60
suppress gen_id 1, sig_id 13, track by_either, ip [10.0.0.0/8,!10.1.0.0/16,$HOME_NET]
suppress gen_id 1, sig_id 14
rate_filter gen_id 1, sig_id 14, track by_src, count 10, seconds 60, new_action drop, timeout 300
event_filter gen_id 1, sig_id 15, type both, track by_dst, count 2, seconds 5
"""

YAMLS = [
    b"""%YAML 1.1
---
vars:
  address-groups:
    HOME_NET: "[10.0.0.0/8,192.168.0.0/16]"
    EXTERNAL_NET: "!$HOME_NET"
  port-groups:
    HTTP_PORTS: "80"
default-rule-path: /etc/vigil/rules
rule-files:
  - a.rules
  - /abs/b.rules
classification-file: classification.config
flow:
  memcap: 128mb
outputs:
  - fast:
      enabled: yes
      filename: fast.log
  - eve-log:
      enabled: yes
      filename: eve.json
      types:
        - alert:
            payload: yes
            packet: no
            xff:
              enabled: yes
              mode: overwrite
              deployment: reverse
              header: X-Forwarded-For
        - http
        - drop:
            alerts: yes
            flows: all
""",
    b"include: other.yaml\nflow: {memcap: 12gb}\n",
    b"outputs: [ {eve-log: {types: [alert, dns, tls]}} ]\nflow:\n  memcap: 1.5kb\n",
    b"a: &x [1, 2]\nb: *x\nc: !!binary aGVsbG8=\n",
    b"---\n",
]


def engine_seed(settings, rules, packets, mask=0xFFFF):
    """rules: extra rule lines; packets: [(ctl, flags, payload)]"""
    out = bytes([settings]) + struct.pack("<H", mask) + "\n".join(rules).encode() + b"\0"
    for ctl, flags, payload in packets:
        while True:
            part, payload = payload[:255], payload[255:]
            out += bytes([ctl, flags, len(part)]) + part
            if not payload:
                break
    return out


SYN, ACK, PSH, FIN, RST = 0x02, 0x10, 0x08, 0x01, 0x04


def tcp_conv(port_idx, req, resp, v6=False):
    c = (port_idx << 3) | (0x40 if v6 else 0)
    s = c | 4
    return [
        (c, SYN, b""), (s, SYN | ACK, b""), (c, ACK, b""),
        (c, PSH | ACK, req), (s, ACK, b""), (s, PSH | ACK, resp), (c, ACK, b""),
        (c, FIN | ACK, b""), (s, FIN | ACK, b""), (c, ACK, b""),
    ]


def dcerpc_exchange():
    """A DCERPC bind (netlogon 1.0) and a request in two fragments (opnum
    26), and the bind_ack and response: (client bytes, server bytes)."""
    def pdu(ptype, flags, call, body):
        return bytes([5, 0, ptype, flags, 0x10, 0, 0, 0]) + struct.pack("<HHI", 16 + len(body), 0, call) + body
    netlogon = bytes.fromhex("78563412" "3412" "cdab" "ef00" "01234567cffb")
    bind = struct.pack("<HHIB3x", 4280, 4280, 0, 1) + struct.pack("<HBx", 0, 1) + netlogon \
        + struct.pack("<HH", 1, 0) + b"\x04" * 20
    ack = struct.pack("<HHIH", 4280, 4280, 1, 0) + b"\0\0" + struct.pack("<B3x", 1) + b"\0" * 4 + b"\x04" * 20
    req1 = struct.pack("<IHH", 0, 0, 26) + b"A" * 40
    req2 = struct.pack("<IHH", 0, 0, 26) + b"B" * 8 + b"\xff\xff\x2f\x21"
    resp = struct.pack("<IHBB", 12, 0, 0, 0) + b"\x11" * 12
    client = pdu(11, 3, 1, bind) + pdu(0, 1, 2, req1) + pdu(0, 2, 2, req2)
    server = pdu(12, 3, 1, ack) + pdu(2, 3, 2, resp)
    return client, server


def smb_exchange():
    """An SMB2 session: tree connect to a share, create, two writes out of
    order, close; tree connect to IPC$, a DCERPC bind written to a pipe:
    (client bytes, server bytes)."""
    def msg(cmd, resp, mid, tree, body):
        h = b"\xfeSMB" + struct.pack("<HHIHHIIQIIQ", 64, 0, 0, cmd, 1, 1 if resp else 0, 0, mid, 0, tree, 0x11)
        h += b"\0" * 16 + body
        return struct.pack(">I", len(h)) + h
    def u16(s):
        return s.encode("utf-16-le")
    def tc(mid, path):
        p = u16(path)
        return msg(3, False, mid, 0, struct.pack("<HHHH", 9, 0, 72, len(p)) + p)
    def tc_resp(mid, tree, typ):
        return msg(3, True, mid, tree, struct.pack("<HBB", 16, typ, 0) + b"\0" * 12)
    def create(mid, tree, name):
        n = u16(name)
        b = bytearray(56)
        b[0] = 57
        b[36] = 1
        b[44:48] = struct.pack("<HH", 120, len(n))
        return msg(5, False, mid, tree, bytes(b) + n)
    def create_resp(mid, tree, fid):
        b = bytearray(88)
        b[0] = 89
        b[64:80] = fid
        return msg(5, True, mid, tree, bytes(b))
    def write(mid, tree, fid, off, data):
        b = struct.pack("<HHIQ", 49, 112, len(data), off) + fid + b"\0" * 16
        return msg(9, False, mid, tree, b + data)
    fid, pipe = bytes(range(16)), b"\x07" * 16
    bind = bytes([5, 0, 11, 3, 0x10, 0, 0, 0]) + struct.pack("<HHI", 72, 0, 1) \
        + struct.pack("<HHIB3x", 4280, 4280, 0, 1) + struct.pack("<HBx", 0, 1) \
        + bytes.fromhex("78563412" "3412" "cdab" "ef00" "01234567cffb") + struct.pack("<HH", 1, 0) + b"\x04" * 20
    client = tc(1, "\\\\srv\\C$") + create(2, 5, "a.txt") + write(3, 5, fid, 6, b"world") \
        + write(4, 5, fid, 0, b"hello ") + tc(5, "\\\\srv\\IPC$") + create(6, 1, "netlogon") \
        + write(7, 1, pipe, 0, bind)
    server = tc_resp(1, 5, 1) + create_resp(2, 5, fid) + tc_resp(5, 1, 2) + create_resp(6, 1, pipe)
    return client, server


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "fuzz/corpus")
    rng = random.Random(19)
    corp = {}

    def add(target, name, data):
        corp.setdefault(target, []).append((name, data))

    frames = wire_frames()
    for i, (lt, f) in enumerate(frames):
        add("wire_decode", "frame%02d" % i, bytes([lt]) + f)

    ef = [eth(0x0800, ipv4(6, tcp(1234, 80, 0x18, HTTP_REQ))), eth(0x0800, ipv4(17, udp(1, 53, DNS_Q)))]
    add("pcap_source", "pcap_us_le", b"\0" + pcap(ef))
    add("pcap_source", "pcap_ns_be", b"\0" + pcap(ef, nano=True, big=True))
    add("pcap_source", "pcap_raw", b"\0" + pcap([ipv4(17, udp(1, 53, DNS_Q))], linktype=101))
    add("pcap_source", "pcap_truncated", b"\0" + pcap(ef)[:-10])
    add("pcap_source", "pcapng_epb", b"\0" + pcapng(ef))
    add("pcap_source", "pcapng_tsresol", b"\0" + pcapng(ef, tsresol=9))
    add("pcap_source", "pcapng_tsresol_pow2", b"\0" + pcapng(ef, tsresol=0x8A))
    add("pcap_source", "pcapng_spb", b"\0" + pcapng(ef, spb=True))
    add("pcap_source", "pcapng_two_sections", b"\0" + pcapng(ef, sections=2))
    two = pcap(ef) + pcapng(ef)
    add("pcap_source", "dir_pcap_pcapng", b"\x01" + bytes([len(pcap(ef)) * 256 // len(two) + 1]) + two)

    # Structured (arbitrary) targets: random bytes of a few sizes; the
    # fuzzer finds the structure from there.
    for t in ("defrag", "stream"):
        for i, n in enumerate((64, 256, 1024, 4096)):
            add(t, "random%d" % i, bytes(rng.randrange(256) for _ in range(n)))

    demo = []
    with open(os.path.join(ROOT, "demo/demo.rules")) as f:
        demo = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    for i, r in enumerate(RULES + demo):
        add("parse_rule", "rule%02d" % i, r.encode())
    for v in ("$HOME_NET", "[10.0.0.0/8,!10.1.0.0/16]", "[80:90,!85]"):
        add("parse_rule", "var_" + str(len(corp["parse_rule"])), v.encode())

    with open(os.path.join(ROOT, "demo/demo.rules"), "rb") as f:
        add("rule_files", "demo.rules", b"\0" + f.read())
    add("rule_files", "continued.rules",
        b"\0# c\nalert tcp any any -> any any \\\n (msg:\"x\"; \\\n sid:1;)\n\n" + "\n".join(RULES[:4]).encode())
    add("rule_files", "classification.config", b"\1" + CLASSIFICATION)
    add("rule_files", "reference.config", b"\2" + REFERENCE)
    add("rule_files", "threshold.config", b"\3" + THRESHOLD)

    for i, y in enumerate(YAMLS):
        add("yaml_config", "config%d.yaml" % i, y)

    add("applayer_http", "get", chunks([(0, HTTP_REQ), (1, HTTP_RESP)]))
    upload = (b"--B\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.exe\"\r\n\r\n"
              b"MZ\x90\x00data\r\n--B--\r\n")
    add("applayer_http", "multipart_upload", chunks([
        (0, b"POST /up HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=B\r\n"
            b"Content-Length: %d\r\n\r\n" % len(upload) + upload), (1, HTTP_RESP)]))
    add("applayer_http", "post_chunked", chunks([(0, HTTP_POST), (1, HTTP_RESP)]))
    add("applayer_http", "gzip", chunks([(0, HTTP_REQ2), (1, HTTP_GZIP)]))
    add("applayer_http", "pipelined_gap",
        chunks([(0, HTTP_REQ + HTTP_REQ2)]) + GAP(1) + chunks([(1, HTTP_RESP)]) + END(0) + END(1))
    add("applayer_http", "connect",
        chunks([(0, b"CONNECT a:443 HTTP/1.1\r\n\r\n"), (1, b"HTTP/1.1 200 OK\r\n\r\n"), (0, b"\x16\x03\x01")]))
    add("applayer_dns_udp", "query_answer", chunks([(0, DNS_Q), (1, DNS_R)]))
    add("applayer_dns_udp", "query", chunks([(0, DNS_Q)]))
    tcpq = struct.pack("!H", len(DNS_Q)) + DNS_Q
    tcpr = struct.pack("!H", len(DNS_R)) + DNS_R
    add("applayer_dns_tcp", "query_answer", chunks([(0, tcpq), (1, tcpr)]))
    add("applayer_dns_tcp", "two_in_one", chunks([(0, tcpq + tcpq), (1, tcpr)]) + GAP(0) + chunks([(0, tcpq)]))
    dce_c, dce_s = dcerpc_exchange()
    add("applayer_dcerpc", "bind_request", chunks([(0, dce_c), (1, dce_s)]))
    add("applayer_dcerpc", "fragments_gap",
        chunks([(0, dce_c[:100])]) + GAP(0) + chunks([(1, dce_s)]) + END(0) + END(1))
    add("applayer_dcerpc", "bytewise", chunks([(0, dce_c[i:i + 1]) for i in range(len(dce_c))]))
    smb_c, smb_s = smb_exchange()
    add("applayer_smb", "session", chunks([(0, smb_c[:200]), (1, smb_s[:170]), (0, smb_c[200:]), (1, smb_s[170:])]))
    add("applayer_smb", "gap_resync", chunks([(0, smb_c[:90])]) + GAP(0) + chunks([(0, smb_c[150:]), (1, smb_s)]) + END(0))
    add("applayer_smb", "bytewise", chunks([(0, smb_c[i:i + 1]) for i in range(len(smb_c))]))
    ftp_c = [b"USER anonymous\r\n", b"PORT 192,168,0,13,234,10\r\n", b"RETR a.txt\r\n",
             b"EPSV\r\n", b"AUTH TLS\r\n"]
    ftp_s = [b"220-Welcome\r\n220 ready\r\n", b"331 Password?\r\n", b"200 PORT ok.\r\n",
             b"150 Opening.\r\n226 Transfer complete.\r\n",
             b"229 Entering Extended Passive Mode (|||6446|)\r\n", b"234 Proceed.\r\n"]
    add("applayer_ftp", "session", chunks([(1, ftp_s[0])] + [x for i, c in enumerate(ftp_c)
                                          for x in ((0, c), (1, ftp_s[i + 1]))]))
    add("applayer_ftp", "pasv_gap", chunks([(0, b"PASV\r\nSTOR x")]) + GAP(0)
        + chunks([(0, b"y\r\nQUIT\r\n"), (1, b"227 Entering Passive Mode (1,2,3,4,5,6).\r\n")]) + END(0))
    add("applayer_ftp", "long_line", chunks([(0, b"SITE " + b"A" * 5000 + b"\r\n"), (1, b"500-" + b"B" * 300)]))
    sip_req = (b"INVITE sip:bob@example.com SIP/2.0\r\nv: SIP/2.0/UDP 10.0.0.1\r\nf: <sip:a@example.com>;tag=1\r\n"
               b"To: <sip:bob@example.com>\r\nContent-Type: application/sdp\r\nContent-Length: 40\r\n\r\n"
               b"v=0\r\no=a 1 1 IN IP4 10.0.0.1\r\ns=-\r\nt=0 0\r\n")
    sip_resp = b"SIP/2.0 100 Trying\r\nVia: SIP/2.0/UDP 10.0.0.1\r\nContent-Length: 0\r\n\r\n"
    add("applayer_sip", "invite_trying", chunks([(0, sip_req), (1, sip_resp)]))
    add("applayer_sip", "pipelined_gap",
        chunks([(0, b"\r\n" + sip_req + sip_req[:50])]) + GAP(0) + chunks([(0, sip_req), (1, sip_resp)]) + END(0))
    def h2frame(t, flags, stream, payload):
        return len(payload).to_bytes(3, "big") + bytes([t, flags]) + stream.to_bytes(4, "big") + payload
    h2_client = (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2frame(4, 0, 0, b"\x00\x03\x00\x00\x00\x64")
                 + h2frame(1, 0x4, 1, b"\x82\x86\x84\x41\x07h2.test") + h2frame(9, 0x4, 1, b"")
                 + h2frame(1, 0x5, 3, b"\x82\x86\xbe\x04\x04/dns") + h2frame(0, 0x9, 1, b"\x02ab\x00\x00"))
    h2_server = (h2frame(4, 0, 0, b"") + h2frame(1, 0x4, 1, b"\x88\x5f\x0atext/plain")
                 + h2frame(0, 0x1, 1, b"hello") + h2frame(3, 0, 3, b"\x00\x00\x00\x08")
                 + h2frame(7, 0, 0, b"\x00\x00\x00\x03\x00\x00\x00\x00"))
    add("applayer_http2", "prior_knowledge", chunks([(0, h2_client), (1, h2_server)]))
    add("applayer_http2", "split_gap",
        chunks([(0, h2_client[:30]), (1, h2_server[:20])]) + GAP(1) + chunks([(0, h2_client[30:]), (1, h2_server)]) + END(0))
    mqtt_connect = b"\x10\x2f\x00\x04MQTT\x05\xc2\x00\x3c\x03\x21\x00\x14\x00\x13myvoiceismypassport\x00\x04user\x00\x04pass"
    mqtt_connack = b"\x20\x08\x00\x86\x05\x22\x00\x0a\x21\x00\x14"
    mqtt_pub = b"\x32\x14\x00\x06topicX\x00\x07\x00baabaablack"
    add("applayer_mqtt", "connect_publish", chunks([(0, mqtt_connect), (1, mqtt_connack), (0, mqtt_pub),
                                                     (1, b"\x40\x03\x00\x07\x00")]))
    add("applayer_mqtt", "subscribe_gap", chunks([(0, b"\x10\x0c\x00\x04MQTT\x04\x02\x00\x3c\x00\x00"),
                                                   (1, b"\x20\x02\x00\x00"),
                                                   (0, b"\x82\x08\x00\x06\x00\x03a/#\x01" + mqtt_pub[:9])])
        + GAP(0) + chunks([(1, b"\x90\x03\x00\x06\x01\xd0\x00")]) + END(0) + END(1))
    smtp_mail = (b"From: a@b.example\r\nSubject: s\r\nContent-Type: multipart/mixed; boundary=\"o\"\r\n\r\n"
                 b"--o\r\nContent-Type: multipart/alternative; boundary=i\r\n\r\n--i\r\n"
                 b"Content-Transfer-Encoding: quoted-printable\r\n\r\nsee http://x.example/=3D soft=\r\nbreak\r\n"
                 b"..dot\r\n--i--\r\n--o\r\nContent-Disposition: attachment; filename=\"f.bin\"\r\n"
                 b"Content-Transfer-Encoding: base64\r\n\r\naGVsbG8gd29y\r\nbGQ=\r\n--o--\r\n.\r\n")
    add("applayer_smtp", "pipelined_mime", chunks([
        (1, b"220 mx ESMTP\r\n"), (0, b"EHLO c.example\r\n"),
        (1, b"250-mx\r\n250-PIPELINING\r\n250 CHUNKING\r\n"),
        (0, b"MAIL FROM:<a@b.example>\r\nRCPT TO:<c@d.example>\r\nDATA\r\n"),
        (1, b"250 ok\r\n250 ok\r\n354 go\r\n"), (0, smtp_mail), (1, b"250 queued\r\n"),
        (0, b"MAIL FROM:<e@f>\r\nBDAT 14 LAST\r\nSubject: b\r\n\r\n"), (1, b"250 ok\r\n250 ok\r\n"),
        (0, b"STARTTLS\r\n"), (1, b"220 go\r\n"), (0, b"\x16\x03\x01\x00\x05hello")]))
    add("applayer_smtp", "gap_reject", chunks([
        (0, b"HELO x\r\nMAIL FROM:<a>\r\nDATA\r\n"), (1, b"250 ok\r\n250 ok\r\n554 no\r\n"),
        (0, b"MAIL FROM:<b>\r\nDATA\r\nSubject: t\r\n\r\npart")])
        + GAP(0) + chunks([(0, b"ial\r\n.\r\nRSET\r\nQUIT\r\n"), (1, b"25")]) + GAP(1)
        + chunks([(1, b"0 ok\r\n221 bye\r\n")]) + END(0) + END(1))
    rfb_init = b"\x05\x00\x03\x20\x20\x18\x00\x01\x00\xff\x00\xff\x00\xff\x10\x08\x00\x00\x00\x00\x00\x00\x00\x04desk"
    add("applayer_rfb", "vnc_auth", chunks([(1, b"RFB 003.008\n"), (0, b"RFB 003.008\n"), (1, b"\x02\x02\x01"), (0, b"\x02"),
                                           (1, bytes(range(16))), (0, bytes(range(16, 32))), (1, b"\x00\x00\x00\x00"),
                                           (0, b"\x01"), (1, rfb_init)]))
    add("applayer_rfb", "v33_gap", chunks([(1, b"RFB 003.003\n"), (0, b"RFB 003.003\n"), (1, b"\x00\x00\x00\x01")])
        + GAP(1) + chunks([(0, b"\x00"), (1, rfb_init)]) + END(0) + END(1))
    def ssh_pkt(payload, pad=4):
        body = bytes([pad]) + payload + bytes(pad)
        return struct.pack(">I", len(body)) + body
    def ssh_namelist(names):
        return struct.pack(">I", len(names)) + names
    kexinit = (b"\x14" + bytes(range(16)) + b"".join(ssh_namelist(n) for n in [
        b"curve25519-sha256,diffie-hellman-group14-sha256", b"ssh-ed25519,rsa-sha2-512",
        b"aes128-ctr,chacha20-poly1305@openssh.com", b"aes128-ctr,chacha20-poly1305@openssh.com",
        b"hmac-sha2-256", b"hmac-sha2-256", b"none,zlib@openssh.com", b"none", b"", b""]) + b"\x00" + bytes(4))
    add("applayer_ssh", "kexinit_newkeys", chunks([(1, b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"),
                                                  (0, b"SSH-2.0-OpenSSH_8.9\r\n"), (0, ssh_pkt(kexinit)),
                                                  (1, ssh_pkt(kexinit)), (0, ssh_pkt(b"\x15")), (1, ssh_pkt(b"\x15")),
                                                  (0, bytes(range(64)))]))
    add("applayer_ssh", "preamble_gap", chunks([(1, b"Welcome\r\nSSH-1.99-dropbear_2022.83\r\n"),
                                               (0, b"SSH-2.0-PuTTY_Release_0.78\r\n"), (0, ssh_pkt(kexinit)[:40])])
        + GAP(0) + chunks([(1, ssh_pkt(kexinit))]) + END(0) + END(1))
    ws_masked = b"\x81\x85\x01\x02\x03\x04" + bytes(c ^ k for c, k in zip(b"hello", b"\x01\x02\x03\x04\x01"))
    add("applayer_websocket", "frames", chunks([(0, ws_masked), (1, b"\x81\x07welcome"), (0, b"\x02\x03abc"),
                                                (0, b"\x80\x7e\x00\x80" + b"d" * 128), (1, b"\x88\x02\x03\xe8")]))
    def pg(tag, body):
        return bytes([tag]) + struct.pack(">I", len(body) + 4) + body
    pg_startup = b"\x00\x03\x00\x00user\x00alice\x00database\x00shop\x00\x00"
    pg_startup = struct.pack(">I", len(pg_startup) + 4) + pg_startup
    add("applayer_pgsql", "session", chunks([(0, pg_startup), (1, pg(ord("R"), b"\x00\x00\x00\x05salt")),
                                             (0, pg(ord("p"), b"md5xx\x00")),
                                             (1, pg(ord("R"), b"\x00" * 4) + pg(ord("S"), b"a\x00b\x00") + pg(ord("Z"), b"I")),
                                             (0, pg(ord("Q"), b"select 1;\x00")),
                                             (1, pg(ord("T"), b"\x00\x00") + pg(ord("D"), b"\x00\x01\x00\x00\x00\x01x")
                                              + pg(ord("C"), b"SELECT 1\x00") + pg(ord("Z"), b"I"))]))
    add("applayer_pgsql", "ssl_gap", chunks([(0, b"\x00\x00\x00\x08\x04\xd2\x16\x2f"), (1, b"N"), (0, pg_startup[:9])])
        + GAP(0) + chunks([(0, pg(ord("Q"), b"x\x00")), (1, pg(ord("E"), b"SERROR\x00\x00"))]) + END(0) + END(1))
    add("applayer_websocket", "oversized_gap", chunks([(1, b"\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x10" + b"z" * 300)])
        + GAP(1) + chunks([(0, ws_masked)]) + END(0) + END(1))
    def dhcp_msg(op, opts):
        return bytes([op, 1, 6, 0]) + b"\x01\x02\x03\x04" + bytes(20) + b"\x00\x11\x22\x33\x44\x55" + bytes(202) \
            + b"\x63\x82\x53\x63" + opts
    add("applayer_dhcp", "request_ack", chunks([(0, dhcp_msg(1, b"\x35\x01\x03\x0c\x04nas1\x37\x02\x01\x03\xff")),
                                               (1, dhcp_msg(2, b"\x35\x01\x05\x33\x04\x00\x00\x0e\x10\x03\x04\x0a\x00\x00\x01\xff"))]))
    add("applayer_dhcp", "truncated", chunks([(0, dhcp_msg(1, b"\x3c\x09abc"))]))
    krb_req = krb5_kdc_req(10, ["robin"], ["krbtgt", "EXAMPLE.ORG"])
    krb_rep = krb5_kdc_rep(11, 23, 18)
    rec = lambda m: struct.pack(">I", len(m)) + m  # noqa: E731
    add("applayer_krb5", "as_exchange", chunks([(0, rec(krb_req)), (1, rec(krb_rep))]))
    add("applayer_krb5", "tgs_error_gap",
        chunks([(0, rec(krb5_kdc_req(12, None, ["ldap", "dc01"]))[:30])]) + GAP(0)
        + chunks([(0, rec(krb_req)), (1, rec(krb5_error(25)))]) + END(1))
    def snmp_get(community):
        return der(0x30, der(2, b"\x01") + der(4, community) + der(0xA0, der(2, b"\x04\xd2") + der(2, b"\x00")
                   + der(2, b"\x00") + der(0x30, der(0x30, der(6, b"\x2b\x06\x01\x02\x01\x01\x01\x00") + b"\x05\x00"))))

    def snmp_trap(community):
        return der(0x30, der(2, b"\x00") + der(4, community) + der(0xA4, der(6, b"\x2b\x06\x01\x04\x01\x04\x01\x02\x15")
                   + der(0x40, b"\x7f\x00\x00\x01") + der(2, b"\x00") + der(2, b"\x00") + der(0x43, b"\x10")
                   + der(0x30, der(0x30, der(6, b"\x2b\x06\x01\x02\x01\x02\x01\x00") + b"\x05\x00"))))

    def one_datagram(build):
        # A community long enough that the message is one data operation
        # (7k + 1 bytes), so that over UDP it is one datagram.
        c = b"public"
        while (len(build(c)) - 1) % 7:
            c += b"x"
        return build(c)

    add("applayer_snmp", "get_v2c", chunks([(0, one_datagram(snmp_get))]))
    add("applayer_snmp", "trap_v1", chunks([(0, one_datagram(snmp_trap))]))
    def ntp_msg(version, mode, stratum, ref_id, auth):
        # 48 bytes and an authenticator making it one data operation
        # (7k + 1 bytes), so that over UDP it is one datagram.
        return (bytes([(version << 3) | mode, stratum, 6, 0xEC]) + b"\0\0\0\x10\0\0\0\x20" + ref_id
                + b"\0" * 24 + b"\xe9\x3c\x1f\x2a\x12\x34\x56\x78" + auth)

    add("applayer_telnet", "login", chunks([(1, b"\xff\xfd\x18\xff\xfb\x01"), (0, b"\xff\xfb\x18"),
                                            (0, b"\xff\xfa\x18\x00xterm\xff\xf0"), (1, b"login: "),
                                            (0, b"root\r\n"), (1, b"Password: ")]) + GAP(0)
        + chunks([(0, b"toor\r\n"), (1, b"# ")]) + END(0) + END(1))
    def dht_datagram(build):
        # Grow the transaction id until the message is one data operation.
        t = b"a"
        while (len(build(t)) - 1) % 7:
            t += b"a"
        return build(t)

    dht_id = b"abcdefghij0123456789"
    add("applayer_bittorrent_dht", "get_peers_reply", chunks([
        (0, dht_datagram(lambda t: b"d1:ad2:id20:" + dht_id + b"9:info_hash20:" + b"\x11" * 20 + b"e1:q9:get_peers1:t%d:" % len(t) + t + b"1:y1:qe")),
        (1, dht_datagram(lambda t: b"d1:rd2:id20:" + dht_id + b"5:nodes26:" + b"N" * 20 + b"\x0a\x07\x00\x09\x1a\xe1"
                         + b"5:token8:aoeusnth6:valuesl6:\x0a\x07\x00\x08\x1a\xe2ee1:t%d:" % len(t) + t + b"1:y1:re")),
        (0, dht_datagram(lambda t: b"d1:eli201e5:Errore1:t%d:" % len(t) + t + b"1:y1:ee"))]))
    add("applayer_ntp", "client_server", chunks([(0, ntp_msg(3, 3, 0, b"\0\0\0\0", b"\0\x01")),
                                                 (1, ntp_msg(3, 4, 2, b"RATE", b"\0\0\0\x01" + b"\xaa" * 12))]))
    def dns_name(n):
        return b"".join(bytes([len(label)]) + label.encode() for label in n.split(".")) + b"\0"

    def dns_msg(ident, flags, qs, ans):
        b = struct.pack(">HHHHHH", ident, flags, len(qs), len(ans), 0, 0)
        for n, t in qs:
            b += dns_name(n) + struct.pack(">HH", t, 1)
        for n, t, ttl, rd in ans:
            b += dns_name(n) + struct.pack(">HHIH", t, 1, ttl, len(rd)) + rd
        return b

    def dns_datagram(build):
        # Grow a label until the message is one data operation (one datagram).
        pad = "h"
        while (len(build(pad)) - 1) % 7:
            pad += "x"
        return build(pad)

    add("applayer_mdns", "query_announce", chunks([
        (0, dns_datagram(lambda h: dns_msg(0, 0, [(h + ".local", 12)], []))),
        (0, dns_datagram(lambda h: dns_msg(0, 0x8400, [], [
            (h + ".local", 1, 120, b"\x0a\x00\x00\x09"),
            ("_ipp._tcp.local", 12, 4500, dns_name(h + "._ipp._tcp.local")),
            (h + "._ipp._tcp.local", 16, 4500, b"\x05txtvy\x04abcd")])))]))
    add("applayer_llmnr", "query_answer", chunks([
        (0, dns_datagram(lambda h: dns_msg(0x1234, 0, [(h, 1)], []))),
        (1, dns_datagram(lambda h: dns_msg(0x1234, 0x8000, [(h, 1)], [(h, 1, 30, b"\x0a\x00\x00\x07")])))]))
    def ike_payload(nxt, body):
        return struct.pack(">BBH", nxt, 0, len(body) + 4) + body

    def ike_message(version, exch, first, payloads):
        return (struct.pack(">QQBBBBI", 0xE47A591FD057587F, 0, first, version, exch, 0, 0)
                + struct.pack(">I", len(payloads) + 28) + payloads)

    def ike_datagram(build):
        # Padding in the last payload makes the datagram one data
        # operation (7k + 1 bytes).
        pad = b""
        while (len(build(pad)) - 1) % 7:
            pad += b"\x00"
        return build(pad)

    def ike_v1_sa(pad):
        attrs = b"".join(struct.pack(">HH", 0x8000 | t, v) for t, v in [(1, 7), (14, 128), (2, 2), (4, 2), (3, 1)])
        xf = ike_payload(0, b"\x01\x01\x00\x00" + attrs)
        prop = ike_payload(0, b"\x01\x01\x00\x01" + xf)
        sa = ike_payload(13, struct.pack(">II", 1, 1) + prop)
        return ike_message(0x10, 2, 1, sa + ike_payload(0, b"\x4a\x13\x1c\x81" + pad))

    def ike_v2_init(pad):
        xfs = [(1, 12), (2, 5), (3, 12), (4, 14)]
        xf = b"".join(ike_payload(0 if i == len(xfs) - 1 else 3, struct.pack(">BBH", t, 0, v)) for i, (t, v) in enumerate(xfs))
        sa = ike_payload(34, ike_payload(0, b"\x01\x01\x00\x04" + xf))
        ke = ike_payload(40, struct.pack(">HH", 14, 0) + b"\xab" * 32)
        return ike_message(0x20, 34, 33, sa + ke + ike_payload(0, b"\x11" * 16 + pad))

    add("applayer_ike", "v1_main_mode_sa", chunks([(0, ike_datagram(ike_v1_sa))]))
    add("applayer_ike", "v2_sa_init", chunks([(0, ike_datagram(ike_v2_init))]))
    def enip(cmd, session, data):
        return struct.pack("<HHII8sI", cmd, len(data), session, 0, b"vigil\0\0\0", 0) + data
    enip_cip = b"\x0e\x03\x20\x01\x24\x01\x30\x07"
    enip_rr = enip(0x6F, 7, b"\0" * 6 + b"\x02\x00\0\0\0\0\xb2\x00" + struct.pack("<H", len(enip_cip)) + enip_cip)
    enip_rr_resp = enip(0x6F, 7, b"\0" * 6 + b"\x02\x00\0\0\0\0\xb2\x00\x04\x00\x8e\x00\x00\x00")
    add("applayer_enip", "register_cip", chunks([(0, enip(0x65, 0, b"\x01\x00\x00\x00")), (1, enip(0x65, 7, b"\x01\x00\x00\x00")),
                                                 (0, enip_rr), (1, enip_rr_resp)]))
    add("applayer_enip", "gap", chunks([(0, enip_rr[:20])]) + GAP(0) + chunks([(0, enip_rr), (1, enip_rr_resp)]) + END(0) + END(1))
    # LDAP: a bind, a search answered by an entry and its done, a response
    # to no request, a gap then a request that resyncs.
    def ldap_msg(mid, op):
        return der(0x30, der(2, bytes([mid])) + op)
    def ldap_result(tag, code, text):
        return der(tag, der(0x0A, bytes([code])) + der(4, b"") + der(4, text))
    ldap_bind = ldap_msg(1, der(0x60, der(2, b"\x03") + der(4, b"cn=admin,dc=example,dc=org") + der(0x80, b"secret")))
    ldap_search = ldap_msg(2, der(0x63, der(4, b"dc=example,dc=org") + der(0x0A, b"\x02") + der(0x0A, b"\x00")
                                  + der(2, b"\x00") + der(2, b"\x00") + der(1, b"\x00") + der(0x87, b"objectClass")
                                  + der(0x30, der(4, b"cn") + der(4, b"mail"))))
    ldap_entry = ldap_msg(2, der(0x64, der(4, b"cn=a,dc=example,dc=org")
                                 + der(0x30, der(0x30, der(4, b"cn") + der(0x31, der(4, b"a"))))))
    add("applayer_ldap", "bind_search", chunks([(0, ldap_bind), (1, ldap_msg(1, ldap_result(0x61, 0, b""))), (0, ldap_search),
                                               (1, ldap_entry + ldap_msg(2, ldap_result(0x65, 0, b"done")))]))
    add("applayer_ldap", "orphan_gap", chunks([(1, ldap_msg(9, ldap_result(0x6B, 32, b"no such"))), (0, ldap_bind[:9])])
        + GAP(0) + chunks([(0, ldap_search), (1, ldap_entry)]) + END(0) + END(1))
    def modbus(tid, unit, pdu, proto=0):
        return struct.pack(">HHHB", tid, proto, len(pdu) + 1, unit) + pdu
    add("applayer_modbus", "read_write", chunks([(0, modbus(1, 1, b"\x03\x00\x10\x00\x02")),
                                                (1, modbus(1, 1, b"\x03\x04\x12\x34\x56\x78")),
                                                (0, modbus(2, 1, b"\x10\x00\x09\x00\x03\x06\x00\x01\x00\x02\x00\x03")),
                                                (1, modbus(2, 1, b"\x10\x00\x09\x00\x03")),
                                                (0, modbus(3, 1, b"\x08\x00\x01\xff\x00")),
                                                (1, modbus(3, 1, b"\x81\x02"))]))
    add("applayer_modbus", "gap_unsolicited", chunks([(0, modbus(4, 7, b"\x2b\x0e\x01\x00")[:5])]) + GAP(0)
        + chunks([(1, modbus(9, 1, b"\x03\x02\x00\x01")), (0, modbus(5, 1, b"\x06\x00\x04\x00\x10", proto=3))])
        + END(0) + END(1))
    def dnp3_crc(b):
        crc = 0
        for x in b:
            crc ^= x
            for _ in range(8):
                crc = (crc >> 1) ^ 0xA6BC if crc & 1 else crc >> 1
        return struct.pack("<H", ~crc & 0xFFFF)
    def dnp3(control, dst, src, ud):
        h = bytes([0x05, 0x64, 5 + len(ud), control]) + struct.pack("<HH", dst, src)
        f = h + dnp3_crc(h)
        for i in range(0, len(ud), 16):
            f += ud[i:i + 16] + dnp3_crc(ud[i:i + 16])
        return f
    add("applayer_dnp3", "read_response", chunks([(0, dnp3(0xc4, 10, 1, b"\xc0\xc0\x01\x3c\x01\x06")),
                                               (1, dnp3(0x44, 1, 10, b"\xc0\xc0\x81\x80\x00\x1e\x02\x00\x00\x01\x01\x05\x00\x01\x06\x00"
                                                        b"\x01\x02\x00\x00\x02\x01\x01\x81"))]))
    add("applayer_dnp3", "segments_gap", chunks([(0, dnp3(0xc4, 10, 1, b"\x42\xc2\x05\x0c\x01\x28\x01\x00\x03")),
                                               (0, dnp3(0xc4, 10, 1, b"\x83\x00\x41\x01\xe8\x03\x00\x00\xd0\x07\x00\x00\x00")),
                                               (1, dnp3(0x44, 1, 10, b"\xc3\xf0\x82\x02\x00\x02\x01\x17\x01\x00\x81"))])
        + GAP(0) + chunks([(0, dnp3(0xc4, 10, 1, b"\xc4\xc4\x01\x63\x09\x00\x00\x00"))]) + END(0) + END(1))
    # NFS: ONC RPC records (TCP record marking) of an NFSv3 session (LOOKUP,
    # READ with data, WRITE FILE_SYNC) and an NFSv4 COMPOUND (PUTFH, READ)
    # cut by a gap.
    def xo(b):
        return struct.pack(">I", len(b)) + b + b"\0" * ((4 - len(b) % 4) % 4)

    def rpc_call(xid, vers, proc, args):
        body = struct.pack(">I", 0) + xo(b"client01") + struct.pack(">III", 1000, 1000, 0)
        return (struct.pack(">IIIIII", xid, 0, 2, 100003, vers, proc) + struct.pack(">I", 1) + xo(body)
                + struct.pack(">II", 0, 0) + args)

    def rpc_reply(xid, results):
        return struct.pack(">IIIIII", xid, 1, 0, 0, 0, 0) + results

    def rm(m):
        return struct.pack(">I", len(m) | 0x80000000) + m
    nfs_fh = xo(b"file-handle-0001")
    add("applayer_nfs", "v3_read_write", chunks([
        (0, rm(rpc_call(1, 3, 3, xo(b"dir-handle") + xo(b"a.txt")))),
        (1, rm(rpc_reply(1, struct.pack(">I", 0) + nfs_fh + struct.pack(">II", 0, 0)))),
        (0, rm(rpc_call(2, 3, 6, nfs_fh + struct.pack(">QI", 0, 4096)))),
        (1, rm(rpc_reply(2, struct.pack(">II", 0, 1) + bytes(84) + struct.pack(">II", 5, 1) + xo(b"hello")))),
        (0, rm(rpc_call(3, 3, 7, nfs_fh + struct.pack(">QII", 0, 3, 2) + xo(b"abc")))),
        (1, rm(rpc_reply(3, struct.pack(">III", 0, 0, 0) + struct.pack(">II", 3, 2) + b"verifier")))]))
    v4_read = (xo(b"") + struct.pack(">II", 0, 2) + struct.pack(">I", 22) + nfs_fh + struct.pack(">I", 25)
               + bytes(16) + struct.pack(">QI", 0, 100))
    add("applayer_nfs", "v4_gap", chunks([(0, rm(rpc_call(9, 4, 1, v4_read))[:30])]) + GAP(0)
        + chunks([(0, rm(rpc_call(10, 4, 1, v4_read))),
                  (1, rm(rpc_reply(10, struct.pack(">I", 0) + xo(b"") + struct.pack(">IIIII", 2, 22, 0, 25, 0)
                                   + struct.pack(">I", 1) + xo(b"v4 data"))))]) + END(0) + END(1))
    # TFTP: a read and a write request (each one datagram of 7k + 1 bytes).
    add("applayer_tftp", "rrq_wrq", chunks([(0, b"\x00\x01pxelinux.0\x00octet\x00\x00"),
                                           (0, b"\x00\x02cfg\x00netascii\x00\x00\x00\x00\x00\x00")]))
    # QUIC: a gQUIC Q043 CHLO in the clear (one datagram of 7k + 1 bytes),
    # the start of a real IETF client Initial (crates/applayer/tests/data)
    # and a short-header datagram.
    def gquic_chlo(pad):
        tags = [(b"PAD\0", pad), (b"SNI\0", b"www.example.org"), (b"VER\0", b"Q043"),
                (b"UAID", b"Chrome/70.0"), (b"CFCW", b"\0\0\xf0\0")]
        msg = b"CHLO" + struct.pack("<HH", len(tags), 0)
        end = 0
        for t, v in tags:
            end += len(v)
            msg += t + struct.pack("<I", end)
        msg += b"".join(v for _, v in tags)
        return (b"\x09" + b"\x11" * 8 + b"Q043\x01" + b"\xab" * 12 + b"\xa0\x01"
                + struct.pack(">H", len(msg)) + msg)
    pad = b""
    while (len(gquic_chlo(pad)) - 1) % 7:
        pad += b"\x00"
    add("applayer_quic", "gquic_chlo", chunks([(0, gquic_chlo(pad))]))
    with open(os.path.join(ROOT, "crates/applayer/tests/data/quic_client_initial.bin"), "rb") as f:
        add("applayer_quic", "ietf_initial_head", chunks([(0, f.read()[:442])]) + chunks([(1, b"\x41" + b"\x00" * 6)]))
    pop3_mail = (b"Subject: hi\r\nContent-Type: multipart/mixed; boundary=\"B\"\r\n\r\n--B\r\n"
                 b"Content-Disposition: attachment; filename=\"a.exe\"\r\nContent-Transfer-Encoding: base64\r\n\r\n"
                 b"TVpQAAIA\r\n..x\r\n--B--\r\n.\r\n")
    add("applayer_pop3", "session", chunks([(1, b"+OK ready\r\n"), (0, b"CAPA\r\n"), (1, b"+OK\r\nTOP\r\nUIDL\r\n.\r\n"),
                                            (0, b"USER a\r\nPASS b\r\nLIST\r\n"), (1, b"+OK\r\n+OK\r\n+OK\r\n1 10\r\n.\r\n"),
                                            (0, b"RETR 1\r\n"), (1, b"+OK 99 octets\r\n" + pop3_mail),
                                            (0, b"AUTH PLAIN\r\n"), (1, b"+ \r\n"), (0, b"AGFsaWNl\r\n"), (1, b"+OK\r\n"),
                                            (0, b"STLS\r\n"), (1, b"+OK go\r\n\x16\x03\x01")]))
    add("applayer_pop3", "gap", chunks([(0, b"RETR 1\r\n"), (1, b"+OK\r\n" + pop3_mail[:40])]) + GAP(1)
        + chunks([(1, pop3_mail[60:] + b"+OK\r\n"), (0, b"FROB 1 2\r\nDELE 1 2\r\n")]) + END(0) + END(1))
    def tpkt(b):
        return b"\x03\x00" + struct.pack(">H", len(b) + 4) + b

    def x224(code, var):
        body = bytes([code]) + b"\x00\x00\x12\x34\x00" + var
        return tpkt(bytes([len(body)]) + body)
    rdp_core = (struct.pack("<IHHHHII", 0x80004, 1280, 1024, 0xCA01, 0xAA03, 0x409, 7601) + "WS".encode("utf-16-le").ljust(32, b"\0")
                + struct.pack("<III", 4, 0, 12) + b"\0" * 64 + struct.pack("<HHIHHH", 0xCA01, 1, 0, 24, 15, 3) + b"\0" * 64 + b"\x06\0\0\0\0\0")
    rdp_ud = struct.pack("<HH", 0xC001, len(rdp_core) + 4) + rdp_core + struct.pack("<HHI", 0xC003, 20, 1) + b"rdpdr\0\0\0" + b"\0\0\x80\x80"
    rdp_ccr = b"\x00\x08\x00\x10\x00\x01\xc0\x00Duca" + struct.pack(">H", 0x8000 | len(rdp_ud)) + rdp_ud
    rdp_gcc = b"\x00\x05\x00\x14\x7c\x00\x01" + struct.pack(">H", 0x8000 | len(rdp_ccr)) + rdp_ccr
    rdp_params = b"\x30\x18" + b"".join(b"\x02\x01" + bytes([v]) for v in [34, 2, 0, 1, 0, 1, 255, 2])
    rdp_ci_body = b"\x04\x01\x01\x04\x01\x01\x01\x01\xff" + rdp_params * 3 + b"\x04\x82" + struct.pack(">H", len(rdp_gcc)) + rdp_gcc
    rdp_ci = tpkt(b"\x02\xf0\x80\x7f\x65\x82" + struct.pack(">H", len(rdp_ci_body)) + rdp_ci_body)
    add("applayer_rdp", "setup", chunks([(0, x224(0xE0, b"Cookie: mstshash=alice\r\n\x01\x00\x08\x00\x00\x00\x00\x00")),
                                        (1, x224(0xD0, b"\x02\x1f\x08\x00\x00\x00\x00\x00")), (0, rdp_ci),
                                        (1, tpkt(b"\x02\xf0\x80\x7f\x66\x03\x0a\x01\x00"))]))
    add("applayer_rdp", "tls_gap", chunks([(0, x224(0xE0, b"\x01\x08\x08\x00\x03\x00\x00\x00")), (0, rdp_ci[:50])]) + GAP(0)
        + chunks([(1, x224(0xD0, b"\x02\x00\x08\x00\x01\x00\x00\x00")), (0, b"\x16\x03\x01\x00\x01\x01")]) + END(0) + END(1))
    tls = tls_records()
    add("applayer_tls", "tls12", chunks([(0, tls["tls12_client.bin"]), (1, tls["tls12_server.bin"])]))
    add("applayer_tls", "tls13_client", chunks([(0, tls["tls13_client.bin"])]))
    add("applayer_tls", "gap", chunks([(0, tls["tls12_client.bin"][:100])]) + GAP(0)
        + chunks([(1, tls["tls12_server.bin"])]))

    extra = ['alert http any any -> any any (msg:"x"; http.uri; content:"/index.html"; sid:100;)']
    add("engine", "http", engine_seed(0, [], tcp_conv(0, HTTP_REQ + HTTP_REQ2, HTTP_RESP)))
    add("engine", "http_extra_rule", engine_seed(0, extra, tcp_conv(0, HTTP_REQ, HTTP_RESP), mask=0))
    add("engine", "http_inline", engine_seed(1, [], tcp_conv(0, b"GET /attack HTTP/1.1\r\n\r\n", HTTP_RESP)))
    add("engine", "http_v6_overlap", engine_seed(4 << 2, [],
        tcp_conv(3, HTTP_REQ, HTTP_GZIP, v6=True)[:4] + [((3 << 3) | 0x40 | 0x80, PSH | ACK, HTTP_REQ2)]))
    add("engine", "dns_udp", engine_seed(0, [], [((2 << 3) | 1, 0, DNS_Q), ((2 << 3) | 1 | 4, 0, DNS_R)]))
    add("engine", "tls_icmp", engine_seed(2, [],
        tcp_conv(1, tls["tls12_client.bin"], tls["tls12_server.bin"]) + [(2, 0, b"abcd")]))
    add("engine", "smb_inline", engine_seed(1, [], tcp_conv(6, b"\0\0\0\x20\xffSMB" + bytes(28), b"\0\0\0\0")))
    add("engine", "raw_frames", engine_seed(0, [], [(3, 0, f) for lt, f in frames if lt == 1][:6]))

    for target, files in corp.items():
        d = os.path.join(out, target)
        os.makedirs(d, exist_ok=True)
        for name, data in files:
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        print("%-18s %3d seeds %7d bytes" % (target, len(files), sum(len(x) for _, x in files)))


if __name__ == "__main__":
    main()
