"""The quantile default against the peers over a broad grid of synthetic cells.

``benchmarks/accuracy.py`` measures every configuration on 220 cells (n ∈ {101,
1001}, ε ∈ {0.25, 1}, wide and ×100 bounds) and reads the real columns per
relation.  This script runs the library's default alone, on the broader grid the
accuracy goals name: 8 synthetic families (normal, lognormal, uniform, Pareto,
Poisson and rounded lognormal — integer columns, declared resolution 1 —, a
mixture with point masses, and a float column of few values with no declared
resolution) × n ∈ {100, 1,000, 10⁴, 10⁵} × ε ∈ {0.1, 0.5, 1, 2} × q ∈ {0.1,
0.5, 0.9} × bounds ∈ {wide (the column's range fills 5 % of them), tight (the
column's own range)} = 768 cells.  It tunes nothing: it reports where the
default (chosen on ``accuracy.py``'s cells) stands elsewhere.

Peers and workers are ``accuracy.py``'s (same environments, same calls, same
per-cell cache): OpenDP 0.16 on its 1,001-point grid and, on the integer
columns, the natural grid, under both relations; diffprivlib under
substitution; Tumult Core under add/remove at n ≤ 1,000 only (one call on 10⁵
rows takes seconds).  Instancedp: ``default`` (what ``build_mechanism`` returns
with no mechanism named: the exponential mechanism, log base with atoms),
``default+res`` on the integer columns, and ``default-declared``
(``default+res`` where the column declares a resolution, else ``default``) —
what a Session gives an in-memory integer column.  Beside them, on every cell
the log base without atoms (``log/ar``), and at ε·n ≥ 2000 smooth sensitivity
under substitution (``smooth/sub``, the default there before the atoms).

Trials: S subsamples (with replacement, seeded) × 5 releases: S = 20 at n ≤
1,000, 8 at 10⁴, 4 at 10⁵ (100, 40 and 20 trials; the Monte-Carlo noise is
large — the ratios are a map of where the default stands, not per-cell verdicts).

Writes ``docs/results/accuracy_grid.{md,json,png}``.  ``--quick``: 2 families,
n ≤ 1,000, ε ∈ {0.5, 1}, 10 subsamples: under two minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import accuracy as acc  # noqa: E402 - the shared workers, peers and scoring

ROOT = acc.ROOT
FAMILIES = ("normal", "lognormal", "uniform", "pareto", "poisson", "rounded-lognormal",
            "mixture", "few-values")
NS = (100, 1000, 10_000, 100_000)
EPSILONS = (0.1, 0.5, 1.0, 2.0)
QS = (0.1, 0.5, 0.9)
BOUNDS = ("wide", "tight")
SUBSAMPLES = {100: 20, 1000: 20, 10_000: 8, 100_000: 4}
TUMULT_MAX_N = 1000
DRAWS = 5


def bounds_for(col: np.ndarray, kind: str) -> tuple[float, float]:
    if kind == "tight":
        return float(col.min()), float(col.max())
    return acc.bounds_for(col, kind)


def build_cells(quick: bool) -> tuple[list[dict], dict[str, np.ndarray]]:
    rng = np.random.default_rng(20261125)
    fams = ("normal", "poisson") if quick else FAMILIES
    ns = (100, 1000) if quick else NS
    eps_all = (0.5, 1.0) if quick else EPSILONS
    cells: list[dict] = []
    samples: dict[str, np.ndarray] = {}
    for fam in fams:
        col = acc.synthetic(fam, 200_000, rng)
        res = acc.SYNTHETIC[fam]
        for n in ns:
            s = 10 if quick else SUBSAMPLES[n]
            skey = f"{fam}|n={n}"
            samples[skey] = col[rng.integers(0, col.size, size=(s, n))]
            for bkind in BOUNDS:
                lo, hi = bounds_for(col, bkind)
                for eps in eps_all:
                    for q in QS:
                        cells.append(dict(
                            key=f"{skey}|eps={eps}|q={q}|{bkind}", sample=skey, column=fam,
                            kind="synthetic", n=n, epsilon=eps, q=q, bounds=bkind, lower=lo,
                            upper=hi, resolution=res, seed=len(cells) + 1))
    return cells, samples


def run(quick: bool, jobs: int, log) -> tuple[list[dict], dict, float, list[str]]:
    t0 = time.time()
    cells, samples = build_cells(quick)
    # "quick" in the job folder: the defaults only (accuracy.our_methods) and OpenDP's
    # 1,001-point and natural grids (accuracy.peer_grids; natural on "wide" cells)
    args = argparse.Namespace(subsamples=0, draws=DRAWS, quick=True,
                              cache=ROOT / ".bench-cache" / "accuracy_grid")
    job = acc.job_dir(args, cells)
    job.mkdir(parents=True, exist_ok=True)
    if not (job / "cells.json").exists():
        np.savez(job / "samples.npz", **samples)
        (job / "draws").write_text(str(DRAWS))
        (job / "quick").write_text("1")
        (job / "cells.json").write_text(json.dumps(cells))
    log(f"{len(cells)} cells; cache {job.relative_to(ROOT)}")
    pys = {p: acc.ensure_env(p, log, create=False) for p in acc.PEER_ENVS}
    pys = {p: py for p, py in pys.items() if py is not None}
    groups = {f"ours-{acc.code_hash()}": (sys.executable, "ours", None)}
    for peer, py in pys.items():
        if peer == "tumult":
            continue
        for rel in ("ar", "sub") if peer == "opendp" else (None,):
            groups[peer + (f"-{rel}" if rel else "")] = (str(py), peer, rel)
    acc.run_groups(job, groups, cells, jobs, 24, log)
    if "diffprivlib" in groups:
        # diffprivlib 0.6.6's quantile raises on some cells (its exponential mechanism's
        # probabilities overflow to NaN at large n·ε): one cell per worker, so that a
        # failing cell loses itself only; the cells it fails on are reported
        acc.run_groups(job, {"diffprivlib": groups["diffprivlib"]}, cells, jobs, 1, log)
    small = [c for c in cells if c["n"] <= TUMULT_MAX_N]
    if "tumult" in pys:
        groups["tumult"] = (str(pys["tumult"]), "tumult", None)
        acc.run_groups(job, {"tumult": groups["tumult"]}, small, jobs, 24, log)
    results: dict[str, dict[str, np.ndarray]] = {c["key"]: {} for c in cells}
    for group in groups:
        for cell in cells:
            path = acc.cell_file(job, group, cell["key"])
            if path.exists():
                got = np.load(path)
                results[cell["key"]].update({k: got[k] for k in got.files
                                             if k != "__seconds__"})
    failed = sorted(c["key"] for c in cells if "diffprivlib" in groups
                    and not acc.cell_file(job, "diffprivlib", c["key"]).exists())
    if failed:
        log(f"diffprivlib raised on {len(failed)} cells (no result): " + ", ".join(failed))
    # where smooth sensitivity was the substitution default (ε·n ≥ 2000, n public), that
    # mechanism beside today's default; and everywhere, the add/remove default's log base
    # without its atoms (the atoms' price and gain)
    sys.path.insert(0, str(ROOT / "src"))
    from instancedp.mechanisms.quantile import ExponentialQuantile
    from instancedp.queries.order import Quantile
    from instancedp.random import simulation
    from instancedp.recipes import build_mechanism

    for cell in cells:
        bounds, q, eps = (cell["lower"], cell["upper"]), cell["q"], cell["epsilon"]
        extra = {"log/ar": ExponentialQuantile(Quantile(q, *bounds, neighbours="add_remove"),
                                               eps, base="log")}
        if cell["n"] * eps >= 2000:
            extra["smooth/sub"] = build_mechanism("quantile", eps, mechanism="smooth",
                                                  bounds=bounds, quantile=q, n=cell["n"],
                                                  neighbours="substitution")
        for name, mech in extra.items():
            src = simulation(cell["seed"])
            results[cell["key"]][name] = np.array(
                [mech.sample(x, DRAWS, src) for x in samples[cell["sample"]]])
    rows = acc.summarise(cells, samples, results)["cells"]
    for r in rows:  # what an in-memory integer column gets from a Session
        for tag in ("ar", "sub"):
            src = f"default+res/{tag}" if r["resolution"] is not None else f"default/{tag}"
            for stat in ("mae", "medae", "se"):
                if src in r[stat]:
                    r[stat][f"default-declared/{tag}"] = r[stat][src]
    versions = {p: acc.peer_version(py, p) for p, py in pys.items()}
    return rows, versions, time.time() - t0, failed


def tables(rows: list[dict]) -> dict:
    """default-declared ÷ the best peer of its relation, overall and per n, ε, bounds,
    family and q (MAE and median absolute error)."""
    out: dict = {}
    slices = {"all": lambda r: True}
    for n in NS:
        slices[f"n={n}"] = lambda r, n=n: r["n"] == n
    for e in EPSILONS:
        slices[f"eps={e:g}"] = lambda r, e=e: r["epsilon"] == e
    for b in BOUNDS:
        slices[f"bounds={b}"] = lambda r, b=b: r["bounds"] == b
    for q in QS:
        slices[f"q={q:g}"] = lambda r, q=q: r["q"] == q
    for f in FAMILIES:
        slices[f"family={f}"] = lambda r, f=f: r["column"] == f
    for tag in ("ar", "sub"):
        for stat in ("mae", "medae"):
            for name, keep in slices.items():
                c = acc.compare([r for r in rows if keep(r)], f"default-declared/{tag}",
                                "best", stat)
                if c:
                    out[f"{tag}|{stat}|{name}"] = c
    return out


def write(rows: list[dict], versions: dict, seconds: float, quick: bool, out: Path,
          failed: list[str]) -> None:
    comp = tables(rows)
    summary = {"cells": rows, "comparisons": comp, "versions": versions, "quick": quick,
               "seconds": round(seconds, 1), "diffprivlib_failed": failed}
    (out / "accuracy_grid.json").write_text(json.dumps(summary, indent=1, default=float))
    head = (f"Generated by `benchmarks/accuracy_grid.py`{' --quick' if quick else ''} "
            f"({len(rows)} cells, {seconds:.0f} s). Peers: "
            + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) + ".")
    lines = ["# The quantile default over a broad grid of synthetic cells", "", head, "",
             "`default-declared` (the library's default; the grid base on the integer "
             "columns, as a Session gives an in-memory integer column) ÷ the best peer "
             "configuration of the same relation per cell (OpenDP's 1,001-point and "
             "natural grids, Tumult at n ≤ 1,000 under add/remove; diffprivlib and "
             "OpenDP's sized grids under substitution). < 1: the default is more "
             "accurate. 100 trials per cell at n ≤ 1,000, 40 at 10⁴, 20 at 10⁵: a map, "
             "not per-cell verdicts (see accuracy.md for the Monte-Carlo noise of such "
             "ratios).", ""]
    if failed:
        lines += [f"diffprivlib 0.6.6 raised on {len(failed)} cells (\"Can't find a candidate "
                  "to return\": its exponential mechanism's probabilities overflow to NaN); "
                  "there the best substitution peer is OpenDP's: "
                  + ", ".join(f"`{k}`" for k in failed) + ".", ""]
    for tag, rel in (("ar", "add/remove"), ("sub", "substitution")):
        for stat, what in (("mae", "mean absolute error"), ("medae", "median absolute error")):
            lines += [f"## {rel}, {what}", "",
                      "| slice | cells | geomean | min / q1 / median / q3 / max | ≤ 1 | ≤ 0.5 |",
                      "|---|---|---|---|---|---|"]
            for key, c in comp.items():
                t, s, name = key.split("|")
                if (t, s) != (tag, stat):
                    continue
                qs = " / ".join(acc._num(x) for x in c["quartiles"])
                lines.append(f"| {name} | {c['cells']} | {c['geomean']:.2f} | {qs} | "
                             f"{c['cells_le_1']} | {c['cells_le_0.5']} |")
            lines.append("")
    lines += atoms_lines(rows) + smooth_rule_lines(rows)
    for tag in ("ar", "sub"):
        c = comp.get(f"{tag}|mae|all")
        if c and c["losing"]:
            lines += [f"## The 15 worst cells ({tag}, MAE; z = |log ratio| in standard errors)",
                      "", "| cell | ratio | z |", "|---|---|---|"]
            lines += [f"| {k} | {acc._num(x)} | {z:.1f} |" for k, x, z in c["losing"][:15]]
            lines.append("")
    acc._write_keeping_notes(out / "accuracy_grid.md", lines)
    _plot(rows, out)


def smooth_rule_lines(rows: list[dict]) -> list[str]:
    """Smooth sensitivity under substitution (its public γ from n; the default at
    ε·n ≥ 2000 before the log base had atoms) ÷ today's default there (the exponential
    mechanism, log base with atoms) on the same subsamples, per ε and kind of family
    (MAE)."""
    out = ["## Substitution at ε·n ≥ 2000: smooth sensitivity ÷ the default (the "
           "exponential mechanism)", "",
           "Smooth sensitivity was the substitution default on these cells for its "
           "exactness on ties; it is not since the log base has atoms.", "",
           "| families | ε | cells | geomean | min / median / max | smooth better |",
           "|---|---|---|---|---|---|"]
    for label, fams in (("continuous (no ties)", ("normal", "lognormal", "uniform", "pareto")),
                        ("integer, undeclared here", ("poisson", "rounded-lognormal")),
                        ("ties in floats", ("mixture", "few-values"))):
        for e in EPSILONS:
            v = [max(r["mae"]["smooth/sub"], acc._floor(r))
                 / max(r["mae"]["default/sub"], acc._floor(r))
                 for r in rows if "smooth/sub" in r["mae"] and r["column"] in fams
                 and r["epsilon"] == e]
            if v:
                out.append(f"| {label} | {e:g} | {len(v)} | {acc._gm(v):.2f} | "
                           f"{acc._num(min(v))} / {acc._num(float(np.median(v)))} / "
                           f"{acc._num(max(v))} | {sum(x < 1 for x in v)} |")
    return out + [""]


def atoms_lines(rows: list[dict]) -> list[str]:
    """The add/remove default without a declared resolution (log base with atoms) ÷ the
    same log base without atoms, per family (MAE, the same subsamples and seeds)."""
    out = ["## The atoms at round numbers: `default/ar` (log base with atoms) ÷ the log "
           "base alone", "",
           "Both without a declared resolution (on the integer families too), under "
           "add/remove. Ratios below 1: the atoms help.", "",
           "| family | cells | geomean | min / median / max | ≤ 0.5 | > 1.1 |",
           "|---|---|---|---|---|---|"]
    for fam in FAMILIES:
        v = [max(r["mae"]["default/ar"], acc._floor(r)) / max(r["mae"]["log/ar"], acc._floor(r))
             for r in rows if r["column"] == fam and "log/ar" in r["mae"]]
        if v:
            out.append(f"| {fam} | {len(v)} | {acc._gm(v):.3f} | {acc._num(min(v))} / "
                       f"{acc._num(float(np.median(v)))} / {acc._num(max(v))} | "
                       f"{sum(x <= 0.5 for x in v)} | {sum(x > 1.1 for x in v)} |")
    return out + [""]


def _plot(rows: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, tag in zip(axes, ("ar", "sub"), strict=True):
        for b, marker in zip(BOUNDS, ("o", "x"), strict=True):
            xs, ys = [], []
            for r in rows:
                if r["bounds"] != b or f"default-declared/{tag}" not in r["mae"]:
                    continue
                ps = [p for p in acc.peers_of([r], tag) if p in r["mae"]]
                if not ps:
                    continue
                best = min(ps, key=lambda p: r["mae"][p])
                xs.append(r["n"] * r["epsilon"] * (1 + 0.15 * (r["q"] - 0.5)))
                ys.append(acc._ratio(r, f"default-declared/{tag}", best)[0])
            ax.scatter(xs, ys, s=8, marker=marker, label=f"{b} bounds", alpha=0.6)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.axhline(0.5, color="k", lw=0.5, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n·ε")
        ax.set_title({"ar": "add/remove", "sub": "substitution"}[tag])
        ax.legend()
    axes[0].set_ylabel("default MAE ÷ best peer MAE")
    fig.tight_layout()
    fig.savefig(out / "accuracy_grid.png", dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    args = ap.parse_args(argv)
    rows, versions, seconds, failed = run(args.quick, args.jobs, print)
    args.out.mkdir(parents=True, exist_ok=True)
    write(rows, versions, seconds, args.quick, args.out, failed)
    print(f"total {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
