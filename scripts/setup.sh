#!/usr/bin/env bash
# Installs what the build needs on a fresh Debian machine: a Rust toolchain
# (if missing), a C compiler for the vendored PCRE2, libhs (Vectorscan)
# for the Hyperscan prefilter (the default engine), the OpenCL loader and
# PoCL for the device path, libpcap (BPF compilation) and tcpreplay and
# iproute2 for the live-capture tests, libnetfilter_queue and iptables for
# inline mode, tcpdump for its capture test, iperf3 and ping for the
# inline benchmark, python3-jsonschema for the EVE schema check,
# redis-server for the EVE-to-Redis tests. Idempotent.
set -euo pipefail
need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
# Hyperscan (Debian's Vectorscan build) for the optional `hyperscan` feature.
[ -e /usr/include/hs/hs.h ] || need_apt+=(libvectorscan-dev)
# OpenCL for the prefilter's device path: the ICD loader (loaded at run
# time, not linked) and PoCL, the CPU OpenCL platform CI tests it on.
# clinfo lists the devices (`clinfo -l`; --opencl-device N numbers them).
ldconfig -p 2>/dev/null | grep -q 'libOpenCL.so.1 ' || need_apt+=(ocl-icd-libopencl1)
[ -e /etc/OpenCL/vendors/pocl.icd ] || need_apt+=(pocl-opencl-icd)
command -v clinfo >/dev/null 2>&1 || need_apt+=(clinfo)
# Live capture: libpcap compiles BPF filters (-F / expression); the
# network tests replay captures with tcpreplay into veth pairs inside
# network namespaces they create (iproute2).
[ -e /usr/include/pcap/pcap.h ] || need_apt+=(libpcap-dev)
[ -e /usr/include/magic.h ] || need_apt+=(libmagic-dev)
command -v tcpreplay >/dev/null 2>&1 || need_apt+=(tcpreplay)
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v ethtool >/dev/null 2>&1 || need_apt+=(ethtool)
# Inline mode (NFQUEUE): vigil-inline links libnetfilter_queue; its
# network tests add NFQUEUE rules with iptables inside the namespaces
# they create.
[ -e /usr/include/libnetfilter_queue/libnetfilter_queue.h ] || need_apt+=(libnetfilter-queue-dev)
command -v iptables >/dev/null 2>&1 || need_apt+=(iptables)
# The inline network tests fetch pages through the test router with curl.
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
# The --simulate-ips network test captures the router's traffic (tcpdump).
command -v tcpdump >/dev/null 2>&1 || need_apt+=(tcpdump)
# scripts/bench-inline.sh: a bulk transfer (iperf3) and RTTs (ping)
# through the test router.
command -v iperf3 >/dev/null 2>&1 || need_apt+=(iperf3)
command -v ping >/dev/null 2>&1 || need_apt+=(iputils-ping)
# scripts/eve_schema_check.py (a step of scripts/test.sh) validates EVE
# output against Suricata's schema with the jsonschema package.
python3 -c 'import jsonschema' >/dev/null 2>&1 || need_apt+=(python3-jsonschema)
# The EVE-to-Redis tests (crates/vigil/tests/redis_out.rs) start their own
# redis-server on 127.0.0.1.
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
    else
        echo "setup: please install: ${need_apt[*]}" >&2
        exit 1
    fi
fi
if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    else
        echo "setup: no Rust toolchain found; install one with rustup (https://rustup.rs)" >&2
        exit 1
    fi
fi
rustup component list --installed 2>/dev/null | grep -q clippy || rustup component add clippy rustfmt >/dev/null 2>&1 || true
# Fuzzing (scripts/fuzz.sh, the smoke step of scripts/test.sh): cargo-fuzz
# builds the targets of fuzz/ with libFuzzer and sanitizer flags, which
# need a nightly toolchain.
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
