"""Accuracy of private quantiles against the peers, per neighbour relation.

One benchmark, one JSON: ``docs/results/accuracy.{md,json,png}`` (every
configuration, synthetic cells for tuning and real columns for reporting) and
``docs/results/neighbours.md`` (the same real cells read per relation: the
default under add/remove against every add/remove peer configuration, under
substitution against every substitution one).

Peers run in their own virtual environments, created by this script and cached
by version under ``.bench-envs/`` (git-ignored): diffprivlib (scikit-learn
< 1.6), OpenDP (``make_private_quantile`` on several candidate grids, with an
unsized domain for add/remove and a sized one — one substitution is d_in = 2 —
for substitution) and Tumult Core (``NoisyQuantile``, add/remove; it pins
numpy 1.26 and pandas 1.5).  Every method sees the same subsamples (drawn
once, with replacement, from each column, seeded) and is scored by the mean
absolute error over the trials and the median absolute error, against the
subsample's own order statistic x_m, m = max(1, ⌈q·n⌉).

Bounds are public: "loose" puts the column's range in 5 % of the bounds
(lower = min − 2w, upper = max + 17w, w = max − min of the whole column);
"x100" in 1 % (for the bound-free comparison).  The declared resolution of a
column (1 for documented integer counts) is public schema, never inferred.

``--quick``: n ∈ {101, 1001}, 500 trials, a subset of columns (≤ 2 minutes
with the peers' environments present; a missing environment is skipped with
the reason in the log).  Full: n ∈ {101, 1001, 10001}, every column.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ENVS = ROOT / ".bench-envs"
PEER_ENVS = {
    "diffprivlib": ["diffprivlib==0.6.6", "scikit-learn<1.6"],
    "opendp": ["opendp==0.12.0", "numpy"],
    "tumult": ["tmlt.core==0.20.0"],
}


# --------------------------------------------------------------------------- data


def synthetic(name: str, size: int, rng: np.random.Generator) -> np.ndarray:
    if name == "normal":
        return rng.normal(50, 10, size)
    if name == "lognormal":
        return rng.lognormal(3, 1, size)
    if name == "uniform":
        return rng.uniform(0, 100, size)
    if name == "pareto":
        return (rng.pareto(1.5, size) + 1) * 10
    if name == "poisson":
        return rng.poisson(20, size).astype(float)
    if name == "rounded-lognormal":
        return np.round(rng.lognormal(4, 1, size))
    if name == "mixture":
        x = rng.normal(100, 20, size)
        mask = rng.random(size)
        x[mask < 0.3] = 0.0  # point masses
        x[(mask >= 0.3) & (mask < 0.4)] = 50.0
        return x
    raise ValueError(name)


SYNTHETIC = {  # name → declared resolution (integer types are declared)
    "normal": None,
    "lognormal": None,
    "uniform": None,
    "pareto": None,
    "poisson": 1.0,
    "rounded-lognormal": 1.0,
    "mixture": None,
}


def _sklearn_data() -> Path | None:
    for p in sorted(ENVS.glob("*/lib/python*/site-packages/sklearn/datasets/data")):
        return p
    return None


def real_columns(log) -> dict[str, tuple[np.ndarray, float | None]]:
    """Public columns shipped offline: the repo's data, matplotlib's and
    scikit-learn's sample data.  Resolution 1 where the documentation says counts."""
    out: dict[str, tuple[np.ndarray, float | None]] = {}
    import csv

    with open(ROOT / "src/instancedp/data/goog.csv") as f:
        rows = list(csv.DictReader(f))
    out["goog-volume"] = (np.array([float(r["volume"]) for r in rows]), 1.0)
    out["goog-close"] = (np.array([float(r["close"]) for r in rows]), None)
    sk = _sklearn_data()
    if sk is None:
        log("real columns from scikit-learn skipped: no scikit-learn in .bench-envs")
        return out
    with gzip.open(sk / "diabetes_data_raw.csv.gz", "rt") as f:
        d = np.loadtxt(f)
    out["diabetes-age"] = (d[:, 0], 1.0)  # years
    out["diabetes-tc"] = (d[:, 4], 1.0)  # total cholesterol, mg/dl, integer
    w = np.loadtxt(sk / "wine_data.csv", delimiter=",", skiprows=1)
    out["wine-proline"] = (w[:, 13], 1.0)
    b = np.loadtxt(sk / "breast_cancer.csv", delimiter=",", skiprows=1)
    out["cancer-area"] = (b[:, 3], None)
    return out


def bounds_for(col: np.ndarray, kind: str) -> tuple[float, float]:
    lo, hi = float(col.min()), float(col.max())
    w = max(hi - lo, 1.0)
    if kind == "loose":
        return lo - 2 * w, hi + 17 * w
    if kind == "x100":
        return lo - 10 * w, hi + 89 * w
    raise ValueError(kind)


# --------------------------------------------------------------------------- instancedp


def our_methods(cell: dict) -> dict:
    """name → (relation, release function x, source → value)."""
    sys.path.insert(0, str(ROOT / "src"))
    from instancedp.mechanisms.quantile import ExponentialQuantile
    from instancedp.mechanisms.unbounded import UnboundedQuantile
    from instancedp.queries.order import Quantile

    q, eps, lo, hi, res = (
        cell["q"],
        cell["epsilon"],
        cell["lower"],
        cell["upper"],
        cell["resolution"],
    )

    def query(rel):
        qq = Quantile(q, lo, hi)
        qq.neighbours = rel
        return qq

    out = {}
    for rel, tag in (("add_remove", "ar"), ("substitution", "sub")):
        out[f"em-uniform/{tag}"] = (rel, ExponentialQuantile(query(rel), eps))
        out[f"em-log/{tag}"] = (rel, ExponentialQuantile(query(rel), eps, base="log"))
        if res is not None:
            out[f"em-grid/{tag}"] = (
                rel,
                ExponentialQuantile(query(rel), eps, base="grid", resolution=res),
            )
        out[f"default/{tag}"] = out[f"em-grid/{tag}" if res is not None else f"em-log/{tag}"]
        out[f"unbounded/{tag}"] = (rel, UnboundedQuantile(q, eps, neighbours=rel))
    return out


def default_rule(resolution: float | None) -> str:
    """The proposed default, from public information only: the declared
    resolution picks the grid base, else the log base (both relations)."""
    return "grid" if resolution is not None else "log"


def run_ours(cell: dict, samples: np.ndarray, seed: int, quick: bool) -> dict[str, np.ndarray]:
    from instancedp.random import simulation

    out = {}
    for name, (_, mech) in our_methods(cell).items():
        if name.startswith("default/") or (quick and name == "unbounded/sub"):
            continue
        # bounded variants on the loose cells, the bound-free one on the x100 cells
        if (cell["bounds"] == "x100") != name.startswith("unbounded/"):
            continue
        src = simulation(seed)
        out[name] = np.array([mech.release(x, src).value for x in samples])
    if cell["bounds"] == "loose":
        for tag in ("ar", "sub"):
            base = "em-grid" if cell["resolution"] is not None else "em-log"
            out[f"default/{tag}"] = out[f"{base}/{tag}"]
    return out


# --------------------------------------------------------------------------- peers (in their envs)


def peer_grids(cell: dict) -> dict[str, np.ndarray]:
    lo, hi, res = cell["lower"], cell["upper"], cell["resolution"]
    grids = {"grid1k": np.linspace(lo, hi, 1001), "grid10k": np.linspace(lo, hi, 10001)}
    if res is not None and (hi - lo) / res <= 20_000:
        grids["natural"] = lo + res * np.arange(math.floor((hi - lo) / res) + 1)
    return grids


def peer_main(peer: str, job: Path) -> None:
    data = np.load(job / "samples.npz")
    cells = json.loads((job / "cells.json").read_text())
    results = {}
    for cell in cells:
        key = cell["key"]
        samples = data[key]
        rng = np.random.default_rng(cell["seed"])
        if peer == "diffprivlib":
            import diffprivlib.tools as dpl

            vals = [
                dpl.quantile(
                    x,
                    cell["q"],
                    epsilon=cell["epsilon"],
                    bounds=(cell["lower"], cell["upper"]),
                    random_state=int(rng.integers(2**31)),
                )
                for x in samples
            ]
            results[f"{key}|diffprivlib/sub"] = vals
        elif peer == "opendp":
            import opendp.prelude as dp

            dp.enable_features("contrib")
            for gname, grid in peer_grids(cell).items():
                cands = [float(c) for c in grid]
                for tag, size, d_in in (("ar", None, 1), ("sub", len(samples[0]), 2)):
                    atom = dp.atom_domain(T=float, nan=False)
                    dom = dp.vector_domain(atom, size=size) if size else dp.vector_domain(atom)

                    def make(s, dom=dom, cands=cands, q=cell["q"]):
                        return dp.m.make_private_quantile(
                            dom,
                            dp.symmetric_distance(),
                            dp.max_divergence(),
                            candidates=cands,
                            alpha=q,
                            scale=s,
                        )

                    # the privacy map does not depend on the candidates: calibrate on two
                    scale = dp.binary_search_param(
                        lambda s, dom=dom, ends=(cands[0], cands[-1]): make(s, dom, list(ends)),
                        d_in=d_in,
                        d_out=cell["epsilon"],
                    )
                    m = make(scale)
                    assert m.map(d_in) <= cell["epsilon"] * (1 + 1e-9)
                    results[f"{key}|opendp-{gname}/{tag}"] = [
                        m([float(v) for v in x]) for x in samples
                    ]
        elif peer == "tumult":
            import pandas as pd
            import sympy
            from tmlt.core.domains.numpy_domains import NumpyFloatDomain
            from tmlt.core.domains.pandas_domains import PandasSeriesDomain
            from tmlt.core.measurements.pandas_measurements.series import NoisyQuantile
            from tmlt.core.measures import PureDP

            eps = sympy.Rational(str(cell["epsilon"]))
            m = NoisyQuantile(
                PandasSeriesDomain(NumpyFloatDomain()),
                PureDP(),
                cell["q"],
                cell["lower"],
                cell["upper"],
                eps,
            )
            results[f"{key}|tumult/ar"] = [float(m(pd.Series(x))) for x in samples]
    np.savez(job / f"out-{peer}.npz", **{k: np.asarray(v, float) for k, v in results.items()})


def ensure_env(peer: str, log, create: bool) -> Path | None:
    py = ENVS / peer / "bin" / "python"
    if py.exists():
        return py
    if not create:
        log(f"peer {peer} skipped: no environment at {ENVS / peer} (run the full benchmark once)")
        return None
    log(f"creating {ENVS / peer} with {PEER_ENVS[peer]}")
    subprocess.run([sys.executable, "-m", "venv", str(ENVS / peer)], check=True)
    subprocess.run([str(py), "-m", "pip", "-q", "install", *PEER_ENVS[peer]], check=True)
    return py


def peer_versions(py: Path, peer: str) -> str:
    dist = {"diffprivlib": "diffprivlib", "opendp": "opendp", "tumult": "tmlt.core"}[peer]
    r = subprocess.run(
        [str(py), "-c", f"from importlib.metadata import version; print(version('{dist}'))"],
        capture_output=True,
        text=True,
    )
    return r.stdout.strip() or "unknown"


# --------------------------------------------------------------------------- driver


def build_cells(args, log) -> tuple[list[dict], dict[str, np.ndarray]]:
    rng = np.random.default_rng(20261124)
    columns: dict[str, tuple[np.ndarray, float | None, str]] = {}
    syn = list(SYNTHETIC) if not args.quick else ["lognormal", "poisson", "mixture"]
    for name in syn:
        columns[name] = (synthetic(name, 20000, rng), SYNTHETIC[name], "synthetic")
    real = real_columns(log)
    if args.quick:
        real = {k: real[k] for k in ("goog-volume", "diabetes-tc", "cancer-area") if k in real}
    for name, (col, res) in real.items():
        columns[name] = (col, res, "real")
    ns = [101, 1001] if args.quick else [101, 1001, 10001]
    cells, samples = [], {}
    seed = 0
    for name, (col, res, kind) in columns.items():
        for n in ns:
            sub = col[rng.integers(0, col.size, size=(args.trials, n))]
            for bkind in ("loose", "x100"):
                lo, hi = bounds_for(col, bkind)
                for eps in (0.25, 1.0):
                    for q in (0.5, 0.9):
                        key = f"{name}|n={n}|eps={eps}|q={q}|{bkind}"
                        seed += 1
                        cells.append(
                            dict(
                                key=key,
                                column=name,
                                kind=kind,
                                n=n,
                                epsilon=eps,
                                q=q,
                                bounds=bkind,
                                lower=lo,
                                upper=hi,
                                resolution=res,
                                seed=seed,
                            )
                        )
                        samples[key] = sub
    return cells, samples


def truth(samples: np.ndarray, q: float) -> np.ndarray:
    n = samples.shape[1]
    m = max(1, math.ceil(q * n - 1e-12))
    return np.sort(samples, axis=1)[:, m - 1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--trials", type=int, default=500)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument(
        "--report-only", action="store_true", help="rewrite the reports from the JSON in --out"
    )
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    ap.add_argument("--job", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.peer:
        peer_main(args.peer, args.job)
        return 0
    if args.report_only:
        summary = json.loads((args.out / "accuracy.json").read_text())
        write_reports(summary, args.out)
        return 0
    t0 = time.time()
    logs: list[str] = []

    def log(msg: str) -> None:
        logs.append(msg)
        print(msg, flush=True)

    cells, samples = build_cells(args, log)
    log(f"{len(cells)} cells, {args.trials} trials each")
    results: dict[str, dict[str, np.ndarray]] = {c["key"]: {} for c in cells}
    versions = {}
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp)
        np.savez(job / "samples.npz", **samples)
        # peers only on the loose bounds (the x100 cells compare the bound-free release)
        peer_cells = [c for c in cells if c["bounds"] == "loose"]
        (job / "cells.json").write_text(json.dumps(peer_cells))
        procs = {}
        if not args.no_peers:
            for peer in PEER_ENVS:
                py = ensure_env(peer, log, create=not args.quick)
                if py is None:
                    continue
                versions[peer] = peer_versions(py, peer)
                procs[peer] = subprocess.Popen(
                    [str(py), __file__, "--peer", peer, "--job", str(job)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
        for cell in cells:
            results[cell["key"]].update(
                run_ours(cell, samples[cell["key"]], cell["seed"], args.quick)
            )
        log(f"instancedp done at {time.time() - t0:.0f} s")
        for peer, p in procs.items():
            out, _ = p.communicate()
            if p.returncode != 0:
                log(f"peer {peer} failed: {out[-2000:]}")
                continue
            got = np.load(job / f"out-{peer}.npz")
            for k in got.files:
                full = k[: k.rindex("|")]
                results[full][k[k.rindex("|") + 1 :]] = got[k]
            log(f"peer {peer} done at {time.time() - t0:.0f} s")
    summary = summarise(cells, samples, results)
    summary.update(
        versions=versions,
        log=logs,
        quick=args.quick,
        trials=args.trials,
        seconds=round(time.time() - t0, 1),
    )
    write_reports(summary, args.out)
    log(f"total {time.time() - t0:.0f} s")
    return 0


def summarise(cells, samples, results) -> dict:
    table = []
    for cell in cells:
        t = truth(samples[cell["key"]], cell["q"])
        row = {k: v for k, v in cell.items() if k not in ("lower", "upper")}
        row["lower"], row["upper"] = cell["lower"], cell["upper"]
        row["mae"], row["medae"] = {}, {}
        for name, vals in results[cell["key"]].items():
            err = np.abs(np.asarray(vals, float) - t)
            row["mae"][name] = float(err.mean())
            row["medae"][name] = float(np.median(err))
        table.append(row)
    return {"cells": table}


def _ratios(rows, ours: str, peer: str) -> list[tuple[str, float]]:
    out = []
    for r in rows:
        if ours in r["mae"] and peer in r["mae"]:
            # floor: an exact hit (MAE 0) on a grid counts as 1e-9 of the column's width
            floor = 1e-9 * (r["upper"] - r["lower"])
            out.append((r["key"], max(r["mae"][ours], floor) / max(r["mae"][peer], floor)))
    return out


def _gm(vals: list[float]) -> float:
    return float(np.exp(np.mean(np.log(vals)))) if vals else math.nan


def write_reports(summary: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rows = summary["cells"]
    peers_ar = sorted(
        {
            k
            for r in rows
            for k in r["mae"]
            if k.endswith("/ar") and k.split("/")[0].startswith(("opendp", "tumult"))
        }
    )
    peers_sub = sorted(
        {
            k
            for r in rows
            for k in r["mae"]
            if k.endswith("/sub") and k.split("/")[0].startswith(("opendp", "diffprivlib"))
        }
    )
    ours = sorted({k for r in rows for k in r["mae"]} - set(peers_ar) - set(peers_sub))
    comp = {}
    for kind in ("synthetic", "real"):
        sel = [r for r in rows if r["kind"] == kind and r["bounds"] == "loose"]
        for tag, peers in (("ar", peers_ar), ("sub", peers_sub)):
            for mine in [o for o in ours if o.endswith("/" + tag)]:
                for p in peers:
                    rs = _ratios(sel, mine, p)
                    if rs:
                        v = [x for _, x in rs]
                        comp[f"{kind}|{mine}|{p}"] = {
                            "geomean": _gm(v),
                            "max": max(v),
                            "min": min(v),
                            "cells": len(v),
                            "cells_le_1": sum(x <= 1.0 for x in v),
                            "cells_le_0.5": sum(x <= 0.5 for x in v),
                            "losing": sorted([k for k, x in rs if x > 1.0]),
                        }
    # bound-free at x100 bounds vs the best bounded peer at the loose bounds of the same cell
    unb = {}
    for kind in ("synthetic", "real"):
        for tag, peers in (("ar", peers_ar), ("sub", peers_sub)):
            v = []
            for r in rows:
                if r["kind"] != kind or r["bounds"] != "x100":
                    continue
                loose = next(x for x in rows if x["key"] == r["key"].replace("|x100", "|loose"))
                best = [loose["mae"][p] for p in peers if p in loose["mae"]]
                if best and f"unbounded/{tag}" in r["mae"]:
                    floor = 1e-9 * (loose["upper"] - loose["lower"])
                    v.append(max(r["mae"][f"unbounded/{tag}"], floor) / max(min(best), floor))
            if v:
                unb[f"{kind}|{tag}"] = {
                    "geomean": _gm(v),
                    "max": max(v),
                    "cells": len(v),
                    "cells_le_2": sum(x <= 2 for x in v),
                }
    summary["comparisons"] = comp
    summary["unbounded_vs_best_bounded_peer"] = unb
    (out / "accuracy.json").write_text(json.dumps(summary, indent=1, default=float))
    _markdown(summary, out, peers_ar, peers_sub, ours)
    _plot(summary, out)


def _markdown(summary, out: Path, peers_ar, peers_sub, ours) -> None:
    rows = summary["cells"]
    comp = summary["comparisons"]
    head = (
        f"Generated by `benchmarks/accuracy.py{' --quick' if summary['quick'] else ''}` "
        f"({summary['trials']} trials per cell, {summary['seconds']} s). Peers: "
        + ", ".join(f"{k} {v}" for k, v in summary["versions"].items())
        + ".\n"
    )
    lines = [
        "# Accuracy of private quantiles\n",
        head,
        "MAE ratio = instancedp's MAE ÷ the peer's on the same subsamples (< 1: instancedp "
        "is more accurate). Loose bounds: the column's range fills 5 % of them.\n",
        "## Geometric mean of the MAE ratio, per peer configuration\n",
        "| data | instancedp | peer | geomean | min | max | cells ≤ 1 | cells ≤ 0.5 | cells |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, c in sorted(comp.items()):
        kind, mine, p = key.split("|")
        lines.append(
            f"| {kind} | {mine} | {p} | {c['geomean']:.3f} | {c['min']:.3f} | "
            f"{c['max']:.3f} | {c['cells_le_1']} | {c['cells_le_0.5']} | {c['cells']} |"
        )
    lines += [
        "",
        "## Bound-free (bounds=None) vs the best bounded peer (x100 cells)\n",
        "| data | relation | geomean | max | cells ≤ 2× | cells |",
        "|---|---|---|---|---|---|",
    ]
    for key, c in sorted(summary["unbounded_vs_best_bounded_peer"].items()):
        kind, tag = key.split("|")
        lines.append(
            f"| {kind} | {tag} | {c['geomean']:.3f} | {c['max']:.3f} | "
            f"{c['cells_le_2']} | {c['cells']} |"
        )
    lines += ["", "## Per cell (real columns, loose bounds): MAE\n"]
    names = (
        [o for o in ours if o.startswith(("default", "em-", "unbounded"))] + peers_ar + peers_sub
    )
    lines.append("| cell | " + " | ".join(names) + " |")
    lines.append("|---" * (len(names) + 1) + "|")
    for r in rows:
        if r["kind"] == "real" and r["bounds"] == "loose":
            lines.append(
                f"| {r['key']} | "
                + " | ".join(f"{r['mae'].get(nm, float('nan')):.4g}" for nm in names)
                + " |"
            )
    lines += ["", "## Log\n"] + [f"- {x}" for x in summary["log"]]
    (out / "accuracy.md").write_text("\n".join(lines) + "\n")

    # neighbours.md: the default per relation against that relation's peers
    nl = [
        "# Quantiles per neighbour relation\n",
        head,
        "The default (`default/ar`, `default/sub`: grid base on a declared resolution, else "
        "the log base) against every peer configuration of the same relation, real columns, "
        "loose bounds. Tuned on the synthetic cells only.\n",
        "| relation | peer | geomean | min | max | cells ≤ 1 | cells ≤ 0.5 | cells | losing |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for tag, peers in (("ar", peers_ar), ("sub", peers_sub)):
        for p in peers:
            c = comp.get(f"real|default/{tag}|{p}")
            if c:
                nl.append(
                    f"| {tag} | {p} | {c['geomean']:.3f} | {c['min']:.3f} | {c['max']:.3f} | "
                    f"{c['cells_le_1']} | {c['cells_le_0.5']} | {c['cells']} | "
                    f"{'; '.join(c['losing'][:6])}{' …' if len(c['losing']) > 6 else ''} |"
                )
    (out / "neighbours.md").write_text("\n".join(nl) + "\n")
    (out / "neighbours.json").write_text(
        json.dumps({k: v for k, v in comp.items() if k.startswith("real|default/")}, indent=1)
    )


def _plot(summary, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    comp = summary["comparisons"]
    keys = [k for k in sorted(comp) if "|default/" in k]
    if not keys:
        return
    rows = summary["cells"]
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(keys) + 1.5))
    for i, k in enumerate(keys):
        kind, mine, p = k.split("|")
        sel = [r for r in rows if r["kind"] == kind and r["bounds"] == "loose"]
        v = [x for _, x in _ratios(sel, mine, p)]
        ax.scatter(v, [i] * len(v), s=8, alpha=0.6)
        ax.scatter([comp[k]["geomean"]], [i], marker="|", s=200, color="k")
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([k.replace("|", "  ") for k in keys], fontsize=7)
    ax.set_xscale("log")
    ax.axvline(1.0, color="grey", lw=0.8)
    ax.axvline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("MAE ratio instancedp default ÷ peer (per cell; bar = geometric mean)")
    fig.tight_layout()
    fig.savefig(out / "accuracy.png", dpi=110)
    fig.savefig(out / "neighbours.png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
