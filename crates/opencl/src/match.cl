// Vigil's device prefilter: Aho-Corasick over a batch of inspection
// buffers, one buffer per work-item (MIDeA's mapping).
//
// Every rule group's automaton lives in the same few arrays; a group's
// descriptor gives its kind and where its pieces start:
//   groups[8g + 0]  kind: 0 = AC-Full, 1 = AC-Compact
//   groups[8g + 1]  AC-Full: first entry of the group's table in `full`
//                   AC-Compact: first row (3 uints each) in `rows`
//   groups[8g + 2]  AC-Compact: first entry of the group's band in `band`
//   groups[8g + 3]  first entry of the group's `out_start`
//   groups[8g + 4]  first entry of the group's `out_slots`
// State numbers, band offsets and match-list offsets inside a group are the
// group's own (exactly the CPU engine's tables), so uploading is a copy.
//
// AC-Full entries: (next << 8) | has_match, where `next << 8` is the first
// entry of the next state's row (the CPU engine's u32 layout; its u16
// layout is widened on upload). Case folding is in the table.
// AC-Compact rows: off, fail, lo | len << 16; band entries: next | MATCH,
// 0 = follow the failure link. Input is folded to lower case first.
//
// Buffers start on 16-byte boundaries of `input` and are read 16 bytes at a
// time (one vload16: a wide load). Matches go to a bounded output area as
// (buffer, slot, end) triples; a work-item that finds the area full marks
// its buffer in `lost` and the host re-runs that buffer on the CPU.

#define MATCH_C 0x80000000u

static inline void emit_state(
    __global const uint *out_start, __global const uint *out_slots,
    uint ob, uint sb, uint state, uint buf, uint end,
    __global uint *out, __global volatile uint *count, uint cap, uint *lost)
{
    uint a = out_start[ob + state];
    uint z = out_start[ob + state + 1];
    for (uint k = a; k < z; k++) {
        uint at = atomic_inc(count);
        if (at < cap) {
            out[3 * at] = buf;
            out[3 * at + 1] = out_slots[sb + k];
            out[3 * at + 2] = end;
        } else {
            *lost = 1;
        }
    }
}

__kernel void match_batch(
    __global const uchar *input,
    __global const uint *desc,      // per work-item: offset, length, group, buffer
    uint nbuf,
    __global const uint *groups,
    __global const uint *full,
    __global const uint *rows,
    __global const uint *band,
    __global const uint *out_start,
    __global const uint *out_slots,
    __global uint *out,
    __global volatile uint *count,
    uint cap,
    __global uint *lost_flags)
{
    uint i = get_global_id(0);
    if (i >= nbuf) {
        return;
    }
    uint off = desc[4 * i];
    uint len = desc[4 * i + 1];
    uint g = desc[4 * i + 2];
    uint buf = desc[4 * i + 3];
    uint kind = groups[8 * g];
    uint tb = groups[8 * g + 1];
    uint bb = groups[8 * g + 2];
    uint ob = groups[8 * g + 3];
    uint sb = groups[8 * g + 4];
    uint lost = 0;
    uint s = 0;
    uchar chunk[16];
    for (uint p = 0; p < len; p += 16) {
        vstore16(vload16(0, input + off + p), 0, chunk);
        uint lim = min(16u, len - p);
        if (kind == 0) {
            for (uint j = 0; j < lim; j++) {
                uint e = full[tb + s + chunk[j]];
                s = e & ~0xffu;
                if (e & 1u) {
                    emit_state(out_start, out_slots, ob, sb, s >> 8, buf, p + j + 1,
                               out, count, cap, &lost);
                }
            }
        } else {
            for (uint j = 0; j < lim; j++) {
                uint c = chunk[j];
                uint b = (c >= 'A' && c <= 'Z') ? c + 32u : c;
                uint e;
                for (;;) {
                    uint r = 3 * (tb + s);
                    uint lolen = rows[r + 2];
                    uint k = b - (lolen & 0xffffu);
                    if (k < (lolen >> 16)) {
                        e = band[bb + rows[r] + k];
                        if (e != 0) {
                            break;
                        }
                    }
                    if (s == 0) {
                        e = 0;
                        break;
                    }
                    s = rows[r + 1];
                }
                s = e & ~MATCH_C;
                if (e & MATCH_C) {
                    emit_state(out_start, out_slots, ob, sb, s, buf, p + j + 1,
                               out, count, cap, &lost);
                }
            }
        }
    }
    lost_flags[buf] = lost;
}
