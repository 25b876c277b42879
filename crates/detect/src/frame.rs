//! Rules on application-layer frames (`frame:<proto>.<name>`): a sticky
//! buffer over each frame of that type (see `vigil_applayer::frames`).
//!
//! The worker hands every frame of a flow's direction, once complete, to
//! [`DetectEngine::inspect_frame`] on a packet of that direction; each
//! frame rule of the flow's protocol and the frame's type runs its header,
//! flow and flowbit tests on that packet and its program on the frame's
//! bytes. A rule alerts once per frame it matches.

use vigil_applayer::frames::{Frame, FrameProto};
use vigil_applayer::transforms::Transform;
use vigil_applayer::AppProto;
use vigil_rules::frames::FrameRef;
use vigil_rules::Buffer;

use crate::inspect::{
    conclude, packet_checks, store_captures, var_tests_match, DetectScratch, FlowDetectState, Hit,
    PacketInput, Verdict,
};
use crate::payload::CompiledPayload;
use crate::DetectEngine;

/// What a frame rule inspects.
#[derive(Debug)]
pub struct FrameSpec {
    /// Suricata's protocol name in frame names (`tls`, `http1` ...).
    pub proto: &'static str,
    /// The frame type (`pdu`, `nbss.hdr` ...).
    pub name: &'static str,
    /// Transforms applied to the frame's bytes.
    pub xf: Vec<Transform>,
    pub prog: CompiledPayload,
}

/// The frame a `frame:` sticky buffer names.
pub fn frame_of(b: &Buffer) -> Option<FrameRef> {
    match b {
        Buffer::Named(n) => FrameRef::from_buffer_name(n),
        _ => None,
    }
}

/// The framer protocol of Suricata's frame protocol name.
fn framer_proto(proto: &str) -> Option<FrameProto> {
    Some(match proto {
        "tls" => FrameProto::Tls,
        "dns" => FrameProto::Dns,
        "http1" => FrameProto::Http1,
        "smb" => FrameProto::Smb,
        "dcerpc" => FrameProto::Dcerpc,
        "smtp" => FrameProto::Smtp,
        _ => return None,
    })
}

/// The application protocol whose flows carry `proto`'s frames.
pub fn frame_app_proto(proto: &str) -> Option<AppProto> {
    Some(match framer_proto(proto)? {
        FrameProto::Tls => AppProto::Tls,
        FrameProto::Dns => AppProto::Dns,
        FrameProto::Http1 => AppProto::Http,
        FrameProto::Smb => AppProto::Smb,
        FrameProto::Dcerpc => AppProto::Dcerpc,
        FrameProto::Smtp => AppProto::Smtp,
    })
}

/// Whether Vigil produces the frames a `frame:<proto>.<name>` buffer names
/// (the protocol is parsed and framed, and the type is one its framer
/// makes: not `stream`, nor NFS, SIP, MQTT ... frames).
pub fn frame_evaluable(buffer: &str) -> bool {
    FrameRef::from_buffer_name(buffer)
        .is_some_and(|f| framer_proto(f.proto).is_some_and(|p| p.frame_names().contains(&f.name)))
}

impl DetectEngine {
    /// Whether any rule inspects frames.
    pub fn has_frame_rules(&self) -> bool {
        !self.frame_rules.is_empty()
    }

    /// Inspects one complete frame of protocol `proto` (its frame-name
    /// protocol, `tls` ...) on the packet `input` of the frame's
    /// direction. Matching rules that alert are appended to `alerts`;
    /// flowbits are updated in `state`. Returns true when a `pass` rule
    /// matched.
    pub fn inspect_frame(
        &self,
        input: PacketInput<'_, '_>,
        proto: &str,
        frame: &Frame,
        mut state: Option<&mut FlowDetectState>,
        scratch: &mut DetectScratch,
        alerts: &mut Vec<Hit>,
    ) -> bool {
        if input.packet.ip.is_none() {
            return false;
        }
        for &ri in &self.frame_rules {
            let r = &self.rules[ri as usize];
            let Some(spec) = &r.frame else { continue };
            if spec.proto != proto || spec.name != frame.name {
                continue;
            }
            scratch.rules_checked += 1;
            if !packet_checks(r, &input, state.as_deref()) {
                continue;
            }
            if r.captures {
                crate::payload::pending_vars_clear();
            }
            let owned;
            let buf: &[u8] = if spec.xf.is_empty() {
                &frame.data
            } else {
                owned = vigil_applayer::transforms::apply_all(&spec.xf, &frame.data);
                &owned
            };
            let vars = &mut scratch.vars;
            if !spec.prog.matches(buf, vars) {
                if r.captures {
                    store_captures(ri, false, state.as_deref_mut(), &mut scratch.captured);
                }
                continue;
            }
            if !var_tests_match(r, state.as_deref(), &scratch.captured) {
                continue;
            }
            let v = conclude(r, &input, state.as_deref_mut());
            let matched = !matches!(v, Verdict::NoMatch);
            if r.captures {
                store_captures(ri, matched, state.as_deref_mut(), &mut scratch.captured);
            }
            match v {
                Verdict::NoMatch | Verdict::Silent => {}
                Verdict::Pass => return true,
                Verdict::PassAlert => {
                    alerts.push(Hit {
                        rule: ri,
                        stream: false,
                        tx: None,
                        deferred: false,
                        datasets: None,
                    });
                    return true;
                }
                Verdict::Alert | Verdict::Deferred => alerts.push(Hit {
                    rule: ri,
                    stream: false,
                    tx: None,
                    deferred: matches!(v, Verdict::Deferred),
                    datasets: None,
                }),
            }
        }
        false
    }
}
