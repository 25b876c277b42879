//! FTP data connections (`ftp-data`), as Suricata links them to their
//! control channel.
//!
//! A data connection is announced on the control channel: `PORT` /
//! `EPRT` (active mode: the client listens) or a `227` / `229` reply to
//! `PASV` / `EPSV` (passive mode: the server listens), and used by the
//! next `RETR`, `STOR`, `LIST` or `NLST` (the commands Suricata creates
//! its expectation on; the argument of `RETR`/`STOR` is the file name).
//! [`control_line`] reads one control line for that; the engine keeps the announcements
//! and the expectations they turn into (see docs/ARCHITECTURE.md, "FTP
//! data connections") and gives a new TCP flow that matches one the
//! protocol `ftp-data` without probing it, with an [`FtpDataState`]
//! holding the command and file name.
//!
//! The data itself is not parsed (no files are extracted): it is
//! inspected as raw stream by `alert ftp-data` rules. The flow has one
//! transaction, whose `ftpdata_command` is the command and whose EVE
//! record (`ftp_data`: `filename`, `command`) is written once both
//! directions ended, as Suricata does.

use serde_json::{Map, Value};

use crate::ftp::{parse_eprt, parse_epsv_reply, parse_host_port, parse_pasv_reply};
use crate::state::{TxCommon, TxProgress};
use crate::txparser::{suri_str, TxParser};
use crate::{AppLayerEvent, AppProto, BufferId, Direction, Timestamp, TxId, UintField};

/// Longest file name kept (Suricata's `ftp.max-line-length` default: the
/// name is the rest of a control line).
pub const MAX_FILENAME: usize = crate::ftp::MAX_LINE;

/// The command that uses a data connection, with the values
/// `ftpdata_command` compares (Suricata 9 accepts `stor`, `retr`, `list`
/// and `nlst`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FtpDataCommand {
    Stor,
    Retr,
    List,
    Nlst,
}

/// Names and values of [`FtpDataCommand`] for the keyword.
pub(crate) const COMMAND_NAMES: &[(&str, u64)] =
    &[("stor", 1), ("retr", 2), ("list", 3), ("nlst", 4)];

impl FtpDataCommand {
    pub fn name(self) -> &'static str {
        match self {
            FtpDataCommand::Stor => "STOR",
            FtpDataCommand::Retr => "RETR",
            FtpDataCommand::List => "LIST",
            FtpDataCommand::Nlst => "NLST",
        }
    }

    fn value(self) -> u64 {
        match self {
            FtpDataCommand::Stor => 1,
            FtpDataCommand::Retr => 2,
            FtpDataCommand::List => 3,
            FtpDataCommand::Nlst => 4,
        }
    }
}

/// What the control channel said about a data connection.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FtpDataInfo {
    pub command: FtpDataCommand,
    /// The argument of `RETR`/`STOR`, at most [`MAX_FILENAME`] bytes
    /// (empty for `LIST`/`NLST`: Suricata logs no file name for them).
    pub filename: Vec<u8>,
}

/// What one control-channel line means for data connections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlLine {
    /// The line's sender listens on this port for the data connection
    /// (`active`: a `PORT`/`EPRT` command; else a `227`/`229` reply).
    Announce { port: u16, active: bool },
    /// `RETR` / `STOR` with a file name, `LIST` / `NLST`: the announced
    /// connection is used for it.
    Transfer(FtpDataInfo),
}

/// Reads one control line (without its CR LF): a data connection's
/// announcement or use, or `None`. Commands are compared without case,
/// as Suricata's parser does; `RETR`/`STOR` need an argument (Suricata
/// requires more than the 5 bytes of `RETR `), `LIST`/`NLST` take one or
/// not.
pub fn control_line(line: &[u8]) -> Option<ControlLine> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    for (name, command) in [
        (b"LIST", FtpDataCommand::List),
        (b"NLST", FtpDataCommand::Nlst),
    ] {
        if line.get(..4).is_some_and(|h| h.eq_ignore_ascii_case(name))
            && matches!(line.get(4), None | Some(b' '))
        {
            return Some(ControlLine::Transfer(FtpDataInfo {
                command,
                filename: Vec::new(),
            }));
        }
    }
    let (head, rest) = match line.get(..5) {
        Some(h) => (h, &line[5..]),
        None => return None,
    };
    let cmd = |c: &[u8]| head[..4].eq_ignore_ascii_case(c) && head[4] == b' ';
    if cmd(b"PORT") {
        let (_, port) = parse_host_port(rest)?;
        return Some(ControlLine::Announce { port, active: true });
    }
    if cmd(b"EPRT") {
        let port = parse_eprt(rest)?;
        return Some(ControlLine::Announce { port, active: true });
    }
    if &head[..4] == b"227 " {
        let port = parse_pasv_reply(&line[4..])?;
        return Some(ControlLine::Announce {
            port,
            active: false,
        });
    }
    if &head[..4] == b"229 " {
        let port = parse_epsv_reply(&line[4..])?;
        return Some(ControlLine::Announce {
            port,
            active: false,
        });
    }
    let command = if cmd(b"RETR") {
        FtpDataCommand::Retr
    } else if cmd(b"STOR") {
        FtpDataCommand::Stor
    } else {
        return None;
    };
    if rest.is_empty() {
        return None;
    }
    Some(ControlLine::Transfer(FtpDataInfo {
        command,
        filename: rest[..rest.len().min(MAX_FILENAME)].to_vec(),
    }))
}

/// The state of an `ftp-data` flow: its one transaction.
#[derive(Debug)]
pub struct FtpDataState {
    common: TxCommon,
    info: Option<FtpDataInfo>,
    finished: [bool; 2],
}

impl FtpDataState {
    /// The flow a control channel announced (`info`), or one whose
    /// command is not known (`None`).
    pub fn new(info: Option<FtpDataInfo>, ts: Timestamp) -> Self {
        FtpDataState {
            common: TxCommon::new(0, ts),
            info,
            finished: [false; 2],
        }
    }

    pub fn info(&self) -> Option<&FtpDataInfo> {
        self.info.as_ref()
    }

    fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.finished[0],
            response_complete: self.finished[1],
        }
    }

    /// Suricata's `ftp_data` object.
    pub fn eve(&self) -> Value {
        let mut m = Map::new();
        if let Some(i) = &self.info {
            if !i.filename.is_empty() {
                m.insert("filename".into(), suri_str(&i.filename));
            }
            m.insert("command".into(), i.command.name().into());
        }
        Value::Object(m)
    }
}

impl TxParser for FtpDataState {
    fn proto(&self) -> AppProto {
        AppProto::FtpData
    }
    // The data is inspected as raw stream only: nothing to parse. It is
    // still taken (not left with `wants_data`) so that the end of each
    // direction completes the transaction, as Suricata logs it then.
    fn feed(&mut self, _dir: Direction, _d: &[u8], _ts: Timestamp, _ev: &mut Vec<AppLayerEvent>) {}
    fn on_gap(&mut self, _dir: Direction, _ev: &mut Vec<AppLayerEvent>) {}
    fn finish(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        self.finished[dir.index()] = true;
    }
    fn infos(&self) -> Vec<(&TxCommon, TxProgress)> {
        vec![(&self.common, self.progress())]
    }
    fn common(&self, tx: TxId) -> Option<&TxCommon> {
        (tx == self.common.id).then_some(&self.common)
    }
    fn common_mut(&mut self, tx: TxId) -> Option<&mut TxCommon> {
        (tx == self.common.id).then_some(&mut self.common)
    }
    fn retain(&mut self, keep: &mut dyn FnMut(&TxCommon, TxProgress) -> bool) {
        // The flow's only transaction stays until the flow ends.
        let _ = keep;
    }
    fn buffers(&self, _tx: TxId, _id: BufferId, _dir: Direction) -> Vec<&[u8]> {
        Vec::new()
    }
    fn uints(&self, tx: TxId, field: UintField, _dir: Direction) -> Vec<u64> {
        match (&self.info, field) {
            (Some(i), UintField::FtpdataCommand) if tx == self.common.id => {
                vec![i.command.value()]
            }
            _ => Vec::new(),
        }
    }
    fn eve(&self, tx: TxId) -> Option<Value> {
        (tx == self.common.id).then(|| FtpDataState::eve(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn announce(line: &[u8]) -> Option<(u16, bool)> {
        match control_line(line)? {
            ControlLine::Announce { port, active } => Some((port, active)),
            ControlLine::Transfer(_) => None,
        }
    }

    #[test]
    fn pasv_replies() {
        // 227 in its usual forms: parentheses, spaces, lower-case text.
        assert_eq!(
            announce(b"227 Entering Passive Mode (192,168,1,2,100,85)."),
            Some((25685, false))
        );
        assert_eq!(
            announce(b"227 Entering Passive Mode ( 10,0,0,2,4,1 )\r"),
            Some((1025, false))
        );
        assert_eq!(announce(b"227 ok (1,2,3,4,0,21)"), Some((21, false)));
        // Malformed: no parentheses, a number over 255, port 0, five
        // numbers, a 227- continuation line.
        assert_eq!(announce(b"227 Entering Passive Mode 1,2,3,4,5,6"), None);
        assert_eq!(announce(b"227 x (1,2,3,4,256,1)"), None);
        assert_eq!(announce(b"227 x (1,2,3,4,0,0)"), None);
        assert_eq!(announce(b"227 x (1,2,3,4,5)"), None);
        assert_eq!(announce(b"227-x (1,2,3,4,5,6)"), None);
    }

    #[test]
    fn epsv_replies() {
        assert_eq!(
            announce(b"229 Entering Extended Passive Mode (|||6446|)"),
            Some((6446, false))
        );
        // Any delimiter RFC 2428 allows.
        assert_eq!(announce(b"229 ok (!!!65535!)"), Some((65535, false)));
        assert_eq!(announce(b"229 ok (|||0|)"), None);
        assert_eq!(announce(b"229 ok (|||65536|)"), None);
        assert_eq!(announce(b"229 ok (||1.2.3.4|6446|)"), None);
        assert_eq!(announce(b"229 ok |||6446|"), None);
    }

    #[test]
    fn port_and_eprt_commands() {
        assert_eq!(announce(b"PORT 10,0,0,1,234,10"), Some((59914, true)));
        assert_eq!(announce(b"port 10,0,0,1,0,20\r"), Some((20, true)));
        assert_eq!(announce(b"PORT 10,0,0,1,234"), None);
        assert_eq!(announce(b"PORT 10,0,0,1,234,10,1"), None);
        assert_eq!(announce(b"PORTX 10,0,0,1,234,10"), None);
        assert_eq!(announce(b"EPRT |1|132.235.1.2|6275|"), Some((6275, true)));
        // IPv6.
        assert_eq!(
            announce(b"EPRT |2|1080::8:800:200C:417A|5282|"),
            Some((5282, true))
        );
        assert_eq!(announce(b"eprt !2!::1!40000!"), Some((40000, true)));
        assert_eq!(announce(b"EPRT |3|1.2.3.4|5282|"), None);
        assert_eq!(announce(b"EPRT |1|1.2.3.4|0|"), None);
        assert_eq!(announce(b"EPRT |1|1.2.3.4|5282"), None);
    }

    #[test]
    fn transfers_need_a_file_name() {
        assert_eq!(
            control_line(b"RETR a.txt\r"),
            Some(ControlLine::Transfer(FtpDataInfo {
                command: FtpDataCommand::Retr,
                filename: b"a.txt".to_vec()
            }))
        );
        assert_eq!(
            control_line(b"stor dir/b c"),
            Some(ControlLine::Transfer(FtpDataInfo {
                command: FtpDataCommand::Stor,
                filename: b"dir/b c".to_vec()
            }))
        );
        assert_eq!(control_line(b"RETR "), None);
        assert_eq!(control_line(b"RETR"), None);
        for (line, command) in [
            (&b"LIST /pub"[..], FtpDataCommand::List),
            (b"list", FtpDataCommand::List),
            (b"NLST\r", FtpDataCommand::Nlst),
        ] {
            assert_eq!(
                control_line(line),
                Some(ControlLine::Transfer(FtpDataInfo {
                    command,
                    filename: Vec::new()
                }))
            );
        }
        assert_eq!(control_line(b"LISTX"), None);
        assert_eq!(control_line(b"MLSD"), None);
        assert_eq!(control_line(b"RETRIEVE x"), None);
        let long = [b"RETR ".as_slice(), &[b'x'; 10_000]].concat();
        match control_line(&long) {
            Some(ControlLine::Transfer(i)) => assert_eq!(i.filename.len(), MAX_FILENAME),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn state_has_one_transaction_with_the_command() {
        let info = FtpDataInfo {
            command: FtpDataCommand::Retr,
            filename: b"f\xffx".to_vec(),
        };
        let mut s = FtpDataState::new(Some(info), 7);
        assert_eq!(
            s.uints(0, UintField::FtpdataCommand, Direction::ToClient),
            [2]
        );
        assert!(s
            .uints(1, UintField::FtpdataCommand, Direction::ToClient)
            .is_empty());
        assert_eq!(
            s.eve(),
            serde_json::json!({"filename": "f\\xffx", "command": "RETR"})
        );
        let mut ev = Vec::new();
        s.finish(Direction::ToServer, &mut ev);
        assert!(s.infos()[0].1.request_complete);
        assert!(!s.infos()[0].1.response_complete);
        // Unknown command: no value, an empty record.
        let s = FtpDataState::new(None, 0);
        assert!(s
            .uints(0, UintField::FtpdataCommand, Direction::ToServer)
            .is_empty());
        assert_eq!(s.eve(), serde_json::json!({}));
    }
}
