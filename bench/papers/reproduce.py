#!/usr/bin/env python3
"""Reruns the seed papers' experiments that public data allows and writes one HTML page.

Usage: bench/papers/reproduce.sh [--quick | --full | --fixture] [--out DIR] [--build DIR]
                                 [--adult DIR] [--only EXPERIMENT,...]

Every figure comes from the project's own commands (`fedanon sweep`, `anonymize`, `evaluate`,
`randomize`), run as subprocesses; this script only writes specs and derived inputs, reads the
commands' CSV/JSON output and lays the numbers out. Outputs in DIR:

  results.csv   every number: id, figure, series, x, metric, value (as shown on the page)
  claims.csv    every published statement: claim, published, ours, verdict
  papers.html   the page (inline CSS and SVG, no script, no network fetch): per figure the
                paper's statements typed in from the paper (published.csv), ours beside them,
                a chart, the settings and the commands
  work/         specs, derived tables and the commands' raw outputs

Modes: --quick (the default grid thinned: under 10 minutes on 2 cores), --full (the papers'
grids; under 90 minutes), --fixture (a 2,000-record gen-data table instead of Adult and the
smallest grids: the browser test's input, about a minute).
"""
import argparse
import csv
import html
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# UCI Adult's attributes in file order; continuous ones with the declared public ranges of the
# privacy-fidelity Adult case (bench/adult_utility.sh), precision 1.
CONTINUOUS = {
    "age": (0, 100), "fnlwgt": (0, 1500000), "education-num": (0, 20),
    "capital-gain": (0, 100000), "capital-loss": (0, 5000), "hours-per-week": (0, 100),
}
ATTRIBUTES = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
              "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
              "hours-per-week", "native-country"]
CATEGORICAL = [a for a in ATTRIBUTES if a not in CONTINUOUS]
SHORT = {"age": "Ag", "workclass": "Wc", "fnlwgt": "Fw", "education": "Ed", "education-num": "En",
         "marital-status": "Ms", "occupation": "Oc", "relationship": "Re", "race": "Ra",
         "sex": "Sx", "capital-gain": "Cg", "capital-loss": "Cl", "hours-per-week": "Hw",
         "native-country": "Nc"}
LONG = {v: k for k, v in SHORT.items()}
# mohammed2011 §7 / thesis §4.4.1: the top 9 attributes ranked by C4.5.
TOP9 = [LONG[s] for s in "Cg Ag Ms En Re Hw Sx Ed Oc".split()]


def confidence_templates(xs, sens, least, k):
    """The privacy block of Figs. 5.4(a)/(b): one confidence template per sensitive attribute
    in `sens`, over the QID `xs`, bounding its values `least[a]` at `k`."""
    return "{model: templates, confidence: [" + ", ".join(
        "{qid: [" + ", ".join(xs) + f"], attribute: {a}, sensitive_values: [" +
        ", ".join(least[a]) + f"], max: {k}}}" for a in sens) + "]}"


def distinct_samples(rng, pool, count, size):
    """`count` distinct sorted samples of `size` items of `pool`, in the order drawn (a repeat is
    drawn again)."""
    out = []
    while len(out) < count:
        pick = sorted(rng.sample(pool, size))
        if pick not in out:
            out.append(pick)
    return out


def fmt_pct(x):  # a fraction as percent with 2 decimals
    return f"{100 * float(x):.2f}"


def fmt4(x):
    return f"{float(x):.4f}"


class Experiments:
    def __init__(self, args):
        self.args = args
        self.mode = args.mode
        self.out = os.path.abspath(args.out)
        self.work = os.path.join(self.out, "work")
        os.makedirs(self.work, exist_ok=True)
        self.fedanon = os.path.abspath(args.fedanon) if args.fedanon else \
            os.path.join(os.path.abspath(args.build), "bin", "fedanon")
        if not os.access(self.fedanon, os.X_OK):
            sys.exit(f"reproduce: {self.fedanon} not found: build first (./deploy/build.sh)")
        self.rows = []          # results: (figure, series, x, metric, value)
        self.settings = {}      # figure -> list of lines
        self.commands = {}      # figure -> list of commands
        self.notes = {}         # figure -> list of lines (not run, data not public, ...)
        self.timings = {}       # experiment -> seconds
        self.l2_gaps = {}       # (taxonomies, beneficial, rule, cells) -> CE − BE per K
        self.started = time.monotonic()
        self.step = 0

    # ---- running -------------------------------------------------------------------------
    def progress(self, text):
        elapsed = time.monotonic() - self.started
        print(f"[{elapsed:7.1f} s] {text}", file=sys.stderr, flush=True)

    def run(self, figure, argv, capture=True):
        """Runs fedanon with `argv`; records the command for `figure`; returns stdout."""
        cmd = [self.fedanon] + argv
        shown = " ".join(["fedanon"] + [a.replace(self.out + "/", "OUT/") for a in argv])
        self.commands.setdefault(figure, []).append(shown)
        done = subprocess.run(cmd, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{shown}\n{done.stderr.strip()}")
        return done.stdout

    def add(self, figure, series, x, metric, value):
        self.rows.append((figure, series, str(x), metric, value))

    def setting(self, figure, line):
        self.settings.setdefault(figure, []).append(line)

    def note(self, figure, line):
        self.notes.setdefault(figure, []).append(line)

    # ---- data ------------------------------------------------------------------------------
    def prepare_data(self):
        if self.mode == "fixture":
            data = os.path.join(self.work, "gen")
            self.run("data", ["gen-data", "--rows", "2000", "--seed", "5", "--out", data])
            self.raw = os.path.join(data, "table.csv")
            self.arx = {a: os.path.join(data, "tax", f"{a}.csv") for a in CATEGORICAL}
            self.dataset = "a 2,000-record gen-data table (fixture; not Adult)"
        else:
            adult = os.path.abspath(self.args.adult)
            self.raw = os.path.join(adult, "adult_clean.csv")
            if not os.path.isfile(self.raw):
                sys.exit(f"reproduce: UCI Adult not found at {self.raw} (--adult DIR)")
            self.arx = {a: os.path.join(adult, "arx-hierarchies", f"adult_hierarchy_{a}.csv")
                        for a in CATEGORICAL}
            self.arx["relationship"] = os.path.join(adult, "extra-hierarchies",
                                                    "adult_hierarchy_relationship.csv")
            self.dataset = "UCI Adult, 45,222 records without missing values (adult_clean.csv)"
        self.thesis_tax = {a: os.path.join(HERE, "taxonomies", f"{a}.csv") for a in CATEGORICAL}
        with open(self.raw, newline="") as f:
            self.records = sum(1 for _ in f) - 1

    # ---- specs -----------------------------------------------------------------------------
    def spec(self, name, roles, privacy, score="infogain", taxonomies="arx",
             numeric_split="binned", numeric_cells=None, beneficial=False, party=None,
             extra=""):
        """Writes work/specs/NAME.yaml. `roles`: attribute -> role (qid, sensitive, other);
        attributes not named are left out. Categorical QIDs get the chosen taxonomies ("arx",
        "thesis") or none ("suppression")."""
        lines = [f"name: {name}", "attributes:"]
        for a in ATTRIBUTES:
            role = roles.get(a)
            if role is None:
                continue
            fields = [f"name: {a}", f"role: {role}"]
            if a in CONTINUOUS:
                lo, hi = CONTINUOUS[a]
                fields += ["type: continuous", f"range: [{lo}, {hi}]", "precision: 1"]
            elif role == "qid" and taxonomies != "suppression":
                tax = (self.arx if taxonomies == "arx" else self.thesis_tax)[a]
                fields.append(f'taxonomy: "{tax}"')
            if party:
                fields.append(f"party: {party[a]}")
            lines.append("  - {" + ", ".join(fields) + "}")
        lines.append("  - {name: income, role: class}")
        if privacy:
            lines.append(f"privacy: {privacy}")
        lines.append(f"score: {score}")
        if not extra.startswith("sequential"):
            lines.append(f"numeric_split: {numeric_split}")
            if numeric_cells and numeric_split == "binned":
                lines.append(f"numeric_cells: {numeric_cells}")
        if beneficial:
            lines.append("beneficial: true")
        if extra:
            lines.append(extra)
        path = os.path.join(self.work, "specs", f"{name}.yaml")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def m10_roles(self):
        return {a: ("sensitive" if a == "marital-status" else "qid") for a in ATTRIBUTES}

    def grid_k(self):
        return {"fixture": [20, 60], "quick": [20, 40, 60, 80, 100],
                "full": [20, 40, 60, 80, 100]}[self.mode]

    def sweep(self, figure, spec, grid, raw=None, extra=(), tag=""):
        """Runs `fedanon sweep` and returns its CSV rows (dicts)."""
        name = os.path.splitext(os.path.basename(spec))[0] + (f"-{tag}" if tag else "")
        csv_path = os.path.join(self.work, f"sweep-{name}.csv")
        html_path = os.path.join(self.work, f"sweep-{name}.html")
        self.run(figure, ["sweep", "--quiet", "--spec", spec, "--raw", raw or self.raw,
                          "--grid", grid, "--csv", csv_path, "--html", html_path, *extra])
        with open(csv_path, newline="") as f:
            return list(csv.DictReader(f))

    # ---- mohammed2010 ----------------------------------------------------------------------
    def m10(self):
        ks = ",".join(map(str, self.grid_k()))
        spec = self.spec("m10", self.m10_roles(),
                         "{model: lkc, L: 2, K: 100, C: 0.2, sensitive_values: [Divorced, Separated]}")
        fig = "m10-K"
        self.setting(fig, "QID = the 13 attributes other than marital-status; S = {Divorced, "
                          "Separated} in marital-status; class income; score infogain; ARX's "
                          "taxonomies (relationship: the shared extra one); continuous attributes "
                          "by the default binned rule (32 public cells, bins of at least K records)")
        self.setting(fig, "naive: the table cut into 3 contiguous parts, each anonymized alone "
                          "with the same spec, the releases concatenated (per-party discretization)")
        rows = self.sweep(fig, spec, f"L=2,4,6 K={ks}", extra=["--naive-parties", "3"])
        self.base = {"BE": float(rows[0]["BE"]), "UE": float(rows[0]["UE"])}
        self.add(fig, "baseline", "", "BE %", fmt_pct(rows[0]["BE"]))
        self.add(fig, "baseline", "", "UE %", fmt_pct(rows[0]["UE"]))
        self.add_sweep_points(fig, rows, "K")
        fig = "m10-C"
        cs = "0.05,0.1,0.15,0.2,0.25,0.3" if self.mode != "fixture" else "0.15,0.3"
        self.setting(fig, "as Fig. 6(a) with K = 100 and C = 5%..30%")
        rows = self.sweep(fig, spec, f"L=2,4,6 K=100 C={cs}", tag="C")
        self.add_sweep_points(fig, rows, "C")
        # DR_TradK: traditional K-anonymity on all 13 QID attributes (L = |QID|, no confidence
        # bound), the Adult analogue of Fig. 5(b)'s Blood figure, "produced by the TDR method in
        # Fung et al. [2007]": TDR's Score = InfoGain / (PrivLoss + 1), beneficial refinements
        # only (thesis §4.2).
        fig = "m10-tradk"
        self.setting(fig, "K-anonymity on all 13 QID attributes (L = 13, C = 100%) by TDR (score "
                          "infogain_privloss, beneficial refinements only, thesis §4.2): the "
                          "traditional K-anonymous solution; same taxonomies and rule")
        tradk = self.spec("m10-tradk", self.m10_roles(),
                          "{model: lkc, L: 13, K: 100, C: 1, "
                          "sensitive_values: [Divorced, Separated]}",
                          score="infogain_privloss", beneficial=True)
        rows = self.sweep(fig, tradk, f"K={ks}")
        self.add_sweep_points(fig, rows, "K", series_fmt="TradK")
        # §6.1 measures DR "to evaluate the impact on general analysis quality (Case 2 in Section
        # 3.2.2)", whose score is the discernibility cost: the same LKC grid scored that way.
        fig = "m10-dr2"
        self.setting(fig, "the LKC grid of Fig. 6(a) (L = 2, 4, 6, C = 20%) with Case 2's score "
                          "(§3.2.2: the discernibility cost a specialization removes, score "
                          "discernibility) instead of InfoGain; same taxonomies and rule")
        case2 = self.spec("m10-dr2", self.m10_roles(),
                          "{model: lkc, L: 2, K: 100, C: 0.2, "
                          "sensitive_values: [Divorced, Separated]}", score="discernibility")
        rows = self.sweep(fig, case2, f"L=2,4,6 K={ks}")
        self.add_sweep_points(fig, rows, "K")

    def add_sweep_points(self, fig, rows, xkey, series_fmt=None):
        for r in rows:
            label = series_fmt or f"{r['method']} L={r['L']}"
            x = f"{float(r['C']):g}" if xkey == "C" else r[xkey]
            if r["status"] != "ok":
                self.add(fig, label, x, "status", "no release")
                continue
            self.add(fig, label, x, "CE %", fmt_pct(r["CE"]))
            self.add(fig, label, x, "DR", fmt4(r["DR"]))
            self.add(fig, label, x, "groups", r["groups"])

    def public_cells_table(self, cells=32):
        """The raw table with every continuous value replaced by its public cell of the declared
        range (`cells` equal-width cells, as the binned rule's public cells), and one taxonomy
        per continuous attribute: a balanced binary tree over the cells. Every party of the naive
        baseline then uses the same public cut points."""
        out_csv = os.path.join(self.work, f"public-cells-{cells}.csv")
        tax_dir = os.path.join(self.work, f"public-cells-{cells}-tax")
        os.makedirs(tax_dir, exist_ok=True)
        labels = {}
        for a, (lo, hi) in CONTINUOUS.items():
            n = min(cells, hi - lo)  # integer bounds, all distinct
            bounds = [lo + round(i * (hi - lo) / n) for i in range(n)] + [hi]
            names = [f"[{bounds[i]}-{bounds[i + 1]})" for i in range(n)]
            labels[a] = (bounds, names)
            with open(os.path.join(tax_dir, f"{a}.csv"), "w") as f:
                for i, leaf in enumerate(names):
                    path, first, last = [leaf], 0, n
                    chain = []
                    while last - first > 1:
                        chain.append(f"[{bounds[first]}-{bounds[last]})")
                        mid = (first + last) // 2
                        first, last = (first, mid) if i < mid else (mid, last)
                    f.write(";".join(path + list(reversed(chain))) + "\n")
        with open(self.raw, newline="") as fin, open(out_csv, "w", newline="") as fout:
            reader, writer = csv.DictReader(fin), None
            for row in reader:
                if writer is None:
                    writer = csv.DictWriter(fout, fieldnames=reader.fieldnames,
                                            lineterminator="\n")
                    writer.writeheader()
                for a, (bounds, names) in labels.items():
                    v = float(row[a])
                    i = next((j for j in range(len(names)) if v < bounds[j + 1]), len(names) - 1)
                    row[a] = names[i]
                writer.writerow(row)
        return out_csv, tax_dir

    def m10_naive_shared(self):
        fig = "m10-naive-shared"
        ks = ",".join(map(str, self.grid_k()))
        raw, tax_dir = self.public_cells_table()
        roles = self.m10_roles()
        path = self.spec("m10-public-cells", roles,
                         "{model: lkc, L: 4, K: 100, C: 0.2, sensitive_values: [Divorced, Separated]}")
        # The continuous attributes become categorical QIDs with the public interval taxonomy.
        with open(path) as f:
            text = f.read()
        for a, (lo, hi) in CONTINUOUS.items():
            text = text.replace(f"name: {a}, role: qid, type: continuous, range: [{lo}, {hi}], "
                                f"precision: 1",
                                f'name: {a}, role: qid, taxonomy: "{tax_dir}/{a}.csv"')
        with open(path, "w") as f:
            f.write(text)
        self.setting(fig, "every continuous value replaced by its public cell (32 equal-width "
                          "cells of the declared range) and generalized along a public balanced "
                          "binary tree of those cells, so every party's interval labels agree; "
                          "L = 4, C = 20%, 3 contiguous parties")
        rows = self.sweep(fig, path, f"L=4 K={ks}", raw=raw, extra=["--naive-parties", "3"])
        for r in rows:
            label = "naive, shared public cells" if r["method"] == "naive" else \
                "centralized, public cells"
            if r["status"] != "ok":
                self.add(fig, label, r["K"], "status", "no release")
                continue
            self.add(fig, label, r["K"], "CE %", fmt_pct(r["CE"]))
            self.add(fig, label, r["K"], "DR", fmt4(r["DR"]))
            self.add(fig, label, r["K"], "groups", r["groups"])
        # Today's naive baseline (each party discretizes on its own data, Fig. 8's runs above)
        # beside it, so that the page shows the two side by side: the same numbers as m10-K.
        beside = {"naive L=4": "naive, per-party cut points (binned rule)",
                  "centralized L=4": "centralized, binned rule"}
        for figure, series, x, metric, value in list(self.rows):
            if figure == "m10-K" and series in beside and metric in ("CE %", "DR", "groups"):
                self.add(fig, beside[series], x, metric, value)
        if any(r[0] == fig and r[1] in beside.values() for r in self.rows):
            self.setting(fig, "beside them, from Fig. 6(a)/8's runs: the naive baseline with "
                              "each party's own cut points (the binned rule on its own records) "
                              "and the centralized run under the same rule")

    # ---- the L = 2 claim -------------------------------------------------------------------
    def l2_k(self):
        return {"fixture": [20, 60], "quick": [20, 60, 100], "full": [20, 40, 60, 80, 100]}[self.mode]

    def l2_grid(self):
        fig = "l2-grid"
        ks = ",".join(map(str, self.l2_k()))
        rules = {"fixture": [("exact", None), ("binned", 32)],
                 "quick": [("exact", None), ("binned", 32), ("binned", 128)],
                 "full": [("exact", None), ("binned", 32), ("binned", 64), ("binned", 128),
                          ("binned", 256), ("binned", 1024)]}[self.mode]
        self.setting(fig, "mohammed2010 §6's setup at L = 2, C = 20%, K over the grid: ARX's "
                          "taxonomies or ones built to the thesis's Table 4.5 shape (same leaves "
                          "and levels per attribute, bench/papers/taxonomies); beneficial off or "
                          "on (thesis §4.2: only where more than one class is involved); the "
                          "exact per-value numeric rule or the binned rule with N public cells "
                          "(bins of at least K records)")
        for tax in ("arx", "thesis"):
            for beneficial in (False, True):
                for rule, cells in rules:
                    label = f"{tax} tax, beneficial {'on' if beneficial else 'off'}, " + \
                        (f"{rule}" if rule == "exact" else f"binned {cells}")
                    name = f"l2-{tax}-{int(beneficial)}-{rule}{cells or ''}"
                    spec = self.spec(name, self.m10_roles(),
                                     "{model: lkc, L: 2, K: 100, C: 0.2, "
                                     "sensitive_values: [Divorced, Separated]}",
                                     taxonomies=tax, numeric_split=rule, numeric_cells=cells,
                                     beneficial=beneficial)
                    self.progress(f"  L = 2 grid: {label}")
                    rows = self.sweep(fig, spec, f"L=2 K={ks}")
                    for r in rows:
                        if r["status"] != "ok":
                            self.add(fig, label, r["K"], "status", "no release")
                            continue
                        gap = 100 * (float(r["CE"]) - float(r["BE"]))
                        self.add(fig, label, r["K"], "CE − BE", f"{gap:.2f}")
                        self.add(fig, label, r["K"], "groups", r["groups"])
                        self.l2_gaps.setdefault((tax, beneficial, rule, cells), []).append(gap)
        self.l2_effects()

    def l2_seeds(self):
        """The same L = 2 cells under other seeds of the 2/3-1/3 split: how much of CE - BE is the
        split's noise (BE alone ranges over 14.10-14.76% for seeds 1-5)."""
        fig = "l2-seeds"
        ks = ",".join(map(str, self.l2_k()))
        seeds = {"fixture": [1, 2], "quick": [1, 2, 3], "full": list(range(1, 11))}[self.mode]
        # Finer public grids (no record-level count leaves a party) beside today's default and
        # the exact rule: does any of them reach the paper's < 1 point once the split's noise is
        # averaged out?
        rules = {"fixture": [("binned", 32), ("exact", None)],
                 "quick": [("binned", 32), ("binned", 128), ("exact", None)],
                 "full": [("binned", 32), ("binned", 128), ("binned", 256), ("binned", 1024),
                          ("exact", None)]}[self.mode]
        self.setting(fig, "today's default (ARX taxonomies, binned 32 cells), finer public grids "
                          "(" + ", ".join(str(c) for r, c in rules if r == "binned" and c != 32) +
                          " cells) and the exact rule "
                          f"at L = 2, C = 20%, under split seeds {seeds[0]}..{seeds[-1]}; the "
                          "release is the same for every seed, only the training and test "
                          "records change")
        for rule, cells in rules:
            rule_label = "exact" if rule == "exact" else f"binned {cells}"
            spec = self.spec(f"l2-seeds-{rule}{cells or ''}", self.m10_roles(),
                             "{model: lkc, L: 2, K: 100, C: 0.2, "
                             "sensitive_values: [Divorced, Separated]}",
                             numeric_split=rule, numeric_cells=cells)
            per_k, below = {}, 0
            for seed in seeds:
                rows = self.sweep(fig, spec, f"L=2 K={ks}", extra=["--seed", str(seed)],
                                  tag=f"seed{seed}")
                for r in rows:
                    if r["status"] == "ok":
                        gap = 100 * (float(r["CE"]) - float(r["BE"]))
                        per_k.setdefault(int(r["K"]), []).append(gap)
                        self.add(fig, f"{rule_label} seed {seed}", r["K"], "CE − BE",
                                 f"{gap:.2f}")
                self.add(fig, f"{rule_label} seed {seed}", "", "BE %", fmt_pct(rows[0]["BE"]))
                ok = [r for r in rows if r["status"] == "ok"]
                if len(ok) == len(rows) and all(
                        100 * (float(r["CE"]) - float(r["BE"])) < 1 for r in ok):
                    below += 1
            means = []
            for k, gaps in sorted(per_k.items()):
                means.append(sum(gaps) / len(gaps))
                self.add(fig, f"{rule_label}: mean over seeds", k, "CE − BE", f"{means[-1]:.2f}")
            if means:
                self.add(fig, f"{rule_label}: mean over seeds", "largest over K", "CE − BE",
                         f"{max(means):.2f}")
            self.add(fig, f"{rule_label}: seeds below 1 point at every K", "", "seeds",
                     f"{below} of {len(seeds)}")

    def l2_effects(self):
        """Per setting, the mean and largest CE − BE over K; then the main effect of each factor
        (the mean over the other factors of the change when it moves from today's default to the
        paper's setting)."""
        fig = "l2-effects"
        gaps = {k: v for k, v in self.l2_gaps.items() if v}
        if not gaps:
            return
        mean = {k: sum(v) / len(v) for k, v in gaps.items()}

        def effect(changed, frm, to):
            deltas = []
            for key, m in mean.items():
                if key[changed[0]] != frm:
                    continue
                other = list(key)
                for i, value in zip(changed, to if isinstance(to, tuple) else (to,)):
                    other[i] = value
                if tuple(other) in mean:
                    deltas.append(mean[tuple(other)] - m)
            return sum(deltas) / len(deltas) if deltas else None

        rows = [("taxonomies", "ARX -> thesis-shaped", effect((0,), "arx", "thesis")),
                ("beneficial", "off -> on", effect((1,), False, True))]
        for rule in sorted({(k[2], k[3]) for k in mean if k[2:] != ("binned", 32)},
                           key=lambda r: (r[0], r[1] or 0)):
            name = "exact" if rule[0] == "exact" else f"binned {rule[1]} cells"
            d = []
            for key, m in mean.items():
                if key[2:] == ("binned", 32) and (key[0], key[1], *rule) in mean:
                    d.append(mean[(key[0], key[1], *rule)] - m)
            if d:
                rows.append(("numeric rule", f"binned 32 cells -> {name}", sum(d) / len(d)))
        for setting, change, value in rows:
            if value is not None:
                self.add(fig, setting, change, "effect", f"{value:+.2f}")
        best = None
        for key, v in gaps.items():
            if key[2] != "binned":
                continue
            worst = max(v)
            if best is None or worst < best[1]:
                best = (key, worst)
        if best:
            (tax, ben, _, cells), worst = best
            self.add(fig, "best setting without record-level counts",
                     f"{tax} tax, beneficial {'on' if ben else 'off'}, binned {cells}",
                     "effect", f"{worst:.2f}")

    # ---- mohammed2011 / thesis ch. 4 -------------------------------------------------------
    def k_grid(self):
        return {"fixture": [20, 100], "quick": [20, 100, 200, 500, 1000],
                "full": [20, 40, 60, 80, 100, 150, 200, 300, 400, 500, 600, 800, 1000]}[self.mode]

    def topn_spec(self, name, n, score, taxonomies):
        roles = {a: ("qid" if a in TOP9[:n] else "other") for a in ATTRIBUTES}
        # The thesis's TDR specializes only where more than one class is involved (§4.2).
        return self.spec(name, roles, f"{{model: lkc, L: {n}, K: 20}}", score=score,
                         taxonomies=taxonomies, beneficial=score == "infogain_privloss")

    def m11(self):
        fig = "m11-8"
        ks = ",".join(map(str, self.k_grid()))
        self.setting(fig, "k-anonymity on one QID of the top N attributes (Cg Ag Ms En Re Hw Sx "
                          "Ed Oc), run as LKC with L = N; the other attributes released as they "
                          "are; score gainratio (mohammed2011 §4); ARX's taxonomies; binned rule. "
                          "IE is measured on the centralized release, which the vertical "
                          "federation reproduces exactly (tests/federation: vertical == "
                          "centralized), not through a federation run")
        for n in (5, 7, 9):
            spec = self.topn_spec(f"m11-top{n}", n, "gainratio", "arx")
            rows = self.sweep(fig, spec, f"K={ks}")
            self.add(fig, f"Top{n}", "", "UE %", fmt_pct(rows[0]["UE"]))
            for r in rows:
                if r["status"] == "ok":
                    self.add(fig, f"Top{n}", r["K"], "IE %", fmt_pct(r["CE"]))
            if n == 5:
                self.add(fig, "baseline", "", "BE %", fmt_pct(rows[0]["BE"]))
        # Source errors of the vertical splits (§7.1: 2 parties; §7.2: 4 parties, unequal).
        fig = "m11-se"
        splits = {
            "2 parties (§7.1)": {"A": "Ag En Fw Re Ra Sx Ms Nc Ed", "B": "Hw Cg Cl Wc Oc"},
            "4 parties (§7.2)": {"A": "Ag Wc Fw En", "B": "Ms Re Ra Sx", "C": "Cg Hw Nc",
                                 "D": "Ed Oc Cl"},
            "unequal (§7.2)": {"A": "Cg Ag Ms En Re Hw Sx Ed Oc", "B": "Wc Fw Ra Nc Cl"},
        }
        self.setting(fig, "SE: the C4.5-style tree on one party's raw attributes only")
        for label, parts in splits.items():
            party = {LONG[s]: p for p, attrs in parts.items() for s in attrs.split()}
            spec = self.spec(f"m11-se-{len(parts)}-{label.split()[0]}",
                             {a: "qid" for a in ATTRIBUTES}, "{model: lkc, L: 1, K: 20}",
                             party=party)
            out = json.loads(self.run(fig, ["evaluate", "--spec", spec, "--raw", self.raw,
                                            "--json"]))
            for p, e in out["SE"].items():
                self.add(fig, label, p, "SE %", fmt_pct(e))

    # mohammed2011 §7.1 / §7.2's vertical splits (Table 4's order: the first 9 attributes at A).
    M11_SPLITS = {
        "equal": {"A": "Ag En Fw Re Ra Sx Ms Nc Ed", "B": "Hw Cg Cl Wc Oc"},
        "unequal": {"A": "Cg Ag Ms En Re Hw Sx Ed Oc", "B": "Wc Fw Ra Nc Cl"},
        "4 parties": {"A": "Ag Wc Fw En", "B": "Ms Re Ra Sx", "C": "Cg Hw Nc", "D": "Ed Oc Cl"},
    }

    def m11_participation(self):
        """mohammed2011 §7.2 Figs. 10(a), 10(b), 11: Algorithm 2 (the game-theoretic
        participation strategy, epsilon = 1%) in a real vertical federation (`fedanon federation
        up`: a leader and one party daemon per table on loopback), the released table put back
        in the raw table's order and evaluated; beside it the centralized release of Fig. 8
        (Algorithm 1, which the vertical federation reproduces exactly), compared value by
        value."""
        fig = "m11-alg2"
        tops = {"fixture": [7], "quick": [7], "full": [5, 7, 9]}[self.mode]
        # (label, split, QID attributes added to TopN, k values): the 4-party runs take about
        # five times as long (ID matching); "unequal + Ra" adds race, owned by B, to the QID so
        # that B is in the game (a party without QID attributes is outside it, docs/vertical.md).
        all_k = {"fixture": [20], "quick": [20, 200], "full": [20, 100, 200, 500, 1000]}[self.mode]
        runs = [("equal", "equal", [], all_k), ("unequal", "unequal", [], all_k),
                ("unequal + Ra", "unequal", ["race"], all_k[:1] if self.mode != "full" else all_k),
                ("4 parties", "4 parties", [],
                 {"fixture": [20], "quick": [20], "full": [20, 200, 1000]}[self.mode])]
        if self.mode == "fixture":
            runs = runs[:1]
        self.setting(fig, "each split's parties as daemons of `fedanon federation up` (loopback "
                          "mTLS, ID matching on a record id); QID = the top N attributes (Cg Ag "
                          "Ms En Re Hw Sx Ed Oc), one anonymity template <TopN, k>, the other "
                          "attributes released raw (role other); score gainratio; ARX's "
                          "taxonomies; binned rule; participation: game_theoretic, epsilon: 1% "
                          "(relative to the total contribution, docs/vertical.md). A row number "
                          "column (role other, owned by A, in no template) puts the release back "
                          "in the raw table's order for `fedanon evaluate`, so that Algorithm 2's "
                          "and Algorithm 1's releases are split into the same training and test "
                          "records (split seed 1)")
        with open(self.raw, newline="") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames
            raw_rows = list(reader)
        for run_label, split, added, ks in runs:
            parts = self.M11_SPLITS[split]
            owner = {LONG[s]: f"hospital-{p.lower()}" for p, attrs in parts.items()
                     for s in attrs.split()}
            slug = run_label.replace(" + ", "-").replace(" ", "")
            d = os.path.join(self.work, "vertical-" + slug)
            os.makedirs(d, exist_ok=True)
            for a in CATEGORICAL:
                shutil.copy(self.arx[a], os.path.join(d, f"{a}.csv"))
            files = []
            for p in parts:
                name = f"hospital-{p.lower()}"
                cols = [a for a in ATTRIBUTES if owner[a] == name]
                path = os.path.join(d, f"{name}.csv")
                with open(path, "w", newline="") as f:
                    w = csv.writer(f, lineterminator="\n")
                    w.writerow(["id", "income"] + (["row"] if p == "A" else []) + cols)
                    for i, r in enumerate(raw_rows):
                        w.writerow([f"r{i}", r["income"]] + ([i] if p == "A" else []) +
                                   [r[c] for c in cols])
                files.append(path)
            for n in tops:
                qid = TOP9[:n] + added
                for k in ks:
                    lines = ["name: m11-alg2", "attributes:", "  - {name: id, role: id}",
                             "  - {name: row, role: other, party: hospital-a}"]
                    for a in ATTRIBUTES:
                        if a in qid and a in CONTINUOUS:
                            lo, hi = CONTINUOUS[a]
                            how = f"role: qid, type: continuous, range: [{lo}, {hi}], precision: 1"
                        elif a in qid:
                            how = f"role: qid, taxonomy: {a}.csv"
                        else:
                            how = "role: other"
                        lines.append(f"  - {{name: {a}, {how}, party: {owner[a]}}}")
                    lines += ['  - {name: income, role: class, values: ["<=50K", ">50K"]}',
                              "privacy:", "  model: templates", "  templates:",
                              "    - {qid: [" + ", ".join(qid) + f"], k: {k}}}",
                              "score: gainratio", "partitioning: vertical",
                              "participation: game_theoretic", "epsilon: 1%"]
                    spec = os.path.join(d, f"top{n}-k{k}.yaml")
                    with open(spec, "w") as f:
                        f.write("\n".join(lines) + "\n")
                    out = os.path.join(d, "release.csv")
                    rep = os.path.join(d, f"top{n}-k{k}-report.json")
                    self.progress(f"  Algorithm 2, {run_label}, Top{n}, k = {k}")
                    self.run(fig, ["federation", "up", "--party-data", ",".join(files),
                                   "--spec", spec, "--wait", "--result", out, "--report", rep])
                    # The release in the raw table's order (by the row number), without it.
                    anon = os.path.join(d, "release-ordered.csv")
                    with open(out, newline="") as fin:
                        released = sorted(csv.DictReader(fin), key=lambda r: int(r["row"]))
                    with open(anon, "w", newline="") as fa:
                        wa = csv.DictWriter(fa, fieldnames=header, lineterminator="\n")
                        wa.writeheader()
                        for r in released:
                            wa.writerow({c: r[c] for c in header})
                    central = self.spec(f"m11-alg1-{slug}-top{n}-k{k}",
                                        {a: ("qid" if a in qid else "other") for a in ATTRIBUTES},
                                        f"{{model: lkc, L: {len(qid)}, K: {k}}}",
                                        score="gainratio")
                    e = json.loads(self.run(fig, ["evaluate", "--spec", central, "--raw",
                                                  self.raw, "--anonymized", anon, "--json"]))
                    with open(rep) as f:
                        report = json.load(f)
                    # Algorithm 1: the centralized release (= the honest vertical one).
                    out1 = os.path.join(d, "alg1.csv")
                    rep1 = os.path.join(d, f"top{n}-k{k}-alg1-report.json")
                    self.run(fig, ["anonymize", "--spec", central, "--input", self.raw,
                                   "--output", out1, "--report", rep1])
                    e1 = json.loads(self.run(fig, ["evaluate", "--spec", central, "--raw",
                                                   self.raw, "--anonymized", out1, "--json"]))
                    with open(out1, newline="") as f:
                        central_rows = list(csv.DictReader(f))
                    same = len(central_rows) == len(released) and all(
                        a[c] == b[c] for a, b in zip(central_rows, released) for c in qid)
                    with open(rep1) as f:
                        steps1 = len(json.load(f).get("steps", []))
                    label = f"{run_label}: Top{n}"
                    self.add(fig, f"{label} Algorithm 2", k, "IE %", fmt_pct(e["CE"]))
                    self.add(fig, f"{label} Algorithm 2", k, "specializations",
                             str(len(report.get("steps", []))))
                    won = {p["party"][-1].upper(): int(p.get("rounds_won", 0))
                           for p in report.get("participation", [])}
                    self.add(fig, f"{label} Algorithm 2", k, "rounds won",
                             " ".join(f"{p} {won.get(p, 0)}" for p in parts))
                    self.add(fig, f"{label} Algorithm 2", k, "same table as Algorithm 1",
                             "yes" if same else "no")
                    self.add(fig, f"{label} Algorithm 1 (centralized)", k, "IE %",
                             fmt_pct(e1["CE"]))
                    self.add(fig, f"{label} Algorithm 1 (centralized)", k, "specializations",
                             str(steps1))

    def ga(self):
        fig = "ga-cv"
        qid = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex",
               "native-country"]
        ks = {"fixture": "10,100", "quick": "10,50,100,250,500,1000",
              "full": "10,25,50,75,100,150,200,250,500,750,1000"}[self.mode]
        self.setting(fig, "Iyengar's QID {Ag, Wc, Ed, Ms, Oc, Ra, Sx, Nc}; only these attributes "
                          "and the class; k-anonymity on the QID (LKC, L = 8); score gainratio; "
                          "ARX's taxonomies (not Iyengar's, which are not public here); errors by "
                          "10-fold cross-validation of the released table (the thesis masks each "
                          "fold's training data and applies the masking to its test data)")
        roles = {a: "qid" for a in qid}
        spec = self.spec("ga", roles, "{model: lkc, L: 8, K: 20}", score="gainratio")
        rows = self.sweep(fig, spec, f"K={ks}", extra=["--folds", "10"])
        self.add(fig, "baseline", "", "BE %", fmt_pct(rows[0]["BE"]))
        self.add(fig, "baseline", "", "UE %", fmt_pct(rows[0]["UE"]))
        for r in rows:
            if r["status"] == "ok":
                self.add(fig, "AE (10-fold CV)", r["K"], "AE %", fmt_pct(r["CE"]))

    def thesis_topn(self):
        ks = ",".join(map(str, self.k_grid()))
        for fig, tax, classifier in (("th-45", "suppression", "c45"), ("th-46a", "arx", "c45"),
                                     ("th-46b", "arx", "naive-bayes")):
            self.setting(fig, f"anonymity template <TopN, k> (LKC with L = N); categorical QIDs "
                              f"{'suppressed (no taxonomy)' if tax == 'suppression' else 'generalized by ARX taxonomies'}; "
                              f"continuous ones discretized (binned rule); score infogain_privloss "
                              f"(Eq. 4.1); classifier {classifier}")
            for n in (5, 7, 9):
                spec = self.topn_spec(f"{fig}-top{n}", n, "infogain_privloss", tax)
                rows = self.sweep(fig, spec, f"K={ks}", extra=["--classifier", classifier])
                self.add(fig, f"Top{n}", "", "UE %", fmt_pct(rows[0]["UE"]))
                if n == 5:
                    self.add(fig, "baseline", "", "BE %", fmt_pct(rows[0]["BE"]))
                for r in rows:
                    if r["status"] == "ok":
                        self.add(fig, f"Top{n}", r["K"], "AE %", fmt_pct(r["CE"]))

    # ---- yang2010 --------------------------------------------------------------------------
    def yang(self):
        qids = ["education", "race", "sex", "workclass", "marital-status", "age", "relationship",
                "native-country"]
        n = {"fixture": 2000, "quick": 30162, "full": 30162}[self.mode]
        raw = os.path.join(self.work, "yang-raw.csv")
        with open(self.raw, newline="") as fin, open(raw, "w", newline="") as fout:
            reader = csv.DictReader(fin)
            writer = csv.writer(fout, lineterminator="\n")
            writer.writerow(qids + ["salary", "occupation"])
            for i, row in enumerate(reader):
                if i >= n:
                    break
                writer.writerow([row[q] for q in qids] + [row["income"], row["occupation"]])
        lines = ["name: yang2010", "attributes:"]
        lines += [f"  - {{name: {q}, role: qid}}" for q in qids + ["salary"]]
        lines += ["  - {name: occupation, role: sensitive}", "privacy: {model: lkc, L: 1, K: 1}",
                  "score: distortion"]
        spec = os.path.join(self.work, "specs", "yang2010.yaml")
        with open(spec, "w") as f:
            f.write("\n".join(lines) + "\n")
        fig = "y10"
        self.setting(fig, f"the first {n:,} records of adult_clean.csv (Adult's training file "
                          "without missing values); QID = education, race, sex, workclass, "
                          "marital-status, age, relationship, native-country, salary (every "
                          "value a category); sensitive occupation; Algorithm 1 with the "
                          "entropy weights of Proposition 7, seed 1")
        released = os.path.join(self.work, "yang-ra.csv")
        report = os.path.join(self.work, "yang-ra.json")
        runs = {"fixture": 4, "quick": 10, "full": 30}[self.mode]
        self.run(fig, ["randomize", "--quiet", "--spec", spec, "--input", raw, "--output",
                       released, "--report", report, "--seed", "1", "--c-amplification",
                       "--variance-length", "1", "--variance-length", "2", "--variance-runs",
                       str(runs), "--bias-length", "1", "--bias-length", "2"])
        with open(report) as f:
            rep = json.load(f)
        self.add(fig, "Pa(D')", "entropy weights (Prop. 7)", "Pa",
                 f"{rep['probabilistic_anonymity']:.2f}")
        uniform = os.path.join(self.work, "yang-ra-uniform.json")
        self.run(fig, ["randomize", "--quiet", "--spec", spec, "--input", raw, "--output",
                       os.path.join(self.work, "yang-ra-uniform.csv"), "--report", uniform,
                       "--seed", "1", "--selection", "uniform"])
        with open(uniform) as f:
            self.add(fig, "Pa(D')", "uniform p_i = 1/m (Eq. 3)", "Pa",
                     f"{json.load(f)['probabilistic_anonymity']:.2f}")
        self.add(fig, "c-amplification", "", "max", f"{rep['c_amplification']['max']:.3f}")
        self.add(fig, "c-amplification", "", "mean", f"{rep['c_amplification']['mean']:.3f}")
        for v in rep["relative_variance"]:
            for key in ("eq11", "independent", "measured"):
                self.add(fig, f"Var R(q), length {v['length']}", key, "variance",
                         f"{v[key]:.3e}")
        for b in rep["relative_bias"]:
            self.add(fig, f"relative bias, length {b['length']}", "measured", "%",
                     f"{100 * b['measured']:.3f}")
            self.add(fig, f"relative bias, length {b['length']}", "predicted", "%",
                     f"{100 * b['predicted']:.3f}")
        queries = {"fixture": 50, "quick": 200, "full": 1000}[self.mode]
        fig = "y10-6a"
        self.setting(fig, f"{queries} random COUNT queries per number of QID attributes (seeded); "
                          "randomized table queried directly; Anatomy (l = 10) by Eq. 13; entropy "
                          "l-diverse generalization (Mondrian-style median cuts, l = 10) by Eq. 12")
        out = json.loads(self.run(fig, ["evaluate", "--spec", spec, "--raw", raw, "--randomized",
                                        released, "--queries", str(queries),
                                        "--ldiversity-l", "-1", "--json"]))
        for r in out["query_relative_error"]:
            j = r["qid_attributes"]
            self.add(fig, "RA", j, "relative error", fmt4(r["randomized_relative_error"]))
            if "anatomy_relative_error" in r:
                self.add(fig, f"permutation (l = {out['anatomy']['l']})", j, "relative error",
                         fmt4(r["anatomy_relative_error"]))
            if "ldiversity_relative_error" in r:
                self.add(fig, f"l-diversity (l = {out['ldiversity']['l']})", j, "relative error",
                         fmt4(r["ldiversity_relative_error"]))
        fig = "y10-7"
        self.setting(fig, "Apriori support 8%, confidence 15%; quasi-sensitive rules X -> "
                          "occupation; recovered share |Asso_D ∩ Asso_D'| / |Asso_D|")
        self.add_recovery(fig, "RA", out["randomized_associations"])
        if "anatomy_associations" in out:
            self.add_recovery(fig, f"permutation (l = {out['anatomy']['l']})",
                              out["anatomy_associations"])
        fig = "y10-6b"
        self.setting(fig, "queries over 5 QID attributes; the paper's l = 5, 8, 10 where the "
                          "table allows it: Anatomy needs every occupation in at most n/l records "
                          "(Craft-repair holds 13.3%, so l <= 7); l = 8 and 10 are run for the "
                          "l-diverse baseline only")
        for l in ([5, 7, 8, 10] if self.mode != "fixture" else [2]):
            anatomy = l if l <= 7 else 0
            out = json.loads(self.run(fig, ["evaluate", "--spec", spec, "--raw", raw,
                                            "--randomized", released, "--queries", str(queries),
                                            "--anatomy-l", str(anatomy), "--ldiversity-l", str(l),
                                            "--max-query-attributes", "5", "--json"]))
            r = out["query_relative_error"][-1]
            self.add(fig, "RA", l, "relative error", fmt4(r["randomized_relative_error"]))
            if "anatomy_relative_error" in r:
                self.add(fig, "permutation", l, "relative error",
                         fmt4(r["anatomy_relative_error"]))
            self.add(fig, "l-diversity", l, "relative error", fmt4(r["ldiversity_relative_error"]))
        fig = "y10-8"
        self.setting(fig, "Algorithm 2 with k attributes per record (uniform selection); "
                          "association recovery as in Fig. 7")
        for k in ([1, 3, 5, 7, 9] if self.mode != "fixture" else [1, 3]):
            rel = os.path.join(self.work, f"yang-ra-k{k}.csv")
            self.run(fig, ["randomize", "--quiet", "--spec", spec, "--input", raw, "--output", rel,
                           "--seed", str(k), "--attributes-per-record", str(k),
                           "--selection", "uniform"])
            out = json.loads(self.run(fig, ["evaluate", "--spec", spec, "--raw", raw,
                                            "--randomized", rel, "--queries", "1",
                                            "--max-query-attributes", "1", "--anatomy-l", "0",
                                            "--json"]))
            rec = out["randomized_associations"]
            for by in rec["by_length"]:
                self.add(fig, f"k = {k}", by["length"], "recovered %",
                         f"{100 * by['ratio']:.1f}")

    def add_recovery(self, fig, label, rec):
        for by in rec["by_length"]:
            self.add(fig, label, by["length"], "recovered %", f"{100 * by['ratio']:.1f}")

    # ---- scalability -----------------------------------------------------------------------
    def blowup(self, rows_wanted, seed=1):
        """Adult blown up as the papers did: alpha - 1 variations of each record, each with
        random values (drawn from the attribute's values in the data) on q uniformly chosen QID
        attributes, q uniform in [1, 14]; the original records first."""
        path = os.path.join(self.work, f"blowup-{rows_wanted}.csv")
        if os.path.exists(path):
            return path
        rng = random.Random(seed)
        with open(self.raw, newline="") as f:
            reader = csv.reader(f)
            header = next(reader)
            base = list(reader)
        columns = [i for i, h in enumerate(header) if h in ATTRIBUTES]
        domains = {i: [r[i] for r in base] for i in columns}
        with open(path, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(header)
            written = 0
            for r in base:
                if written == rows_wanted:
                    break
                w.writerow(r)
                written += 1
            while written < rows_wanted:
                for r in base:
                    if written == rows_wanted:
                        break
                    v = list(r)
                    for i in rng.sample(columns, rng.randint(1, len(columns))):
                        v[i] = rng.choice(domains[i])
                    w.writerow(v)
                    written += 1
        return path

    def scalability(self):
        sizes = {"fixture": [4000], "quick": [100000, 200000],
                 "full": [200000, 400000, 600000, 800000, 1000000]}[self.mode]
        fig = "scal"
        self.setting(fig, "Adult blown up (variations with random values on 1..14 attributes); "
                          "whole `fedanon anonymize` runs, the phases from its report "
                          "(read, anonymize, write); mohammed2010 Fig. 9: L = 4, K = 20, C = 100% "
                          "(13 QIDs); mohammed2011 Fig. 12 / thesis Fig. 4.11: AllAtt, one QID of "
                          "all 14 attributes, k = 50. One run each on a shared 2-core machine: "
                          "rerun with /usr/bin/time -v for your own figures")
        m10 = self.spec("scal-m10", self.m10_roles(), "{model: lkc, L: 4, K: 20}")
        allatt = self.spec("scal-allatt", {a: "qid" for a in ATTRIBUTES},
                           "{model: lkc, L: 14, K: 50}")
        for size in sizes:
            raw = self.blowup(size)
            for label, spec in (("m10 L=4 K=20", m10), ("AllAtt k=50", allatt)):
                if label.startswith("AllAtt") and self.mode == "full" and size > 400000:
                    continue
                out = os.path.join(self.work, "scal-out.csv")
                rep = os.path.join(self.work, "scal-report.json")
                self.progress(f"  scalability: {label}, {size:,} records")
                self.run(fig, ["anonymize", "--spec", spec, "--input", raw, "--output", out,
                               "--report", rep])
                with open(rep) as f:
                    t = json.load(f)["timings_seconds"]
                for phase in ("read", "anonymize", "write", "total"):
                    if phase in t:
                        self.add(fig, f"{label}: {phase}", size, "seconds", f"{t[phase]:.2f}")
                os.remove(out)

    def m11_scalability(self):
        """mohammed2011 §7.3 Fig. 12: the anonymize phase (the paper excludes reading and
        writing) for 50K to 200K records, AllAttQID (one QID of all 14 attributes) and MultiQID
        (random requirements of 3-7 QIDs of one length 2-9, k = 50), on Adult blown up."""
        fig = "m11-12"
        sizes = {"fixture": [4000], "quick": [50000, 200000],
                 "full": [50000, 100000, 150000, 200000]}[self.mode]
        count = {"fixture": 2, "quick": 3, "full": 30}[self.mode]
        self.setting(fig, "Adult blown up as in the scalability runs; `fedanon anonymize` once per "
                          "requirement and size, the anonymize phase from its report (reading "
                          "and writing excluded, as the paper's); score gainratio; ARX's "
                          "taxonomies, binned rule; AllAttQID: one template on all 14 attributes, "
                          f"k = 50; MultiQID: the mean over {count} random requirements (seeded): "
                          "U[3, 7] QIDs, all of one length U[2, 9], attributes drawn from the 14, "
                          "repeats discarded, k = 50, the attributes in no QID released as they "
                          "are. One run each on a shared 2-core machine")
        rng = random.Random(12)
        reqs = []
        while len(reqs) < count:
            n, length = rng.randint(3, 7), rng.randint(2, 9)
            reqs.append(distinct_samples(rng, ATTRIBUTES, n, length))
        specs = [("AllAttQID", self.spec("m11-12-allatt", {a: "qid" for a in ATTRIBUTES},
                                         "{model: lkc, L: 14, K: 50}", score="gainratio"))]
        for i, qids in enumerate(reqs, 1):
            union = {a for q in qids for a in q}
            privacy = "{model: templates, templates: [" + ", ".join(
                "{qid: [" + ", ".join(q) + "], k: 50}" for q in qids) + "]}"
            specs.append((f"MultiQID {i}", self.spec(
                f"m11-12-multi{i}", {a: ("qid" if a in union else "other") for a in ATTRIBUTES},
                privacy, score="gainratio")))
        for size in sizes:
            raw = self.blowup(size)
            multi = []
            self.progress(f"  Fig. 12: {size:,} records, {len(specs)} requirements")
            for label, spec in specs:
                out = os.path.join(self.work, "m11-12-out.csv")
                rep = os.path.join(self.work, "m11-12-report.json")
                self.run(fig, ["anonymize", "--spec", spec, "--input", raw, "--output", out,
                               "--report", rep])
                with open(rep) as f:
                    t = json.load(f)["timings_seconds"]
                os.remove(out)
                if label == "AllAttQID":
                    self.add(fig, "AllAttQID: anonymize", size, "seconds",
                             f"{t['anonymize']:.3f}")
                    self.add(fig, "AllAttQID: total", size, "seconds", f"{t['total']:.3f}")
                else:
                    multi.append(t["anonymize"])
            if multi:
                self.add(fig, "MultiQID: anonymize, mean", size, "seconds",
                         f"{sum(multi) / len(multi):.3f}")
                self.add(fig, "MultiQID: anonymize, largest", size, "seconds",
                         f"{max(multi):.3f}")

    def confidence_scalability(self):
        """Thesis §5.4.2 Fig. 5.6: suppression for confidentiality templates on Adult blown up,
        k = 90%: (a) one template, Y = the 50% least frequent values of Ms, X = the other 7
        categorical attributes; (b) random requirements of U[3, 6] templates with X of length
        U[2, 5] drawn from those 7 attributes, the same Y."""
        fig = "th-56"
        sizes = {"fixture": [4000], "quick": [200000],
                 "full": [200000, 400000, 600000, 800000, 1000000]}[self.mode]
        count = {"fixture": 2, "quick": 3, "full": 30}[self.mode]
        # Requirements run per size: all at the smallest, at most 10 at 1M records in --full
        # (about half a minute each there).
        multi_sizes = {n: (count if n < 1000000 else 10) for n in sizes} \
            if self.mode != "full" else {200000: count, 1000000: 10}
        sens = "marital-status"
        xs = [a for a in CATEGORICAL if a != sens]
        self.setting(fig, "Adult blown up as in the scalability runs; the 8 categorical attributes "
                          "only, suppression (no taxonomies), score infogain_privloss, k = 90%; "
                          "Y = the 50% least frequent values of Ms; (a) X = the other 7; (b) the "
                          f"mean over {count} random requirements (seeded) of U[3, 6] templates, X "
                          "of U[2, 5] of the 7, repeats discarded (the first " +
                     ", ".join(f"{c} at {n:,}" for n, c in multi_sizes.items()) +
                     " records); `fedanon anonymize` once each, the anonymize and total times "
                     "from its report")
        with open(self.raw, newline="") as f:
            counts = {}
            for r in csv.DictReader(f):
                counts[r[sens]] = counts.get(r[sens], 0) + 1
        ordered = sorted(counts, key=lambda v: (counts[v], v))
        least = ordered[:max(1, len(ordered) // 2)]
        roles = {a: ("sensitive" if a == sens else "qid") for a in CATEGORICAL}

        def privacy(templates):
            return "{model: templates, confidence: [" + ", ".join(
                "{qid: [" + ", ".join(x) + f"], attribute: {sens}, sensitive_values: [" +
                ", ".join(least) + "], max: 0.9}" for x in templates) + "]}"

        single = self.spec("th56-single", roles, privacy([xs]), score="infogain_privloss",
                           taxonomies="suppression", beneficial=True, numeric_split="exact")
        rng = random.Random(56)
        multi = []
        while len(multi) < count:
            n, length = rng.randint(3, 6), rng.randint(2, 5)
            templates = distinct_samples(rng, xs, n, length)
            multi.append(self.spec(f"th56-multi{len(multi) + 1}", roles, privacy(templates),
                                   score="infogain_privloss", taxonomies="suppression",
                                   beneficial=True, numeric_split="exact"))
        for size in sizes:
            raw = self.blowup(size)
            runs = [("single template", single)]
            if size in multi_sizes:
                runs += [("multiple templates", m) for m in multi[:multi_sizes[size]]]
            self.progress(f"  Fig. 5.6: {size:,} records, {len(runs)} requirements")
            times = {}
            for label, spec in runs:
                out = os.path.join(self.work, "th56-out.csv")
                rep = os.path.join(self.work, "th56-report.json")
                self.run(fig, ["anonymize", "--spec", spec, "--input", raw, "--output", out,
                               "--report", rep])
                with open(rep) as f:
                    t = json.load(f)["timings_seconds"]
                os.remove(out)
                for phase in ("anonymize", "total"):
                    times.setdefault((label, phase), []).append(t[phase])
            for (label, phase), v in times.items():
                self.add(fig, f"{label}: {phase}" + (", mean" if len(v) > 1 else ""), size,
                         "seconds", f"{sum(v) / len(v):.3f}")

    # ---- thesis Table 5.3 ------------------------------------------------------------------
    def inferences(self):
        """Table 5.3: the number of inferences above k in the raw data, Adult Top4 (Ms, Re, Ed,
        Sx sensitive, the 50% least frequent values of each, X = the other 4 categorical
        attributes). An inference is a pair (x, y) of a value x on X and a sensitive value y with
        confidence a(x, y) / a(x) above k."""
        fig = "th-53"
        sens = ["marital-status", "relationship", "education", "sex"]
        xs = [a for a in CATEGORICAL if a not in sens]
        self.setting(fig, "counted on the raw table by this script: X = workclass, occupation, "
                          "race, native-country; y = the 50% least frequent values (by count, "
                          "rounding the number of values down) of each of Ms, Re, Ed, Sx; an "
                          "inference is a pair (x, y) with confidence above k. The thesis does not "
                          "define the count further")
        with open(self.raw, newline="") as f:
            rows = list(csv.DictReader(f))
        ys = []
        for s in sens:
            counts = {}
            for r in rows:
                counts[r[s]] = counts.get(r[s], 0) + 1
            ordered = sorted(counts, key=lambda v: (counts[v], v))
            ys += [(s, v) for v in ordered[:len(ordered) // 2]]
        ax, axy = {}, {}
        for r in rows:
            x = tuple(r[a] for a in xs)
            ax[x] = ax.get(x, 0) + 1
            for s, v in ys:
                if r[s] == v:
                    axy[(x, s, v)] = axy.get((x, s, v), 0) + 1
        for k in (10, 30, 50, 70, 90):
            count = sum(1 for (x, s, v), c in axy.items() if c / ax[x] > k / 100)
            self.add(fig, "inferences", f"{k}%", "count", str(count))

    # ---- thesis §4.4.1 Fig. 4.8 and §5.4 -------------------------------------------------------
    def anonymize_and_evaluate(self, fig, spec, raw, extra_eval=()):
        out = os.path.join(self.work, "tmp-out.csv")
        try:
            self.run(fig, ["anonymize", "--spec", spec, "--input", raw, "--output", out])
        except RuntimeError as error:
            if "FailedPrecondition" in str(error) or "even the most general" in str(error) or \
                    "violat" in str(error):
                return None
            raise
        return json.loads(self.run(fig, ["evaluate", "--spec", spec, "--raw", raw,
                                         "--anonymized", out, "--json", *extra_eval]))

    def templates(self):
        """Fig. 4.8: random requirements of 3-7 anonymity templates of 2-9 attributes each
        (k = 100), against the single template on the union of their attributes."""
        fig = "th-48"
        count = {"fixture": 2, "quick": 5, "full": 30}[self.mode]
        self.setting(fig, f"{count} random requirements (seeded): U[3, 7] templates of U[2, 9] "
                          "attributes drawn from the 14, k = 100, repeats discarded; SingleTmp: "
                          "one template on the union of their attributes; thesis-shaped "
                          "taxonomies; score infogain_privloss; C4.5")
        rng = random.Random(48)
        for i in range(1, count + 1):
            n, length = rng.randint(3, 7), rng.randint(2, 9)
            qids = distinct_samples(rng, ATTRIBUTES, n, length)
            union = sorted({a for q in qids for a in q})
            roles = {a: ("qid" if a in union else "other") for a in ATTRIBUTES}
            for label, templates in (("MultiTmp", qids), ("SingleTmp", [union])):
                privacy = "{model: templates, templates: [" + ", ".join(
                    "{qid: [" + ", ".join(q) + "], k: 100}" for q in templates) + "]}"
                spec = self.spec(f"th48-{i}-{label}", roles, privacy,
                                 score="infogain_privloss", taxonomies="thesis",
                                 beneficial=True)
                e = self.anonymize_and_evaluate(fig, spec, self.raw)
                if e is not None:
                    self.add(fig, label, i, "AE %", fmt_pct(e["CE"]))
                    if label == "MultiTmp" and i == 1:
                        self.add(fig, "baseline", "", "BE %", fmt_pct(e["BE"]))

    def confidence(self):
        """Fig. 5.4: confidence templates on Adult's 8 categorical attributes (suppression):
        TopN of Ms, Re, Ed, Sx sensitive (their 50% least frequent values), X = the others."""
        fig = "th-54"
        ranked = ["marital-status", "relationship", "education", "sex"]
        ks = {"fixture": [0.5], "quick": [0.5, 0.9], "full": [0.1, 0.3, 0.5, 0.7, 0.9]}[self.mode]
        tops = {"fixture": [1], "quick": [1, 2, 3, 4], "full": [1, 2, 3, 4]}[self.mode]
        self.setting(fig, "the 8 categorical attributes only, no taxonomies (suppression); Y = "
                          "the 50% least frequent values of each of the top N attributes (Ms, Re, "
                          "Ed, Sx); X = the other categorical attributes; one confidence template "
                          "per sensitive attribute; score infogain_privloss; SE averaged over k = "
                          + ", ".join(f"{int(100 * k)}%" for k in ks) +
                          " (a k whose most general table already violates is left out and "
                          "listed); RE: the N attributes removed")
        least = self.least_frequent_half(ranked)
        for n in tops:
            sens = ranked[:n]
            xs = [a for a in CATEGORICAL if a not in sens]
            roles = {a: ("sensitive" if a in sens else "qid") for a in CATEGORICAL}
            errors = []
            re_error = None
            for k in ks:
                privacy = confidence_templates(xs, sens, least, k)
                spec = self.spec(f"th54-top{n}-{int(100 * k)}", roles, privacy,
                                 score="infogain_privloss", taxonomies="suppression", beneficial=True,
                                 numeric_split="exact")
                e = self.anonymize_and_evaluate(fig, spec, self.raw,
                                                ("--remove", ",".join(sens)))
                if e is None:
                    self.add(fig, f"Top{n}", f"{int(100 * k)}%", "status", "no release")
                    continue
                errors.append(100 * e["CE"])
                re_error = e["RE"]
                if n == tops[0] and not any(r[0] == fig and r[1] == "baseline"
                                            for r in self.rows):
                    self.add(fig, "baseline", "", "BE %", fmt_pct(e["BE"]))
            if errors:
                self.add(fig, f"Top{n}", "mean over k", "SE %", f"{sum(errors) / len(errors):.2f}")
                self.add(fig, f"Top{n}", "mean over k", "RE %", fmt_pct(re_error))

    def least_frequent_half(self, attributes):
        """Per attribute, the less frequent half of its values in the raw table (at least one;
        ties by value): the sensitive values of Figs. 5.4(a) and 5.4(b)."""
        with open(self.raw, newline="") as f:
            rows = list(csv.DictReader(f))
        least = {}
        for a in attributes:
            counts = {}
            for r in rows:
                counts[r[a]] = counts.get(r[a], 0) + 1
            ordered = sorted(counts, key=lambda v: (counts[v], v))
            least[a] = ordered[:max(1, len(ordered) // 2)]
        return least

    def confidence_ran(self):
        """Fig. 5.4(b): as Fig. 5.4(a) with RanN: N of the 8 categorical attributes drawn at
        random (seeded) as sensitive, X = the others; SE and RE averaged over the thresholds and
        the random sets."""
        fig = "th-54b"
        ks = {"fixture": [0.5], "quick": [0.5, 0.9], "full": [0.1, 0.3, 0.5, 0.7, 0.9]}[self.mode]
        sets = {"fixture": 1, "quick": 3, "full": 30}[self.mode]
        tops = {"fixture": [1], "quick": [1, 2, 3, 4], "full": [1, 2, 3, 4]}[self.mode]
        self.setting(fig, f"RanN: {sets} random sets (seeded; repeats discarded) of N of the 8 "
                          "categorical attributes as sensitive, each with its 50% least frequent "
                          "values; X = the other categorical attributes; otherwise as Fig. 5.4(a) "
                          "(suppression, score infogain_privloss); SE averaged over k = " +
                     ", ".join(f"{int(100 * k)}%" for k in ks) + " and the sets (a k whose most "
                     "general table already violates is left out and counted), RE over the sets")
        least = self.least_frequent_half(CATEGORICAL)
        rng = random.Random(54)
        for n in tops:
            drawn = distinct_samples(rng, CATEGORICAL,
                                     min(sets, math.comb(len(CATEGORICAL), n)), n)
            errors, removal, missing = [], [], 0
            for i, sens in enumerate(drawn, 1):
                xs = [a for a in CATEGORICAL if a not in sens]
                roles = {a: ("sensitive" if a in sens else "qid") for a in CATEGORICAL}
                re_error = None
                for k in ks:
                    privacy = confidence_templates(xs, sens, least, k)
                    spec = self.spec(f"th54b-ran{n}-{i}-{int(100 * k)}", roles, privacy,
                                     score="infogain_privloss", taxonomies="suppression",
                                     beneficial=True, numeric_split="exact")
                    e = self.anonymize_and_evaluate(fig, spec, self.raw,
                                                    ("--remove", ",".join(sens)))
                    if e is None:
                        missing += 1
                        continue
                    errors.append(100 * e["CE"])
                    re_error = e["RE"]
                    if not any(r[0] == fig and r[1] == "baseline" for r in self.rows):
                        self.add(fig, "baseline", "", "BE %", fmt_pct(e["BE"]))
                if re_error is not None:
                    removal.append(100 * re_error)
            if errors:
                self.add(fig, f"Ran{n}", "mean over k and sets", "SE %",
                         f"{sum(errors) / len(errors):.2f}")
                self.add(fig, f"Ran{n}", "mean over k and sets", "RE %",
                         f"{sum(removal) / len(removal):.2f}")
            self.add(fig, f"Ran{n}", "mean over k and sets", "sets", str(len(drawn)))
            self.add(fig, f"Ran{n}", "mean over k and sets", "(set, k) without a release",
                     str(missing))

    # ---- thesis ch. 6: sequential releases ---------------------------------------------------
    def project(self, name, columns, raw=None):
        path = os.path.join(self.work, f"{name}.csv")
        with open(raw or self.raw, newline="") as fin, open(path, "w", newline="") as fout:
            reader = csv.DictReader(fin)
            w = csv.writer(fout, lineterminator="\n")
            w.writerow(columns)
            for row in reader:
                w.writerow([row[c] for c in columns])
        return path

    def sequential(self):
        """Thesis §6.4: T1 for the Taxation Department, T2 (already released) for Immigration,
        joined on Ms, Re, Sx. Set A: T1 = Ed, Oc, Wc, Ms, Re, Sx and the class; Set B adds the
        6 continuous attributes; T2 = Ra, Nc, Ms, Re, Sx."""
        join = ["marital-status", "relationship", "sex"]
        t2 = self.project("t2", ["race", "native-country"] + join)
        ks = {"fixture": [40], "quick": [40, 200], "full": [40, 80, 120, 160, 200]}[self.mode]
        sets = {"A": (["education", "occupation", "workclass"] + join,
                      ["marital-status", "relationship", "sex", "education", "occupation",
                       "workclass"], [3, 6] if self.mode != "full" else [3, 4, 5, 6]),
                "B": (["age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                       "hours-per-week", "education", "occupation", "workclass"] + join,
                      [LONG[x] for x in "Cg Ag Ms En Re Hw Sx".split()],
                      [7] if self.mode != "full" else [3, 5, 7])}
        if self.mode == "fixture":
            sets = {"A": (sets["A"][0], sets["A"][1], [3])}
        all_ks = ks
        for set_name, (t1_attrs, ranked, tops) in sets.items():
            # Set B's exact threshold search over 6 continuous attributes is the slowest run
            # here: the quick mode runs its smallest k only.
            ks = all_ks if set_name == "A" or self.mode == "full" else all_ks[:1]
            fig = f"th-6-{set_name}"
            self.setting(fig, f"Set {set_name}: T1 = {', '.join(SHORT[a] for a in t1_attrs)} and "
                              "the class; T2 = Ra, Nc, Ms, Re, Sx (the same records); thesis-shaped "
                              "taxonomies; X = the top N attributes of T1, the join attributes and "
                              "T2's Ra and Nc; XYE: Y = the T1 record, XYE(row): Y = the pair of "
                              "records; KAE/KAD: k-anonymity on all T1 attributes without T2; RJE: "
                              "T1 without the join attributes; distortion per record (§6.4)")
            t1 = self.project(f"t1{set_name}", t1_attrs + ["income"])
            roles = {a: "qid" for a in t1_attrs}
            base = self.spec(f"seq-{set_name}-base", roles, "{model: lkc, L: 1, K: 1}",
                             taxonomies="thesis", numeric_split="exact")
            ev = json.loads(self.run(fig, ["evaluate", "--spec", base, "--raw", t1, "--remove",
                                           ",".join(join), "--json"]))
            self.add(fig, "baseline", "", "BLE %", fmt_pct(ev["BE"]))
            self.add(fig, "baseline", "", "RJE %", fmt_pct(ev["RE"]))
            for n in tops:
                x = list(dict.fromkeys(ranked[:n] + join)) + ["previous.race",
                                                              "previous.native-country"]
                for k in ks:
                    for label, y in (("XY", "[current.@record]"),
                                     ("XY(row)", "[current.@record, previous.@record]")):
                        extra = ("sequential:\n  anonymity:\n    - x: [" + ", ".join(x) +
                                 f"]\n      y: {y}\n      k: {k}")
                        spec = self.spec(f"seq-{set_name}-top{n}-{label}-{k}".replace("(", "")
                                         .replace(")", ""), roles, None, score="infogain_privloss",
                                         taxonomies="thesis", extra=extra, beneficial=True)
                        out = os.path.join(self.work, "seq-out.csv")
                        self.progress(f"  sequential Set {set_name} Top{n} {label} k = {k}")
                        self.run(fig, ["anonymize", "--spec", spec, "--input", t1,
                                       "--previous-release", t2, "--output", out])
                        e = json.loads(self.run(fig, ["evaluate", "--spec", spec, "--raw", t1,
                                                      "--anonymized", out, "--distortion",
                                                      "--json"]))
                        self.add(fig, f"Top{n} {label}E", k, "error %", fmt_pct(e["CE"]))
                        if label == "XY":
                            self.add(fig, f"Top{n} XYD cat", k, "distortion",
                                     fmt4(e["distortion"]["categorical"]))
                            self.add(fig, f"Top{n} XYD cont", k, "distortion",
                                     fmt4(e["distortion"]["continuous"]))
            for k in ks:
                spec = self.spec(f"seq-{set_name}-ka-{k}", roles,
                                 f"{{model: lkc, L: {len(t1_attrs)}, K: {k}}}",
                                 score="infogain_privloss", taxonomies="thesis",
                                 numeric_split="exact", beneficial=True)
                out = os.path.join(self.work, "seq-out.csv")
                self.run(fig, ["anonymize", "--spec", spec, "--input", t1, "--output", out])
                e = json.loads(self.run(fig, ["evaluate", "--spec", spec, "--raw", t1,
                                              "--anonymized", out, "--distortion", "--json"]))
                self.add(fig, "KAE", k, "error %", fmt_pct(e["CE"]))
                self.add(fig, "KAD cat", k, "distortion", fmt4(e["distortion"]["categorical"]))
                self.add(fig, "KAD cont", k, "distortion", fmt4(e["distortion"]["continuous"]))

    def sequential_conf(self):
        """Thesis §6.4.2 Fig. 6.9: confidentiality templates over the join, Set A. T1 = Ed, Oc, Wc,
        Ms, Re, Sx and the class; T2 = Ra, Nc, Ms, Re, Sx. TopN: Y = the top N categorical
        attributes of T1 (Ms, Re, Sx, Ed), each with its 50% least frequent values as sensitive
        properties; X = the attributes not in Y (a common one meaning both copies) except T2's Ra
        and Nc. XYE averaged over the thresholds; RSE: T1 without Y; RJE: T1 without the join
        attributes."""
        ks = {"fixture": [0.5], "quick": [0.5, 0.9],
              "full": [0.1, 0.3, 0.5, 0.7, 0.9]}[self.mode]
        tops = {"fixture": [1], "quick": [1, 2, 3, 4], "full": [1, 2, 3, 4]}[self.mode]
        self.sequential_conf_set("th-6-9", "A", [], ks, tops)

    def sequential_conf_b(self):
        """Thesis §6.4.2 Fig. 6.10: as Fig. 6.9 on Set B, whose T1 and X also hold the 6
        continuous attributes (Ag, Fw, En, Cg, Cl, Hw); Y = the same top N categorical attributes
        of T1."""
        ks = {"fixture": [0.5], "quick": [0.5, 0.9],
              "full": [0.1, 0.3, 0.5, 0.7, 0.9]}[self.mode]
        tops = {"fixture": [1], "quick": [1, 2, 3, 4], "full": [1, 2, 3, 4]}[self.mode]
        self.sequential_conf_set("th-6-10", "B", list(CONTINUOUS), ks, tops)

    def sequential_conf_set(self, fig, set_name, continuous, ks, tops):
        join = ["marital-status", "relationship", "sex"]
        t1_attrs = continuous + ["education", "occupation", "workclass"] + join
        ranked = ["marital-status", "relationship", "sex", "education"]
        cont = (" (the continuous ones with the declared ranges, precision 1, searched exactly "
                "as every sequential release is)") if continuous else ""
        self.setting(fig, f"Set {set_name}: T1 = " + ", ".join(SHORT[a] for a in t1_attrs) +
                     f" and the class{cont}; T2 = Ra, Nc, Ms, Re, Sx (the same records); "
                     "thesis-shaped taxonomies; TopN: one confidentiality template per attribute "
                     "of Y = the top N of Ms, Re, Sx, Ed, its 50% least frequent values "
                     "sensitive, X = the other T1 attributes (a common one meaning T1's and T2's "
                     "column) without T2's Ra and Nc; XYE averaged over k = " +
                     ", ".join(f"{int(100 * k)}%" for k in ks) +
                     " (a k no release meets is listed and left out); RSE: T1 without Y; RJE: T1 "
                     "without Ms, Re, Sx")
        t2 = self.project("t2", ["race", "native-country"] + join)
        t1 = self.project(f"t1{set_name}", t1_attrs + ["income"])
        with open(t1, newline="") as f:
            rows = list(csv.DictReader(f))
        least = {}
        for a in ranked:
            counts = {}
            for r in rows:
                counts[r[a]] = counts.get(r[a], 0) + 1
            ordered = sorted(counts, key=lambda v: (counts[v], v))
            least[a] = ordered[:max(1, len(ordered) // 2)]
        base = self.spec(f"seqc-{set_name}-base", {a: "qid" for a in t1_attrs},
                         "{model: lkc, L: 1, K: 1}", taxonomies="thesis", numeric_split="exact")
        ev = json.loads(self.run(fig, ["evaluate", "--spec", base, "--raw", t1, "--remove",
                                       ",".join(join), "--json"]))
        self.add(fig, "baseline", "", "BLE %", fmt_pct(ev["BE"]))
        self.add(fig, "baseline", "", "RJE %", fmt_pct(ev["RE"]))
        for n in tops:
            ys = ranked[:n]
            xs = [a for a in t1_attrs if a not in ys]
            roles = {a: ("sensitive" if a in ys else "qid") for a in t1_attrs}
            errors = []
            rse = None
            for k in ks:
                extra = "sequential:\n  confidentiality:\n" + "".join(
                    "    - {x: [" + ", ".join(xs) + f"], attribute: current.{a}, "
                    "sensitive_values: [" + ", ".join(least[a]) + f"], max: {k}}}\n"
                    for a in ys)
                spec = self.spec(f"seqc-{set_name}-top{n}-{int(100 * k)}", roles, None,
                                 score="infogain_privloss", taxonomies="thesis",
                                 extra=extra.rstrip("\n"), beneficial=True)
                out = os.path.join(self.work, "seqc-out.csv")
                self.progress(f"  sequential confidentiality Set {set_name} Top{n} k = "
                              f"{int(100 * k)}%")
                try:
                    self.run(fig, ["anonymize", "--spec", spec, "--input", t1,
                                   "--previous-release", t2, "--output", out])
                except RuntimeError as error:
                    if "FailedPrecondition" in str(error) or "even the most general" in str(error):
                        self.add(fig, f"Top{n}", f"{int(100 * k)}%", "status", "no release")
                        continue
                    raise
                e = json.loads(self.run(fig, ["evaluate", "--spec", spec, "--raw", t1,
                                              "--anonymized", out, "--remove", ",".join(ys),
                                              "--json"]))
                errors.append(100 * e["CE"])
                rse = e["RE"]
                self.add(fig, f"Top{n} XYE", f"{int(100 * k)}%", "error %", fmt_pct(e["CE"]))
            if errors:
                self.add(fig, f"Top{n}", "mean over k", "XYE %",
                         f"{sum(errors) / len(errors):.2f}")
                self.add(fig, f"Top{n}", "mean over k", "RSE %", fmt_pct(rse))

    def sequential_scalability(self):
        """Thesis §6.4.1 Fig. 6.8 and §6.4.2 Fig. 6.11: sequential releases of Set A on Adult
        blown up: the anonymity template Top6 with Y = the T1 record and k = 40 (Fig. 6.8), the
        confidentiality template Top1 (Y = Ms, its 50% least frequent values) with k = 90%
        (Fig. 6.11); T1 and T2 projected from the same blown-up table."""
        fig = "th-6-scal"
        sizes = {"fixture": [4000], "quick": [200000],
                 "full": [200000, 400000, 600000, 800000, 1000000]}[self.mode]
        join = ["marital-status", "relationship", "sex"]
        t1_attrs = ["education", "occupation", "workclass"] + join
        ranked = ["marital-status", "relationship", "sex", "education", "occupation",
                  "workclass"]
        self.setting(fig, "Adult blown up as in the scalability runs (every attribute may vary, "
                          "Ms too, where the thesis keeps Y's values for Fig. 6.11); Set A: T1 = "
                          "Ed, Oc, Wc, Ms, Re, Sx and the class, T2 = Ra, Nc, Ms, Re, Sx of the "
                          "same records; thesis-shaped taxonomies; score infogain_privloss; Fig. "
                          "6.8: X = the top 6 of T1 with T2's Ra and Nc, Y = the T1 record, "
                          "k = 40; Fig. 6.11: Y = Ms (its 50% least frequent values in Adult), "
                          "X = the other T1 attributes, k = 90%; `fedanon anonymize "
                          "--previous-release` once each, the phases from its report")
        with open(self.raw, newline="") as f:
            counts = {}
            for r in csv.DictReader(f):
                counts[r["marital-status"]] = counts.get(r["marital-status"], 0) + 1
        ordered = sorted(counts, key=lambda v: (counts[v], v))
        least = ordered[:max(1, len(ordered) // 2)]
        roles = {a: "qid" for a in t1_attrs}
        x6 = list(dict.fromkeys(ranked[:6] + join)) + ["previous.race", "previous.native-country"]
        anon = self.spec("seqscal-top6-k40", roles, None, score="infogain_privloss",
                         taxonomies="thesis", beneficial=True,
                         extra="sequential:\n  anonymity:\n    - x: [" + ", ".join(x6) +
                               "]\n      y: [current.@record]\n      k: 40")
        conf = self.spec("seqscal-top1-90", {a: ("sensitive" if a == "marital-status" else "qid")
                                             for a in t1_attrs}, None,
                         score="infogain_privloss", taxonomies="thesis", beneficial=True,
                         extra="sequential:\n  confidentiality:\n    - {x: [" +
                               ", ".join(a for a in t1_attrs if a != "marital-status") +
                               "], attribute: current.marital-status, sensitive_values: [" +
                               ", ".join(least) + "], max: 0.9}")
        for size in sizes:
            raw = self.blowup(size)
            t1 = self.project("seqscal-t1", t1_attrs + ["income"], raw)
            t2 = self.project("seqscal-t2", ["race", "native-country"] + join, raw)
            for label, spec in (("Fig. 6.8 anonymity Top6 k = 40", anon),
                                ("Fig. 6.11 confidentiality Top1 k = 90%", conf)):
                self.progress(f"  sequential scalability: {label}, {size:,} records")
                out = os.path.join(self.work, "seqscal-out.csv")
                rep = os.path.join(self.work, "seqscal-report.json")
                self.run(fig, ["anonymize", "--spec", spec, "--input", t1, "--previous-release",
                               t2, "--output", out, "--report", rep])
                with open(rep) as f:
                    t = json.load(f)["timings_seconds"]
                os.remove(out)
                for phase in sorted(t):
                    self.add(fig, f"{label}: {phase}", size, "seconds", f"{t[phase]:.3f}")
            os.remove(t1)
            os.remove(t2)

    # ---- orchestration ---------------------------------------------------------------------
    EXPERIMENTS = ["m10", "m10_naive_shared", "l2_grid", "l2_seeds", "m11", "m11_participation",
                   "ga", "thesis_topn", "yang", "inferences", "templates", "confidence",
                   "confidence_ran", "sequential", "sequential_conf", "sequential_conf_b",
                   "scalability", "m11_scalability", "confidence_scalability",
                   "sequential_scalability"]

    def run_all(self):
        self.prepare_data()
        todo = [e for e in self.EXPERIMENTS if not self.args.only or e in self.args.only]
        for i, name in enumerate(todo, 1):
            self.progress(f"({i}/{len(todo)}) {name}")
            start = time.monotonic()
            try:
                getattr(self, name)()
            except RuntimeError as error:
                self.progress(f"({i}/{len(todo)}) {name} FAILED: {error}")
                self.note(name, f"failed: {error}")
            self.timings[name] = time.monotonic() - start
        self.write_outputs()

    def write_outputs(self):
        import page  # bench/papers/page.py
        ids = set()
        with open(os.path.join(self.out, "results.csv"), "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["id", "figure", "series", "x", "metric", "value"])
            for fig, series, x, metric, value in self.rows:
                rid = page.result_id(fig, series, x, metric)
                if rid in ids:
                    raise RuntimeError(f"duplicate result {rid}")
                ids.add(rid)
                w.writerow([rid, fig, series, x, metric, value])
        meta = {"mode": self.mode, "dataset": self.dataset, "records": self.records,
                "version": subprocess.run([self.fedanon, "--version"], stdout=subprocess.PIPE,
                                          text=True).stdout.strip(),
                "date": time.strftime("%Y-%m-%d", time.gmtime()),
                "settings": self.settings, "commands": self.commands, "notes": self.notes,
                "timings": self.timings}
        with open(os.path.join(self.out, "run.json"), "w") as f:
            json.dump(meta, f, indent=1)
        page.write_page(self.out, os.path.join(HERE, "published.csv"))
        self.progress(f"wrote {self.out}/papers.html, results.csv, claims.csv "
                      f"({len(self.rows)} numbers)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="mode", action="store_const", const="quick")
    mode.add_argument("--full", dest="mode", action="store_const", const="full")
    mode.add_argument("--fixture", dest="mode", action="store_const", const="fixture")
    p.add_argument("--out", default="papers-out")
    p.add_argument("--build", default=os.path.join(REPO, "build", "default"))
    p.add_argument("--fedanon", help="the fedanon program (default: BUILD/bin/fedanon)")
    p.add_argument("--adult", default=os.path.join(os.path.dirname(REPO), "shared", "datasets",
                                                   "adult"))
    p.add_argument("--only", type=lambda s: s.split(","), default=None,
                   help="comma-separated experiments: " + ",".join(Experiments.EXPERIMENTS))
    p.set_defaults(mode="quick")
    args = p.parse_args()
    sys.path.insert(0, HERE)
    Experiments(args).run_all()


if __name__ == "__main__":
    main()
