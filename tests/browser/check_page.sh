#!/usr/bin/env bash
# Loads PAGE.html in headless Chromium (Debian's /usr/bin/chromium, or $CHROMIUM) and checks it:
# exits non-zero on any console error, page error or failed load; writes OUT_DIR/screenshot.png
# and OUT_DIR/values.json (every element's data-check attribute -> its trimmed textContent).
# Usage: tests/browser/check_page.sh PAGE.html OUT_DIR      (details: check_page.py)
set -euo pipefail
if [ "$#" -ne 2 ]; then
  echo "usage: tests/browser/check_page.sh PAGE.html OUT_DIR" >&2
  exit 2
fi
exec python3 "$(dirname "$0")/check_page.py" "$1" "$2"
