//! Payloads for the study: uniformly random bytes, or real payloads cut
//! from a capture (the seed's two payload kinds).

use std::path::Path;

use crate::Rng;

/// Transport payloads of the packets of a capture (pcap, pcapng or a
/// directory), in order, until `max_bytes` are collected. Packets without
/// payload are skipped.
pub fn from_pcap(path: &Path, max_bytes: usize) -> Result<Vec<Vec<u8>>, String> {
    let mut src = vigil_source::PcapSource::open(path).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut total = 0;
    while total < max_bytes {
        let Some(raw) = src.next_packet().map_err(|e| e.to_string())? else {
            break;
        };
        let p = vigil_wire::decode(raw.linktype, raw.data);
        let pl = p.payload();
        if !pl.is_empty() {
            total += pl.len();
            out.push(pl.to_vec());
        }
    }
    Ok(out)
}

/// A sampled packet: protocol, ports and transport payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplePacket {
    pub proto: u8,
    pub sp: u16,
    pub dp: u16,
    pub payload: Vec<u8>,
}

/// About `max_bytes` of packets with a payload, spread evenly over the
/// whole capture (a packet is kept when the share of the file read so far
/// calls for more sample bytes), so that the sample follows the traffic's
/// mix rather than its first seconds. Reads the whole capture once.
pub fn spread_from_pcap(path: &Path, max_bytes: usize) -> Result<Vec<SamplePacket>, String> {
    let mut src = vigil_source::PcapSource::open(path).map_err(|e| e.to_string())?;
    let total_file = src.total_bytes().max(1) as f64;
    let mut out = Vec::new();
    let mut taken = 0usize;
    // Position in the input, approximated by the records read (16-byte
    // pcap record headers).
    let mut pos = 0usize;
    while let Some(raw) = src.next_packet().map_err(|e| e.to_string())? {
        pos += raw.data.len() + 16;
        if (taken as f64) < pos as f64 / total_file * max_bytes as f64 {
            let p = vigil_wire::decode(raw.linktype, raw.data);
            let pl = p.payload();
            if let (false, Some(ip)) = (pl.is_empty(), p.ip.as_ref()) {
                taken += pl.len();
                out.push(SamplePacket {
                    proto: ip.proto,
                    sp: p.src_port(),
                    dp: p.dst_port(),
                    payload: pl.to_vec(),
                });
            }
        }
    }
    Ok(out)
}

/// Payloads of Vigil's own demo capture (crafted, deterministic): the
/// fallback when no capture is given.
pub fn demo() -> Vec<Vec<u8>> {
    vigil_craft::demo::demo_capture()
        .iter()
        .map(|(_, f)| vigil_wire::decode(1, f).payload().to_vec())
        .filter(|p| !p.is_empty())
        .collect()
}

/// `count` buffers of `size` bytes cut from the concatenation of `pool`
/// (wrapping around) at evenly spaced offsets, shifted by `phase` (0..1)
/// of the spacing: every buffer is real content whatever the packets' own
/// sizes, and two cuts with different phases sample the same traffic
/// evenly (so a calibration sample and a measured one are alike).
pub fn cut(pool: &[Vec<u8>], size: usize, count: usize, phase: f64) -> Vec<Vec<u8>> {
    let all: Vec<u8> = pool.concat();
    if all.is_empty() || count == 0 {
        return random(size, count, &mut Rng::new(1));
    }
    let stride = all.len() as f64 / count as f64;
    (0..count)
        .map(|i| {
            let start = ((i as f64 + phase.fract()) * stride) as usize % all.len();
            all.iter().cycle().skip(start).take(size).copied().collect()
        })
        .collect()
}

/// `count` buffers of `size` uniformly random bytes.
pub fn random(size: usize, count: usize, rng: &mut Rng) -> Vec<Vec<u8>> {
    (0..count)
        .map(|_| (0..size).map(|_| rng.next_u64() as u8).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_has_payloads_and_cuts_are_sized() {
        let d = demo();
        assert!(d.len() > 10);
        let c = cut(&d, 500, 4, 0.5);
        assert!(c.iter().all(|b| b.len() == 500));
        let dir = std::env::temp_dir().join(format!("vigil-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pcap = dir.join("demo.pcap");
        vigil_craft::demo::write_demo_pcap(&pcap).unwrap();
        let s = spread_from_pcap(&pcap, 4000).unwrap();
        assert!(!s.is_empty() && s.iter().all(|p| !p.payload.is_empty()));
        assert!(s.iter().any(|p| p.dp == 80 || p.sp == 80));
        let _ = std::fs::remove_dir_all(dir);
    }
}
