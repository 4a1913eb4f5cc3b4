"""Per-group medians on Zipf-skewed groups → docs/results/groupby.{md,json,png}.

Public synthetic data: G groups (50, 500, 5,000) whose sizes follow a Zipf law
(exponent 1.1) over 10⁶ rows (``--quick``: 10⁵ rows, G ≤ 500), values
Normal(μ_g, 10) clipped to the public bounds [0, 100], μ_g uniform in [20, 80].
Keys are public (every group answered).  Same total ε = 1 (add/remove) for:

* instancedp's default per-group median (exponential mechanism on the data's
  intervals, Smith 2011), through ``group_release`` on the Parquet file;
* instancedp with ``mechanism="smooth"`` (smooth sensitivity, Nissim,
  Raskhodnikova & Smith 2007, PolyPlace noise);
* the baseline the peers use (OpenDP's and Tumult's quantile: the exponential
  mechanism over a public grid of candidates, here 1,001 points, utility
  −|#{x < c} − #{x > c}|/2), written here in numpy because neither OpenDP nor
  Tumult is importable.

Error per group = |release − true group median|, summarised per size bin.
Time: ``group_release`` on the file (DuckDB GROUP BY, then the mechanisms)
versus DuckDB's own ``SELECT g, median(v) ... GROUP BY g`` on the same file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from instancedp.groupby import group_release
from instancedp.random import simulation

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"
BOUNDS = (0.0, 100.0)
EPSILON = 1.0
GRID = np.linspace(*BOUNDS, 1001)


def zipf_table(rows: int, groups: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, groups + 1) ** 1.1
    sizes = g.multinomial(rows, w / w.sum())
    keys = np.repeat(np.arange(groups), sizes)
    mu = g.uniform(20, 80, groups)
    vals = np.clip(g.normal(mu[keys], 10.0), *BOUNDS)
    return keys, vals


def grid_exponential_median(x: np.ndarray, eps: float, g: np.random.Generator) -> float:
    """Exponential mechanism over the public grid: utility −|#{x<c} − #{x>c}|/2.

    Adding or removing a row moves #{x<c} − #{x>c} by 1, the utility by ½, so
    weights exp(ε·u) are ε-DP (McSherry & Talwar 2007, Thm 6 with Δu = ½)."""
    xs = np.sort(x)
    below = np.searchsorted(xs, GRID, side="left")
    above = xs.size - np.searchsorted(xs, GRID, side="right")
    logw = -eps * np.abs(below - above) / 2.0
    p = np.exp(logw - logw.max())
    return float(GRID[g.choice(GRID.size, p=p / p.sum())])


def run(rows: int, groups_list: list[int], trials: int, seed: int) -> dict:
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    out_rows, timing = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for G in groups_list:
            keys, vals = zipf_table(rows, G, seed + G)
            path = Path(tmp) / f"t{G}.parquet"
            pq.write_table(pa.table({"g": [f"g{k}" for k in keys], "v": vals}), path)
            names = [f"g{k}" for k in range(G)]
            sizes = np.bincount(keys, minlength=G)
            per_group = np.split(vals, np.cumsum(sizes)[:-1])  # keys are sorted
            truth = np.array([np.median(x) if x.size else np.nan for x in per_group])
            t0 = time.perf_counter()
            duck = duckdb.sql(f"SELECT g, median(v) FROM '{path}' GROUP BY g").fetchall()
            t_duck = time.perf_counter() - t0
            assert len(duck) == int((sizes > 0).sum())
            errs: dict[str, list[np.ndarray]] = {"instancedp (exponential)": [],
                                                 "instancedp (smooth)": [],
                                                 "grid exponential (peers)": []}
            t_ours = []
            for t in range(trials):
                t0 = time.perf_counter()
                r = group_release(path, "g", "v", "median", epsilon=EPSILON, keys=names,
                                  bounds=BOUNDS, rng=simulation(seed + t))
                t_ours.append(time.perf_counter() - t0)
                errs["instancedp (exponential)"].append(
                    np.abs(np.array(r.values["median"]) - truth))
                r = group_release(path, "g", "v", "median", epsilon=EPSILON, keys=names,
                                  bounds=BOUNDS, mechanism="smooth", rng=simulation(seed + t))
                errs["instancedp (smooth)"].append(np.abs(np.array(r.values["median"]) - truth))
                g = np.random.default_rng(seed + 10_000 + t)
                base = np.array([grid_exponential_median(x, EPSILON, g) for x in per_group])
                errs["grid exponential (peers)"].append(np.abs(base - truth))
            timing.append({"groups": G, "rows": rows, "duckdb_median_s": t_duck,
                           "instancedp_s": float(np.median(t_ours))})
            edges = [1, 10, 100, 1000, 10_000, 10**7]
            for lo, hi in zip(edges[:-1], edges[1:], strict=True):
                sel = (sizes >= lo) & (sizes < hi)
                if not sel.any():
                    continue
                row = {"groups": G, "rows": rows, "size_bin": f"[{lo}, {hi})",
                       "n_groups": int(sel.sum())}
                for name, e in errs.items():
                    row[name] = float(np.median(np.concatenate([x[sel] for x in e])))
                out_rows.append(row)
            # per-group raw for the figure
            timing[-1]["sizes"] = sizes.tolist()
            timing[-1]["errors"] = {k: np.mean(v, axis=0).tolist() for k, v in errs.items()}
    return {"rows": out_rows, "timing": timing}


def write(res: dict, quick: bool) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    methods = ["instancedp (exponential)", "instancedp (smooth)", "grid exponential (peers)"]
    lines = [
        "# Per-group medians on Zipf-skewed groups",
        "",
        f"Generated by `benchmarks/groupby.py{' --quick' if quick else ''}` in "
        f"{res['seconds']:.0f} s ({res['machine']['cpu_count']} cores, "
        f"{res['machine']['python']}).  {res['rows_total']:,} rows, Zipf(1.1) group sizes, "
        f"values Normal(μ_g, 10) clipped to [0, 100], public keys, total ε = {EPSILON:g} "
        f"(add/remove: one row touches one group), {res['trials']} trials.  Median of "
        "|release − true group median| over the groups in each size bin and the trials.  "
        "The peers' baseline is the exponential mechanism over a public grid of 1,001 "
        "candidates (the mechanism of OpenDP's and Tumult's quantiles), written in numpy: "
        "neither library is importable here.",
        "",
        "| groups | group size | groups in bin | " + " | ".join(methods) + " |",
        "|---|---|---|" + "---|" * len(methods),
    ]
    for r in res["rows"]:
        lines.append(f"| {r['groups']} | {r['size_bin']} | {r['n_groups']} | "
                     + " | ".join(f"{r[m]:.3g}" for m in methods) + " |")
    lines += [
        "",
        "## Time against DuckDB's own GROUP BY median (same Parquet file)",
        "",
        "| groups | rows | DuckDB `median` GROUP BY (s) | instancedp group_release (s) |",
        "|---|---|---|---|",
    ]
    for t in res["timing"]:
        lines.append(f"| {t['groups']} | {t['rows']:,} | {t['duckdb_median_s']:.3f} | "
                     f"{t['instancedp_s']:.3f} |")
    lines += [
        "",
        "instancedp's time includes the DuckDB GROUP BY that pulls each group's sorted "
        "values (one row per group) and one mechanism call per group in Python.",
        "",
    ]
    (OUT / "groupby.md").write_text("\n".join(lines))
    slim = {k: v for k, v in res.items() if k != "timing"}
    slim["timing"] = [{k: v for k, v in t.items() if k not in ("sizes", "errors")}
                      for t in res["timing"]]
    (OUT / "groupby.json").write_text(json.dumps(slim, indent=2))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    t = max(res["timing"], key=lambda x: x["groups"])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sizes = np.asarray(t["sizes"])
    for m, mk in zip(methods, ("o", "s", "^"), strict=True):
        e = np.asarray(t["errors"][m])
        ax.scatter(np.maximum(sizes, 0.8), np.maximum(e, 1e-4), s=8, marker=mk, alpha=0.6,
                   label=m)
    ax.set(xscale="log", yscale="log", xlabel="group size (rows)",
           ylabel="mean |release − group median|",
           title=f"{t['groups']} Zipf groups, {t['rows']:,} rows, ε = {EPSILON:g}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "groupby.png", dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10^5 rows, 50 and 500 groups")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rows = 10**5 if a.quick else 10**6
    groups = [50, 500] if a.quick else [50, 500, 5000]
    trials = 3 if a.quick else 5
    t0 = time.perf_counter()
    res = run(rows, groups, trials, a.seed)
    res.update(seconds=time.perf_counter() - t0, rows_total=rows, trials=trials,
               machine={"cpu_count": os.cpu_count(), "python": platform.python_version()})
    write(res, a.quick)
    print((OUT / "groupby.md").read_text())


if __name__ == "__main__":
    main()
