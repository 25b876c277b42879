//! TCP (RFC 9293) header and options.
//!
//! Header checks, each fatal to the transport layer (`l4: L4::None`): at
//! least 20 bytes (`tcp.pkt_too_small`), the data offset within the data
//! (`tcp.hlen_too_small`), data offset >= 5 (`tcp.invalid_optlen`, which is
//! what Suricata's unsigned option-length arithmetic reports).
//!
//! Options are read like Suricata's `DecodeTCPOptions`: MSS, window scale,
//! SACK-permitted, SACK, timestamps, Fast Open (also the experimental
//! 0xF989 form), MD5 and TCP-AO. A bad length of one of those raises
//! `tcp.opt_invalid_len` and the option is ignored; a length running past
//! the options ends the walk with the same event; a repeat raises
//! `tcp.opt_duplicate` and the first one wins. An empty SACK option
//! (length 2) is accepted, as Suricata accepts it.
//!
//! Not done: checksum verification, urgent data handling.

use crate::bytes::{array, be16, be32, u8_at};
use crate::decoder::Decoder;
use crate::DecoderEvent as E;
use crate::{SackBlocks, TcpInfo, L4};

const TCP_HEADER_LEN: usize = 20;

const OPT_EOL: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_MSS: u8 = 2;
const OPT_WS: u8 = 3;
const OPT_SACKOK: u8 = 4;
const OPT_SACK: u8 = 5;
const OPT_TS: u8 = 8;
const OPT_MD5: u8 = 19;
const OPT_AO: u8 = 29;
const OPT_TFO: u8 = 34;
const OPT_EXP1: u8 = 253;
const OPT_EXP2: u8 = 254;

const OPT_SACK_MIN_LEN: usize = 10;
const OPT_SACK_MAX_LEN: usize = 34;
const OPT_TFO_MIN_LEN: usize = 6;
const OPT_TFO_MAX_LEN: usize = 18;
const TFO_EXP_MAGIC: u16 = 0xf989;

impl Decoder<'_, '_> {
    pub(crate) fn tcp(&mut self, off: usize, end: usize) {
        let buf = self.bytes(off, end);
        let Some(h) = array::<TCP_HEADER_LEN>(buf, 0) else {
            self.event(E::TcpPktTooSmall);
            return;
        };
        let hlen = usize::from(h[12] >> 4) * 4;
        if buf.len() < hlen {
            self.event(E::TcpHlenTooSmall);
            return;
        }
        if hlen < TCP_HEADER_LEN {
            self.event(E::TcpInvalidOptlen);
            return;
        }
        let mut info = TcpInfo {
            src_port: be16([h[0], h[1]]),
            dst_port: be16([h[2], h[3]]),
            seq: be32([h[4], h[5], h[6], h[7]]),
            ack: be32([h[8], h[9], h[10], h[11]]),
            flags: h[13],
            window: be16([h[14], h[15]]),
            mss: None,
            wscale: None,
            sack_permitted: false,
            timestamp: None,
            sack: None,
            tfo: false,
            md5: false,
            ao: false,
            urgent: be16([h[18], h[19]]),
        };
        if hlen > TCP_HEADER_LEN {
            let opts = buf.get(TCP_HEADER_LEN..hlen).unwrap_or(&[]);
            self.tcp_options(opts, off + TCP_HEADER_LEN, &mut info);
        }
        let body = off + hlen;
        self.set_l4(L4::Tcp(info), off..body, body..end);
    }

    /// `base` is the frame offset of `opts`, for the SACK block position.
    fn tcp_options(&mut self, opts: &[u8], base: usize, info: &mut TcpInfo) {
        let mut sack_ok_seen = false;
        let mut pos = 0usize;
        while let Some(&kind) = opts.get(pos) {
            match kind {
                OPT_EOL => break,
                OPT_NOP => {
                    pos += 1;
                    continue;
                }
                _ => {}
            }
            let remaining = opts.len() - pos;
            let Some(len) = u8_at(opts, pos + 1).map(usize::from) else {
                break;
            };
            if len > remaining || len < 2 {
                self.event(E::TcpOptInvalidLen);
                return;
            }
            let data = opts.get(pos + 2..pos + len).unwrap_or(&[]);
            let mut bad_len = false;
            let mut duplicate = false;
            match kind {
                OPT_WS => match data {
                    &[ws] => duplicate = info.wscale.replace_if_none(ws),
                    _ => bad_len = true,
                },
                OPT_MSS => match array::<2>(data, 0) {
                    Some(m) if data.len() == 2 => {
                        duplicate = info.mss.replace_if_none(be16(*m));
                    }
                    _ => bad_len = true,
                },
                OPT_SACKOK => {
                    if len != 2 {
                        bad_len = true;
                    } else {
                        duplicate = std::mem::replace(&mut sack_ok_seen, true);
                        info.sack_permitted = true;
                    }
                }
                OPT_TS => match (array::<4>(data, 0), array::<4>(data, 4)) {
                    (Some(v), Some(e)) if data.len() == 8 => {
                        duplicate = info.timestamp.replace_if_none((be32(*v), be32(*e)));
                    }
                    _ => bad_len = true,
                },
                OPT_SACK => {
                    if len != 2
                        && (!(OPT_SACK_MIN_LEN..=OPT_SACK_MAX_LEN).contains(&len)
                            || (len - 2) % 8 != 0)
                    {
                        bad_len = true;
                    } else {
                        let blocks = SackBlocks {
                            offset: (base + pos + 2) as u32,
                            count: ((len - 2) / 8) as u8,
                        };
                        duplicate = info.sack.replace_if_none(blocks);
                    }
                }
                OPT_TFO => {
                    if len != 2
                        && (!(OPT_TFO_MIN_LEN..=OPT_TFO_MAX_LEN).contains(&len)
                            || (len - 2) % 2 != 0)
                    {
                        bad_len = true;
                    } else {
                        duplicate = std::mem::replace(&mut info.tfo, true);
                    }
                }
                OPT_EXP1 | OPT_EXP2 => {
                    if len == 4 || len == 12 {
                        if array::<2>(data, 0).is_some_and(|m| be16(*m) == TFO_EXP_MAGIC) {
                            duplicate = std::mem::replace(&mut info.tfo, true);
                        }
                    } else {
                        bad_len = true;
                    }
                }
                OPT_MD5 => {
                    if len != 18 {
                        bad_len = true;
                    } else {
                        info.md5 = true;
                    }
                }
                OPT_AO => {
                    if len < 4 {
                        bad_len = true;
                    } else {
                        info.ao = true;
                    }
                }
                _ => {}
            }
            if bad_len {
                self.event(E::TcpOptInvalidLen);
            } else if duplicate {
                self.event(E::TcpOptDuplicate);
            }
            pos += len;
        }
    }
}

/// Keeps the first value of a repeated option.
trait ReplaceIfNone<T> {
    /// Stores `v` if empty; returns `true` if a value was already there.
    fn replace_if_none(&mut self, v: T) -> bool;
}

impl<T> ReplaceIfNone<T> for Option<T> {
    fn replace_if_none(&mut self, v: T) -> bool {
        if self.is_some() {
            return true;
        }
        *self = Some(v);
        false
    }
}
