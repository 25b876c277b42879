//! `-q` queue specs: one number or an inclusive range, as iptables'
//! `--queue-num N` and `--queue-balance N:M` write them.

use crate::InlineError;

/// Parses `"N"` (one queue) or `"N:M"` (queues N to M inclusive, N <= M),
/// each a decimal number from 0 to 65535, into the queue numbers in order.
///
/// ```
/// assert_eq!(vigil_inline::parse_queue_spec("0:3").unwrap(), vec![0, 1, 2, 3]);
/// assert_eq!(vigil_inline::parse_queue_spec("7").unwrap(), vec![7]);
/// assert!(vigil_inline::parse_queue_spec("3:0").is_err());
/// ```
pub fn parse_queue_spec(s: &str) -> Result<Vec<u16>, InlineError> {
    let num = |part: &str| -> Result<u16, InlineError> {
        if part.is_empty() || part.len() > 5 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(InlineError::BadSpec(format!(
                "{s:?}: {part:?} is not a queue number (0-65535); expected N or N:M"
            )));
        }
        part.parse::<u16>()
            .map_err(|_| InlineError::BadSpec(format!("{s:?}: queue number {part} is above 65535")))
    };
    match s.split_once(':') {
        None => Ok(vec![num(s)?]),
        Some((a, b)) => {
            let (first, last) = (num(a)?, num(b)?);
            if first > last {
                return Err(InlineError::BadSpec(format!(
                    "{s:?}: range {first}:{last} goes backwards"
                )));
            }
            Ok((first..=last).collect())
        }
    }
}

/// Parses several specs (repeated `-q` options) into one list in the order
/// given; a queue named twice is an error (two workers cannot share a queue).
pub fn parse_queue_specs<S: AsRef<str>>(specs: &[S]) -> Result<Vec<u16>, InlineError> {
    let mut out: Vec<u16> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for s in specs {
        for q in parse_queue_spec(s.as_ref())? {
            if !seen.insert(q) {
                return Err(InlineError::BadSpec(format!(
                    "queue {q} is named more than once"
                )));
            }
            out.push(q);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_and_ranges() {
        assert_eq!(parse_queue_spec("0").unwrap(), vec![0]);
        assert_eq!(parse_queue_spec("65535").unwrap(), vec![65535]);
        assert_eq!(parse_queue_spec("0:3").unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(parse_queue_spec("5:5").unwrap(), vec![5]);
        assert_eq!(parse_queue_spec("007").unwrap(), vec![7]);
        assert_eq!(parse_queue_spec("65534:65535").unwrap(), vec![65534, 65535]);
    }

    #[test]
    fn bad_specs_are_errors_that_quote_the_input() {
        for bad in [
            "",
            ":",
            "a",
            "1:",
            ":3",
            "3:0",
            "-1",
            "+1",
            " 1",
            "1 ",
            "0:3:5",
            "65536",
            "0:65536",
            "1.5",
            "0x10",
            "99999999999999999999",
            "1-3",
            "١",
        ] {
            match parse_queue_spec(bad) {
                Err(InlineError::BadSpec(m)) => {
                    assert!(
                        m.contains(&format!("{bad:?}")) || bad.is_empty(),
                        "{bad:?}: {m}"
                    )
                }
                other => panic!("{bad:?}: expected BadSpec, got {other:?}"),
            }
        }
    }

    #[test]
    fn several_specs_join_and_refuse_duplicates() {
        assert_eq!(parse_queue_specs(&["0", "2:3"]).unwrap(), vec![0, 2, 3]);
        assert!(matches!(
            parse_queue_specs(&["0:3", "2"]),
            Err(InlineError::BadSpec(m)) if m.contains("queue 2")
        ));
        assert!(matches!(
            parse_queue_specs(&["x"]),
            Err(InlineError::BadSpec(_))
        ));
        assert_eq!(parse_queue_specs::<&str>(&[]).unwrap(), Vec::<u16>::new());
    }
}
