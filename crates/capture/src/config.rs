//! Ring configuration: fanout mode, ring geometry, and their validation.

use std::fmt;
use std::str::FromStr;

use crate::error::CaptureError;
use crate::sys;

/// How the kernel spreads the packets of one interface over the rings of a
/// fanout group (`PACKET_FANOUT_*` in `<linux/if_packet.h>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FanoutMode {
    /// `PACKET_FANOUT_HASH`: by the symmetric flow hash, so both directions
    /// of a flow land on the same ring (what flow tracking needs).
    #[default]
    Hash,
    /// `PACKET_FANOUT_LB`: round robin. Splits flows; only for stateless use.
    Lb,
    /// `PACKET_FANOUT_CPU`: by the CPU that received the packet (pair with
    /// RSS set up for symmetric hashing on the NIC).
    Cpu,
    /// `PACKET_FANOUT_QM`: by the NIC's recorded RX queue.
    Qm,
}

impl FanoutMode {
    /// The kernel's `PACKET_FANOUT_*` value.
    pub fn kernel_value(self) -> u32 {
        match self {
            FanoutMode::Hash => sys::PACKET_FANOUT_HASH,
            FanoutMode::Lb => sys::PACKET_FANOUT_LB,
            FanoutMode::Cpu => sys::PACKET_FANOUT_CPU,
            FanoutMode::Qm => sys::PACKET_FANOUT_QM,
        }
    }

    /// The name `FromStr` accepts.
    pub fn as_str(self) -> &'static str {
        match self {
            FanoutMode::Hash => "hash",
            FanoutMode::Lb => "lb",
            FanoutMode::Cpu => "cpu",
            FanoutMode::Qm => "qm",
        }
    }
}

impl fmt::Display for FanoutMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of [`FanoutMode::from_str`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown fanout mode {0:?} (expected hash, lb, cpu or qm)")]
pub struct ParseFanoutModeError(pub String);

impl FromStr for FanoutMode {
    type Err = ParseFanoutModeError;

    /// Parses `hash`, `lb`, `cpu` or `qm` (ASCII case-insensitive, surrounding
    /// blanks ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        for mode in [
            FanoutMode::Hash,
            FanoutMode::Lb,
            FanoutMode::Cpu,
            FanoutMode::Qm,
        ] {
            if t.eq_ignore_ascii_case(mode.as_str()) {
                return Ok(mode);
            }
        }
        Err(ParseFanoutModeError(s.to_string()))
    }
}

/// Geometry and options of one TPACKET_V3 receive ring.
///
/// See the crate documentation for why the defaults are what they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingConfig {
    /// Bytes per block (`tp_block_size`): a power of two, a multiple of the
    /// page size, at least `frame_size`. Default 1 MiB.
    pub block_size: usize,
    /// Number of blocks (`tp_block_nr`). Default 64 (64 MiB per ring).
    pub block_count: usize,
    /// `tp_frame_size`. TPACKET_V3 packs variable-length frames into blocks
    /// and uses this only to validate the request, but the kernel still
    /// wants a multiple of 16 that holds the frame header and divides the
    /// block into a whole number of frames. Default 2048.
    pub frame_size: usize,
    /// `tp_retire_blk_tov`: a partly filled block goes to user space after
    /// this many milliseconds. 0 lets the kernel pick from the link speed.
    /// Default 10 (bounded live latency).
    pub block_timeout_ms: u32,
    /// How the fanout group spreads packets over its rings.
    pub fanout: FanoutMode,
    /// Fanout group id: the same for all rings of one interface, distinct
    /// between interfaces (ids are per network namespace).
    pub fanout_group: u16,
    /// `PACKET_FANOUT_FLAG_DEFRAG`: the kernel reassembles IPv4 fragments
    /// before hashing so all fragments of a datagram reach one ring.
    /// Default true.
    pub defrag: bool,
    /// Put the interface in promiscuous mode for the ring's lifetime
    /// (`PACKET_MR_PROMISC` membership, dropped by the kernel on close).
    /// Default true.
    pub promisc: bool,
    /// Optional pcap filter expression (e.g. `"udp port 53"`).
    pub bpf: Option<String>,
    /// Bytes kept per packet (the socket filter's accept value). Default
    /// 65535. With a VLAN tag re-inserted the delivered frame is 4 bytes
    /// longer.
    pub snaplen: u32,
    /// The ring does not hand over frames sent out of the interface, only
    /// those received on it. An inline bridge needs it, or it would read
    /// back (and forward again) the frames it transmits itself. The
    /// kernel leaves them out of the fanout group with
    /// `PACKET_FANOUT_FLAG_IGNORE_OUTGOING` (Linux 6.9; the socket
    /// option `PACKET_IGNORE_OUTGOING` of Linux 4.20 does not apply to a
    /// socket in a fanout group); on an older kernel the ring skips them
    /// as it reads ([`crate::Ring::outgoing_skipped`]). Default false (a
    /// passive sensor sees both directions of a host's own traffic).
    pub ignore_outgoing: bool,
}

impl Default for RingConfig {
    fn default() -> Self {
        RingConfig {
            block_size: 1 << 20,
            block_count: 64,
            frame_size: 2048,
            block_timeout_ms: 10,
            fanout: FanoutMode::Hash,
            fanout_group: 1,
            defrag: true,
            promisc: true,
            bpf: None,
            snaplen: 65535,
            ignore_outgoing: false,
        }
    }
}

impl RingConfig {
    /// Total bytes of the ring mapping (`block_size * block_count`), or
    /// `None` on overflow.
    pub fn ring_bytes(&self) -> Option<usize> {
        self.block_size.checked_mul(self.block_count)
    }

    /// Checks the ring geometry the way `packet_set_ring()` does, plus a
    /// power-of-two block size (the kernel allocates blocks in power-of-two
    /// page orders, so anything else wastes memory), with a message that
    /// names the offending values. `page_size` is the system page size.
    pub fn validate(&self, page_size: usize) -> Result<(), CaptureError> {
        let geometry = || {
            format!(
                "block_size={} block_count={} frame_size={}",
                self.block_size, self.block_count, self.frame_size
            )
        };
        let bad = |why: String| Err(CaptureError::Ring(format!("{why} ({})", geometry())));
        if page_size == 0 || !page_size.is_power_of_two() {
            return bad(format!("unusable page size {page_size}"));
        }
        if self.block_size == 0 || !self.block_size.is_power_of_two() {
            return bad("block_size must be a non-zero power of two".into());
        }
        if self.block_size % page_size != 0 {
            return bad(format!(
                "block_size must be a multiple of the page size ({page_size})"
            ));
        }
        if self.block_size > u32::MAX as usize {
            return bad("block_size does not fit the kernel's 32-bit field".into());
        }
        if self.block_count == 0 {
            return bad("block_count must be at least 1".into());
        }
        if self.frame_size < sys::TPACKET3_HDRLEN {
            return bad(format!(
                "frame_size must be at least {} (TPACKET3_HDRLEN)",
                sys::TPACKET3_HDRLEN
            ));
        }
        if self.frame_size % sys::TPACKET_ALIGNMENT != 0 {
            return bad(format!(
                "frame_size must be a multiple of {}",
                sys::TPACKET_ALIGNMENT
            ));
        }
        if self.frame_size > self.block_size {
            return bad("frame_size must not exceed block_size".into());
        }
        let frames_per_block = self.block_size / self.frame_size;
        let frame_nr = frames_per_block
            .checked_mul(self.block_count)
            .filter(|&n| n <= u32::MAX as usize);
        if frame_nr.is_none() || self.block_count > u32::MAX as usize {
            return bad("block_count too large (frame count overflows 32 bits)".into());
        }
        match self.ring_bytes() {
            Some(total) if total <= isize::MAX as usize => {}
            _ => return bad("ring size overflows".into()),
        }
        if self.snaplen == 0 {
            return Err(CaptureError::Config(
                "snaplen must be at least 1 (0 would drop every packet)".into(),
            ));
        }
        Ok(())
    }

    /// `tp_frame_nr` for the validated geometry.
    pub(crate) fn frame_count(&self) -> usize {
        (self.block_size / self.frame_size) * self.block_count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: usize = 4096;

    #[test]
    fn fanout_mode_parses() {
        assert_eq!("hash".parse::<FanoutMode>(), Ok(FanoutMode::Hash));
        assert_eq!("lb".parse::<FanoutMode>(), Ok(FanoutMode::Lb));
        assert_eq!("CPU".parse::<FanoutMode>(), Ok(FanoutMode::Cpu));
        assert_eq!(" qm ".parse::<FanoutMode>(), Ok(FanoutMode::Qm));
        let err = "rollover".parse::<FanoutMode>().unwrap_err();
        assert!(err.to_string().contains("rollover"));
        assert!("".parse::<FanoutMode>().is_err());
        for m in [
            FanoutMode::Hash,
            FanoutMode::Lb,
            FanoutMode::Cpu,
            FanoutMode::Qm,
        ] {
            assert_eq!(m.to_string().parse::<FanoutMode>(), Ok(m));
        }
    }

    #[test]
    fn fanout_kernel_values_match_if_packet_h() {
        assert_eq!(FanoutMode::Hash.kernel_value(), 0);
        assert_eq!(FanoutMode::Lb.kernel_value(), 1);
        assert_eq!(FanoutMode::Cpu.kernel_value(), 2);
        assert_eq!(FanoutMode::Qm.kernel_value(), 5);
    }

    #[test]
    fn default_config_is_valid() {
        let c = RingConfig::default();
        c.validate(PAGE).unwrap();
        assert_eq!(c.ring_bytes(), Some(64 << 20));
        assert_eq!(c.frame_count(), 512 * 64);
        // Also valid with 64 KiB pages (arm64/ppc64 kernels).
        c.validate(65536).unwrap();
    }

    fn ring_err(c: &RingConfig) -> String {
        match c.validate(PAGE) {
            Err(CaptureError::Ring(m)) => m,
            other => panic!("expected a Ring error, got {other:?}"),
        }
    }

    #[test]
    fn bad_geometry_is_a_ring_error_naming_the_sizes() {
        let base = RingConfig::default();
        let m = ring_err(&RingConfig {
            block_size: 3 * PAGE,
            ..base.clone()
        });
        assert!(
            m.contains("power of two") && m.contains("block_size=12288"),
            "{m}"
        );
        let m = ring_err(&RingConfig {
            block_size: 2048,
            frame_size: 1024,
            ..base.clone()
        });
        assert!(m.contains("page size"), "{m}");
        let m = ring_err(&RingConfig {
            block_size: 0,
            ..base.clone()
        });
        assert!(m.contains("power of two"), "{m}");
        let m = ring_err(&RingConfig {
            block_count: 0,
            ..base.clone()
        });
        assert!(m.contains("block_count"), "{m}");
        let m = ring_err(&RingConfig {
            frame_size: 2040,
            ..base.clone()
        });
        assert!(m.contains("multiple of 16"), "{m}");
        let m = ring_err(&RingConfig {
            frame_size: 32,
            ..base.clone()
        });
        assert!(m.contains("TPACKET3_HDRLEN"), "{m}");
        let m = ring_err(&RingConfig {
            block_size: PAGE,
            frame_size: 2 * PAGE,
            ..base.clone()
        });
        assert!(m.contains("exceed"), "{m}");
        let m = ring_err(&RingConfig {
            block_count: usize::MAX / 2,
            ..base.clone()
        });
        assert!(m.contains("overflow"), "{m}");
        let m = ring_err(&RingConfig {
            block_size: 1 << 40,
            ..base.clone()
        });
        assert!(m.contains("32-bit"), "{m}");
    }

    #[test]
    fn zero_snaplen_is_a_config_error() {
        let c = RingConfig {
            snaplen: 0,
            ..RingConfig::default()
        };
        assert!(matches!(c.validate(PAGE), Err(CaptureError::Config(_))));
    }
}
