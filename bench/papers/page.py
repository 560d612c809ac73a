"""The page of the papers' experiments: results.csv and published.csv in, papers.html out.

One self-contained HTML page (inline CSS and SVG; no script; no external asset): per figure the
papers' statements (published.csv, typed in from the papers with section and figure) beside our
numbers, a verdict, a chart of our series, every number in a table, the settings and the exact
commands. Every number shown carries a data-check attribute whose value is its key in
results.csv (`v:ID`) or claims.csv (`c:CLAIM:ours`, `c:CLAIM:verdict`), so that the browser
test can assert the page against the CSVs.
"""
import csv
import html
import json
import math
import os
import re

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
          "#17becf", "#7f7f7f", "#bcbd22", "#393b79", "#637939", "#843c39", "#7b4173",
          "#3182bd", "#e6550d"]


def result_id(figure, series, x, metric):
    raw = f"{figure}|{series}|{x}|{metric}"
    return re.sub(r"[^A-Za-z0-9=.|%+-]+", "_", raw)


def esc(text):
    return html.escape(str(text), quote=True)


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


class Results:
    def __init__(self, rows):
        self.rows = rows

    def get(self, figure, series=None, metric=None, x=None):
        out = []
        for r in self.rows:
            if r["figure"] != figure:
                continue
            if series is not None and not (series(r["series"]) if callable(series)
                                           else r["series"] == series):
                continue
            if metric is not None and r["metric"] != metric:
                continue
            if x is not None and not (x(r["x"]) if callable(x) else r["x"] == x):
                continue
            out.append(r)
        return out

    def values(self, *args, **kwargs):
        return [v for v in (number(r["value"]) for r in self.get(*args, **kwargs))
                if v is not None]

    def one(self, *args, **kwargs):
        v = self.values(*args, **kwargs)
        return v[0] if v else None


def span(values, unit=""):
    if not values:
        return "not run", None, None
    lo, hi = min(values), max(values)
    text = f"{lo:.2f}" if abs(hi - lo) < 1e-9 else f"{lo:.2f} to {hi:.2f}"
    return text + (f" {unit}" if unit else ""), lo, hi


# ---- what each published statement is compared with ------------------------------------------
def claim_values(claim, R):
    """(ours text, low, high, verdict or None) of a claim from the results."""
    be = R.one("m10-K", "baseline", "BE %")
    ue = R.one("m10-K", "baseline", "UE %")

    def diff(fig, series, metric, sign=1, ref=None, xfilter=None):
        base = ref if ref is not None else be
        if base is None:
            return []
        return [sign * (v - base) for v in R.values(fig, series, metric, x=xfilter)]

    cen = lambda l: (lambda s: s == f"centralized L={l}")
    c46 = lambda s: s in ("centralized L=4", "centralized L=6")
    if claim == "m10-be":
        return span([be] if be is not None else [], "%") + (None,)
    if claim == "m10-ue":
        return span([ue] if ue is not None else [], "%") + (None,)
    if claim == "m10-l2-cost":
        return span(diff("m10-K", cen(2), "CE %"), "points") + (None,)
    if claim == "m10-l2-benefit":
        return span(diff("m10-K", cen(2), "CE %", -1, ue), "points") + (None,)
    if claim == "m10-l46-cost":
        return span(diff("m10-K", c46, "CE %"), "points") + (None,)
    if claim == "m10-l46-benefit":
        return span(diff("m10-K", c46, "CE %", -1, ue), "points") + (None,)
    if claim in ("m10-c-insensitive", "m10-dr-c"):
        metric = "CE %" if claim == "m10-c-insensitive" else "DR"
        spreads = []
        for l in (2, 4, 6):
            v = R.values("m10-C", f"centralized L={l}", metric)
            if v:
                spreads.append(max(v) - min(v))
        if not spreads:
            return "not run", None, None, None
        text = f"largest spread over C: {max(spreads):.{2 if metric != 'DR' else 4}f}" + \
            (" points" if metric != "DR" else "")
        limit = 0.5 if metric != "DR" else 0.02
        return text, 0, max(spreads), "reproduced" if max(spreads) <= limit else "differs"
    if claim == "m10-dr-l2":
        text, lo, hi = span(R.values("m10-K", cen(2), "DR"))
        case2 = R.values("m10-dr2", cen(2), "DR")
        if case2:
            text += f" (InfoGain); {span(case2)[0]} (Case 2 score, discernibility)"
        return text, lo, hi, None if hi is None else ("reproduced" if hi < 0.05 else "differs")
    if claim == "m10-dr-l6-tradk":
        def gaps(figure):
            d = []
            for r in R.get(figure, cen(6), "DR"):
                t = R.one("m10-tradk", "TradK", "DR", x=r["x"])
                if t is not None:
                    d.append(float(r["value"]) - t)
            return d
        text, lo, hi = span(gaps("m10-K"))
        case2 = gaps("m10-dr2")
        if case2:
            text += f" (InfoGain); {span(case2)[0]} (Case 2 score, discernibility)"
        return text, lo, hi, None if hi is None else (
            "reproduced" if max(abs(lo), abs(hi)) < 0.01 else "differs")
    if claim == "m10-naive-cost":
        return span(diff("m10-K", "naive L=4", "CE %"), "points") + (None,)
    if claim == "m10-naive-benefit":
        return span(diff("m10-K", "naive L=4", "CE %", -1, ue), "points") + (None,)
    if claim == "m10-naive-dr":
        d = []
        for r in R.get("m10-K", "naive L=4", "DR"):
            c = R.one("m10-K", "centralized L=4", "DR", x=r["x"])
            if c is not None:
                d.append(float(r["value"]) - c)
        shared = []
        for r in R.get("m10-naive-shared", "naive, shared public cells", "DR"):
            c = R.one("m10-naive-shared", "centralized, public cells", "DR", x=r["x"])
            if c is not None:
                shared.append(float(r["value"]) - c)
        text, lo, hi = span(d)
        if shared:
            text += (f" (per-party cut points); {span(shared)[0]} (shared public cells, against "
                     "the centralized run on the same cells)")
        return text, lo, hi, None
    if claim == "m10-blood-tradk":
        def gaps(figure):
            d = []
            for l in (2, 4, 6):
                for r in R.get(figure, cen(l), "DR"):
                    t = R.one("m10-tradk", "TradK", "DR", x=r["x"])
                    if t is not None:
                        d.append(t - float(r["value"]))
            return d
        text, lo, hi = span(gaps("m10-K"))
        case2 = gaps("m10-dr2")
        if case2:
            text += (f" against LKC scored by InfoGain; {span(case2)[0]} against LKC scored by "
                     "discernibility (Case 2)")
        return (text + " (Adult; Blood is not public)", lo, hi,
                None if hi is None else "not reproducible (Blood); Adult analogue shown")
    if claim in ("m10-scal-1m", "m10-scal-anon"):
        phase = "total" if claim == "m10-scal-1m" else "anonymize"
        pts = R.get("scal", f"m10 L=4 K=20: {phase}", "seconds")
        if not pts:
            return "not run", None, None, None
        last = max(pts, key=lambda r: int(r["x"]))
        v = float(last["value"])
        return (f"{v:.1f} s at {int(last['x']):,} records", v, v,
                "not comparable (other hardware)" if int(last["x"]) == 1000000 else
                "not run at 1M records in this mode")
    if claim == "m10-30s":
        return "see the run times of the commands", None, None, "not comparable (other hardware)"
    if claim == "m11-be":
        return span(R.values("m11-8", "baseline", "BE %"), "%") + (None,)
    if claim.startswith("m11-ue"):
        n = claim[-1]
        return span(R.values("m11-8", f"Top{n}", "UE %"), "%") + (None,)
    if claim == "m11-top7":
        b = R.one("m11-8", "baseline", "BE %")
        small = lambda x: number(x) is not None and 20 <= number(x) <= 200
        return span(diff("m11-8", "Top7", "IE %", ref=b, xfilter=small), "points") + (None,)
    if claim == "m11-top5":
        small = lambda x: number(x) is not None and number(x) <= 180
        return span(R.values("m11-8", "Top5", "IE %", x=small), "%") + (None,)
    if claim == "m11-top9":
        large = lambda x: number(x) is not None and number(x) >= 80
        return span(R.values("m11-8", "Top9", "IE %", x=large), "%") + (None,)
    se = {"m11-se-a": ("2 parties (§7.1)", "A"), "m11-se-b": ("2 parties (§7.1)", "B"),
          "m11-unequal-se-a": ("unequal (§7.2)", "A"), "m11-unequal-se-b": ("unequal (§7.2)", "B"),
          "m11-se4-a": ("4 parties (§7.2)", "A"), "m11-se4-b": ("4 parties (§7.2)", "B"),
          "m11-se4-c": ("4 parties (§7.2)", "C"), "m11-se4-d": ("4 parties (§7.2)", "D")}
    if claim in se:
        return span(R.values("m11-se", se[claim][0], "SE %", x=se[claim][1]), "%") + (None,)
    if claim == "m11-10a":
        same = R.get("m11-alg2", lambda s: s.startswith("equal:"), "same table as Algorithm 1")
        if not same:
            return "not run", None, None, None
        yes = sum(1 for r in same if r["value"] == "yes")
        d = []
        for r in R.get("m11-alg2", lambda s: s.startswith("equal:") and "Algorithm 2" in s,
                       "IE %"):
            one = R.one("m11-alg2", r["series"].replace("Algorithm 2", "Algorithm 1 (centralized)"),
                        "IE %", x=r["x"])
            if one is not None:
                d.append(float(r["value"]) - one)
        return (f"{yes} of {len(same)} releases equal to Algorithm 1's; IE difference "
                f"{span(d, 'points')[0]}", None, None,
                "reproduced" if yes == len(same) else "differs")
    if claim == "m11-10b":
        parts = []
        for prefix in ("unequal:", "unequal + Ra:"):
            d = []
            for r in R.get("m11-alg2", lambda s: s.startswith(prefix) and "Algorithm 2" in s,
                           "IE %"):
                one = R.one("m11-alg2", r["series"].replace("Algorithm 2",
                                                            "Algorithm 1 (centralized)"),
                            "IE %", x=r["x"])
                if one is not None:
                    d.append(float(r["value"]) - one)
            if d:
                parts.append(f"{prefix[:-1]}: {span(d, 'points')[0]}")
        if not parts:
            return "not run", None, None, None
        return ("IE(Algorithm 2) − IE(Algorithm 1): " + "; ".join(parts), None, None,
                "differs where B owns no QID attribute; see the text")
    if claim in ("m11-11-top5", "m11-11-top7"):
        n = claim[-1]
        small = lambda x: number(x) is not None and number(x) <= 180
        return span(R.values("m11-alg2", f"4 parties: Top{n} Algorithm 2", "IE %", x=small),
                    "%") + (None,)
    if claim == "m11-11-top9":
        v = R.values("m11-alg2", "4 parties: Top9 Algorithm 2", "IE %")
        if not v:
            return "not run in this mode (Top9: --full)", None, None, "not run"
        return f"{max(v):.2f} %", max(v), max(v), None
    if claim == "m11-11-gain":
        small = lambda x: number(x) is not None and number(x) <= 180
        ies = R.values("m11-alg2", lambda s: s in ("4 parties: Top5 Algorithm 2",
                                                   "4 parties: Top7 Algorithm 2"), "IE %", x=small)
        ses = R.values("m11-se", "4 parties (§7.2)", "SE %")
        if not ies or not ses:
            return "not run", None, None, None
        return span([se - ie for se in ses for ie in ies], "points") + (None,)
    if claim == "m11-ga" or claim == "th-410":
        text, lo, hi = span(R.values("ga-cv", "AE (10-fold CV)", "AE %"), "%")
        return (text + " (LM and CM are printed in the figure only)", lo, hi,
                None if hi is None else "not comparable (no published numbers in the text)")
    if claim == "m11-dka":
        return "quoted, not rerun", None, None, "quoted"
    if claim == "m11-20s":
        return "see the run times of the commands", None, None, "not comparable (other hardware)"
    if claim == "m11-12-multi":
        ratios = []
        for r in R.get("m11-12", "MultiQID: anonymize, mean", "seconds"):
            a = R.one("m11-12", "AllAttQID: anonymize", "seconds", x=r["x"])
            if a:
                ratios.append(float(r["value"]) / a)
        if not ratios:
            return "not run", None, None, None
        text, lo, hi = span(ratios)
        return (f"MultiQID ÷ AllAttQID {text}", lo, hi,
                "reproduced" if lo > 1 else "differs")
    if claim in ("th-56a", "th-56b"):
        series = "single template: total" if claim == "th-56a" else \
            "multiple templates: anonymize, mean"
        pts = R.get("th-56", series, "seconds")
        if not pts:
            return "not run", None, None, None
        last = max(pts, key=lambda r: int(r["x"]))
        v = float(last["value"])
        return (f"{v:.3f} s at {int(last['x']):,} records", v, v,
                "not comparable (other hardware)" if int(last["x"]) == 1000000 else
                "not run at 1M records in this mode")
    if claim in ("th-68", "th-611"):
        series = ("Fig. 6.8 anonymity Top6 k = 40: total" if claim == "th-68" else
                  "Fig. 6.11 confidentiality Top1 k = 90%: total")
        pts = R.get("th-6-scal", series, "seconds")
        if not pts:
            return "not run", None, None, None
        last = max(pts, key=lambda r: int(r["x"]))
        v = float(last["value"])
        anon = R.one("th-6-scal", series.replace(": total", ": anonymize"), "seconds",
                     x=last["x"])
        return (f"{v:.3f} s at {int(last['x']):,} records (anonymize phase {anon:.3f} s)", v, v,
                "not comparable (other hardware)" if int(last["x"]) == 1000000 else
                "not run at 1M records in this mode")
    if claim == "th-56-more":
        ratios = []
        for r in R.get("th-56", "multiple templates: anonymize, mean", "seconds"):
            one = R.one("th-56", "single template: anonymize", "seconds", x=r["x"])
            if one:
                ratios.append(float(r["value"]) / one)
        if not ratios:
            return "not run", None, None, None
        text, lo, hi = span(ratios)
        return f"multiple ÷ single {text}", lo, hi, "reproduced" if lo > 1 else "differs"
    if claim == "th-54b-similar":
        be = R.one("th-54b", "baseline", "BE %")
        if be is None:
            return "not run", None, None, None
        return span([v - be for v in R.values("th-54b", lambda s: s.startswith("Ran"), "SE %")],
                    "points") + (None,)
    if claim == "th-54b-re":
        d = []
        for r in R.get("th-54b", lambda s: s.startswith("Ran"), "RE %"):
            top = R.one("th-54", "Top" + r["series"][3:], "RE %")
            if top is not None:
                d.append(float(r["value"]) - top)
        return span(d, "points") + (None,)
    if claim == "m11-scal":
        pts = R.get("m11-12", "AllAttQID: anonymize", "seconds") or \
            R.get("scal", "AllAtt k=50: anonymize", "seconds")
        if not pts:
            return "not run", None, None, None
        last = max(pts, key=lambda r: int(r["x"]))
        v = float(last["value"])
        return (f"{v:.3f} s (anonymize phase) at {int(last['x']):,} records", v, v,
                "not comparable (other hardware)")
    if claim in ("m11-scal", "th-411"):
        pts = R.get("scal", "AllAtt k=50: anonymize", "seconds")
        if not pts:
            return "not run", None, None, None
        last = max(pts, key=lambda r: int(r["x"]))
        v = float(last["value"])
        return (f"{v:.1f} s (anonymize phase) at {int(last['x']):,} records", v, v,
                "not comparable (other hardware)")
    th = {"th-45-top7": ("th-45", "Top7", None), "th-46a-top7": ("th-46a", "Top7", 600)}
    if claim in th:
        fig, series, kmax = th[claim]
        b = R.one(fig, "baseline", "BE %")
        xf = (lambda x: number(x) is not None and number(x) <= kmax) if kmax else None
        return span(diff(fig, series, "AE %", ref=b, xfilter=xf), "points") + (None,)
    if claim == "th-45-ue7":
        return span(R.values("th-45", "Top7", "UE %"), "%") + (None,)
    if claim == "th-46b-be":
        return span(R.values("th-46b", "baseline", "BE %"), "%") + (None,)
    if claim == "th-46b-cost":
        b = R.one("th-46b", "baseline", "BE %")
        return span(diff("th-46b", lambda s: s.startswith("Top"), "AE %", ref=b), "points") + \
            (None,)
    if claim == "th-46b-below":
        b = R.one("th-46b", "baseline", "BE %")
        small = lambda x: number(x) is not None and number(x) <= 180
        return span(diff("th-46b", lambda s: s in ("Top5", "Top7"), "AE %", ref=b,
                         xfilter=small), "points") + (None,)
    if claim == "th-48":
        d = []
        for r in R.get("th-48", "MultiTmp", "AE %"):
            single = R.one("th-48", "SingleTmp", "AE %", x=r["x"])
            if single is not None:
                d.append(float(r["value"]) - single)
        text, lo, hi = span(d, "points")
        if d:
            text += f" ({sum(1 for v in d if v <= 0)} of {len(d)} requirements at or below)"
        return text, lo, hi, None
    if claim == "th-54-be":
        return span(R.values("th-54", "baseline", "BE %"), "%") + (None,)
    if claim in ("th-54-cost", "th-54-benefit"):
        be54 = R.one("th-54", "baseline", "BE %")
        d = []
        for r in R.get("th-54", lambda s: s.startswith("Top"), "SE %"):
            if claim == "th-54-cost" and be54 is not None:
                d.append(float(r["value"]) - be54)
            elif claim == "th-54-benefit" and r["series"] == "Top4":
                re4 = R.one("th-54", "Top4", "RE %", x=r["x"])
                if re4 is not None:
                    d.append(re4 - float(r["value"]))
        return span(d, "points") + (None,)
    if claim.startswith("th-53-"):
        k = claim.split("-")[-1]
        return span(R.values("th-53", "inferences", "count", x=f"{k}%")) + (None,)
    if claim == "y10-pa":
        v = R.get("y10", "Pa(D')", "Pa")
        if not v:
            return "not run", None, None, None
        text = "; ".join(f"{r['value']} ({r['x']})" for r in v)
        # The paper's figure is for its setting: Eq. 3's quick estimate with p_i = 1/m.
        uniform = [float(r["value"]) for r in v if r["x"].startswith("uniform")]
        if not uniform:
            return text, None, None, None
        return text, uniform[0], uniform[0], None
    if claim in ("y10-6a", "y10-6b", "y10-7", "y10-8b"):
        fig = {"y10-6a": "y10-6a", "y10-6b": "y10-6b", "y10-7": "y10-7", "y10-8b": "y10-8"}[claim]
        rows = R.get(fig)
        if not rows:
            return "not run", None, None, None
        if claim == "y10-7":
            ra = R.one(fig, "RA", "recovered %", x="all")
            an = [v for v in R.values(fig, lambda s: s.startswith("permutation"), "recovered %",
                                      x="all")]
            if ra is None or not an:
                return "not run", None, None, None
            return (f"RA {ra:.1f}% against permutation {an[0]:.1f}%", ra, ra,
                    "reproduced" if ra > an[0] else "differs")
        if claim == "y10-6b":
            ra = R.values(fig, "RA", "relative error")
            other = R.values(fig, lambda s: s != "RA", "relative error")
            if not ra or not other:
                return "not run", None, None, None
            return (f"RA {min(ra):.3f}..{max(ra):.3f}, the baselines {min(other):.3f}.."
                    f"{max(other):.3f}", None, None,
                    "reproduced" if max(ra) < min(other) else "differs")
        if claim == "y10-6a":
            def var(series):
                v = R.values(fig, series, "relative error")
                return (max(v) - min(v)) if v else None
            p = var(lambda s: s.startswith("permutation"))
            others = [var("RA"), var(lambda s: s.startswith("l-diversity"))]
            if p is None or None in others:
                return "not run", None, None, None
            return (f"range over j: permutation {p:.3f}, RA {others[0]:.3f}, l-diversity "
                    f"{others[1]:.3f}", None, None,
                    "reproduced" if p < min(others) else "differs")
        if claim == "y10-8b":
            v = [number(r["value"]) for r in R.get(fig, "k = 5", "recovered %")
                 if r["x"] in ("1", "2", "3")]
            if not v:
                return "not run", None, None, None
            return (f"lengths 1-3 at k = 5: {', '.join(f'{x:.1f}%' for x in v)}", None, None,
                    "reproduced" if min(v) >= 50 else "differs")
    if claim[:5] in ("th-64", "th-65", "th-67"):
        fig = "th-6-A" if claim[3:5] in ("64", "65") else "th-6-B"
        ble = R.one(fig, "baseline", "BLE %")
        rje = R.one(fig, "baseline", "RJE %")
        xye = R.get(fig, lambda s: s.endswith(" XYE"), "error %")
        if ble is None or not xye:
            return "not run", None, None, None
        if claim in ("th-65-ble", "th-67-ble"):
            kae = R.values(fig, "KAE", "error %")
            mean_kae = sum(kae) / len(kae) if kae else float("nan")
            return (f"BLE {ble:.2f}%, RJE {rje:.2f}%, mean KAE {mean_kae:.2f}%", None, None,
                    "see text")
        if claim == "th-65-cost":
            return span([float(r["value"]) - ble for r in xye], "points") + (None,)
        if claim == "th-67-cost":
            d = [float(r["value"]) - ble for r in xye]
            m = sum(d) / len(d)
            return f"mean {m:.2f} points", m, m, None
        if claim == "th-65-row":
            d = []
            for r in xye:
                row = R.one(fig, r["series"].replace(" XYE", " XY(row)E"), "error %", x=r["x"])
                if row is not None:
                    d.append(float(r["value"]) - row)
            return span(d, "points") + (None,)
        if claim == "th-65-rje":
            return span([rje - float(r["value"]) for r in xye], "points") + (None,)
        if claim == "th-64-kad":
            d = []
            for r in R.get(fig, lambda s: s.endswith("XYD cat"), "distortion"):
                kad = R.one(fig, "KAD cat", "distortion", x=r["x"])
                if kad is not None:
                    d.append(kad - float(r["value"]))
            kad = R.values(fig, "KAD cat", "distortion")
            text, lo, hi = span(d, "units (KAD − XYD, categorical)")
            if kad:
                text += f"; mean KAD {sum(kad) / len(kad):.2f}"
            return text, lo, hi, None
    if claim == "th-69":
        fig = "th-6-9"
        ble = R.one(fig, "baseline", "BLE %")
        rje = R.one(fig, "baseline", "RJE %")
        tops = [r["series"] for r in R.get(fig, lambda s: s.startswith("Top"), "XYE %")]
        if ble is None or not tops:
            return "not run", None, None, None
        cost, rse_gain, rje_gain = [], [], []
        for top in tops:
            xye = R.one(fig, top, "XYE %")
            rse = R.one(fig, top, "RSE %")
            cost.append(xye - ble)
            if rse is not None:
                rse_gain.append(rse - xye)
            rje_gain.append(rje - xye)
        text, lo, hi = span(cost, "points")
        text = (f"XYE − BLE {text}; RSE − XYE {span(rse_gain, 'points')[0]}; RJE − XYE "
                f"{span(rje_gain, 'points')[0]}")
        return text, lo, hi, None
    if claim.startswith("th-610"):
        fig = "th-6-10"
        ble = R.one(fig, "baseline", "BLE %")
        rje = R.one(fig, "baseline", "RJE %")
        tops = [r["series"] for r in R.get(fig, lambda s: s.startswith("Top"), "XYE %")]
        if ble is None or not tops:
            return "not run", None, None, None
        xye = {t: R.one(fig, t, "XYE %") for t in tops}
        rse = {t: R.one(fig, t, "RSE %") for t in tops}
        if claim == "th-610":
            text, lo, hi = span(list(xye.values()), "%")
            return (f"{text} (mean over k per TopN); XYE − BLE "
                    f"{span([v - ble for v in xye.values()], 'points')[0]}", lo, hi, None)
        if claim == "th-610-ble":
            return f"BLE {ble:.2f}%, RJE {rje:.2f}%", None, None, "see text"
        if claim == "th-610-rse":
            return span([rse[t] - xye[t] for t in tops if rse[t] is not None], "points") + \
                (None,)
        if claim == "th-610-rje":
            return span([rje - xye[t] for t in tops], "points") + (None,)
        if claim == "th-610-below":
            return span([xye[t] - min(rje, rse[t] if rse[t] is not None else rje)
                         for t in tops], "points") + (None,)
    if claim.startswith("th-") or claim.startswith("y10"):
        return "not run in this version", None, None, "not run"
    return "not run", None, None, None


def verdict(op, lo, hi, published_lo, published_hi, unit, given):
    if given is not None:
        return given
    if lo is None:
        return "not run"
    tol = 0.5 if unit in ("%", "points") else 0.1 * max(abs(published_lo or 0), 1e-9)
    if op == "eq":
        return "reproduced" if abs(lo - published_lo) <= tol and abs(hi - published_lo) <= tol \
            else "differs"
    if op == "lt":
        return "reproduced" if hi < published_hi else "differs"
    if op == "gt":
        return "reproduced" if lo > published_lo else "differs"
    if op == "range":
        return "reproduced" if lo >= published_lo - tol and hi <= published_hi + tol \
            else "differs"
    return "see text"


# ---- the figures -----------------------------------------------------------------------------
FIGURES = [
    {"id": "m10-K", "title": "LKC-privacy on Adult: CE and DR against K, and the naive baseline",
     "refs": "mohammed2010 §6.1 Fig. 6(a), 7(a), 8(a), 8(b); mohammed2009 §5.1.2 Fig. 5(a), 5(c)",
     "charts": [("CE %", lambda s: s.startswith("centralized"), "K", "CE (%)", ["BE %", "UE %"]),
                ("DR", lambda s: s.startswith("centralized"), "K", "DR", []),
                ("CE %", lambda s: s.endswith("L=4"), "K", "CE (%), L = 4: federated vs naive",
                 ["BE %", "UE %"]),
                ("DR", lambda s: s.endswith("L=4"), "K", "DR, L = 4: federated vs naive", [])],
     "claims": ["m10-be", "m10-ue", "m10-l2-cost", "m10-l2-benefit", "m10-l46-cost",
                "m10-l46-benefit", "m10-dr-l2", "m10-dr-l6-tradk", "m10-naive-cost",
                "m10-naive-benefit", "m10-naive-dr"],
     "explain": [
         "The federated (horizontal) run equals the centralized one on the union of the "
         "parties' tables (tests/federation); the centralized release is what is measured.",
         "L = 2: CE − BE above 1 point under the default binned rule — see the L = 2 grid "
         "below for which setting accounts for the gap.",
         "Naive DR: each party discretizes its continuous attributes on its own data, so the "
         "parties' interval labels differ and their groups never merge: DR falls instead of "
         "rising. On shared public cut points (next figure) the groups merge again."]},
    {"id": "m10-dr2", "title": "DR with the general-analysis score (Case 2: discernibility)",
     "refs": "mohammed2010 §3.2.2, §6.1 Fig. 5(b), 7(a)",
     "charts": [("DR", None, "K", "DR (Case 2 score)", [])],
     "claims": [],
     "explain": ["§6.1 measures DR for Case 2, whose score is the discernibility cost; the "
                 "first figure's DR comes from the InfoGain (Case 1) runs. DR_TradK (TDR's "
                 "k-anonymous solutions, score InfoGain / (PrivLoss + 1)) is compared with both "
                 "in the Fig. 7(a) claim above and in DR_TradK's section."]},
    {"id": "m10-naive-shared", "title": "The naive baseline on shared public cut points",
     "refs": "mohammed2010 §6.1.2 Fig. 8(a), 8(b) (a variant the issue asks for)",
     "charts": [("DR", None, "K", "DR, L = 4", []), ("CE %", None, "K", "CE (%), L = 4", [])],
     "claims": [],
     "explain": ["Two naive baselines side by side: each party discretizing its continuous "
                 "attributes on its own records (today's, the per-party cut points of Fig. 8's "
                 "runs) and every party on the same public cells (the generalize-then-integrate "
                 "baseline on shared public cut points). With per-party cut points the parties' "
                 "interval labels differ and their groups never merge, so the naive DR falls "
                 "below the centralized one, against the paper; on shared public cells the "
                 "groups merge across parties again and the naive DR is compared with the "
                 "centralized run on the same cells."]},
    {"id": "m10-C", "title": "CE and DR against the confidence threshold C (K = 100)",
     "refs": "mohammed2010 §6.1.1 Fig. 6(b), 7(b); mohammed2009 Fig. 5(b), 5(d)",
     "charts": [("CE %", None, "C", "CE (%)", []), ("DR", None, "C", "DR", [])],
     "claims": ["m10-c-insensitive", "m10-dr-c"],
     "explain": ["C ≤ 10%: no release, because 13.9% of all records are Divorced, so even the "
                 "most general table infers it above C; the paper's C = 5% and 10% points "
                 "cannot exist on this table under this sensitive set."]},
    {"id": "m10-tradk", "title": "DR_TradK: traditional K-anonymity on all QID attributes",
     "refs": "mohammed2010 §6.1.1 Fig. 5(b) (Blood; Adult analogue), Fig. 7(a)",
     "charts": [("DR", None, "K", "DR_TradK", [])],
     "claims": ["m10-blood-tradk"],
     "explain": ["Blood (Hong Kong Red Cross, 10,000 records, 62 attributes) is not public: "
                 "Fig. 5(a) and 5(b) cannot be rerun. The same measure on Adult is shown.",
                 "The traditional K-anonymous solutions are TDR's, as §6.1.1 says (\"produced "
                 "by the TDR method in Fung et al. [2007]\"): K-anonymity on all 13 QIDs with "
                 "Score = InfoGain / (PrivLoss + 1) and beneficial refinements only; the known "
                 "answer on the thesis's Table 4.1(a) (Table 4.2, DR 222/1156) is in "
                 "tests/common/engine/worked_examples_test.cc."]},
    {"id": "l2-grid", "title": "The L = 2 claim: CE − BE by setting (C = 20%)",
     "refs": "mohammed2010 §6.1.1 Fig. 6(a) ('For L = 2, CE − BE is less than 1%')",
     "charts": [("CE − BE", None, "K", "CE − BE (points)", [], [("paper: below", 1.0)])],
     "claims": [],
     "effects": True,
     "explain": ["Only the exact rule, which lets the leader see record-level counts in a "
                 "federation, comes near the paper's figure; the next section shows how much the "
                 "train/test split alone moves it. docs/evaluation.md reads the full grid."]},
    {"id": "l2-seeds", "title": "The L = 2 claim: CE − BE under other train/test splits",
     "refs": "mohammed2010 §6.1 (a random 2/3 – 1/3 split of the generalized records)",
     "charts": [("CE − BE", lambda s: s.endswith("mean over seeds"), "K",
                 "CE − BE (points), mean over seeds", [], [("paper: below", 1.0)]),
                ("CE − BE", lambda s: s.startswith("exact seed"), "K",
                 "CE − BE (points), exact rule, per seed", [], [("paper: below", 1.0)])],
     "claims": [],
     "explain": ["The rows 'mean over seeds' (with its largest value over K) and 'seeds below 1 "
                 "point at every K' say, per rule, whether a public grid finer than the default "
                 "32 cells — which sends the leader no class count of fewer than K records — "
                 "reaches the paper's figure once the split's noise is averaged out; "
                 "docs/evaluation.md reads them."]},
    {"id": "m11-8", "title": "k-anonymity on TopN, gain ratio (integration error IE)",
     "refs": "mohammed2011 §7.1 Fig. 8 (semi-honest; vertical == centralized)",
     "charts": [("IE %", lambda s: s.startswith("Top"), "k", "IE (%)", [])],
     "claims": ["m11-be", "m11-ue5", "m11-ue7", "m11-ue9", "m11-top7", "m11-top5", "m11-top9"],
     "explain": ["The paper trains on Adult's own 30,162 / 15,060 split; we use a seeded 2/3 – "
                 "1/3 split of all 45,222 records. Taxonomies are ARX's, not those of [17]."]},
    {"id": "m11-se", "title": "Source errors of the vertical splits",
     "refs": "mohammed2011 §7.1.1 Fig. 8, §7.2 Fig. 10(b), Fig. 11",
     "charts": [],
     "claims": ["m11-se-a", "m11-se-b", "m11-unequal-se-a", "m11-unequal-se-b", "m11-se4-a",
                "m11-se4-b", "m11-se4-c", "m11-se4-d"],
     "explain": ["Figs. 10 and 11's IE under the game-theoretic participation strategy is the "
                 "next section (a real vertical federation)."]},
    {"id": "m11-alg2", "title": "Algorithm 2 (game-theoretic participation) in a vertical "
                                "federation: equal, unequal and 4-party splits",
     "refs": "mohammed2011 §7.2 Fig. 10(a), 10(b), 11",
     "charts": [("IE %", lambda s: s.startswith("equal") or s.startswith("4 parties"), "k",
                 "IE (%), equal split and 4 parties", []),
                ("IE %", lambda s: s.startswith("unequal"), "k", "IE (%), unequal split", [])],
     "claims": ["m11-10a", "m11-10b", "m11-11-top5", "m11-11-top7", "m11-11-top9",
                "m11-11-gain"],
     "explain": ["Algorithm 2 runs in `fedanon federation up` (a leader and one party daemon per "
                 "table, loopback mTLS) with participation: game_theoretic and epsilon: 1% of the "
                 "total contribution; Algorithm 1 is the centralized release, which the vertical "
                 "federation reproduces exactly (tests/federation). \"same table\" compares "
                 "every QID value of every record.",
                 "Unequal split: B holds no attribute of the TopN QID, so here it is outside the "
                 "game (a deliberate deviation, docs/vertical.md) and Algorithm 2 is Algorithm 1; "
                 "the paper has A stop because B cannot contribute. \"unequal + Ra\" adds race, "
                 "owned by B, to the QID: B is then in the game, cannot keep up, and A stops "
                 "after its first specialization, which is the paper's effect."]},
    {"id": "ga-cv", "title": "Comparison with the genetic algorithm (10-fold cross-validation)",
     "refs": "mohammed2011 §7.1.3 Fig. 9; fung2007 thesis §4.4.2 Fig. 4.10",
     "charts": [("AE %", None, "k", "AE (%)", [])],
     "claims": ["m11-ga", "th-410"],
     "explain": ["Iyengar's LM and CM errors and his taxonomies are in the figure and in [22] "
                 "only, not in the papers' text: nothing to compare numerically."]},
    {"id": "th-45", "title": "Suppress and discretize TopN (C4.5)",
     "refs": "fung2007 thesis §4.4.1 Fig. 4.5",
     "charts": [("AE %", lambda s: s.startswith("Top"), "k", "AE (%)", [])],
     "claims": ["th-45-top7", "th-45-ue7"], "explain": []},
    {"id": "th-46a", "title": "Generalize and discretize TopN (C4.5)",
     "refs": "fung2007 thesis §4.4.1 Fig. 4.6(a)",
     "charts": [("AE %", lambda s: s.startswith("Top"), "k", "AE (%)", [])],
     "claims": ["th-46a-top7"], "explain": []},
    {"id": "th-46b", "title": "Generalize and discretize TopN (naive Bayes)",
     "refs": "fung2007 thesis §4.4.1 Fig. 4.6(b)",
     "charts": [("AE %", lambda s: s.startswith("Top"), "k", "AE (%)", [])],
     "claims": ["th-46b-be", "th-46b-cost", "th-46b-below"],
     "explain": ["The thesis used Orange's naive Bayes; ours is Laplace-smoothed with normal "
                 "densities for continuous attributes (common/evaluation/naive_bayes.h)."]},
    {"id": "th-53", "title": "Number of inferences above k (Adult, Top4)",
     "refs": "fung2007 thesis §5.4.1 Table 5.3",
     "charts": [], "claims": ["th-53-10", "th-53-30", "th-53-50", "th-53-70", "th-53-90"],
     "explain": ["CRX and German are not public here (no Debian or npm package ships them): "
                 "their rows of Table 5.3 and Figs. 4.9, 5.3 and 5.5 cannot be rerun."]},
    {"id": "th-48", "title": "Multiple anonymity templates against one united template",
     "refs": "fung2007 thesis §4.4.1 Fig. 4.8 (k = 100)",
     "charts": [("AE %", lambda s: s != "baseline", "requirement", "AE (%)", ["BE %"])],
     "claims": ["th-48"], "explain": []},
    {"id": "th-54", "title": "Confidence templates on Adult's categorical attributes",
     "refs": "fung2007 thesis §5.4.1 Fig. 5.4(a) (TopN; RanN not run)",
     "charts": [], "claims": ["th-54-be", "th-54-cost", "th-54-benefit"],
     "explain": ["RanN (30 random sets of sensitive attributes, Fig. 5.4(b)) is not run by "
                 "this version of the runner."]},
    {"id": "th-54b", "title": "Confidence templates on Adult's categorical attributes: RanN",
     "refs": "fung2007 thesis §5.4.1 Fig. 5.4(b)",
     "charts": [],
     "claims": ["th-54b-similar", "th-54b-re"],
     "explain": ["RE(RanN) is compared with RE(TopN) of the previous section for the same N."]},
    {"id": "th-56", "title": "Scalability of suppression for confidentiality templates (k = 90%)",
     "refs": "fung2007 thesis §5.4.2 Fig. 5.6(a), 5.6(b)",
     "charts": [("seconds", lambda s: "anonymize" in s, "records", "seconds (anonymize phase)",
                 [])],
     "claims": ["th-56a", "th-56b", "th-56-more"],
     "explain": ["One run each on a shared 2-core machine; the thesis's machine differs. The "
                 "thesis's suppression time is compared with our anonymize phase, its total "
                 "with our whole command."]},
    {"id": "y10", "title": "Random anonymization: anonymity, c-amplification, bias, variance",
     "refs": "yang2010 Def. 8, Prop. 7, Prop. 12, Eq. (11), §7.2.2",
     "charts": [], "claims": ["y10-pa"],
     "explain": ["Eq. (11) as printed treats the records of q − q_i as moving together and does "
                 "not shrink with the number of records; the exact variance for independently "
                 "randomized records (as Algorithm 1 randomizes them) is shown beside it and "
                 "matches the measured one."]},
    {"id": "y10-6a", "title": "COUNT-query relative error against the number of QID attributes",
     "refs": "yang2010 §7.2.2 Fig. 6(a)",
     "charts": [("relative error", None, "QID attributes", "relative error", [])],
     "claims": ["y10-6a"], "explain": []},
    {"id": "y10-6b", "title": "Relative error against l (5 QID attributes)",
     "refs": "yang2010 §7.2.2 Fig. 6(b)",
     "charts": [("relative error", None, "l", "relative error", [])],
     "claims": ["y10-6b"], "explain": []},
    {"id": "y10-7", "title": "Quasi-sensitive associations recovered",
     "refs": "yang2010 §7.3 Fig. 7",
     "charts": [], "claims": ["y10-7"], "explain": []},
    {"id": "y10-8", "title": "Associations recovered against k and antecedent length",
     "refs": "yang2010 §7.3 Fig. 8(a), 8(b)",
     "charts": [], "claims": ["y10-8b"], "explain": []},
    {"id": "th-6-A", "title": "Sequential releases, anonymity template, Set A (categorical)",
     "refs": "fung2007 thesis §6.4.1 Fig. 6.4, 6.5",
     "charts": [("error %", None, "k", "classification error (%)", ["BLE %", "RJE %"]),
                ("distortion", None, "k", "distortion per record", [])],
     "claims": ["th-64-kad", "th-65-ble", "th-65-cost", "th-65-row", "th-65-rje"],
     "explain": ["The thesis's taxonomies are replaced by ones of the same shape (Table 4.5's "
                 "leaves and levels). The confidentiality templates of Set A (Fig. 6.9) and Set "
                 "B (Fig. 6.10) are the next sections; the scalability of Figs. 6.8 and 6.11 is "
                 "not in this version of the runner."]},
    {"id": "th-6-9", "title": "Sequential releases, confidentiality templates, Set A",
     "refs": "fung2007 thesis §6.4.2 Fig. 6.9",
     "charts": [],
     "claims": ["th-69"],
     "explain": ["XYE is averaged over the thresholds k per TopN; RSE (T1 without the "
                 "attributes of Y) and RJE (T1 without the join attributes Ms, Re, Sx) are "
                 "`fedanon evaluate --remove` on the raw T1."]},
    {"id": "th-6-10", "title": "Sequential releases, confidentiality templates, Set B",
     "refs": "fung2007 thesis §6.4.2 Fig. 6.10",
     "charts": [],
     "claims": ["th-610", "th-610-ble", "th-610-rse", "th-610-rje", "th-610-below"],
     "explain": ["As Fig. 6.9 with the 6 continuous attributes added to T1 and to every "
                 "template's X; XYE is averaged over the thresholds k per TopN; RSE and RJE are "
                 "`fedanon evaluate --remove` on the raw T1 of Set B."]},
    {"id": "th-6-B", "title": "Sequential releases, anonymity template, Set B (with continuous)",
     "refs": "fung2007 thesis §6.4.1 Fig. 6.6, 6.7",
     "charts": [("error %", None, "k", "classification error (%)", ["BLE %", "RJE %"]),
                ("distortion", None, "k", "distortion per record", [])],
     "claims": ["th-67-ble", "th-67-cost"],
     "explain": ["XYE here is the majority-class error: fnlwgt and capital-loss, in T1 but in no "
                 "template, are specialized down to intervals of a few records (44,000 groups; "
                 "beneficial on or off alike), and the tree, which reads released intervals as "
                 "categories, splits on them and fails on the test records. The thesis's 0.75 "
                 "point loss implies a classifier that reads intervals as ordered values, or a "
                 "run that stops such splits; neither is what `fedanon evaluate` does."]},
    {"id": "th-6-scal", "title": "Scalability of sequential releases (Set A)",
     "refs": "fung2007 thesis §6.4.1 Fig. 6.8, §6.4.2 Fig. 6.11",
     "charts": [("seconds", lambda s: s.endswith("total") or s.endswith("anonymize"), "records",
                 "seconds", [])],
     "claims": ["th-68", "th-611"],
     "explain": ["One run each on a shared 2-core machine; the thesis's machine differs. The "
                 "thesis splits its time into preprocessing (sorting T1, building Tree2) and "
                 "generalization; our report has read, anonymize (both) and write."]},
    {"id": "scal", "title": "Scalability on Adult blown up",
     "refs": "mohammed2010 §6.2 Fig. 9; mohammed2011 §7.3 Fig. 12; fung2007 §4.4.3 Fig. 4.11",
     "charts": [("seconds", lambda s: s.endswith("total") or s.endswith("anonymize"), "records",
                 "seconds", [])],
     "claims": ["m10-scal-1m", "m10-scal-anon", "m10-30s", "th-411", "m11-dka", "m11-20s"],
     "explain": ["Timings are whole-process figures of one run on a shared 2-core machine; the "
                 "papers' machines differ. Rerun with /usr/bin/time -v for your own."]},
    {"id": "m11-12", "title": "Scalability, 50K to 200K records: AllAttQID and MultiQID (k = 50)",
     "refs": "mohammed2011 §7.3 Fig. 12",
     "charts": [("seconds", lambda s: "anonymize" in s, "records", "seconds (anonymize phase)",
                 [])],
     "claims": ["m11-scal", "m11-12-multi"],
     "explain": ["The paper's runtime excludes reading and writing and includes its network "
                 "time (two parties); ours is the centralized anonymize phase, which the "
                 "vertical federation reproduces, on one shared 2-core machine: not comparable "
                 "in absolute terms, only in shape."]},
]


def svg_chart(R, figure, metric, series_filter, xlabel, ylabel, refs, lines=()):
    rows = [r for r in R.get(figure, series_filter, metric) if number(r["value"]) is not None
            and number(r["x"]) is not None]
    if not rows:
        return ""
    series = []
    for r in rows:
        if r["series"] not in series:
            series.append(r["series"])
    xs = sorted({number(r["x"]) for r in rows})
    ys = [number(r["value"]) for r in rows]
    ref_values = []
    for ref in refs:
        v = R.one(figure, "baseline", ref)
        if v is not None:
            ref_values.append((ref.split()[0], v))
    ref_values += list(lines)  # published figures drawn as reference lines
    lo = min(ys + [v for _, v in ref_values])
    hi = max(ys + [v for _, v in ref_values])
    if hi == lo:
        hi, lo = hi + 1, lo - 1
    pad = 0.08 * (hi - lo)
    lo, hi = lo - pad, hi + pad
    right = 40 + 6 * max(len(s) for s in series)  # the legend's labels in full
    W, H, L, T, B = 450 + right, 300, 60, 16, 44
    pw, ph = W - L - right, H - T - B
    log_x = xs[0] > 0 and xs[-1] / xs[0] >= 20

    def px(x):
        if len(xs) == 1:
            return L + pw / 2
        if log_x:
            return L + pw * (math.log(x) - math.log(xs[0])) / (math.log(xs[-1]) - math.log(xs[0]))
        return L + pw * (x - xs[0]) / (xs[-1] - xs[0])

    def py(y):
        return T + ph * (1 - (y - lo) / (hi - lo))

    out = [f'<svg class="chart" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
           f'aria-label="{esc(ylabel)} against {esc(xlabel)}">',
           f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="#fff" stroke="#999"/>']
    # Enough decimals that the five ticks differ (a series within hundredths of a point would
    # otherwise show five equal labels).
    decimals = max(0, min(4, math.ceil(-math.log10((hi - lo) / 4)) + 1))
    for i in range(5):
        y = lo + (hi - lo) * i / 4
        out.append(f'<line x1="{L}" x2="{L + pw}" y1="{py(y):.1f}" y2="{py(y):.1f}" '
                   f'stroke="#eee"/><text x="{L - 4}" y="{py(y) + 4:.1f}" class="tick" '
                   f'text-anchor="end">{y:.{decimals}f}</text>')
    for x in xs:
        out.append(f'<text x="{px(x):.1f}" y="{T + ph + 14}" class="tick" '
                   f'text-anchor="middle">{x:g}</text>')
    out.append(f'<text x="{L + pw / 2}" y="{H - 6}" text-anchor="middle" class="axis">'
               f'{esc(xlabel)}{" (log scale)" if log_x else ""}</text>')
    out.append(f'<text x="12" y="{T + ph / 2}" text-anchor="middle" class="axis" '
               f'transform="rotate(-90 12 {T + ph / 2})">{esc(ylabel)}</text>')
    for name, v in ref_values:
        out.append(f'<line x1="{L}" x2="{L + pw}" y1="{py(v):.1f}" y2="{py(v):.1f}" '
                   f'stroke="#555" stroke-dasharray="2,3"/><text x="{L + pw - 2}" '
                   f'y="{py(v) - 3:.1f}" class="tick" text-anchor="end">{esc(name)} '
                   f'{v:g}</text>')
    for i, s in enumerate(series):
        color = COLORS[i % len(COLORS)]
        pts = sorted((number(r["x"]), number(r["value"])) for r in rows if r["series"] == s)
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        dash = ' stroke-dasharray="6,3"' if "naive" in s else ""
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" '
                   f'stroke-width="1.6"{dash}/>')
        for x, y in pts:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}">'
                       f'<title>{esc(s)}: {esc(xlabel)} {x:g}, {esc(metric)} {y:g}</title>'
                       f'</circle>')
        ly = T + 12 + 14 * i
        out.append(f'<line x1="{L + pw + 10}" x2="{L + pw + 28}" y1="{ly - 4}" y2="{ly - 4}" '
                   f'stroke="{color}" stroke-width="2"{dash}/><text x="{L + pw + 32}" y="{ly}" '
                   f'class="legend">{esc(s)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def results_table(R, figure):
    rows = R.get(figure)
    if not rows:
        return "<p class=\"missing\">No numbers: this experiment did not run in this mode.</p>"
    metrics = []
    for r in rows:
        if r["metric"] not in metrics:
            metrics.append(r["metric"])
    keys = []
    for r in rows:
        k = (r["series"], r["x"])
        if k not in keys:
            keys.append(k)
    head = "".join(f"<th>{esc(m)}</th>" for m in metrics)
    body = []
    by = {(r["series"], r["x"], r["metric"]): r for r in rows}
    for s, x in keys:
        cells = []
        for m in metrics:
            r = by.get((s, x, m))
            cells.append(f'<td data-check="v:{esc(r["id"])}">{esc(r["value"])}</td>' if r else
                         "<td></td>")
        body.append(f"<tr><th>{esc(s)}</th><td>{esc(x)}</td>{''.join(cells)}</tr>")
    return (f'<table class="numbers"><thead><tr><th>series</th><th>x</th>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def effects_table(R):
    rows = R.get("l2-effects")
    if not rows:
        return ""
    body = "".join(
        f'<tr><th>{esc(r["series"])}</th><td>{esc(r["x"])}</td>'
        f'<td data-check="v:{esc(r["id"])}">{esc(r["value"])}</td></tr>' for r in rows)
    return ('<h4>Which setting accounts for how much of the gap</h4>'
            '<p>Main effects over the grid (mean over K of CE − BE, averaged over the other '
            'factors; points): the change when one setting moves from today\'s default to the '
            'paper\'s.</p><table class="numbers"><thead><tr><th>setting</th><th>change</th>'
            f'<th>effect (points)</th></tr></thead><tbody>{body}</tbody></table>')


CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em auto;
       max-width: 1100px; color: #222; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.88em; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: left; vertical-align: top; }
td[data-check] { text-align: right; font-variant-numeric: tabular-nums; }
.reproduced { background: #e6f4e6; } .differs { background: #fdeaea; }
.other { background: #f4f4f4; }
.tick { font-size: 10px; fill: #555; } .axis { font-size: 11px; } .legend { font-size: 10px; }
.settings { font-size: 0.88em; color: #333; }
pre { background: #f6f6f6; padding: 0.5em; overflow-x: auto; font-size: 0.8em; }
.missing { color: #a00; }
nav ul { columns: 2; font-size: 0.9em; }
"""


def write_page(out_dir, published_path):
    with open(os.path.join(out_dir, "results.csv"), newline="") as f:
        R = Results(list(csv.DictReader(f)))
    with open(published_path, newline="") as f:
        published = {r["claim"]: r for r in csv.DictReader(f)}
    with open(os.path.join(out_dir, "run.json")) as f:
        meta = json.load(f)
    claims_rows = []
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<title>fedanon: the seed papers' experiments reproduced</title>"
             f"<style>{CSS}</style></head><body>",
             "<h1>The seed papers' experiments, reproduced</h1>",
             f"<p>{esc(meta['version'])}, run {esc(meta['date'])}, mode "
             f"<b data-check=\"meta:mode\">{esc(meta['mode'])}</b>, data: "
             f"{esc(meta['dataset'])} (<span data-check=\"meta:records\">{meta['records']}"
             f"</span> records). Regenerate with <code>bench/papers/reproduce.sh "
             f"--{esc(meta['mode'])}</code>; every number below is in results.csv, every "
             f"published statement with ours and a verdict in claims.csv.</p>",
             "<p>Published numbers are the papers' own words, typed in from their text with "
             "section and figure (bench/papers/published.csv); numbers printed only inside the "
             "papers' figures are not in the text and are not invented here.</p>",
             "<nav><ul>" + "".join(f'<li><a href="#{f["id"]}">{esc(f["refs"])}: '
                                   f'{esc(f["title"])}</a></li>' for f in FIGURES) +
             "</ul></nav>"]
    for fig in FIGURES:
        fid = fig["id"]
        parts.append(f'<section id="{fid}"><h2>{esc(fig["title"])}</h2>'
                     f'<p><b>{esc(fig["refs"])}</b></p>')
        if fig["claims"]:
            trs = []
            for c in fig["claims"]:
                p = published[c]
                ours, lo, hi, given = claim_values(c, R)
                v = verdict(p["op"], lo, hi, number(p["lo"]), number(p["hi"]), p["unit"], given)
                cls = v if v in ("reproduced", "differs") else "other"
                claims_rows.append([c, p["paper"], p["section"], p["figure"], p["statement"],
                                    ours, v])
                trs.append(f'<tr class="{cls}"><td>{esc(p["paper"])} {esc(p["section"])} '
                           f'{esc(p["figure"])}</td><td>“{esc(p["statement"])}”</td>'
                           f'<td>{esc(p["quantity"])}</td>'
                           f'<td data-check="c:{c}:ours">{esc(ours)}</td>'
                           f'<td data-check="c:{c}:verdict">{esc(v)}</td></tr>')
            parts.append('<table class="claims"><thead><tr><th>where</th><th>published</th>'
                         '<th>compared quantity</th><th>ours</th><th>verdict</th></tr></thead>'
                         f'<tbody>{"".join(trs)}</tbody></table>')
        for metric, filt, xlabel, ylabel, refs, *lines in fig["charts"]:
            parts.append(svg_chart(R, fid, metric, filt, xlabel, ylabel, refs,
                                   lines[0] if lines else ()))
        if fig.get("effects"):
            parts.append(effects_table(R))
        for line in fig["explain"]:
            parts.append(f"<p>{esc(line)}</p>")
        for line in meta["notes"].get(fid, []):
            parts.append(f'<p class="missing">{esc(line)}</p>')
        settings = meta["settings"].get(fid, [])
        if settings:
            parts.append('<div class="settings"><b>Settings.</b> ' +
                         " ".join(esc(s) for s in settings) + "</div>")
        parts.append("<h4>Every number</h4>" + results_table(R, fid))
        cmds = meta["commands"].get(fid, [])
        if cmds:
            parts.append("<details><summary>Commands</summary><pre>" +
                         esc("\n".join(cmds)) + "</pre></details>")
        parts.append("</section>")
    timing = ", ".join(f"{k} {v:.0f} s" for k, v in meta["timings"].items())
    parts.append(f"<h2>Run</h2><p>Experiment times: {esc(timing)}.</p></body></html>")
    with open(os.path.join(out_dir, "papers.html"), "w", encoding="utf-8") as f:
        f.write("\n".join(parts))
    with open(os.path.join(out_dir, "claims.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["claim", "paper", "section", "figure", "published", "ours", "verdict"])
        w.writerows(claims_rows)
