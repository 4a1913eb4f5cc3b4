"""Permute-and-flip against the exponential mechanism on the declared grid: exact expected errors.

The accuracy benchmark (``benchmarks/accuracy.py``) estimates each cell's MAE
from 500 draws; on integer columns most draws hit the target exactly, so a
cell's MAE is a handful of non-zero errors and the ratio of two samplers is
mostly Monte-Carlo noise.  Here the same cells and the same subsamples
(``accuracy.build_cells``) are scored by their EXACT expected absolute error
E|release − x_(m)| under each law, with no draws:

* exponential mechanism: P(k) ∝ exp(u_k) on the utilities u_k = −ε·s_k/(2Δ)
  (+ log μ_k on "log-grid") that ``ExponentialQuantile`` uses;
* permute-and-flip: P(k) = p_k·∫₀¹ ∏_{j≠k} (1 − p_j t) dt (McKenna & Sheldon
  2020; ``mechanisms.quantile.permute_and_flip_probabilities``), integrated
  here over blocks of equal utility with Gauss–Legendre (checked against the
  exact polynomial law on a small grid at start-up).

Bases "grid" and "log-grid" (the declared default), both relations, every cell
with a declared resolution whose grid has at most ``--max-points`` points.
Writes ``docs/results/permute_flip.{md,json}``.

``--quick``: the synthetic column only, 10 subsamples (well under a minute).
Full: every column with a declared resolution, 100 subsamples (the accuracy
benchmark's), grids up to ``--max-points`` (default 5,000) points.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from accuracy import build_cells, truth  # noqa: E402

from instancedp.mechanisms.quantile import (  # noqa: E402
    ExponentialQuantile,
    permute_and_flip_probabilities,
)
from instancedp.queries.order import Quantile  # noqa: E402

NODES = 4000


@functools.cache
def _nodes() -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre on [0, 1] (computed once: numpy's leggauss is O(NODES³))."""
    x, w = np.polynomial.legendre.leggauss(NODES)
    return (x + 1.0) / 2.0, w / 2.0


def pf_law(u: np.ndarray) -> np.ndarray:
    """Permute-and-flip's point masses for utilities u, integrating block by block."""
    u = np.asarray(u, dtype=np.float64)
    p = np.exp(u - u.max())
    # blocks of equal rate: the integrand depends on the block, not the point
    vals, inv, counts = np.unique(p, return_inverse=True, return_counts=True)
    keep = vals > 1e-300
    t, w = _nodes()
    logf = np.log1p(-np.outer(vals[keep], t))  # (blocks, nodes); t < 1 so finite
    total = (counts[keep][:, None] * logf).sum(axis=0)
    per_block = np.zeros(vals.size)
    per_block[keep] = vals[keep] * (np.exp(total[None, :] - logf) * w).sum(axis=1)
    out = per_block[inv]
    return out / out.sum()


def expected_errors(cell: dict, x: np.ndarray, target: float) -> dict[str, float]:
    out = {}
    for rel in ("add_remove", "substitution"):
        query = Quantile(cell["q"], cell["lower"], cell["upper"], neighbours=rel)
        tag = "ar" if rel == "add_remove" else "sub"
        for base in ("grid", "log-grid"):
            mech = ExponentialQuantile(query, cell["epsilon"], base=base,
                                       resolution=cell["resolution"])
            u = mech.grid_utilities(x)  # the mechanism's own scores and weights
            k = np.arange(u.size)
            err = np.abs(np.minimum(mech.lower + k * mech.resolution, mech.upper) - target)
            em = np.exp(u - u.max())  # the exponential mechanism on the same utilities
            out[f"em/{base}/{tag}"] = float(np.dot(em / em.sum(), err))
            out[f"pf/{base}/{tag}"] = float(np.dot(pf_law(u), err))
    return out


def check_integration() -> float:
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(5):
        u = -np.abs(rng.normal(0, 3, size=40)).round(1)
        worst = max(worst, float(np.max(np.abs(pf_law(u) - permute_and_flip_probabilities(u)))))
    assert worst < 1e-9, worst
    return worst


def gm(v: list[float]) -> float:
    return float(np.exp(np.mean(np.log(v)))) if v else math.nan


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--max-points", type=int, default=5000)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    args = ap.parse_args(argv)
    t0 = time.process_time()
    err = check_integration()
    ns = SimpleNamespace(quick=args.quick, subsamples=10 if args.quick else 100,
                         synthetic=None)
    cells, samples = build_cells(ns, lambda m: print(m, file=sys.stderr))
    rows = []
    for cell in cells:
        if cell["resolution"] is None or (args.quick and cell["kind"] != "synthetic"):
            continue
        if (cell["upper"] - cell["lower"]) / cell["resolution"] + 1 > args.max_points:
            continue
        xs = samples[cell["sample"]]
        targets = truth(xs, cell["q"])
        acc: dict[str, list[float]] = {}
        for x, tgt in zip(xs, targets, strict=True):
            for k, v in expected_errors(cell, x, float(tgt)).items():
                acc.setdefault(k, []).append(v)
        rows.append({"key": cell["key"], "kind": cell["kind"],
                     "mae": {k: float(np.mean(v)) for k, v in acc.items()}})
        print(cell["key"], file=sys.stderr)
    summary = {}
    for kind in ("synthetic", "real"):
        for base in ("grid", "log-grid"):
            for rel in ("ar", "sub"):
                r = [c["mae"][f"pf/{base}/{rel}"] / c["mae"][f"em/{base}/{rel}"]
                     for c in rows if c["kind"] == kind and c["mae"][f"em/{base}/{rel}"] > 0]
                if r:
                    summary[f"{kind}|{base}|{rel}"] = {
                        "geomean": gm(r), "max": max(r), "min": min(r),
                        "better": sum(x < 1 for x in r), "cells": len(r)}
    result = {"quick": args.quick, "subsamples": ns.subsamples, "nodes": NODES,
              "integration_check": err, "seconds": time.process_time() - t0,
              "summary": summary, "cells": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "permute_flip.json").write_text(json.dumps(result, indent=1))
    lines = [
        "# Permute-and-flip vs the exponential mechanism on the declared grid (exact)",
        "",
        f"Generated by `benchmarks/permute_flip.py{' --quick' if args.quick else ''}` "
        f"({ns.subsamples} subsamples per cell, the accuracy benchmark's; "
        f"{result['seconds']:.0f} CPU-s). Exact expected absolute error of one "
        "release against the subsample's order statistic, averaged over the "
        "subsamples — no Monte-Carlo draws. Ratio = permute-and-flip ÷ exponential "
        "mechanism, same utilities, same ε (< 1: permute-and-flip is better).",
        "",
        "| data | base | relation | geomean | min | max | cells better | cells |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for k, v in summary.items():
        kind, base, rel = k.split("|")
        lines.append(f"| {kind} | {base} | {rel} | {v['geomean']:.3f} | {v['min']:.3f} | "
                     f"{v['max']:.3f} | {v['better']} | {v['cells']} |")
    lines += ["", "## Per cell", "", "| cell | " + " | ".join(
        f"{s}/{b}/{r}" for b in ("grid", "log-grid") for r in ("ar", "sub")
        for s in ("em", "pf")) + " |", "|---|" + "---|" * 8]
    for c in rows:
        lines.append(f"| {c['key']} | " + " | ".join(
            f"{c['mae'][f'{s}/{b}/{r}']:.4g}" for b in ("grid", "log-grid")
            for r in ("ar", "sub") for s in ("em", "pf")) + " |")
    (args.out / "permute_flip.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:12 + len(summary)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
