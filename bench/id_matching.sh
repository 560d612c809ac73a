#!/usr/bin/env bash
# ID matching throughput against OpenSSL's own P-256 speed on this machine (prints figures; not a
# test). Issue target: at least half the ids per second that `openssl speed ecdhp256` on all cores
# implies for the 4 EC multiplications each matched id needs with 2 parties.
# Usage: bench/id_matching.sh [ids=1000000] [build-dir=build/default]
set -euo pipefail
cd "$(dirname "$0")/.."
ids="${1:-1000000}"
bin="${2:-build/default}/bench/id_matching_bench"
cores="$(nproc)"
ops=$(openssl speed -seconds 5 -multi "$cores" ecdhp256 2>/dev/null |
  awk '/ecdh \(nistp256\)/ {print $NF}' | tail -1)
out="$("$bin" "$ids")"
echo "$out"
python3 - "$ops" "$cores" "$out" <<'PY'
import sys
ops, cores, out = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ids = float([l.split()[1] for l in out.splitlines() if l.startswith("ids_per_second")][0])
implied = ops / 4
print(f"openssl speed ecdhp256 on {cores} cores: {ops:.0f} op/s -> {implied:.0f} ids/s at 4 "
      f"multiplications per id")
print(f"measured {ids:.0f} ids/s = {ids / implied:.2f} of that (target >= 0.50)")
PY
