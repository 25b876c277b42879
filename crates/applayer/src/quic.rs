//! QUIC over UDP (Suricata's `quic`): IETF QUIC long and short headers,
//! Google QUIC (gQUIC Q043..Q046 public headers, Q050 long headers).
//!
//! Client and server **Initial** packets are decrypted with the initial
//! secrets of RFC 9001 section 5.2 (HKDF-SHA256 over the client's first
//! destination connection ID with the version's salt), header protection
//! removed with AES-128-ECB and the payload opened with AES-128-GCM
//! (RustCrypto `hkdf`, `aes`, `aes-gcm`). CRYPTO frames are reassembled
//! per direction up to [`MAX_CRYPTO`] bytes, across Initial packets and
//! out of order, and the TLS ClientHello / ServerHello in them parsed with
//! [`crate::tls::parse_hello`]: SNI, extensions (with the SNI and ALPN
//! values), JA3 / JA3S and JA4 (`q` for QUIC). Unencrypted gQUIC handshake
//! messages (`CHLO` in STREAM frames, or Q050's CRYPTO-stream frames) give
//! the SNI and `UAID` tags and the CYU fingerprint.
//!
//! As Suricata: one transaction per long-header packet parsed (the
//! Initial packet that completes a hello carries its fields; others only
//! the header), nothing for short-header packets, and nothing more in a
//! direction once its hello was seen (the rest is encrypted with keys a
//! passive observer does not have). A Retry from the server discards the
//! keys once (the client starts over with a new connection ID).
//!
//! Not done, as in Suricata: QUIC v2 (RFC 9369) Initial decryption, the
//! user agent of IETF QUIC (only gQUIC's `UAID` is read).

use md5::{Digest as _, Md5};
use serde_json::{json, Map, Value};

use aes::cipher::{generic_array::GenericArray, BlockEncrypt, KeyInit};
use aes::Aes128;
use aes_gcm::aead::AeadInPlace;
use aes_gcm::Aes128Gcm;
use hkdf::Hkdf;
use sha2::Sha256;

use crate::events::{AppLayerEvent, QuicEvent};
use crate::msg::{MsgProto, MsgTxData, Parsed};
use crate::state::TxId;
use crate::{AppProto, BufferId, Direction};

/// Suricata's default detection ports for QUIC over UDP.
pub const PORTS: [u16; 2] = [443, 80];

/// Largest CRYPTO stream kept per direction (Suricata's
/// `QUIC_MAX_CRYPTO_FRAG_LEN`): a frame reaching past it raises
/// `crypto_frag_too_long` and is dropped.
pub const MAX_CRYPTO: u64 = 65535;

/// Most out-of-order CRYPTO fragments kept per direction.
const MAX_PENDING: usize = 64;

pub const V1: u32 = 0x0000_0001;
pub const Q043: u32 = 0x5130_3433;
pub const Q044: u32 = 0x5130_3434;
pub const Q045: u32 = 0x5130_3435;
pub const Q046: u32 = 0x5130_3436;
pub const Q050: u32 = 0x5130_3530;

/// The gQUIC versions with Google's own long header (nibble connection ID
/// lengths); Q050 uses the IETF invariants.
fn is_gquic(v: u32) -> bool {
    matches!(v, Q043 | Q044 | Q045 | Q046)
}

/// The EVE `version` string: `Q046` for gQUIC, hex digits otherwise
/// (`1` for QUIC v1, `ff00001d` for draft 29).
pub fn version_string(v: u32) -> String {
    let b = v.to_be_bytes();
    if b[0] == b'Q' && b[1..].iter().all(u8::is_ascii_digit) {
        String::from_utf8_lossy(&b).into_owned()
    } else {
        format!("{v:x}")
    }
}

/// A packet's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PacketType {
    #[default]
    Initial,
    ZeroRtt,
    Handshake,
    Retry,
    VersionNegotiation,
    Short,
}

/// A parsed packet header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub first: u8,
    pub ty: PacketType,
    pub version: u32,
    /// The four version bytes as on the wire (empty when the header has
    /// none): `quic.version`.
    pub version_buf: Vec<u8>,
    pub dcid: Vec<u8>,
    pub scid: Vec<u8>,
    /// Offset of the packet number (IETF Initial) or of the payload.
    pub hlen: usize,
    /// Bytes of packet number and payload after `hlen`.
    pub length: usize,
}

/// A QUIC variable-length integer (RFC 9000 section 16).
pub fn varint(b: &mut &[u8]) -> Option<u64> {
    let first = *b.first()?;
    let n = 1usize << (first >> 6);
    let bytes = b.get(..n)?;
    let mut v = u64::from(first & 0x3f);
    for &x in &bytes[1..] {
        v = (v << 8) | u64::from(x);
    }
    *b = &b[n..];
    Some(v)
}

fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let v = b.get(..n)?;
    *b = &b[n..];
    Some(v)
}

/// Parses one packet header at the start of `input` as Suricata does
/// (its probe accepts whatever parses here). `None`: not QUIC, or
/// truncated.
pub fn parse_header(input: &[u8]) -> Option<Header> {
    let mut b = input;
    let first = *take(&mut b, 1)?.first()?;
    let mut h = Header {
        first,
        ..Default::default()
    };
    if first & 0x80 == 0 && first & 0x40 == 0 {
        // gQUIC public header (Q043 and before).
        if first & 0x08 != 0 {
            h.dcid = take(&mut b, 8)?.to_vec();
        } else if first & 0x04 != 0 {
            take(&mut b, 32)?;
        }
        if first & 0x01 != 0 {
            h.version_buf = take(&mut b, 4)?.to_vec();
            h.version = u32::from_be_bytes(h.version_buf[..].try_into().ok()?);
            h.ty = PacketType::Initial;
        } else {
            h.ty = PacketType::Short;
        }
        take(&mut b, 1 + usize::from((first & 0x30) >> 4))?;
        if first & 0x08 != 0 {
            take(&mut b, 12)?;
        }
    } else if first & 0x80 == 0 {
        h.ty = PacketType::Short;
    } else {
        h.version_buf = take(&mut b, 4)?.to_vec();
        h.version = u32::from_be_bytes(h.version_buf[..].try_into().ok()?);
        h.ty = if h.version == 0 {
            PacketType::VersionNegotiation
        } else if is_gquic(h.version) && h.version != Q046 {
            match first & 0x7f {
                0x7f => PacketType::Initial,
                0x7e => PacketType::Retry,
                0x7d => PacketType::Handshake,
                0x7c => PacketType::ZeroRtt,
                _ => return None,
            }
        } else {
            match (first & 0x30) >> 4 {
                0 => PacketType::Initial,
                1 => PacketType::ZeroRtt,
                2 => PacketType::Handshake,
                _ => PacketType::Retry,
            }
        };
        if is_gquic(h.version) {
            let lens = *take(&mut b, 1)?.first()?;
            let nib = |n: u8| if n == 0 { 0 } else { usize::from(n) + 3 };
            h.dcid = take(&mut b, nib(lens >> 4))?.to_vec();
            h.scid = take(&mut b, nib(lens & 0x0f))?.to_vec();
        } else {
            let n = usize::from(*take(&mut b, 1)?.first()?);
            h.dcid = take(&mut b, n)?.to_vec();
            let n = usize::from(*take(&mut b, 1)?.first()?);
            h.scid = take(&mut b, n)?.to_vec();
        }
        if h.ty == PacketType::Initial {
            if is_gquic(h.version) {
                take(&mut b, 4 + 12)?;
            } else {
                let token = usize::try_from(varint(&mut b)?).ok()?;
                take(&mut b, token)?;
                let len = usize::try_from(varint(&mut b)?).ok()?;
                if len > b.len() || len > usize::from(u16::MAX) {
                    return None;
                }
                h.hlen = input.len() - b.len();
                h.length = len;
                return Some(h);
            }
        }
    }
    if b.len() > usize::from(u16::MAX) {
        return None;
    }
    h.hlen = input.len() - b.len();
    h.length = b.len();
    Some(h)
}

/// Whether a datagram is QUIC, as Suricata's probing parser decides on
/// its ports: its header parses.
pub fn probe(datagram: &[u8]) -> bool {
    parse_header(datagram).is_some()
}

// ---------------------------------------------------------------------
// Initial packet protection (RFC 9001 section 5)

/// The initial salt of a version (RFC 9001, drafts 23 to 34, Q050).
fn initial_salt(version: u32) -> Option<&'static [u8; 20]> {
    Some(match version {
        Q050 => &[
            0x50, 0x45, 0x74, 0xef, 0xd0, 0x66, 0xfe, 0x2f, 0x9d, 0x94, 0x5c, 0xfc, 0xdb, 0xd3,
            0xa7, 0xf0, 0xd3, 0xb5, 0x6b, 0x45,
        ],
        0xff00_001d..=0xff00_0020 => &[
            0xaf, 0xbf, 0xec, 0x28, 0x99, 0x93, 0xd2, 0x4c, 0x9e, 0x97, 0x86, 0xf1, 0x9c, 0x61,
            0x11, 0xe0, 0x43, 0x90, 0xa8, 0x99,
        ],
        0xfaceb002 | 0xff00_0017..=0xff00_001c => &[
            0xc3, 0xee, 0xf7, 0x12, 0xc7, 0x2e, 0xbb, 0x5a, 0x11, 0xa7, 0xd2, 0x43, 0x2b, 0xb4,
            0x63, 0x65, 0xbe, 0xf9, 0xf5, 0x02,
        ],
        V1 | 0xff00_0021..=0xff00_0022 => &[
            0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8,
            0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a,
        ],
        _ => return None,
    })
}

/// TLS 1.3's HKDF-Expand-Label with an empty context.
fn expand_label(hk: &Hkdf<Sha256>, label: &[u8], out: &mut [u8]) {
    let len = (out.len() as u16).to_be_bytes();
    let llen = [(6 + label.len()) as u8];
    let info: [&[u8]; 5] = [&len, &llen, b"tls13 ", label, &[0]];
    // The output lengths used here (16, 12, 32) are far below HKDF's cap.
    let _ = hk.expand_multi_info(&info, out);
}

/// The keys of one direction.
struct DirKeys {
    hp: Aes128,
    aead: Aes128Gcm,
    iv: [u8; 12],
}

/// The packet key, IV and header protection key of a secret.
fn derive(secret: &[u8; 32]) -> Option<([u8; 16], [u8; 12], [u8; 16])> {
    let hk = Hkdf::<Sha256>::from_prk(secret).ok()?;
    let mut key = [0u8; 16];
    let mut iv = [0u8; 12];
    let mut hp = [0u8; 16];
    expand_label(&hk, b"quic key", &mut key);
    expand_label(&hk, b"quic iv", &mut iv);
    expand_label(&hk, b"quic hp", &mut hp);
    Some((key, iv, hp))
}

/// The client's and the server's initial secrets.
fn initial_secrets(version: u32, dcid: &[u8]) -> Option<([u8; 32], [u8; 32])> {
    let salt = initial_salt(version)?;
    let hk = Hkdf::<Sha256>::new(Some(salt), dcid);
    let mut c = [0u8; 32];
    let mut s = [0u8; 32];
    expand_label(&hk, b"client in", &mut c);
    expand_label(&hk, b"server in", &mut s);
    Some((c, s))
}

impl DirKeys {
    fn new(secret: &[u8; 32]) -> Option<DirKeys> {
        let (key, iv, hp) = derive(secret)?;
        Some(DirKeys {
            hp: Aes128::new(GenericArray::from_slice(&hp)),
            aead: Aes128Gcm::new(GenericArray::from_slice(&key)),
            iv,
        })
    }

    /// Removes header protection and opens the payload of the packet
    /// `pkt` (from its first byte) whose packet number starts at `hlen`
    /// and runs with the payload for `length` bytes. Returns the
    /// plaintext frames.
    fn open(&self, pkt: &[u8], hlen: usize, length: usize) -> Option<Vec<u8>> {
        if length < 4 + 16 {
            return None;
        }
        let sample = pkt.get(hlen + 4..hlen + 20)?;
        let mut mask = GenericArray::clone_from_slice(sample);
        self.hp.encrypt_block(&mut mask);
        let bits = if pkt[0] & 0x80 != 0 { 0x0f } else { 0x1f };
        let first = pkt[0] ^ (mask[0] & bits);
        let pn_len = usize::from(first & 3) + 1;
        let mut aad = pkt.get(..hlen + pn_len)?.to_vec();
        aad[0] = first;
        let mut pn = 0u64;
        for i in 0..pn_len {
            aad[hlen + i] ^= mask[1 + i];
            pn = (pn << 8) | u64::from(aad[hlen + i]);
        }
        let body = pkt.get(hlen + pn_len..hlen + length)?;
        if body.len() < 16 {
            return None;
        }
        let (ct, tag) = body.split_at(body.len() - 16);
        let mut nonce = self.iv;
        for (n, p) in nonce[4..].iter_mut().zip(pn.to_be_bytes()) {
            *n ^= p;
        }
        let mut out = ct.to_vec();
        self.aead
            .decrypt_in_place_detached(
                GenericArray::from_slice(&nonce),
                &aad,
                &mut out,
                GenericArray::from_slice(tag),
            )
            .ok()?;
        Some(out)
    }
}

/// The Initial keys of a connection, derived from the client's first
/// destination connection ID.
pub struct InitialKeys {
    client: DirKeys,
    server: DirKeys,
}

impl std::fmt::Debug for InitialKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InitialKeys")
    }
}

impl InitialKeys {
    /// `None` for a version without a known salt.
    pub fn new(version: u32, dcid: &[u8]) -> Option<InitialKeys> {
        let (c, s) = initial_secrets(version, dcid)?;
        Some(InitialKeys {
            client: DirKeys::new(&c)?,
            server: DirKeys::new(&s)?,
        })
    }

    /// Opens an Initial packet of `dir` (see [`DirKeys::open`]).
    pub fn open(&self, dir: Direction, pkt: &[u8], hlen: usize, length: usize) -> Option<Vec<u8>> {
        match dir {
            Direction::ToServer => self.client.open(pkt, hlen, length),
            Direction::ToClient => self.server.open(pkt, hlen, length),
        }
    }
}

/// Builds a protected IETF QUIC Initial packet (long header, no token,
/// 4-byte packet number) carrying `frames`, sealed with the initial keys
/// of `odcid` for the sender `dir` (the client sends to the server): for
/// tests, fuzz seeds and crafted captures. `None` for a version without
/// a salt.
pub fn seal_initial(
    version: u32,
    odcid: &[u8],
    dir: Direction,
    dcid: &[u8],
    scid: &[u8],
    pn: u32,
    frames: &[u8],
) -> Option<Vec<u8>> {
    let (c, s) = initial_secrets(version, odcid)?;
    let (key, iv, hp) = derive(if dir == Direction::ToServer { &c } else { &s })?;
    let mut pkt = vec![0xc3];
    pkt.extend_from_slice(&version.to_be_bytes());
    pkt.push(u8::try_from(dcid.len()).ok()?);
    pkt.extend_from_slice(dcid);
    pkt.push(u8::try_from(scid.len()).ok()?);
    pkt.extend_from_slice(scid);
    pkt.push(0);
    let len = u16::try_from(4 + frames.len() + 16)
        .ok()
        .filter(|l| *l < 0x4000)?;
    pkt.extend_from_slice(&(len | 0x4000).to_be_bytes());
    let pn_at = pkt.len();
    pkt.extend_from_slice(&pn.to_be_bytes());
    let mut nonce = iv;
    for (n, p) in nonce[4..].iter_mut().zip(u64::from(pn).to_be_bytes()) {
        *n ^= p;
    }
    let mut body = frames.to_vec();
    let tag = Aes128Gcm::new(GenericArray::from_slice(&key))
        .encrypt_in_place_detached(GenericArray::from_slice(&nonce), &pkt, &mut body)
        .ok()?;
    pkt.extend_from_slice(&body);
    pkt.extend_from_slice(&tag);
    let mut mask = GenericArray::clone_from_slice(pkt.get(pn_at + 4..pn_at + 20)?);
    Aes128::new(GenericArray::from_slice(&hp)).encrypt_block(&mut mask);
    pkt[0] ^= mask[0] & 0x0f;
    for i in 0..4 {
        pkt[pn_at + i] ^= mask[1 + i];
    }
    Some(pkt)
}

// ---------------------------------------------------------------------
// Frames

/// The gQUIC handshake tags Suricata knows (a message with another tag
/// is not read).
const TAGS: &[&[u8; 4]] = &[
    b"AEAD", b"CCRT", b"CCS\0", b"CETV", b"CFCW", b"CHLO", b"COPT", b"CSCT", b"CTIM", b"ICSL",
    b"IRTT", b"KEXS", b"MIDS", b"MSPC", b"NONC", b"NONP", b"PAD\0", b"PDMD", b"PUBS", b"SCID",
    b"SCLS", b"SFCW", b"SMHL", b"SNI\0", b"SNO\0", b"STK\0", b"TCID", b"UAID", b"VER\0", b"XLCT",
];

fn known_tag(t: &[u8]) -> Option<[u8; 4]> {
    TAGS.iter().find(|k| k[..] == *t).map(|k| **k)
}

/// A tag as text (`SNI`, `PAD`: trailing NULs dropped).
fn tag_name(t: &[u8; 4]) -> String {
    String::from_utf8_lossy(t)
        .trim_end_matches('\0')
        .to_string()
}

/// One gQUIC handshake message: `[tag][count u16le][pad 2][(tag, end
/// offset u32le) * count][values]`, consuming the whole input.
fn parse_tag_message(input: &[u8]) -> Option<Vec<([u8; 4], Vec<u8>)>> {
    let mut b = input;
    known_tag(take(&mut b, 4)?)?;
    let n = take(&mut b, 2)?;
    let n = usize::from(u16::from_le_bytes([n[0], n[1]]));
    take(&mut b, 2)?;
    let mut entries = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        let t = known_tag(take(&mut b, 4)?)?;
        let o = take(&mut b, 4)?;
        entries.push((t, u32::from_le_bytes([o[0], o[1], o[2], o[3]]) as usize));
    }
    let mut prev = 0usize;
    let mut tags = Vec::with_capacity(entries.len());
    for (t, end) in entries {
        let len = end.checked_sub(prev)?;
        tags.push((t, take(&mut b, len)?.to_vec()));
        prev = end;
    }
    b.is_empty().then_some(tags)
}

#[derive(Debug)]
enum Frame<'a> {
    Crypto {
        offset: u64,
        data: &'a [u8],
    },
    /// gQUIC handshake tags (`None`: the stream data is no message).
    Tags(Option<Vec<([u8; 4], Vec<u8>)>>),
}

/// The frames of a packet payload, as Suricata reads them: PADDING, PING,
/// ACK, CRYPTO, gQUIC STREAM and Q050 crypto-stream frames; any other
/// frame type ends the packet. `None`: a frame is truncated.
fn parse_frames(mut b: &[u8]) -> Option<Vec<Frame<'_>>> {
    let mut frames = Vec::new();
    while let Some(&ty) = b.first() {
        b = &b[1..];
        if ty & 0x80 != 0 {
            // gQUIC STREAM: 1 f d ooo ss.
            let off = match (ty & 0x1c) >> 2 {
                0 => 0,
                n => usize::from(n) + 1,
            };
            take(&mut b, usize::from(ty & 3) + 1)?;
            take(&mut b, off)?;
            let len = if ty & 0x20 != 0 {
                let l = take(&mut b, 2)?;
                usize::from(u16::from_be_bytes([l[0], l[1]]))
            } else {
                b.len()
            };
            frames.push(Frame::Tags(parse_tag_message(take(&mut b, len)?)));
            continue;
        }
        match ty {
            0x00 => {
                let n = b.iter().take_while(|&&x| x == 0).count();
                b = &b[n..];
            }
            0x01 => {}
            0x02 => {
                // Largest acknowledged, delay, range count, first range.
                varint(&mut b)?;
                varint(&mut b)?;
                let ranges = varint(&mut b)?;
                varint(&mut b)?;
                // Each range is at least two bytes: a count past the
                // payload is truncated input, not a loop to run.
                if ranges > b.len() as u64 {
                    return None;
                }
                for _ in 0..ranges {
                    varint(&mut b)?;
                    varint(&mut b)?;
                }
            }
            0x06 => {
                let offset = varint(&mut b)?;
                let len = usize::try_from(varint(&mut b)?).ok()?;
                frames.push(Frame::Crypto {
                    offset,
                    data: take(&mut b, len)?,
                });
            }
            0x08 => {
                varint(&mut b)?;
                let len = usize::try_from(varint(&mut b)?).ok()?;
                frames.push(Frame::Tags(parse_tag_message(take(&mut b, len)?)));
            }
            _ => break,
        }
    }
    Some(frames)
}

/// One direction's CRYPTO stream: the bytes contiguous from offset 0 and
/// the fragments after a hole.
#[derive(Debug, Default)]
struct CryptoStream {
    data: Vec<u8>,
    pending: Vec<(u64, Vec<u8>)>,
}

impl CryptoStream {
    /// Adds a frame; false when it reaches past [`MAX_CRYPTO`].
    fn add(&mut self, offset: u64, data: &[u8]) -> bool {
        let end = offset.saturating_add(data.len() as u64);
        if end > MAX_CRYPTO {
            return false;
        }
        if self.pending.len() < MAX_PENDING {
            self.pending.push((offset, data.to_vec()));
        }
        // Merge whatever now touches the contiguous part.
        loop {
            let have = self.data.len() as u64;
            let Some(i) = self.pending.iter().position(|(o, _)| *o <= have) else {
                break;
            };
            let (o, d) = self.pending.swap_remove(i);
            let skip = (have - o) as usize;
            if skip < d.len() {
                self.data.extend_from_slice(&d[skip..]);
            }
        }
        true
    }

    /// The first handshake message when complete: (type, body).
    fn message(&self) -> Option<(u8, &[u8])> {
        let d = &self.data;
        let len = (usize::from(*d.get(1)?) << 16)
            | (usize::from(*d.get(2)?) << 8)
            | usize::from(*d.get(3)?);
        Some((d[0], d.get(4..4 + len)?))
    }
}

// ---------------------------------------------------------------------
// Transactions

/// A TLS extension of a hello: its type and, for SNI and ALPN, its values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extension {
    pub ty: u16,
    pub values: Vec<Vec<u8>>,
}

/// A CYU fingerprint (gQUIC's JA3): `version,TAG-TAG-...` and its MD5.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cyu {
    pub string: String,
    pub hash: String,
}

/// One QUIC packet.
#[derive(Clone, Debug, Default)]
pub struct QuicTx {
    pub header: Header,
    /// Sent by the client.
    pub client: bool,
    pub sni: Option<Vec<u8>>,
    pub ua: Option<Vec<u8>>,
    pub cyu: Vec<Cyu>,
    /// The JA3 string of the client's hello, or JA3S of the server's.
    pub ja3: Option<String>,
    ja3_hash: Option<String>,
    /// JA4 of the client's hello.
    pub ja4: Option<String>,
    pub extensions: Vec<Extension>,
}

impl MsgTxData for QuicTx {
    fn buffers(&self, id: BufferId) -> Vec<&[u8]> {
        fn one(v: Option<&[u8]>) -> Vec<&[u8]> {
            v.into_iter().collect()
        }
        match id {
            BufferId::QuicSni => one(self.sni.as_deref()),
            BufferId::QuicUa => one(self.ua.as_deref()),
            BufferId::QuicVersion if self.long_header() => one(Some(&self.header.version_buf)),
            BufferId::QuicCyuHash => self.cyu.iter().map(|c| c.hash.as_bytes()).collect(),
            BufferId::QuicCyuString => self.cyu.iter().map(|c| c.string.as_bytes()).collect(),
            BufferId::Ja3Hash if self.client => one(self.ja3_hash.as_deref().map(str::as_bytes)),
            BufferId::Ja3String if self.client => one(self.ja3.as_deref().map(str::as_bytes)),
            BufferId::Ja3sHash if !self.client => one(self.ja3_hash.as_deref().map(str::as_bytes)),
            BufferId::Ja3sString if !self.client => one(self.ja3.as_deref().map(str::as_bytes)),
            BufferId::Ja4Hash if self.client => one(self.ja4.as_deref().map(str::as_bytes)),
            _ => Vec::new(),
        }
    }

    fn ints(&self, _key: &str) -> Vec<i64> {
        Vec::new()
    }

    /// Suricata's `quic` object.
    fn eve(&self) -> Value {
        let mut m = Map::new();
        if self.header.ty != PacketType::Short {
            m.insert("version".into(), json!(version_string(self.header.version)));
            if let Some(s) = &self.sni {
                m.insert("sni".into(), json!(String::from_utf8_lossy(s)));
            }
            if let Some(s) = &self.ua {
                m.insert("ua".into(), json!(String::from_utf8_lossy(s)));
            }
        }
        if !self.cyu.is_empty() {
            let v: Vec<Value> = self
                .cyu
                .iter()
                .map(|c| json!({"hash": c.hash, "string": c.string}))
                .collect();
            m.insert("cyu".into(), Value::Array(v));
        }
        if let (Some(s), Some(h)) = (&self.ja3, &self.ja3_hash) {
            let key = if self.client { "ja3" } else { "ja3s" };
            m.insert(key.into(), json!({"hash": h, "string": s}));
        }
        if let Some(j) = self.ja4.as_ref().filter(|_| self.client) {
            m.insert("ja4".into(), json!(j));
        }
        if !self.extensions.is_empty() {
            let v: Vec<Value> = self
                .extensions
                .iter()
                .map(|e| {
                    let mut o = Map::new();
                    if let Some(n) = extension_name(e.ty) {
                        o.insert("name".into(), json!(n));
                    }
                    o.insert("type".into(), json!(e.ty));
                    if !e.values.is_empty() {
                        let vals: Vec<Value> = e
                            .values
                            .iter()
                            .map(|v| json!(String::from_utf8_lossy(v)))
                            .collect();
                        o.insert("values".into(), Value::Array(vals));
                    }
                    Value::Object(o)
                })
                .collect();
            m.insert("extensions".into(), Value::Array(v));
        }
        Value::Object(m)
    }
}

impl QuicTx {
    /// `quic.version` exists for long headers only (not gQUIC's public
    /// header, as Suricata).
    fn long_header(&self) -> bool {
        self.header.first & 0x80 != 0 && !self.header.version_buf.is_empty()
    }
}

/// The names of TLS extension types in the `quic` record.
pub fn extension_name(t: u16) -> Option<&'static str> {
    Some(match t {
        0 => "server_name",
        1 => "max_fragment_length",
        2 => "client_certificate_url",
        3 => "trusted_ca_keys",
        4 => "truncated_hmac",
        5 => "status_request",
        6 => "user_mapping",
        7 => "client_authz",
        8 => "server_authz",
        9 => "cert_type",
        10 => "supported_groups",
        11 => "ec_point_formats",
        12 => "srp",
        13 => "signature_algorithms",
        14 => "use_srtp",
        15 => "heartbeat",
        16 => "alpn",
        17 => "status_request_v2",
        18 => "signed_certificate_timestamp",
        19 => "client_certificate_type",
        20 => "server_certificate_type",
        21 => "padding",
        22 => "encrypt_then_mac",
        23 => "extended_master_secret",
        24 => "token_binding",
        25 => "cached_info",
        26 => "tls_lts",
        27 => "compress_certificate",
        28 => "record_size_limit",
        29 => "pwd_protect",
        30 => "pwd_clear",
        31 => "password_salt",
        32 => "ticket_pinning",
        33 => "tls_cert_with_extern_psk",
        34 => "delegated_credentials",
        35 => "session_ticket",
        36 => "tlmsp",
        37 => "tlmsp_proxying",
        38 => "tlmsp_delegate",
        39 => "supported_ekt_ciphers",
        41 => "pre_shared_key",
        42 => "early_data",
        43 => "supported_versions",
        44 => "cookie",
        45 => "psk_key_exchange_modes",
        47 => "certificate_authorities",
        48 => "oid_filters",
        49 => "post_handshake_auth",
        50 => "signature_algorithms_cert",
        51 => "key_share",
        52 => "transparency_info",
        53 => "connection_id_deprecated",
        54 => "connection_id",
        55 => "external_id_hash",
        56 => "external_session_id",
        57 => "quic_transport_parameters",
        58 => "ticket_request",
        59 => "dnssec_chain",
        13172 => "next_protocol_negotiation",
        65281 => "renegotiation_info",
        _ => return None,
    })
}

/// A TLS version as Suricata's QUIC logger writes `supported_versions`
/// values (`tls-parser`'s names: `Tls13`, else `TlsVersion(32540 /
/// 0x7f1c)`).
fn tls_version_name(v: u16) -> String {
    match v {
        0x0300 => "Ssl30".into(),
        0x0301 => "Tls10".into(),
        0x0302 => "Tls11".into(),
        0x0303 => "Tls12".into(),
        0x0304 => "Tls13".into(),
        0x7f12..=0x7f17 => format!("Tls13Draft{}", v & 0xff),
        0xfeff => "DTls10".into(),
        0xfefe => "DTls11".into(),
        0xfefd => "DTls12".into(),
        _ => format!("TlsVersion({v} / 0x{v:x})"),
    }
}

fn is_grease(v: u16) -> bool {
    v & 0x0f0f == 0x0a0a && v >> 8 == v & 0xff
}

/// JA3 of a ClientHello as Suricata's QUIC parser writes it: GREASE
/// values kept.
fn ja3_with_grease(h: &crate::tls::Hello) -> String {
    fn join(v: impl Iterator<Item = u16>) -> String {
        v.map(|x| x.to_string()).collect::<Vec<_>>().join("-")
    }
    format!(
        "{},{},{},{},{}",
        h.legacy_version,
        join(h.ciphers.iter().copied()),
        join(h.extensions.iter().copied()),
        join(h.groups.iter().copied()),
        join(h.point_formats.iter().map(|&v| u16::from(v))),
    )
}

/// The CYU version digits of a gQUIC version (Suricata's table: Q045
/// counts as 44).
fn cyu_version(v: u32) -> Option<&'static str> {
    Some(match v {
        Q043 => "43",
        Q044 | Q045 => "44",
        Q046 => "46",
        _ => return None,
    })
}

fn cyu(version: u32, tags: &[([u8; 4], Vec<u8>)]) -> Option<Cyu> {
    let v = cyu_version(version)?;
    let names: Vec<String> = tags.iter().map(|(t, _)| tag_name(t)).collect();
    let string = format!("{v},{}", names.join("-"));
    let hash = crate::hex_lower(&Md5::digest(string.as_bytes()));
    Some(Cyu { string, hash })
}

/// Per-flow QUIC state.
#[derive(Debug, Default)]
pub struct Quic {
    keys: Option<InitialKeys>,
    crypto: [CryptoStream; 2],
    /// A direction's hello was parsed: its later packets are not.
    hello: [bool; 2],
    retried: bool,
}

impl Quic {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the hello in the reassembled CRYPTO stream of `dir` into
    /// `tx` once complete. Err: the stream holds no hello.
    fn hello(&mut self, dir: Direction, tx: &mut QuicTx) -> Result<(), ()> {
        let client = dir == Direction::ToServer;
        let Some((ty, body)) = self.crypto[dir.index()].message() else {
            return Ok(());
        };
        if ty != if client { 1 } else { 2 } {
            return Err(());
        }
        // A hello that does not parse is, to Suricata's TLS parser,
        // incomplete: no event, and nothing more comes of it.
        let Some((mut h, _)) = crate::tls::parse_hello(body, client) else {
            return Ok(());
        };
        // Suricata's QUIC JA3 keeps GREASE values, and its TLS parser
        // names every GREASE extension 0xfafa.
        for e in &mut h.extensions {
            if is_grease(*e) {
                *e = 0xfafa;
            }
        }
        let ja3 = if client {
            ja3_with_grease(&h)
        } else {
            crate::tls::ja3s_string(&h)
        };
        tx.ja3_hash = Some(crate::tls::md5_hex(ja3.as_bytes()));
        tx.ja3 = Some(ja3);
        if client {
            tx.ja4 = Some(crate::tls::ja4_for(&h, 'q'));
        }
        tx.sni = h.sni.clone();
        tx.extensions = h
            .extensions
            .iter()
            .map(|&ty| Extension {
                ty,
                values: match ty {
                    0 => h.sni.iter().cloned().collect(),
                    16 => h.alpns.clone(),
                    13 => h
                        .sig_algs
                        .iter()
                        .map(|v| v.to_string().into_bytes())
                        .collect(),
                    43 => h
                        .supported_versions
                        .iter()
                        .map(|&v| tls_version_name(v).into_bytes())
                        .collect(),
                    _ => Vec::new(),
                },
            })
            .collect();
        self.hello[dir.index()] = true;
        self.crypto[dir.index()] = CryptoStream::default();
        Ok(())
    }
}

impl MsgProto for Quic {
    type Tx = QuicTx;
    type Event = QuicEvent;
    const PROTO: AppProto = AppProto::Quic;
    const TCP_RECORDS: bool = false;

    fn parse(&mut self, dir: Direction, input: &[u8]) -> Parsed<QuicTx, QuicEvent> {
        let mut out = Parsed::default();
        let client = dir == Direction::ToServer;
        let mut buf = input;
        // Coalesced packets: one header after the other.
        while !buf.is_empty() {
            let Some(h) = parse_header(buf) else {
                out.events.push(QuicEvent::ErrorOnHeader);
                return out;
            };
            if self.hello[dir.index()] || h.ty == PacketType::Short {
                return out;
            }
            if self.keys.is_none() && h.ty == PacketType::Initial {
                self.keys = InitialKeys::new(h.version, &h.dcid);
            } else if !client && self.keys.is_some() && h.ty == PacketType::Retry && !self.retried {
                self.hello[0] = false;
                self.keys = None;
                self.retried = true;
            }
            let pkt = &buf[..h.hlen + h.length];
            buf = &buf[h.hlen + h.length..];
            let mut tx = QuicTx {
                client,
                ..Default::default()
            };
            if h.ty != PacketType::Initial {
                tx.header = h;
                out.txs.push(tx);
                continue;
            }
            let payload = &pkt[h.hlen..];
            let plain;
            let frames_buf = match &self.keys {
                Some(k) if !payload.is_empty() => match k.open(dir, pkt, h.hlen, h.length) {
                    Some(p) => {
                        plain = p;
                        &plain[..]
                    }
                    None => {
                        tx.header = h;
                        out.txs.push(tx);
                        out.events.push(QuicEvent::FailedDecrypt);
                        return out;
                    }
                },
                _ => payload,
            };
            let Some(frames) = parse_frames(frames_buf) else {
                tx.header = h;
                out.txs.push(tx);
                out.events.push(QuicEvent::ErrorOnData);
                return out;
            };
            let mut too_long = false;
            let mut has_crypto = false;
            for f in &frames {
                match f {
                    Frame::Crypto { offset, data } => {
                        has_crypto = true;
                        too_long |= !self.crypto[dir.index()].add(*offset, data);
                    }
                    Frame::Tags(Some(tags)) => {
                        for (t, v) in tags {
                            match t {
                                b"SNI\0" => tx.sni = Some(v.clone()),
                                b"UAID" => tx.ua = Some(v.clone()),
                                _ => {}
                            }
                        }
                        tx.cyu.extend(cyu(h.version, tags));
                    }
                    Frame::Tags(None) => {}
                }
            }
            let bad = has_crypto && self.hello(dir, &mut tx).is_err();
            tx.header = h;
            out.txs.push(tx);
            if too_long {
                out.events.push(QuicEvent::CryptoFragTooLong);
            }
            if bad {
                out.events.push(QuicEvent::ErrorOnData);
                return out;
            }
        }
        out
    }

    fn event(e: QuicEvent, tx: Option<TxId>) -> AppLayerEvent {
        AppLayerEvent::Quic(e, tx)
    }

    fn malformed() -> QuicEvent {
        QuicEvent::ErrorOnData
    }

    fn too_many() -> QuicEvent {
        QuicEvent::TooManyTransactions
    }
}

/// Builders of hellos and frames for tests, fuzz seeds and crafted
/// captures (with [`seal_initial`]).
pub mod build {
    fn ext(ty: u16, body: &[u8]) -> Vec<u8> {
        let mut v = ty.to_be_bytes().to_vec();
        v.extend_from_slice(&(body.len() as u16).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    fn vec16(b: &[u8]) -> Vec<u8> {
        let mut v = (b.len() as u16).to_be_bytes().to_vec();
        v.extend_from_slice(b);
        v
    }

    fn handshake(ty: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![ty, 0, (body.len() >> 8) as u8, body.len() as u8];
        v.extend_from_slice(body);
        v
    }

    /// A TLS 1.3 ClientHello for `sni` offering h3.
    pub fn client_hello(sni: &str) -> Vec<u8> {
        let mut b = vec![3, 3];
        b.extend_from_slice(&[7u8; 32]);
        b.push(0);
        b.extend_from_slice(&vec16(&[0x13, 0x01, 0x13, 0x02, 0x13, 0x03]));
        b.extend_from_slice(&[1, 0]);
        let mut name = vec![0];
        name.extend_from_slice(&vec16(sni.as_bytes()));
        let mut exts = ext(0, &vec16(&name));
        exts.extend(ext(16, &vec16(b"\x02h3")));
        exts.extend(ext(10, &vec16(&[0x00, 0x1d, 0x00, 0x17])));
        exts.extend(ext(13, &vec16(&[0x04, 0x03, 0x08, 0x04])));
        exts.extend(ext(43, &[2, 3, 4]));
        let mut ks = vec![0x00, 0x1d, 0x00, 0x20];
        ks.extend_from_slice(&[9u8; 32]);
        exts.extend(ext(51, &vec16(&ks)));
        exts.extend(ext(57, &[0x01, 0x02, 0x40, 0x64]));
        b.extend_from_slice(&vec16(&exts));
        handshake(1, &b)
    }

    /// A TLS 1.3 ServerHello (TLS_AES_128_GCM_SHA256, x25519).
    pub fn server_hello() -> Vec<u8> {
        let mut b = vec![3, 3];
        b.extend_from_slice(&[5u8; 32]);
        b.push(0);
        b.extend_from_slice(&[0x13, 0x01, 0]);
        let mut exts = ext(43, &[3, 4]);
        let mut ks = vec![0x00, 0x1d, 0x00, 0x20];
        ks.extend_from_slice(&[8u8; 32]);
        exts.extend(ext(51, &ks));
        b.extend_from_slice(&vec16(&exts));
        handshake(2, &b)
    }

    pub fn crypto(offset: u64, data: &[u8]) -> Vec<u8> {
        let mut v = vec![0x06, 0x80 | (offset >> 24) as u8, (offset >> 16) as u8];
        v.extend_from_slice(&[(offset >> 8) as u8, offset as u8]);
        v.extend_from_slice(&[0x40 | (data.len() >> 8) as u8, data.len() as u8]);
        v.extend_from_slice(data);
        v
    }

    /// A gQUIC Q043 client hello in the clear (public header with
    /// connection ID and version, STREAM frame on stream 1).
    pub fn gquic_chlo() -> Vec<u8> {
        let tags: [(&[u8; 4], &[u8]); 9] = [
            (b"PAD\0", b"\0\0\0\0"),
            (b"SNI\0", b"www.example.org"),
            (b"VER\0", b"Q043"),
            (b"CCS\0", &[1; 16]),
            (b"PDMD", b"X509"),
            (b"ICSL", &[30, 0, 0, 0]),
            (b"MIDS", &[100, 0, 0, 0]),
            (b"CFCW", &[0, 0, 0xf0, 0]),
            (b"SFCW", &[0, 0, 0x60, 0]),
        ];
        let mut msg = b"CHLO".to_vec();
        msg.extend_from_slice(&(tags.len() as u16).to_le_bytes());
        msg.extend_from_slice(&[0, 0]);
        let mut end = 0u32;
        for (t, v) in &tags {
            end += v.len() as u32;
            msg.extend_from_slice(&t[..]);
            msg.extend_from_slice(&end.to_le_bytes());
        }
        for (_, v) in &tags {
            msg.extend_from_slice(v);
        }
        let mut p = vec![0x09];
        p.extend_from_slice(&[0x11; 8]);
        p.extend_from_slice(b"Q043");
        p.push(1);
        p.extend_from_slice(&[0xab; 12]);
        p.push(0xa0);
        p.push(1);
        p.extend_from_slice(&(msg.len() as u16).to_be_bytes());
        p.extend_from_slice(&msg);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    const ODCID: &str = "8394c8f03e515708";

    fn initial(dir: Direction, frames: &[u8], pn: u32) -> Vec<u8> {
        let odcid = unhex(ODCID);
        let (dcid, scid) = if dir == Direction::ToServer {
            (odcid.clone(), vec![])
        } else {
            (vec![], unhex("f067a5502a4262b5"))
        };
        let mut f = frames.to_vec();
        f.resize(f.len().max(200), 0);
        seal_initial(V1, &odcid, dir, &dcid, &scid, pn, &f).unwrap()
    }

    #[test]
    fn rfc9001_initial_keys() {
        let (c, s) = initial_secrets(V1, &unhex(ODCID)).unwrap();
        assert_eq!(
            crate::hex_lower(&c),
            "c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea"
        );
        assert_eq!(
            crate::hex_lower(&s),
            "3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b"
        );
        let (key, iv, hp) = derive(&c).unwrap();
        assert_eq!(crate::hex_lower(&key), "1f369613dd76d5467730efcbe3b1a22d");
        assert_eq!(crate::hex_lower(&iv), "fa044b2f42a3fd3b46fb255c");
        assert_eq!(crate::hex_lower(&hp), "9f50449e04a0e810283a1e9933adedd2");
        let (key, iv, hp) = derive(&s).unwrap();
        assert_eq!(crate::hex_lower(&key), "cf3a5331653c364c88f0f379b6067e37");
        assert_eq!(crate::hex_lower(&iv), "0ac1493ca1905853b0bba03e");
        assert_eq!(crate::hex_lower(&hp), "c206b8d9b9f0f37644430b490eeaa314");
        // Appendix A.2's header protection sample and mask.
        let (_, _, hp) = derive(&c).unwrap();
        let mut mask = GenericArray::clone_from_slice(&unhex("d1b1c98dd7689fb8ec11d242b123dc9b"));
        Aes128::new(GenericArray::from_slice(&hp)).encrypt_block(&mut mask);
        assert_eq!(crate::hex_lower(&mask[..5]), "437b9aec36");
    }

    #[test]
    fn varints() {
        for (bytes, v) in [
            ("25", 37u64),
            ("7bbd", 15293),
            ("9d7f3e7d", 494878333),
            ("c2197c5eff14e88c", 151288809941952652),
        ] {
            let b = unhex(bytes);
            let mut s = &b[..];
            assert_eq!(varint(&mut s), Some(v));
            assert!(s.is_empty());
        }
        assert_eq!(varint(&mut &[0x40][..]), None);
    }

    #[test]
    fn long_header_fields() {
        let pkt = initial(Direction::ToServer, &crypto(0, b"x"), 2);
        let h = parse_header(&pkt).unwrap();
        assert_eq!(h.ty, PacketType::Initial);
        assert_eq!(h.version, V1);
        assert_eq!(h.version_buf, vec![0, 0, 0, 1]);
        assert_eq!(h.dcid, unhex(ODCID));
        assert!(h.scid.is_empty());
        assert_eq!(h.hlen + h.length, pkt.len());
        assert!(probe(&pkt));
        // Truncated: the length field says more than there is.
        assert!(parse_header(&pkt[..pkt.len() - 1]).is_none());
        assert!(parse_header(&[0xc0, 0, 0]).is_none());
        // A short header always parses (Suricata's probe accepts it).
        assert_eq!(parse_header(&[0x40, 1, 2]).unwrap().ty, PacketType::Short);
        assert_eq!(version_string(V1), "1");
        assert_eq!(version_string(0xff00_001d), "ff00001d");
        assert_eq!(version_string(Q046), "Q046");
    }

    fn feed(q: &mut Quic, dir: Direction, pkt: &[u8]) -> Parsed<QuicTx, QuicEvent> {
        q.parse(dir, pkt)
    }

    #[test]
    fn client_and_server_initials_decrypt_to_hellos() {
        let mut q = Quic::new();
        let ch = client_hello("example.com");
        let p = feed(
            &mut q,
            Direction::ToServer,
            &initial(Direction::ToServer, &crypto(0, &ch), 0),
        );
        assert!(p.events.is_empty(), "{:?}", p.events);
        let tx = &p.txs[0];
        assert!(tx.client);
        assert_eq!(tx.sni.as_deref(), Some(&b"example.com"[..]));
        assert_eq!(
            tx.ja3.as_deref(),
            Some("771,4865-4866-4867,0-16-10-13-43-51-57,29-23,")
        );
        let ja4 = tx.ja4.as_deref().unwrap();
        assert!(ja4.starts_with("q13d0307h3_"), "{ja4}");
        let types: Vec<u16> = tx.extensions.iter().map(|e| e.ty).collect();
        assert_eq!(types, vec![0, 16, 10, 13, 43, 51, 57]);
        assert_eq!(tx.extensions[1].values, vec![b"h3".to_vec()]);
        let eve = tx.eve();
        assert_eq!(eve["version"], "1");
        assert_eq!(eve["sni"], "example.com");
        assert_eq!(eve["ja3"]["string"], tx.ja3.as_deref().unwrap());
        assert_eq!(eve["extensions"][0]["name"], "server_name");
        assert_eq!(eve["extensions"][0]["values"][0], "example.com");
        assert_eq!(eve["extensions"][6]["name"], "quic_transport_parameters");
        assert_eq!(eve["extensions"][3]["values"], json!(["1027", "2052"]));
        assert_eq!(eve["extensions"][4]["values"], json!(["Tls13"]));
        assert_eq!(tls_version_name(0x7f1c), "TlsVersion(32540 / 0x7f1c)");
        assert_eq!(tls_version_name(0x7f17), "Tls13Draft23");
        assert_eq!(tx.buffers(BufferId::Ja3Hash).len(), 1);
        assert!(tx.buffers(BufferId::Ja3sString).is_empty());
        assert_eq!(tx.buffers(BufferId::QuicVersion), vec![&[0, 0, 0, 1][..]]);

        let sh = server_hello();
        let p = feed(
            &mut q,
            Direction::ToClient,
            &initial(Direction::ToClient, &crypto(0, &sh), 0),
        );
        assert!(p.events.is_empty(), "{:?}", p.events);
        let tx = &p.txs[0];
        assert!(!tx.client);
        assert_eq!(tx.ja3.as_deref(), Some("771,4865,43-51"));
        assert_eq!(tx.eve()["ja3s"]["string"], "771,4865,43-51");
        assert!(tx.eve().get("ja4").is_none());
        assert_eq!(
            tx.buffers(BufferId::Ja3sString),
            vec![&b"771,4865,43-51"[..]]
        );

        // Both hellos seen: later packets of the flow are not parsed.
        let p = feed(
            &mut q,
            Direction::ToServer,
            &initial(Direction::ToServer, &[1], 1),
        );
        assert!(p.txs.is_empty() && p.events.is_empty());
    }

    #[test]
    fn crypto_reassembled_across_packets_out_of_order() {
        let mut q = Quic::new();
        let ch = client_hello("split.example");
        let (a, b) = ch.split_at(40);
        let p = feed(
            &mut q,
            Direction::ToServer,
            &initial(Direction::ToServer, &crypto(40, b), 1),
        );
        assert_eq!(p.txs.len(), 1);
        assert!(p.txs[0].sni.is_none() && p.events.is_empty());
        let p = feed(
            &mut q,
            Direction::ToServer,
            &initial(Direction::ToServer, &crypto(0, a), 0),
        );
        assert_eq!(p.txs[0].sni.as_deref(), Some(&b"split.example"[..]));
    }

    #[test]
    fn coalesced_packets_and_short_headers() {
        let mut q = Quic::new();
        // The keys come from the client's first Initial.
        let p = feed(
            &mut q,
            Direction::ToServer,
            &initial(Direction::ToServer, &[0x01], 0),
        );
        assert_eq!(p.txs.len(), 1);
        let mut d = initial(Direction::ToClient, &[0x01], 0);
        // A Handshake packet coalesced after the Initial: version only.
        d.extend_from_slice(&[0xe0, 0, 0, 0, 1, 0, 0, 0x41, 1, 2]);
        let p = feed(&mut q, Direction::ToClient, &d);
        assert_eq!(p.txs.len(), 2);
        assert_eq!(p.txs[1].header.ty, PacketType::Handshake);
        assert!(p.events.is_empty());
        let p = feed(&mut q, Direction::ToClient, &[0x41, 1, 2, 3, 4]);
        assert!(p.txs.is_empty() && p.events.is_empty());
    }

    #[test]
    fn malformed_initials_raise_events() {
        let mut q = Quic::new();
        let mut pkt = initial(Direction::ToServer, &crypto(0, b"abc"), 0);
        let n = pkt.len();
        pkt[n - 1] ^= 1;
        let p = feed(&mut q, Direction::ToServer, &pkt);
        assert_eq!(p.events, vec![QuicEvent::FailedDecrypt]);
        assert_eq!(p.txs.len(), 1);

        // CRYPTO data that is no hello: an error; a hello that does not
        // parse: none (Suricata's TLS parser calls it incomplete).
        let mut q = Quic::new();
        let p = feed(
            &mut q,
            Direction::ToServer,
            &initial(Direction::ToServer, &crypto(0, &[11, 0, 0, 1, 0]), 0),
        );
        assert_eq!(p.events, vec![QuicEvent::ErrorOnData]);
        let mut q = Quic::new();
        let p = feed(
            &mut q,
            Direction::ToServer,
            &initial(Direction::ToServer, &crypto(0, &[1, 0, 0, 1, 0]), 0),
        );
        assert!(p.events.is_empty() && p.txs[0].ja3.is_none());
        // A truncated CRYPTO frame.
        let mut q = Quic::new();
        let frames = [0x06, 0x00, 0x44, 0x00, 1, 2];
        let odcid = unhex(ODCID);
        let pkt = seal_initial(V1, &odcid, Direction::ToServer, &odcid, &[], 0, &frames).unwrap();
        let p = feed(&mut q, Direction::ToServer, &pkt);
        assert_eq!(p.events, vec![QuicEvent::ErrorOnData]);
        // CRYPTO data past the cap.
        let mut q = Quic::new();
        let p = feed(
            &mut q,
            Direction::ToServer,
            &initial(Direction::ToServer, &crypto(70_000, b"abc"), 0),
        );
        assert_eq!(p.events, vec![QuicEvent::CryptoFragTooLong]);
        // A datagram that is no QUIC header.
        let p = feed(&mut q, Direction::ToServer, &[0xc0, 0, 0]);
        assert_eq!(p.events, vec![QuicEvent::ErrorOnHeader]);
    }

    #[test]
    fn gquic_chlo_tags_and_cyu() {
        let mut q = Quic::new();
        let d = gquic_chlo();
        let h = parse_header(&d).unwrap();
        assert_eq!((h.ty, h.version), (PacketType::Initial, Q043));
        let p = feed(&mut q, Direction::ToServer, &d);
        assert!(p.events.is_empty(), "{:?}", p.events);
        let tx = &p.txs[0];
        assert_eq!(tx.sni.as_deref(), Some(&b"www.example.org"[..]));
        assert_eq!(
            tx.cyu,
            vec![Cyu {
                string: "43,PAD-SNI-VER-CCS-PDMD-ICSL-MIDS-CFCW-SFCW".into(),
                hash: "e030dea1f2eea44ac7db5fe4de792acd".into(),
            }]
        );
        assert_eq!(tx.eve()["version"], "Q043");
        // No long header: no `quic.version` (as Suricata).
        assert!(tx.buffers(BufferId::QuicVersion).is_empty());
        assert_eq!(
            tx.eve()["cyu"][0]["hash"],
            "e030dea1f2eea44ac7db5fe4de792acd"
        );
        assert_eq!(tx.buffers(BufferId::QuicCyuString).len(), 1);
    }

    #[test]
    fn truncations_never_panic() {
        let mut all = vec![
            initial(
                Direction::ToServer,
                &crypto(0, &client_hello("a.example")),
                0,
            ),
            initial(Direction::ToClient, &crypto(0, &server_hello()), 0),
            gquic_chlo(),
        ];
        all.push(all.concat());
        for d in &all {
            for n in 0..d.len() {
                let mut q = Quic::new();
                let _ = q.parse(Direction::ToServer, &d[..n]);
                let _ = q.parse(Direction::ToClient, &d[n..]);
            }
        }
    }
}
