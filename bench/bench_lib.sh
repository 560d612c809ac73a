# shellcheck shell=bash
# Sourced by the benchmarks (not run alone; they run from the checkout's root): the tables and specs several of them build, so that
# bench/perf.sh measures exactly what bench/large_tables.sh and bench/vertical_daemons.sh measure.
#
# gen_table13 FEDANON ROWS DIR: `fedanon gen-data --rows ROWS --seed 1 --out DIR` and DIR/job13.yaml,
#   gen-data's job with fnlwgt made a QID too (the papers' 13 QIDs, L=4 K=20 C=0.2).
# fnlwgt_qid SPEC: gen-data's federated horizontal.yaml (or a copy) rewritten in place with fnlwgt
#   a QID on a public grid [0, 1500000] (gen-data's range), the papers' 13 QIDs.
# adult_blowup ROWS OUT: ROWS records of ../shared/datasets/adult/adult_clean.csv drawn with
#   replacement (Python's random, seed 1: the same file every time) behind its header; the spec is
#   bench/adult_lkc_spec.sh's (ARX hierarchies, continuous fnlwgt, capital-gain, capital-loss).
# write_vertical_template_spec SPEC [QIDS]: rewrites gen-data's vertical.yaml in place into one
#   QID template with k = 50 — marital-status turned into a QID, fnlwgt (left out by gen-data's
#   federated spec) not in it — over QIDS (comma-separated names) or, without QIDS, over all 13
#   QID attributes (mohammed2011 §7.3's AllAttQID setting).
# timed OUT COMMAND...: runs COMMAND and writes "wall user sys peak-KiB faults" to OUT: seconds to
#   the 0.1 ms from the kernel's accounting of the finished process (wait4; the CPU time includes
#   the children it waited for, such as the daemons of `fedanon federation up`), the peak RSS of
#   the largest of those processes, and the page faults of them all (minor and major: each a first
#   touch of a page, whose cost differs tenfold between machines). /usr/bin/time rounds the
#   seconds to 10 ms, too coarse for a job of 0.1 s. Returns COMMAND's exit status.
# loadavg: the 1, 5 and 15-minute load averages.
# watch_daemons PID: until PID ends, every 0.2 s, the peak RSS (VmHWM, KiB) and CPU ticks (utime +
#   stime) of each child of PID; then prints one line per child, "NAME PEAK_KIB TICKS", NAME the
#   program's and, with `--config DIR/FILE`, the config's directory: "fedanon-party(party1)".
#   Bash builtins only, no process started per poll: the loop it replaced (pgrep, tr, awk: 14
#   processes every 0.2 s) took 1.4 s of CPU in 10 s, 3.4% of a 2-core machine taken from the job
#   it measured. Run it in the background beside a `wait PID`, so that PID's end is seen at once.

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

watch_daemons() {
  local up="$1" tick_fd kids c n m i key value _ args fields
  local -A names=() hwm=() ticks=()
  exec {tick_fd}<> <(:)
  while kill -0 "$up" 2> /dev/null; do
    kids=""
    if [ -r "/proc/$up/task/$up/children" ]; then
      read -r kids < "/proc/$up/task/$up/children" || true
    else  # a kernel without CONFIG_PROC_CHILDREN
      kids="$(pgrep -P "$up" || true)"
    fi
    for c in $kids; do
      if [ -z "${names[$c]:-}" ]; then
        args=()
        mapfile -d '' args < "/proc/$c/cmdline" 2> /dev/null || continue
        [ "${#args[@]}" -gt 0 ] || continue
        n="${args[0]##*/}"
        for ((i = 1; i + 1 < ${#args[@]}; ++i)); do
          if [ "${args[$i]}" = "--config" ]; then
            m="${args[$((i + 1))]%/*}"
            n="$n(${m##*/})"
          fi
        done
        names[$c]="$n"
      fi
      while read -r key value _; do
        if [ "$key" = "VmHWM:" ]; then
          hwm[${names[$c]}]="$value"
          break
        fi
      done < "/proc/$c/status" 2> /dev/null || true
      if read -r -a fields < "/proc/$c/stat" 2> /dev/null; then
        ticks[${names[$c]}]=$((fields[13] + fields[14]))
      fi
    done
    read -r -t 0.2 -u "$tick_fd" _ || true
  done
  exec {tick_fd}>&-
  for n in "${!hwm[@]}"; do echo "$n ${hwm[$n]} ${ticks[$n]:-0}"; done
}

timed() {
  python3 -c '
import os, sys, time
start = time.monotonic()
# posix_spawn (a vfork-like clone), not fork + exec: a forked Python child wrote to about 1,000
# pages of the interpreter before its exec, copy-on-write faults that wait4 then counted as the
# job itself (15 ms of CPU, and as much wall time, on a 0.1 s job).
try:
    pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
except OSError as e:
    print(f"{sys.argv[2]}: {e}", file=sys.stderr)
    sys.exit(127)
_, status, ru = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(f"{time.monotonic() - start:.4f} {ru.ru_utime:.4f} {ru.ru_stime:.4f} {ru.ru_maxrss} "
              f"{ru.ru_minflt + ru.ru_majflt}\n")
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
' "$@"
}

gen_table13() {
  local fedanon="$1" rows="$2" dir="$3"
  "$fedanon" gen-data --rows "$rows" --seed 1 --out "$dir" > /dev/null 2>&1
  # gen-data's own job leaves fnlwgt out of the release.
  sed -e 's/{name: fnlwgt, role: other, type: continuous}/{name: fnlwgt, role: qid, type: continuous}/' \
    "$dir/job.yaml" > "$dir/job13.yaml"
  [ "$(grep -c 'role: qid' "$dir/job13.yaml")" = 13 ] || { echo "expected 13 QIDs" >&2; return 1; }
}

fnlwgt_qid() {
  python3 - "$1" <<'PY'
import sys
path = sys.argv[1]
y = open(path).read()
anchor = "  - {name: education,"
y = y.replace(anchor, "  - {name: fnlwgt, role: qid, type: continuous, range: [0, 1500000], "
              "precision: 1}\n" + anchor, 1)
assert y.count("role: qid") == 13, "expected 13 QIDs"
open(path, "w").write(y)
PY
}

adult_blowup() {
  local rows="$1" out="$2" src="../shared/datasets/adult/adult_clean.csv"
  [ -f "$src" ] || { echo "UCI Adult not found: $src" >&2; return 1; }
  python3 - "$src" "$rows" "$out" <<'PY'
import random, sys
src, rows, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(src) as f:
    header, lines = f.readline(), f.readlines()
rng = random.Random(1)
with open(out, "w") as o:
    o.write(header)
    left = rows
    while left > 0:
        n = min(left, 1 << 20)
        o.writelines(rng.choices(lines, k=n))
        left -= n
PY
}

write_vertical_template_spec() {
  python3 - "$1" "${2:-}" <<'PY'
import re, sys
path, wanted = sys.argv[1], sys.argv[2]
y = open(path).read()
y = re.sub(r"\{name: marital-status, role: sensitive, values: \[[^\]]*\]",
           "{name: marital-status, role: qid, taxonomy: tax/marital-status.csv", y)
qids = re.findall(r"\{name: ([\w-]+), role: qid", y)
if wanted:
    missing = [q for q in wanted.split(",") if q not in qids]
    assert not missing, f"not QIDs of the spec: {missing}"
    qids = wanted.split(",")
y = re.sub(r"privacy: .*\n", "privacy:\n  model: templates\n  templates:\n    - {qid: [" +
           ", ".join(qids) + "], k: 50}\n", y)
open(path, "w").write(y)
PY
}
