"""Compare every applicable mechanism for one statistic over a range of ε.

A *simulation*, not a release: each mechanism runs ``trials`` times per ε with
seeded (non-secure) randomness on public or synthetic data — or, for
planning, on the analyst's own data, in which case every output is labelled
**not private** (the errors are computed against the true value).

The functions return plain rows (one per mechanism × ε: median and mean
absolute error, refusal rate, the guarantee); :func:`to_markdown` and
:func:`plot` render them and :func:`write` saves ``compare.md``,
``compare.json`` and ``compare.png``.  ``instancedp compare`` and
``make demo`` call these.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ParameterError

SYNTHETIC = ("normal", "lognormal", "uniform", "ties")
DEFAULT_EPSILONS = (0.1, 0.25, 0.5, 1.0, 2.0)

# (label, mechanism name, noise family) per statistic; (ε, δ) mechanisms use ``delta``.
_CANDIDATES: dict[str, list[tuple[str, str, str | None]]] = {
    "median": [
        ("smooth · polyplace", "smooth", "polyplace"),
        ("smooth · student_t", "smooth", "student_t"),
        ("smooth · laplace (ε,δ)", "smooth", "laplace"),
        ("exponential", "exponential", None),
        ("ptr (ε,δ)", "ptr", None),
        ("bounded-ls (ε,δ)", "bounded-ls", None),
        ("laplace (global)", "laplace", None),
    ],
    "mean": [
        ("laplace (global)", "laplace", None),
        ("gaussian (ε,δ)", "gaussian", None),
        ("smooth · polyplace", "smooth", "polyplace"),
    ],
    "trimmed-mean": [
        ("smooth · polyplace", "smooth", "polyplace"),
        ("smooth · student_t", "smooth", "student_t"),
        ("laplace (global)", "laplace", None),
    ],
    "sum": [("laplace (global)", "laplace", None), ("gaussian (ε,δ)", "gaussian", None)],
    "count": [("laplace (global)", "laplace", None), ("gaussian (ε,δ)", "gaussian", None)],
    "min": [("smooth · polyplace", "smooth", "polyplace"), ("laplace (global)", "laplace", None)],
    "max": [("smooth · polyplace", "smooth", "polyplace"), ("laplace (global)", "laplace", None)],
    "ratio": [
        ("ksw", "ksw", None),
        ("naive", "naive", None),
        ("bounded-ls (ε,δ)", "bounded-ls", None),
    ],
}
_CANDIDATES["quantile"] = _CANDIDATES["median"]


@dataclass
class CompareResult:
    """Rows plus what they were computed on."""

    rows: list[dict[str, Any]]
    meta: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"meta": self.meta, "rows": self.rows}


def synthetic_data(kind: str = "normal", n: int = 1000, seed: int = 0) -> np.ndarray:
    """Public synthetic data in [0, 100]: normal(50, 10), lognormal, uniform, or
    heavy ties (integers 0–20)."""
    rng = np.random.default_rng(seed)
    if kind == "normal":
        x = rng.normal(50.0, 10.0, n)
    elif kind == "lognormal":
        x = rng.lognormal(2.5, 0.8, n)
    elif kind == "uniform":
        x = rng.uniform(0.0, 100.0, n)
    elif kind == "ties":
        x = rng.integers(0, 21, n).astype(float)
    else:
        raise ParameterError(f"synthetic must be one of {', '.join(SYNTHETIC)}; got {kind!r}")
    return np.clip(x, 0.0, 100.0)


def _true_value(statistic: str, mech: Any, data: np.ndarray) -> float:
    query = getattr(mech, "query", None)
    if query is not None:
        return float(query.value(data))
    if statistic == "ratio":
        return float(np.mean(data))
    q = getattr(mech, "q", 0.5)  # exponential quantile: use the query's own index rule
    from ..session import build_query

    return float(
        build_query(
            "quantile" if q != 0.5 else "median",
            bounds=(mech.lower, mech.upper),
            quantile=None if q == 0.5 else q,
        ).value(data)
    )


def _draws(mech: Any, data: np.ndarray, trials: int, seed: int) -> np.ndarray:
    """``trials`` outputs (NaN = a refusal) with seeded simulation randomness."""
    from ..random import simulation

    sample = getattr(mech, "sample", None)
    if callable(sample):
        try:
            out = np.asarray(sample(data, trials, rng=simulation(seed)), dtype=float)
            if out.shape == (trials,):
                return out
        except TypeError:
            pass
    src = simulation(seed)
    out = np.empty(trials)
    for i in range(trials):
        r = mech.release(data, rng=src)
        out[i] = math.nan if r.value is None else float(r.value)
    return out


def compare(
    data: Any = None,
    statistic: str = "median",
    *,
    bounds: tuple[float, float] | None = None,
    quantile: float | None = None,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    delta: float = 1e-6,
    trials: int | None = None,
    seed: int = 0,
    synthetic: str = "normal",
    n: int = 1000,
    quick: bool = False,
    source: str | None = None,
    public: bool = False,
    ptr_bound: float | None = None,
    mechanisms: Sequence[str] | None = None,
    progress: Any = None,
) -> CompareResult:
    """Simulate each applicable mechanism at each ε; errors against the true value.

    ``data=None`` uses :func:`synthetic_data` (public) with bounds (0, 100) by
    default.  ``trials`` defaults to 100 (``quick``) or 500.  PTR proposes the
    public bound ``ptr_bound`` (default 10·(hi − lo)/n, the spacing of n evenly
    spread points times ten — a planning heuristic, not tuned on the data).
    ``mechanisms`` restricts to some labels.  Data passed in are treated as
    the caller's own (outputs labelled *planning only*, true value withheld)
    unless ``public=True`` says they are public.
    """
    from .. import _validate
    from ..io import read_column
    from ..session import USES_PUBLIC_N, build_mechanism

    statistic = str(statistic).lower().replace("_", "-")
    if statistic not in _CANDIDATES:
        raise ParameterError(
            f"statistic must be one of {', '.join(_CANDIDATES)} for compare; got {statistic!r}"
        )
    eps_list = [_validate.epsilon(e) for e in epsilons]
    if not eps_list:
        raise ParameterError("epsilons must list at least one value")
    delta = _validate.delta(delta, allow_zero=False)
    trials = (100 if quick else 500) if trials is None else int(trials)
    if trials < 1:
        raise ParameterError(f"trials must be an integer >= 1, got {trials!r}")
    if data is None:
        if not isinstance(n, int) or n < 2:
            raise ParameterError(f"n must be an integer >= 2, got {n!r}")
        x = synthetic_data(synthetic, n, seed)
        if statistic == "ratio":
            x = (x > 50.0).astype(float)
        label = f"synthetic {synthetic} data, n={n} (public)"
        if bounds is None and statistic != "ratio":
            bounds = (0.0, 100.0)
    else:
        x = read_column(data)
        label = source or "caller's data: planning only"
    planning = data is not None and not public
    if bounds is not None:
        bounds = _validate.bounds(*bounds)
    if statistic == "quantile" and quantile is None:
        quantile = 0.5
    if ptr_bound is None and bounds is not None:
        ptr_bound = 10.0 * (bounds[1] - bounds[0]) / x.size

    candidates = _CANDIDATES[statistic]
    if mechanisms is not None:
        wanted = set(mechanisms)
        candidates = [c for c in candidates if c[0] in wanted or c[1] in wanted]
    rows: list[dict[str, Any]] = []
    task = None
    if progress is not None:
        task = progress.add_task("compare", total=len(candidates) * len(eps_list))
    t0 = time.perf_counter()
    truth = None
    for ci, (label_m, mname, family) in enumerate(candidates):
        for ei, eps in enumerate(eps_list):
            needs_delta = "(ε,δ)" in label_m
            try:
                mech = build_mechanism(
                    statistic,
                    eps,
                    delta if needs_delta else None,
                    mechanism=mname,
                    bounds=bounds,
                    quantile=quantile,
                    noise=family,
                    ptr_bound=ptr_bound if mname == "ptr" else None,
                    n=int(x.size) if statistic in USES_PUBLIC_N else None,
                    neighbours="substitution" if statistic in USES_PUBLIC_N else "add_remove",
                )
            except (ValueError, ImportError, AttributeError) as exc:
                rows.append(_row(label_m, eps, None, trials, None, skipped=str(exc)))
                if progress is not None:
                    progress.advance(task)
                continue
            if truth is None:
                truth = _true_value(statistic, mech, x)
            out = _draws(mech, x, trials, seed + 7919 * ci + 104729 * ei)
            rows.append(_row(label_m, eps, mech.guarantee, trials, np.abs(out - truth)))
            if progress is not None:
                progress.advance(task)
    meta = {
        "statistic": statistic,
        "data": label,
        "private": False,
        "note": (
            "SIMULATION with seeded randomness — not a private release"
            + ("; computed on the caller's own data for planning only" if planning else "")
        ),
        "n": int(x.size),
        "bounds": list(bounds) if bounds is not None else None,
        "quantile": quantile,
        "delta": delta,
        "trials": trials,
        "seed": seed,
        "ptr_bound": ptr_bound,
        "seconds": round(time.perf_counter() - t0, 3),
        "cpu_count": os.cpu_count(),
    }
    if not planning and truth is not None:
        meta["true_value"] = truth
    return CompareResult(rows, meta)


def _row(
    label: str,
    eps: float,
    guarantee: Any,
    trials: int,
    errors: np.ndarray | None,
    skipped: str | None = None,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "mechanism": label,
        "epsilon": eps,
        "guarantee": guarantee.describe() if guarantee is not None else None,
        "trials": trials,
    }
    if errors is None:
        row.update(median_abs_error=None, mean_abs_error=None, refused=None, skipped=skipped)
        return row
    ok = errors[np.isfinite(errors)]
    row["median_abs_error"] = float(np.median(ok)) if ok.size else None
    row["mean_abs_error"] = float(np.mean(ok)) if ok.size else None
    row["refused"] = float(1 - ok.size / errors.size)
    return row


def to_markdown(result: CompareResult) -> str:
    """A markdown table (one row per mechanism, one column per ε: median |error|)."""
    m = result.meta
    eps = sorted({r["epsilon"] for r in result.rows})
    labels = list(dict.fromkeys(r["mechanism"] for r in result.rows))
    cell = {(r["mechanism"], r["epsilon"]): r for r in result.rows}
    lines = [
        f"**{m['note']}.** Statistic: {m['statistic']}; data: {m['data']}; "
        f"n = {m['n']}; bounds = {m['bounds']}; {m['trials']} trials per cell; seed {m['seed']}.",
        "",
        "How to read it: one row per mechanism, one column per ε (smaller ε is more "
        "private); each cell is the median absolute error of the released value over the "
        "trials (smaller is better). [refused x%]: the share of trials where the mechanism "
        "declined to answer; — : it refused every time; n/a: it does not apply.",
        "",
        "| mechanism | guarantee | " + " | ".join(f"ε={e:g}" for e in eps) + " |",
        "|---|---|" + "---|" * len(eps),
    ]
    for lab in labels:
        g = next(
            (r["guarantee"] for r in result.rows if r["mechanism"] == lab and r["guarantee"]), ""
        )
        kind = "" if not g else ("(ε,δ)-DP" if "," in g else ("zCDP" if "zCDP" in g else "ε-DP"))
        cells = []
        for e in eps:
            r = cell.get((lab, e))
            if r is not None and r.get("refused") == 1.0:
                cells.append("— [refused 100%]")
                continue
            if r is None or r.get("median_abs_error") is None:
                cells.append("n/a" if r is None or r.get("skipped") is None else "skipped")
                continue
            s = f"{r['median_abs_error']:.4g}"
            if r["refused"]:
                s += f" [refused {100 * r['refused']:.0f}%]"
            cells.append(s)
        lines.append(f"| {lab} | {kind} | " + " | ".join(cells) + " |")
    if "true_value" in m:
        lines += ["", f"True value on this public data: {m['true_value']:.6g}."]
    lines += ["", f"δ = {m['delta']:g} for (ε,δ) mechanisms; machine cores: {m['cpu_count']}."]
    skipped = [r for r in result.rows if r.get("skipped")]
    if skipped:
        lines += [
            "",
            "Skipped: " + "; ".join(f"{r['mechanism']} ({r['skipped']})" for r in skipped[:3]),
        ]
    return "\n".join(lines)


def plot(result: CompareResult, path: str | Path) -> Path:
    """Median absolute error vs ε, log–log, one line per mechanism."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    labels = list(dict.fromkeys(r["mechanism"] for r in result.rows))
    for lab in labels:
        pts = [
            (r["epsilon"], r["median_abs_error"])
            for r in result.rows
            if r["mechanism"] == lab and r.get("median_abs_error") not in (None, 0)
        ]
        if pts:
            xs, ys = zip(*sorted(pts), strict=True)
            ax.plot(xs, ys, marker="o", label=lab)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel("median |error|")
    m = result.meta
    ax.set_title(f"{m['statistic']} — {m['data']}\n(simulation, not a private release)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p


def write(result: CompareResult, out: str | Path, name: str = "compare") -> list[Path]:
    """Write ``<name>.md``, ``<name>.json`` and ``<name>.png`` into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    md = out / f"{name}.md"
    md.write_text(f"# Mechanism comparison\n\n{to_markdown(result)}\n\n![plot]({name}.png)\n")
    js = out / f"{name}.json"
    js.write_text(json.dumps(result.as_dict(), indent=2))
    png = plot(result, out / f"{name}.png")
    return [md, js, png]


def reproduce(outdir: str | Path, quick: bool = True) -> list[Path]:
    """Write compare.md/.json/.png (the default comparison) into ``outdir``; the paths."""
    return write(compare(quick=quick), outdir, name="compare")
