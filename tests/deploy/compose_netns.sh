#!/usr/bin/env bash
# The docker-compose demo without Docker: runs docker-compose.yml's services through the real
# deploy/compose/entrypoint.sh, each "container" a network namespace on the topology of
# tests/deploy/netns_lib.sh, as the image's user (uid 10001), with the volumes as directories:
#
#   provision  entrypoint.sh provision (as root, like the service): kit + one bundle per volume;
#              run twice, the second run keeps the kit
#   leader     ns L, 10.213.0.1, name `leader` (in every namespace's /etc/hosts, as Docker's DNS
#              would answer): entrypoint.sh leader
#   hospital-a|b|c  isolated ns each: entrypoint.sh party (generates its demo partition)
#   admin      isolated ns: entrypoint.sh admin (waits for the parties, submits deploy/compose/job.yaml,
#              watches it, downloads the result); it must exit 0
#
# The leader's and the hospitals' healthcheck commands are read from docker-compose.yml and must
# pass in their namespaces before the admin starts (as `condition: service_healthy` demands).
# The admin's table must equal `fedanon anonymize` with the same spec on the same generated
# data (the union of the three partitions) as a multiset of rows.
#
# Usage: tests/deploy/compose_netns.sh BIN_DIR [ROWS]   (ROWS: FEDANON_DEMO_ROWS, default 3000)
# Exit 0 pass, 1 fail, 77 skipped (not root, no `ip`/`setpriv`, namespaces not permitted).
set -euo pipefail

bin="${1:?usage: compose_netns.sh BIN_DIR [ROWS]}"
rows="${2:-3000}"
prog="compose_netns"
src="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=tests/deploy/netns_lib.sh
. "$(dirname "$0")/netns_lib.sh"
command -v setpriv >/dev/null 2>&1 || skip "util-linux's setpriv is not installed"

uid=10001  # the image's `fedanon` user (deploy/Dockerfile)
services=(leader hospital-a hospital-b hospital-c admin)
declare -A ip=([leader]=10.213.0.1 [hospital-a]=10.213.0.11 [hospital-b]=10.213.0.12
               [hospital-c]=10.213.0.13 [admin]=10.213.0.20)
declare -A ns

netns_init
for s in "${services[@]}"; do
  ns[$s]="$netns_tag-$s"
  isolated=yes
  [ "$s" = leader ] && isolated=no
  netns_host "${ns[$s]}" "${ip[$s]}" "$isolated" "${ip[leader]} leader"
done
say "namespaces: $(for s in "${services[@]}"; do printf '%s=%s ' "$s" "${ip[$s]}"; done)"

# What the image holds: the binaries in a directory uid 10001 may run them from (a build tree may
# sit under a private home), and the compose helper directory (/config).
chmod 0711 "$work"
install -d -m 0755 "$work/bin" "$work/config"
for b in fedanon fedanon-leader fedanon-party fedanonctl; do install -m 0755 "$bin/$b" "$work/bin/"; done
cp "$src"/deploy/compose/* "$work/config/"
chmod -R a+rX "$work/config"
export PATH="$work/bin:$PATH"
# Volumes. Data volumes start as the image's /var/lib/fedanon: owned by the user, mode 0700.
install -d -m 0711 "$work/vol" "$work/vol/bundles"
install -d -m 0700 "$work/vol/kit"
for s in "${services[@]}"; do
  install -d -m 0700 "$work/vol/bundles/$s"
  install -d -m 0700 -o "$uid" -g "$uid" "$work/vol/$s-data"
done

# The argv that runs CMD... as one service: as uid 10001, with only the service's environment
# (entrypoint.sh's container paths mapped to our directories) plus $extra_env.
extra_env=()
# Sanitizer settings of the test run (ctest --preset sanitize) reach the daemons too.
sanitizer_env=()
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
  [ -n "${!v:-}" ] && sanitizer_env+=("$v=${!v}")
done
service_argv() {
  local s="$1"
  shift
  argv=(setpriv --reuid="$uid" --regid="$uid" --clear-groups --
        env -i "PATH=$PATH" HOME=/tmp FEDANON_LOG_LEVEL=info "FEDANON_CONFIG_DIR=$work/config"
        "FEDANON_ETC=$work/vol/bundles/$s" "FEDANON_DATA_DIR=$work/vol/$s-data"
        "${sanitizer_env[@]}" "${extra_env[@]}" "$@")
}
run_as() {  # run_as SERVICE CMD...: in the foreground, in the service's namespace
  local s="$1"
  shift
  service_argv "$s" "$@"
  ip netns exec "${ns[$s]}" "${argv[@]}"
}
start_as() {  # start_as SERVICE CMD...: in the background (same pid down to the daemon)
  local s="$1"
  shift
  service_argv "$s" "$@"
  start_in "${ns[$s]}" "$work/logs/$s.log" "${argv[@]}"
}

# ------------------------------------------------------------------------------ provision
for attempt in 1 2; do
  env -i "${sanitizer_env[@]}" PATH="$PATH" FEDANON_CONFIG_DIR="$work/config" FEDANON_KIT_DIR="$work/vol/kit" \
    FEDANON_BUNDLES_DIR="$work/vol/bundles" FEDANON_UID="$uid" \
    bash "$work/config/entrypoint.sh" provision >>"$work/logs/provision.log" 2>&1 ||
    fail "entrypoint.sh provision (run $attempt) failed: $(tail -n 5 "$work/logs/provision.log")"
done
grep -q "kit .* exists; keeping it" "$work/logs/provision.log" ||
  fail "the second provision run did not keep the existing kit"
for s in "${services[@]}"; do
  [ "$(stat -c %u "$work/vol/bundles/$s")" = "$uid" ] ||
    fail "bundle volume of $s is not owned by uid $uid"
  [ -f "$work/vol/bundles/$s/tls.key" ] || fail "bundle volume of $s has no tls.key"
done
[ ! -e "$work/vol/bundles/leader/admin.yaml" ] && [ ! -e "$work/vol/bundles/hospital-a/ca.key" ] ||
  fail "a bundle volume holds another participant's files"
say "ok: provision wrote one bundle per volume (owned by uid $uid), kept the kit on a second run"

# ------------------------------------------------------------------------------ daemons
# The leader's metrics on its loopback, as docker-compose.yml sets them for `prometheus`.
metrics_listen="$(sed -nE 's/^[[:space:]]*FEDANON_METRICS_LISTEN:[[:space:]]*"?([^"[:space:]]*)"?.*/\1/p' \
  "$src/docker-compose.yml")"
[ -n "$metrics_listen" ] || fail "no FEDANON_METRICS_LISTEN for the leader in docker-compose.yml"
extra_env=("FEDANON_METRICS_LISTEN=$metrics_listen")
start_as leader bash "$work/config/entrypoint.sh" leader
leader_pid=$last_pid
extra_env=()
wait_listen "${ns[leader]}" 7443 "$leader_pid"
for i in 1 2 3; do
  extra_env=("FEDANON_PARTY_INDEX=$i" "FEDANON_DEMO_ROWS=$rows")
  start_as "${services[$i]}" bash "$work/config/entrypoint.sh" party
done
extra_env=()

# The healthchecks, as docker-compose.yml writes them (/etc/fedanon is the service's bundle,
# /var/lib/fedanon its data volume).
leader_check="$(sed -nE 's/^[[:space:]]*test: \["CMD", (.*fedanonctl.*health.*)\][[:space:]]*$/\1/p' \
  "$src/docker-compose.yml" | sed -E 's/"//g; s/, / /g')"
party_check="$(sed -nE 's/^[[:space:]]*test: \["CMD-SHELL", "(.*fedanon party status.*)"\][[:space:]]*$/\1/p' \
  "$src/docker-compose.yml")"
[ -n "$leader_check" ] || fail "no leader healthcheck ('test: [\"CMD\", ... fedanonctl health ...]') in docker-compose.yml"
[ -n "$party_check" ] || fail "no party healthcheck ('test: [\"CMD-SHELL\", \"... fedanon party status ...\"]') in docker-compose.yml"
say "healthchecks from docker-compose.yml: leader: $leader_check | hospitals: $party_check"
healthy() {
  local s="$1" cmd
  if [ "$s" = leader ]; then cmd="$leader_check"; else cmd="$party_check"; fi
  cmd="${cmd//\/etc\/fedanon/$work/vol/bundles/$s}"
  cmd="${cmd//\/var\/lib\/fedanon/$work/vol/$s-data}"
  run_as "$s" sh -c "$cmd" >>"$work/logs/health-$s.log" 2>&1
}
for s in leader hospital-a hospital-b hospital-c; do
  ok=""
  for _ in $(seq 60); do
    if healthy "$s"; then ok=yes; break; fi
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || fail "a daemon (pid $pid) exited"; done
    sleep 0.5
  done
  [ -n "$ok" ] || fail "$s did not become healthy within 30 s: $(tail -n 3 "$work/logs/health-$s.log")"
done
say "ok: leader and hospitals healthy (their docker-compose.yml healthchecks pass)"
for s in hospital-a hospital-b hospital-c admin; do
  l="$(in_ns "${ns[$s]}" ss -Htuln)"
  [ -z "$l" ] || fail "$s's namespace has a listening socket: $l"
done

# ------------------------------------------------------------------------------ admin
extra_env=("FEDANON_ADMIN_CONFIG=$work/vol/bundles/admin/admin.yaml"
           "FEDANON_EXPECT_PARTIES=hospital-a,hospital-b,hospital-c" "FEDANON_WAIT_SECONDS=60")
rc=0
run_as admin bash "$work/config/entrypoint.sh" admin >"$work/logs/admin.log" 2>&1 || rc=$?
extra_env=()
[ "$rc" -eq 0 ] || { tail -n 20 "$work/logs/admin.log" >&2; fail "entrypoint.sh admin exited with $rc"; }
result="$(find "$work/vol/admin-data" -maxdepth 1 -name 'job-*.csv' | head -n 1)"
[ -n "$result" ] || fail "the admin wrote no job-*.csv into its data volume"
say "ok: the admin service submitted, watched and downloaded $(basename "$result")"
# What `prometheus` (in the leader's network namespace) scrapes: the done job is counted.
metrics="$(in_ns "${ns[leader]}" bash -c "exec 3<>/dev/tcp/${metrics_listen%:*}/${metrics_listen##*:} &&
  printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3" 2>&1 || true)"
grep -q '^fedanon_leader_jobs{state="done"} 1' <<<"$metrics" ||
  fail "the leader's metrics on $metrics_listen do not count the done job: $(head -c 300 <<<"$metrics")"
grep -q '^fedanon_leader_connected_parties 3' <<<"$metrics" ||
  fail "the leader's metrics do not count 3 connected parties"
say "ok: the leader's metrics on $metrics_listen (its loopback) count the done job"

# Expected: the same generated data (seed 7 and the row count the hospitals used), the same spec.
"$bin/fedanon" gen-data --rows "$rows" --seed 7 --parties 3 --out "$work/expect" \
  >"$work/logs/gen.log" 2>&1 || fail "gen-data failed: $(cat "$work/logs/gen.log")"
cp "$work/config/job.yaml" "$work/expect/compose-job.yaml"
"$bin/fedanon" anonymize --quiet --spec "$work/expect/compose-job.yaml" \
  --input "$work/expect/table.csv" --output "$work/expect/central.csv" >"$work/logs/anon.log" 2>&1 ||
  fail "fedanon anonymize failed: $(cat "$work/logs/anon.log")"
same_rows "$work/expect/central.csv" "$result" ||
  fail "the demo job's table differs from fedanon anonymize on the union: $(head -n 10 "$work/cmp.diff")"
say "ok: the demo job's table equals fedanon anonymize on the union ($(($(wc -l <"$result") - 1)) rows)"
say "passed"
