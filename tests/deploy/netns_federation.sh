#!/usr/bin/env bash
# Multi-host integration test of the outbound-only topology: the leader and every party daemon
# run in their own Linux network namespace ("host"), joined by a bridge in a further namespace
# whose party ports are isolated from each other (bridge_slave isolated on), so that a party can
# reach the leader's address and nothing else:
#
#     ns L  (leader, admin)  10.213.0.1 ─┐
#     ns P1 (party1)         10.213.0.11 ┤ bridge br0 in ns BR; the P ports are "isolated":
#     ns P2 (party2)         10.213.0.12 ┤ frames between two isolated ports are dropped
#     ns P3 (party3)         10.213.0.13 ┘
#
# Steps (each failure names what broke):
#  1. `fedanonctl provision` a kit whose leader address is 10.213.0.1:7443 (its certificate names
#     that IP);
#  2. reachability, before any daemon runs: a throwaway listener on each party's address
#     (fedanon-leader --listen 10.213.0.1N:7443, a "decoy") is reachable from the leader's
#     namespace (positive control) but from no other party's namespace (the connect fails);
#  3. starts fedanon-leader in L and fedanon-party in P1..P3 (`ip netns exec`); checks that the
#     leader's socket is the only listening socket in every namespace and that each party holds
#     exactly one TCP connection, to 10.213.0.1:7443; `fedanonctl health --bundle` (the compose
#     healthcheck) answers SERVING from every namespace;
#  4. from L with the admin bundle: a horizontal job over party1..3 (`fedanon gen-data --parties 3`)
#     and a vertical job over party1, party2 (`--partition vertical --parties 2`), submit / watch /
#     result; the horizontal result must equal `fedanon anonymize` on the union (table.csv) as a
#     multiset of rows, the vertical one `fedanon anonymize` on the joined table (table.csv), with
#     the columns matched by name; the horizontal job once more with party2 as the recipient,
#     whose table must land in party2's --output-dir.
# Every daemon is stopped and every namespace and temporary file removed on exit, pass or fail.
#
# Usage: tests/deploy/netns_federation.sh BIN_DIR [ROWS]
#   BIN_DIR holds fedanon, fedanon-leader, fedanon-party, fedanonctl (CTest passes
#   ${CMAKE_BINARY_DIR}/bin). Exit 0 pass, 1 fail, 77 skipped (not root, no `ip`, or network
#   namespaces not permitted). FEDANON_NETNS_KEEP=1 keeps the work directory (logs) on failure.
set -euo pipefail

bin="${1:?usage: netns_federation.sh BIN_DIR [ROWS]}"
rows="${2:-3000}"
prog="netns_federation"
# shellcheck source=tests/deploy/netns_lib.sh
. "$(dirname "$0")/netns_lib.sh"
netns_logs_on_failure=("leader*.log" "party*.log" "decoy*.log")

ns_l="$netns_tag-L"
ns_p=("$netns_tag-P1" "$netns_tag-P2" "$netns_tag-P3")
parties=(party1 party2 party3)
leader_ip=10.213.0.1
party_ip=(10.213.0.11 10.213.0.12 10.213.0.13)
port=7443

# --------------------------------------------------------------------------------- namespaces
netns_init
netns_host "$ns_l" "$leader_ip" no
for i in 0 1 2; do netns_host "${ns_p[$i]}" "${party_ip[$i]}" yes; done
say "namespaces: leader $ns_l ($leader_ip), parties ${ns_p[*]} (${party_ip[*]}), bridge $ns_br"

# ------------------------------------------------------------------------------------ the kit
cat >"$work/federation.yaml" <<EOF
federation: netns-test
leader:
  name: leader
  address: $leader_ip:$port
  hosts: [$leader_ip]
parties: [${parties[0]}, ${parties[1]}, ${parties[2]}]
admins: [admin]
validity_days: 1
EOF
"$bin/fedanonctl" provision "$work/federation.yaml" --out "$work/kit" >"$work/logs/provision.log" 2>&1 ||
  fail "fedanonctl provision failed: $(cat "$work/logs/provision.log")"
grep -q "$leader_ip:$port" "$work/kit/${parties[0]}/party.yaml" ||
  fail "party.yaml does not dial $leader_ip:$port"
openssl_san="$(openssl x509 -in "$work/kit/leader/tls.crt" -noout -ext subjectAltName 2>/dev/null || true)"
if [ -n "$openssl_san" ]; then
  grep -q "IP Address:$leader_ip" <<<"$openssl_san" ||
    fail "the leader's certificate does not name $leader_ip: $openssl_san"
fi
export FEDANON_ADMIN_CONFIG="$work/kit/admin/admin.yaml"

# ---------------------------------------------------------------- 2. who can reach whom (no daemons yet)
# Positive control first: throwaway listeners ("decoys") on each party's address are reachable
# from the leader's namespace, so a failure from another party is the bridge's doing.
decoys=()
for i in 0 1 2; do
  mkdir -p "$work/decoy$i"
  start_in "${ns_p[$i]}" "$work/logs/decoy$i.log" "$bin/fedanon-leader" \
    --config "$work/kit/leader/leader.yaml" --listen "${party_ip[$i]}:$port" --data-dir "$work/decoy$i"
  decoys+=("$last_pid")
done
for i in 0 1 2; do wait_listen "${ns_p[$i]}" "$port" "${decoys[$i]}"; done
for i in 0 1 2; do
  can_connect "$ns_l" "${party_ip[$i]}" "$port" ||
    fail "positive control: the leader's namespace cannot reach ${party_ip[$i]}:$port"
done
# Every ordered pair of parties, in parallel (an unanswered ARP takes ~3 s to fail).
probe_pids=() probe_desc=()
for i in 0 1 2; do
  for j in 0 1 2; do
    [ "$i" -eq "$j" ] && continue
    ( if can_connect "${ns_p[$i]}" "${party_ip[$j]}" "$port"; then exit 1; fi ) &
    probe_pids+=("$!")
    probe_desc+=("${parties[$i]} -> ${parties[$j]} (${party_ip[$j]}:$port)")
  done
done
for k in "${!probe_pids[@]}"; do
  wait "${probe_pids[$k]}" || fail "a party reached another party: ${probe_desc[$k]} connected"
done
say "ok: each party's address is reachable from the leader's namespace, from no other party"
for pid in "${decoys[@]}"; do stop_pid "$pid"; done

# ------------------------------------------------------------------------------------- data
"$bin/fedanon" gen-data --rows "$rows" --seed 11 --parties 3 --out "$work/h" \
  >"$work/logs/gen-h.log" 2>&1 || fail "gen-data (horizontal) failed: $(cat "$work/logs/gen-h.log")"
"$bin/fedanon" gen-data --rows "$rows" --seed 12 --parties 2 --partition vertical --out "$work/v" \
  >"$work/logs/gen-v.log" 2>&1 || fail "gen-data (vertical) failed: $(cat "$work/logs/gen-v.log")"
# Each party's data dir: its horizontal partition as table.csv, its vertical columns as
# vertical.csv, and gen-data's taxonomies under the relative paths the specs name.
for i in 0 1 2; do
  d="$work/data/${parties[$i]}"
  mkdir -p "$d/tax" "$d/vtax"
  cp "$work/h/party$((i + 1)).csv" "$d/table.csv"
  cp -R "$work/h/tax/." "$d/tax/"
  if [ "$i" -lt 2 ]; then
    cp "$work/v/party$((i + 1)).csv" "$d/vertical.csv"
    cp -R "$work/v/tax/." "$d/vtax/"
  fi
done
# The vertical spec names its taxonomies tax/...; give them their own directory at the parties.
sed -e 's|taxonomy: tax/|taxonomy: vtax/|' "$work/v/vertical.yaml" >"$work/v/vertical-vtax.yaml"
cp -R "$work/v/tax" "$work/v/vtax"

# ------------------------------------------------------------------------------ 3. daemons
mkdir -p "$work/leader-data"
start_in "$ns_l" "$work/logs/leader.log" "$bin/fedanon-leader" \
  --config "$work/kit/leader/leader.yaml" --data-dir "$work/leader-data"
leader_pid=$last_pid
wait_listen "$ns_l" "$port" "$leader_pid"
party_pids=()
for i in 0 1 2; do
  # --data-dir / --output-dir as the systemd unit and the compose entrypoint pass them.
  start_in "${ns_p[$i]}" "$work/logs/${parties[$i]}.log" "$bin/fedanon-party" \
    --config "$work/kit/${parties[$i]}/party.yaml" --data-dir "$work/data/${parties[$i]}" \
    --output-dir "$work/data/${parties[$i]}/output"
  party_pids+=("$last_pid")
done
connected=""
for _ in $(seq 300); do
  if out="$(in_ns "$ns_l" "$bin/fedanonctl" --json parties 2>/dev/null)"; then
    connected=yes
    for p in "${parties[@]}"; do grep -q "\"$p\"" <<<"$out" || connected=""; done
    [ -n "$connected" ] && break
  fi
  for pid in "$leader_pid" "${party_pids[@]}"; do
    kill -0 "$pid" 2>/dev/null || fail "daemon $pid exited during startup"
  done
  sleep 0.1
done
[ -n "$connected" ] || fail "not every party connected within 30 s: ${out:-leader unreachable}"
in_ns "$ns_l" "$bin/fedanonctl" parties
say "ok: leader and ${parties[*]} up, every party connected"

# The leader's socket is the only listening socket anywhere (TCP or UDP), and each party's only
# connection goes to the leader's address.
listeners="$(in_ns "$ns_l" ss -Htulnp)"
[ "$(grep -c . <<<"$listeners")" -eq 1 ] && grep -q ":$port " <<<"$listeners" &&
  grep -q "pid=$leader_pid," <<<"$listeners" ||
  fail "expected exactly one listening socket in the leader's namespace, fedanon-leader's on" \
       ":$port; ss shows: $listeners"
for i in 0 1 2; do
  l="$(in_ns "${ns_p[$i]}" ss -Htuln)"
  [ -z "$l" ] || fail "${parties[$i]}'s namespace has a listening socket: $l"
  conns="$(in_ns "${ns_p[$i]}" ss -Htn state established)"
  # (the peer may be shown IPv4-mapped: [::ffff:10.213.0.1]:7443)
  [ "$(grep -c . <<<"$conns")" -eq 1 ] &&
    grep -qE "[[:space:]](\[::ffff:)?${leader_ip//./\\.}\]?:$port([[:space:]]|\$)" <<<"$conns" ||
    fail "${parties[$i]} should hold exactly one connection, to $leader_ip:$port; ss shows: $conns"
done
say "ok: the leader is the only listener; each party has one connection, to $leader_ip:$port"
# The probes the compose healthchecks run: the leader's gRPC health service, checked from each
# host with that host's own bundle (no admin certificate needed).
in_ns "$ns_l" "$bin/fedanonctl" health --bundle "$work/kit/leader" --leader "$leader_ip:$port" \
  >/dev/null || fail "fedanonctl health with the leader's bundle failed"
for i in 0 1 2; do
  in_ns "${ns_p[$i]}" "$bin/fedanonctl" health --bundle "$work/kit/${parties[$i]}" \
    --leader "$leader_ip:$port" --service fedanon.v1.PartyLink >/dev/null ||
    fail "fedanonctl health from ${parties[$i]}'s namespace failed"
done
say "ok: the leader's gRPC health service answers SERVING to the leader's and every party's bundle"

# ------------------------------------------------------------------------------- 4. the jobs
ctl() { in_ns "$ns_l" "$bin/fedanonctl" "$@"; }
# run_job NAME SPEC RESULT SUBMIT-ARGS...
run_job() {
  local name="$1" spec="$2" result="$3"; shift 3
  local job
  job="$(ctl submit "$spec" "$@")" || fail "$name job: submit refused"
  say "$name job $job submitted ($*)"
  ctl watch "$job" >"$work/logs/watch-$name.log" 2>&1 || {
    cat "$work/logs/watch-$name.log" >&2
    fail "$name job $job did not finish: $(ctl status "$job" 2>&1 | tr '\n' ' ')"
  }
  ctl result "$job" -o "$result" >/dev/null || fail "$name job $job: result download failed"
  say "ok: $name job $job done, $(($(wc -l <"$result") - 1)) rows"
}
run_job horizontal "$work/h/horizontal.yaml" "$work/h-fed.csv" --parties party1,party2,party3
"$bin/fedanon" anonymize --quiet --spec "$work/h/horizontal.yaml" --input "$work/h/table.csv" \
  --output "$work/h-central.csv" >"$work/logs/anon-h.log" 2>&1 ||
  fail "fedanon anonymize (horizontal) failed: $(cat "$work/logs/anon-h.log")"
same_rows "$work/h-central.csv" "$work/h-fed.csv" ||
  fail "horizontal: the federated table differs from fedanon anonymize on the union:" \
       "$(head -n 10 "$work/cmp.diff")"
say "ok: horizontal result equals fedanon anonymize on the union ($(($(wc -l <"$work/h-fed.csv") - 1)) rows)"

# The same job with a party as the recipient: the table lands in that party's --output-dir.
job="$(ctl submit "$work/h/horizontal.yaml" --parties party1,party2,party3 --recipient party2)" ||
  fail "horizontal job for party2: submit refused"
ctl watch "$job" >"$work/logs/watch-recipient.log" 2>&1 ||
  fail "horizontal job $job for party2 did not finish: $(ctl status "$job" 2>&1 | tr '\n' ' ')"
[ -f "$work/data/party2/output/$job.csv" ] ||
  fail "party2 received no table in its --output-dir ($work/data/party2/output/$job.csv)"
same_rows "$work/h-central.csv" "$work/data/party2/output/$job.csv" ||
  fail "horizontal job $job: party2's table differs from fedanon anonymize on the union:" \
       "$(head -n 10 "$work/cmp.diff")"
say "ok: horizontal job $job with recipient party2: the same table, in party2's --output-dir"

run_job vertical "$work/v/vertical-vtax.yaml" "$work/v-fed.csv" --parties party1,party2 \
  --data party1=vertical.csv --data party2=vertical.csv
"$bin/fedanon" anonymize --quiet --spec "$work/v/vertical.yaml" --input "$work/v/table.csv" \
  --output "$work/v-central.csv" >"$work/logs/anon-v.log" 2>&1 ||
  fail "fedanon anonymize (vertical) failed: $(cat "$work/logs/anon-v.log")"
same_rows "$work/v-central.csv" "$work/v-fed.csv" ||
  fail "vertical: the federated table differs from fedanon anonymize on the joined table:" \
       "$(head -n 10 "$work/cmp.diff")"
say "ok: vertical result equals fedanon anonymize on the joined table ($(($(wc -l <"$work/v-fed.csv") - 1)) rows)"

# Every daemon is still up (none crashed along the way), then stop them cleanly.
for pid in "$leader_pid" "${party_pids[@]}"; do
  kill -0 "$pid" 2>/dev/null || fail "daemon $pid is no longer running"
done
for pid in "${party_pids[@]}" "$leader_pid"; do
  kill -TERM "$pid"
  rc=0
  wait "$pid" || rc=$?
  [ "$rc" -eq 0 ] || fail "daemon $pid exited with status $rc on SIGTERM"
done
pids=()
say "passed"
