#!/usr/bin/env bash
# CI check of the container deployment (docker-compose.yml, deploy/Dockerfile, deploy/compose/):
#  1. every file the compose file references exists: bind-mount sources, build context and
#     Dockerfile, and each /config/<file> it or the entrypoint uses (./deploy/compose is /config);
#     only the leader publishes a port; the leader's healthcheck calls its gRPC health service
#     (`fedanonctl health`), the parties' the local `fedanon party status`; metrics are served on
#     loopback only (FEDANON_METRICS_LISTEN) and Prometheus shares the leader's network namespace;
#  2. deploy/compose/entrypoint.sh passes `bash -n`;
#  3. `docker-compose -f docker-compose.yml config -q` when Debian's docker-compose is installed
#     (`apt-get install docker-compose`; not a build dependency) — skipped with a message otherwise.
# No Docker engine is needed. Exit 0 when every check that ran passed, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
compose=docker-compose.yml
fail=0
err() { echo "check-compose: FAIL: $*" >&2; fail=1; }
ok() { echo "check-compose: ok: $*"; }

[ -f "$compose" ] || { err "$compose missing"; exit 1; }

# 1a. Bind mounts: "- ./src:/dst[:ro]" (relative sources are relative to the compose file).
while IFS= read -r src; do
  [ -e "$src" ] && ok "mount source $src" || err "mount source $src does not exist"
done < <(sed -nE 's/^[[:space:]]*-[[:space:]]*"?(\.{1,2}\/[^:"]*):.*/\1/p' "$compose" | sort -u)

# 1b. Build context and Dockerfile (the Dockerfile is relative to the context).
ctx="$(sed -nE 's/^[[:space:]]*context:[[:space:]]*"?([^"#[:space:]]+).*/\1/p' "$compose" | sort -u)"
df="$(sed -nE 's/^[[:space:]]*dockerfile:[[:space:]]*"?([^"#[:space:]]+).*/\1/p' "$compose" | sort -u)"
[ "$(wc -w <<<"$ctx")" -le 1 ] || err "more than one build context: $ctx"
[ "$(wc -w <<<"$df")" -le 1 ] || err "more than one dockerfile: $df"
if [ -n "$ctx" ]; then
  [ -d "$ctx" ] && ok "build context $ctx" || err "build context $ctx does not exist"
  [ -f "$ctx/${df:-Dockerfile}" ] && ok "dockerfile $ctx/${df:-Dockerfile}" ||
    err "dockerfile $ctx/${df:-Dockerfile} does not exist"
  # Files the Dockerfile COPYs from the context.
  while IFS= read -r f; do
    [ -e "$ctx/$f" ] && ok "COPY source $f" || err "COPY source $f (in ${df:-Dockerfile}) does not exist"
  done < <(sed -nE '/^COPY[[:space:]]+--from=/d; s/^COPY[[:space:]]+//p' "$ctx/${df:-Dockerfile}" |
           awk '{for (i = 1; i < NF; i++) print $i}' | sort -u)
fi

# 1c. /config/<file> named by the compose file or the entrypoint (FEDANON_CONFIG_DIR=/config).
config_src="$(sed -nE 's/^[[:space:]]*-[[:space:]]*"?(\.{1,2}\/[^:"]*):\/config(:ro)?"?[[:space:]]*$/\1/p' "$compose" | sort -u)"
if [ -z "$config_src" ]; then
  err "no bind mount of a helper directory at /config"
else
  [ "$(wc -w <<<"$config_src")" -eq 1 ] || err "several sources mounted at /config: $config_src"
  helpers="$({
    grep -oE '/config/[A-Za-z0-9._-]+' "$compose" | sed 's|^/config/||'
    grep -oE '\$CONFIG_DIR/[A-Za-z0-9._-]+' "$config_src/entrypoint.sh" 2>/dev/null |
      sed 's|^\$CONFIG_DIR/||'
  } | sort -u)"
  [ -n "$helpers" ] || err "no /config/<file> found in $compose"
  for f in $helpers; do
    [ -e "$config_src/$f" ] && ok "helper $config_src/$f" ||
      err "helper $config_src/$f (used as /config/$f) does not exist"
  done
fi

# 1d. Topology: only the leader publishes a port (parties and admins dial out), and the
#     long-running services' healthchecks call the leader's gRPC health service.
published="$(awk '
  /^[^[:space:]#]/ { in_services = ($0 ~ /^services:/) ; next }
  in_services && /^  [A-Za-z0-9_.-]+:[[:space:]]*$/ { svc = $1; sub(/:$/, "", svc); next }
  in_services && svc != "" && /^    ports:/ { print svc }
' "$compose" | sort -u | tr '\n' ' ')"
if [ "$published" = "leader " ]; then
  ok "only the leader publishes a port"
else
  err "services publishing ports: '${published}' (want exactly: leader)"
fi
if grep -qE '^[[:space:]]*test:.*fedanonctl.*health' "$compose"; then
  ok "the leader's healthcheck calls its gRPC health service (fedanonctl health)"
else
  err "expected the leader's healthcheck to run 'fedanonctl health'"
fi
if grep -qE '^[[:space:]]*test:.*fedanon party status' "$compose"; then
  ok "the parties' healthcheck is local (fedanon party status)"
else
  err "expected the parties' healthcheck to run 'fedanon party status'"
fi
bad_metrics="$(sed -nE 's/^[[:space:]]*FEDANON_METRICS_LISTEN:[[:space:]]*"?([^"[:space:]]*)"?.*/\1/p' "$compose" |
  grep -vE '^(127\.[0-9.]+|\[::1\]):[0-9]+$' || true)"
if [ -z "$bad_metrics" ]; then
  ok "metrics listen on loopback only"
else
  err "metrics address not on loopback: $bad_metrics"
fi
if grep -qE '^  prometheus:' "$compose"; then
  if awk '/^  prometheus:/ {p = 1; next} /^  [A-Za-z0-9_.-]+:/ {p = 0} p' "$compose" |
     grep -qE 'network_mode:[[:space:]]*"?service:leader"?'; then
    ok "prometheus shares the leader's network namespace (scrapes its loopback)"
  else
    err "prometheus must run with network_mode: service:leader (the metrics are on loopback)"
  fi
fi

# 2. Entrypoint syntax.
if [ -n "$config_src" ] && [ -f "$config_src/entrypoint.sh" ]; then
  bash -n "$config_src/entrypoint.sh" && ok "bash -n $config_src/entrypoint.sh" ||
    err "syntax error in $config_src/entrypoint.sh"
fi

# 3. The compose file itself.
if command -v docker-compose >/dev/null 2>&1; then
  if out="$(docker-compose -f "$compose" config -q 2>&1)"; then
    ok "docker-compose -f $compose config ($(docker-compose version --short 2>/dev/null || echo '?'))"
  else
    err "docker-compose -f $compose config: $out"
  fi
else
  echo "check-compose: SKIP: docker-compose not installed, compose schema not validated" \
       "(Debian: apt-get install docker-compose)"
fi

if [ "$fail" -ne 0 ]; then
  echo "check-compose: FAILED" >&2
  exit 1
fi
echo "check-compose: passed"
