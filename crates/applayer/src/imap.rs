//! IMAP detection, as Suricata 9's `imap` (`enabled: detection-only`):
//! the flow's `app_proto` becomes `imap` so that `alert imap` headers and
//! `app-layer-protocol:imap` apply to its packets and stream, and its
//! data is not parsed (no transactions, no EVE record, no STARTTLS
//! hand-over: Suricata has no IMAP parser to see one).
//!
//! Detection is by content on any port, with Suricata's patterns (case
//! insensitive): a server response starting with an untagged `* OK `,
//! `* NO `, `* BAD `, `* LIST `, `* ESEARCH `, `* STATUS ` or `* FLAGS `,
//! or a client `CAPABILITY` command whose tag leaves it within the first
//! 17 bytes (Suricata looks for ` CAPABILITY` there).

use crate::Direction;

/// IMAP's port (a hint: detection is by content).
pub const PORT: u16 = 143;

/// The server's untagged responses that tell IMAP.
const SERVER: &[&[u8]] = &[
    b"* OK ",
    b"* NO ",
    b"* BAD ",
    b"* LIST ",
    b"* ESEARCH ",
    b"* STATUS ",
    b"* FLAGS ",
];

/// The client's command that tells IMAP, and how far into the stream it
/// may end (Suricata's depth 17: a tag of up to 6 characters).
const CLIENT: &[u8] = b" CAPABILITY";
const CLIENT_DEPTH: usize = 17;

/// `Some(true)` when the first bytes are IMAP's, `None` while more bytes
/// could still make them so.
pub fn probe(dir: Direction, data: &[u8]) -> Option<bool> {
    match dir {
        Direction::ToClient => {
            let mut more = false;
            for p in SERVER {
                let n = p.len().min(data.len());
                if data[..n].eq_ignore_ascii_case(&p[..n]) {
                    if n == p.len() {
                        return Some(true);
                    }
                    more = true;
                }
            }
            if more {
                None
            } else {
                Some(false)
            }
        }
        Direction::ToServer => {
            // A tag, then the command.
            let tag = data
                .iter()
                .position(|&c| !(c.is_ascii_alphanumeric() || c == b'.'))
                .unwrap_or(data.len());
            let rest = &data[tag..];
            let n = rest.len().min(CLIENT.len());
            if tag == 0
                || tag + CLIENT.len() > CLIENT_DEPTH
                || !rest[..n].eq_ignore_ascii_case(&CLIENT[..n])
            {
                return Some(false);
            }
            if n < CLIENT.len() {
                return None;
            }
            Some(true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::*;

    #[test]
    fn server_patterns_case_insensitive() {
        assert_eq!(probe(ToClient, b"* OK IMAP4rev1 ready\r\n"), Some(true));
        assert_eq!(probe(ToClient, b"* ok [CAPABILITY IMAP4]\r\n"), Some(true));
        assert_eq!(probe(ToClient, b"* BAD x\r\n"), Some(true));
        assert_eq!(probe(ToClient, b"* ESEARCH (TAG \"a\")\r\n"), Some(true));
        assert_eq!(probe(ToClient, b"* O"), None);
        assert_eq!(probe(ToClient, b"* "), None);
        assert_eq!(probe(ToClient, b"* PREAUTH x\r\n"), Some(false));
        assert_eq!(probe(ToClient, b"+OK POP3\r\n"), Some(false));
    }

    #[test]
    fn client_capability_within_depth() {
        assert_eq!(probe(ToServer, b"a001 CAPABILITY\r\n"), Some(true));
        assert_eq!(probe(ToServer, b"1 capability\r\n"), Some(true));
        assert_eq!(probe(ToServer, b"a001 CAPAB"), None);
        // The tag is too long: the command ends past the depth.
        assert_eq!(probe(ToServer, b"abcdefgh CAPABILITY\r\n"), Some(false));
        assert_eq!(probe(ToServer, b"a001 LOGIN joe secret\r\n"), Some(false));
    }
}
