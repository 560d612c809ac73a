#!/usr/bin/env python3
"""Compares the figures a job page shows with the files they come from.

Usage: check_report_values.py REPORT.json VALUES.json [--view VIEW.jsonl] [--require KEY ...]

VALUES.json is tests/browser/check_page.sh's output: every element's data-check attribute ->
its text. A key is a path into REPORT.json ("risk_after.prosecutor.highest",
"utility.attribute_loss.0.loss", "cut.0.values.3"); "view.*" keys are figures of the leader's
view log, recomputed here from VIEW.jsonl (entries, integers, last_round, and per kind
entries, integers, labelled, smallest_nonzero). A number shown as text must equal the file's
to the precision shown (a trailing % means a percentage); strings must be equal; booleans are
shown as yes / no. Every --require key must be on the page. Exit 1 on any difference, listing
each one.
"""
import json
import sys
from decimal import Decimal, InvalidOperation


def resolve(document, path):
    value = document
    for part in path.split("."):
        if isinstance(value, list):
            index = int(part)
            if index >= len(value):
                raise KeyError(path)
            value = value[index]
        elif isinstance(value, dict):
            if part not in value:
                raise KeyError(path)
            value = value[part]
        else:
            raise KeyError(path)
    return value


def view_figures(path):
    figures = {"view.entries": 0, "view.integers": 0, "view.last_round": 0}
    kinds = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            entry = json.loads(line)
            k = kinds.setdefault(entry["kind"], {"entries": 0, "integers": 0, "labelled": 0,
                                                 "smallest_nonzero": 0})
            k["entries"] += 1
            figures["view.entries"] += 1
            k["labelled"] += 1 if entry.get("labelled") else 0
            figures["view.last_round"] = max(figures["view.last_round"], entry.get("round", 0))
            for c in entry["counts"]:
                k["integers"] += 1
                figures["view.integers"] += 1
                if c > 0 and (k["smallest_nonzero"] == 0 or c < k["smallest_nonzero"]):
                    k["smallest_nonzero"] = c
    for kind, k in kinds.items():
        for name, v in k.items():
            figures[f"view.kind.{kind}.{name}"] = v
    return figures


def same_number(text, expected):
    """`text` shows `expected` rounded to the digits it has."""
    shown = text.replace(",", "").strip()
    scale = Decimal(1)
    if shown.endswith("%"):
        shown = shown[:-1]
        scale = Decimal("0.01")
    try:
        number = Decimal(shown)
    except InvalidOperation:
        return False
    exponent = number.as_tuple().exponent  # -2 for "12.34", 0 for "12", -7 for "1.234e-06"
    tolerance = Decimal(5) * Decimal(10) ** (exponent - 1) * scale
    return abs(number * scale - Decimal(repr(float(expected)))) <= tolerance + Decimal("1e-12")


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    report = json.load(open(args[0], encoding="utf-8"))
    values = json.load(open(args[1], encoding="utf-8"))
    view, required = None, []
    rest = args[2:]
    while rest:
        if rest[0] == "--view":
            view = view_figures(rest[1])
            rest = rest[2:]
        elif rest[0] == "--require":
            rest = rest[1:]
            while rest and not rest[0].startswith("--"):
                required.append(rest[0])
                rest = rest[1:]
        else:
            print(f"unknown argument {rest[0]}", file=sys.stderr)
            return 2
    problems = []
    for key in required:
        if key not in values:
            problems.append(f"required figure {key} is not on the page")
    compared = 0
    for key, text in values.items():
        if key.startswith("view."):
            if view is None:
                problems.append(f"{key}: the page shows a view-log figure but no view log given")
                continue
            if key not in view:
                problems.append(f"{key}: not a figure of the view log")
                continue
            expected = view[key]
        else:
            try:
                expected = resolve(report, key)
            except (KeyError, ValueError):
                problems.append(f"{key}: not in {args[0]}")
                continue
        compared += 1
        if isinstance(expected, bool):
            ok = text == ("yes" if expected else "no")
        elif isinstance(expected, (int, float)):
            ok = same_number(text, expected)
        elif isinstance(expected, str):
            try:
                ok = text == expected or same_number(text, int(expected))
            except ValueError:
                ok = text == expected
        else:
            ok = False
        if not ok:
            problems.append(f"{key}: the page shows '{text}', the file has {expected!r}")
    for p in problems:
        print(f"check_report_values: {p}", file=sys.stderr)
    if not problems:
        print(f"check_report_values: {compared} figures equal {args[0]}"
              + (" and the view log" if view else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
