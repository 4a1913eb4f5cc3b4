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
On the wide cells without a declared resolution, OpenDP's 4,001-point grid by
permute-and-flip and by the exponential mechanism against the library's
continuous log base (``continuous_errors``): where the default loses to that
grid, is it the grid or the sampler?  Writes ``docs/results/permute_flip.{md,json}``.

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

import lower_bound as lb  # noqa: E402
from accuracy import build_cells, peer_grids, truth  # noqa: E402

from instancedp.mechanisms.quantile import (  # noqa: E402
    ExponentialQuantile,
    permute_and_flip_probabilities,
    score_sensitivity,
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
            err = np.abs(mech.grid_values() - target)
            em = np.exp(u - u.max())  # the exponential mechanism on the same utilities
            out[f"em/{base}/{tag}"] = float(np.dot(em / em.sum(), err))
            out[f"pf/{base}/{tag}"] = float(np.dot(pf_law(u), err))
    return out


def continuous_errors(cell: dict, x: np.ndarray, target: float) -> dict[str, float]:
    """A column without a declared resolution: OpenDP's 4,001-point grid drawn by
    permute-and-flip (its law) and by the exponential mechanism on the same utilities,
    and the library's continuous exponential mechanism with the log base (the default
    without its atoms, whose law has no closed form at these bounds; they cost ≤ 1 % on
    continuous columns, docs/results/accuracy_grid.md)."""
    out = {}
    grid = peer_grids(cell)["grid4k"]
    for rel in ("add_remove", "substitution"):
        tag = "ar" if rel == "add_remove" else "sub"
        u = lb.opendp_utilities(x, grid, cell["q"], cell["epsilon"],
                                score_sensitivity(cell["q"], rel))
        err = np.abs(grid - target)
        em = np.exp(u - u.max())
        out[f"em/opendp-grid4k/{tag}"] = float(np.dot(em / em.sum(), err))
        out[f"pf/opendp-grid4k/{tag}"] = float(np.dot(lb.pf_probabilities(u), err))
        query = Quantile(cell["q"], cell["lower"], cell["upper"], neighbours=rel)
        out[f"em/log/{tag}"] = lb.continuous_error(
            ExponentialQuantile(query, cell["epsilon"], base="log"), x, target)
    return out


def check_integration() -> float:
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(5):
        u = -np.abs(rng.normal(0, 3, size=40)).round(1)
        worst = max(worst, float(np.max(np.abs(pf_law(u) - permute_and_flip_probabilities(u)))))
    assert worst < 1e-9, worst
    return worst


def _averaged(cell: dict, samples, errors, limit: int | None = None) -> dict:
    """One cell's exact expected errors, averaged over its (first ``limit``) subsamples."""
    xs = samples[cell["sample"]][:limit]
    acc: dict[str, list[float]] = {}
    for x, tgt in zip(xs, truth(xs, cell["q"]), strict=True):
        for k, v in errors(cell, np.sort(x), float(tgt)).items():
            acc.setdefault(k, []).append(v)
    print(cell["key"], file=sys.stderr)
    return {"key": cell["key"], "kind": cell["kind"],
            "mae": {k: float(np.mean(v)) for k, v in acc.items()}}


def _continuous_lines(rows: list[dict]) -> list[str]:
    """The section on columns without a declared resolution (``continuous_errors``)."""
    lines = [
        "", "## Columns without a declared resolution: OpenDP's 4,001-point grid", "",
        "The accuracy benchmark's wide cells without a declared resolution. `pf` is "
        "OpenDP's release (permute-and-flip on its 4,001 evenly spaced candidates, the "
        "point score), `em` the exponential mechanism on the same candidates and "
        "utilities, `log` the library's continuous exponential mechanism with the log "
        "base (the default without its atoms). Ratios of exact expected errors, "
        "geometric means over the cells (< 1: the first is better).", "",
        "| data | relation | pf ÷ em (grid) | em (grid) ÷ log | pf (grid) ÷ log | "
        "cells where pf (grid) < log | cells |", "|---|---|---|---|---|---|---|"]
    for kind in ("synthetic", "real"):
        for tag in ("ar", "sub"):
            r = [c["mae"] for c in rows if c["kind"] == kind]
            if not r:
                continue
            pf, em, lg = ([m[f"{s}/{tag}"] for m in r]
                          for s in ("pf/opendp-grid4k", "em/opendp-grid4k", "em/log"))
            lines.append(
                f"| {kind} | {tag} | {gm([a / b for a, b in zip(pf, em, strict=True)]):.3f} | "
                f"{gm([a / b for a, b in zip(em, lg, strict=True)]):.3f} | "
                f"{gm([a / b for a, b in zip(pf, lg, strict=True)]):.3f} | "
                f"{sum(a < b for a, b in zip(pf, lg, strict=True))} | {len(r)} |")
    cols = [f"{s}/{tag}" for tag in ("ar", "sub")
            for s in ("pf/opendp-grid4k", "em/opendp-grid4k", "em/log")]
    lines += ["", "| cell | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    lines += [f"| {c['key']} | " + " | ".join(f"{c['mae'][k]:.4g}" for k in cols) + " |"
              for c in rows]
    return lines


def gm(v: list[float]) -> float:
    return float(np.exp(np.mean(np.log(v)))) if v else math.nan


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--max-points", type=int, default=5000)
    ap.add_argument("--continuous-subsamples", type=int, default=100,
                    help="subsamples per cell for the columns without a resolution")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    args = ap.parse_args(argv)
    t0 = time.process_time()
    err = check_integration()
    ns = SimpleNamespace(quick=args.quick, subsamples=10 if args.quick else 100,
                         synthetic=None)
    cells, samples = build_cells(ns, lambda m: print(m, file=sys.stderr))
    rows, continuous = [], []
    for cell in cells:
        if args.quick and cell["kind"] != "synthetic":
            continue
        if cell["resolution"] is None:
            if cell["bounds"] == "wide":
                continuous.append(_averaged(cell, samples, continuous_errors,
                                            args.continuous_subsamples))
            continue
        if (cell["upper"] - cell["lower"]) / cell["resolution"] + 1 > args.max_points:
            continue
        rows.append(_averaged(cell, samples, expected_errors))
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
              "summary": summary, "cells": rows, "continuous": continuous}
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
    lines += _continuous_lines(continuous)
    (args.out / "permute_flip.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:12 + len(summary)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
