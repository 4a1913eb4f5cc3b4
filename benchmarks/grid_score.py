"""The grid score's shrink: exact expected error of the grid quantile release for each λ.

The grid bases (a declared integer type or resolution) score grid point t by
dist(q·n, [L + a·E, L + E − a·E]), a = λ·min(q, 1 − q) (``quantile.grid_scores``;
λ = 0 is the rank-interval score of the continuous bases).  This script chooses
λ = ``quantile.GRID_SHRINK`` on synthetic integer columns only: Poisson(20) and
rounded lognormal(4, 1) (``accuracy.synthetic``), n ∈ {100, 1,000, 10⁴}, ε ∈ {0.1,
0.5, 1, 2}, q ∈ {0.1, 0.5, 0.9}, both neighbour relations, bounds at the column's
range, S subsamples per cell.  The shrink changes only the scores of occupied
grid points; wider bounds add empty grid points whose score does not depend on λ.

Errors are exact expectations of the library's law (no sampling): the release's
own utilities (``ExponentialQuantile.grid_utilities``, with ``GRID_SHRINK`` set to
each λ) through the permute-and-flip law (``lower_bound.pf_probabilities``, equal
to the library's ``permute_and_flip_probabilities`` to rounding), against the
benchmark's truth x_(⌈q·n⌉) (``accuracy.truth``).

The rule, fixed before the run: λ with the smallest geometric mean of
err(λ)/err(0) over the cells, among the λ whose largest per-cell ratio is at most
1.5; cells where err(0) < 10⁻⁹ (both errors negligible) are left out of the ratios.
The real columns of ``benchmarks/accuracy.py`` are not read here.

``--quick``: Poisson, n ∈ {100, 1,000}, S = 3 (≤ 2 minutes).  Full: S = 10.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import accuracy as acc  # noqa: E402
import lower_bound as lb  # noqa: E402

from instancedp.mechanisms import quantile as qm  # noqa: E402
from instancedp.recipes import build_mechanism  # noqa: E402

LAMBDAS = (0.0, 0.25, 0.5, 0.75, 1.0)
FAMILIES = ("poisson", "rounded-lognormal")
NS = (100, 1000, 10_000)
EPSILONS = (0.1, 0.5, 1.0, 2.0)
QS = (0.1, 0.5, 0.9)
RELATIONS = ("add_remove", "substitution")
NEGLIGIBLE = 1e-9
WORST_ALLOWED = 1.5


def expected_error(mech, y: np.ndarray, truth: float, lam: float) -> float:
    saved = qm.GRID_SHRINK
    qm.GRID_SHRINK = lam
    try:
        u = mech.grid_utilities(y)
    finally:
        qm.GRID_SHRINK = saved
    return lb.discrete_error(mech.grid_values(), lb.pf_probabilities(u), truth)


def run(quick: bool, log) -> tuple[list[dict], float]:
    t0 = time.time()
    rng = np.random.default_rng(20261125)
    rows = []
    for fam in FAMILIES[:1] if quick else FAMILIES:
        col = acc.synthetic(fam, 200_000, rng)
        lo, hi = float(col.min()), float(col.max())
        for n in NS[:2] if quick else NS:
            ys = np.sort(col[rng.integers(0, col.size, size=(3 if quick else 10, n))], axis=1)
            for rel in RELATIONS:
                for eps in EPSILONS:
                    for q in QS:
                        mech = build_mechanism(
                            "quantile", eps, bounds=(lo, hi), quantile=q, neighbours=rel,
                            n=n if rel == "substitution" else None, resolution=1.0)
                        truths = acc.truth(ys, q)
                        err = [float(np.mean([expected_error(mech, y, t, lam)
                                              for y, t in zip(ys, truths, strict=True)]))
                               for lam in LAMBDAS]
                        rows.append(dict(family=fam, n=n, relation=rel, epsilon=eps, q=q,
                                         errors=err))
                        log(f"{fam} n={n} {rel} eps={eps} q={q}: "
                            + " ".join(f"{e:.4g}" for e in err))
    return rows, time.time() - t0


def _geomeans(ratio: np.ndarray) -> np.ndarray:
    """The geometric mean of each column (λ) of per-cell ratios."""
    return np.exp(np.log(np.maximum(ratio, 1e-300)).mean(axis=0))


def summarise(rows: list[dict]) -> dict:
    e = np.array([r["errors"] for r in rows])
    keep = e[:, 0] >= NEGLIGIBLE
    ratio = e[keep] / e[keep, :1]
    gm = _geomeans(ratio)
    out = {"lambda": list(LAMBDAS), "cells": int(keep.sum()), "negligible": int((~keep).sum()),
           "geomean": gm.tolist(), "worst": ratio.max(axis=0).tolist(),
           "share_worse": (ratio > 1.0 + 1e-9).mean(axis=0).tolist(),
           "per_q": {}}
    qs = np.array([r["q"] for r in rows])[keep]
    for q in QS:
        rq = ratio[qs == q]
        out["per_q"][str(q)] = {"geomean": _geomeans(rq).tolist(),
                                "worst": rq.max(axis=0).tolist()}
    ok = [i for i, w in enumerate(out["worst"]) if w <= WORST_ALLOWED]
    out["chosen"] = LAMBDAS[min(ok, key=lambda i: gm[i])]
    return out


def write(rows: list[dict], summary: dict, seconds: float, quick: bool, out: Path) -> None:
    (out / "grid_score.json").write_text(json.dumps(
        {"rows": rows, "summary": summary, "seconds": seconds, "quick": quick}, indent=1))
    lam = summary["lambda"]
    lines = [
        "# The grid score's shrink",
        "",
        f"Generated by `python benchmarks/grid_score.py{' --quick' if quick else ''}` "
        f"({seconds:.0f} s). Exact expected absolute error of the grid quantile release "
        "(declared resolution 1, bounds at the column's range, permute-and-flip) against "
        "x_(⌈q·n⌉), for the shrink λ of `grid_scores` (a = λ·min(q, 1 − q)); synthetic "
        "integer columns only (module docstring). Ratio = err(λ) ÷ err(0) per cell; "
        f"{summary['cells']} cells ({summary['negligible']} with err(0) < 1e-9 left out).",
        "",
        "| | " + " | ".join(f"λ = {v:g}" for v in lam) + " |",
        "|---|" + "---|" * len(lam),
        "| geometric mean | " + " | ".join(f"{v:.3g}" for v in summary["geomean"]) + " |",
        "| worst cell | " + " | ".join(f"{v:.3g}" for v in summary["worst"]) + " |",
        "| share of cells worse than λ = 0 | "
        + " | ".join(f"{v:.0%}" for v in summary["share_worse"]) + " |",
    ]
    for q, d in summary["per_q"].items():
        lines.append(f"| q = {q}: geometric mean / worst | " + " | ".join(
            f"{g:.3g} / {w:.3g}" for g, w in zip(d["geomean"], d["worst"], strict=True)) + " |")
    lines += [
        "",
        f"Rule (fixed before the run): the smallest geometric mean among the λ whose worst "
        f"cell is at most {WORST_ALLOWED}. **Chosen: λ = {summary['chosen']:g}** "
        f"(`GRID_SHRINK` = {qm.GRID_SHRINK:g} in the code).",
        "",
    ]
    (out / "grid_score.md").write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    args = ap.parse_args(argv)
    rows, seconds = run(args.quick, print)
    summary = summarise(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    write(rows, summary, seconds, args.quick, args.out)
    print(json.dumps({k: summary[k] for k in ("geomean", "worst", "chosen")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
