"""Classic pcap reading shared by the scripts (repeat_pcap.py,
live-devmix.sh): the file header and the records, with their byte order."""
import struct

MAGIC_LE = (0xA1B2C3D4, 0xA1B23C4D)
MAGIC_BE = (0xD4C3B2A1, 0x4D3CB2A1)
NANO = (0xA1B23C4D, 0x4D3CB2A1)


def read_header(f):
    """The 24-byte global header of a classic pcap: (bytes, struct byte-order
    prefix, nanosecond timestamps?, link type). ValueError if it is not one
    (pcapng is not handled)."""
    gh = f.read(24)
    if len(gh) < 24:
        raise ValueError("not a classic pcap file (too short)")
    magic = struct.unpack("<I", gh[:4])[0]
    if magic in MAGIC_LE:
        end = "<"
    elif magic in MAGIC_BE:
        end = ">"
    else:
        raise ValueError("not a classic pcap file (pcapng is not handled)")
    linktype = struct.unpack(end + "I", gh[20:24])[0] & 0x0FFFFFFF
    return gh, end, magic in NANO, linktype


def records(f, end):
    """Yields (ts_sec, ts_frac, caplen, orig_len, data) until the end of
    the file or a record cut short."""
    while True:
        h = f.read(16)
        if len(h) < 16:
            return
        ts, frac, cap, length = struct.unpack(end + "IIII", h)
        data = f.read(cap)
        if len(data) < cap:
            return
        yield ts, frac, cap, length, data
