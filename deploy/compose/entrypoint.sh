#!/usr/bin/env bash
# Entrypoint of the docker-compose demo (docker-compose.yml at the top of the repository).
# Usage: entrypoint.sh provision | leader | party | admin
#
#   provision  fedanonctl provision $FEDANON_CONFIG_DIR/federation.yaml --out $FEDANON_KIT_DIR/federation
#              (skipped when that kit already exists), then copies each participant's bundle into
#              its own volume mounted at $FEDANON_BUNDLES_DIR/<name> (mode 0700, owner 10001).
#              The full kit, with the CA key, stays in the `kit` volume that only this service
#              mounts.
#   leader     exec fedanon-leader --config $FEDANON_ETC/leader.yaml --data-dir $FEDANON_DATA_DIR
#              (--metrics-listen $FEDANON_METRICS_LISTEN when set: loopback, see prometheus.yml)
#   party      demo data: when $FEDANON_DATA_DIR/table.csv is missing, runs `fedanon gen-data`
#              (seed $FEDANON_DEMO_SEED, $FEDANON_DEMO_ROWS rows split over $FEDANON_DEMO_PARTIES
#              parties) and keeps only partition $FEDANON_PARTY_INDEX as table.csv plus the
#              taxonomies in tax/; then exec fedanon-party --config $FEDANON_ETC/party.yaml
#              --data-dir $FEDANON_DATA_DIR --output-dir $FEDANON_DATA_DIR/output.
#   admin      waits until every party of $FEDANON_EXPECT_PARTIES is connected, submits
#              $FEDANON_CONFIG_DIR/job.yaml, watches it and downloads the result into
#              $FEDANON_DATA_DIR/<job>.csv. Exit 0 only if the job is done.
#
# Every path is an environment variable with the container's default, so the same script runs
# outside a container (deploy/check-compose.sh does not need that; it is for debugging).
set -euo pipefail

CONFIG_DIR="${FEDANON_CONFIG_DIR:-/config}"
KIT_DIR="${FEDANON_KIT_DIR:-/kit}"
BUNDLES_DIR="${FEDANON_BUNDLES_DIR:-/bundles}"
ETC="${FEDANON_ETC:-/etc/fedanon}"
DATA_DIR="${FEDANON_DATA_DIR:-/var/lib/fedanon}"
RUN_UID="${FEDANON_UID:-10001}"

log() { printf '%s entrypoint(%s): %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$role" "$*" >&2; }
die() { log "error: $*"; exit 1; }

role="${1:-}"
[ $# -ge 1 ] && shift

case "$role" in
provision)
  kit="$KIT_DIR/federation"
  # fedanonctl builds the kit in a sibling temporary directory and renames it into place, so the
  # output is a subdirectory of the volume (a volume's mount point itself cannot be renamed over).
  if [ -f "$kit/leader/leader.yaml" ]; then
    log "kit $kit exists; keeping it (remove the 'kit' volume to re-provision)"
  else
    fedanonctl provision "$CONFIG_DIR/federation.yaml" --out "$kit"
  fi
  chmod 0700 "$KIT_DIR" "$kit"
  [ -d "$BUNDLES_DIR" ] || die "no bundle volumes under $BUNDLES_DIR"
  copied=0
  for dest in "$BUNDLES_DIR"/*/; do
    dest="${dest%/}"
    name="$(basename "$dest")"
    [ -d "$kit/$name" ] || die "no bundle '$name' in $kit (is it in federation.yaml?)"
    # Replace the bundle's content (a re-provisioned kit replaces old certificates).
    find "$dest" -mindepth 1 -delete
    cp -a "$kit/$name/." "$dest/"
    if [ "$(id -u)" -eq 0 ]; then chown -R "$RUN_UID:$RUN_UID" "$dest"; fi
    chmod 0700 "$dest"
    log "bundle $name -> $dest"
    copied=$((copied + 1))
  done
  [ "$copied" -gt 0 ] || die "no bundle volumes under $BUNDLES_DIR"
  ;;

leader)
  extra=()
  [ -n "${FEDANON_LISTEN:-}" ] && extra+=(--listen "$FEDANON_LISTEN")
  [ -n "${FEDANON_METRICS_LISTEN:-}" ] && extra+=(--metrics-listen "$FEDANON_METRICS_LISTEN")
  exec fedanon-leader --config "$ETC/leader.yaml" --data-dir "$DATA_DIR" "${extra[@]}" "$@"
  ;;

party)
  if [ ! -f "$DATA_DIR/table.csv" ]; then
    idx="${FEDANON_PARTY_INDEX:?set FEDANON_PARTY_INDEX (1..FEDANON_DEMO_PARTIES) for demo data}"
    rows="${FEDANON_DEMO_ROWS:-30000}"
    seed="${FEDANON_DEMO_SEED:-7}"
    parties="${FEDANON_DEMO_PARTIES:-3}"
    log "no $DATA_DIR/table.csv: generating demo data (partition $idx of $parties, $rows rows, seed $seed)"
    tmp="$(mktemp -d "$DATA_DIR/.gen.XXXXXX")"
    fedanon gen-data --rows "$rows" --seed "$seed" --parties "$parties" --out "$tmp" >/dev/null
    [ -f "$tmp/party$idx.csv" ] || die "gen-data wrote no party$idx.csv"
    rm -rf "$DATA_DIR/tax"
    cp -R "$tmp/tax" "$DATA_DIR/tax"
    cp "$tmp/party$idx.csv" "$DATA_DIR/table.csv.partial"
    mv "$DATA_DIR/table.csv.partial" "$DATA_DIR/table.csv"  # last: marks the data complete
    rm -rf "$tmp"                                            # the other partitions go away
  fi
  extra=()
  [ -n "${FEDANON_LEADER:-}" ] && extra+=(--leader "$FEDANON_LEADER")
  # --output-dir: the bundle's party.yaml says `output_dir: output`, next to the config, which
  # is the read-only bundle mount; integrated tables for this party go to its data volume.
  exec fedanon-party --config "$ETC/party.yaml" --data-dir "$DATA_DIR" \
    --output-dir "$DATA_DIR/output" "${extra[@]}" "$@"
  ;;

admin)
  : "${FEDANON_ADMIN_CONFIG:=$ETC/admin.yaml}"
  export FEDANON_ADMIN_CONFIG
  expect="${FEDANON_EXPECT_PARTIES:-hospital-a,hospital-b,hospital-c}"
  wait_s="${FEDANON_WAIT_SECONDS:-120}"
  deadline=$((SECONDS + wait_s))
  while :; do
    missing=()
    if out="$(fedanonctl --json parties 2>/dev/null)"; then
      IFS=',' read -r -a want <<<"$expect"
      for p in "${want[@]}"; do
        grep -q "\"$p\"" <<<"$out" || missing+=("$p")
      done
      [ "${#missing[@]}" -eq 0 ] && break
    else
      missing=("(leader not reachable)")
    fi
    [ "$SECONDS" -lt "$deadline" ] || die "parties not connected after ${wait_s}s: ${missing[*]}"
    sleep 2
  done
  log "parties connected: $expect"
  fedanonctl parties
  # The submitter reads every taxonomy the spec names relative to the spec's directory: put the
  # spec next to a copy of gen-data's taxonomies (the same files every party holds).
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  cp "$CONFIG_DIR/job.yaml" "$work/job.yaml"
  fedanon gen-data --rows 10 --seed 1 --out "$work/gen" >/dev/null
  cp -R "$work/gen/tax" "$work/tax"
  job="$(fedanonctl submit "$work/job.yaml" --parties "$expect")"
  log "submitted $job"
  rc=0
  fedanonctl watch "$job" || rc=$?
  fedanonctl status "$job" || true
  [ "$rc" -eq 0 ] || die "job $job did not finish (watch exit $rc)"
  fedanonctl result "$job" -o "$DATA_DIR/$job.csv"
  log "integrated table: $DATA_DIR/$job.csv ($(wc -l <"$DATA_DIR/$job.csv") lines); first rows:"
  head -n 5 "$DATA_DIR/$job.csv"
  ;;

*)
  echo "usage: entrypoint.sh provision | leader | party | admin" >&2
  exit 2
  ;;
esac
