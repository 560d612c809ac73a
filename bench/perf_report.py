#!/usr/bin/env python3
"""Prints bench/perf.sh's figures (not run alone): medians of the samples it collected, beside
their goals (--mode full) or the committed baseline (--mode quick, which exits 1 when a CPU time or
a peak RSS is worse than the baseline by more than the tolerance; wall time is never judged)."""
import argparse
import glob
import json
import os
import statistics
import sys

MIB = 1024.0


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def plural(n):
    return "s" if n != 1 else ""


def span(xs, fmt):
    return f"({fmt.format(min(xs))}–{fmt.format(max(xs))})" if len(xs) > 1 else ""


def read_samples(path):
    """workload -> {"job": [...], "scan": [...], "openssl": [...], "sha256": [...], "touch": [...]};
    job and scan rows are dicts; touch holds CPU seconds per page fault."""
    out = {}
    for line in open(path):
        f = line.split()
        if not f:
            continue
        w = out.setdefault(f[0], {"job": [], "scan": [], "openssl": [], "sha256": [], "touch": []})
        if f[1] == "sha256":
            if len(f) > 2:  # no figure when `openssl speed` printed none: CPU limits unscaled
                w["sha256"].append(float(f[2]))
            continue
        if f[1] == "openssl":
            w["openssl"].append(float(f[2]))
            continue
        row = {"wall": float(f[2]), "user": float(f[3]), "sys": float(f[4]), "kib": int(f[5]),
               "faults": int(f[6])}
        row["cpu"] = row["user"] + row["sys"]
        if f[1] == "touch":
            if row["faults"]:
                w["touch"].append(row["cpu"] / row["faults"])
            continue
        row["load"] = float(f[7])
        if len(f) > 8:
            row["steps"] = int(f[8])
            row["timings"] = {k: float(v) for k, v in (x.split("=") for x in f[9:])}
        w[f[1]].append(row)
    return out


def table_figures(name, w):
    """Medians of one table workload; the ratio to the scan is taken pair by pair."""
    job, scan = w["job"], w["scan"]
    fig = {"cpu_s": med([r["cpu"] for r in job]), "wall_s": med([r["wall"] for r in job]),
           "peak_mib": med([r["kib"] / MIB for r in job]), "faults": med([r["faults"] for r in job]),
           "runs": len(job)}
    if scan and len(scan) == len(job):
        fig["scan_wall_s"] = med([r["wall"] for r in scan])
        fig["wall_per_scan"] = med([j["wall"] / max(s["wall"], 0.005) for j, s in zip(job, scan)])
    return fig


def phase_shares(timings):
    total = timings.get("total", 0.0)
    parts = [(k, v) for k, v in timings.items() if k != "total"]
    return ", ".join(f"{k} {v:.2f} s ({100 * v / total:.0f}%)" for k, v in parts) if total else ""


def quick(args, samples):
    tol = {"cpu_s": args.tolerance_cpu, "peak_mib": args.tolerance_mem}
    base = {}
    if os.path.exists(args.baseline):
        base = json.load(open(args.baseline))["figures"]
    elif not args.write_baseline:
        print(f"no baseline {args.baseline}: nothing to compare with", file=sys.stderr)
        return 2
    figures, ratios, failed = {}, {}, []
    # This machine's speed against the baseline's: CPU limits scale by base / this (a machine half
    # as fast may take twice the CPU time).
    machine = samples.pop("machine", {})
    speed = med(machine["sha256"]) if machine.get("sha256") else None
    # CPU seconds per page fault (dd first-touching 64 MiB), here and on the baseline machine.
    touch = med(machine["touch"]) if machine.get("touch") else None
    produced = {}
    if os.path.exists(args.baseline):
        produced = json.load(open(args.baseline)).get("produced", {})
    base_speed = produced.get("sha256_kbps")
    base_touch = (produced.get("fault_cpu_us") or 0) / 1e6 or None  # null: dd printed nothing
    scale = base_speed / speed if speed and base_speed else 1.0
    if speed:
        print(f"machine speed: openssl sha256 {speed:,.0f} kB/s (CPU time)"
              + (f"; baseline machine {base_speed:,.0f} kB/s: CPU limits x {scale:.3f}"
                 if base_speed else "; the baseline has none: CPU limits unscaled"))
    if touch:
        print(f"first touch: {1e6 * touch:.2f} µs of CPU a page fault (dd, 64 MiB)"
              + (f"; baseline machine {1e6 * base_touch:.2f} µs: each job's faults costed at this "
                 f"machine's price" if base_touch else "; the baseline has none: faults scaled "
                 "with the rest"))

    def baseline_here(name, b):
        """The baseline's CPU time as this machine would take it: its page faults at this
        machine's cost per fault, the rest in proportion to the hashing speed."""
        faults = base.get(f"{name}.faults")
        if not (touch and base_touch and faults):
            return b * scale
        return max(0.0, b - faults * base_touch) * scale + faults * touch
    print(f"{'figure':<34} {'median':>10} {'(min–max)':<19} {'baseline':>9} {'ratio':>6} "
          f"{'limit':>7}  verdict")
    for name, w in samples.items():
        job = w["job"]
        fig = table_figures(name, w)
        rows = [("cpu_s", "CPU user+sys, s", [r["cpu"] for r in job], "{:.3f}"),
                ("peak_mib", "peak RSS, MiB", [r["kib"] / MIB for r in job], "{:.1f}"),
                ("faults", "faults (not judged)", [r["faults"] for r in job], "{:.0f}"),
                ("wall_s", "wall, s (not judged)", [r["wall"] for r in job], "{:.3f}")]
        figures[f"{name}.user_s"] = med([r["user"] for r in job])
        figures[f"{name}.sys_s"] = med([r["sys"] for r in job])
        figures[f"{name}.load1"] = med([r["load"] for r in job])
        for key, label, xs, fmt in rows:
            m = fig[key]
            figures[f"{name}.{key}"] = m
            b = base.get(f"{name}.{key}")
            cells = f"{name + ' ' + label:<34} {fmt.format(m):>10} {span(xs, fmt):<19}"
            if key in tol and b is None and not args.write_baseline:
                failed.append(f"{name}.{key} (not in the baseline)")
                print(f"{cells} {'none':>9}  NO BASELINE")
                continue
            if b is None or key not in tol:
                print(cells + (f" {fmt.format(b):>9} {m / b:6.2f}" if b else ""))
                continue
            b_here = baseline_here(name, b) if key == "cpu_s" else b  # the baseline, here
            ratios[f"{name}.{key}"] = m / b_here
            limit = b_here * (1 + tol[key])
            verdict = "ok" if m <= limit else f"WORSE than baseline + {100 * tol[key]:.0f}%"
            if m > limit:
                failed.append(f"{name}.{key}")
            print(f"{cells} {fmt.format(b_here):>9} {m / b_here:6.2f} {fmt.format(limit):>7}  "
                  f"{verdict}")
        extra = []
        if "wall_per_scan" in fig:
            extra.append(f"wall {fig['wall_per_scan']:.1f}x a plain scan of its CSV "
                         f"(cut -d, -f15: {fig['scan_wall_s']:.3f} s)")
        if job and job[0].get("timings"):
            mid = sorted(job, key=lambda r: r["wall"])[len(job) // 2]
            extra.append(f"{job[0]['steps']} specializations; median run's phases: "
                         f"{phase_shares(mid['timings'])}")
            if w["openssl"]:
                ops = w["openssl"][0]
                ids = int(name.split("-")[1])
                limit_s = 4 * ids / ops
                extra.append(f"openssl speed ecdhp256 {ops:.0f} multiplications/s: limit "
                             f"{limit_s:.2f} s, the job (leader's clock) "
                             f"{limit_s / med([r['timings']['total'] for r in job]):.2f} of it")
        elif job and "steps" in job[0]:
            extra.append(f"{job[0]['steps']} specializations")
        for e in extra:
            print(f"    {e}")
    print(f"tolerance: CPU +{100 * args.tolerance_cpu:.0f}%, peak RSS +{100 * args.tolerance_mem:.0f}% "
          f"over {args.baseline}; load average at the end {args.load_end}")
    out = {"mode": "quick", "produced": args.produced, "figures": figures,
           "sha256_kbps": speed, "cpu_scale": scale,
           "fault_cpu_us": 1e6 * touch if touch else None,
           "ratios_to_baseline": ratios, "load_start": args.load_start,
           "load_end": args.load_end, "failed": failed}
    if args.json:
        json.dump(out, open(args.json, "w"), indent=1)
    if args.write_baseline:
        keep = {k: round(v, 4) for k, v in figures.items()
                if k.endswith((".cpu_s", ".peak_mib", ".faults"))}
        json.dump({"_comment": "Medians of `bench/perf.sh --quick --write-baseline FILE` (process "
                               "CPU seconds, user + system; peak RSS of the largest process, MiB; "
                               "page faults of them all). "
                               "bench/perf.sh --quick fails when a figure exceeds it by more "
                               "than its tolerance. Update it on purpose, in a commit of its "
                               "own that says why (docs/performance.md).",
                   "produced": {"by": args.produced, "cores": os.cpu_count(),
                                "load_start": args.load_start, "load_end": args.load_end,
                                "sha256_kbps": round(speed) if speed else None,
                                "fault_cpu_us": round(1e6 * touch, 3) if touch else None},
                   "figures": keep}, open(args.write_baseline, "w"), indent=1)
        print(f"wrote the baseline {args.write_baseline}")
        return 0
    if failed:
        print(f"FAILED: {', '.join(failed)}: worse than the baseline by more than the tolerance, "
              "or not in it")
        return 1
    print("every CPU time and peak RSS within the tolerance of the baseline")
    return 0


GOALS = {  # workload -> (label, records, wall goal s, memory goal MiB)
    "adult": ("UCI Adult", 45222, 0.1, 30),
    "table-1m": ("1M records", 1_000_000, 2.0, 200),
    "table-10m": ("10M records", 10_000_000, 15.0, 800),
    "table-100m": ("100M records", 100_000_000, None, 24 * 1024),
}


def full(args, samples):
    figures = {}
    verdict = lambda ok: "met" if ok else "NOT MET"
    print(f"{'figure':<44} {'median':>10} {'(min–max)':<21} {'goal':>12}  verdict")
    per_record = {}
    for name, (label, records, wall_goal, mem_goal) in GOALS.items():
        if name not in samples:
            continue
        w = samples[name]
        job = w["job"]
        fig = table_figures(name, w)
        figures[name] = fig
        n = fig["runs"]
        walls = [r["wall"] for r in job]
        print(f"{label + f', whole process wall ({n} run{plural(n)})':<44} {fig['wall_s']:>8.3f} s "
              f"{span(walls, '{:.3f}'):<21} "
              + (f"{'<= ' + str(wall_goal) + ' s':>12}  {verdict(fig['wall_s'] <= wall_goal)}"
                 if wall_goal else f"{'completes':>12}  met"))
        print(f"{'  CPU user+sys':<44} {fig['cpu_s']:>8.3f} s "
              f"{span([r['cpu'] for r in job], '{:.3f}'):<21} "
              f"{1e6 * fig['cpu_s'] / records:.2f} µs per record")
        print(f"{'  peak RSS':<44} {fig['peak_mib']:>6.1f} MiB "
              f"{span([r['kib'] / MIB for r in job], '{:.1f}'):<21} "
              f"{'<= ' + str(mem_goal) + ' MiB':>12}  {verdict(fig['peak_mib'] <= mem_goal)}")
        if "wall_per_scan" in fig:
            print(f"{'  wall / plain scan (cut -d, -f15)':<44} {fig['wall_per_scan']:>8.1f} x "
                  f"(scan {fig['scan_wall_s']:.3f} s; pair by pair)")
        print(f"{'  specializations; load average (1 min)':<44} {job[0].get('steps', '?'):>10} "
              f"{span([r['load'] for r in job], '{:.1f}') or job[0]['load']}")
        if records >= 1_000_000:
            per_record[label] = fig["cpu_s"] / records
    if len(per_record) > 1:
        spread = max(per_record.values()) / min(per_record.values())
        print(f"{'CPU per record, ' + ' / '.join(per_record):<44} "
              f"{' / '.join(f'{1e6 * v:.2f}' for v in per_record.values())} µs: max/min "
              f"{spread:.2f} (goal <= 1.20)  {verdict(spread <= 1.2)}")
        figures["cpu_per_record_spread"] = spread
    for rows in (200000, 1000000):
        runs = [json.load(open(p)) for p in sorted(glob.glob(f"{args.work}/vertical-{rows}-*.json"))]
        if not runs:
            continue
        fractions = [r["limit_s"] / r["timings_s"]["total"] for r in runs]
        e2e = [r["limit_s"] / r["end_to_end_s"] for r in runs]
        mid = sorted(runs, key=lambda r: r["limit_s"] / r["timings_s"]["total"])[len(runs) // 2]
        ops = [sum(r["openssl_mults_per_s"]) / 2 for r in runs]
        figures[f"vertical-{rows}"] = {"fraction_of_limit": med(fractions),
                                       "end_to_end_fraction": med(e2e), "runs": runs}
        print(f"{f'vertical {rows:,} ids, whole job / EC limit ({len(runs)} run{plural(len(runs))})':<44} "
              f"{med(fractions):>10.2f} {span(fractions, '{:.2f}'):<21} {'>= 0.85':>12}  "
              f"{verdict(med(fractions) >= 0.85)}")
        t = mid["timings_s"]
        print(f"    leader's clock {t['total']:.1f} s, limit {mid['limit_s']:.1f} s "
              f"(openssl speed -multi {mid['cores']} ecdhp256: {med(ops):.0f} multiplications/s, "
              f"before and after); federation up end to end {mid['end_to_end_s']:.1f} s = "
              f"{med(e2e):.2f} of the limit")
        print(f"    phases: {phase_shares(t)}")
        print(f"    {mid['specializations']} specializations; same table as centralized: "
              f"{mid['same_table']}; load {mid['load_before']} -> {mid['load_after']}; "
              + ", ".join(f"{n} {p['peak_rss_kib'] / MIB:.0f} MiB, {p['cpu_s']:.1f} s CPU"
                          for n, p in sorted(mid["processes"].items())))
    print(f"load average at the end {args.load_end}")
    if args.json:
        json.dump({"mode": "full", "figures": figures, "load_end": args.load_end},
                  open(args.json, "w"), indent=1)
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["quick", "full"], required=True)
    p.add_argument("--samples", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--baseline", default="")
    p.add_argument("--write-baseline", default="")
    p.add_argument("--json", default="")
    p.add_argument("--tolerance-cpu", type=float, required=True)
    p.add_argument("--tolerance-mem", type=float, required=True)
    p.add_argument("--load-start", default="")
    p.add_argument("--load-end", default="")
    p.add_argument("--produced", default="")
    args = p.parse_args()
    samples = read_samples(args.samples)
    return quick(args, samples) if args.mode == "quick" else full(args, samples)


if __name__ == "__main__":
    sys.exit(main())
