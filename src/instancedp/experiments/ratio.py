"""Private ratios a/b: the seed 004 comparison (docs/results/ratio.md).

Mean absolute error of ``naive``, ``bounded_ls`` (for several budget splits)
and ``ksw`` over a grid of counts (a, b), b from 10 to 10⁵, ε ∈ {0.1, 1},
δ = 1e−6, 10⁵ vectorised trials per cell.  Errors are reported raw (as the
seed does — the naive and KSW ratios of noisy counts have heavy tails when
the noisy denominator nears 0) and after clipping to [0, 1] (post-processing,
what ``PrivateRatio`` releases by default).
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import numpy as np

from ..mechanisms.ratio import simulate

FRACTIONS: tuple[float, ...] = (0.05, 0.1, 0.2, 0.3, 0.5)
BS: tuple[int, ...] = (10, 100, 1000, 10_000, 100_000)
SHARES: tuple[float, ...] = (0.01, 0.1, 0.5)


def run(
    bs: tuple[int, ...] = BS,
    shares: tuple[float, ...] = SHARES,
    epsilons: tuple[float, ...] = (0.1, 1.0),
    fractions: tuple[float, ...] = FRACTIONS,
    delta: float = 1e-6,
    trials: int = 100_000,
    seed: int = 4,
    quick: bool = False,
) -> dict[str, Any]:
    """One row per (ε, b, a, method): raw and clipped MAE."""
    if quick:
        bs, trials = (10, 1000, 100_000), 10_000
    rows = []
    t0 = time.time()
    for eps in epsilons:
        for b in bs:
            for share in shares:
                a = int(round(share * b))
                truth = a / b
                cases = [("naive", None), ("ksw", None)] + [("bounded_ls", f) for f in fractions]
                for method, frac in cases:
                    gen = np.random.default_rng([seed, b, a, int(eps * 100), len(rows)])
                    out = simulate(
                        method,
                        a,
                        b,
                        eps,
                        trials,
                        rng=gen,
                        delta=delta,
                        bound_fraction=frac if frac is not None else 0.1,
                    )
                    err = np.abs(out - truth)
                    clipped = np.abs(np.clip(np.nan_to_num(out, nan=0.5), 0, 1) - truth)
                    rows.append(
                        {
                            "epsilon": eps,
                            "b": b,
                            "a": a,
                            "method": method if frac is None else f"bounded_ls f={frac:g}",
                            "fraction": frac,
                            "mae": float(np.nanmean(err)),
                            "median_ae": float(np.nanmedian(err)),
                            "mae_clipped": float(clipped.mean()),
                            "trials": trials,
                        }
                    )
    return {
        "machine": {"cpu_count": os.cpu_count()},
        "seconds": time.time() - t0,
        "delta": delta,
        "rows": rows,
    }


def best_fraction(rows: list[dict[str, Any]], key: str = "mae_clipped") -> dict[str, Any]:
    """Geometric-mean regret of each bounded-LS split over all cells (regret = MAE ÷ the
    best split's MAE in that cell); the smallest is the documented default."""
    cells: dict[tuple, dict[float, float]] = {}
    for r in rows:
        if r["fraction"] is not None:
            cells.setdefault((r["epsilon"], r["b"], r["a"]), {})[r["fraction"]] = r[key]
    fracs = sorted({f for c in cells.values() for f in c})
    score = {}
    for f in fracs:
        logs = [math.log(c[f] / min(c.values())) for c in cells.values() if f in c]
        score[f] = math.exp(sum(logs) / len(logs))
    return {"regret": score, "best": min(score, key=score.get)}
