# Sourced by the browser tests: decides whether a test may run its browser.
# FEDANON_NO_BROWSER=1 skips (exit 77, CTest's SKIP_RETURN_CODE); otherwise a missing browser is a
# failure, not a skip, so that CI (which installs chromium with deploy/install-deps.sh) cannot
# pass without having looked at a page.
require_browser() {
  if [ "${FEDANON_NO_BROWSER:-}" = "1" ]; then
    echo "SKIP: FEDANON_NO_BROWSER=1" >&2
    exit 77
  fi
  local browser="${CHROMIUM:-/usr/bin/chromium}"
  if [ ! -x "$browser" ]; then
    echo "FAIL: no browser at $browser: run deploy/install-deps.sh (Debian's chromium), or set" \
      "FEDANON_NO_BROWSER=1 to skip the browser tests on this machine" >&2
    exit 1
  fi
  if ! command -v python3 > /dev/null; then
    echo "FAIL: python3 is needed by tests/browser/check_page.py (deploy/install-deps.sh)" >&2
    exit 1
  fi
}
