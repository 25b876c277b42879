//! vigil-output: Suricata-compatible outputs.
//!
//! - [`EveWriter`] / [`EveFormatter`]: EVE JSON `alert` and `stats` records,
//!   one object per line, with the fields in the order Suricata 8 writes
//!   them (`timestamp, flow_id, pcap_cnt, event_type, vlan, src_ip, src_port,
//!   dest_ip, dest_port, proto, ip_v, icmp_type, icmp_code, pkt_src, tx_id,
//!   alert{...}, app_proto, direction, flow{...}, payload, payload_length,
//!   payload_printable, stream, packet, packet_info`).
//! - [`FastLogWriter`] / [`format_fast_alert`]: fast.log lines.
//! - [`StatsTree`]: nested counters for EVE `stats` and [`write_stats_log`].
//! - [`RedisWriter`]: EVE records to Redis (eve-log `filetype: redis`)
//!   through a bounded queue and a writer thread that reconnects.
//!
//! Output is repeatable: times are the packet's, always printed in UTC
//! (`+0000`), and nothing reads the wall clock or the local time zone, so
//! the same alerts give the same bytes on every run and machine.
//!
//! What this crate does not do: decide anything. Alerts arrive fully
//! resolved ([`AlertEvent`]); ordering alerts across workers, choosing which
//! payload to log and naming app-layer protocols belong to the engine.
//! Application-layer objects (`http`, `tls`, ...) are not written yet.

mod alert;
mod eve;
mod fast;
mod proto;
mod redis_out;
mod stats;
mod time;

pub use alert::{write_ip, AlertEvent, AlertTarget, FlowInfo, FrameEvent, TunnelEvent, VarsEvent};
pub use eve::{printable_payload, EveConfig, EveFormatter, EveWriter};
pub use fast::{format_fast_alert, FastLogWriter};
pub use proto::{linktype_name, proto_name};
pub use redis_out::{redis_connection, RedisCounts, RedisMode, RedisSettings, RedisWriter};
pub use stats::{
    write_stats_log, write_stats_log_with, StatsError, StatsLogOptions, StatsNode, StatsTree,
};
pub use time::{civil_from_days, iso8601, write_fastlog_time, write_iso8601, UtcTime};
