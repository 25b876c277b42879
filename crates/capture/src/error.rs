//! The crate's error type.

/// Everything that can go wrong while opening or reading a capture ring.
///
/// No function of this crate panics on bad input or a failing system call;
/// each failure comes back as one of these variants, with a message that
/// names the interface, the sizes or the expression involved.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The interface does not exist (in the network namespace of the thread
    /// that asked), or its name is not a valid interface name.
    #[error("no such interface: {0}")]
    NoSuchInterface(String),
    /// The kernel refused a raw socket or one of its options (EPERM/EACCES).
    #[error("{0}: permission denied: needs CAP_NET_RAW (run as root or grant the capability)")]
    Permission(String),
    /// The ring configuration is invalid, or `PACKET_RX_RING`/`mmap` failed;
    /// the message names the sizes that were asked for.
    #[error("capture ring: {0}")]
    Ring(String),
    /// A configuration value other than the ring sizes is invalid (snaplen).
    #[error("capture configuration: {0}")]
    Config(String),
    /// The filter expression does not compile, or the compiled program is
    /// too long for the kernel.
    #[error("capture filter: {0}")]
    Filter(String),
    /// Joining the fanout group failed (for example the group id is already
    /// used with another mode or on another interface).
    #[error("fanout: {0}")]
    Fanout(String),
    /// The interface's ARPHRD type has no link type this crate can name.
    #[error("interface {iface}: unsupported hardware type ARPHRD {arphrd}")]
    UnsupportedLinkType {
        /// Interface name.
        iface: String,
        /// `sll_hatype` / `dev->type` of the interface.
        arphrd: u16,
    },
    /// The interface went down or away (ENETDOWN/ENXIO/ENODEV). The ring is
    /// dead: the caller counts the event and retries by opening a new ring.
    #[error("link down: {0}")]
    LinkDown(String),
    /// Any other system call failure.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
