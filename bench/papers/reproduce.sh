#!/usr/bin/env bash
# Reruns the seed papers' experiments that public data allows and writes one self-contained HTML
# page (OUT/papers.html) beside OUT/results.csv (every number) and OUT/claims.csv (every published
# statement, ours and a verdict). docs/evaluation.md is the page's index.
# Usage: bench/papers/reproduce.sh [--quick (default, < 10 min) | --full (< 90 min) | --fixture]
#                                  [--out DIR] [--build DIR] [--adult DIR] [--only EXP,...]
# Needs python3 and a built fedanon (./deploy/build.sh, or cmake --build build/default
# --target fedanon); UCI Adult in ../shared/datasets/adult unless --adult says where, except for
# --fixture, which runs on a generated table.
set -euo pipefail
exec python3 "$(dirname "$0")/reproduce.py" "$@"
