//! The per-flow application-layer state the engine holds: one parser per
//! flow, chosen by the detected protocol, behind one API.

use serde_json::Value;

use crate::dcerpc::DcerpcState;
use crate::dns::DnsState;
use crate::ftp::FtpState;
use crate::http::HttpState;
use crate::http2::Http2State;
use crate::msg::{MsgParser, MsgState};
use crate::passive::PassiveState;
use crate::sip::SipState;
use crate::smb::SmbState;
use crate::ssh::SshState;
use crate::tls::TlsState;
use crate::txparser::TxParser;
use crate::{AppLayerConfig, AppLayerEvent, AppProto, BufferId, Direction, Timestamp, Transport};

/// A transaction's id within its flow: 0, 1, 2 ... in creation order.
pub type TxId = u64;

/// Whether each side of a transaction is complete.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxProgress {
    pub request_complete: bool,
    pub response_complete: bool,
}

impl TxProgress {
    pub fn complete(&self, dir: Direction) -> bool {
        match dir {
            Direction::ToServer => self.request_complete,
            Direction::ToClient => self.response_complete,
        }
    }
}

/// What every transaction carries for the engine.
#[derive(Clone, Debug, Default)]
pub(crate) struct TxCommon {
    pub id: TxId,
    /// First packet time of the transaction.
    pub ts: Timestamp,
    /// Set by detection once it has inspected a direction of the
    /// transaction for good, so that rules fire once per transaction.
    pub inspected: [bool; 2],
    /// Set by the transaction logger once the EVE record is written.
    pub logged: bool,
    /// Events raised on this transaction (distinct, at most
    /// [`MAX_TX_EVENTS`]), for `app-layer-event`.
    pub events: Vec<(AppLayerEvent, Direction)>,
}

/// Most distinct events remembered per transaction.
pub const MAX_TX_EVENTS: usize = 16;

impl TxCommon {
    pub fn new(id: TxId, ts: Timestamp) -> Self {
        TxCommon {
            id,
            ts,
            ..Default::default()
        }
    }
}

/// A summary of one transaction for the engine's loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxInfo {
    pub id: TxId,
    pub progress: TxProgress,
    /// Detection is done with this direction of the transaction.
    pub inspected: [bool; 2],
    pub logged: bool,
    pub ts: Timestamp,
}

/// A transaction's EVE object, as a record carries it.
#[derive(Debug, Clone)]
pub enum EveObject {
    /// JSON text, followed by `,"key":{...}` for each object logged
    /// beside the protocol's.
    Text(String),
    /// The protocol's object and the objects logged beside it (SMTP's
    /// `email`), for the output thread to serialise: building a tree is
    /// the costly part, not writing it, so the worker does not write it.
    Tree(Value, Vec<(&'static str, Value)>),
}

impl EveObject {
    /// The record's text.
    pub fn into_text(self) -> String {
        match self {
            EveObject::Text(s) => s,
            tree => tree.text(),
        }
    }

    /// The record's text, written from a borrowed object.
    pub fn text(&self) -> String {
        match self {
            EveObject::Text(s) => s.clone(),
            EveObject::Tree(v, siblings) => {
                let mut text = serde_json::to_string(v).unwrap_or_default();
                for (key, obj) in siblings {
                    text.push_str(",\"");
                    text.push_str(key);
                    text.push_str("\":");
                    text.push_str(&serde_json::to_string(obj).unwrap_or_default());
                }
                text
            }
        }
    }
}

/// The application-layer state of one flow.
///
/// Each variant is boxed so that what a flow holds is one pointer wide
/// whatever the protocol.
pub enum AppLayerState {
    Http(Box<HttpState>),
    Dns(Box<DnsState>),
    Tls(Box<TlsState>),
    Ssh(Box<SshState>),
    /// DCERPC over TCP.
    Dcerpc(Box<DcerpcState>),
    Ftp(Box<FtpState>),
    Sip(Box<SipState>),
    /// HTTP/2 in clear text (prior knowledge or `Upgrade: h2c`).
    Http2(Box<Http2State>),
    /// MQTT, RFB, DHCP, SMTP, FTP data: parsers behind `TxParser`
    /// (crate-private).
    #[allow(private_interfaces)]
    Ext(Box<dyn TxParser>),
    Smb(Box<SmbState>),
    /// Protocols parsed a whole message at a time (Kerberos 5, SNMP, IKE).
    Msg(Box<dyn MsgParser>),
    /// DCERPC over UDP: detected, not parsed into transactions.
    Passive(Box<PassiveState>),
}

impl AppLayerState {
    /// The parser stopped on data it cannot make sense of (Suricata's
    /// parser error, what `app-layer.error-policy` acts on). HTTP and DNS
    /// parse leniently, as libhtp and Suricata's DNS parser do: their
    /// anomalies are events, not errors.
    pub fn errored(&self) -> bool {
        match self {
            AppLayerState::Tls(t) => t.errored(),
            _ => false,
        }
    }

    /// A parser for `proto` with default caps. `transport` matters for DNS
    /// only (datagrams over UDP, length-prefixed messages over TCP).
    pub fn new(proto: AppProto, transport: Transport) -> Self {
        Self::with_config(proto, transport, &AppLayerConfig::default())
    }

    pub fn with_config(proto: AppProto, transport: Transport, cfg: &AppLayerConfig) -> Self {
        match proto {
            AppProto::Http => AppLayerState::Http(Box::new(HttpState::new(cfg))),
            AppProto::Dns => AppLayerState::Dns(Box::new(DnsState::new(transport, cfg))),
            AppProto::Mdns | AppProto::Llmnr => {
                AppLayerState::Dns(Box::new(DnsState::with_variant(proto, transport, cfg)))
            }
            AppProto::Tls => AppLayerState::Tls(Box::new(TlsState::new(cfg))),
            AppProto::Ssh => AppLayerState::Ssh(Box::new(SshState::new())),
            // Connectionless DCERPC (UDP) is not parsed: detected only.
            AppProto::Dcerpc if transport == Transport::Tcp => {
                AppLayerState::Dcerpc(Box::new(DcerpcState::new(cfg)))
            }
            AppProto::Ftp => AppLayerState::Ftp(Box::new(FtpState::new(cfg))),
            AppProto::Sip => AppLayerState::Sip(Box::new(SipState::new(transport, cfg))),
            AppProto::Http2 => AppLayerState::Http2(Box::new(Http2State::new(cfg))),
            AppProto::Mqtt => AppLayerState::Ext(Box::new(crate::mqtt::MqttState::new(cfg))),
            AppProto::Rfb => AppLayerState::Ext(Box::new(crate::rfb::RfbState::new(cfg))),
            AppProto::Dhcp => AppLayerState::Ext(Box::new(crate::dhcp::DhcpState::new(cfg))),
            AppProto::FtpData => Self::ftp_data(None, 0),
            AppProto::Enip => {
                AppLayerState::Ext(Box::new(crate::enip::EnipState::new(transport, cfg)))
            }
            AppProto::Modbus => AppLayerState::Ext(Box::new(crate::modbus::ModbusState::new(cfg))),
            AppProto::Dnp3 => AppLayerState::Ext(Box::new(crate::dnp3::Dnp3State::new(cfg))),
            AppProto::Smb => AppLayerState::Smb(Box::new(SmbState::new(cfg))),
            AppProto::Tftp => AppLayerState::Ext(Box::new(crate::tftp::TftpState::new(cfg))),
            AppProto::Nfs => {
                AppLayerState::Ext(Box::new(crate::nfs::NfsState::new(transport, cfg)))
            }
            AppProto::Krb5 => AppLayerState::Msg(Box::new(MsgState::new(
                crate::krb5::Krb5::new(),
                transport,
                cfg,
            ))),
            AppProto::Snmp => AppLayerState::Msg(Box::new(MsgState::new(
                crate::snmp::Snmp::new(),
                transport,
                cfg,
            ))),
            AppProto::Ike => AppLayerState::Msg(Box::new(MsgState::new(
                crate::ike::Ike::new(),
                transport,
                cfg,
            ))),
            AppProto::Quic => AppLayerState::Msg(Box::new(MsgState::new(
                crate::quic::Quic::new(),
                transport,
                cfg,
            ))),
            AppProto::Ntp => AppLayerState::Msg(Box::new(MsgState::new(
                crate::ntp::Ntp::new(),
                transport,
                cfg,
            ))),
            AppProto::Telnet => AppLayerState::Ext(Box::new(crate::telnet::TelnetState::new())),
            AppProto::BittorrentDht => AppLayerState::Msg(Box::new(MsgState::new(
                crate::bittorrent_dht::BittorrentDht::new(),
                transport,
                cfg,
            ))),
            AppProto::Smtp => AppLayerState::Ext(Box::new(crate::smtp::SmtpState::new(cfg))),
            AppProto::Dcerpc => AppLayerState::Passive(Box::new(PassiveState::new(proto))),
            AppProto::WebSocket => {
                AppLayerState::Ext(Box::new(crate::websocket::WebSocketState::new(cfg)))
            }
            AppProto::Pgsql => AppLayerState::Ext(Box::new(crate::pgsql::PgsqlState::new(cfg))),
            AppProto::Ldap => {
                AppLayerState::Ext(Box::new(crate::ldap::LdapState::new(transport, cfg)))
            }
            AppProto::Pop3 => AppLayerState::Ext(Box::new(crate::pop3::Pop3State::new(cfg))),
            AppProto::Imap => AppLayerState::Passive(Box::new(PassiveState::new(proto))),
            AppProto::Rdp => AppLayerState::Ext(Box::new(crate::rdp::RdpState::new(cfg))),
        }
    }

    /// The flow's first packet came from the server (mDNS and LLMNR
    /// found on the client's port): LLMNR then expects requests the
    /// flow's way back.
    pub fn set_reversed(&mut self) {
        if let AppLayerState::Dns(s) = self {
            s.reversed = true;
        }
    }

    /// The state of an FTP data connection its control channel announced
    /// (`info`: the command and file name that use it), opened at `ts`.
    pub fn ftp_data(info: Option<crate::ftpdata::FtpDataInfo>, ts: Timestamp) -> Self {
        AppLayerState::Ext(Box::new(crate::ftpdata::FtpDataState::new(info, ts)))
    }

    pub fn proto(&self) -> AppProto {
        match self {
            AppLayerState::Http(_) => AppProto::Http,
            AppLayerState::Dns(s) => s.proto(),
            AppLayerState::Tls(_) => AppProto::Tls,
            AppLayerState::Ssh(_) => AppProto::Ssh,
            AppLayerState::Dcerpc(_) => AppProto::Dcerpc,
            AppLayerState::Ftp(_) => AppProto::Ftp,
            AppLayerState::Sip(_) => AppProto::Sip,
            AppLayerState::Http2(_) => AppProto::Http2,
            AppLayerState::Ext(s) => s.proto(),
            AppLayerState::Smb(_) => AppProto::Smb,
            AppLayerState::Msg(s) => s.proto(),
            AppLayerState::Passive(s) => s.proto(),
        }
    }

    /// Feeds the next bytes of one direction (stream data in order, or one
    /// UDP payload) and returns the events raised.
    pub fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp) -> Vec<AppLayerEvent> {
        let mut ev = Vec::new();
        self.switch_upgrade(ts, &mut ev);
        ev.extend(self.switch_websocket(ts));
        match self {
            AppLayerState::Http(s) => s.feed(dir, data, ts, &mut ev),
            AppLayerState::Dns(s) => s.feed(dir, data, ts, &mut ev),
            AppLayerState::Tls(s) => s.feed(dir, data, ts, &mut ev),
            AppLayerState::Ssh(s) => s.feed(dir, data, ts),
            AppLayerState::Dcerpc(s) => s.feed(dir, data, ts, &mut ev),
            AppLayerState::Ftp(s) => s.feed(dir, data, ts, &mut ev),
            AppLayerState::Sip(s) => s.feed(dir, data, ts, &mut ev),
            AppLayerState::Http2(s) => s.feed(dir, data, ts, &mut ev),
            AppLayerState::Ext(s) => s.feed(dir, data, ts, &mut ev),
            AppLayerState::Smb(s) => s.feed(dir, data, ts, &mut ev),
            AppLayerState::Msg(s) => s.feed(dir, data, ts, &mut ev),
            AppLayerState::Passive(s) => s.feed(dir, data),
        }
        self.switch_h2c(ts, &mut ev);
        self.remember(&ev, dir);
        ev
    }

    /// A parser that hands the flow over (PostgreSQL after an accepted
    /// SSLRequest: TLS, as Suricata's `AppLayerRequestProtocolTLSUpgrade`)
    /// is replaced once its transactions are logged.
    fn switch_upgrade(&mut self, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let AppLayerState::Ext(s) = self else {
            return;
        };
        let Some((AppProto::Tls, cfg)) = s.upgrade() else {
            return;
        };
        if s.infos().iter().any(|(c, _)| !c.logged) {
            return;
        }
        let mut t = TlsState::new(cfg);
        // What each side sent after the hand-over, held until now
        // (POP3's STLS: the client's hello comes with the packet that
        // acknowledges the `+OK`, before that transaction is logged).
        let [to_server, to_client] = s.take_pending();
        for (dir, data) in [
            (Direction::ToServer, to_server),
            (Direction::ToClient, to_client),
        ] {
            if !data.is_empty() {
                t.feed(dir, &data, ts, ev);
            }
        }
        *self = AppLayerState::Tls(Box::new(t));
    }

    /// An HTTP/1 flow whose `Upgrade: websocket` was accepted (`101`)
    /// becomes a WebSocket one, as Suricata changes the flow's protocol,
    /// once every HTTP transaction is logged (the upgrade's own record
    /// and alerts stay HTTP's): the bytes each side sent after the `101`
    /// are the first frames. Feeds and stream ends call this first.
    fn switch_websocket(&mut self, ts: Timestamp) -> Vec<AppLayerEvent> {
        let mut ev = Vec::new();
        let AppLayerState::Http(h) = self else {
            return ev;
        };
        if !h.websocket_upgraded() || h.transactions().any(|t| !t.common.logged) {
            return ev;
        }
        let Some(pending) = h.take_websocket_upgrade() else {
            return ev;
        };
        let s = crate::websocket::WebSocketState::new(h.config());
        *self = AppLayerState::Ext(Box::new(s));
        for (d, rest) in [Direction::ToServer, Direction::ToClient]
            .into_iter()
            .zip(pending)
        {
            if !rest.is_empty() {
                ev.extend(self.feed(d, &rest, ts));
            }
        }
        ev
    }

    /// Files events that belong to a transaction with it.
    fn remember(&mut self, ev: &[AppLayerEvent], dir: Direction) {
        for e in ev {
            let Some(id) = e.tx() else { continue };
            if let Some(c) = self.common_mut(id) {
                if c.events.len() < MAX_TX_EVENTS && !c.events.contains(&(*e, dir)) {
                    c.events.push((*e, dir));
                }
            }
        }
    }

    /// The events raised on a transaction so far, with the direction of
    /// the data that raised them.
    pub fn tx_events(&self, tx: TxId) -> &[(AppLayerEvent, Direction)] {
        let c = match self {
            AppLayerState::Http(s) => s.tx(tx).map(|t| &t.common),
            AppLayerState::Dns(s) => s.tx(tx).map(|t| &t.common),
            AppLayerState::Tls(s) => s.tx_ref(tx).map(|t| &t.common),
            AppLayerState::Ssh(s) => s.tx_ref(tx).map(|t| &t.common),
            AppLayerState::Dcerpc(s) => s.tx(tx).map(|t| &t.common),
            AppLayerState::Ftp(s) => s.tx(tx).map(|t| &t.common),
            AppLayerState::Sip(s) => s.tx(tx).map(|t| &t.common),
            AppLayerState::Http2(s) => s.tx(tx).map(|t| &t.common),
            AppLayerState::Ext(s) => s.common(tx),
            AppLayerState::Smb(s) => s.tx(tx).map(|t| &t.common),
            AppLayerState::Msg(s) => s.common(tx),
            AppLayerState::Passive(_) => None,
        };
        c.map_or(&[], |c| &c.events[..])
    }

    /// Data is missing in one direction (a stream gap of `len` bytes,
    /// `None` when its size is unknown): HTTP skips it inside a body of
    /// known extent; otherwise the parser drops what it had in progress
    /// and resynchronises where it can.
    pub fn on_gap(&mut self, dir: Direction, len: Option<u64>) -> Vec<AppLayerEvent> {
        let mut ev = Vec::new();
        match self {
            AppLayerState::Http(s) => s.on_gap(dir, len, &mut ev),
            AppLayerState::Dns(s) => s.on_gap(dir),
            AppLayerState::Tls(s) => s.on_gap(dir),
            AppLayerState::Ssh(s) => s.on_gap(dir),
            AppLayerState::Dcerpc(s) => s.on_gap(dir, &mut ev),
            AppLayerState::Ftp(s) => s.on_gap(dir),
            AppLayerState::Sip(s) => s.on_gap(dir, &mut ev),
            AppLayerState::Http2(s) => s.on_gap(dir, &mut ev),
            AppLayerState::Ext(s) => s.on_gap(dir, &mut ev),
            AppLayerState::Smb(s) => s.on_gap(dir, &mut ev),
            AppLayerState::Msg(s) => s.on_gap(dir, len, &mut ev),
            AppLayerState::Passive(s) => s.on_gap(dir),
        }
        self.remember(&ev, dir);
        ev
    }

    /// Whether the parser completed a message of `dir` since the last
    /// call, so that the raw stream of that direction is due for
    /// inspection now (Suricata's `AppLayerParserTriggerRawStreamInspection`).
    /// The DCERPC PDUs, FTP lines, DNS-over-TCP messages and TLS records
    /// ask for it.
    pub fn take_raw_trigger(&mut self, dir: Direction) -> bool {
        match self {
            AppLayerState::Dns(s) => s.take_raw_trigger(dir),
            AppLayerState::Tls(s) => s.take_raw_trigger(dir),
            AppLayerState::Passive(s) => s.take_raw_trigger(dir),
            AppLayerState::Dcerpc(s) => s.take_raw_trigger(dir),
            AppLayerState::Ftp(s) => s.take_raw_trigger(dir),
            _ => false,
        }
    }

    /// Whether the parser still wants the data of `dir`: HTTP, DNS and
    /// TLS always do; SSH until its identification is read; a
    /// detected-only protocol (`passive`) only while it frames DCERPC.
    /// When not, the engine lets the stream go without copying it out.
    pub fn wants_data(&self, dir: Direction) -> bool {
        match self {
            AppLayerState::Passive(s) => s.wants_data(dir),
            AppLayerState::Ssh(s) => s.wants_data(dir),
            AppLayerState::Dcerpc(s) => s.wants_data(dir),
            AppLayerState::Ftp(s) => s.wants_data(dir),
            AppLayerState::Http2(s) => s.wants_data(dir),
            AppLayerState::Ext(s) => s.wants_data(dir),
            AppLayerState::Msg(s) => s.wants_data(dir),
            _ => true,
        }
    }

    /// One direction of the stream ended (FIN or RST).
    pub fn finish(&mut self, dir: Direction) -> Vec<AppLayerEvent> {
        let mut ev = self.switch_websocket(0);
        match self {
            AppLayerState::Http(s) => s.finish(dir, &mut ev),
            AppLayerState::Ssh(s) => s.finish(dir),
            AppLayerState::Dcerpc(s) => s.finish(dir),
            AppLayerState::Ftp(s) => s.finish(dir, &mut ev),
            AppLayerState::Sip(s) => s.finish(dir, &mut ev),
            AppLayerState::Http2(s) => s.finish(dir, &mut ev),
            AppLayerState::Ext(s) => s.finish(dir, &mut ev),
            AppLayerState::Smb(s) => s.finish(dir),
            AppLayerState::Msg(s) => s.finish(dir, &mut ev),
            _ => {}
        }
        self.remember(&ev, dir);
        ev
    }

    /// The transactions currently held, oldest first.
    pub fn transactions(&self) -> Vec<TxInfo> {
        fn info(c: &TxCommon, progress: TxProgress) -> TxInfo {
            TxInfo {
                id: c.id,
                progress,
                inspected: c.inspected,
                logged: c.logged,
                ts: c.ts,
            }
        }
        match self {
            AppLayerState::Http(s) => s
                .transactions()
                .map(|t| info(&t.common, t.progress()))
                .collect(),
            AppLayerState::Dns(s) => s
                .transactions()
                .map(|t| info(&t.common, t.progress()))
                .collect(),
            AppLayerState::Tls(s) => s
                .tx()
                .map(|t| info(&t.common, t.progress()))
                .into_iter()
                .collect(),
            AppLayerState::Ssh(s) => s
                .tx()
                .map(|t| info(&t.common, t.progress()))
                .into_iter()
                .collect(),
            AppLayerState::Dcerpc(s) => s
                .transactions()
                .map(|t| info(&t.common, t.progress()))
                .collect(),
            AppLayerState::Ftp(s) => s
                .transactions()
                .map(|t| info(&t.common, t.progress()))
                .collect(),
            AppLayerState::Sip(s) => s
                .transactions()
                .map(|t| info(&t.common, t.progress()))
                .collect(),
            AppLayerState::Http2(s) => s
                .transactions()
                .map(|t| info(&t.common, t.progress()))
                .collect(),
            AppLayerState::Ext(s) => s.infos().into_iter().map(|(c, p)| info(c, p)).collect(),
            AppLayerState::Smb(s) => s
                .transactions()
                .map(|t| info(&t.common, t.progress()))
                .collect(),
            AppLayerState::Msg(s) => s.infos().into_iter().map(|(c, p)| info(c, p)).collect(),
            AppLayerState::Passive(_) => Vec::new(),
        }
    }

    fn common_mut(&mut self, tx: TxId) -> Option<&mut TxCommon> {
        match self {
            AppLayerState::Http(s) => s.tx_mut(tx).map(|t| &mut t.common),
            AppLayerState::Dns(s) => s.tx_mut(tx).map(|t| &mut t.common),
            AppLayerState::Tls(s) => s.tx_mut(tx).map(|t| &mut t.common),
            AppLayerState::Ssh(s) => s.tx_mut(tx).map(|t| &mut t.common),
            AppLayerState::Dcerpc(s) => s.tx_mut(tx).map(|t| &mut t.common),
            AppLayerState::Ftp(s) => s.tx_mut(tx).map(|t| &mut t.common),
            AppLayerState::Sip(s) => s.tx_mut(tx).map(|t| &mut t.common),
            AppLayerState::Http2(s) => s.tx_mut(tx).map(|t| &mut t.common),
            AppLayerState::Ext(s) => s.common_mut(tx),
            AppLayerState::Smb(s) => s.tx_mut(tx).map(|t| &mut t.common),
            AppLayerState::Msg(s) => s.common_mut(tx),
            AppLayerState::Passive(_) => None,
        }
    }

    /// The direction of a transaction that is one message (SIP): its
    /// record names the message's sender as source. `None` for
    /// transactions logged with the client as source.
    pub fn tx_dir(&self, tx: TxId) -> Option<Direction> {
        match self {
            AppLayerState::Sip(s) => s.tx(tx).map(|t| t.dir),
            AppLayerState::Ext(s) => s.tx_dir(tx),
            // QUIC and NTP packets are logged from their sender, as
            // Suricata does.
            AppLayerState::Msg(s)
                if matches!(
                    s.proto(),
                    AppProto::Quic | AppProto::Ntp | AppProto::BittorrentDht
                ) =>
            {
                s.tx_dir(tx)
            }
            _ => None,
        }
    }

    /// Marks a direction of a transaction as inspected for good.
    pub fn set_inspected(&mut self, tx: TxId, dir: Direction) {
        if let Some(c) = self.common_mut(tx) {
            c.inspected[dir.index()] = true;
        }
    }

    /// Marks a transaction as logged (its EVE record written).
    pub fn set_logged(&mut self, tx: TxId) {
        if let Some(c) = self.common_mut(tx) {
            c.logged = true;
        }
    }

    /// Drops transactions that are complete in both directions, inspected
    /// in both and logged; returns how many were dropped.
    pub fn prune(&mut self) -> usize {
        fn done(c: &TxCommon, p: TxProgress) -> bool {
            p.request_complete && p.response_complete && c.inspected == [true, true] && c.logged
        }
        match self {
            AppLayerState::Http(s) => {
                let before = s.transactions().count();
                s.retain(|t| !done(&t.common, t.progress()));
                before - s.transactions().count()
            }
            AppLayerState::Dns(s) => {
                let before = s.transactions().count();
                s.retain(|t| !done(&t.common, t.progress()));
                before - s.transactions().count()
            }
            AppLayerState::Dcerpc(s) => {
                let before = s.transactions().count();
                s.retain(|t| !done(&t.common, t.progress()));
                before - s.transactions().count()
            }
            AppLayerState::Ftp(s) => {
                let before = s.transactions().count();
                s.retain(|t| !done(&t.common, t.progress()));
                before - s.transactions().count()
            }
            AppLayerState::Sip(s) => {
                let before = s.transactions().count();
                s.retain(|t| !done(&t.common, t.progress()));
                before - s.transactions().count()
            }
            AppLayerState::Http2(s) => {
                let before = s.transactions().count();
                s.retain(|t| !done(&t.common, t.progress()));
                before - s.transactions().count()
            }
            AppLayerState::Smb(s) => {
                let before = s.transactions().count();
                s.retain(|t| !done(&t.common, t.progress()));
                before - s.transactions().count()
            }
            AppLayerState::Ext(s) => {
                let before = s.infos().len();
                s.retain(&mut |c, p| !done(c, p));
                before - s.infos().len()
            }
            AppLayerState::Msg(s) => s.retain_not(&done),
            AppLayerState::Tls(_) | AppLayerState::Ssh(_) | AppLayerState::Passive(_) => 0,
        }
    }

    /// One inspection buffer of a transaction, for the direction being
    /// inspected. `None` when the transaction has not got that far or
    /// the field is absent.
    pub fn buffer(&self, tx: TxId, id: BufferId, dir: Direction) -> Option<&[u8]> {
        match self {
            AppLayerState::Http(s) => s.tx(tx)?.buffer(id, dir),
            AppLayerState::Dns(_) => self.buffers(tx, id, dir).next(),
            AppLayerState::Tls(s) => s.tx_ref(tx)?.buffer(id, dir),
            AppLayerState::Ssh(s) => s.tx_ref(tx)?.buffer(id, dir),
            AppLayerState::Dcerpc(s) => s.tx(tx)?.buffer(id, dir),
            AppLayerState::Ftp(_) => self.buffers(tx, id, dir).next(),
            AppLayerState::Sip(s) => s.tx(tx)?.buffer(id, dir),
            AppLayerState::Http2(s) => s.tx(tx)?.buffer(id, dir),
            AppLayerState::Ext(s) => s.buffers(tx, id, dir).into_iter().next(),
            AppLayerState::Smb(_) => self.buffers(tx, id, dir).next(),
            AppLayerState::Msg(s) => s.buffers(tx, id, dir).into_iter().next(),
            AppLayerState::Passive(_) => None,
        }
    }

    /// Every instance of a (multi-)buffer, in order: one per query name for
    /// `dns.query`, one per certificate for `tls.certs`, one per header for
    /// `http.request_header`. A single buffer yields itself.
    pub fn buffers(
        &self,
        tx: TxId,
        id: BufferId,
        dir: Direction,
    ) -> impl Iterator<Item = &[u8]> + '_ {
        let v: Vec<&[u8]> = match self {
            AppLayerState::Http(s) => s.tx(tx).map(|t| t.buffers(id, dir)).unwrap_or_default(),
            AppLayerState::Dns(s) => s.tx(tx).map(|t| t.buffers(id, dir)).unwrap_or_default(),
            AppLayerState::Tls(s) => s.tx_ref(tx).map(|t| t.buffers(id, dir)).unwrap_or_default(),
            AppLayerState::Ssh(s) => s.tx_ref(tx).map(|t| t.buffers(id, dir)).unwrap_or_default(),
            AppLayerState::Dcerpc(s) => s.tx(tx).map(|t| t.buffers(id, dir)).unwrap_or_default(),
            AppLayerState::Ftp(s) => s.tx(tx).map(|t| t.buffers(id, dir)).unwrap_or_default(),
            AppLayerState::Sip(s) => s.tx(tx).map(|t| t.buffers(id, dir)).unwrap_or_default(),
            AppLayerState::Http2(s) => s.tx(tx).map(|t| t.buffers(id, dir)).unwrap_or_default(),
            AppLayerState::Ext(s) => s.buffers(tx, id, dir),
            AppLayerState::Smb(s) => match id {
                // DCERPC over a named pipe: the stub of the DCERPC
                // transaction the SMB one carries.
                BufferId::DcerpcStubData => s
                    .dcerpc_tx(tx)
                    .and_then(|d| s.dcerpc.tx(d))
                    .map(|t| t.buffers(id, dir))
                    .unwrap_or_default(),
                _ => s
                    .tx(tx)
                    .and_then(|t| t.buffer(id, dir))
                    .into_iter()
                    .collect(),
            },
            AppLayerState::Msg(s) => s.buffers(tx, id, dir),
            AppLayerState::Passive(_) => Vec::new(),
        };
        v.into_iter()
    }

    /// The EVE object for a transaction (`http`, `dns`, `tls`, `ssh`, `dcerpc` or `ftp`, named by
    /// [`AppProto::name`]).
    /// The object an alert on a transaction carries (the record's but
    /// for DNP3, whose alert object holds it under its direction).
    pub fn eve_alert(&self, tx: TxId) -> Option<Value> {
        match self {
            AppLayerState::Ext(s) => s.eve_alert(tx),
            _ => self.eve(tx),
        }
    }

    pub fn eve(&self, tx: TxId) -> Option<Value> {
        match self {
            AppLayerState::Http(s) => s.tx(tx).map(|t| t.eve()),
            AppLayerState::Dns(s) => s.tx(tx).map(|t| t.eve()),
            AppLayerState::Tls(s) => s.tx_ref(tx).map(|t| t.eve()),
            AppLayerState::Ssh(s) => s.tx_ref(tx).map(|t| t.eve()),
            AppLayerState::Dcerpc(s) => s.eve(tx),
            AppLayerState::Ftp(s) => s.tx(tx).map(|t| t.eve()),
            AppLayerState::Sip(s) => s.tx(tx).map(|t| t.eve()),
            AppLayerState::Http2(s) => s.tx(tx).map(|t| t.eve()),
            AppLayerState::Ext(s) => s.eve(tx),
            AppLayerState::Smb(s) => s.eve(tx),
            AppLayerState::Msg(s) => s.eve(tx),
            AppLayerState::Passive(_) => None,
        }
    }

    /// The EVE object of a transaction ([`eve`](Self::eve)'s, or with
    /// `alert` [`eve_alert`](Self::eve_alert)'s) with the objects logged
    /// beside it ([`eve_siblings`](Self::eve_siblings)): as JSON text for
    /// the busiest protocols, which write it directly
    /// ([`crate::jsonw`]), else as the trees.
    pub fn eve_object(&self, tx: TxId, alert: bool) -> Option<EveObject> {
        use crate::jsonw::object;
        // None of the protocols written as text logs objects beside its own.
        let text = match self {
            AppLayerState::Dns(s) => s.tx(tx).map(|t| object(|w| t.eve_write(w))),
            AppLayerState::Http(s) => s.tx(tx).map(|t| object(|w| t.eve_write(w))),
            AppLayerState::Tls(s) => s.tx_ref(tx).map(|t| object(|w| t.eve_write(w))),
            AppLayerState::Ftp(s) => s.tx(tx).map(|t| object(|w| t.eve_write(w))),
            AppLayerState::Dcerpc(s) => s.tx(tx).map(|_| object(|w| s.eve_write(tx, false, w))),
            AppLayerState::Smb(s) => s.tx(tx).map(|_| object(|w| s.eve_write(tx, w))),
            _ => {
                let v = if alert {
                    self.eve_alert(tx)?
                } else {
                    self.eve(tx)?
                };
                return Some(EveObject::Tree(v, self.eve_siblings(tx)));
            }
        };
        text.map(EveObject::Text)
    }

    /// [`eve_object`](Self::eve_object) as text: the object's JSON
    /// followed by `,"key":{...}` for each object logged beside it.
    pub fn eve_text(&self, tx: TxId, alert: bool) -> Option<String> {
        self.eve_object(tx, alert).map(EveObject::into_text)
    }

    /// The objects a transaction's record carries beside its own (SMTP's
    /// `email`), as (key, object).
    pub fn eve_siblings(&self, tx: TxId) -> Vec<(&'static str, Value)> {
        match self {
            AppLayerState::Ext(s) => s.eve_siblings(tx),
            // DNS over HTTP/2: the DNS message beside `http`.
            AppLayerState::Http2(s) => s
                .tx(tx)
                .and_then(|t| t.dns_eve())
                .map(|d| vec![("dns", d)])
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// The decoded mail of a transaction (SMTP, POP3).
    pub fn mime(&self, tx: TxId) -> Option<&crate::smtp::mime::Mime> {
        match self {
            AppLayerState::Ext(s) => s.mime(tx),
            _ => None,
        }
    }

    /// Whether a transaction stays out of the transaction log (Suricata's
    /// per-protocol logging filter: NFSv2/3 GETATTR).
    pub fn tx_log_filtered(&self, tx: TxId) -> bool {
        match self {
            AppLayerState::Ext(s) => s.log_filtered(tx),
            _ => false,
        }
    }

    pub fn as_http(&self) -> Option<&HttpState> {
        match self {
            AppLayerState::Http(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_dns(&self) -> Option<&DnsState> {
        match self {
            AppLayerState::Dns(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_ssh(&self) -> Option<&SshState> {
        match self {
            AppLayerState::Ssh(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_dcerpc(&self) -> Option<&DcerpcState> {
        match self {
            AppLayerState::Dcerpc(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_http2(&self) -> Option<&Http2State> {
        match self {
            AppLayerState::Http2(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_smb(&self) -> Option<&SmbState> {
        match self {
            AppLayerState::Smb(s) => Some(s),
            _ => None,
        }
    }

    /// The EVE record type of the flow's transactions: the protocol's
    /// name, `http` for HTTP/2 as Suricata logs it.
    pub fn eve_key(&self) -> &'static str {
        match self {
            AppLayerState::Http2(_) => "http",
            // Suricata's record and alert object for `ftp-data` flows.
            AppLayerState::Ext(s) if s.proto() == AppProto::FtpData => "ftp_data",
            AppLayerState::Msg(s) if s.proto() == AppProto::BittorrentDht => "bittorrent_dht",
            s => s.proto().name(),
        }
    }

    /// An HTTP/1 flow whose `Upgrade: h2c` was accepted (`101`) becomes
    /// an HTTP/2 one, as Suricata switches the flow to `http2`: the
    /// upgrade request is stream 1's, the bytes the HTTP/1 parser held
    /// after the `101` are fed to the HTTP/2 parser.
    fn switch_h2c(&mut self, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let AppLayerState::Http(h) = self else {
            return;
        };
        let Some(up) = h.take_h2c_upgrade() else {
            return;
        };
        let mut s = Http2State::upgraded(h.config(), &up.request, ts);
        for (d, rest) in [Direction::ToServer, Direction::ToClient]
            .into_iter()
            .zip(up.pending)
        {
            if !rest.is_empty() {
                s.feed(d, &rest, ts, ev);
            }
        }
        *self = AppLayerState::Http2(Box::new(s));
    }

    /// The DCERPC state and transaction behind a transaction: the
    /// transaction itself over TCP, the one an SMB transaction carries
    /// over a named pipe.
    pub fn dcerpc_view(&self, tx: TxId) -> Option<(&DcerpcState, TxId)> {
        match self {
            AppLayerState::Dcerpc(s) => Some((s, tx)),
            AppLayerState::Smb(s) => Some((&s.dcerpc, s.dcerpc_tx(tx)?)),
            _ => None,
        }
    }

    pub fn as_sip(&self) -> Option<&SipState> {
        match self {
            AppLayerState::Sip(s) => Some(s),
            _ => None,
        }
    }

    /// The values of an integer keyword of a message protocol
    /// (`krb5_msg_type` ...) on a transaction, for the direction
    /// inspected.
    pub fn tx_ints(&self, tx: TxId, key: &str, dir: Direction) -> Vec<i64> {
        match self {
            AppLayerState::Msg(s) => s.ints(tx, key, dir),
            _ => Vec::new(),
        }
    }

    pub fn as_ftp(&self) -> Option<&FtpState> {
        match self {
            AppLayerState::Ftp(s) => Some(s),
            _ => None,
        }
    }

    /// Whether data of `dir` reached a transaction yet (only FTP says
    /// no: a command whose reply has not started, a greeting that no
    /// command opened). A side not started is not inspected.
    pub fn side_started(&self, tx: TxId, dir: Direction) -> bool {
        match self {
            AppLayerState::Ftp(s) => s.tx(tx).is_some_and(|t| t.side_started(dir)),
            AppLayerState::Ext(s) => s.tx_dir(tx).map_or(true, |d| d == dir),
            // An NTP message is inspected in its own direction only
            // (Suricata's unidirectional transactions).
            AppLayerState::Msg(s)
                if matches!(s.proto(), AppProto::Ntp | AppProto::BittorrentDht) =>
            {
                s.tx_dir(tx).map_or(true, |d| d == dir)
            }
            _ => true,
        }
    }

    /// The values of an integer field of a transaction (MQTT, RFB and
    /// DHCP keywords), for the direction inspected; empty when absent.
    pub fn uints(&self, tx: TxId, field: crate::UintField, dir: Direction) -> Vec<u64> {
        match self {
            AppLayerState::Ext(s) if s.proto() == field.proto() => s.uints(tx, field, dir),
            _ => Vec::new(),
        }
    }

    /// ENIP's `cip_service` on a transaction's direction.
    pub fn cip_service(
        &self,
        tx: TxId,
        dir: Direction,
        spec: &crate::enip::CipServiceSpec,
    ) -> bool {
        match self {
            AppLayerState::Ext(s) => s.cip_service(tx, dir, spec),
            _ => false,
        }
    }

    /// The `modbus` keyword on a transaction.
    pub fn modbus_match(&self, tx: TxId, spec: &crate::modbus::ModbusSpec) -> bool {
        match self {
            AppLayerState::Ext(s) => s.modbus_match(tx, spec),
            _ => false,
        }
    }

    /// The progress of a direction of a transaction, numbered as
    /// Suricata numbers the protocol's states (`app-layer-state`), for
    /// the protocols Vigil tracks them for (HTTP/1 and TLS); `None`
    /// otherwise or when the transaction is gone.
    pub fn state_progress(&self, tx: TxId, dir: Direction) -> Option<u8> {
        match self {
            AppLayerState::Http(s) => s.tx(tx).map(|t| t.state_progress(dir)),
            AppLayerState::Tls(s) => s
                .tx()
                .filter(|t| t.id() == tx)
                .map(|t| t.state_progress(dir)),
            _ => None,
        }
    }

    pub fn as_tls(&self) -> Option<&TlsState> {
        match self {
            AppLayerState::Tls(s) => Some(s),
            _ => None,
        }
    }
}
