"""Private medians on synthetic data: the comparison of docs/results/median.md.

Protocol of Gillenwater, Joseph & Kulesza 2021 (google-research ``dp_multiq``):
data N(0, 5) and U(−5, 5), public bounds [−100, 100], n ∈ {100, 1000, 10000},
ε ∈ {0.1, 0.5, 1, 2}, δ = 1e−6, substitution neighbours; each trial draws a
fresh dataset and one release per method, clamped to the public bounds
(post-processing).  Metrics: mean absolute error
against the sample median, and the number of "misclassified points" (data
points between the estimate and the sample median).

Methods: ``SmoothSensitivityMechanism`` with every noise family at its default
γ (zCDP families calibrated to (ε, δ) through the CKS 2020 conversion);
NRS's Laplace (β = ε/(2 ln(2/δ)), noise Lap(2·SS/ε)); propose-test-release
with a public bound rule; the exponential mechanism (Smith 2011); and the
peers ``diffprivlib.tools.median`` and OpenDP's ``make_private_quantile``
(skipped when not installed — the optional ``bench`` extra).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..mechanisms.ptr import ProposeTestRelease
from ..mechanisms.quantile import exponential_quantile_sample
from ..mechanisms.smooth import SmoothSensitivityMechanism
from ..queries.order import Median
from ..random import simulation
from .gamma_study import DISTRIBUTIONS, FAMILIES, ZCDP_FAMILIES, cdp_epsilon_for

LOWER, UPPER = -100.0, 100.0
DELTA = 1e-6


# Integer-valued data with many ties, as in real tables (ages, counts, prices
# in whole units): the local sensitivity of the median is 0 inside a run of
# equal values, which is where smooth sensitivity pays off.
TIED_DISTRIBUTIONS: dict[str, Callable[[np.random.Generator, int], np.ndarray]] = {
    "integers round(N(40,12))": lambda g, n: np.clip(np.round(g.normal(40.0, 12.0, n)), 0, 99),
    "integers U{0..20}": lambda g, n: g.integers(0, 21, n).astype(float),
}


def ptr_bound(n: int, epsilon: float, delta: float, lower: float, upper: float) -> float:
    """The public bound PTR proposes: what A^(T)(x) would be if the data filled a tenth
    of the bounds evenly, T the test's threshold at ε/2 — b = 2(T + 1)(upper − lower)/(10 n)."""
    t = math.log(1 / delta) / (epsilon / 2)
    return 2 * (t + 1) * (upper - lower) / (10 * n)


def _diffprivlib() -> Any:
    """diffprivlib.tools, or None.  diffprivlib 0.6.6 imports sklearn models that
    newer scikit-learn breaks; only ``tools`` is needed, so ``models`` is stubbed."""
    try:
        if "diffprivlib" not in sys.modules:
            sys.modules.setdefault("diffprivlib.models", types.ModuleType("diffprivlib.models"))
        import diffprivlib.tools as tools  # noqa: PLC0415

        return tools
    except Exception:  # noqa: BLE001 - any import failure means "peer unavailable"
        return None


def _opendp_median(n: int, epsilon: float, grid: int = 20001) -> Callable | None:
    """OpenDP's exponential-mechanism quantile on a candidate grid (0.01 apart), or None.

    Known-size vector domain; a substitution is symmetric distance 2, and the
    noise scale is found by OpenDP's own binary search so that the map gives ε.
    """
    try:
        import opendp.prelude as dp  # noqa: PLC0415
    except Exception:  # noqa: BLE001
        return None
    dp.enable_features("contrib")
    candidates = np.linspace(LOWER, UPPER, grid).tolist()
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=n)

    def make(scale: float) -> Any:
        return dp.m.make_private_quantile(
            domain, dp.symmetric_distance(), dp.max_divergence(), candidates, 0.5, scale
        )

    scale = dp.binary_search_param(make, d_in=2, d_out=epsilon)
    meas = make(scale)
    return lambda x: float(meas(np.clip(x, LOWER, UPPER).tolist()))


def methods(n: int, epsilon: float, delta: float = DELTA) -> dict[str, Callable]:
    """name -> f(data, rng) returning one release (``None`` for a refusal)."""
    median = Median(LOWER, UPPER, neighbours="substitution")
    out: dict[str, Callable] = {}
    for fam in FAMILIES:
        eps_f = cdp_epsilon_for(epsilon, delta) if fam in ZCDP_FAMILIES else epsilon
        mech = SmoothSensitivityMechanism(
            median, eps_f, noise=fam, delta=delta if fam == "laplace" else None
        )
        out[f"smooth {fam}"] = lambda x, g, m=mech: float(m.sample(x, 1, simulation(g))[0])
    nrs = SmoothSensitivityMechanism(
        median, epsilon, gamma=epsilon / (2 * math.log(2 / delta)), noise="laplace", delta=delta
    )
    out["NRS Laplace"] = lambda x, g: float(nrs.sample(x, 1, simulation(g))[0])
    ptr = ProposeTestRelease(median, ptr_bound(n, epsilon, delta, LOWER, UPPER), epsilon, delta)
    out["PTR"] = lambda x, g: ptr.release(x, rng=simulation(g)).value
    out["exponential (Smith)"] = lambda x, g: float(
        exponential_quantile_sample(x, 0.5, LOWER, UPPER, epsilon, 1, g)[0]
    )
    tools = _diffprivlib()
    if tools is not None:
        import warnings  # noqa: PLC0415

        def dpl(x: np.ndarray, g: np.random.Generator) -> float:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return float(
                    tools.median(
                        x,
                        epsilon=epsilon,
                        bounds=(LOWER, UPPER),
                        random_state=int(g.integers(2**31)),
                    )
                )

        out["diffprivlib median"] = dpl
    odp = _opendp_median(n, epsilon)
    if odp is not None:
        out["OpenDP quantile"] = lambda x, g: odp(x)
    return out


def run(
    ns: tuple[int, ...] = (100, 1000, 10000),
    epsilons: tuple[float, ...] = (0.1, 0.5, 1.0, 2.0),
    trials: int = 500,
    seed: int = 2021,
    quick: bool = False,
    distributions: dict[str, Callable[[np.random.Generator, int], np.ndarray]] | None = None,
) -> dict[str, Any]:
    """Rows of (distribution, n, ε, method, MAE, its standard error, rank error, refusals).

    ``distributions`` defaults to the protocol's N(0, 5) and U(−5, 5);
    :data:`TIED_DISTRIBUTIONS` are integer-valued data with many ties.
    """
    if quick:
        ns, epsilons, trials = (100, 1000), (1.0,), 50
    median = Median(LOWER, UPPER, neighbours="substitution")
    rows = []
    t0 = time.time()
    for dist, draw in (distributions or DISTRIBUTIONS).items():
        for n in ns:
            for eps in epsilons:
                gen = np.random.default_rng([seed, n, int(eps * 1000), len(dist)])
                ms = methods(n, eps)
                errs: dict[str, list[float]] = {k: [] for k in ms}
                ranks: dict[str, list[float]] = {k: [] for k in ms}
                refused = dict.fromkeys(ms, 0)
                for _ in range(trials):
                    x = draw(gen, n)
                    xs = np.sort(x)
                    target = median.value(x)
                    r0 = np.searchsorted(xs, target)
                    for name, f in ms.items():
                        est = f(x, gen)
                        if est is None:
                            refused[name] += 1
                            continue
                        # Clamping to the public bounds is free post-processing; the
                        # exponential-mechanism methods never leave them anyway.
                        est = min(max(est, LOWER), UPPER)
                        errs[name].append(abs(est - target))
                        ranks[name].append(abs(int(np.searchsorted(xs, est)) - int(r0)))
                for name in ms:
                    e = np.array(errs[name])
                    rows.append(
                        {
                            "distribution": dist,
                            "n": n,
                            "epsilon": eps,
                            "method": name,
                            "mae": float(e.mean()) if e.size else math.nan,
                            "mae_se": float(e.std(ddof=1) / math.sqrt(e.size))
                            if e.size > 1
                            else math.nan,
                            "rank_error": float(np.mean(ranks[name])) if e.size else math.nan,
                            "refusal_rate": refused[name] / trials,
                            "trials": trials,
                        }
                    )
    return {
        "machine": {"cpu_count": os.cpu_count()},
        "seconds": time.time() - t0,
        "delta": DELTA,
        "bounds": [LOWER, UPPER],
        "rows": rows,
    }


def peer_ratios(rows: list[dict[str, Any]], method: str = "smooth polyplace") -> list[dict]:
    """Per cell: MAE of ``method`` ÷ MAE of the best available peer (< 1: ``method`` wins)."""
    peers = ("diffprivlib median", "OpenDP quantile")
    cells: dict[tuple, dict[str, float]] = {}
    for r in rows:
        cells.setdefault((r["distribution"], r["n"], r["epsilon"]), {})[r["method"]] = r["mae"]
    out = []
    for (dist, n, eps), m in cells.items():
        avail = {p: m[p] for p in peers if p in m and math.isfinite(m[p])}
        if method not in m or not avail:
            continue
        best = min(avail, key=avail.get)
        out.append(
            {
                "distribution": dist,
                "n": n,
                "epsilon": eps,
                "method_mae": m[method],
                "best_peer": best,
                "peer_mae": avail[best],
                "ratio": m[method] / avail[best],
            }
        )
    return out


# ---- rendering (moved from benchmarks) ----


def _f(v: float) -> str:
    return "–" if not math.isfinite(v) else f"{v:.3g}"


def write(res: dict, outdir: Path, name: str = "median") -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    rows = res["rows"]
    dists = ", ".join(dict.fromkeys(r["distribution"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    ratios = peer_ratios(rows, "smooth polyplace")
    ratios_exp = peer_ratios(rows, "exponential (Smith)")
    lines = [
        "# Private medians (Gillenwater, Joseph & Kulesza 2021 protocol)",
        "",
        f"Generated by `benchmarks/median.py{' --ties' if name != 'median' else ''}` in "
        f"{res['seconds']:.0f} s on a machine with "
        f"{res['machine']['cpu_count']} cores.  Data {dists}, bounds "
        f"[{res['bounds'][0]:g}, {res['bounds'][1]:g}], δ = {res['delta']:g}, substitution "
        f"neighbours, {rows[0]['trials']} trials per cell (a fresh dataset each); every release is "
        "clamped to the bounds (post-processing).  MAE against the "
        "sample median; rank error = data points between the estimate and the sample median.  "
        "zCDP families are calibrated to the same (ε, δ) through the CKS 2020 conversion.  PTR "
        "proposes b = 2(T + 1)(upper − lower)/(10n), T = ln(1/δ)/(ε/2) (a public guess that the "
        "data fill a tenth of the bounds); its MAE is over the releases it did not refuse.",
        "",
        "## Default smooth-sensitivity median (PolyPlace, default γ) vs the best peer",
        "",
        "Ratio = MAE(instancedp) ÷ MAE(best of diffprivlib, OpenDP); < 1 means instancedp wins.",
        "",
        "| distribution | n | ε | smooth polyplace | exponential (Smith) | best peer | peer MAE "
        "| ratio (polyplace) | ratio (exponential) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    exp = {(r["distribution"], r["n"], r["epsilon"]): r for r in ratios_exp}
    for r in ratios:
        e = exp.get((r["distribution"], r["n"], r["epsilon"]))
        lines.append(
            f"| {r['distribution']} | {r['n']} | {r['epsilon']:g} | {r['method_mae']:.3g} | "
            f"{_f(e['method_mae']) if e else '–'} | {r['best_peer']} | {r['peer_mae']:.3g} | "
            f"{r['ratio']:.2f} | {_f(e['ratio']) if e else '–'} |"
        )
    for dist in dict.fromkeys(r["distribution"] for r in rows):
        lines += [
            "",
            f"## {dist}: MAE (rank error) per method",
            "",
            "| method | "
            + " | ".join(
                f"n={n}, ε={e:g}"
                for n in sorted({r["n"] for r in rows})
                for e in sorted({r["epsilon"] for r in rows})
            )
            + " |",
        ]
        cols = [
            (n, e)
            for n in sorted({r["n"] for r in rows})
            for e in sorted({r["epsilon"] for r in rows})
        ]
        lines.append("|---|" + "---|" * len(cols))
        for m in methods:
            cell = {
                (r["n"], r["epsilon"]): r
                for r in rows
                if r["distribution"] == dist and r["method"] == m
            }
            vals = []
            for c in cols:
                r = cell.get(c)
                if r is None:
                    vals.append("")
                    continue
                txt = f"{_f(r['mae'])} ({_f(r['rank_error'])})"
                if r["refusal_rate"] > 0:
                    txt += f" ⊥{r['refusal_rate']:.0%}"
                vals.append(txt)
            lines.append(f"| {m} | " + " | ".join(vals) + " |")
    (outdir / f"{name}.md").write_text("\n".join(lines) + "\n")
    (outdir / f"{name}.json").write_text(json.dumps(res, indent=1, default=float))
    _plot(rows, name, outdir)


def _plot(rows: list[dict], name: str, outdir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dists = list(dict.fromkeys(r["distribution"] for r in rows))
    ns = sorted({r["n"] for r in rows})
    show = [
        "smooth polyplace",
        "smooth student_t",
        "NRS Laplace",
        "PTR",
        "exponential (Smith)",
        "diffprivlib median",
        "OpenDP quantile",
    ]
    fig, axes = plt.subplots(
        len(dists), len(ns), figsize=(4 * len(ns), 3.3 * len(dists)), squeeze=False
    )
    for i, d in enumerate(dists):
        for j, n in enumerate(ns):
            ax = axes[i][j]
            for m in show:
                rs = sorted(
                    (
                        r
                        for r in rows
                        if r["distribution"] == d
                        and r["n"] == n
                        and r["method"] == m
                        and math.isfinite(r["mae"])
                    ),
                    key=lambda r: r["epsilon"],
                )
                if rs:
                    ax.loglog(
                        [r["epsilon"] for r in rs],
                        [r["mae"] for r in rs],
                        marker="o",
                        lw=1,
                        label=m,
                    )
            ax.set_title(f"{d}, n = {n}", fontsize=9)
            ax.set_xlabel("ε")
            ax.set_ylabel("MAE")
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(outdir / f"{name}.png", dpi=120)


def reproduce(outdir: str | Path, quick: bool = True, ties: bool = False) -> list[Path]:
    """Write median.md/.json/.png (``ties``: median_ties.*) into ``outdir``; the paths."""
    outdir = Path(outdir)
    if ties:
        ns, trials = ((1000,), 40) if quick else ((1000, 10000), 300)
        res = run(ns=ns, trials=trials, distributions=TIED_DISTRIBUTIONS)
        name = "median_ties"
    else:
        res, name = run(quick=quick), "median"
    write(res, outdir, name)
    return [outdir / f"{name}.{ext}" for ext in ("md", "json", "png")]
