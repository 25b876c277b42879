#!/bin/bash
# Device check: Vigil's OpenCL prefilter on a real GPU, from what
# scripts/device-pack.sh put in .gpu/ (run from the repository root:
# `OUT=DIR bash .gpu/run.sh`). Uses the vendor's OpenCL ICD only (PoCL is
# set aside), runs dev-mix's head with ET Open on the CPU and the device at
# 1, 4 and 16 workers, scripts/device-identity.sh and the device benchmark.
set -u
G=$PWD/.gpu; W=/tmp/g; mkdir -p $W/use target/release
t0=$(date +%s)
python3 - <<PY
import lzma, shutil, tarfile
for s, d in [("$G/vigil.xz", "target/release/vigil"), ("$G/devmix-head.pcap.xz", "$W/dm.pcap"), ("$G/emerging.rules.xz", "$W/emerging.rules")]:
    with lzma.open(s) as i, open(d, "wb") as o: shutil.copyfileobj(i, o)
tarfile.open("$G/lib.tar.xz").extractall("$W")
PY
chmod +x target/release/vigil
for f in $W/lib/*; do b=$(basename $f); ldconfig -p | grep -qP "^\s$b\s" || ln -sf $f $W/use/$b; done
ln -sf $W/lib/libOpenCL.so.1 $W/use/libOpenCL.so.1; ls $W/use; ldconfig -p | grep -i opencl; env | grep -i ocl; cat /etc/OpenCL/vendors/*
export LD_LIBRARY_PATH=$W/use
unset OCL_ICD_FILENAMES  # the image lists PoCL first; use /etc/OpenCL/vendors
mkdir -p /tmp/icd-off; mv /etc/OpenCL/vendors/pocl.icd /tmp/icd-off/ 2>/dev/null; ls /etc/OpenCL/vendors 2>/dev/null
if ! grep -qs nvidia /etc/OpenCL/vendors/*.icd; then
  lib=$(find /usr/local/nvidia /usr/lib /usr/lib64 /usr/local/cuda* -name 'libnvidia-opencl.so*' 2>/dev/null | head -1)
  echo "nvidia opencl lib: $lib"; [ -n "$lib" ] && mkdir -p /etc/OpenCL/vendors && echo "$lib" > /etc/OpenCL/vendors/nvidia.icd
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
nproc; ldd target/release/vigil | grep -i "not found"
export XDG_CACHE_HOME=$W/cache
echo "== setup $(( $(date +%s) - t0 )) s"
R="-r $W/dm.pcap -S $W/emerging.rules --quiet"
run() { local n=$1; shift; timeout 120 target/release/vigil run $R -l $W/$n "$@" 2> $W/$n.err; echo "$n rc=$? $(tail -n 2 $W/$n.err | tr '\n' ' ')"; }
run warm --workers 1
for w in 1 4 16; do
  run cpu-w$w --workers $w
  run gpu-w$w --workers $w --prefilter-device opencl
  run gpuf-w$w --workers $w --prefilter-device opencl --prefilter ac-full
done
run auto-w1 --workers 1 --prefilter-device auto
grep -h -i "threshold\|device" $W/gpu-w1.err $W/auto-w1.err | head -20
for n in gpu-w1 gpuf-w1 gpu-w16; do python3 -c "
import json,sys
last=None
for l in open('$W/$n/eve.json'):
    if '\"event_type\":\"stats\"' in l: last=json.loads(l)
print('$n', json.dumps(last['stats'].get('prefilter_device')))"; done
echo "== runs $(( $(date +%s) - t0 )) s"
PCAP=$W/dm.pcap RULES=$W/emerging.rules OUT=$W/di timeout 200 bash scripts/device-identity.sh 2>&1 | tail -15
echo "== identity $(( $(date +%s) - t0 )) s"
timeout 150 target/release/vigil bench prefilter --device opencl --out $OUT/bench --pcap $W/dm.pcap --rules $W/emerging.rules 2>&1 | tail -40
echo "== total $(( $(date +%s) - t0 )) s"
