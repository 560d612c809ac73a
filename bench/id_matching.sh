#!/usr/bin/env bash
# ID matching throughput against OpenSSL's own P-256 speed on this machine (prints figures; not a
# test). Prints: the single-thread cost of each step (hash-to-curve, Encrypt, ReEncrypt, point
# decompression, one scalar multiplication) and their ratio; `openssl speed -multi <cores>
# ecdhp256` (scalar multiplications per second on every core); the limit in ids/s it implies (4
# multiplications per matched id with 2 parties); fedanon's end-to-end rate and the ratio.
# Issue #30 target: ratio >= 0.75.
# Usage: bench/id_matching.sh [ids=1000000] [build-dir=build/default]
set -euo pipefail
cd "$(dirname "$0")/.."
ids="${1:-1000000}"
bin="${2:-build/default}/bench/id_matching_bench"
cores="$(nproc)"
"$bin" --micro 3000
ops=$(openssl speed -seconds 5 -multi "$cores" ecdhp256 2>/dev/null |
  awk '/ecdh \(nistp256\)/ {print $NF}' | tail -1)
out="$("$bin" "$ids")"
echo "$out"
python3 - "$ops" "$cores" "$out" <<'PY'
import sys
ops, cores, out = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ids = float([l.split()[1] for l in out.splitlines() if l.startswith("ids_per_second")][0])
limit = ops / 4
print(f"openssl speed -multi {cores} ecdhp256: {ops:.0f} multiplications/s")
print(f"limit: {limit:.0f} ids/s (4 multiplications per matched id)")
print(f"fedanon end to end: {ids:.0f} ids/s")
print(f"ratio: {ids / limit:.2f} of the limit (issue #30 target >= 0.75)")
PY
