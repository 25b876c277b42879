#!/usr/bin/env python3
"""Validates every event of an EVE JSON file against Suricata's EVE schema.

Each line of EVE_JSON is one event; each is validated with the `jsonschema`
package (Debian: python3-jsonschema) against the schema (by default
../shared/peers/suricata/eve.schema.json, Suricata's etc/schema.json). The
validator is the draft named by the schema's `$schema`; Suricata's schema
names none and uses `$defs`, so it gets the latest draft the package knows
(2020-12), as `jsonschema.validate` does in suricata-verify's check-eve.py.

Prints the number of events, failures and events with only known schema
gaps (fields Suricata itself writes beyond its schema, SCHEMA_GAPS) per
event_type, then each failure
(line number, event_type, the path of the offending value and the message;
the first few errors of an event). Exits 1 when more than --max-failures
events fail (default 0), or when a line is not a JSON object.

Usage: scripts/eve_schema_check.py EVE_JSON [--schema PATH] [--max-failures N]
                                           [--show N]
       scripts/eve_schema_check.py --self-test [--schema PATH]
"""

import argparse
import collections
import json
import os
import sys

try:
    import jsonschema
    from jsonschema import validators
except ImportError:  # pragma: no cover
    sys.exit("eve_schema_check: the jsonschema package is missing "
             "(apt-get install python3-jsonschema)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SCHEMA = os.path.join(ROOT, "..", "shared", "peers", "suricata",
                              "eve.schema.json")
ERRORS_PER_EVENT = 3

# Fields Suricata 9 itself writes that its own schema does not list: the
# peer (../shared/peers/suricata, with ldap and rdp added to its eve-log
# types) run on dev-mix.pcap fails its schema on exactly these, as Vigil
# does (Suricata's rust/src/ldap/logger.rs, rdp/log.rs and dns/log.rs
# write them).
# An event whose only errors are these extra properties is counted as a
# schema gap, shown apart and not as a failure. Keys: (path with array
# indexes as '*', property).
SCHEMA_GAPS = {
    ("ldap/request/search_request", "filter"),
    ("ldap/request", "controls"),
    ("ldap/responses/*", "controls"),
    ("rdp", "protocol"),
    ("rdp", "server_supports"),
    ("rdp", "x509_serials"),
    ("rdp", "error_code"),
    ("rdp", "reason"),
    ("rdp/client", "connection_hint"),
    ("dns/answers/*", "opt"),
    ("dns/answers/*", "rdata_truncated"),
}


def make_validator(schema_path):
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    cls = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def error_path(err):
    return "/".join(str(p) for p in err.absolute_path) or "(root)"


def is_schema_gap(err):
    """True when err only reports extra properties listed in SCHEMA_GAPS."""
    if err.validator != "additionalProperties" or not isinstance(err.instance, dict):
        return False
    path = "/".join("*" if isinstance(p, int) else str(p)
                    for p in err.absolute_path)
    known = set(err.schema.get("properties", {}))
    extra = [k for k in err.instance if k not in known]
    return bool(extra) and all((path, k) in SCHEMA_GAPS for k in extra)


def event_errors(validator, event, gaps=None):
    """The errors of one event, sorted by path (deterministic order).

    With a list for gaps, errors that are known schema gaps go there
    instead of the result."""
    errs = sorted(validator.iter_errors(event),
                  key=lambda e: ([str(p) for p in e.absolute_path], e.message))
    out = []
    for e in errs:
        if gaps is not None and is_schema_gap(e):
            gaps.append((error_path(e), e.message))
        else:
            out.append((error_path(e), e.message))
    return out


def check_file(validator, path):
    """Returns (per-type counts, per-type failures, per-type events with
    only known schema gaps, failure list, bad lines)."""
    events = collections.Counter()
    failed = collections.Counter()
    gapped = collections.Counter()
    failures = []
    bad = 0
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError as e:
                print(f"line {lineno}: not JSON: {e}")
                bad += 1
                continue
            if not isinstance(event, dict):
                print(f"line {lineno}: not a JSON object")
                bad += 1
                continue
            et = event.get("event_type", "(none)")
            events[et] += 1
            gaps = []
            errs = event_errors(validator, event, gaps)
            if errs:
                failed[et] += 1
                failures.append((lineno, et, errs))
            elif gaps:
                gapped[et] += 1
    return events, failed, gapped, failures, bad


def self_test(validator):
    """Two hand-written events: one Suricata writes, one it never would."""
    good = {
        "timestamp": "2024-01-01T00:00:00.000000+0000",
        "flow_id": 1, "event_type": "dns", "src_ip": "10.0.0.1",
        "src_port": 53, "dest_ip": "10.0.0.2", "dest_port": 40000,
        "proto": "UDP",
        "dns": {"version": 3, "type": "response", "id": 1, "flags": "8180",
                "qr": True, "rd": True, "ra": True, "opcode": 0,
                "rcode": "NOERROR",
                "queries": [{"rrname": "example.com", "rrtype": "A"}],
                "answers": [{"rrname": "example.com", "rrtype": "A",
                             "ttl": 60, "rdata": "192.0.2.1"}]},
    }
    bad = json.loads(json.dumps(good))
    bad["dns"]["answers"][0]["ttl"] = "60"     # wrong type
    bad["dns"]["no_such_key"] = 1               # not in the schema
    ok = True
    if event_errors(validator, good):
        print("self-test: the valid event failed:", event_errors(validator, good))
        ok = False
    errs = event_errors(validator, bad)
    paths = {p for p, _ in errs}
    if "dns/answers/0/ttl" not in paths or "dns" not in paths:
        print("self-test: the invalid event's errors were not found:", errs)
        ok = False
    # A known gap is set apart; an unknown extra field next to it is not.
    rdp = {"timestamp": good["timestamp"], "event_type": "rdp",
           "rdp": {"event_type": "initial_response",
                   "tx_id": 0, "server_supports": [],
                   "protocol": "rdp"}}
    gaps = []
    if event_errors(validator, rdp, gaps) or len(gaps) != 1:
        print("self-test: the known rdp schema gap was not set apart:", gaps)
        ok = False
    rdp["rdp"]["no_such_key"] = 1
    if not event_errors(validator, rdp, []):
        print("self-test: an unknown field beside a known gap passed")
        ok = False
    print("self-test:", "ok" if ok else "FAILED")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("eve", nargs="?", help="EVE JSON file (one event a line)")
    ap.add_argument("--schema", default=DEFAULT_SCHEMA)
    ap.add_argument("--max-failures", type=int, default=0,
                    help="failing events allowed (default 0)")
    ap.add_argument("--show", type=int, default=50,
                    help="failing events printed in full (default 50)")
    ap.add_argument("--self-test", action="store_true",
                    help="check the validator on two hand-written events")
    args = ap.parse_args()
    validator = make_validator(args.schema)
    if args.self_test:
        ok = self_test(validator)
        if not args.eve:
            return 0 if ok else 1
        if not ok:
            return 1
    if not args.eve:
        ap.error("EVE_JSON is required")
    events, failed, gapped, failures, bad = check_file(validator, args.eve)
    print(f"{'event_type':<16} {'events':>8} {'failed':>8} {'gap':>6}")
    for et in sorted(events):
        print(f"{et:<16} {events[et]:>8} {failed[et]:>8} {gapped[et]:>6}")
    total = sum(events.values())
    for lineno, et, errs in failures[:args.show]:
        print(f"line {lineno} ({et}):")
        for path, msg in errs[:ERRORS_PER_EVENT]:
            if len(msg) > 300:
                msg = msg[:300] + "..."
            print(f"    {path}: {msg}")
        if len(errs) > ERRORS_PER_EVENT:
            print(f"    ... {len(errs) - ERRORS_PER_EVENT} more")
    if len(failures) > args.show:
        print(f"... {len(failures) - args.show} more failing events")
    print(f"eve schema: {total} events, {len(failures)} failed "
          f"(allowed {args.max_failures}), {sum(gapped.values())} with only "
          f"fields Suricata writes beyond its schema, {bad} unreadable lines; "
          f"schema {os.path.relpath(args.schema)}")
    return 1 if len(failures) > args.max_failures or bad else 0


if __name__ == "__main__":
    sys.exit(main())
