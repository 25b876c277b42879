//! Exception policies (Suricata's `exception-policy` and its per-case
//! settings): what happens to a packet, or to its whole flow, when Vigil
//! would lose sight of it — a memory cap reached, a TCP session picked up
//! without its handshake, an application-layer parser that cannot go on.
//! Inline, failing closed (dropping) keeps an attacker from slipping
//! data past the sensor by exhausting it; failing open (passing) keeps
//! the link up.

use std::fmt;

/// One policy value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExceptionPolicy {
    /// Nothing is done (the default in IDS mode).
    #[default]
    Ignore,
    /// Drop this packet.
    DropPacket,
    /// Drop this packet and every later packet of its flow, which is not
    /// inspected any more.
    DropFlow,
    /// As `DropFlow`, and answer the sender (TCP reset or ICMP
    /// unreachable), as the `reject` action.
    Reject,
    /// No more inspection, reassembly or parsing of the flow; its packets
    /// are accepted.
    Bypass,
    /// Skip detection on this packet (stream and app layer still update).
    PassPacket,
    /// No more detection on the flow; reassembly, parsing and
    /// transaction logging go on.
    PassFlow,
}

impl ExceptionPolicy {
    /// Suricata's names; `auto` is resolved by [`ExceptionPolicies::resolve`].
    pub fn from_name(s: &str) -> Option<ExceptionPolicy> {
        Some(match s {
            "ignore" => ExceptionPolicy::Ignore,
            "drop-packet" => ExceptionPolicy::DropPacket,
            "drop-flow" => ExceptionPolicy::DropFlow,
            "reject" => ExceptionPolicy::Reject,
            "bypass" => ExceptionPolicy::Bypass,
            "pass-packet" => ExceptionPolicy::PassPacket,
            "pass-flow" => ExceptionPolicy::PassFlow,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            ExceptionPolicy::Ignore => "ignore",
            ExceptionPolicy::DropPacket => "drop-packet",
            ExceptionPolicy::DropFlow => "drop-flow",
            ExceptionPolicy::Reject => "reject",
            ExceptionPolicy::Bypass => "bypass",
            ExceptionPolicy::PassPacket => "pass-packet",
            ExceptionPolicy::PassFlow => "pass-flow",
        }
    }

    /// The stats key of the policy (`drop_flow` ...).
    pub fn counter(self) -> &'static str {
        match self {
            ExceptionPolicy::Ignore => "ignore",
            ExceptionPolicy::DropPacket => "drop_packet",
            ExceptionPolicy::DropFlow => "drop_flow",
            ExceptionPolicy::Reject => "reject",
            ExceptionPolicy::Bypass => "bypass",
            ExceptionPolicy::PassPacket => "pass_packet",
            ExceptionPolicy::PassFlow => "pass_flow",
        }
    }

    fn drops(self) -> bool {
        matches!(
            self,
            ExceptionPolicy::DropPacket | ExceptionPolicy::DropFlow | ExceptionPolicy::Reject
        )
    }
}

impl fmt::Display for ExceptionPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The conditions a policy is set for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExceptionCase {
    /// `stream.reassembly.memcap-policy`: a segment did not fit in the
    /// worker's reassembly memory.
    StreamReassemblyMemcap,
    /// `stream.midstream-policy`: a TCP session's first packet is not a
    /// SYN (Vigil picks the session up only with `stream.midstream: yes`).
    Midstream,
    /// `defrag.memcap-policy`: a fragment could not be kept within
    /// `defrag.memcap`.
    DefragMemcap,
    /// `app-layer.error-policy`: a parser met data it cannot go on from.
    AppLayerError,
}

impl ExceptionCase {
    pub const ALL: [ExceptionCase; 4] = [
        ExceptionCase::StreamReassemblyMemcap,
        ExceptionCase::Midstream,
        ExceptionCase::DefragMemcap,
        ExceptionCase::AppLayerError,
    ];

    /// The config key (Suricata's).
    pub fn config_key(self) -> &'static str {
        match self {
            ExceptionCase::StreamReassemblyMemcap => "stream.reassembly.memcap-policy",
            ExceptionCase::Midstream => "stream.midstream-policy",
            ExceptionCase::DefragMemcap => "defrag.memcap-policy",
            ExceptionCase::AppLayerError => "app-layer.error-policy",
        }
    }

    /// The stats key under `exception_policy` (Suricata's).
    pub fn counter(self) -> &'static str {
        match self {
            ExceptionCase::StreamReassemblyMemcap => "tcp.reassembly",
            ExceptionCase::Midstream => "tcp.midstream",
            ExceptionCase::DefragMemcap => "defrag.memcap",
            ExceptionCase::AppLayerError => "app_layer.error",
        }
    }

    /// The drop reason under `ips.drop_reason` (Suricata's).
    pub fn drop_reason(self) -> &'static str {
        match self {
            ExceptionCase::StreamReassemblyMemcap => "stream_reassembly",
            ExceptionCase::Midstream => "stream_midstream",
            ExceptionCase::DefragMemcap => "defrag_memcap",
            ExceptionCase::AppLayerError => "applayer_error",
        }
    }

    /// The drop reason as a `drop` record says it (Suricata's).
    pub fn drop_reason_text(self) -> &'static str {
        match self {
            ExceptionCase::StreamReassemblyMemcap => "stream reassembly",
            ExceptionCase::Midstream => "stream midstream",
            ExceptionCase::DefragMemcap => "defrag memcap",
            ExceptionCase::AppLayerError => "applayer error",
        }
    }

    /// Whether the case is about a whole flow (its policy cannot be a
    /// packet one) or a packet without a flow (it cannot be a flow one).
    fn scope(self) -> Scope {
        match self {
            ExceptionCase::Midstream => Scope::Flow,
            ExceptionCase::DefragMemcap => Scope::Packet,
            _ => Scope::Both,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Flow,
    Packet,
    Both,
}

/// The policy of each case, resolved for the mode Vigil runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExceptionPolicies {
    by_case: [ExceptionPolicy; 4],
}

impl ExceptionPolicies {
    pub fn get(&self, case: ExceptionCase) -> ExceptionPolicy {
        self.by_case[case.index()]
    }

    /// Resolves the settings: `master` is `exception-policy` (`auto` when
    /// absent), `per_case` the values of the per-case keys that are set.
    /// `auto`: inline, fail closed (drop-flow, drop-packet where only the
    /// packet can be acted on; the midstream case ignores when
    /// `stream.midstream` picks such sessions up); IDS, ignore. In IDS
    /// mode a drop or reject policy cannot drop and is taken as ignore, as
    /// in Suricata. An invalid name or a policy the case cannot apply is
    /// an error naming the key.
    pub fn resolve(
        master: Option<&str>,
        per_case: &[(ExceptionCase, &str)],
        inline: bool,
        midstream: bool,
    ) -> Result<ExceptionPolicies, String> {
        let parse = |key: &str, v: &str| -> Result<Option<ExceptionPolicy>, String> {
            let v = v.trim();
            if v == "auto" {
                return Ok(None);
            }
            ExceptionPolicy::from_name(v).map(Some).ok_or_else(|| {
                format!(
                    "{key}: '{v}' is not an exception policy (auto, drop-packet, drop-flow, reject, bypass, pass-packet, pass-flow, ignore)"
                )
            })
        };
        let master = match master {
            Some(v) => parse("exception-policy", v)?,
            None => None,
        };
        let mut out = ExceptionPolicies::default();
        for case in ExceptionCase::ALL {
            let set = per_case
                .iter()
                .rev()
                .find(|(c, _)| *c == case)
                .map(|(_, v)| parse(case.config_key(), v))
                .transpose()?
                .flatten();
            let explicit = set.is_some();
            let p = match set.or(master) {
                Some(p) => p,
                None if !inline => ExceptionPolicy::Ignore,
                None => match case {
                    ExceptionCase::Midstream if midstream => ExceptionPolicy::Ignore,
                    _ => ExceptionPolicy::DropFlow,
                },
            };
            // Fit the policy to what the case can act on: a master value
            // is adapted (Suricata falls back to drop-packet where a flow
            // cannot be dropped), a per-case value that cannot apply is
            // an error.
            let p = match (case.scope(), p) {
                (Scope::Packet, ExceptionPolicy::DropFlow) if !explicit => {
                    ExceptionPolicy::DropPacket
                }
                (Scope::Packet, ExceptionPolicy::Bypass | ExceptionPolicy::PassFlow)
                    if !explicit =>
                {
                    ExceptionPolicy::PassPacket
                }
                (
                    Scope::Packet,
                    ExceptionPolicy::DropFlow | ExceptionPolicy::Bypass | ExceptionPolicy::PassFlow,
                ) => {
                    return Err(format!(
                        "{}: '{p}' acts on a flow; this case has only a packet (drop-packet, pass-packet, reject or ignore)",
                        case.config_key()
                    ))
                }
                (Scope::Flow, ExceptionPolicy::DropPacket | ExceptionPolicy::PassPacket)
                    if !explicit =>
                {
                    if p == ExceptionPolicy::DropPacket {
                        ExceptionPolicy::DropFlow
                    } else {
                        ExceptionPolicy::PassFlow
                    }
                }
                (Scope::Flow, ExceptionPolicy::DropPacket | ExceptionPolicy::PassPacket) => {
                    return Err(format!(
                        "{}: '{p}' acts on one packet; this case is about a whole flow (drop-flow, reject, bypass, pass-flow or ignore)",
                        case.config_key()
                    ))
                }
                (_, p) => p,
            };
            out.by_case[case.index()] = if !inline && p.drops() {
                ExceptionPolicy::Ignore
            } else {
                p
            };
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(p: &ExceptionPolicies) -> Vec<ExceptionPolicy> {
        ExceptionCase::ALL.iter().map(|c| p.get(*c)).collect()
    }

    #[test]
    fn auto_fails_closed_inline_and_ignores_in_ids_mode() {
        use ExceptionPolicy::*;
        let ips = ExceptionPolicies::resolve(None, &[], true, false).unwrap();
        assert_eq!(all(&ips), vec![DropFlow, DropFlow, DropPacket, DropFlow]);
        // Midstream pick-up on: those sessions are expected.
        let ips = ExceptionPolicies::resolve(Some("auto"), &[], true, true).unwrap();
        assert_eq!(ips.get(ExceptionCase::Midstream), Ignore);
        let ids = ExceptionPolicies::resolve(None, &[], false, false).unwrap();
        assert_eq!(all(&ids), vec![Ignore; 4]);
    }

    #[test]
    fn the_master_switch_is_adapted_and_per_case_values_win() {
        use ExceptionPolicy::*;
        let p = ExceptionPolicies::resolve(
            Some("pass-packet"),
            &[(ExceptionCase::AppLayerError, "bypass")],
            true,
            false,
        )
        .unwrap();
        assert_eq!(all(&p), vec![PassPacket, PassFlow, PassPacket, Bypass]);
        // IDS mode: a drop policy cannot drop; pass policies still apply.
        let p = ExceptionPolicies::resolve(
            Some("drop-flow"),
            &[(ExceptionCase::Midstream, "pass-flow")],
            false,
            false,
        )
        .unwrap();
        assert_eq!(all(&p), vec![Ignore, PassFlow, Ignore, Ignore]);
    }

    #[test]
    fn bad_values_are_errors_naming_the_key() {
        let e = ExceptionPolicies::resolve(Some("drop-everything"), &[], true, false).unwrap_err();
        assert!(e.starts_with("exception-policy: 'drop-everything'"), "{e}");
        let e = ExceptionPolicies::resolve(
            None,
            &[(ExceptionCase::DefragMemcap, "drop-flow")],
            true,
            false,
        )
        .unwrap_err();
        assert!(e.starts_with("defrag.memcap-policy: 'drop-flow'"), "{e}");
        let e = ExceptionPolicies::resolve(
            None,
            &[(ExceptionCase::Midstream, "pass-packet")],
            true,
            false,
        )
        .unwrap_err();
        assert!(
            e.starts_with("stream.midstream-policy: 'pass-packet'"),
            "{e}"
        );
    }
}
