//! App-layer events: anomalies and limits, named as Suricata's
//! `app-layer-event:<proto>.<name>` keyword expects them.
//!
//! Names marked "(Vigil)" have no Suricata counterpart: they report a cap
//! of this crate that Suricata enforces silently or differently.

use crate::{AppProto, TxId};

macro_rules! event_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $text:literal,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vm])* $variant,)* }
        impl $name {
            /// Suricata's upper-case event name.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }
            /// Looks an event up by name, case-insensitively.
            pub fn from_name(s: &str) -> Option<Self> {
                $(if s.eq_ignore_ascii_case($text) { return Some($name::$variant); })*
                None
            }
        }
    };
}

event_enum! {
    /// HTTP events (libhtp's, as Suricata names them).
    HttpEvent {
        RequestFieldMissingColon => "REQUEST_FIELD_MISSING_COLON",
        ResponseFieldMissingColon => "RESPONSE_FIELD_MISSING_COLON",
        InvalidRequestChunkLen => "INVALID_REQUEST_CHUNK_LEN",
        InvalidResponseChunkLen => "INVALID_RESPONSE_CHUNK_LEN",
        InvalidTransferEncodingValueInRequest => "INVALID_TRANSFER_ENCODING_VALUE_IN_REQUEST",
        InvalidTransferEncodingValueInResponse => "INVALID_TRANSFER_ENCODING_VALUE_IN_RESPONSE",
        InvalidContentLengthFieldInRequest => "INVALID_CONTENT_LENGTH_FIELD_IN_REQUEST",
        InvalidContentLengthFieldInResponse => "INVALID_CONTENT_LENGTH_FIELD_IN_RESPONSE",
        DuplicateContentLengthFieldInRequest => "DUPLICATE_CONTENT_LENGTH_FIELD_IN_REQUEST",
        DuplicateContentLengthFieldInResponse => "DUPLICATE_CONTENT_LENGTH_FIELD_IN_RESPONSE",
        ContinueAlreadySeen => "100_CONTINUE_ALREADY_SEEN",
        UnableToMatchResponseToRequest => "UNABLE_TO_MATCH_RESPONSE_TO_REQUEST",
        InvalidRequestFieldFolding => "INVALID_REQUEST_FIELD_FOLDING",
        InvalidResponseFieldFolding => "INVALID_RESPONSE_FIELD_FOLDING",
        RequestFieldTooLong => "REQUEST_FIELD_TOO_LONG",
        ResponseFieldTooLong => "RESPONSE_FIELD_TOO_LONG",
        RequestLineInvalid => "REQUEST_LINE_INVALID",
        /// A line after a complete request that is not a request line:
        /// libhtp takes it as the request's body.
        RequestBodyUnexpected => "REQUEST_BODY_UNEXPECTED",
        RequestLineLeadingWhitespace => "REQUEST_LINE_LEADING_WHITESPACE",
        RequestLineMissingProtocol => "REQUEST_LINE_MISSING_PROTOCOL",
        MissingHostHeader => "MISSING_HOST_HEADER",
        HostHeaderAmbiguous => "HOST_HEADER_AMBIGUOUS",
        RequestHeaderRepetition => "REQUEST_HEADER_REPETITION",
        ResponseHeaderRepetition => "RESPONSE_HEADER_REPETITION",
        RequestTooManyHeaders => "REQUEST_TOO_MANY_HEADERS",
        ResponseTooManyHeaders => "RESPONSE_TOO_MANY_HEADERS",
        ResponseInvalidProtocol => "RESPONSE_INVALID_PROTOCOL",
        ResponseInvalidStatus => "RESPONSE_INVALID_STATUS",
        ResponseChunkedOldProto => "RESPONSE_CHUNKED_OLD_PROTO",
        GzipDecompressionFailed => "GZIP_DECOMPRESSION_FAILED",
        CompressionBomb => "COMPRESSION_BOMB",
        RequestHeaderInvalid => "REQUEST_HEADER_INVALID",
        /// An `Authorization` header whose scheme is not Basic, Digest or
        /// Bearer (libhtp's `parse_authorization`).
        RequestAuthUnrecognized => "REQUEST_AUTH_UNRECOGNIZED",
        ResponseHeaderInvalid => "RESPONSE_HEADER_INVALID",
        /// (Vigil) the request body passed `http_request_body_limit`.
        RequestBodyLimitReached => "REQUEST_BODY_LIMIT_REACHED",
        /// (Vigil) the response body passed `http_response_body_limit`.
        ResponseBodyLimitReached => "RESPONSE_BODY_LIMIT_REACHED",
        /// (Vigil) more unanswered transactions than `max_transactions`.
        TooManyTransactions => "TOO_MANY_TRANSACTIONS",
        /// (Vigil) a gap in the stream: the parser skipped to a safe state.
        StreamGap => "STREAM_GAP",
    }
}

event_enum! {
    /// DNS events (Suricata's `rust/src/dns`).
    DnsEvent {
        MalformedData => "MALFORMED_DATA",
        NotARequest => "NOT_A_REQUEST",
        NotAResponse => "NOT_A_RESPONSE",
        ZFlagSet => "Z_FLAG_SET",
        InvalidOpcode => "INVALID_OPCODE",
        NameTooLong => "NAME_TOO_LONG",
        InfiniteLoop => "INFINITE_LOOP",
        TooManyLabels => "TOO_MANY_LABELS",
        InvalidAdditionals => "INVALID_ADDITIONALS",
        InvalidAuthorities => "INVALID_AUTHORITIES",
        /// (Vigil) more transactions than `max_transactions`.
        TooManyTransactions => "TOO_MANY_TRANSACTIONS",
    }
}

event_enum! {
    /// LLMNR events (Suricata's `rust/src/llmnr`).
    LlmnrEvent {
        MalformedData => "MALFORMED_DATA",
        NotRequest => "NOT_REQUEST",
        NotResponse => "NOT_RESPONSE",
        ZFlagSet => "Z_FLAG_SET",
        InvalidOpcode => "INVALID_OPCODE",
        /// (Vigil) more transactions than `max_transactions`.
        TooManyTransactions => "TOO_MANY_TRANSACTIONS",
    }
}

event_enum! {
    /// TLS events (Suricata's `app-layer-ssl.c`).
    TlsEvent {
        InvalidSslv2Header => "INVALID_SSLV2_HEADER",
        InvalidTlsHeader => "INVALID_TLS_HEADER",
        InvalidRecordVersion => "INVALID_RECORD_VERSION",
        InvalidRecordType => "INVALID_RECORD_TYPE",
        InvalidRecordLength => "INVALID_RECORD_LENGTH",
        InvalidHandshakeMessage => "INVALID_HANDSHAKE_MESSAGE",
        HeartbeatMessage => "HEARTBEAT_MESSAGE",
        HandshakeInvalidLength => "HANDSHAKE_INVALID_LENGTH",
        MultipleSniExtensions => "MULTIPLE_SNI_EXTENSIONS",
        InvalidSniType => "INVALID_SNI_TYPE",
        InvalidSniLength => "INVALID_SNI_LENGTH",
        InvalidCertificate => "INVALID_CERTIFICATE",
        CertificateInvalidLength => "CERTIFICATE_INVALID_LENGTH",
        CertificateInvalidDer => "CERTIFICATE_INVALID_DER",
        ErrorMessageEncountered => "ERROR_MESSAGE_ENCOUNTERED",
        InvalidSslRecord => "INVALID_SSL_RECORD",
    }
}

event_enum! {
    /// DCERPC events. Suricata's DCERPC parser raises none: these are
    /// Vigil's (malformed PDUs and caps), under the `dcerpc.` prefix.
    DcerpcEvent {
        /// (Vigil) a PDU header that is not DCERPC connection-oriented
        /// (version 5.0/5.1, fragment length of at least 16): the framing
        /// of that direction is lost.
        InvalidHeader => "INVALID_HEADER",
        /// (Vigil) a PDU whose body is shorter than its fields.
        MalformedPdu => "MALFORMED_PDU",
        /// (Vigil) a request-side PDU sent to the client or the reverse.
        UnexpectedPdu => "UNEXPECTED_PDU",
        /// (Vigil) an ack, nak or fault with no open call of its call id.
        UnmatchedResponse => "UNMATCHED_RESPONSE",
        /// (Vigil) stub data past `dcerpc_max_stub` was dropped.
        StubLimitReached => "STUB_LIMIT_REACHED",
        /// (Vigil) more bound interfaces than the parser keeps.
        TooManyInterfaces => "TOO_MANY_INTERFACES",
        /// (Vigil) more transactions than `max_transactions`.
        TooManyTransactions => "TOO_MANY_TRANSACTIONS",
        /// (Vigil) a gap in the stream: the framing of that direction is lost.
        StreamGap => "STREAM_GAP",
    }
}

event_enum! {
    /// FTP events (Suricata's `rust/src/ftp/event.rs`).
    FtpEvent {
        RequestCommandTooLong => "REQUEST_COMMAND_TOO_LONG",
        ResponseCommandTooLong => "RESPONSE_COMMAND_TOO_LONG",
        /// (Vigil) more reply lines for one command than the parser keeps.
        TooManyReplyLines => "TOO_MANY_REPLY_LINES",
        /// (Vigil) more transactions than `max_transactions`.
        TooManyTransactions => "TOO_MANY_TRANSACTIONS",
    }
}

event_enum! {
    /// SIP events (Suricata's `rust/src/sip`).
    SipEvent {
        /// A message ends before its header block does.
        IncompleteData => "INCOMPLETE_DATA",
        /// A message breaks the grammar.
        InvalidData => "INVALID_DATA",
        /// (Vigil) more headers in a message than `http_max_headers`.
        TooManyHeaders => "TOO_MANY_HEADERS",
        /// (Vigil) more transactions than `max_transactions`.
        TooManyTransactions => "TOO_MANY_TRANSACTIONS",
    }
}

event_enum! {
    /// HTTP/2 events (Suricata's `rust/src/http2`).
    Http2Event {
        InvalidFrameHeader => "INVALID_FRAME_HEADER",
        InvalidClientMagic => "INVALID_CLIENT_MAGIC",
        InvalidFrameData => "INVALID_FRAME_DATA",
        InvalidHeader => "INVALID_HEADER",
        InvalidFrameLength => "INVALID_FRAME_LENGTH",
        ExtraHeaderData => "EXTRA_HEADER_DATA",
        LongFrameData => "LONG_FRAME_DATA",
        StreamIdReuse => "STREAM_ID_REUSE",
        InvalidHttp1Settings => "INVALID_HTTP1_SETTINGS",
        FailedDecompression => "FAILED_DECOMPRESSION",
        InvalidRange => "INVALID_RANGE",
        HeaderIntegerOverflow => "HEADER_INTEGER_OVERFLOW",
        TooManyStreams => "TOO_MANY_STREAMS",
        AuthorityHostMismatch => "AUTHORITY_HOST_MISMATCH",
        UserinfoInUri => "USERINFO_IN_URI",
        /// (Vigil) more headers in a block than `http_max_headers`.
        TooManyHeaders => "TOO_MANY_HEADERS",
        /// (Vigil) a gap: the framing of the direction is lost.
        ReassemblyGap => "REASSEMBLY_GAP",
    }
}

event_enum! {
    /// MQTT events (Suricata's `rust/src/mqtt`).
    MqttEvent {
        MissingConnect => "missing_connect",
        MissingPublish => "missing_publish",
        MissingSubscribe => "missing_subscribe",
        MissingUnsubscribe => "missing_unsubscribe",
        DoubleConnect => "double_connect",
        UnintroducedMessage => "unintroduced_message",
        InvalidQosLevel => "invalid_qos_level",
        MissingMsgId => "missing_msg_id",
        UnassignedMsgType => "unassigned_msg_type",
        TooManyTransactions => "too_many_transactions",
        MalformedTraffic => "malformed_traffic",
    }
}

event_enum! {
    /// RFB events (Suricata's `rust/src/rfb`).
    RfbEvent {
        UnimplementedSecurityType => "unimplemented_security_type",
        UnknownSecurityResult => "unknown_security_result",
        MalformedMessage => "malformed_message",
        ConfusedState => "confused_state",
    }
}

event_enum! {
    /// ENIP events (Suricata's `rust/src/enip`).
    EnipEvent {
        TooManyTransactions => "too_many_transactions",
        InvalidPdu => "invalid_pdu",
    }
}

event_enum! {
    /// LDAP events (Suricata's `rust/src/ldap`).
    LdapEvent {
        TooManyTransactions => "too_many_transactions",
        InvalidData => "invalid_data",
        RequestNotFound => "request_not_found",
        IncompleteData => "incomplete_data",
    }
}

event_enum! {
    /// Modbus events (Suricata's `rust/src/modbus`).
    ModbusEvent {
        UnsolicitedResponse => "unsolicited_response",
        InvalidFunctionCode => "invalid_function_code",
        InvalidLength => "invalid_length",
        InvalidValue => "invalid_value",
        InvalidExceptionCode => "invalid_exception_code",
        ValueMismatch => "value_mismatch",
        Flooded => "flooded",
        InvalidProtocolId => "invalid_protocol_id",
    }
}

event_enum! {
    /// DNP3 events (Suricata's `app-layer-dnp3.c`).
    Dnp3Event {
        Flooded => "flooded",
        LenTooSmall => "len_too_small",
        BadLinkCrc => "bad_link_crc",
        BadTransportCrc => "bad_transport_crc",
        Malformed => "malformed",
        UnknownObject => "unknown_object",
    }
}

event_enum! {
    /// DHCP events (Suricata's `rust/src/dhcp`).
    DhcpEvent {
        TruncatedOptions => "truncated_options",
        MalformedOptions => "malformed_options",
        /// (Vigil) more transactions than `max_transactions`.
        TooManyTransactions => "too_many_transactions",
    }
}

event_enum! {
    /// WebSocket events (Suricata's `rust/src/websocket`).
    WebSocketEvent {
        SkipEndOfPayload => "skip_end_of_payload",
        ReassemblyLimitReached => "reassembly_limit_reached",
        /// (Vigil) more transactions than `max_transactions`.
        TooManyTransactions => "too_many_transactions",
    }
}

event_enum! {
    /// PostgreSQL events: Suricata's parser raises none, these are
    /// Vigil's.
    PgsqlEvent {
        /// (Vigil) a message length below the minimum: the side is no
        /// longer parsed.
        MalformedMessage => "malformed_message",
        /// (Vigil) a message longer than the parser keeps.
        OversizedMessage => "oversized_message",
        /// (Vigil) more transactions than `max_transactions`.
        TooManyTransactions => "too_many_transactions",
    }
}

event_enum! {
    /// SMB events (Suricata's `rust/src/smb/events.rs`).
    SmbEvent {
        /// The parser reached a state it should not.
        InternalError => "INTERNAL_ERROR",
        /// A record or message that does not parse.
        MalformedData => "MALFORMED_DATA",
        /// A record longer than the parser buffers (`MAX_RECORD`).
        RecordOverflow => "RECORD_OVERFLOW",
        /// An NTLMSSP AUTHENTICATE message whose fields point outside it.
        MalformedNtlmsspRequest => "MALFORMED_NTLMSSP_REQUEST",
        MalformedNtlmsspResponse => "MALFORMED_NTLMSSP_RESPONSE",
        /// A second NEGOTIATE after one succeeded.
        DuplicateNegotiate => "DUPLICATE_NEGOTIATE",
        /// A NEGOTIATE request whose dialect list does not parse.
        NegotiateMalformedDialects => "NEGOTIATE_MALFORMED_DIALECTS",
        /// File data overlapping data already seen with other bytes.
        FileOverlap => "FILE_OVERLAP",
        /// A request sent by the server.
        RequestToClient => "REQUEST_TO_CLIENT",
        /// A response sent by the client.
        ResponseToServer => "RESPONSE_TO_SERVER",
        /// (Vigil) more transactions than `max_transactions`.
        TooManyTransactions => "TOO_MANY_TRANSACTIONS",
    }
}

event_enum! {
    /// Kerberos 5 events (Suricata's `rust/src/krb`).
    Krb5Event {
        /// A message that does not decode, a broken TCP record.
        MalformedData => "MALFORMED_DATA",
        /// A reply encrypted with a cipher other than AES or Camellia.
        WeakEncryption => "WEAK_ENCRYPTION",
        /// (Vigil) more transactions than `max_transactions`.
        TooManyTransactions => "TOO_MANY_TRANSACTIONS",
    }
}

event_enum! {
    /// SNMP events (Suricata's `rust/src/snmp`).
    SnmpEvent {
        /// A message that does not decode.
        MalformedData => "MALFORMED_DATA",
        /// A v3 message whose security model is not USM.
        UnknownSecurityModel => "UNKNOWN_SECURITY_MODEL",
        /// A message of another version than the flow's first.
        VersionMismatch => "VERSION_MISMATCH",
        /// (Vigil) more transactions than `max_transactions`.
        TooManyTransactions => "TOO_MANY_TRANSACTIONS",
    }
}

event_enum! {
    /// IKE events (Suricata's `rust/src/ike`).
    IkeEvent {
        /// A message that does not decode.
        MalformedData => "MALFORMED_DATA",
        /// An IKEv2 proposal of AH: no encryption.
        NoEncryption => "NO_ENCRYPTION",
        WeakCryptoEnc => "WEAK_CRYPTO_ENC",
        WeakCryptoPrf => "WEAK_CRYPTO_PRF",
        WeakCryptoDh => "WEAK_CRYPTO_DH",
        WeakCryptoAuth => "WEAK_CRYPTO_AUTH",
        WeakCryptoNoDh => "WEAK_CRYPTO_NO_DH",
        WeakCryptoNoAuth => "WEAK_CRYPTO_NO_AUTH",
        InvalidProposal => "INVALID_PROPOSAL",
        UnknownProposal => "UNKNOWN_PROPOSAL",
        /// Bytes after the last payload.
        PayloadExtraData => "PAYLOAD_EXTRA_DATA",
        /// The server chose more than one proposal.
        MultipleServerProposal => "MULTIPLE_SERVER_PROPOSAL",
        /// (Vigil) more transactions than `max_transactions`.
        TooManyTransactions => "TOO_MANY_TRANSACTIONS",
    }
}

event_enum! {
    /// SMTP events (Suricata's `app-layer-smtp.c`, its MIME decoder's
    /// included). `FAILED_PROTOCOL_CHANGE` is never raised: Vigil stops
    /// parsing after STARTTLS instead of switching the flow to TLS.
    SmtpEvent {
        InvalidReply => "INVALID_REPLY",
        UnableToMatchReplyWithRequest => "UNABLE_TO_MATCH_REPLY_WITH_REQUEST",
        MaxCommandLineLenExceeded => "MAX_COMMAND_LINE_LEN_EXCEEDED",
        MaxReplyLineLenExceeded => "MAX_REPLY_LINE_LEN_EXCEEDED",
        InvalidPipelinedSequence => "INVALID_PIPELINED_SEQUENCE",
        BdatChunkLenExceeded => "BDAT_CHUNK_LEN_EXCEEDED",
        NoServerWelcomeMessage => "NO_SERVER_WELCOME_MESSAGE",
        TlsRejected => "TLS_REJECTED",
        DataCommandRejected => "DATA_COMMAND_REJECTED",
        FailedProtocolChange => "FAILED_PROTOCOL_CHANGE",
        MimeParseFailed => "MIME_PARSE_FAILED",
        MimeMalformedMsg => "MIME_MALFORMED_MSG",
        MimeInvalidBase64 => "MIME_INVALID_BASE64",
        MimeInvalidQp => "MIME_INVALID_QP",
        MimeLongLine => "MIME_LONG_LINE",
        MimeLongEncLine => "MIME_LONG_ENC_LINE",
        MimeLongHeaderName => "MIME_LONG_HEADER_NAME",
        MimeLongHeaderValue => "MIME_LONG_HEADER_VALUE",
        MimeLongBoundary => "MIME_LONG_BOUNDARY",
        MimeLongFilename => "MIME_LONG_FILENAME",
        DuplicateFields => "DUPLICATE_FIELDS",
        UnparsableContent => "UNPARSABLE_CONTENT",
    }
}

event_enum! {
    /// QUIC events (Suricata's `rust/src/quic`).
    QuicEvent {
        /// An Initial packet that does not decrypt.
        FailedDecrypt => "FAILED_DECRYPT",
        /// Frames that do not parse, or CRYPTO data that is no hello.
        ErrorOnData => "ERROR_ON_DATA",
        /// A datagram of the flow whose header does not parse.
        ErrorOnHeader => "ERROR_ON_HEADER",
        /// CRYPTO data reaching past 65535 bytes.
        CryptoFragTooLong => "CRYPTO_FRAG_TOO_LONG",
        /// (Vigil) more transactions than `max_transactions`.
        TooManyTransactions => "TOO_MANY_TRANSACTIONS",
    }
}

event_enum! {
    /// NTP events (Suricata's `rust/src/ntp`).
    NtpEvent {
        UnsolicitedResponse => "UNSOLICITED_RESPONSE",
        /// A datagram that does not decode as NTP v3 or v4.
        MalformedData => "MALFORMED_DATA",
        NotRequest => "NOT_REQUEST",
        NotResponse => "NOT_RESPONSE",
        /// (Vigil) more transactions than `max_transactions`.
        TooManyTransactions => "TOO_MANY_TRANSACTIONS",
    }
}

event_enum! {
    /// BitTorrent DHT events (Suricata's `rust/src/bittorrent_dht`).
    BittorrentDhtEvent {
        /// A datagram that does not decode as a KRPC message.
        MalformedPacket => "MALFORMED_PACKET",
        /// (Vigil) more transactions than `max_transactions`.
        TooManyTransactions => "TOO_MANY_TRANSACTIONS",
    }
}

event_enum! {
    /// POP3 events (Suricata's `rust/src/pop3`).
    Pop3Event {
        TooManyTransactions => "too_many_transactions",
        RequestTooLong => "request_too_long",
        IncorrectArgumentCount => "incorrect_argument_count",
        UnknownCommand => "unknown_command",
        ResponseTooLong => "response_too_long",
    }
}

event_enum! {
    /// NFS events (Suricata's `rust/src/nfs`).
    NfsEvent {
        MalformedData => "malformed_data",
        NonExistingVersion => "non_existing_version",
        UnsupportedVersion => "unsupported_version",
        TooManyTransactions => "too_many_transactions",
    }
}

/// One event raised while parsing, with the transaction it belongs to when
/// there is one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppLayerEvent {
    Http(HttpEvent, Option<TxId>),
    Dns(DnsEvent, Option<TxId>),
    Tls(TlsEvent, Option<TxId>),
    Dcerpc(DcerpcEvent, Option<TxId>),
    Ftp(FtpEvent, Option<TxId>),
    Sip(SipEvent, Option<TxId>),
    Http2(Http2Event, Option<TxId>),
    Mqtt(MqttEvent, Option<TxId>),
    Rfb(RfbEvent, Option<TxId>),
    Dhcp(DhcpEvent, Option<TxId>),
    Smb(SmbEvent, Option<TxId>),
    Krb5(Krb5Event, Option<TxId>),
    Snmp(SnmpEvent, Option<TxId>),
    Ike(IkeEvent, Option<TxId>),
    Smtp(SmtpEvent, Option<TxId>),
    WebSocket(WebSocketEvent, Option<TxId>),
    Pgsql(PgsqlEvent, Option<TxId>),
    Enip(EnipEvent, Option<TxId>),
    Quic(QuicEvent, Option<TxId>),
    /// mDNS raises the DNS parser's events under `mdns.`.
    Mdns(DnsEvent, Option<TxId>),
    Llmnr(LlmnrEvent, Option<TxId>),
    Ldap(LdapEvent, Option<TxId>),
    Ntp(NtpEvent, Option<TxId>),
    BittorrentDht(BittorrentDhtEvent, Option<TxId>),
    Modbus(ModbusEvent, Option<TxId>),
    Dnp3(Dnp3Event, Option<TxId>),
    Pop3(Pop3Event, Option<TxId>),
    Nfs(NfsEvent, Option<TxId>),
}

impl AppLayerEvent {
    pub fn proto(&self) -> AppProto {
        match self {
            AppLayerEvent::Http(..) => AppProto::Http,
            AppLayerEvent::Dns(..) => AppProto::Dns,
            AppLayerEvent::Tls(..) => AppProto::Tls,
            AppLayerEvent::Dcerpc(..) => AppProto::Dcerpc,
            AppLayerEvent::Ftp(..) => AppProto::Ftp,
            AppLayerEvent::Sip(..) => AppProto::Sip,
            AppLayerEvent::Http2(..) => AppProto::Http2,
            AppLayerEvent::Mqtt(..) => AppProto::Mqtt,
            AppLayerEvent::Rfb(..) => AppProto::Rfb,
            AppLayerEvent::Dhcp(..) => AppProto::Dhcp,
            AppLayerEvent::Smb(..) => AppProto::Smb,
            AppLayerEvent::Krb5(..) => AppProto::Krb5,
            AppLayerEvent::Snmp(..) => AppProto::Snmp,
            AppLayerEvent::Ike(..) => AppProto::Ike,
            AppLayerEvent::Smtp(..) => AppProto::Smtp,
            AppLayerEvent::WebSocket(..) => AppProto::WebSocket,
            AppLayerEvent::Pgsql(..) => AppProto::Pgsql,
            AppLayerEvent::Enip(..) => AppProto::Enip,
            AppLayerEvent::Quic(..) => AppProto::Quic,
            AppLayerEvent::Mdns(..) => AppProto::Mdns,
            AppLayerEvent::Llmnr(..) => AppProto::Llmnr,
            AppLayerEvent::Ldap(..) => AppProto::Ldap,
            AppLayerEvent::Ntp(..) => AppProto::Ntp,
            AppLayerEvent::BittorrentDht(..) => AppProto::BittorrentDht,
            AppLayerEvent::Modbus(..) => AppProto::Modbus,
            AppLayerEvent::Dnp3(..) => AppProto::Dnp3,
            AppLayerEvent::Pop3(..) => AppProto::Pop3,
            AppLayerEvent::Nfs(..) => AppProto::Nfs,
        }
    }

    /// The event's name in an EVE `anomaly` record, as Suricata spells it
    /// there: its event table's name, upper case for the parsers it
    /// writes in C (HTTP, TLS, SMTP), snake case for its Rust parsers.
    pub fn anomaly_name(&self) -> std::borrow::Cow<'static, str> {
        match self {
            AppLayerEvent::Http(..) | AppLayerEvent::Tls(..) | AppLayerEvent::Smtp(..) => {
                self.name().into()
            }
            _ => self.name().to_ascii_lowercase().into(),
        }
    }

    /// Suricata's upper-case event name.
    pub fn name(&self) -> &'static str {
        match self {
            AppLayerEvent::Http(e, _) => e.name(),
            AppLayerEvent::Dns(e, _) => e.name(),
            AppLayerEvent::Tls(e, _) => e.name(),
            AppLayerEvent::Dcerpc(e, _) => e.name(),
            AppLayerEvent::Ftp(e, _) => e.name(),
            AppLayerEvent::Sip(e, _) => e.name(),
            AppLayerEvent::Http2(e, _) => e.name(),
            AppLayerEvent::Mqtt(e, _) => e.name(),
            AppLayerEvent::Rfb(e, _) => e.name(),
            AppLayerEvent::Dhcp(e, _) => e.name(),
            AppLayerEvent::Smb(e, _) => e.name(),
            AppLayerEvent::Krb5(e, _) => e.name(),
            AppLayerEvent::Snmp(e, _) => e.name(),
            AppLayerEvent::Ike(e, _) => e.name(),
            AppLayerEvent::Smtp(e, _) => e.name(),
            AppLayerEvent::WebSocket(e, _) => e.name(),
            AppLayerEvent::Pgsql(e, _) => e.name(),
            AppLayerEvent::Enip(e, _) => e.name(),
            AppLayerEvent::Quic(e, _) => e.name(),
            AppLayerEvent::Mdns(e, _) => e.name(),
            AppLayerEvent::Llmnr(e, _) => e.name(),
            AppLayerEvent::Ldap(e, _) => e.name(),
            AppLayerEvent::Ntp(e, _) => e.name(),
            AppLayerEvent::BittorrentDht(e, _) => e.name(),
            AppLayerEvent::Modbus(e, _) => e.name(),
            AppLayerEvent::Dnp3(e, _) => e.name(),
            AppLayerEvent::Pop3(e, _) => e.name(),
            AppLayerEvent::Nfs(e, _) => e.name(),
        }
    }

    /// The transaction the event belongs to, if any.
    pub fn tx(&self) -> Option<TxId> {
        match self {
            AppLayerEvent::Http(_, t)
            | AppLayerEvent::Dns(_, t)
            | AppLayerEvent::Tls(_, t)
            | AppLayerEvent::Dcerpc(_, t)
            | AppLayerEvent::Ftp(_, t)
            | AppLayerEvent::Sip(_, t)
            | AppLayerEvent::Http2(_, t)
            | AppLayerEvent::Smb(_, t)
            | AppLayerEvent::Krb5(_, t)
            | AppLayerEvent::Snmp(_, t)
            | AppLayerEvent::Ike(_, t)
            | AppLayerEvent::Smtp(_, t)
            | AppLayerEvent::WebSocket(_, t)
            | AppLayerEvent::Pgsql(_, t)
            | AppLayerEvent::Quic(_, t) => *t,
            AppLayerEvent::Mqtt(_, t) | AppLayerEvent::Rfb(_, t) | AppLayerEvent::Dhcp(_, t) => *t,
            AppLayerEvent::Enip(_, t) => *t,
            AppLayerEvent::Mdns(_, t) | AppLayerEvent::Llmnr(_, t) => *t,
            AppLayerEvent::Ldap(_, t) => *t,
            AppLayerEvent::Ntp(_, t) | AppLayerEvent::BittorrentDht(_, t) => *t,
            AppLayerEvent::Modbus(_, t) => *t,
            AppLayerEvent::Dnp3(_, t) => *t,
            AppLayerEvent::Pop3(_, t) => *t,
            AppLayerEvent::Nfs(_, t) => *t,
        }
    }

    /// The name as the `app-layer-event` keyword writes it:
    /// `http.request_field_too_long`.
    pub fn keyword(&self) -> String {
        format!(
            "{}.{}",
            self.proto().name(),
            self.name().to_ascii_lowercase()
        )
    }
}
