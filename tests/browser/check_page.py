#!/usr/bin/env python3
"""Opens one HTML page in headless Chromium and checks that it loads cleanly.

Usage: check_page.py PAGE.html OUT_DIR

Drives Debian's Chromium through the DevTools protocol over a pipe (--remote-debugging-pipe:
JSON messages ended by a NUL byte on file descriptors 3 and 4), so it needs nothing beyond
python3 and the chromium package. It

* loads PAGE.html from a file:// URL in a fresh profile with background networking off;
* fails (exit 1) on any console error (console.error/assert, an error entry of the browser's
  log), any uncaught exception or unhandled rejection, a failed navigation or resource load,
  an HTTP status of 400 or more, and any request to a scheme other than file:, data:, blob: or
  about: (a self-contained page fetches nothing);
* writes OUT_DIR/screenshot.png (the whole page) and OUT_DIR/values.json: a JSON object mapping
  every element's `data-check` attribute to its trimmed textContent (a key used twice fails the
  run: the test could not know which element it asserts).

The browser is /usr/bin/chromium unless CHROMIUM names another. Exit codes: 0 clean, 1 the page
failed a check, 2 usage or the browser could not be started or did not answer in time.
"""
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

TIMEOUT_SECONDS = float(os.environ.get("CHECK_PAGE_TIMEOUT", "60"))
SETTLE_SECONDS = 0.5  # after the load event, for errors raised by late scripts and timers
ALLOWED_SCHEMES = ("file:", "data:", "blob:", "about:", "chrome-error:")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--disable-default-apps", "--no-default-browser-check",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe",
]
COLLECT_CHECKS = """(() => {
  const values = {}, duplicates = [];
  for (const element of document.querySelectorAll('[data-check]')) {
    const key = element.getAttribute('data-check');
    if (Object.prototype.hasOwnProperty.call(values, key)) duplicates.push(key);
    values[key] = (element.textContent || '').trim();
  }
  return {values, duplicates};
})()"""


class BrowserError(Exception):
    """The browser could not be started, died, or did not answer in time."""


class DevTools:
    """One DevTools connection over the pipe: commands with ids, events queued in order."""

    def __init__(self, process, to_browser, from_browser, deadline):
        self.process = process
        self.to_browser = to_browser
        self.from_browser = from_browser
        self.deadline = deadline
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def _read_message(self, until):
        """The next message, or None when `until` (a monotonic time) passes first."""
        while b"\0" not in self.buffer:
            left = until - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.from_browser], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise BrowserError(f"the browser closed the pipe (exit code {self.process.poll()})")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(message)

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        return self.next_id

    def call(self, method, params=None, session=None):
        wanted = self.send(method, params, session)
        while True:
            message = self._read_message(self.deadline)
            if message is None:
                raise BrowserError(f"{method}: no answer within {TIMEOUT_SECONDS:.0f} s")
            if message.get("id") == wanted:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error'].get('message')}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method, seconds=None):
        """Reads events until `method` arrives (True) or `seconds` pass (False)."""
        until = self.deadline if seconds is None else min(self.deadline,
                                                          time.monotonic() + seconds)
        if any(event.get("method") == method for event in self.events):
            return True
        while True:
            message = self._read_message(until)
            if message is None:
                return False
            self.events.append(message)
            if message.get("method") == method:
                return True


def describe_problems(events, page_url):
    """The console errors, page errors and failed loads among the events, as lines."""
    problems = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text", "")
            problems.append(f"page error: {text} (line {details.get('lineNumber', 0) + 1})")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(arg.get("value", arg.get("description", "")))
                            for arg in params.get("args", []))
            problems.append(f"console {params.get('type')}: {text}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            problems.append(f"console error ({entry.get('source')}): {entry.get('text')}"
                            + (f" [{entry['url']}]" if entry.get("url") else ""))
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            problems.append(f"failed load: {params.get('errorText')} ({params.get('type')})")
        elif method == "Network.requestWillBeSent":
            url = params.get("request", {}).get("url", "")
            if not url.startswith(ALLOWED_SCHEMES):
                problems.append(f"network fetch: {url} (the page must be self-contained)")
        elif method == "Network.responseReceived":
            response = params.get("response", {})
            if response.get("status", 0) >= 400:
                problems.append(f"failed load: HTTP {response['status']} for {response.get('url')}")
    return problems


def high_fd(fd):
    """`fd` moved to a number above 9 (close-on-exec), so that the child's dup2 onto 3 and 4
    never lands on one of the pipe ends themselves."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


def check_page(page, out_dir):
    browser = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if not (os.path.isfile(browser) and os.access(browser, os.X_OK)):
        raise BrowserError(f"no browser at {browser} (install Debian's chromium package)")
    page_url = "file://" + os.path.abspath(page)
    profile = tempfile.mkdtemp(prefix="check_page_profile_")
    to_child_read, to_browser = (high_fd(fd) for fd in os.pipe())
    from_browser, from_child_write = (high_fd(fd) for fd in os.pipe())

    def give_pipes():  # in the child: the DevTools pipe is fds 3 (commands) and 4 (answers)
        os.dup2(to_child_read, 3, inheritable=True)
        os.dup2(from_child_write, 4, inheritable=True)

    log_path = os.path.join(out_dir, "chromium.log")
    with open(log_path, "wb") as log:
        process = subprocess.Popen([browser, *FLAGS, f"--user-data-dir={profile}"],
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                   preexec_fn=give_pipes, close_fds=False, start_new_session=True)
    os.close(to_child_read)
    os.close(from_child_write)
    try:
        tools = DevTools(process, to_browser, from_browser, time.monotonic() + TIMEOUT_SECONDS)
        target = tools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = tools.call("Target.attachToTarget",
                             {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            tools.call(f"{domain}.enable", session=session)
        tools.call("Emulation.setDeviceMetricsOverride",
                   {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                   session=session)
        tools.events.clear()  # about:blank's own events
        navigation = tools.call("Page.navigate", {"url": page_url}, session=session)
        problems = []
        if navigation.get("errorText"):
            problems.append(f"failed load: {navigation['errorText']} for {page_url}")
        elif not tools.wait_for("Page.loadEventFired"):
            problems.append(f"failed load: no load event within {TIMEOUT_SECONDS:.0f} s")
        tools.wait_for(None, SETTLE_SECONDS)  # collects late events
        result = tools.call("Runtime.evaluate", {"expression": COLLECT_CHECKS,
                                                 "returnByValue": True}, session=session)
        if "exceptionDetails" in result:
            raise BrowserError("could not read the data-check elements")
        checks = result["result"]["value"]
        for key in sorted(set(checks["duplicates"])):
            problems.append(f"data-check '{key}' is used by more than one element")
        metrics = tools.call("Page.getLayoutMetrics", session=session)
        size = metrics.get("cssContentSize") or metrics.get("contentSize")
        width, height = max(1280, int(size["width"])), min(max(1, int(size["height"])), 16384)
        shot = tools.call("Page.captureScreenshot",
                          {"format": "png", "captureBeyondViewport": True,
                           "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}},
                          session=session)
        problems += describe_problems(tools.events, page_url)
        with open(os.path.join(out_dir, "screenshot.png"), "wb") as out:
            out.write(base64.b64decode(shot["data"]))
        with open(os.path.join(out_dir, "values.json"), "w", encoding="utf-8") as out:
            json.dump(checks["values"], out, indent=1, sort_keys=True, ensure_ascii=False)
            out.write("\n")
        try:
            tools.send("Browser.close")
        except OSError:
            pass
        return problems
    finally:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
        os.close(to_browser)
        os.close(from_browser)
        shutil.rmtree(profile, ignore_errors=True)


def main(argv):
    if len(argv) != 3:
        print("usage: check_page.py PAGE.html OUT_DIR", file=sys.stderr)
        return 2
    page, out_dir = argv[1], argv[2]
    if not os.path.isfile(page):
        print(f"check_page: no such page: {page}", file=sys.stderr)
        return 2
    os.makedirs(out_dir, exist_ok=True)
    try:
        problems = check_page(page, out_dir)
    except BrowserError as error:
        print(f"check_page: {error} (browser log: {os.path.join(out_dir, 'chromium.log')})",
              file=sys.stderr)
        return 2
    for problem in problems:
        print(f"check_page: {page}: {problem}", file=sys.stderr)
    if problems:
        return 1
    with open(os.path.join(out_dir, "values.json"), encoding="utf-8") as values:
        count = len(json.load(values))
    print(f"check_page: {page}: loaded cleanly, {count} data-check values, screenshot written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
