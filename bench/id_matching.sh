#!/usr/bin/env bash
# ID matching throughput against OpenSSL's own P-256 speed on this machine (prints figures; not a
# test). Prints: the load average before and after; the single-thread cost of each step
# (hash-to-curve, Encrypt, ReEncrypt with either hop encoding, point decompression, one scalar
# multiplication) and their ratio; `openssl speed -multi <cores> ecdhp256` (scalar
# multiplications per second on every core) before and after fedanon's run; the limit in ids/s it
# implies (4 multiplications per matched id with 2 parties); fedanon's end-to-end rate (both
# parties in this one process, uncompressed hops) and its ratio to the limit, by the wall clock and
# by CPU time (4 multiplications at the micro-benchmark's thread CPU cost against the process's
# CPU time: what a loaded machine cannot distort); then the same end-to-end run with compressed
# hops (at most 200,000 ids) to compare the two encodings.
# Target (docs/crypto.md "ID matching"): ratio >= 0.75.
# Usage: bench/id_matching.sh [ids=1000000] [build-dir=build/default]
set -euo pipefail
cd "$(dirname "$0")/.."
ids="${1:-1000000}"
bin="${2:-build/default}/bench/id_matching_bench"
cores="$(nproc)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
micro="$("$bin" --micro 3000)"
echo "$micro"
mul_us="$(echo "$micro" | awk '/EC_POINT_mul, variable point/ {print $NF}')"
openssl_speed() {
  openssl speed -seconds 5 -multi "$cores" ecdhp256 2>/dev/null |
    awk '/ecdh \(nistp256\)/ {print $NF}' | tail -1
}
# OpenSSL's rate is measured just before and just after fedanon's run and averaged, so that a
# shared machine's drift affects both sides alike.
ops_before="$(openssl_speed)"
out="$("$bin" "$ids" 0.5)"
ops_after="$(openssl_speed)"
echo "$out"
small=$((ids < 200000 ? ids : 200000))
out_c="$("$bin" "$small" 0.5 compressed)"
out_u="$out"
[ "$small" -eq "$ids" ] || out_u="$("$bin" "$small" 0.5)"
echo "$out_c"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$ops_before" "$ops_after" "$cores" "$out" "$mul_us" "$ids" "$out_c" "$out_u" "$small" <<'PY'
import sys
before, after, cores, out = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
mul_us, ids, out_c, out_u, small = float(sys.argv[5]), int(sys.argv[6]), sys.argv[7], sys.argv[8], int(sys.argv[9])
def field(text, key):
    return float([l.split()[1] for l in text.splitlines() if l.startswith(key)][0])
ops = (before + after) / 2
rate = field(out, "ids_per_second")
cpu = field(out, "cpu_seconds")
limit = ops / 4
print(f"openssl speed -multi {cores} ecdhp256: {ops:.0f} multiplications/s "
      f"(mean of {before:.0f} before and {after:.0f} after fedanon's run)")
print(f"limit: {limit:.0f} ids/s (4 multiplications per matched id)")
print(f"fedanon end to end: {rate:.0f} ids/s ({ids} x {ids} ids, half common)")
print(f"ratio: {rate / limit:.2f} of the limit (wall; target >= 0.75)")
ideal = 4 * ids * mul_us * 1e-6
print(f"ratio by CPU time: 4 x {ids} multiplications at {mul_us:.2f} us = {ideal:.1f} s against "
      f"{cpu:.1f} s of process CPU: {ideal / cpu:.2f}")
cc, cu = field(out_c, "cpu_seconds"), field(out_u, "cpu_seconds")
print(f"hop encoding, {small} ids: compressed {1e6 * cc / small:.1f} us of CPU per id, "
      f"uncompressed {1e6 * cu / small:.1f} us ({'uncompressed' if cu < cc else 'compressed'} cheaper)")
PY
