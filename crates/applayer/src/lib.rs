//! Application-layer parsing: protocol detection by content and incremental
//! HTTP/1.x, DNS and TLS parsers that expose the inspection buffers
//! Suricata's sticky buffers name (`http.uri`, `dns.query`, `tls.sni` ...).
//!
//! The engine feeds each direction of a flow, in order, to an
//! [`AppLayerState`]: reassembled TCP stream data in pieces of any size (a
//! parser never assumes that a message arrives whole), or one UDP datagram
//! per call. Parsers keep per-flow state and a list of transactions; the
//! detection engine asks a transaction for a buffer by [`BufferId`] and marks
//! it inspected so that a rule fires once per transaction.
//!
//! | module | does |
//! |---|---|
//! | [`probe`](mod@probe) | protocol detection from the first bytes of each direction |
//! | [`http`] | HTTP/1.0 and 1.1: pipelining, chunked and length bodies, gzip/deflate, URI normalisation as libhtp |
//! | [`dns`] | DNS over UDP and TCP, name decompression with loop protection; mDNS and LLMNR as its variants |
//! | [`tls`] | TLS record layer, hellos, certificates (X.509), JA3/JA3S/JA4 |
//! | [`http2`] | HTTP/2 in clear text (h2c): frames, HPACK header blocks, streams as transactions, DoH |
//! | [`smb`] | SMB 1/2/3 over NBSS: transactions, tree connects, NTLMSSP, files at offsets, DCERPC over named pipes |
//! | [`sip`] | SIP over UDP and TCP: one transaction per message, header multi-buffers, SDP bodies |
//! | [`ssh`] | SSH identification strings (`ssh.proto`, `ssh.software`) |
//! | [`dcerpc`] | DCERPC over TCP: binds and their acks, requests and responses by call id, fragment reassembly |
//! | [`ftp`] | FTP control channel: commands and replies, data connection ports |
//! | [`ftpdata`] | FTP data connections: the control lines that announce and use them, the `ftp-data` state |
//! | [`mqtt`] | MQTT 3.1/3.1.1/5: control packets with properties, transactions by packet id |
//! | [`rfb`] | RFB (VNC) handshake: versions, security types and result, ServerInit |
//! | [`dhcp`] | DHCP over UDP: one transaction per message, options |
//! | [`krb5`] | Kerberos 5 over UDP and TCP (record marker): requests, replies, errors (`kerberos-parser`) |
//! | [`quic`] | QUIC over UDP: headers, Initial packets decrypted (RFC 9001), the TLS hellos in their CRYPTO frames, gQUIC handshake tags |
//! | [`ike`] | IKEv1 (ISAKMP) and IKEv2 over UDP: SPIs, proposals and chosen transforms, key exchange, nonce, vendor IDs (`ipsec-parser` for v2) |
//! | [`snmp`] | SNMP v1, v2c, v3 over UDP: communities, USM users, PDUs, v1 traps (`snmp-parser`) |
//! | [`ldap`] | LDAP over TCP and UDP (CLDAP): messages (`ldap-parser`), requests with their responses by message id |
//! | [`enip`] | EtherNet/IP over TCP and UDP: encapsulation, CIP requests and responses, identity, services |
//! | [`mdns`] | mDNS (UDP 5353) and LLMNR (UDP/TCP 5355): DNS messages with their own events, buffers and records |
//! | [`dnp3`] | DNP3 over TCP: link layer with CRCs, transport reassembly, application header, IIN and object headers |
//! | [`modbus`] | Modbus/TCP: MBAP and PDUs of every public function (`sawp-modbus`), requests and responses by transaction id |
//! | [`msg`] | the framing and transactions of protocols parsed a whole message at a time |
//! | [`smtp`] | SMTP commands and replies (pipelining, BDAT, STARTTLS), one transaction per mail, its MIME content decoded (headers, nested multiparts, base64/QP parts, attachment names, URLs) |
//! | [`websocket`] | WebSocket after an HTTP/1 upgrade: one transaction per frame, unmasked, fragmented messages gathered, `permessage-deflate` inflated |
//! | [`pgsql`] | PostgreSQL (protocol 3): startup, authentication (password, SASL), simple queries and their results, SSL request |
//! | [`telnet`] | Telnet on TCP 23: IAC commands, option negotiation and subnegotiation, lines; no transactions (as Suricata) |
//! | [`bittorrent_dht`] | BitTorrent DHT (KRPC over UDP): queries, responses with nodes and peers, errors (`bendy`) |
//! | [`ntp`] | NTP v3/v4 over UDP: one transaction per message, version, mode, stratum, reference ID (`ntp-parser`) |
//! | [`pop3`] | POP3 commands and responses (multi-line, AUTH, STLS to TLS), RETR mail through the SMTP MIME decoder |
//! | [`imap`] | IMAP detection by Suricata's patterns (detection-only, as Suricata 9) |
//! | [`rdp`] | RDP connection setup: X.224 negotiation, MCS Connect Initial client data and channels, server certificates after TLS |
//! | [`nfs`] | NFS v2/v3/v4 over ONC RPC (TCP record marking, UDP): calls and replies by XID, v4 COMPOUND ops, READ/WRITE data as files |
//! | [`tftp`] | TFTP read and write requests (UDP 69): file name and mode |
//! | [`passive`] | DCERPC over UDP: detected, inspected as raw stream, no transactions yet |
//! | [`transforms`] | the rule transforms ET Open uses (`dotprefix`, `to_md5`, ...) |
//!
//! # Bounded memory
//!
//! Every buffer a parser keeps has a cap in [`AppLayerConfig`]: line and
//! header lengths, body sizes, decompressed sizes, TLS handshake messages,
//! transactions in flight. Reaching a cap truncates and raises an
//! [`AppLayerEvent`] (Suricata's app-layer event name where one exists).
//!
//! # What it deliberately does not do
//!
//! Reassemble TCP (the stream crate does), decide which rules run, or write
//! EVE lines: it builds the protocol objects (`http`, `dns`, `tls`) that the
//! output crate places in events. It never panics on any input.

pub mod bittorrent_dht;
pub mod dcerpc;
pub mod dhcp;
pub mod dnp3;
pub mod dns;
pub mod enip;
mod events;
pub mod files;
pub mod frames;
pub mod ftp;
pub mod ftpdata;
pub mod http;
pub mod http2;
pub mod ike;
pub mod imap;
pub mod jsonw;
pub mod krb5;
pub mod ldap;
pub mod mdns;
pub mod modbus;
pub mod mqtt;
pub mod msg;
pub mod nfs;
pub mod ntp;
pub mod passive;
pub mod pgsql;
pub mod pop3;
pub mod probe;
pub mod quic;
pub mod rdp;
pub mod rfb;
pub mod sip;
pub mod smb;
pub mod smtp;
pub mod snmp;
pub mod ssh;
mod state;
pub mod telnet;
pub mod tftp;
pub mod tls;
pub mod transforms;
mod txparser;
pub mod websocket;

pub use events::NfsEvent;
pub use events::{
    AppLayerEvent, BittorrentDhtEvent, DcerpcEvent, DhcpEvent, DnsEvent, EnipEvent, FtpEvent,
    Http2Event, HttpEvent, IkeEvent, Krb5Event, LdapEvent, LlmnrEvent, MqttEvent, NtpEvent,
    PgsqlEvent, Pop3Event, QuicEvent, RfbEvent, SipEvent, SmbEvent, SmtpEvent, SnmpEvent, TlsEvent,
    WebSocketEvent,
};
pub use events::{Dnp3Event, ModbusEvent};
pub use probe::{probe, probe_udp, ProbeResult, ProtocolDetector};
pub use state::{AppLayerState, EveObject, TxId, TxProgress};
pub use txparser::UintField;

/// Which way data flows, as Suricata's `to_server` / `to_client`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    ToServer,
    ToClient,
}

impl Direction {
    /// The other direction.
    pub fn reverse(self) -> Direction {
        match self {
            Direction::ToServer => Direction::ToClient,
            Direction::ToClient => Direction::ToServer,
        }
    }

    pub(crate) fn index(self) -> usize {
        match self {
            Direction::ToServer => 0,
            Direction::ToClient => 1,
        }
    }
}

/// Application protocols this crate parses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AppProto {
    Http,
    Dns,
    Tls,
    Smb,
    Dcerpc,
    Ftp,
    Smtp,
    Ssh,
    Sip,
    /// HTTP/2 in clear text.
    Http2,
    Mqtt,
    Rfb,
    Dhcp,
    Krb5,
    Snmp,
    Ike,
    Quic,
    /// An FTP data connection, known from its control channel (never
    /// probed).
    FtpData,
    /// WebSocket, after an HTTP/1 `Upgrade: websocket` accepted by `101`.
    WebSocket,
    /// PostgreSQL (port 5432).
    Pgsql,
    /// EtherNet/IP (CIP over TCP and UDP).
    Enip,
    /// Multicast DNS (UDP 5353), parsed by [`dns`].
    Mdns,
    /// LLMNR (UDP and TCP 5355), parsed by [`dns`].
    Llmnr,
    /// LDAP over TCP and UDP (389, 3268).
    Ldap,
    /// NTP (UDP 123).
    Ntp,
    /// Telnet (TCP 23): detected and parsed, no transactions.
    Telnet,
    /// BitTorrent DHT (UDP).
    BittorrentDht,
    /// Modbus/TCP (port 502).
    Modbus,
    /// DNP3 over TCP (port 20000).
    Dnp3,
    /// POP3 (TCP 110), parsed by [`pop3`].
    Pop3,
    /// IMAP (TCP 143): detected only, as Suricata's `detection-only`.
    Imap,
    /// RDP (TCP 3389).
    Rdp,
    /// NFS over ONC RPC (TCP and UDP 2049).
    Nfs,
    /// TFTP (UDP 69).
    Tftp,
}

impl AppProto {
    /// The name Suricata uses in `app_proto` and in rule headers (`http`
    /// is `http1` internally in Suricata 7+, but EVE says `http`).
    pub fn name(self) -> &'static str {
        match self {
            AppProto::Http => "http",
            AppProto::Dns => "dns",
            AppProto::Tls => "tls",
            AppProto::Smb => "smb",
            AppProto::Dcerpc => "dcerpc",
            AppProto::Ftp => "ftp",
            AppProto::Smtp => "smtp",
            AppProto::Ssh => "ssh",
            AppProto::Sip => "sip",
            AppProto::Http2 => "http2",
            AppProto::Mqtt => "mqtt",
            AppProto::Rfb => "rfb",
            AppProto::Dhcp => "dhcp",
            AppProto::Krb5 => "krb5",
            AppProto::Snmp => "snmp",
            AppProto::Ike => "ike",
            AppProto::Quic => "quic",
            AppProto::FtpData => "ftp-data",
            AppProto::WebSocket => "websocket",
            AppProto::Pgsql => "pgsql",
            AppProto::Enip => "enip",
            AppProto::Mdns => "mdns",
            AppProto::Llmnr => "llmnr",
            AppProto::Ldap => "ldap",
            AppProto::Ntp => "ntp",
            AppProto::Telnet => "telnet",
            AppProto::BittorrentDht => "bittorrent-dht",
            AppProto::Modbus => "modbus",
            AppProto::Dnp3 => "dnp3",
            AppProto::Pop3 => "pop3",
            AppProto::Imap => "imap",
            AppProto::Rdp => "rdp",
            AppProto::Nfs => "nfs",
            AppProto::Tftp => "tftp",
        }
    }
}

/// The transport a flow runs over: DNS is message-per-datagram over UDP and
/// length-prefixed over TCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    Tcp,
    Udp,
}

/// Packet time in microseconds since the epoch (the engine's clock, never
/// the wall clock).
pub type Timestamp = u64;

/// Caps that keep per-flow memory bounded. Defaults follow Suricata's
/// defaults where it has one (body limits 100 KiB, libhtp's 18,000-byte
/// field limit).
#[derive(Clone, Debug)]
pub struct AppLayerConfig {
    /// Longest request/response line or header line kept (libhtp's
    /// `field-limit`); longer lines are truncated with a `*_FIELD_TOO_LONG`
    /// event.
    pub http_max_line: usize,
    /// Most headers kept per message.
    pub http_max_headers: usize,
    /// Most bytes of raw header block kept per message (`http.header.raw`).
    pub http_max_header_bytes: usize,
    /// Request body bytes kept (`request-body-limit`).
    pub http_request_body_limit: usize,
    /// Response body bytes kept after decompression (`response-body-limit`).
    pub http_response_body_limit: usize,
    /// Decompressed bytes produced per response before decompression stops
    /// with a `COMPRESSION_BOMB` event (never more than this is inflated,
    /// whatever the body limit).
    pub http_decompress_limit: usize,
    /// Transactions kept per flow (oldest unanswered ones are dropped).
    pub max_transactions: usize,
    /// Largest TLS handshake message reassembled (certificate chains).
    pub tls_max_handshake: usize,
    /// Longest DNS name kept (Suricata truncates at 1025 bytes).
    pub dns_max_name: usize,
    /// DCERPC stub data kept per transaction and direction (fragments
    /// reassembled).
    pub dcerpc_max_stub: usize,
}

impl Default for AppLayerConfig {
    fn default() -> Self {
        AppLayerConfig {
            http_max_line: 18_000,
            http_max_headers: 1024,
            http_max_header_bytes: 64 * 1024,
            http_request_body_limit: 100 * 1024,
            http_response_body_limit: 100 * 1024,
            http_decompress_limit: 1024 * 1024,
            max_transactions: 512,
            tls_max_handshake: 256 * 1024,
            dns_max_name: 1025,
            dcerpc_max_stub: 1024 * 1024,
        }
    }
}

/// The inspection buffers a transaction can expose, named after Suricata's
/// sticky buffers. Whether a buffer is the request's or the response's is
/// chosen by the direction passed along with it where a keyword exists in
/// both (`http.header`, `http.content_type`, `file.data`, `tls.random`,
/// `tls.cert_*` for client certificates ...). Keywords of one side only
/// (`http.uri`, `tls.sni`, `http.stat_code`) return their buffer whatever
/// the direction, so that a rule mixing request and response buffers can
/// be evaluated on the response side, as Suricata does. Header-derived
/// buffers appear once their header block is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufferId {
    HttpMethod,
    /// Normalised URI (percent-decoded path, dot segments removed).
    HttpUri,
    HttpUriRaw,
    HttpRequestLine,
    /// `Name: value\r\n` per header, cookies excluded.
    HttpHeader,
    HttpHeaderRaw,
    HttpHeaderNames,
    HttpHost,
    HttpHostRaw,
    HttpUserAgent,
    HttpCookie,
    HttpReferer,
    HttpAccept,
    HttpAcceptEnc,
    HttpAcceptLang,
    HttpContentType,
    HttpContentLen,
    HttpConnection,
    HttpProtocol,
    HttpStart,
    HttpRequestBody,
    HttpStatCode,
    HttpStatMsg,
    HttpResponseLine,
    HttpResponseBody,
    HttpServer,
    HttpLocation,
    /// Multi-buffer: one `Name: value` per request header.
    HttpRequestHeader,
    /// Multi-buffer: one `Name: value` per response header.
    HttpResponseHeader,
    /// Multi-buffers of mDNS and LLMNR messages (either direction):
    /// the names of the queries, answers, authorities and additionals,
    /// and every name of a response (as `dns.response.rrname`).
    MdnsQueriesRrname,
    MdnsAnswersRrname,
    MdnsAuthoritiesRrname,
    MdnsAdditionalsRrname,
    MdnsResponseRrname,
    LlmnrQueriesRrname,
    LlmnrAnswersRrname,
    LlmnrAuthoritiesRrname,
    LlmnrAdditionalsRrname,
    LlmnrResponseRrname,
    /// LDAP: the request's DN, and the multi-buffers of the responses'
    /// DNs and messages and of the attribute types of either side.
    LdapRequestDn,
    LdapResponsesDn,
    LdapResponsesMessage,
    LdapRequestAttributeType,
    LdapResponsesAttributeType,
    /// `ntp.reference_id`: the 4 bytes of the reference ID.
    NtpReferenceId,
    /// `file.data`: the (decompressed) response body to the client, the
    /// request body to the server.
    FileData,
    /// `file.name`: the name of the file a body carries (HTTP: the
    /// Content-Disposition filename, else the request URI path).
    FileName,
    /// Multi-buffer: query names of a request.
    DnsQuery,
    /// Multi-buffer: query names of any message.
    DnsQueriesRrname,
    /// Multi-buffer: answer names of any message.
    DnsAnswersRrname,
    /// Multi-buffer: every name in a response (queries, answers,
    /// authorities, additionals, and names inside rdata).
    DnsResponseRrname,
    TlsSni,
    TlsCertSubject,
    TlsCertIssuer,
    TlsCertSerial,
    TlsCertFingerprint,
    /// Multi-buffer: each DER certificate of the chain.
    TlsCerts,
    TlsRandom,
    TlsRandomTime,
    TlsRandomBytes,
    Ja3Hash,
    Ja3String,
    Ja3sHash,
    Ja3sString,
    Ja4Hash,
    /// `ssh.proto`: the protocol version of the identification string
    /// (`2.0`), of the direction inspected.
    SshProto,
    /// `ssh.software`: the software version (`OpenSSH_8.4p1`).
    SshSoftware,
    /// `dcerpc.stub_data`: the reassembled stub data of the request (to
    /// the server) or of the response (to the client).
    DcerpcStubData,
    /// `ftp.command`: the command's name (`USER`, `PORT`).
    FtpCommand,
    /// `ftp.command_data`: the command's argument.
    FtpCommandData,
    /// Multi-buffer `ftp.reply`: each reply line's text.
    FtpReply,
    /// Multi-buffer `ftp.completion_code`: each reply's code.
    FtpCompletionCode,
    /// `sip.method` (requests).
    SipMethod,
    /// `sip.uri`: the request URI.
    SipUri,
    SipRequestLine,
    /// `sip.protocol`: the version of the message inspected
    /// (`SIP/2.0`).
    SipProtocol,
    SipStatCode,
    SipStatMsg,
    SipResponseLine,
    /// Multi-buffer: each `From` (`f`) header of the message inspected.
    SipFrom,
    /// Multi-buffer: each `To` (`t`) header.
    SipTo,
    /// Multi-buffer: each `Via` (`v`) header.
    SipVia,
    /// Multi-buffer: each `User-Agent` header.
    SipUserAgent,
    /// Multi-buffer: each `Content-Type` (`c`) header.
    SipContentType,
    /// Multi-buffer: each `Content-Length` (`l`) header.
    SipContentLength,
    /// Multi-buffer `http2.header_name`: each header name of the side.
    Http2HeaderName,
    /// Multi-buffer `http2.header`: each `name: value` of the side.
    Http2Header,
    /// MQTT, RFB and DHCP buffers (`mqtt.connect.clientid` ...;
    /// `mqtt.subscribe.topic` and `mqtt.unsubscribe.topic` are multi-buffers).
    MqttConnectClientId,
    MqttConnectUsername,
    MqttConnectPassword,
    MqttConnectWillTopic,
    MqttConnectWillMessage,
    MqttConnectProtocolString,
    MqttPublishTopic,
    MqttPublishMessage,
    MqttSubscribeTopic,
    MqttUnsubscribeTopic,
    RfbName,
    DhcpVendorClassId,
    /// `smb.share`: the path of a tree connect to a share (not a pipe).
    SmbShare,
    /// `smb.named_pipe`: the path of a tree connect to a named pipe.
    SmbNamedPipe,
    /// `smb.ntlmssp_user`: the user of an NTLMSSP AUTHENTICATE.
    SmbNtlmsspUser,
    /// `smb.ntlmssp_domain`: its domain.
    SmbNtlmsspDomain,
    /// Multi-buffer `krb5.cname`: each component of the client name.
    Krb5Cname,
    /// Multi-buffer `krb5.sname`: each component of the server name.
    Krb5Sname,
    /// `snmp.community` (v1, v2c).
    SnmpCommunity,
    /// `snmp.usm`: the v3 USM user name.
    SnmpUsm,
    /// `snmp.trap_oid`: a v1 trap's enterprise OID, dotted.
    SnmpTrapOid,
    /// `snmp.trap_address`: a v1 trap's agent address.
    SnmpTrapAddress,
    /// `ike.init_spi` (to server): 16 hex digits.
    IkeInitSpi,
    /// `ike.resp_spi` (to client): 16 hex digits.
    IkeRespSpi,
    /// Multi-buffer `ike.vendor` (to server): each vendor ID in hex.
    IkeVendor,
    /// `ike.key_exchange_payload`: the IKEv1 key exchange data.
    IkeKeyExchange,
    /// `ike.nonce_payload`: the IKEv1 nonce.
    IkeNonce,
    /// `smtp.helo`: the session's HELO/EHLO name.
    SmtpHelo,
    /// `smtp.mail_from`: the `MAIL FROM:` argument.
    SmtpMailFrom,
    /// Multi-buffer `smtp.rcpt_to`: each `RCPT TO:` argument.
    SmtpRcptTo,
    /// `email.*`: the mail's headers (unfolded values, not decoded).
    EmailFrom,
    EmailTo,
    EmailCc,
    EmailSubject,
    EmailDate,
    EmailMessageId,
    EmailXMailer,
    /// Multi-buffer `email.received`: each `Received` header.
    EmailReceived,
    /// Multi-buffer `email.url`: each URL of the text parts.
    EmailUrl,
    /// `email.body_md5`: the MD5 of the mail's body, lower-case hex.
    EmailBodyMd5,
    /// `websocket.payload`: a frame's unmasked payload.
    WebsocketPayload,
    /// `pgsql.query`: a simple query's text.
    PgsqlQuery,
    /// `enip.product_name`: a ListIdentity response's product name.
    EnipProductName,
    /// `enip.service_name`: a ListServices response's service name.
    EnipServiceName,
    /// `dnp3.data`: a DNP3 application message, reassembled.
    Dnp3Data,
    /// `quic.sni`: the SNI of the client's hello (TLS or gQUIC tag).
    QuicSni,
    /// `quic.ua`: gQUIC's `UAID` tag.
    QuicUa,
    /// `quic.version`: the four version bytes of a long header.
    QuicVersion,
    /// Multi-buffer `quic.cyu.hash`: gQUIC CYU fingerprints' MD5.
    QuicCyuHash,
    /// Multi-buffer `quic.cyu.string`.
    QuicCyuString,
}

impl BufferId {
    /// Every buffer, in declaration order (robustness tests and fuzz
    /// targets ask a transaction for each).
    pub const ALL: &'static [BufferId] = &[
        BufferId::HttpMethod,
        BufferId::HttpUri,
        BufferId::HttpUriRaw,
        BufferId::HttpRequestLine,
        BufferId::HttpHeader,
        BufferId::HttpHeaderRaw,
        BufferId::HttpHeaderNames,
        BufferId::HttpHost,
        BufferId::HttpHostRaw,
        BufferId::HttpUserAgent,
        BufferId::HttpCookie,
        BufferId::HttpReferer,
        BufferId::HttpAccept,
        BufferId::HttpAcceptEnc,
        BufferId::HttpAcceptLang,
        BufferId::HttpContentType,
        BufferId::HttpContentLen,
        BufferId::HttpConnection,
        BufferId::HttpProtocol,
        BufferId::HttpStart,
        BufferId::HttpRequestBody,
        BufferId::HttpStatCode,
        BufferId::HttpStatMsg,
        BufferId::HttpResponseLine,
        BufferId::HttpResponseBody,
        BufferId::HttpServer,
        BufferId::HttpLocation,
        BufferId::HttpRequestHeader,
        BufferId::HttpResponseHeader,
        BufferId::FileData,
        BufferId::FileName,
        BufferId::DnsQuery,
        BufferId::DnsQueriesRrname,
        BufferId::DnsAnswersRrname,
        BufferId::DnsResponseRrname,
        BufferId::TlsSni,
        BufferId::TlsCertSubject,
        BufferId::TlsCertIssuer,
        BufferId::TlsCertSerial,
        BufferId::TlsCertFingerprint,
        BufferId::TlsCerts,
        BufferId::TlsRandom,
        BufferId::TlsRandomTime,
        BufferId::TlsRandomBytes,
        BufferId::Ja3Hash,
        BufferId::Ja3String,
        BufferId::Ja3sHash,
        BufferId::Ja3sString,
        BufferId::Ja4Hash,
        BufferId::SshProto,
        BufferId::SshSoftware,
        BufferId::DcerpcStubData,
        BufferId::FtpCommand,
        BufferId::FtpCommandData,
        BufferId::FtpReply,
        BufferId::FtpCompletionCode,
        BufferId::SipMethod,
        BufferId::SipUri,
        BufferId::SipRequestLine,
        BufferId::SipProtocol,
        BufferId::SipStatCode,
        BufferId::SipStatMsg,
        BufferId::SipResponseLine,
        BufferId::SipFrom,
        BufferId::SipTo,
        BufferId::SipVia,
        BufferId::SipUserAgent,
        BufferId::SipContentType,
        BufferId::SipContentLength,
        BufferId::Http2HeaderName,
        BufferId::Http2Header,
        BufferId::MqttConnectClientId,
        BufferId::MqttConnectUsername,
        BufferId::MqttConnectPassword,
        BufferId::MqttConnectWillTopic,
        BufferId::MqttConnectWillMessage,
        BufferId::MqttConnectProtocolString,
        BufferId::MqttPublishTopic,
        BufferId::MqttPublishMessage,
        BufferId::MqttSubscribeTopic,
        BufferId::MqttUnsubscribeTopic,
        BufferId::RfbName,
        BufferId::DhcpVendorClassId,
        BufferId::SmbShare,
        BufferId::SmbNamedPipe,
        BufferId::SmbNtlmsspUser,
        BufferId::SmbNtlmsspDomain,
        BufferId::Krb5Cname,
        BufferId::Krb5Sname,
        BufferId::SnmpCommunity,
        BufferId::SnmpUsm,
        BufferId::SnmpTrapOid,
        BufferId::SnmpTrapAddress,
        BufferId::IkeInitSpi,
        BufferId::IkeRespSpi,
        BufferId::IkeVendor,
        BufferId::IkeKeyExchange,
        BufferId::IkeNonce,
        BufferId::SmtpHelo,
        BufferId::SmtpMailFrom,
        BufferId::SmtpRcptTo,
        BufferId::EmailFrom,
        BufferId::EmailTo,
        BufferId::EmailCc,
        BufferId::EmailSubject,
        BufferId::EmailDate,
        BufferId::EmailMessageId,
        BufferId::EmailXMailer,
        BufferId::EmailReceived,
        BufferId::EmailUrl,
        BufferId::EmailBodyMd5,
        BufferId::WebsocketPayload,
        BufferId::PgsqlQuery,
        BufferId::EnipProductName,
        BufferId::EnipServiceName,
        BufferId::Dnp3Data,
        BufferId::QuicSni,
        BufferId::QuicUa,
        BufferId::QuicVersion,
        BufferId::QuicCyuHash,
        BufferId::QuicCyuString,
        BufferId::MdnsQueriesRrname,
        BufferId::MdnsAnswersRrname,
        BufferId::MdnsAuthoritiesRrname,
        BufferId::MdnsAdditionalsRrname,
        BufferId::MdnsResponseRrname,
        BufferId::LlmnrQueriesRrname,
        BufferId::LlmnrAnswersRrname,
        BufferId::LlmnrAuthoritiesRrname,
        BufferId::LlmnrAdditionalsRrname,
        BufferId::LlmnrResponseRrname,
        BufferId::LdapRequestDn,
        BufferId::LdapResponsesDn,
        BufferId::LdapResponsesMessage,
        BufferId::LdapRequestAttributeType,
        BufferId::LdapResponsesAttributeType,
        BufferId::NtpReferenceId,
    ];

    /// The protocol whose transactions carry this buffer.
    pub fn proto(self) -> AppProto {
        use BufferId::*;
        match self {
            DnsQuery | DnsQueriesRrname | DnsAnswersRrname | DnsResponseRrname => AppProto::Dns,
            TlsSni | TlsCertSubject | TlsCertIssuer | TlsCertSerial | TlsCertFingerprint
            | TlsCerts | TlsRandom | TlsRandomTime | TlsRandomBytes | Ja3Hash | Ja3String
            | Ja3sHash | Ja3sString | Ja4Hash => AppProto::Tls,
            SshProto | SshSoftware => AppProto::Ssh,
            DcerpcStubData => AppProto::Dcerpc,
            FtpCommand | FtpCommandData | FtpReply | FtpCompletionCode => AppProto::Ftp,
            SipMethod | SipUri | SipRequestLine | SipProtocol | SipStatCode | SipStatMsg
            | SipResponseLine | SipFrom | SipTo | SipVia | SipUserAgent | SipContentType
            | SipContentLength => AppProto::Sip,
            Http2HeaderName | Http2Header => AppProto::Http2,
            MqttConnectClientId
            | MqttConnectUsername
            | MqttConnectPassword
            | MqttConnectWillTopic
            | MqttConnectWillMessage
            | MqttConnectProtocolString
            | MqttPublishTopic
            | MqttPublishMessage
            | MqttSubscribeTopic
            | MqttUnsubscribeTopic => AppProto::Mqtt,
            RfbName => AppProto::Rfb,
            DhcpVendorClassId => AppProto::Dhcp,
            SmbShare | SmbNamedPipe | SmbNtlmsspUser | SmbNtlmsspDomain => AppProto::Smb,
            Krb5Cname | Krb5Sname => AppProto::Krb5,
            SnmpCommunity | SnmpUsm | SnmpTrapOid | SnmpTrapAddress => AppProto::Snmp,
            IkeInitSpi | IkeRespSpi | IkeVendor | IkeKeyExchange | IkeNonce => AppProto::Ike,
            SmtpHelo | SmtpMailFrom | SmtpRcptTo | EmailFrom | EmailTo | EmailCc | EmailSubject
            | EmailDate | EmailMessageId | EmailXMailer | EmailReceived | EmailUrl
            | EmailBodyMd5 => AppProto::Smtp,
            WebsocketPayload => AppProto::WebSocket,
            PgsqlQuery => AppProto::Pgsql,
            EnipProductName | EnipServiceName => AppProto::Enip,
            Dnp3Data => AppProto::Dnp3,
            QuicSni | QuicUa | QuicVersion | QuicCyuHash | QuicCyuString => AppProto::Quic,
            MdnsQueriesRrname
            | MdnsAnswersRrname
            | MdnsAuthoritiesRrname
            | MdnsAdditionalsRrname
            | MdnsResponseRrname => AppProto::Mdns,
            LlmnrQueriesRrname
            | LlmnrAnswersRrname
            | LlmnrAuthoritiesRrname
            | LlmnrAdditionalsRrname
            | LlmnrResponseRrname => AppProto::Llmnr,
            LdapRequestDn
            | LdapResponsesDn
            | LdapResponsesMessage
            | LdapRequestAttributeType
            | LdapResponsesAttributeType => AppProto::Ldap,
            NtpReferenceId => AppProto::Ntp,
            _ => AppProto::Http,
        }
    }

    /// Whether the buffer is a multi-buffer (several instances per
    /// transaction, each inspected on its own).
    pub fn is_multi(self) -> bool {
        use BufferId::*;
        matches!(
            self,
            HttpRequestHeader
                | HttpResponseHeader
                | DnsQuery
                | DnsQueriesRrname
                | DnsAnswersRrname
                | DnsResponseRrname
                | TlsCerts
                | FtpReply
                | FtpCompletionCode
                | SipFrom
                | SipTo
                | SipVia
                | SipUserAgent
                | SipContentType
                | SipContentLength
                | Http2HeaderName
                | Http2Header
                | MqttSubscribeTopic
                | MqttUnsubscribeTopic
                | Krb5Cname
                | Krb5Sname
                | IkeVendor
                | SmtpRcptTo
                | EmailReceived
                | EmailUrl
                | QuicCyuHash
                | QuicCyuString
                | MdnsQueriesRrname
                | MdnsAnswersRrname
                | MdnsAuthoritiesRrname
                | MdnsAdditionalsRrname
                | MdnsResponseRrname
                | LlmnrQueriesRrname
                | LlmnrAnswersRrname
                | LlmnrAuthoritiesRrname
                | LlmnrAdditionalsRrname
                | LlmnrResponseRrname
                | LdapResponsesDn
                | LdapResponsesMessage
                | LdapRequestAttributeType
                | LdapResponsesAttributeType
        )
    }

    /// Looks a buffer up by Suricata's sticky-buffer keyword (aliases
    /// included).
    pub fn from_keyword(kw: &str) -> Option<BufferId> {
        use BufferId::*;
        Some(match kw {
            "http.method" | "http_method" => HttpMethod,
            "http.uri" | "http_uri" => HttpUri,
            "http.uri.raw" | "http_raw_uri" => HttpUriRaw,
            "http.request_line" | "http_request_line" => HttpRequestLine,
            "http.header" | "http_header" => HttpHeader,
            "http.header.raw" | "http_raw_header" => HttpHeaderRaw,
            "http.header_names" => HttpHeaderNames,
            "http.host" | "http_host" => HttpHost,
            "http.host.raw" | "http_raw_host" => HttpHostRaw,
            "http.user_agent" | "http_user_agent" => HttpUserAgent,
            "http.cookie" | "http_cookie" => HttpCookie,
            "http.referer" => HttpReferer,
            "http.accept" => HttpAccept,
            "http.accept_enc" => HttpAcceptEnc,
            "http.accept_lang" => HttpAcceptLang,
            "http.content_type" => HttpContentType,
            "http.content_len" => HttpContentLen,
            "http.connection" => HttpConnection,
            "http.protocol" => HttpProtocol,
            "http.start" => HttpStart,
            "http.request_body" | "http_client_body" => HttpRequestBody,
            "http.stat_code" | "http_stat_code" => HttpStatCode,
            "http.stat_msg" | "http_stat_msg" => HttpStatMsg,
            "http.response_line" | "http_response_line" => HttpResponseLine,
            "http.response_body" | "http_server_body" => HttpResponseBody,
            "http.server" => HttpServer,
            "http.location" => HttpLocation,
            "http.request_header" => HttpRequestHeader,
            "http.response_header" => HttpResponseHeader,
            "file.data" | "file_data" => FileData,
            "file.name" => FileName,
            "dns.query" | "dns_query" => DnsQuery,
            "dns.queries.rrname" => DnsQueriesRrname,
            "dns.answers.rrname" => DnsAnswersRrname,
            "dns.response.rrname" => DnsResponseRrname,
            "tls.sni" | "tls_sni" => TlsSni,
            "tls.cert_subject" | "tls.subject" => TlsCertSubject,
            "tls.cert_issuer" | "tls.issuerdn" => TlsCertIssuer,
            "tls.cert_serial" | "tls_cert_serial" => TlsCertSerial,
            "tls.cert_fingerprint" | "tls_cert_fingerprint" => TlsCertFingerprint,
            "tls.certs" => TlsCerts,
            "tls.random" => TlsRandom,
            "tls.random_time" => TlsRandomTime,
            "tls.random_bytes" => TlsRandomBytes,
            "ja3.hash" | "ja3_hash" => Ja3Hash,
            "ja3.string" => Ja3String,
            "ja3s.hash" => Ja3sHash,
            "ja3s.string" => Ja3sString,
            "ja4.hash" => Ja4Hash,
            "ssh.proto" | "ssh_proto" => SshProto,
            "ssh.software" | "ssh_software" => SshSoftware,
            "dcerpc.stub_data" | "dce_stub_data" => DcerpcStubData,
            "ftp.command" => FtpCommand,
            "ftp.command_data" => FtpCommandData,
            "ftp.reply" => FtpReply,
            "ftp.completion_code" => FtpCompletionCode,
            "sip.method" => SipMethod,
            "sip.uri" => SipUri,
            "sip.request_line" => SipRequestLine,
            "sip.protocol" => SipProtocol,
            "sip.stat_code" => SipStatCode,
            "sip.stat_msg" => SipStatMsg,
            "sip.response_line" => SipResponseLine,
            "sip.from" => SipFrom,
            "sip.to" => SipTo,
            "sip.via" => SipVia,
            "sip.user_agent" => SipUserAgent,
            "sip.content_type" => SipContentType,
            "sip.content_length" => SipContentLength,
            "http2.header_name" => Http2HeaderName,
            "http2.header" => Http2Header,
            "mqtt.connect.clientid" => MqttConnectClientId,
            "mqtt.connect.username" => MqttConnectUsername,
            "mqtt.connect.password" => MqttConnectPassword,
            "mqtt.connect.willtopic" => MqttConnectWillTopic,
            "mqtt.connect.willmessage" => MqttConnectWillMessage,
            "mqtt.connect.protocol_string" => MqttConnectProtocolString,
            "mqtt.publish.topic" => MqttPublishTopic,
            "mqtt.publish.message" => MqttPublishMessage,
            "mqtt.subscribe.topic" => MqttSubscribeTopic,
            "mqtt.unsubscribe.topic" => MqttUnsubscribeTopic,
            "rfb.name" => RfbName,
            "dhcp.vendor_class_id" => DhcpVendorClassId,
            "smb.share" | "smb_share" => SmbShare,
            "smb.named_pipe" | "smb_named_pipe" => SmbNamedPipe,
            "smb.ntlmssp_user" => SmbNtlmsspUser,
            "smb.ntlmssp_domain" => SmbNtlmsspDomain,
            "krb5.cname" | "krb5_cname" => Krb5Cname,
            "krb5.sname" | "krb5_sname" => Krb5Sname,
            "snmp.community" => SnmpCommunity,
            "snmp.usm" => SnmpUsm,
            "snmp.trap_oid" => SnmpTrapOid,
            "snmp.trap_address" => SnmpTrapAddress,
            "ike.init_spi" => IkeInitSpi,
            "ike.resp_spi" => IkeRespSpi,
            "ike.vendor" => IkeVendor,
            "ike.key_exchange_payload" => IkeKeyExchange,
            "ike.nonce_payload" => IkeNonce,
            "smtp.helo" => SmtpHelo,
            "smtp.mail_from" => SmtpMailFrom,
            "smtp.rcpt_to" => SmtpRcptTo,
            "email.from" => EmailFrom,
            "email.to" => EmailTo,
            "email.cc" => EmailCc,
            "email.subject" => EmailSubject,
            "email.date" => EmailDate,
            "email.message_id" => EmailMessageId,
            "email.x_mailer" => EmailXMailer,
            "email.received" => EmailReceived,
            "email.url" => EmailUrl,
            "email.body_md5" => EmailBodyMd5,
            "websocket.payload" => WebsocketPayload,
            "pgsql.query" => PgsqlQuery,
            "enip.product_name" => EnipProductName,
            "enip.service_name" => EnipServiceName,
            "dnp3.data" => Dnp3Data,
            "quic.sni" => QuicSni,
            "quic.ua" => QuicUa,
            "quic.version" => QuicVersion,
            "quic.cyu.hash" => QuicCyuHash,
            "quic.cyu.string" => QuicCyuString,
            "mdns.queries.rrname" => MdnsQueriesRrname,
            "mdns.answers.rrname" => MdnsAnswersRrname,
            "mdns.authorities.rrname" => MdnsAuthoritiesRrname,
            "mdns.additionals.rrname" => MdnsAdditionalsRrname,
            "mdns.response.rrname" => MdnsResponseRrname,
            "llmnr.queries.rrname" => LlmnrQueriesRrname,
            "llmnr.answers.rrname" => LlmnrAnswersRrname,
            "llmnr.authorities.rrname" => LlmnrAuthoritiesRrname,
            "llmnr.additionals.rrname" => LlmnrAdditionalsRrname,
            "llmnr.response.rrname" => LlmnrResponseRrname,
            "ldap.request.dn" => LdapRequestDn,
            "ldap.responses.dn" => LdapResponsesDn,
            "ldap.responses.message" => LdapResponsesMessage,
            "ldap.request.attribute_type" => LdapRequestAttributeType,
            "ldap.responses.attribute_type" => LdapResponsesAttributeType,
            "ntp.reference_id" => NtpReferenceId,
            _ => return None,
        })
    }
}

pub(crate) fn hex_lower(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    push_hex_lower(&mut s, bytes);
    s
}

/// Appends `bytes` as lowercase hex digits.
pub(crate) fn push_hex_lower(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 15) as usize] as char);
    }
}

#[cfg(test)]
mod buffer_list_tests {
    use super::BufferId;

    #[test]
    fn all_lists_each_buffer_once() {
        let mut seen = std::collections::HashSet::new();
        for b in BufferId::ALL {
            assert!(seen.insert(*b), "{b:?} twice");
            // Every buffer belongs to a protocol.
            let _ = b.proto();
        }
        assert!(seen.contains(&BufferId::HttpMethod) && seen.contains(&BufferId::SshSoftware));
    }
}
