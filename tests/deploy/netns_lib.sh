# shellcheck shell=bash disable=SC2154
# Shared by the network-namespace tests in tests/deploy/ (sourced, not run). Before sourcing, set
# `prog` (the name in messages) and `bin` (the directory with the fedanon binaries).
#
# A run builds a star of "hosts" on 10.213.0.0/24: one namespace per host, each joined by a veth
# pair to a Linux bridge in a namespace of its own. A host attached with isolated=yes sits on an
# isolated bridge port: the kernel drops frames between two isolated ports, so such a host reaches
# the non-isolated hosts (the leader) and no other isolated host. Names carry the caller's pid, so
# parallel runs never collide, and nothing is created in the caller's own namespace.
#
#   netns_init                    checks root and tools (else exit 77), creates $work and the bridge
#   netns_host NS IP ISOLATED [HOSTS_LINES]
#                                 a host namespace; HOSTS_LINES become its /etc/hosts under
#                                 `ip netns exec` (iproute2 bind-mounts /etc/netns/NS/hosts)
#   start_in NS LOG CMD...        runs CMD in NS in the background; its pid in $last_pid
#   stop_pid PID                  SIGTERM, wait, forget
#   wait_listen NS PORT PID       until a TCP socket listens on PORT in NS (fails if PID exits)
#   can_connect NS ADDR PORT      a TCP connection to ADDR:PORT can be opened from NS
# On exit (pass, fail or signal) every process started here and every process left in the
# namespaces is killed, the namespaces and /etc/netns entries are removed, and $work is deleted
# (kept on failure with FEDANON_NETNS_KEEP=1). Exit codes: 0 pass, 1 fail, 77 skipped.

say() { printf '%s: %s\n' "$prog" "$*"; }
skip() { say "SKIP: $*"; exit 77; }
fail() { say "FAIL: $*" >&2; exit 1; }

netns_tag="fa$$"
ns_br="$netns_tag-br"
created_ns=()
created_etc=()
pids=()
last_pid=""
work=""
# Log files whose tails are printed when the test fails (globs relative to $work/logs).
netns_logs_on_failure=("*.log")

netns_cleanup() {
  local rc=$? pid ns f g
  set +e
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  # Anything else still running inside our namespaces was started by this script.
  for ns in "${created_ns[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  done
  for ns in "${created_ns[@]}"; do ip netns del "$ns" 2>/dev/null; done
  for ((g = ${#created_etc[@]} - 1; g >= 0; g--)); do  # newest first: /etc/netns last
    f="${created_etc[$g]}"
    if [ "$f" = /etc/netns ]; then rmdir /etc/netns 2>/dev/null; else rm -rf "$f"; fi
  done
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -n "$work" ] && [ -d "$work/logs" ]; then
    for g in "${netns_logs_on_failure[@]}"; do
      for f in "$work"/logs/$g; do
        [ -s "$f" ] || continue
        echo "---- last lines of $(basename "$f")" >&2
        tail -n 15 "$f" >&2
      done
    done
  fi
  if [ -n "$work" ]; then
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ "${FEDANON_NETNS_KEEP:-0}" = 1 ]; then
      say "kept $work"
    else
      rm -rf "$work"
    fi
  fi
  exit "$rc"
}

netns_init() {
  [ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces (run as root: ip netns add)"
  command -v ip >/dev/null 2>&1 || skip "iproute2 ('ip') is not installed"
  command -v ss >/dev/null 2>&1 || skip "iproute2's 'ss' is not installed"
  local b
  for b in fedanon fedanon-leader fedanon-party fedanonctl; do
    [ -x "$bin/$b" ] || fail "$bin/$b not found or not executable (build the project first)"
  done
  bin="$(cd "$bin" && pwd)"
  trap netns_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  work="$(mktemp -d -t "fedanon-$prog.XXXXXX")"
  mkdir -p "$work/logs"
  if ! ip netns add "$ns_br" 2>"$work/netns.err"; then
    skip "cannot create a network namespace ($(tr '\n' ' ' <"$work/netns.err"))"
  fi
  created_ns+=("$ns_br")
  # Kernel features the topology needs (bridge, veth, isolated ports): missing ones skip.
  ip -n "$ns_br" link add br0 type bridge 2>"$work/netns.err" ||
    skip "cannot create a bridge in a network namespace ($(tr '\n' ' ' <"$work/netns.err"))"
  ip -n "$ns_br" link set br0 up
}

in_ns() { local ns="$1"; shift; ip netns exec "$ns" "$@"; }

netns_host() {  # netns_host NS IP ISOLATED [HOSTS_LINES]
  local ns="$1" addr="$2" isolated="$3" hosts="${4:-}" port="p${#created_ns[@]}"
  if [ -n "$hosts" ]; then
    if [ ! -d /etc/netns ]; then
      mkdir /etc/netns
      created_etc+=(/etc/netns)  # removed last, and only if empty (another run may use it)
    fi
    mkdir "/etc/netns/$ns"
    created_etc+=("/etc/netns/$ns")
    printf '127.0.0.1 localhost\n%s\n' "$hosts" >"/etc/netns/$ns/hosts"
  fi
  ip netns add "$ns"
  created_ns+=("$ns")
  ip -n "$ns" link set lo up
  ip -n "$ns_br" link add "$port" type veth peer name eth0 netns "$ns" 2>"$work/netns.err" ||
    skip "cannot create a veth pair between namespaces ($(tr '\n' ' ' <"$work/netns.err"))"
  ip -n "$ns_br" link set "$port" master br0
  if [ "$isolated" = yes ]; then
    ip -n "$ns_br" link set "$port" type bridge_slave isolated on 2>"$work/netns.err" ||
      skip "isolated bridge ports not supported ($(tr '\n' ' ' <"$work/netns.err"))"
    ip -n "$ns_br" -d link show "$port" | grep -q 'isolated on' ||
      skip "bridge port $port did not become isolated (kernel or iproute2 too old?)"
  fi
  ip -n "$ns_br" link set "$port" up
  ip -n "$ns" addr add "$addr/24" dev eth0
  ip -n "$ns" link set eth0 up
}

# Starts a program in a namespace in the background (ip netns exec execs it: same pid).
start_in() {
  local ns="$1" log="$2"
  shift 2
  ip netns exec "$ns" "$@" </dev/null >>"$log" 2>&1 &
  last_pid=$!
  pids+=("$last_pid")
}

# Stops a process started by start_in and forgets it (its pid may be reused afterwards).
stop_pid() {
  local keep=() p
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  pids=("${keep[@]}")
}

# Waits until a TCP socket listens on PORT in NS (ss shows only that namespace's sockets).
wait_listen() {
  local ns="$1" port="$2" pid="$3"
  for _ in $(seq 300); do
    if in_ns "$ns" ss -Htln "sport = :$port" | grep -q .; then return 0; fi
    kill -0 "$pid" 2>/dev/null || fail "process $pid exited before listening on port $port in $ns"
    sleep 0.1
  done
  fail "nothing listens on port $port in $ns after 30 s"
}

# Succeeds when a TCP connection to ADDR:PORT can be opened from NS.
can_connect() { in_ns "$1" timeout 10 bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null; }

# same_rows A B: A and B (CSV with a header) have the same columns and the same multiset of rows
# once B's columns are put in A's order (fields compared as text; the generated data holds no
# commas or quotes inside fields). On a difference the first lines of the diff are in
# $work/cmp.diff.
same_rows() {
  awk -F, -v OFS=, '
    FNR == 1 { if (FILENAME == ARGV[1]) { n = NF; for (i = 1; i <= NF; i++) want[$i] = i; next }
               if (NF != n) { print "column count differs: " n " vs " NF > "/dev/stderr"; exit 2 }
               for (i = 1; i <= NF; i++) {
                 if (!($i in want)) { print "column " $i " missing" > "/dev/stderr"; exit 2 }
                 pos[want[$i]] = i }
               next }
    FILENAME == ARGV[1] { print "A " $0; next }
    { line = $(pos[1]); for (i = 2; i <= n; i++) line = line OFS $(pos[i]); print "B " line }
  ' "$1" "$2" >"$work/cmp.txt" 2>"$work/cmp.diff" || return 1
  grep -q '^A ' "$work/cmp.txt" || { echo "no rows in $1" >"$work/cmp.diff"; return 1; }
  diff <(sed -n 's/^A //p' "$work/cmp.txt" | LC_ALL=C sort) \
       <(sed -n 's/^B //p' "$work/cmp.txt" | LC_ALL=C sort) >"$work/cmp.diff"
}
