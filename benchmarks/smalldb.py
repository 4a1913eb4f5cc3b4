"""Laplace vs SmallDB (seed 002) → docs/results/smalldb.{md,json,png}.

Run: .venv/bin/python benchmarks/smalldb.py [--quick]
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from instancedp.experiments import smalldb as ex  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"


def main(quick: bool = False) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    curves = ex.bound_curves()
    cross = ex.crossings()
    meas = ex.measured(quick=quick)
    elapsed = time.perf_counter() - start

    lines = [
        "# Laplace vs SmallDB for k counting queries (seed 002)",
        "",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}; one run of "
        f"`benchmarks/smalldb.py` ({elapsed:.1f} s{', quick' if quick else ''}).",
        "",
        "Bounds with probability 1 − β, β = 0.05 (002 Section Three): Laplace "
        "α = (k/(εn))·ln(k/β); SmallDB α = ((16·lg|X|·lg k + 4·ln(1/β))/(εn))^{1/3}.",
        "",
        "## Crossing points (Laplace's bound is smaller above them)",
        "",
        "| n | k | |X| = 2 | |X| = 3 | |X| = 10 |",
        "|---|---|---|---|---|",
    ]
    by = {(c["n"], c["k"], c["universe_size"]): c["crossing_epsilon"] for c in cross}
    for n in ex.NS:
        for k in ex.KS:
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
    for n in ex.NS:
        for k in ex.KS:
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
    (OUT / "smalldb.md").write_text("\n".join(lines))
    payload = {
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version()},
        "elapsed_s": elapsed,
        "quick": quick,
        "universe_size": ex.UNIVERSE_SIZE,
        "beta": ex.BETA,
        "crossings": cross,
        "bound_curves": curves,
        "measured": meas,
    }
    (OUT / "smalldb.json").write_text(json.dumps(payload, indent=1))

    fig, axes = plt.subplots(len(ex.NS), len(ex.KS), figsize=(13, 7), sharex=True)
    for i, n in enumerate(ex.NS):
        for j, k in enumerate(ex.KS):
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
            if i == len(ex.NS) - 1:
                ax.set_xlabel("ε")
            if j == 0:
                ax.set_ylabel("max error α (β = 0.05)")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Laplace vs SmallDB, |X| = 3 (dotted: crossing of the bounds, if in range)")
    fig.tight_layout()
    fig.savefig(OUT / "smalldb.png", dpi=110)
    print(f"wrote {OUT / 'smalldb.md'} in {elapsed:.1f} s")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
