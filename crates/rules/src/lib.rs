//! vigil-rules: the Suricata / Snort rule language.
//!
//! - [`parse_rule`] turns one rule into the typed [`Rule`] of [`ast`].
//! - [`parse_rules_str`] / [`load_rules_file`] read whole rules files and
//!   report every rule that fails, with `file:line: sid N: keyword K:`.
//! - [`Vars`] holds `$HOME_NET`-style variables (Suricata defaults) and
//!   resolves address and port specifications; [`AddrSpec::compile`] and
//!   [`PortSpec::compile`] give fast matchers.
//! - [`ClassificationConfig`] and [`ReferenceConfig`] read
//!   `classification.config` and `reference.config` (defaults built in);
//!   [`ThresholdConfig`] reads `threshold.config`.
//!
//! Keywords that Suricata or Snort know but Vigil does not evaluate parse
//! fine and are listed in [`Rule::not_evaluable`]; unknown keywords are
//! errors.

pub mod ast;
pub mod config;
pub mod error;
pub mod file;
pub mod frames;
mod keywords;
pub use keywords::{
    keyword_class, keyword_registry, keywords_markdown, KeywordInfo, KeywordStatus,
};
pub mod parser;
pub mod threshold_config;
mod values;
pub use values::{parse_size, parse_uint_cmp};
pub mod vars;

pub use ast::*;
pub use config::{
    Class, ClassificationConfig, ReferenceConfig, DEFAULT_CLASSIFICATION_CONFIG,
    DEFAULT_REFERENCE_CONFIG,
};
pub use error::{RuleDiagnostic, RuleError, RuleErrorKind};
pub use file::{load_rules_file, parse_rules_str, RuleFileReport};
pub use parser::{parse_rule, COMPAT_VERSION};
pub use threshold_config::{SuppressTrack, ThresholdConfig, ThresholdEntry};
pub use vars::{AddrMatcher, PortMatcher, Vars, DEFAULT_ADDRESS_VARS, DEFAULT_PORT_VARS};
