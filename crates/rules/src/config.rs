//! `classification.config` and `reference.config`.

use std::collections::HashMap;
use std::path::Path;

use crate::error::{RuleError, RuleErrorKind};

/// The standard classification list shipped with Suricata (and Emerging
/// Threats), followed by the extra classes of Snort's list.
pub const DEFAULT_CLASSIFICATION_CONFIG: &str = "\
# config classification:shortname,short description,priority
config classification: not-suspicious,Not Suspicious Traffic,3
config classification: unknown,Unknown Traffic,3
config classification: bad-unknown,Potentially Bad Traffic, 2
config classification: attempted-recon,Attempted Information Leak,2
config classification: successful-recon-limited,Information Leak,2
config classification: successful-recon-largescale,Large Scale Information Leak,2
config classification: attempted-dos,Attempted Denial of Service,2
config classification: successful-dos,Denial of Service,2
config classification: attempted-user,Attempted User Privilege Gain,1
config classification: unsuccessful-user,Unsuccessful User Privilege Gain,1
config classification: successful-user,Successful User Privilege Gain,1
config classification: attempted-admin,Attempted Administrator Privilege Gain,1
config classification: successful-admin,Successful Administrator Privilege Gain,1
config classification: rpc-portmap-decode,Decode of an RPC Query,2
config classification: shellcode-detect,Executable code was detected,1
config classification: string-detect,A suspicious string was detected,3
config classification: suspicious-filename-detect,A suspicious filename was detected,2
config classification: suspicious-login,An attempted login using a suspicious username was detected,2
config classification: system-call-detect,A system call was detected,2
config classification: tcp-connection,A TCP connection was detected,4
config classification: trojan-activity,A Network Trojan was detected, 1
config classification: unusual-client-port-connection,A client was using an unusual port,2
config classification: network-scan,Detection of a Network Scan,3
config classification: denial-of-service,Detection of a Denial of Service Attack,2
config classification: non-standard-protocol,Detection of a non-standard protocol or event,2
config classification: protocol-command-decode,Generic Protocol Command Decode,3
config classification: web-application-activity,access to a potentially vulnerable web application,2
config classification: web-application-attack,Web Application Attack,1
config classification: misc-activity,Misc activity,3
config classification: misc-attack,Misc Attack,2
config classification: icmp-event,Generic ICMP event,3
config classification: inappropriate-content,Inappropriate Content was Detected,1
config classification: policy-violation,Potential Corporate Privacy Violation,1
config classification: default-login-attempt,Attempt to login by a default username and password,2
config classification: targeted-activity,Targeted Malicious Activity was Detected,1
config classification: exploit-kit,Exploit Kit Activity Detected,1
config classification: external-ip-check,Device Retrieving External IP Address Detected,2
config classification: domain-c2,Domain Observed Used for C2 Detected,1
config classification: pup-activity,Possibly Unwanted Program Detected,2
config classification: credential-theft,Successful Credential Theft Detected,1
config classification: social-engineering,Possible Social Engineering Attempted,2
config classification: coin-mining,Crypto Currency Mining Activity Detected,2
config classification: command-and-control,Malware Command and Control Activity Detected,1
# Snort additions
config classification: sdf,Sensitive Data was Transmitted Across the Network,2
config classification: file-format,Known malicious file or file based exploit,1
config classification: malware-cnc,Known malware command and control traffic,1
config classification: client-side-exploit,Known client side exploit attempt,1
";

/// The standard reference systems (Emerging Threats' current
/// `reference.config`, as Suricata 8 ships it: https where available).
pub const DEFAULT_REFERENCE_CONFIG: &str = "\
# config reference: system URL
config reference: bugtraq   https://www.securityfocus.com/bid/
config reference: bid       https://www.securityfocus.com/bid/
config reference: cve       https://cve.mitre.org/cgi-bin/cvename.cgi?name=
config reference: secunia   https://www.secunia.com/advisories/
config reference: arachNIDS https://www.whitehats.com/info/IDS
config reference: McAfee    https://vil.nai.com/vil/content/v_
config reference: nessus    https://www.tenable.com/plugins/nessus/
config reference: url       https://
config reference: et        https://doc.emergingthreats.net/
config reference: etpro     https://doc.emergingthreatspro.com/
config reference: telus     https://
config reference: osvdb     http://osvdb.org/show/osvdb/
config reference: threatexpert http://www.threatexpert.com/report.aspx?md5=
config reference: md5       https://www.threatexpert.com/report.aspx?md5=
config reference: exploitdb https://www.exploit-db.com/exploits/
config reference: openpacket https://www.openpacket.org/capture/grab/
config reference: securitytracker http://securitytracker.com/id?
config reference: xforce    http://xforce.iss.net/xforce/xfdb/
config reference: msft      https://technet.microsoft.com/security/bulletin/
";

/// One classification: `config classification: name,description,priority`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Class {
    pub name: String,
    pub description: String,
    pub priority: u8,
}

fn config_error(file: &str, line: usize, msg: impl Into<String>) -> RuleError {
    let mut e = RuleError::new(RuleErrorKind::Syntax, msg);
    e.origin.file = file.to_string();
    e.origin.line = line;
    e
}

/// Lines of a config file that are not blank or comments, with their
/// 1-based numbers and the text after `config <what>:`.
fn config_lines<'a>(
    text: &'a str,
    what: &'a str,
) -> impl Iterator<Item = (usize, Result<&'a str, &'a str>)> + 'a {
    text.lines().enumerate().filter_map(move |(i, l)| {
        let l = l.trim();
        if l.is_empty() || l.starts_with('#') {
            return None;
        }
        let rest = l
            .strip_prefix("config")
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix(what))
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix(':'))
            .map(str::trim);
        Some((i + 1, rest.ok_or(l)))
    })
}

/// Classifications by short name (case-insensitive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassificationConfig {
    classes: Vec<Class>,
    index: HashMap<String, usize>,
}

impl Default for ClassificationConfig {
    /// The built-in standard list.
    fn default() -> Self {
        Self::parse(DEFAULT_CLASSIFICATION_CONFIG, "<builtin>")
            .expect("built-in classification config parses")
    }
}

impl ClassificationConfig {
    /// An empty configuration.
    pub fn empty() -> Self {
        ClassificationConfig {
            classes: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// Parses `classification.config` text. A later line for the same
    /// name replaces the earlier one.
    pub fn parse(text: &str, file_name: &str) -> Result<Self, RuleError> {
        let mut c = Self::empty();
        for (line, r) in config_lines(text, "classification") {
            let body = r.map_err(|l| {
                config_error(file_name, line, format!("not a classification line: '{l}'"))
            })?;
            // The description may itself contain commas (Suricata's
            // pattern is greedy): name up to the first comma, priority
            // after the last one.
            let split = body
                .split_once(',')
                .and_then(|(n, rest)| rest.rsplit_once(',').map(|(d, p)| (n, d, p)));
            let Some((name, desc, prio)) = split else {
                return Err(config_error(
                    file_name,
                    line,
                    "expected 'shortname,description,priority'",
                ));
            };
            let name = name.trim();
            if name.is_empty() {
                return Err(config_error(file_name, line, "empty classification name"));
            }
            let priority: u8 = prio.trim().parse().map_err(|_| {
                config_error(
                    file_name,
                    line,
                    format!("invalid priority '{}'", prio.trim()),
                )
            })?;
            c.insert(Class {
                name: name.to_string(),
                description: desc.trim().to_string(),
                priority,
            });
        }
        Ok(c)
    }

    /// Reads and parses a `classification.config` file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, RuleError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            let mut err = RuleError::new(RuleErrorKind::Io, format!("cannot read: {e}"));
            err.origin.file = name.clone();
            err
        })?;
        Self::parse(&text, &name)
    }

    /// Adds or replaces a class.
    pub fn insert(&mut self, class: Class) {
        let key = class.name.to_ascii_lowercase();
        match self.index.get(&key) {
            Some(&i) => self.classes[i] = class,
            None => {
                self.index.insert(key, self.classes.len());
                self.classes.push(class);
            }
        }
    }

    pub fn lookup(&self, name: &str) -> Option<&Class> {
        let i = match self.index.get(name) {
            Some(i) => *i,
            None => *self.index.get(&name.to_ascii_lowercase())?,
        };
        self.classes.get(i)
    }

    /// All classes in file order.
    pub fn iter(&self) -> impl Iterator<Item = &Class> {
        self.classes.iter()
    }

    pub fn len(&self) -> usize {
        self.classes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }
}

/// Reference systems: `config reference: name url-prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceConfig {
    systems: HashMap<String, String>,
}

impl Default for ReferenceConfig {
    /// The built-in standard list.
    fn default() -> Self {
        Self::parse(DEFAULT_REFERENCE_CONFIG, "<builtin>")
            .expect("built-in reference config parses")
    }
}

impl ReferenceConfig {
    pub fn empty() -> Self {
        ReferenceConfig {
            systems: HashMap::new(),
        }
    }

    /// Parses `reference.config` text.
    pub fn parse(text: &str, file_name: &str) -> Result<Self, RuleError> {
        let mut c = Self::empty();
        for (line, r) in config_lines(text, "reference") {
            let body = r.map_err(|l| {
                config_error(file_name, line, format!("not a reference line: '{l}'"))
            })?;
            let Some((name, url)) = body.split_once(char::is_whitespace) else {
                return Err(config_error(file_name, line, "expected 'system url'"));
            };
            c.insert(name.trim(), url.trim());
        }
        Ok(c)
    }

    /// Reads and parses a `reference.config` file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, RuleError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            let mut err = RuleError::new(RuleErrorKind::Io, format!("cannot read: {e}"));
            err.origin.file = name.clone();
            err
        })?;
        Self::parse(&text, &name)
    }

    /// Adds or replaces a system (names are case-insensitive).
    pub fn insert(&mut self, system: &str, url_prefix: &str) {
        self.systems
            .insert(system.to_ascii_lowercase(), url_prefix.to_string());
    }

    /// The URL prefix of a reference system.
    pub fn lookup(&self, system: &str) -> Option<&str> {
        self.systems
            .get(&system.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// The full URL of a rule reference (`prefix` + `value`).
    pub fn url(&self, system: &str, value: &str) -> Option<String> {
        self.lookup(system).map(|p| format!("{p}{value}"))
    }

    /// A rule reference as Suricata's EVE `alert.references` prints it:
    /// a value that already has a scheme (`://`) as it is, else the
    /// system's prefix and the value; an unknown system gives the value.
    pub fn resolve(&self, system: &str, value: &str) -> String {
        let v = value.trim();
        if v.contains("://") {
            return v.to_string();
        }
        match self.lookup(system.trim()) {
            Some(p) => format!("{p}{v}"),
            None => v.to_string(),
        }
    }

    pub fn len(&self) -> usize {
        self.systems.len()
    }

    pub fn is_empty(&self) -> bool {
        self.systems.is_empty()
    }
}
