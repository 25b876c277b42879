//! The crate's error type.

/// Everything that can go wrong while parsing a queue spec, opening a
/// queue, reading packets or giving verdicts.
///
/// No function of this crate panics on bad input or a failing system call;
/// each failure comes back as one of these variants, with a message that
/// names the queue involved.
#[derive(Debug, thiserror::Error)]
pub enum InlineError {
    /// The kernel refused to bind the queue because the caller lacks
    /// `CAP_NET_ADMIN` (in the user namespace owning the network namespace).
    #[error("{0}: permission denied: binding an NFQUEUE needs CAP_NET_ADMIN (run as root or grant the capability)")]
    Permission(String),
    /// The queue number is already bound by another netlink socket (another
    /// process, or another [`crate::Queue`] of this one).
    #[error("{0}")]
    Busy(String),
    /// A system call on the netlink socket failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// libnetfilter_queue or the kernel reported an error on the netlink
    /// channel (configuration refused, verdict for an unknown packet id,
    /// malformed message).
    #[error("nfqueue: {0}")]
    Netlink(String),
    /// A queue spec (`-q` argument) that is not `N` or `N:M` with
    /// `0 <= N <= M <= 65535`.
    #[error("bad queue spec: {0}")]
    BadSpec(String),
    /// A [`crate::QueueConfig`] value the kernel cannot use (max_len 0).
    #[error("queue configuration: {0}")]
    Config(String),
}
