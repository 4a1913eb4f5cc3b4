"""Seed 002's comparison of Laplace and SmallDB for k normalised counting queries.

Bounds (with probability 1 − β): Laplace α = (k/(εn))·ln(k/β); SmallDB
α = ((16·lg|X|·lg k + 4·ln(1/β))/(εn))^{1/3}.  The seed does not state |X|;
|X| = 3 reproduces its n = 1000, k = 120 crossing (2.0866, quoted as 2.08),
while n = 10, k = 1 (ε = ln 20 / 20 = 0.1498) does not depend on |X|.

Measured errors on a small universe: SmallDB is run at α = its own bound
(capped at 0.95) and its error law is computed exactly by enumerating every
synthetic database; Laplace(k/(εn)) per query is sampled (seeded) and its
exact quantile −b·ln(1 − (1 − β)^{1/k}) and mean b·H_k are given too.
Queries are random non-trivial subsets of X (with |X| = 3 only 6 exist, so for k > 6
queries repeat: that changes nothing for SmallDB's error but is what the
bound's k means for Laplace's budget split).
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..mechanisms.smalldb import (
    SmallDB,
    crossing_epsilon,
    laplace_accuracy,
    smalldb_accuracy,
)

NS = (10, 1000)
KS = (1, 25, 120)
BETA = 0.05
UNIVERSE_SIZE = 3


def bound_curves(
    ns: tuple[int, ...] = NS,
    ks: tuple[int, ...] = KS,
    beta: float = BETA,
    universe_size: int = UNIVERSE_SIZE,
    epsilons: Any = None,
) -> list[dict[str, Any]]:
    eps_grid = np.logspace(-2, 1, 61) if epsilons is None else np.asarray(epsilons, dtype=float)
    return [
        {
            "n": n,
            "k": k,
            "epsilon": float(e),
            "laplace_bound": laplace_accuracy(n, k, float(e), beta),
            "smalldb_bound": smalldb_accuracy(n, k, float(e), beta, universe_size),
        }
        for n in ns
        for k in ks
        for e in eps_grid
    ]


def crossings(
    ns: tuple[int, ...] = NS,
    ks: tuple[int, ...] = KS,
    beta: float = BETA,
    universe_sizes: tuple[int, ...] = (2, 3, 10),
) -> list[dict[str, Any]]:
    return [
        {"n": n, "k": k, "universe_size": x, "crossing_epsilon": crossing_epsilon(n, k, beta, x)}
        for n in ns
        for k in ks
        for x in universe_sizes
    ]


def _quantile(values: np.ndarray, probs: np.ndarray, q: float) -> float:
    order = np.argsort(values)
    cum = np.cumsum(probs[order])
    return float(values[order][min(np.searchsorted(cum, q - 1e-12), values.size - 1)])


def measured(
    ns: tuple[int, ...] = NS,
    ks: tuple[int, ...] = KS,
    epsilons: tuple[float, ...] = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0),
    beta: float = BETA,
    universe_size: int = UNIVERSE_SIZE,
    reps: int = 4000,
    seed: int = 2,
    quick: bool = False,
) -> list[dict[str, Any]]:
    """Measured max-over-queries errors of both mechanisms, next to the bounds."""
    if quick:
        epsilons, reps = tuple(epsilons[::2]), min(reps, 500)
    gen = np.random.default_rng(seed)
    universe = list(range(universe_size))
    rows = []
    for n in ns:
        data = list(gen.integers(0, universe_size, size=n))
        for k in ks:
            # Non-constant predicates only: a query true (or false) on all of X has no error.
            subsets = np.array(
                [
                    [(s >> i) & 1 for i in range(universe_size)]
                    for s in range(1, 2**universe_size - 1)
                ]
            )
            queries = subsets[gen.integers(0, len(subsets), size=k)]
            for eps in epsilons:
                s_bound = smalldb_accuracy(n, k, eps, beta, universe_size)
                l_bound = laplace_accuracy(n, k, eps, beta)
                db = SmallDB(universe, queries, min(s_bound, 0.95), eps)
                p = db.output_probabilities(data)
                err = db.errors(data)
                b = k / (eps * n)
                lap = np.abs(gen.laplace(scale=b, size=(reps, k))).max(axis=1)
                rows.append(
                    {
                        "n": n,
                        "k": k,
                        "epsilon": eps,
                        "smalldb_size_m": db.size,
                        "smalldb_candidates": len(p),
                        "smalldb_mean_error": float(p @ err),
                        "smalldb_quantile_error": _quantile(err, p, 1 - beta),
                        "smalldb_bound": s_bound,
                        "laplace_mean_error_sampled": float(lap.mean()),
                        "laplace_mean_error_exact": b * sum(1 / i for i in range(1, k + 1)),
                        "laplace_quantile_error_exact": -b * math.log1p(-((1 - beta) ** (1 / k))),
                        "laplace_bound": l_bound,
                    }
                )
    return rows


# ---- rendering (moved from benchmarks/) ----


def reproduce(outdir: str | Path, quick: bool = True) -> list[Path]:
    """Write smalldb.md, smalldb.json, smalldb.png into ``outdir``; the paths written."""
    outdir = Path(outdir)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    curves = bound_curves()
    cross = crossings()
    meas = measured(quick=quick)
    elapsed = time.perf_counter() - start

    lines = [
        "# Laplace vs SmallDB for k counting queries (Wang et al.)",
        "",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}; one run of "
        f"`benchmarks/smalldb.py` ({elapsed:.1f} s{', quick' if quick else ''}).",
        "",
        "Bounds with probability 1 − β, β = 0.05 (Wang et al. Section Three): Laplace "
        "α = (k/(εn))·ln(k/β); SmallDB α = ((16·lg|X|·lg k + 4·ln(1/β))/(εn))^{1/3}.",
        "",
        "## Crossing points (Laplace's bound is smaller above them)",
        "",
        "| n | k | |X| = 2 | |X| = 3 | |X| = 10 |",
        "|---|---|---|---|---|",
    ]
    by = {(c["n"], c["k"], c["universe_size"]): c["crossing_epsilon"] for c in cross}
    for n in NS:
        for k in KS:
            lines.append(
                f"| {n} | {k} | {by[(n, k, 2)]:.4g} | {by[(n, k, 3)]:.4g} | {by[(n, k, 10)]:.4g} |"
            )
    lines += [
        "",
        f"n = 10, k = 1: ε* = ln(20)/20 = {by[(10, 1, 2)]:.4f} for every |X| (lg k = 0) — the "
        "text's 0.15.  n = 1000, k = 120: the text's 2.08 is |X| = 3 "
        f"(ε* = {by[(1000, 120, 3)]:.4f}); the text does not state |X|, so all results "
        "below use **|X| = 3**.",
        "",
        "## Measured errors on a universe of |X| = 3 elements",
        "",
        "Max over the k queries of |q(D) − answer|.  SmallDB runs at α = min(its bound, "
        "0.95), which fixes the synthetic size m; its error law is exact (all C(|X|+m−1, m) "
        "synthetic databases enumerated).  Laplace(k/(εn)) per query: sampled mean over "
        "4000 seeded repetitions and the exact (1 − β) quantile.  Random non-trivial "
        "predicate queries (only 6 exist on 3 elements, so for k > 6 they repeat).",
        "",
        "| n | k | ε | m | SmallDB mean | SmallDB 95% | SmallDB bound | Laplace mean "
        "(sampled) | Laplace 95% | Laplace bound |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in meas:
        lines.append(
            f"| {r['n']} | {r['k']} | {r['epsilon']:g} | {r['smalldb_size_m']} | "
            f"{r['smalldb_mean_error']:.4f} | {r['smalldb_quantile_error']:.4f} | "
            f"{r['smalldb_bound']:.4f} | {r['laplace_mean_error_sampled']:.4g} | "
            f"{r['laplace_quantile_error_exact']:.4g} | {r['laplace_bound']:.4g} |"
        )
    below = all(
        r["smalldb_quantile_error"] <= r["smalldb_bound"]
        and r["laplace_quantile_error_exact"] <= r["laplace_bound"]
        for r in meas
    )
    lines += [
        "",
        f"Every measured 95% error is below its bound: **{below}**.  Laplace's union bound "
        "is nearly tight; SmallDB's is loose by one to two orders of magnitude (its error "
        "never exceeds 1, while the bound does at small n·ε).  Where the measured 95% "
        "errors order the two mechanisms (SmallDB better at the ε listed), against the "
        "bounds' crossing:",
        "",
        "| n | k | bound crossing (|X| = 3) | ε where measured SmallDB 95% < Laplace 95% |",
        "|---|---|---|---|",
    ]
    for n in NS:
        for k in KS:
            wins = [
                f"{r['epsilon']:g}"
                for r in meas
                if r["n"] == n
                and r["k"] == k
                and r["smalldb_quantile_error"] < r["laplace_quantile_error_exact"]
            ]
            lines.append(f"| {n} | {k} | {by[(n, k, 3)]:.4g} | {', '.join(wins) or 'none'} |")
    lines += [
        "",
        "The bounds predict the direction (SmallDB for many queries on small data, Laplace "
        "for few queries or large n·ε) but not the measured crossing: SmallDB's true error "
        "is far below its bound, so it stays better well past the bounds' crossing.  "
        "(SmallDB's answers are multiples of 1/m, so its error can be near 0 when the "
        "true answer sits near such a multiple — the n = 1000, k = 1, ε = 10 row.)",
        "",
        "![error vs ε](smalldb.png)",
        "",
    ]
    (outdir / "smalldb.md").write_text("\n".join(lines))
    payload = {
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version()},
        "elapsed_s": elapsed,
        "quick": quick,
        "universe_size": UNIVERSE_SIZE,
        "beta": BETA,
        "crossings": cross,
        "bound_curves": curves,
        "measured": meas,
    }
    (outdir / "smalldb.json").write_text(json.dumps(payload, indent=1))

    fig, axes = plt.subplots(len(NS), len(KS), figsize=(13, 7), sharex=True)
    for i, n in enumerate(NS):
        for j, k in enumerate(KS):
            ax = axes[i][j]
            cs = [c for c in curves if c["n"] == n and c["k"] == k]
            eps = [c["epsilon"] for c in cs]
            ax.plot(eps, [c["laplace_bound"] for c in cs], "C0-", label="Laplace bound")
            ax.plot(eps, [c["smalldb_bound"] for c in cs], "C1-", label="SmallDB bound")
            ms = [r for r in meas if r["n"] == n and r["k"] == k]
            me = [r["epsilon"] for r in ms]
            ax.plot(
                me,
                [r["laplace_quantile_error_exact"] for r in ms],
                "C0o",
                ms=4,
                label="Laplace 95% (exact)",
            )
            ax.plot(
                me,
                [r["smalldb_quantile_error"] for r in ms],
                "C1s",
                ms=4,
                label="SmallDB 95% (exact)",
            )
            if 1e-2 <= by[(n, k, 3)] <= 10:
                ax.axvline(by[(n, k, 3)], color="grey", ls=":", lw=1)
            ax.set_xscale("log")
            ax.set_xlim(7e-3, 14)
            ax.set_yscale("log")
            ax.set_title(f"n = {n}, k = {k}")
            if i == len(NS) - 1:
                ax.set_xlabel("ε")
            if j == 0:
                ax.set_ylabel("max error α (β = 0.05)")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Laplace vs SmallDB, |X| = 3 (dotted: crossing of the bounds, if in range)")
    fig.tight_layout()
    fig.savefig(outdir / "smalldb.png", dpi=110)
    return [outdir / "smalldb.md", outdir / "smalldb.json", outdir / "smalldb.png"]
