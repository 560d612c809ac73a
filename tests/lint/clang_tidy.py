#!/usr/bin/env python3
"""Runs clang-tidy (the checks of .clang-tidy) over the project's non-test sources, with a cache.

A whole-tree run takes about 25 minutes on two cores, too long for every CI run. So the result of
each translation unit is cached by a key that changes whenever anything clang-tidy reads from the
project changes: the clang-tidy version, .clang-tidy, the compile flags, the source and every
project header it includes (read from the build's dependency files). tests/lint/clang_tidy_clean.txt
holds the keys of the units found clean; only units whose key is not there are run again.

Usage:
  clang_tidy.py BUILD_DIR [--update] [--jobs N] [FILE...]
    BUILD_DIR  a configured and built tree (compile_commands.json and the compiler's .d files)
    --update   rewrite clang_tidy_clean.txt with the keys of every unit now clean (developers run
               this after a change and commit the file; CI only reads it); written after every
               unit, so an interrupted run keeps the units it has checked
    FILE...    check only these sources (paths relative to the source tree), ignoring the cache

Exit status: 0 when no unit has a finding, 1 when one does, 77 when clang-tidy is not installed
(CTest counts that as skipped).
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CACHE = os.path.join(ROOT, "tests", "lint", "clang_tidy_clean.txt")
CHECKED_DIRS = ("app", "bench", "cli", "common", "crypto", "leader", "party", "server")
# Headers whose findings are reported: the project's own, not generated code or test doubles.
# The key holds the filter with the checkout's path left out (SRC), so that keys are the same in
# every checkout (re.escape would escape a '-' or '.' of the path and keep it in the key).
HEADER_FILTER_IN_KEY = "^SRC/(" + "|".join(CHECKED_DIRS) + ")/"
HEADER_FILTER = "^" + re.escape(ROOT) + "/(" + "|".join(CHECKED_DIRS) + ")/"
FINDING = re.compile(r"^(/[^:]+):(\d+):(\d+): (warning|error): (.*) \[([\w.,-]+)\]$")


def checked(path):
    rel = os.path.relpath(path, ROOT)
    parts = rel.split(os.sep)
    return parts[0] in CHECKED_DIRS and "testing" not in parts and rel.endswith(".cc")


def sha(data):
    return hashlib.sha256(data).hexdigest()


def flags_and_depfile(entry):
    """The compile flags without output and input, and the compiler's dependency file."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    flags, output, skip = [], None, False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == "-o":
            output, skip = args[i + 1], True
        elif arg == "-c" or os.path.realpath(os.path.join(entry["directory"], arg)) == entry["file"]:
            continue
        else:
            flags.append(arg)
    depfile = os.path.join(entry["directory"], output + ".d") if output else None
    while flags and not flags[0].startswith("-"):
        flags = flags[1:]  # the compiler, or a launcher before it
    return flags, depfile


def project_dependencies(entry, flags, depfile):
    """Every file under the source tree that the unit includes, from the .d file (or the compiler)."""
    if depfile and os.path.exists(depfile):
        text = open(depfile, encoding="utf-8").read()
    else:
        command = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
        args = [command[0]] + flags + ["-M", entry["file"]]
        text = subprocess.run(args, cwd=entry["directory"], capture_output=True, text=True,
                              check=True).stdout
    deps = text.replace("\\\n", " ").split(":", 1)[1].split()
    paths = {os.path.realpath(os.path.join(entry["directory"], d)) for d in deps}
    return sorted(p for p in paths if p.startswith(ROOT + os.sep))


def normalize(text, build_dir):
    return text.replace(build_dir, "BUILD").replace(ROOT, "SRC")


def unit_key(entry, build_dir, preamble):
    flags, depfile = flags_and_depfile(entry)
    h = hashlib.sha256(preamble)
    # The options (an option's separate value, such as -isystem's directory, is left out: the
    # project headers it can change are hashed below).
    h.update(normalize(" ".join(f for f in flags if f.startswith("-")), build_dir).encode())
    for dep in project_dependencies(entry, flags, depfile):
        h.update(normalize(dep, build_dir).encode())
        with open(dep, "rb") as f:
            h.update(sha(f.read()).encode())
    return h.hexdigest()


def run_tidy(tidy, build_dir, path):
    proc = subprocess.run([tidy, "-p", build_dir, "--quiet", "--header-filter=" + HEADER_FILTER,
                           path], capture_output=True, text=True)
    findings = set()
    for line in proc.stdout.splitlines():
        m = FINDING.match(line)
        if m:
            findings.add((os.path.relpath(m.group(1), ROOT), int(m.group(2)), m.group(6),
                          m.group(5)))
    if proc.returncode != 0 and not findings:
        findings.add((os.path.relpath(path, ROOT), 0, "clang-tidy",
                      "clang-tidy failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1]))
    return findings


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("--update", action="store_true")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    tidy = shutil.which("clang-tidy")
    if tidy is None:
        print("clang-tidy is not installed (deploy/install-deps.sh installs it): skipped")
        return 77
    build_dir = os.path.realpath(args.build_dir)
    entries = json.load(open(os.path.join(build_dir, "compile_commands.json")))
    wanted = {os.path.realpath(os.path.join(ROOT, f)) for f in args.files}
    units = sorted((e for e in entries if checked(e["file"]) and (not wanted or e["file"] in wanted)),
                   key=lambda e: e["file"])
    version = subprocess.run([tidy, "--version"], capture_output=True, text=True).stdout
    version = re.search(r"version ([\d.]+)", version).group(1)
    config = open(os.path.join(ROOT, ".clang-tidy"), "rb").read()
    preamble = version.encode() + b"\0" + config + b"\0" + HEADER_FILTER_IN_KEY.encode()

    cache = {}
    if os.path.exists(CACHE):
        for line in open(CACHE, encoding="utf-8"):
            if line.strip() and not line.startswith("#"):
                path, key = line.split()
                cache[path] = key
    keys = {e["file"]: unit_key(e, build_dir, preamble) for e in units}
    rel = lambda path: os.path.relpath(path, ROOT)
    todo = [e["file"] for e in units if wanted or cache.get(rel(e["file"])) != keys[e["file"]]]
    print(f"clang-tidy {version}: {len(units)} units, {len(units) - len(todo)} clean in the cache, "
          f"{len(todo)} to run", flush=True)

    # Kept: units still clean under their key, and the cache's entries for units whose key changed
    # until they are run again (an interrupted --update keeps what it has done so far).
    findings, clean = set(), {rel(e["file"]): keys[e["file"]] for e in units if e["file"] not in todo}
    stale = {rel(path): cache[rel(path)] for path in todo if rel(path) in cache}

    def write_cache():
        if args.update and not wanted:
            with open(CACHE + ".tmp", "w", encoding="utf-8") as f:
                f.write("# Units clang-tidy found clean, by key (tests/lint/clang_tidy.py --update).\n")
                for path, key in sorted({**stale, **clean}.items()):
                    f.write(f"{path} {key}\n")
            os.replace(CACHE + ".tmp", CACHE)

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        jobs = {pool.submit(run_tidy, tidy, build_dir, path): path for path in todo}
        for done, job in enumerate(concurrent.futures.as_completed(jobs), 1):
            path, found = jobs[job], job.result()
            findings |= found
            stale.pop(rel(path), None)
            if not found:
                clean[rel(path)] = keys[path]
            print(f"[{done}/{len(todo)}] {rel(path)}: {len(found) or 'clean'}", flush=True)
            write_cache()

    for file, line, check, message in sorted(findings):
        print(f"{file}:{line}: {message} [{check}]")
    write_cache()
    print(f"clang-tidy: {len(findings)} findings in {len(units)} units")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
