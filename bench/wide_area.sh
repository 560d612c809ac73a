#!/usr/bin/env bash
# The wide-area benchmark (issue #47; prints figures, not a test): real daemons on loopback with
# mutual TLS, each party dialling the leader through a proxy that models a wide-area link (delay
# and jitter, a rate limit, stalls: tests/fault/tcp_proxy.h LinkProfile). Each job runs twice in one
# federation, over plain loopback and over the link, and prints both wall times, the leader's count
# of the job's calls and waves (its end-of-run log line), the floor the link allows
#   loopback wall + waves x RTT + critical-path bytes / rate + stall time on the path,
# and the wide-area run's ratio to it (the issue's bound: 1.5x). The jobs: UCI Adult over three
# parties (../shared/datasets/adult; where it is absent, gen-data's 3-party table of Adult's size,
# 45,222 records), global and `recoding: local`, and gen-data's 2-party vertical job of 200,000
# records (tests/fault/wide_area_bench.cc).
# Usage: bench/wide_area.sh [build-dir=build/default] [gtest-filter=WideArea.*]
#   FEDANON_WAN="rtt_ms=50,jitter_ms=5,mbit=50,stall_every_s=30,stall_ms=1000,seed=1" (defaults)
#   FEDANON_WAN_VERTICAL_ROWS=200000
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/default}"
filter="${2:-WideArea.*}"
bench="$build/tests/wide_area_bench"
[ -x "$bench" ] || { echo "build first: $bench not found" >&2; exit 1; }
echo "wide-area benchmark: FEDANON_WAN=${FEDANON_WAN:-(defaults)}; $(nproc) cores;" \
  "$(date -u '+%Y-%m-%d %H:%M UTC'); load $(cut -d' ' -f1-3 /proc/loadavg)"
"$bench" --gtest_filter="$filter" --gtest_brief=1
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
