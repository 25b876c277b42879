//! The table of rule keywords that Suricata (7/8) and Snort (2.9, 3) know
//! but that Vigil only records: sticky buffers, transforms and other
//! keywords, each with its canonical (Suricata, dotted) name.
//!
//! Keywords the parser evaluates (`content`, `pcre`, `flow`, ...) are
//! handled in `parser.rs` and are not in this table.

use foldhash::HashMap;
use std::sync::OnceLock;

use crate::ast::Buffer;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kw {
    /// A sticky buffer: following payload keywords inspect it.
    Sticky(&'static str),
    /// `http_uri`-style name: a content modifier in Snort 2 / Suricata
    /// (moves the previous content into the buffer), a sticky buffer in
    /// Snort 3.
    Modifier(&'static str),
    /// A transform applied to the current sticky buffer.
    Transform(&'static str),
    /// Any other keyword: parsed, recorded, not evaluated.
    Other(&'static str),
    /// A keyword that does not change what matches (comments, service
    /// hints, logging): accepted and dropped.
    Info,
}

/// The buffer a canonical sticky-buffer name denotes.
pub(crate) fn buffer_for(canon: &str) -> Buffer {
    match canon {
        "pkt_data" => Buffer::Packet,
        "ipv4.hdr" => Buffer::Ipv4Hdr,
        "ipv6.hdr" => Buffer::Ipv6Hdr,
        "tcp.hdr" => Buffer::TcpHdr,
        "udp.hdr" => Buffer::UdpHdr,
        "icmpv4.hdr" => Buffer::Icmpv4Hdr,
        "icmpv6.hdr" => Buffer::Icmpv6Hdr,
        "sctp.hdr" => Buffer::SctpHdr,
        "sctp.chunk_data" => Buffer::SctpChunkData,
        "ether.hdr" => Buffer::EtherHdr,
        "ip.src" => Buffer::IpSrc,
        "igmp.hdr" => Buffer::IgmpHdr,
        "ip.dst" => Buffer::IpDst,
        other => Buffer::Named(other.to_string()),
    }
}

/// The canonical name of the buffer a pcre buffer flag selects.
pub(crate) fn pcre_flag_buffer(flag: char) -> Option<&'static str> {
    Some(match flag {
        'U' => "http.uri",
        'I' => "http.uri.raw",
        'P' => "http.request_body",
        'Q' => "file.data",
        'H' => "http.header",
        'D' => "http.header.raw",
        'M' => "http.method",
        'C' => "http.cookie",
        'K' => "http.cookie",
        'S' => "http.stat_code",
        'Y' => "http.stat_msg",
        'V' => "http.user_agent",
        'W' => "http.host",
        'Z' => "http.host.raw",
        _ => return None,
    })
}

use Kw::*;

/// (keyword, kind). Legacy names map to the canonical dotted name.
const TABLE: &[(&str, Kw)] = &[
    // ---- packet / header buffers
    ("pkt_data", Sticky("pkt_data")),
    ("raw_data", Sticky("pkt_data")),
    ("ipv4.hdr", Sticky("ipv4.hdr")),
    ("ipv6.hdr", Sticky("ipv6.hdr")),
    ("tcp.hdr", Sticky("tcp.hdr")),
    ("udp.hdr", Sticky("udp.hdr")),
    ("icmpv4.hdr", Sticky("icmpv4.hdr")),
    ("icmpv6.hdr", Sticky("icmpv6.hdr")),
    // Suricata 9 link and SCTP buffers.
    ("ether.hdr", Sticky("ether.hdr")),
    ("sctp.hdr", Sticky("sctp.hdr")),
    ("ip.src", Sticky("ip.src")),
    ("igmp.hdr", Sticky("igmp.hdr")),
    ("ip.dst", Sticky("ip.dst")),
    ("sctp.chunk_data", Sticky("sctp.chunk_data")),
    // ---- HTTP: Snort 2 / Suricata content modifiers (Snort 3 sticky)
    ("http_uri", Modifier("http.uri")),
    ("http_raw_uri", Modifier("http.uri.raw")),
    ("http_method", Modifier("http.method")),
    ("http_client_body", Modifier("http.request_body")),
    ("http_server_body", Modifier("http.response_body")),
    ("http_header", Modifier("http.header")),
    ("http_raw_header", Modifier("http.header.raw")),
    ("http_cookie", Modifier("http.cookie")),
    ("http_raw_cookie", Modifier("http.cookie")),
    ("http_user_agent", Modifier("http.user_agent")),
    ("http_host", Modifier("http.host")),
    ("http_raw_host", Modifier("http.host.raw")),
    ("http_stat_code", Modifier("http.stat_code")),
    ("http_stat_msg", Modifier("http.stat_msg")),
    // ---- HTTP sticky buffers
    ("http.uri", Sticky("http.uri")),
    ("http.uri.raw", Sticky("http.uri.raw")),
    ("http.method", Sticky("http.method")),
    ("http.request_line", Sticky("http.request_line")),
    ("http_request_line", Sticky("http.request_line")),
    ("http.request_body", Sticky("http.request_body")),
    ("http.client_body", Sticky("http.request_body")),
    ("http.response_body", Sticky("http.response_body")),
    ("http.server_body", Sticky("http.response_body")),
    ("http.header", Sticky("http.header")),
    ("http.header.raw", Sticky("http.header.raw")),
    ("http.cookie", Sticky("http.cookie")),
    ("http.user_agent", Sticky("http.user_agent")),
    ("http.host", Sticky("http.host")),
    ("http.host.raw", Sticky("http.host.raw")),
    ("http.stat_code", Sticky("http.stat_code")),
    ("http.stat_msg", Sticky("http.stat_msg")),
    ("http.response_line", Sticky("http.response_line")),
    ("http_response_line", Sticky("http.response_line")),
    ("http.protocol", Sticky("http.protocol")),
    ("http_protocol", Sticky("http.protocol")),
    ("http.start", Sticky("http.start")),
    ("http_start", Sticky("http.start")),
    ("http.header_names", Sticky("http.header_names")),
    ("http_header_names", Sticky("http.header_names")),
    ("http.accept", Sticky("http.accept")),
    ("http_accept", Sticky("http.accept")),
    ("http.accept_enc", Sticky("http.accept_enc")),
    ("http_accept_enc", Sticky("http.accept_enc")),
    ("http.accept_lang", Sticky("http.accept_lang")),
    ("http_accept_lang", Sticky("http.accept_lang")),
    ("http.connection", Sticky("http.connection")),
    ("http_connection", Sticky("http.connection")),
    ("http.content_len", Sticky("http.content_len")),
    ("http_content_len", Sticky("http.content_len")),
    ("http.content_type", Sticky("http.content_type")),
    ("http_content_type", Sticky("http.content_type")),
    ("http.location", Sticky("http.location")),
    ("http.referer", Sticky("http.referer")),
    ("http_referer", Sticky("http.referer")),
    ("http.server", Sticky("http.server")),
    ("http.request_header", Sticky("http.request_header")),
    ("http.response_header", Sticky("http.response_header")),
    ("http2.header_name", Sticky("http2.header_name")),
    ("http2.header", Sticky("http2.header")),
    // Snort 3 HTTP buffers without a Suricata equivalent, and aliases.
    ("http_raw_body", Sticky("http_raw_body")),
    ("http_raw_request", Sticky("http.request_line")),
    ("http_raw_status", Sticky("http.response_line")),
    ("http_version", Sticky("http.protocol")),
    ("http_true_ip", Sticky("http_true_ip")),
    ("http_param", Sticky("http_param")),
    ("http_trailer", Sticky("http_trailer")),
    ("http_raw_trailer", Sticky("http_raw_trailer")),
    ("js_data", Sticky("js_data")),
    ("vba_data", Sticky("vba_data")),
    // ---- files
    ("file_data", Sticky("file.data")),
    ("file.data", Sticky("file.data")),
    ("file.name", Sticky("file.name")),
    ("file.magic", Sticky("file.magic")),
    // ---- DNS
    ("dns_query", Sticky("dns.query")),
    ("dns.query", Sticky("dns.query")),
    ("dns.query.name", Sticky("dns.query.name")),
    ("dns.answer.name", Sticky("dns.answer.name")),
    ("dns.queries.rrname", Sticky("dns.queries.rrname")),
    ("dns.answers.rrname", Sticky("dns.answers.rrname")),
    ("dns.authorities.rrname", Sticky("dns.authorities.rrname")),
    ("dns.additionals.rrname", Sticky("dns.additionals.rrname")),
    ("dns.response.rrname", Sticky("dns.response.rrname")),
    // ---- TLS / JA3 / JA4
    ("tls_sni", Sticky("tls.sni")),
    ("tls.sni", Sticky("tls.sni")),
    ("tls_cert_subject", Sticky("tls.cert_subject")),
    ("tls.cert_subject", Sticky("tls.cert_subject")),
    ("tls_cert_issuer", Sticky("tls.cert_issuer")),
    ("tls.cert_issuer", Sticky("tls.cert_issuer")),
    ("tls_cert_serial", Sticky("tls.cert_serial")),
    ("tls.cert_serial", Sticky("tls.cert_serial")),
    ("tls_cert_fingerprint", Sticky("tls.cert_fingerprint")),
    ("tls.cert_fingerprint", Sticky("tls.cert_fingerprint")),
    ("tls.certs", Sticky("tls.certs")),
    ("tls.subjectaltname", Sticky("tls.subjectaltname")),
    ("tls.random", Sticky("tls.random")),
    ("tls.random_time", Sticky("tls.random_time")),
    ("tls.random_bytes", Sticky("tls.random_bytes")),
    ("tls.alpn", Sticky("tls.alpn")),
    ("ja3_hash", Sticky("ja3.hash")),
    ("ja3.hash", Sticky("ja3.hash")),
    ("ja3_string", Sticky("ja3.string")),
    ("ja3.string", Sticky("ja3.string")),
    ("ja3s_hash", Sticky("ja3s.hash")),
    ("ja3s.hash", Sticky("ja3s.hash")),
    ("ja3s_string", Sticky("ja3s.string")),
    ("ja3s.string", Sticky("ja3s.string")),
    ("ja4.hash", Sticky("ja4.hash")),
    // ---- SSH
    ("ssh_proto", Sticky("ssh.proto")),
    ("ssh.proto", Sticky("ssh.proto")),
    ("ssh_software", Sticky("ssh.software")),
    ("ssh.software", Sticky("ssh.software")),
    ("ssh.hassh", Sticky("ssh.hassh")),
    ("ssh.hassh.string", Sticky("ssh.hassh.string")),
    ("ssh.hassh.server", Sticky("ssh.hassh.server")),
    ("ssh.hassh.server.string", Sticky("ssh.hassh.server.string")),
    // ---- SMB / DCERPC / Kerberos
    ("smb.named_pipe", Sticky("smb.named_pipe")),
    ("smb.share", Sticky("smb.share")),
    ("smb_share", Sticky("smb.share")),
    ("smb_named_pipe", Sticky("smb.named_pipe")),
    ("smb.ntlmssp_user", Sticky("smb.ntlmssp_user")),
    ("smb.ntlmssp_domain", Sticky("smb.ntlmssp_domain")),
    ("dce_stub_data", Sticky("dcerpc.stub_data")),
    ("dcerpc.stub_data", Sticky("dcerpc.stub_data")),
    ("krb5_cname", Sticky("krb5.cname")),
    ("krb5.cname", Sticky("krb5.cname")),
    ("krb5_sname", Sticky("krb5.sname")),
    ("krb5.sname", Sticky("krb5.sname")),
    // ---- SIP
    ("sip.method", Sticky("sip.method")),
    ("sip.uri", Sticky("sip.uri")),
    ("sip.protocol", Sticky("sip.protocol")),
    ("sip.stat_code", Sticky("sip.stat_code")),
    ("sip.stat_msg", Sticky("sip.stat_msg")),
    ("sip.request_line", Sticky("sip.request_line")),
    ("sip.response_line", Sticky("sip.response_line")),
    ("sip.from", Sticky("sip.from")),
    ("sip.to", Sticky("sip.to")),
    ("sip.via", Sticky("sip.via")),
    ("sip.user_agent", Sticky("sip.user_agent")),
    ("sip.content_type", Sticky("sip.content_type")),
    ("sip.content_length", Sticky("sip.content_length")),
    ("sip_header", Sticky("sip_header")),
    ("sip_body", Sticky("sip_body")),
    // ---- mail
    ("smtp.helo", Sticky("smtp.helo")),
    ("smtp.mail_from", Sticky("smtp.mail_from")),
    ("smtp.rcpt_to", Sticky("smtp.rcpt_to")),
    ("email.from", Sticky("email.from")),
    ("email.subject", Sticky("email.subject")),
    ("email.to", Sticky("email.to")),
    ("email.cc", Sticky("email.cc")),
    ("email.date", Sticky("email.date")),
    ("email.message_id", Sticky("email.message_id")),
    ("email.x_mailer", Sticky("email.x_mailer")),
    ("email.url", Sticky("email.url")),
    ("email.received", Sticky("email.received")),
    ("email.body_md5", Sticky("email.body_md5")),
    ("pop3.command", Sticky("pop3.command")),
    ("pop3.args", Sticky("pop3.args")),
    ("pop3.response", Sticky("pop3.response")),
    ("imap.request", Sticky("imap.request")),
    ("imap.response", Sticky("imap.response")),
    // ---- FTP
    ("ftp.command", Sticky("ftp.command")),
    ("ftp.command_data", Sticky("ftp.command_data")),
    ("ftp.reply", Sticky("ftp.reply")),
    ("ftp.completion_code", Sticky("ftp.completion_code")),
    // ---- misc app-layer buffers
    ("snmp.community", Sticky("snmp.community")),
    ("snmp.usm", Sticky("snmp.usm")),
    ("snmp.trap_oid", Sticky("snmp.trap_oid")),
    ("snmp.trap_address", Sticky("snmp.trap_address")),
    ("mqtt.connect.clientid", Sticky("mqtt.connect.clientid")),
    ("mqtt.connect.username", Sticky("mqtt.connect.username")),
    ("mqtt.connect.password", Sticky("mqtt.connect.password")),
    ("mqtt.connect.willtopic", Sticky("mqtt.connect.willtopic")),
    (
        "mqtt.connect.willmessage",
        Sticky("mqtt.connect.willmessage"),
    ),
    (
        "mqtt.connect.protocol_string",
        Sticky("mqtt.connect.protocol_string"),
    ),
    ("mqtt.publish.topic", Sticky("mqtt.publish.topic")),
    ("mqtt.publish.message", Sticky("mqtt.publish.message")),
    ("mqtt.subscribe.topic", Sticky("mqtt.subscribe.topic")),
    ("mqtt.unsubscribe.topic", Sticky("mqtt.unsubscribe.topic")),
    ("rfb.name", Sticky("rfb.name")),
    ("quic.sni", Sticky("quic.sni")),
    ("quic.ua", Sticky("quic.ua")),
    ("quic.version", Sticky("quic.version")),
    ("quic.cyu.hash", Sticky("quic.cyu.hash")),
    ("quic.cyu.string", Sticky("quic.cyu.string")),
    ("dnp3_data", Sticky("dnp3.data")),
    ("dnp3.data", Sticky("dnp3.data")),
    ("ike.vendor", Sticky("ike.vendor")),
    ("ike.init_spi", Sticky("ike.init_spi")),
    ("ike.resp_spi", Sticky("ike.resp_spi")),
    (
        "ike.key_exchange_payload",
        Sticky("ike.key_exchange_payload"),
    ),
    ("ike.nonce_payload", Sticky("ike.nonce_payload")),
    ("ldap.request.dn", Sticky("ldap.request.dn")),
    ("ldap.responses.dn", Sticky("ldap.responses.dn")),
    (
        "ldap.request.attribute_type",
        Sticky("ldap.request.attribute_type"),
    ),
    (
        "ldap.responses.attribute_type",
        Sticky("ldap.responses.attribute_type"),
    ),
    ("ldap.responses.message", Sticky("ldap.responses.message")),
    ("websocket.payload", Sticky("websocket.payload")),
    ("pgsql.query", Sticky("pgsql.query")),
    ("dhcp.vendor_class_id", Sticky("dhcp.vendor_class_id")),
    ("tftp.file_name", Sticky("tftp.file_name")),
    ("mdns.queries.rrname", Sticky("mdns.queries.rrname")),
    ("mdns.answers.rrname", Sticky("mdns.answers.rrname")),
    ("mdns.authorities.rrname", Sticky("mdns.authorities.rrname")),
    ("mdns.additionals.rrname", Sticky("mdns.additionals.rrname")),
    ("mdns.response.rrname", Sticky("mdns.response.rrname")),
    ("llmnr.queries.rrname", Sticky("llmnr.queries.rrname")),
    ("llmnr.answers.rrname", Sticky("llmnr.answers.rrname")),
    (
        "llmnr.authorities.rrname",
        Sticky("llmnr.authorities.rrname"),
    ),
    (
        "llmnr.additionals.rrname",
        Sticky("llmnr.additionals.rrname"),
    ),
    ("llmnr.response.rrname", Sticky("llmnr.response.rrname")),
    // ---- NTP
    ("ntp.reference_id", Sticky("ntp.reference_id")),
    ("ntp.version", Other("ntp.version")),
    ("ntp.mode", Other("ntp.mode")),
    ("ntp.stratum", Other("ntp.stratum")),
    ("enip.product_name", Sticky("enip.product_name")),
    ("enip.service_name", Sticky("enip.service_name")),
    // ---- transforms
    ("dotprefix", Transform("dotprefix")),
    ("domain", Transform("domain")),
    ("tld", Transform("tld")),
    ("strip_whitespace", Transform("strip_whitespace")),
    ("compress_whitespace", Transform("compress_whitespace")),
    ("to_lowercase", Transform("to_lowercase")),
    ("to_uppercase", Transform("to_uppercase")),
    ("to_md5", Transform("to_md5")),
    ("to_sha1", Transform("to_sha1")),
    ("to_sha256", Transform("to_sha256")),
    ("url_decode", Transform("url_decode")),
    ("xor", Transform("xor")),
    ("header_lowercase", Transform("header_lowercase")),
    ("strip_pseudo_headers", Transform("strip_pseudo_headers")),
    ("pcrexform", Transform("pcrexform")),
    ("from_base64", Transform("from_base64")),
    ("luaxform", Transform("luaxform")),
    ("gunzip", Transform("gunzip")),
    ("zlib_deflate", Transform("zlib_deflate")),
    ("subslice", Transform("subslice")),
    ("casechange", Transform("casechange")),
    // ---- informational (accepted and dropped)
    ("rem", Info),
    ("service", Info),
    ("logto", Info),
    ("session", Info),
    ("file_meta", Info),
    // ---- everything else Suricata knows
    ("app-layer-protocol", Other("app-layer-protocol")),
    ("lua", Other("lua")),
    ("luajit", Other("luajit")),
    ("filemagic", Other("filemagic")),
    ("filestore", Other("filestore")),
    ("filemd5", Other("filemd5")),
    ("filesha1", Other("filesha1")),
    ("filesha256", Other("filesha256")),
    ("filesize", Other("filesize")),
    ("file.size", Other("filesize")),
    ("dce_iface", Other("dcerpc.iface")),
    ("dcerpc.iface", Other("dcerpc.iface")),
    ("dce_opnum", Other("dcerpc.opnum")),
    ("dcerpc.opnum", Other("dcerpc.opnum")),
    ("tls.version", Other("tls.version")),
    ("tls.subject", Other("tls.subject")),
    ("tls.issuerdn", Other("tls.issuerdn")),
    ("tls.fingerprint", Other("tls.fingerprint")),
    ("tls.store", Other("tls.store")),
    ("tls_store", Other("tls.store")),
    ("tls_cert_notbefore", Other("tls.cert_notbefore")),
    ("tls_cert_notafter", Other("tls.cert_notafter")),
    ("tls_cert_expired", Other("tls.cert_expired")),
    ("tls_cert_valid", Other("tls.cert_valid")),
    ("tls.cert_chain_len", Other("tls.cert_chain_len")),
    ("ssl_version", Other("ssl_version")),
    ("ssl_state", Other("ssl_state")),
    ("ssh.protoversion", Other("ssh.protoversion")),
    ("ssh.softwareversion", Other("ssh.softwareversion")),
    ("krb5_msg_type", Other("krb5.msg_type")),
    ("krb5_err_code", Other("krb5.err_code")),
    ("krb5.ticket_encryption", Other("krb5.ticket_encryption")),
    ("krb5.weak_encryption", Other("krb5.weak_encryption")),
    ("smb.version", Other("smb.version")),
    ("smb.cmd", Other("smb.cmd")),
    ("dnp3_func", Other("dnp3.func")),
    ("dnp3.func", Other("dnp3.func")),
    ("dnp3_ind", Other("dnp3.ind")),
    ("dnp3.ind", Other("dnp3.ind")),
    ("dnp3_obj", Other("dnp3.obj")),
    ("dnp3.obj", Other("dnp3.obj")),
    ("modbus", Other("modbus")),
    ("enip_command", Other("enip.command")),
    ("enip.command", Other("enip.command")),
    ("cip_service", Other("cip.service")),
    ("enip.status", Other("enip.status")),
    ("enip.protocol_version", Other("enip.protocol_version")),
    ("enip.cip_attribute", Other("enip.cip_attribute")),
    ("enip.cip_instance", Other("enip.cip_instance")),
    ("enip.cip_class", Other("enip.cip_class")),
    ("enip.cip_extendedstatus", Other("enip.cip_extendedstatus")),
    ("enip.revision", Other("enip.revision")),
    ("enip.identity_status", Other("enip.identity_status")),
    ("enip.state", Other("enip.state")),
    ("enip.serial", Other("enip.serial")),
    ("enip.product_code", Other("enip.product_code")),
    ("enip.device_type", Other("enip.device_type")),
    ("enip.vendor_id", Other("enip.vendor_id")),
    ("enip.capabilities", Other("enip.capabilities")),
    ("enip.cip_status", Other("enip.cip_status")),
    ("dns.opcode", Other("dns.opcode")),
    ("dns.rcode", Other("dns.rcode")),
    ("dns.rrtype", Other("dns.rrtype")),
    ("ike.exchtype", Other("ike.exchtype")),
    ("ike.chosen_sa_attribute", Other("ike.chosen_sa_attribute")),
    (
        "ike.key_exchange_payload_length",
        Other("ike.key_exchange_payload_length"),
    ),
    (
        "ike.nonce_payload_length",
        Other("ike.nonce_payload_length"),
    ),
    ("nfs_procedure", Other("nfs_procedure")),
    ("nfs.version", Other("nfs.version")),
    ("rfb.secresult", Other("rfb.secresult")),
    ("rfb.sectype", Other("rfb.sectype")),
    ("mqtt.type", Other("mqtt.type")),
    ("mqtt.flags", Other("mqtt.flags")),
    ("mqtt.qos", Other("mqtt.qos")),
    ("mqtt.id", Other("mqtt.id")),
    ("mqtt.reason_code", Other("mqtt.reason_code")),
    ("mqtt.connect.flags", Other("mqtt.connect.flags")),
    (
        "mqtt.connack.session_present",
        Other("mqtt.connack.session_present"),
    ),
    ("mqtt.protocol_version", Other("mqtt.protocol_version")),
    ("http2.frametype", Other("http2.frametype")),
    ("http2.errorcode", Other("http2.errorcode")),
    ("http2.priority", Other("http2.priority")),
    ("http2.window", Other("http2.window")),
    ("http2.size_update", Other("http2.size_update")),
    ("http2.settings", Other("http2.settings")),
    ("snmp.version", Other("snmp.version")),
    ("snmp.pdu_type", Other("snmp.pdu_type")),
    ("snmp.trap_type", Other("snmp.trap_type")),
    ("ftpbounce", Other("ftpbounce")),
    ("ftpdata_command", Other("ftpdata_command")),
    ("ftp.reply_received", Other("ftp.reply_received")),
    ("ftp.mode", Other("ftp.mode")),
    ("ftp.dynamic_port", Other("ftp.dynamic_port")),
    ("bypass", Other("bypass")),
    ("config", Other("config")),
    ("frame", Other("frame")),
    ("dhcp.leasetime", Other("dhcp.leasetime")),
    ("dhcp.rebinding_time", Other("dhcp.rebinding_time")),
    ("dhcp.renewal_time", Other("dhcp.renewal_time")),
    ("ldap.request.operation", Other("ldap.request.operation")),
    (
        "ldap.responses.operation",
        Other("ldap.responses.operation"),
    ),
    ("ldap.responses.count", Other("ldap.responses.count")),
    (
        "ldap.responses.result_code",
        Other("ldap.responses.result_code"),
    ),
    ("websocket.flags", Other("websocket.flags")),
    ("websocket.mask", Other("websocket.mask")),
    ("websocket.opcode", Other("websocket.opcode")),
    ("tftp.opcode", Other("tftp.opcode")),
    // ---- Snort 2.9 / Snort 3 only
    ("http_encode", Other("http_encode")),
    ("cvs", Other("cvs")),
    ("sip_method", Other("sip_method")),
    ("sip_stat_code", Other("sip_stat_code")),
    ("gtp_type", Other("gtp_type")),
    ("gtp_info", Other("gtp_info")),
    ("gtp_version", Other("gtp_version")),
    ("modbus_func", Other("modbus_func")),
    ("modbus_unit", Other("modbus_unit")),
    ("modbus_data", Other("modbus_data")),
    ("stream_reassemble", Other("stream_reassemble")),
    ("resp", Other("resp")),
    ("react", Other("react")),
    ("activates", Other("activates")),
    ("activated_by", Other("activated_by")),
    ("count", Other("count")),
    ("sd_pattern", Other("sd_pattern")),
    ("protected_content", Other("protected_content")),
    ("hash", Other("hash")),
    ("length", Other("length")),
    ("file_type", Other("file_type")),
    ("file_group", Other("file_group")),
    ("file_id", Other("file_id")),
    ("appids", Other("appids")),
    ("regex", Other("regex")),
    ("http_version_match", Other("http_version_match")),
    ("http_num_headers", Other("http_num_headers")),
    ("http_num_trailers", Other("http_num_trailers")),
    ("http_num_cookies", Other("http_num_cookies")),
    ("http_max_header_line", Other("http_max_header_line")),
    ("http_max_trailer_line", Other("http_max_trailer_line")),
    ("http_header_test", Other("http_header_test")),
    ("http_trailer_test", Other("http_trailer_test")),
    ("ber_data", Other("ber_data")),
    ("ber_skip", Other("ber_skip")),
    ("so", Other("so")),
    ("md5", Other("md5")),
    ("sha256", Other("sha256")),
    ("sha512", Other("sha512")),
    ("s7commplus_opcode", Other("s7commplus_opcode")),
    ("s7commplus_func", Other("s7commplus_func")),
    ("s7commplus_content", Other("s7commplus_content")),
    ("cip_attribute", Other("cip_attribute")),
    ("cip_class", Other("cip_class")),
    ("cip_conn_path_class", Other("cip_conn_path_class")),
    ("cip_instance", Other("cip_instance")),
    ("cip_req", Other("cip_req")),
    ("cip_rsp", Other("cip_rsp")),
    ("cip_status", Other("cip_status")),
    ("enip_req", Other("enip_req")),
    ("enip_rsp", Other("enip_rsp")),
    ("iec104_apci_type", Other("iec104_apci_type")),
    ("iec104_asdu_func", Other("iec104_asdu_func")),
    ("mms_func", Other("mms_func")),
    ("mms_data", Other("mms_data")),
];

fn table() -> &'static HashMap<&'static str, Kw> {
    static T: OnceLock<HashMap<&'static str, Kw>> = OnceLock::new();
    T.get_or_init(|| TABLE.iter().copied().collect())
}

/// What a canonical keyword name (as found in [`crate::Rule::not_evaluable`])
/// is: `"buffer"` (sticky buffer or content modifier), `"transform"` or
/// `"keyword"`; `None` for names the table does not know.
pub fn keyword_class(canon: &str) -> Option<&'static str> {
    static T: OnceLock<HashMap<&'static str, &'static str>> = OnceLock::new();
    let t = T.get_or_init(|| {
        let mut m = HashMap::default();
        for (_, kw) in TABLE {
            let (c, class) = match kw {
                Sticky(c) | Modifier(c) => (*c, "buffer"),
                Transform(c) => (*c, "transform"),
                Other(c) => (*c, "keyword"),
                Info => continue,
            };
            m.entry(c).or_insert(class);
        }
        m
    });
    t.get(canon).copied()
}

/// Looks a keyword up (exact, lower-case names as Suricata has them).
pub(crate) fn lookup(name: &str) -> Option<Kw> {
    table().get(name).copied()
}

// ---------------------------------------------------------------------
// The keyword registry: every keyword Vigil's parser knows (the option
// keywords `parser.rs` handles itself, and [`TABLE`]) plus the Suricata 9
// keywords it rejects, each with Vigil's status. `vigil rules keywords`
// prints it and docs/keywords.md is generated from it.

/// Vigil's status of a rule keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeywordStatus {
    /// Parsed and evaluated with Suricata's semantics.
    Supported,
    /// Accepted but not evaluated, with the reason. A rule using a keyword
    /// that changes what matches is loaded as not evaluable (skipped);
    /// hints that do not change matches (reason starting with "ignored")
    /// leave the rule loaded.
    Parsed(&'static str),
    /// Not implemented, with the reason. Keywords the parser does not know
    /// are syntax errors; application-protocol keywords the parser knows
    /// make the rule not evaluable.
    Unsupported(&'static str),
}

impl KeywordStatus {
    /// `supported`, `parsed` or `unsupported`.
    pub fn as_str(&self) -> &'static str {
        match self {
            KeywordStatus::Supported => "supported",
            KeywordStatus::Parsed(_) => "parsed",
            KeywordStatus::Unsupported(_) => "unsupported",
        }
    }

    /// The reason (empty for supported keywords).
    pub fn reason(&self) -> &'static str {
        match self {
            KeywordStatus::Supported => "",
            KeywordStatus::Parsed(r) | KeywordStatus::Unsupported(r) => r,
        }
    }
}

/// One keyword of the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeywordInfo {
    /// The name as written in rules.
    pub name: &'static str,
    /// The canonical (Suricata, dotted) name; equal to `name` unless it
    /// is a legacy alias.
    pub canonical: &'static str,
    /// `option` (handled by the parser itself), `buffer` (sticky buffer),
    /// `modifier` (content modifier moving the content into a buffer),
    /// `transform`, `keyword` (recorded, evaluated by detection when
    /// supported), `hint` (accepted and dropped) or `unknown` (rejected
    /// by the parser).
    pub kind: &'static str,
    pub status: KeywordStatus,
}

use KeywordStatus::{Parsed, Supported, Unsupported};

const PROTO_NOT_PARSED: KeywordStatus = Unsupported("protocol not parsed yet");

/// Keywords Suricata 9 can use as a rule's prefilter (its
/// `SupportsPrefilter`, the "prefilter" flag of `--list-keywords=csv`),
/// by canonical name; `prefilter` after any other non-content keyword is
/// an error. `engine-event` is not among them in Suricata either.
pub(crate) const PREFILTER_CAPABLE: &[&str] = &[
    "app-layer-protocol",
    "tcp.ack",
    "tcp.seq",
    "tcp.flags",
    "fragbits",
    "fragoffset",
    "ttl",
    "itype",
    "icode",
    "icmp_id",
    "icmp_seq",
    "igmp.type",
    "sctp.chunk_type",
    "sctp.chunk_cnt",
    "sctp.vtag",
    "dsize",
    "flow",
    "flowbits",
    "id",
    "stream_size",
    "decode-event",
    "flow.age",
    "flow.pkts",
    "flow.pkts_toserver",
    "flow.pkts_toclient",
    "flow.elephant",
    "stream-event",
    "icmpv6.mtu",
    "tcp.mss",
    "tcp.wscale",
    "vlan.id",
    "vlan.layers",
];

/// Option keywords `parser.rs` handles itself (not through [`TABLE`]).
/// A unit test checks this list against the parser's source.
pub(crate) const PARSER_KEYWORDS: &[(&str, KeywordStatus)] = &[
    ("absent", Supported),
    ("replace", Supported),
    ("nfq_set_mark", Supported),
    ("alert", Supported),
    ("base64_data", Supported),
    ("base64_decode", Supported),
    ("ack", Supported),
    ("app-layer-event", Supported),
    ("app-layer-state", Supported),
    ("asn1", Supported),
    ("bsize", Supported),
    ("bufferlen", Supported),
    ("bypass", Supported),
    ("byte_extract", Supported),
    ("byte_jump", Supported),
    ("byte_math", Supported),
    ("byte_test", Supported),
    ("classtype", Supported),
    ("config", Supported),
    ("content", Supported),
    ("datarep", Supported),
    ("dataset", Supported),
    ("decode-event", Supported),
    ("depth", Supported),
    ("detection_filter", Supported),
    ("distance", Supported),
    ("dsize", Supported),
    ("endswith", Supported),
    ("engine-event", Supported),
    ("entropy", Supported),
    ("fast_pattern", Supported),
    ("fileext", Supported),
    ("filename", Supported),
    ("flags", Supported),
    ("flow", Supported),
    ("flow.age", Supported),
    ("flow.bytes", Supported),
    ("flow.bytes_toclient", Supported),
    ("flow.bytes_toserver", Supported),
    ("flow.elephant", Supported),
    ("flow.pkts", Supported),
    ("flow.pkts_toclient", Supported),
    ("flow.pkts_toserver", Supported),
    ("flowbits", Supported),
    ("flowint", Supported),
    ("flowvar", Supported),
    ("fragbits", Supported),
    ("fragoffset", Supported),
    ("frame", Supported),
    ("geoip", Supported),
    ("gid", Supported),
    ("hostbits", Supported),
    ("icmp_id", Supported),
    ("icmp_seq", Supported),
    ("icmpv6.mtu", Supported),
    ("icode", Supported),
    ("icmpv4-csum", Supported),
    ("icmpv6-csum", Supported),
    ("id", Supported),
    ("igmp-csum", Supported),
    ("igmp.type", Supported),
    ("ip_proto", Supported),
    ("ipv4-csum", Supported),
    ("ipopts", Supported),
    ("iprep", Supported),
    ("isdataat", Supported),
    ("itype", Supported),
    ("l3_proto", Supported),
    ("metadata", Supported),
    ("msg", Supported),
    ("noalert", Supported),
    ("nocase", Supported),
    ("offset", Supported),
    ("pcre", Supported),
    ("pktvar", Supported),
    ("prefilter", Supported),
    ("priority", Supported),
    ("rawbytes", Supported),
    ("reference", Supported),
    ("requires", Supported),
    ("rpc", Supported),
    ("rev", Supported),
    ("sameip", Supported),
    ("sctp.chunk_cnt", Supported),
    ("sctp.chunk_type", Supported),
    ("sctp.vtag", Supported),
    ("seq", Supported),
    ("sid", Supported),
    ("startswith", Supported),
    ("stream-event", Supported),
    ("stream_size", Supported),
    ("tag", Supported),
    ("target", Supported),
    ("tcp.ack", Supported),
    ("tcp.flags", Supported),
    ("tcp.mss", Supported),
    ("tcp.seq", Supported),
    ("tcp.session", Supported),
    ("tcp.window", Supported),
    ("tcpv4-csum", Supported),
    ("tcpv6-csum", Supported),
    ("tcp.wscale", Supported),
    ("threshold", Supported),
    ("tos", Supported),
    ("ttl", Supported),
    ("uricontent", Supported),
    ("vlan.id", Supported),
    ("vlan.layers", Supported),
    ("udpv4-csum", Supported),
    ("udpv6-csum", Supported),
    ("urilen", Supported),
    ("window", Supported),
    ("within", Supported),
    ("xbits", Supported),
];

/// Suricata 9 keywords the parser rejects as unknown.
const UNKNOWN_KEYWORDS: &[(&str, KeywordStatus)] = &[
    ("sdp.attribute", PROTO_NOT_PARSED),
    ("sdp.bandwidth", PROTO_NOT_PARSED),
    ("sdp.connection_data", PROTO_NOT_PARSED),
    ("sdp.email", PROTO_NOT_PARSED),
    ("sdp.encryption_key", PROTO_NOT_PARSED),
    ("sdp.media.connection_data", PROTO_NOT_PARSED),
    ("sdp.media.encryption_key", PROTO_NOT_PARSED),
    ("sdp.media.media", PROTO_NOT_PARSED),
    ("sdp.media.media_info", PROTO_NOT_PARSED),
    ("sdp.origin", PROTO_NOT_PARSED),
    ("sdp.phone_number", PROTO_NOT_PARSED),
    ("sdp.repeat_time", PROTO_NOT_PARSED),
    ("sdp.session_info", PROTO_NOT_PARSED),
    ("sdp.session_name", PROTO_NOT_PARSED),
    ("sdp.time", PROTO_NOT_PARSED),
    ("sdp.timezone", PROTO_NOT_PARSED),
    ("sdp.uri", PROTO_NOT_PARSED),
];

/// Canonical names of [`TABLE`] entries that detection evaluates. A test
/// in crates/detect checks this list against detection.
const EVALUATED: &[&str] = &[
    // files (docs/ARCHITECTURE.md, file tracking)
    "filemagic",
    "filestore",
    "filemd5",
    "filesha1",
    "filesha256",
    "filesize",
    // SSH identification strings
    "ssh.proto",
    "ssh.software",
    // FTP control channel
    "ftp.command",
    "ftp.command_data",
    "ftp.reply",
    "ftp.completion_code",
    "ftp.dynamic_port",
    "ftp.mode",
    "ftp.reply_received",
    "ftpbounce",
    // FTP data connections
    "ftpdata_command",
    // SMB
    "smb.version",
    "smb.share",
    "smb.named_pipe",
    "smb.ntlmssp_user",
    "smb.ntlmssp_domain",
    // SIP
    "sip.method",
    "sip.uri",
    "sip.protocol",
    "sip.stat_code",
    "sip.stat_msg",
    "sip.request_line",
    "sip.response_line",
    "sip.from",
    "sip.to",
    "sip.via",
    "sip.user_agent",
    "sip.content_type",
    "sip.content_length",
    // HTTP/2
    "http2.header_name",
    "http2.header",
    "http2.frametype",
    "http2.errorcode",
    "http2.priority",
    "http2.window",
    "http2.size_update",
    "http2.settings",
    // SMTP
    "smtp.helo",
    "smtp.mail_from",
    "smtp.rcpt_to",
    "email.from",
    "email.subject",
    "email.to",
    "email.cc",
    "email.date",
    "email.message_id",
    "email.x_mailer",
    "email.url",
    "email.received",
    "email.body_md5",
    // MQTT
    "mqtt.type",
    "mqtt.flags",
    "mqtt.qos",
    "mqtt.reason_code",
    "mqtt.connack.session_present",
    "mqtt.protocol_version",
    "mqtt.connect.flags",
    "mqtt.connect.clientid",
    "mqtt.connect.username",
    "mqtt.connect.password",
    "mqtt.connect.willtopic",
    "mqtt.connect.willmessage",
    "mqtt.connect.protocol_string",
    "mqtt.publish.topic",
    "mqtt.publish.message",
    "mqtt.subscribe.topic",
    "mqtt.unsubscribe.topic",
    // mDNS and LLMNR
    "mdns.queries.rrname",
    "mdns.answers.rrname",
    "mdns.authorities.rrname",
    "mdns.additionals.rrname",
    "mdns.response.rrname",
    "llmnr.queries.rrname",
    "llmnr.answers.rrname",
    "llmnr.authorities.rrname",
    "llmnr.additionals.rrname",
    "llmnr.response.rrname",
    // NTP
    "ntp.reference_id",
    "ntp.version",
    "ntp.mode",
    "ntp.stratum",
    // NFS
    "nfs_procedure",
    "nfs.version",
    // RFB
    "rfb.name",
    "rfb.sectype",
    "rfb.secresult",
    // DHCP
    "dhcp.leasetime",
    "dhcp.rebinding_time",
    "dhcp.renewal_time",
    "dhcp.vendor_class_id",
    // Kerberos 5
    "krb5.cname",
    "krb5.sname",
    "krb5.msg_type",
    "krb5.err_code",
    "krb5.ticket_encryption",
    "krb5.weak_encryption",
    // SNMP
    "snmp.community",
    "snmp.usm",
    "snmp.trap_oid",
    "snmp.trap_address",
    "snmp.version",
    "snmp.pdu_type",
    "snmp.trap_type",
    // IKE
    "ike.init_spi",
    "ike.resp_spi",
    "ike.vendor",
    "ike.key_exchange_payload",
    "ike.nonce_payload",
    "ike.exchtype",
    "ike.chosen_sa_attribute",
    "ike.key_exchange_payload_length",
    "ike.nonce_payload_length",
    // ENIP/CIP
    "enip.command",
    "cip.service",
    "enip.status",
    "enip.protocol_version",
    "enip.cip_attribute",
    "enip.cip_instance",
    "enip.cip_class",
    "enip.cip_extendedstatus",
    "enip.cip_status",
    "enip.revision",
    "enip.identity_status",
    "enip.state",
    "enip.serial",
    "enip.product_code",
    "enip.device_type",
    "enip.vendor_id",
    "enip.capabilities",
    "enip.product_name",
    "enip.service_name",
    // Modbus
    "modbus",
    // DNP3
    "dnp3.func",
    "dnp3.ind",
    "dnp3.obj",
    "dnp3.data",
    // QUIC
    "quic.sni",
    "quic.ua",
    "quic.version",
    "quic.cyu.hash",
    "quic.cyu.string",
    // LDAP
    "ldap.request.operation",
    "ldap.responses.operation",
    "ldap.responses.count",
    "ldap.request.dn",
    "ldap.responses.dn",
    "ldap.responses.result_code",
    "ldap.responses.message",
    "ldap.request.attribute_type",
    "ldap.responses.attribute_type",
    // packet and header buffers
    "pkt_data",
    "ipv4.hdr",
    "ipv6.hdr",
    "tcp.hdr",
    "udp.hdr",
    "icmpv4.hdr",
    "icmpv6.hdr",
    "sctp.hdr",
    "sctp.chunk_data",
    "ether.hdr",
    "ip.src",
    "ip.dst",
    "igmp.hdr",
    // HTTP
    "http.uri",
    "http.uri.raw",
    "http.method",
    "http.request_line",
    "http.request_body",
    "http.response_body",
    "http.header",
    "http.header.raw",
    "http.cookie",
    "http.user_agent",
    "http.host",
    "http.host.raw",
    "http.stat_code",
    "http.stat_msg",
    "http.response_line",
    "http.protocol",
    "http.start",
    "http.header_names",
    "http.accept",
    "http.accept_enc",
    "http.accept_lang",
    "http.connection",
    "http.content_len",
    "http.content_type",
    "http.location",
    "http.referer",
    "http.server",
    "http.request_header",
    "http.response_header",
    "file.data",
    "file.name",
    // DNS
    "dns.query",
    "dns.queries.rrname",
    "dns.answers.rrname",
    "dns.response.rrname",
    "dns.opcode",
    "dns.rcode",
    "dns.rrtype",
    // TLS
    "tls.sni",
    "tls.cert_subject",
    "tls.cert_issuer",
    "tls.cert_serial",
    "tls.cert_fingerprint",
    "tls.certs",
    "tls.random",
    "tls.random_time",
    "tls.random_bytes",
    "tls.subject",
    "tls.issuerdn",
    "tls.version",
    "tls.fingerprint",
    "ssl_version",
    "ja3.hash",
    "ja3.string",
    "ja3s.hash",
    "ja3s.string",
    "ja4.hash",
    "app-layer-protocol",
    // DCERPC
    "dcerpc.iface",
    "dcerpc.opnum",
    "dcerpc.stub_data",
    // transforms
    "dotprefix",
    "domain",
    "tld",
    "strip_whitespace",
    "compress_whitespace",
    "to_lowercase",
    "to_uppercase",
    "url_decode",
    "to_md5",
    "to_sha1",
    "to_sha256",
    "xor",
    "from_base64",
    "header_lowercase",
    "strip_pseudo_headers",
    "pcrexform",
    "subslice",
    "gunzip",
    "zlib_deflate",
    // WebSocket
    "websocket.payload",
    "websocket.opcode",
    "websocket.mask",
    "websocket.flags",
    // PostgreSQL
    "pgsql.query",
];

/// Why a [`TABLE`] keyword that is neither evaluated nor an application
/// protocol's is only parsed.
const PARSED_REASONS: &[(&str, &str)] = &[
    ("rem", "ignored: a comment"),
    (
        "service",
        "ignored: Snort 3 service hint; the rule header's protocol is used",
    ),
    ("logto", "ignored: alerts go to the configured outputs"),
    (
        "session",
        "ignored: Snort session logging is not implemented",
    ),
    ("file_meta", "ignored: Snort 3 file metadata"),
    ("lua", "Lua scripting is not available"),
    ("luajit", "Lua scripting is not available"),
    ("luaxform", "Lua scripting is not available"),
    ("casechange", "transform not implemented yet"),
    (
        "file.magic",
        "the file.magic buffer is not provided (filemagic is evaluated)",
    ),
    // POP3 is parsed; these buffers are not Suricata 9's (its POP3
    // parser registers no keyword) and are not provided.
    (
        "pop3.command",
        "POP3 is parsed; this buffer is not provided yet",
    ),
    (
        "pop3.args",
        "POP3 is parsed; this buffer is not provided yet",
    ),
    (
        "pop3.response",
        "POP3 is parsed; this buffer is not provided yet",
    ),
];

/// Canonical-name prefixes of application protocols Vigil does not parse
/// yet (HTTP/1, TLS and DNS are parsed).
const UNPARSED_PROTO_PREFIXES: &[&str] = &[
    "smb.",
    "dcerpc.",
    "ftp",
    "ssh",
    "quic.",
    "sip",
    "krb5",
    "ike.",
    "mqtt.",
    "snmp.",
    "rfb.",
    "nfs",
    "dhcp.",
    "ldap.",
    "websocket.",
    "pop3.",
    "imap.",
    "http2.",
    "dnp3",
    "modbus",
    "enip",
    "cip",
    "mdns.",
    "llmnr.",
    "sdp.",
    "ntp.",
    "pgsql.",
    "tftp.",
    "gtp_",
    "s7commplus",
    "iec104",
    "mms_",
    "ber_",
    "dce_",
];

/// Snort-only keywords whose feature Vigil does not have.
fn snort_reason(canon: &str) -> Option<&'static str> {
    Some(match canon {
        "http_raw_body"
        | "http_true_ip"
        | "http_param"
        | "http_trailer"
        | "http_raw_trailer"
        | "http_encode"
        | "http_version_match"
        | "http_num_headers"
        | "http_num_trailers"
        | "http_num_cookies"
        | "http_max_header_line"
        | "http_max_trailer_line"
        | "http_header_test"
        | "http_trailer_test" => "Snort 3 HTTP inspector field not provided",
        "js_data" => "Snort 3 JavaScript normalisation not implemented",
        "vba_data" => "Snort 3 VBA macro extraction not implemented",
        "sd_pattern" | "protected_content" | "hash" | "md5" | "sha256" | "sha512" => {
            "Snort-only pattern keyword not implemented"
        }
        "resp" | "react" => "active responses not implemented",
        "tls.store" => "certificate store not implemented",
        "cvs" | "stream_reassemble" | "activates" | "activated_by" | "count" | "length"
        | "regex" | "so" | "appids" | "file_type" | "file_group" | "file_id" => {
            "Snort-only keyword not implemented"
        }
        _ => return None,
    })
}

fn table_status(canon: &str) -> KeywordStatus {
    if EVALUATED.contains(&canon) {
        return Supported;
    }
    if let Some((_, r)) = PARSED_REASONS.iter().find(|(k, _)| *k == canon) {
        return Parsed(r);
    }
    if UNPARSED_PROTO_PREFIXES.iter().any(|p| canon.starts_with(p)) {
        return PROTO_NOT_PARSED;
    }
    if let Some(r) = snort_reason(canon) {
        return Parsed(r);
    }
    if canon.starts_with("http.") || canon.starts_with("http_") {
        return Parsed("the HTTP parser does not provide this field yet");
    }
    if canon.starts_with("dns.") {
        return Parsed("the DNS parser does not provide this field yet");
    }
    if canon.starts_with("tls") || canon.starts_with("ja3") || canon.starts_with("ja4") {
        return Parsed("the TLS parser does not provide this field yet");
    }
    Parsed("not evaluated yet")
}

/// Every keyword Vigil knows, and the Suricata 9 keywords it does not,
/// sorted by name.
pub fn keyword_registry() -> Vec<KeywordInfo> {
    let mut out: Vec<KeywordInfo> = Vec::with_capacity(TABLE.len() + PARSER_KEYWORDS.len());
    for (name, status) in PARSER_KEYWORDS {
        out.push(KeywordInfo {
            name,
            canonical: match *name {
                "flags" => "tcp.flags",
                "seq" => "tcp.seq",
                "ack" => "tcp.ack",
                "window" => "tcp.window",
                n => n,
            },
            kind: "option",
            status: *status,
        });
    }
    // Entries the parser handles before the table (`bypass`, `config`)
    // are listed once, as options.
    for (name, kw) in TABLE
        .iter()
        .filter(|(n, _)| !PARSER_KEYWORDS.iter().any(|(p, _)| p == n))
    {
        let (canonical, kind) = match kw {
            Sticky(c) => (*c, "buffer"),
            Modifier(c) => (*c, "modifier"),
            Transform(c) => (*c, "transform"),
            Other(c) => (*c, "keyword"),
            Info => (*name, "hint"),
        };
        out.push(KeywordInfo {
            name,
            canonical,
            kind,
            status: table_status(canonical),
        });
    }
    for (name, status) in UNKNOWN_KEYWORDS {
        out.push(KeywordInfo {
            name,
            canonical: name,
            kind: "unknown",
            status: *status,
        });
    }
    out.sort_by(|a, b| a.name.cmp(b.name));
    out
}

/// What is deliberately left out, and why (part of docs/keywords.md).
const LEFT_OUT: &str = "\
## Deliberately left out

- **Application protocols Vigil does not parse yet** (SMB, DCERPC, FTP, SSH,
  IMAP/POP3, QUIC, SIP/SDP, Kerberos, IKE, MQTT, SNMP, RFB, NFS,
  DHCP, WebSocket, HTTP/2, NTP, PostgreSQL, DNP3, Modbus, ENIP/CIP,
  mDNS/LLMNR, TFTP): their keywords are `unsupported` with \"protocol not
  parsed yet\". The parser accepts those it knows, so such rules load as
  *not evaluable* rather than failing; they become evaluable as the
  protocol parsers land (a separate issue).
- **Lua** (`lua`, `luajit`, `luaxform`): no Lua runtime is embedded; rules
  would run arbitrary scripts in the packet path.
- **Files**: the `file.magic` sticky buffer (the legacy `filemagic`
  keyword is evaluated).
- **Active responses**: `resp`, `react`; in IPS mode Vigil drops,
  rejects, (`replace`) rewrites payload bytes or (`nfq_set_mark`, NFQUEUE
  only) sets the accepted packet's netfilter mark.
- **Firewall mode** (rule hooks, the `accept` action's scopes, the
  `config` tracking setting): Suricata 8/9's firewall tables are not
  implemented; `accept` loads as `pass`. The keywords firewall rules use
  are supported in detection: `tcp.session`, and `alert` (which makes a
  `pass` rule, or an `accept` rule loaded as one, alert as well).
- **Snort-only keywords** (Snort 3 inspector fields such as
  `http_param`, `js_data`, `vba_data`, `sd_pattern`, `so`, ...): parsed so
  that Snort rule files load, not evaluated.
";

/// The registry as a Markdown document (docs/keywords.md).
pub fn keywords_markdown() -> String {
    use std::fmt::Write;
    let reg = keyword_registry();
    let count = |s: &str| reg.iter().filter(|k| k.status.as_str() == s).count();
    let mut o = String::new();
    o.push_str("# Rule keywords\n\n");
    o.push_str(
        "Generated by `vigil rules keywords` from the parser's keyword registry \
         (crates/rules/src/keywords.rs); do not edit by hand. A test checks that \
         this file equals the command's output and that every keyword of \
         Suricata 9 is listed.\n\n",
    );
    o.push_str(
        "- `supported`: parsed and evaluated with Suricata's semantics.\n\
         - `parsed`: accepted but not evaluated, for the reason given. Rules using \
         a keyword that changes what matches are loaded as *not evaluable* and \
         skipped (`vigil rules check` lists them); hints whose reason starts with \
         \"ignored\" leave the rule loaded.\n\
         - `unsupported`: not implemented. Keywords of kind `unknown` are syntax \
         errors; application-protocol keywords the parser knows make the rule not \
         evaluable (\"protocol not parsed yet\").\n\n",
    );
    let _ = writeln!(
        o,
        "{} keywords: {} supported, {} parsed, {} unsupported.\n",
        reg.len(),
        count("supported"),
        count("parsed"),
        count("unsupported")
    );
    o.push_str(LEFT_OUT);
    o.push_str("\n## All keywords\n\n");
    o.push_str("| keyword | canonical | kind | status | reason |\n");
    o.push_str("|---|---|---|---|---|\n");
    for k in &reg {
        let canon = if k.canonical == k.name {
            String::new()
        } else {
            format!("`{}`", k.canonical)
        };
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} |",
            k.name,
            canon,
            k.kind,
            k.status.as_str(),
            k.status.reason()
        );
    }
    o
}

/// Application protocols accepted in a rule header.
pub(crate) const APP_PROTOS: &[&str] = &[
    "http",
    "http1",
    "http2",
    "ftp",
    "ftp-data",
    "smtp",
    "tls",
    "ssl",
    "ssh",
    "imap",
    "pop3",
    "smb",
    "dcerpc",
    "dns",
    "dnp3",
    "modbus",
    "enip",
    "cip",
    "nfs",
    "ntp",
    "tftp",
    "ike",
    "ikev2",
    "krb5",
    "dhcp",
    "snmp",
    "sip",
    "rfb",
    "mqtt",
    "rdp",
    "pgsql",
    "telnet",
    "quic",
    "bittorrent-dht",
    "ldap",
    "websocket",
    "doh2",
    "mdns",
    "llmnr",
    "netbios",
    "netbios-ssn",
    "sunrpc",
    "file",
    "pop",
    "irc",
    "jabber",
    "sftp",
    "gtp",
    "s7commplus",
    "iec104",
    "mms",
    "opcua",
    "dce_http_proxy",
    "dce_http_server",
    "dce_smb",
    "dce_tcp",
    "dce_udp",
    "ssl-tls",
    "pop3s",
    // Suricata 9 link-layer pseudo protocols.
    "arp",
    "ether",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The option keywords of `Parser::option`'s match, read from the
    /// parser's source: the arms are the lines indented by 12 spaces.
    fn parser_arms() -> std::collections::BTreeSet<String> {
        let src = include_str!("parser.rs");
        let start = src
            .find("fn option(&mut self")
            .expect("Parser::option in parser.rs");
        let end = start
            + src[start..]
                .find("_ => self.table_keyword(")
                .expect("fallback arm of Parser::option");
        let mut out = std::collections::BTreeSet::new();
        for line in src[start..end].lines() {
            let Some(rest) = line.strip_prefix("            ") else {
                continue;
            };
            if !(rest.starts_with('"') || rest.starts_with("| \"")) {
                continue;
            }
            let pat = rest.split("=>").next().unwrap_or("");
            for (i, part) in pat.split('"').enumerate() {
                if i % 2 == 1 {
                    out.insert(part.to_string());
                }
            }
        }
        out
    }

    #[test]
    fn parser_keywords_list_matches_the_parser() {
        let arms = parser_arms();
        let listed: std::collections::BTreeSet<String> =
            PARSER_KEYWORDS.iter().map(|(k, _)| k.to_string()).collect();
        assert_eq!(
            arms, listed,
            "PARSER_KEYWORDS must list exactly the keywords Parser::option handles"
        );
    }

    #[test]
    fn registry_names_are_unique_and_classified() {
        let reg = keyword_registry();
        let mut seen = std::collections::HashSet::new();
        for k in &reg {
            assert!(seen.insert(k.name), "keyword {} listed twice", k.name);
            if k.status != KeywordStatus::Supported {
                assert!(!k.status.reason().is_empty(), "{} has no reason", k.name);
            }
        }
        // Every evaluated or explained canonical name exists in the table.
        for c in EVALUATED {
            assert!(
                TABLE.iter().any(|(_, kw)| matches!(kw,
                    Sticky(x) | Modifier(x) | Transform(x) | Other(x) if x == c)),
                "EVALUATED names {c}, which the table does not have"
            );
        }
        for (c, _) in PARSED_REASONS {
            assert!(
                reg.iter().any(|k| k.canonical == *c),
                "PARSED_REASONS names {c}, which the registry does not have"
            );
        }
        for (k, _) in UNKNOWN_KEYWORDS {
            assert!(
                lookup(k).is_none() && !PARSER_KEYWORDS.iter().any(|(p, _)| p == k),
                "{k} is known to the parser but listed as unknown"
            );
        }
    }

    #[test]
    fn the_parser_knows_exactly_the_known_keywords() {
        use crate::{parse_rule, Origin, RuleErrorKind, Vars};
        let vars = Vars::default();
        for k in keyword_registry() {
            let text = format!(
                "alert tcp any any -> any any (content:\"a\"; {}; sid:1;)",
                k.name
            );
            let unknown = matches!(
                parse_rule(&text, &vars, Origin::default()),
                Err(e) if e.kind == RuleErrorKind::UnknownKeyword
                    && e.keyword.as_deref() == Some(k.name)
            );
            assert_eq!(
                unknown,
                k.kind == "unknown",
                "{}: the parser {} it",
                k.name,
                if unknown { "rejects" } else { "accepts" }
            );
        }
    }

    #[test]
    fn table_has_no_duplicates() {
        let mut seen = std::collections::HashSet::new();
        for (k, _) in TABLE {
            assert!(seen.insert(*k), "duplicate keyword {k}");
        }
    }
}
