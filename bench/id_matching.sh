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
openssl_speed() {
  openssl speed -seconds 5 -multi "$cores" ecdhp256 2>/dev/null |
    awk '/ecdh \(nistp256\)/ {print $NF}' | tail -1
}
# OpenSSL's rate is measured just before and just after fedanon's run and averaged, so that a
# shared machine's drift affects both sides alike.
ops_before="$(openssl_speed)"
out="$("$bin" "$ids")"
ops_after="$(openssl_speed)"
echo "$out"
python3 - "$ops_before" "$ops_after" "$cores" "$out" <<'PY'
import sys
before, after, cores, out = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ops = (before + after) / 2
ids = float([l.split()[1] for l in out.splitlines() if l.startswith("ids_per_second")][0])
limit = ops / 4
print(f"openssl speed -multi {cores} ecdhp256: {ops:.0f} multiplications/s "
      f"(mean of {before:.0f} before and {after:.0f} after fedanon's run)")
print(f"limit: {limit:.0f} ids/s (4 multiplications per matched id)")
print(f"fedanon end to end: {ids:.0f} ids/s")
print(f"ratio: {ids / limit:.2f} of the limit (issue #30 target >= 0.75)")
PY
