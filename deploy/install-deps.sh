#!/usr/bin/env bash
# Installs fedanon's build and test dependencies from Debian bookworm packages.
# Idempotent: packages already present are skipped, so it is cheap to run every time.
# Runs as root, or through sudo when not root.
# Usage: deploy/install-deps.sh [--build-only]   (--build-only: skip tools used only by tests,
#        e.g. in deploy/Dockerfile's build stage)
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git ca-certificates
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libssl-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libyaml-cpp-dev libsqlite3-dev nlohmann-json3-dev prometheus-cpp-dev libpq-dev
  openssl iproute2 ccache mold
)
# Used only by tests: deploy/check-compose.sh validates docker-compose.yml with `docker-compose
# config`. Debian's docker-compose 1.29 is pure Python (python3 and ~16 small python3-* packages,
# no daemon); with --no-install-recommends below it does not pull the Docker engine (docker.io).
# python3 runs tests/lint/check_architecture.py; clang-16 with libclang-rt-16-dev (libFuzzer, ASan
# and UBSan runtimes) builds the `fuzz` preset that CI runs: the fuzz targets and -Wthread-safety
# (docs/fuzzing.md). postgresql (the server: initdb, pg_ctl) runs the `postgres` tests' private
# clusters (docs/postgres.md); the party itself needs only libpq. chromium (headless, driven over
# its DevTools pipe by tests/browser/check_page.py) opens the HTML pages in the `browser` tests;
# chromium-driver serves WebDriver clients of the same browser. clang-tidy (Debian's default, 14)
# runs the `lint_clang_tidy` test (tests/lint/clang_tidy.py); its cache of clean units holds that
# version's results.
TEST_TOOLS=(docker-compose python3 clang-16 libclang-rt-16-dev clang-tidy postgresql chromium
  chromium-driver)

case "${1:-}" in
  "") PACKAGES+=("${TEST_TOOLS[@]}") ;;
  --build-only) ;;
  *) echo "usage: deploy/install-deps.sh [--build-only]" >&2; exit 2 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
