//! The kernel's per-queue figures from `/proc/net/netfilter/nfnetlink_queue`.
//!
//! One line per bound queue instance of the network namespace, written by
//! `seq_show` in `net/netfilter/nfnetlink_queue.c` as
//! `queue_num peer_portid queue_total copy_mode copy_range queue_dropped
//! queue_user_dropped id_sequence 1`.

/// One line of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcQueue {
    pub queue_num: u16,
    pub peer_portid: u32,
    /// Packets queued and waiting for a verdict.
    pub queue_total: u32,
    /// Packets dropped because the queue was full (not counted with
    /// fail-open, which accepts them instead).
    pub queue_dropped: u64,
    /// Packets dropped because the netlink socket's receive buffer was full.
    pub user_dropped: u64,
}

/// Parses the whole file; lines that do not have the expected shape are
/// skipped (a future kernel may add columns at the end, which is fine).
pub(crate) fn parse(text: &str) -> Vec<ProcQueue> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 7 {
                return None;
            }
            Some(ProcQueue {
                queue_num: f[0].parse().ok()?,
                peer_portid: f[1].parse().ok()?,
                queue_total: f[2].parse().ok()?,
                queue_dropped: f[5].parse().ok()?,
                user_dropped: f[6].parse().ok()?,
            })
        })
        .collect()
}

/// The path of the file for the calling thread's network namespace
/// (`/proc/self/net` would follow the main thread's namespace).
pub(crate) fn path() -> &'static str {
    if std::path::Path::new("/proc/thread-self/net").exists() {
        "/proc/thread-self/net/netfilter/nfnetlink_queue"
    } else {
        "/proc/self/net/netfilter/nfnetlink_queue"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_lines() {
        let text = "    0  12345 3         2    65535        7        9       42  1\n\
                    65535 4294966000 0  2     1500        0        0        0  1\n\
                    garbage line\n";
        let q = parse(text);
        assert_eq!(
            q,
            vec![
                ProcQueue {
                    queue_num: 0,
                    peer_portid: 12345,
                    queue_total: 3,
                    queue_dropped: 7,
                    user_dropped: 9
                },
                ProcQueue {
                    queue_num: 65535,
                    peer_portid: 4294966000,
                    queue_total: 0,
                    queue_dropped: 0,
                    user_dropped: 0
                }
            ]
        );
        assert!(parse("").is_empty());
    }
}
