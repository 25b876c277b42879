#!/usr/bin/env bash
# Packs what scripts/device-check.sh needs on a machine with a GPU and
# nothing installed: the stripped release binary, the shared libraries it
# links that such a machine may lack (and ocl-icd's OpenCL loader, which
# honours /etc/OpenCL/vendors), the first 62 MB of dev-mix and ET Open,
# compressed into .gpu/ (ignored by git; about 42 MB).
set -euo pipefail
cd "$(dirname "$0")/.."
G=.gpu
rm -rf "$G" && mkdir -p "$G/lib"
strip -o "$G/vigil" target/release/vigil && xz -T2 -9 "$G/vigil"
for l in libnetfilter_queue.so.1 libpcap.so.0.8 libhs.so.5 libnfnetlink.so.0 libmnl.so.0 \
    libdbus-1.so.3 libsystemd.so.0 libcap.so.2 libgcrypt.so.20 libgpg-error.so.0 liblzma.so.5 \
    libzstd.so.1 liblz4.so.1 libOpenCL.so.1; do
    cp -L "/lib/x86_64-linux-gnu/$l" "$G/lib/"
done
tar -C "$G" -cJf "$G/lib.tar.xz" lib && rm -rf "$G/lib"
python3 - "${PCAP:-../shared/pcaps/dev/dev-mix.pcap}" "$G/devmix-head.pcap" <<'PY'
import struct, sys
src, dst = open(sys.argv[1], "rb"), open(sys.argv[2], "wb")
gh = src.read(24); dst.write(gh); total = 24
e = "<" if gh[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
while total < 62_000_000:
    h = src.read(16)
    if len(h) < 16:
        break
    incl = struct.unpack(e + "IIII", h)[2]
    dst.write(h + src.read(incl)); total += 16 + incl
PY
xz -T2 -6 "$G/devmix-head.pcap"
xz -9 -c "${RULES:-../shared/rules/et-open/emerging.rules}" > "$G/emerging.rules.xz"
cp scripts/device-check.sh "$G/run.sh"
du -sh "$G"
