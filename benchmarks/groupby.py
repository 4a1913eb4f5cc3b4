"""Per-group medians on Zipf-skewed groups → docs/results/groupby.{md,json,png}.

Public synthetic data: G groups (50, 500, 5,000) whose sizes follow a Zipf law
(exponent 1.1), values Normal(μ_g, 10) clipped to the public bounds [0, 100],
μ_g uniform in [20, 80]; 10⁶ rows (``--quick``: 1 trial, no smooth-sensitivity
column) or 10⁷ rows (full: 3 trials; its timing also at 10⁸ rows).  Keys are public (every group
answered).  Same total ε = 1 (add/remove: one row touches one group) for:

* instancedp on the Parquet file: per-group aggregates computed in DuckDB
  (a histogram on the public 4,097-point log grid per group, one GROUP BY),
  the exponential mechanism over those candidates (``CandidateQuantile``);
* instancedp in memory (a pandas frame): the default per-group median
  (exponential mechanism over the data's intervals, Smith 2011) and
  ``mechanism="smooth"`` (smooth sensitivity, Nissim, Raskhodnikova & Smith
  2007);
* OpenDP's polars API (``group_by(...).agg(pl.col("v").dp.median(grid))``
  with the public keys as a margin), run in its own environment under
  ``.bench-envs/opendp-polars`` (created on first use with ``--peers``) — or,
  where it is not installed, the mechanism it uses written in numpy: the
  exponential mechanism over a public grid of 1,001 candidates.  Tumult
  Analytics needs a Spark installation of its own and is not run.

Error per group = |release − true group median|, summarised per size bin.
Time: ``group_release`` on the file versus DuckDB's own
``SELECT g, median(v) ... GROUP BY g`` on the same file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from instancedp.groupby import group_release
from instancedp.random import simulation

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "results"
PEER_ENV = ROOT / ".bench-envs" / "opendp-polars"
PEER_PACKAGES = ["opendp[polars]==0.16.0", "pyarrow"]
BOUNDS = (0.0, 100.0)
EPSILON = 1.0
GRID = np.linspace(*BOUNDS, 1001)
FILE_M = "instancedp file (DuckDB aggregates)"
MEM_EXP = "instancedp memory (exponential)"
MEM_SMOOTH = "instancedp memory (smooth)"
PEER = "OpenDP polars"
BASELINE = "grid exponential (peers' mechanism)"

#: run by the peer environment's Python: OpenDP's polars API, public keys, ε per trial
OPENDP_SCRIPT = r"""
import json, sys
import numpy as np, polars as pl, opendp.prelude as dp
dp.enable_features("contrib")
path, keys, trials, eps = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
grid = np.linspace(0.0, 100.0, 1001).tolist()
lf = pl.scan_parquet(path)
out = []
for _ in range(trials):
    ctx = dp.Context.compositor(
        data=lf, privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=eps), split_evenly_over=1,
        margins=[dp.polars.Margin(by=["g"], invariant="keys", max_length=10**9)],
    )
    q = ctx.query().group_by("g").agg(pl.col("v").fill_null(0.0).dp.median(grid))
    df = q.release().collect()
    got = dict(zip(df["g"].to_list(), df["v"].to_list()))
    out.append([got.get(k) for k in keys])
print(json.dumps({"version": dp.__version__ if hasattr(dp, "__version__") else "0.16.0",
                  "medians": out}))
"""


def peer_python(create: bool) -> Path | None:
    """The OpenDP environment's Python (created with ``create``), or None."""
    py = PEER_ENV / "bin" / "python"
    if not py.exists() and create:
        subprocess.run([sys.executable, "-m", "venv", str(PEER_ENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "-q", "install", *PEER_PACKAGES], check=True)
    return py if py.exists() else None


def opendp_medians(py: Path, path: Path, keys: list[str], trials: int) -> tuple[list, float]:
    """OpenDP's per-group medians (trials × keys) and the seconds per trial."""
    t0 = time.perf_counter()
    r = subprocess.run([str(py), "-c", OPENDP_SCRIPT, str(path), json.dumps(keys),
                        str(trials), str(EPSILON)], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["medians"], (time.perf_counter() - t0) / trials


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


def run(rows: int, groups_list: list[int], trials: int, seed: int, peer: Path | None,
        time_rows: int | None, smooth: bool) -> dict:
    import duckdb
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    out_rows, timing = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for G in groups_list:
            keys, vals = zipf_table(rows, G, seed + G)
            path = Path(tmp) / f"t{G}.parquet"
            names = [f"g{k}" for k in range(G)]
            gcol = np.asarray(names, dtype=object)[keys]
            pq.write_table(pa.table({"g": gcol, "v": vals}), path)
            frame = pd.DataFrame({"g": gcol, "v": vals})
            sizes = np.bincount(keys, minlength=G)
            per_group = np.split(vals, np.cumsum(sizes)[:-1])  # keys are sorted
            truth = np.array([np.median(x) if x.size else np.nan for x in per_group])
            t_duck = _duck_time(duckdb, path)
            peer_name = PEER if peer is not None else BASELINE
            errs: dict[str, list[np.ndarray]] = {FILE_M: [], MEM_EXP: [], peer_name: []}
            if smooth:
                errs[MEM_SMOOTH] = []
            log(f"{G} groups, {rows:,} rows: DuckDB median {t_duck:.2f} s")
            t_file, t_mem = [], []
            for t in range(trials):
                t0 = time.perf_counter()
                r = group_release(path, "g", "v", "median", epsilon=EPSILON, keys=names,
                                  bounds=BOUNDS, rng=simulation(seed + t))
                t_file.append(time.perf_counter() - t0)
                errs[FILE_M].append(np.abs(np.array(r.values["median"]) - truth))
                t0 = time.perf_counter()
                r = group_release(frame, "g", "v", "median", epsilon=EPSILON, keys=names,
                                  bounds=BOUNDS, rng=simulation(seed + t))
                t_mem.append(time.perf_counter() - t0)
                errs[MEM_EXP].append(np.abs(np.array(r.values["median"]) - truth))
                if smooth:
                    r = group_release(frame, "g", "v", "median", epsilon=EPSILON, keys=names,
                                      bounds=BOUNDS, mechanism="smooth",
                                      rng=simulation(seed + t))
                    errs[MEM_SMOOTH].append(np.abs(np.array(r.values["median"]) - truth))
                if peer is None:
                    g = np.random.default_rng(seed + 10_000 + t)
                    base = np.array([grid_exponential_median(x, EPSILON, g) for x in per_group])
                    errs[peer_name].append(np.abs(base - truth))
            t_peer = None
            if peer is not None:
                meds, t_peer = opendp_medians(peer, path, names, trials)
                for m in meds:
                    v = np.array([np.nan if x is None else x for x in m], dtype=np.float64)
                    errs[peer_name].append(np.abs(v - truth))
            timing.append({"groups": G, "rows": rows, "duckdb_median_s": t_duck,
                           "instancedp_file_s": float(np.median(t_file)),
                           "instancedp_memory_s": float(np.median(t_mem)),
                           "opendp_polars_s": t_peer})
            edges = [1, 10, 100, 1000, 10_000, 10**5, 10**9]
            for lo, hi in zip(edges[:-1], edges[1:], strict=True):
                sel = (sizes >= lo) & (sizes < hi)
                if not sel.any():
                    continue
                row = {"groups": G, "rows": rows, "size_bin": f"[{lo}, {hi})",
                       "n_groups": int(sel.sum())}
                for name, e in errs.items():
                    row[name] = float(np.nanmedian(np.concatenate([x[sel] for x in e])))
                out_rows.append(row)
            timing[-1]["sizes"] = sizes.tolist()
            timing[-1]["errors"] = {k: np.nanmean(v, axis=0).tolist() for k, v in errs.items()}
        scale = []
        if time_rows:  # time only: the file path against DuckDB at a larger size
            for G in (50, 5000):
                keys, vals = zipf_table(time_rows, G, seed + G)
                path = Path(tmp) / f"big{G}.parquet"
                gcol = pa.DictionaryArray.from_arrays(
                    pa.array(keys.astype(np.int32)), pa.array([f"g{k}" for k in range(G)]))
                pq.write_table(pa.table({"g": gcol, "v": vals}), path)
                del keys, vals
                t_duck = _duck_time(duckdb, path)
                t0 = time.perf_counter()
                group_release(path, "g", "v", "median", epsilon=EPSILON,
                              keys=[f"g{k}" for k in range(G)], bounds=BOUNDS,
                              rng=simulation(seed))
                scale.append({"groups": G, "rows": time_rows, "duckdb_median_s": t_duck,
                              "instancedp_file_s": time.perf_counter() - t0})
                path.unlink()
    return {"rows": out_rows, "timing": timing, "scale": scale, "peer": peer_name,
            "methods": [FILE_M, MEM_EXP] + ([MEM_SMOOTH] if smooth else []) + [peer_name]}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _duck_time(duckdb, path: Path) -> float:
    con = duckdb.connect()
    t0 = time.perf_counter()
    con.execute(f"SELECT g, median(v) FROM '{path}' GROUP BY g").fetchall()
    t = time.perf_counter() - t0
    con.close()
    return t


def write(res: dict, quick: bool) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    methods = res["methods"]
    peer_text = (
        "OpenDP's polars API ran in `.bench-envs/opendp-polars` (opendp 0.16.0): "
        "`group_by(\"g\").agg(pl.col(\"v\").dp.median(grid))`, the public keys as a "
        "margin, the same 1,001-point grid and ε."
        if res["peer"] == PEER else
        "OpenDP was not installed (run with `--peers` to create its environment): the "
        "peers' column is the mechanism of OpenDP's and Tumult's quantiles, the exponential "
        "mechanism over a public grid of 1,001 candidates, written in numpy."
    )
    lines = [
        "# Per-group medians on Zipf-skewed groups",
        "",
        f"Generated by `benchmarks/groupby.py{' --quick' if quick else ''}` in "
        f"{res['seconds']:.0f} s ({res['machine']['cpu_count']} cores, "
        f"{res['machine']['python']}).  {res['rows_total']:,} rows, Zipf(1.1) group sizes, "
        f"values Normal(μ_g, 10) clipped to [0, 100], public keys, total ε = {EPSILON:g} "
        f"(add/remove: one row touches one group), {res['trials']} trials.  Median of "
        "|release − true group median| over the groups in each size bin and the trials.  "
        + peer_text + "  Tumult Analytics (it needs its own Spark) was not run.",
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
        "| groups | rows | DuckDB `median` GROUP BY (s) | instancedp file (s) | ratio | "
        "instancedp memory (s) | OpenDP polars (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in res["timing"] + res["scale"]:
        mem = t.get("instancedp_memory_s")
        peer = t.get("opendp_polars_s")
        lines.append(
            f"| {t['groups']} | {t['rows']:,} | {t['duckdb_median_s']:.3f} | "
            f"{t['instancedp_file_s']:.3f} | "
            f"{t['instancedp_file_s'] / t['duckdb_median_s']:.1f}× | "
            f"{'—' if mem is None else f'{mem:.3f}'} | {'—' if peer is None else f'{peer:.3f}'} |")
    lines += [
        "",
        "The file path's time is the whole release: schema check, one DuckDB GROUP BY per "
        "aggregate (a histogram per group on the public candidate grid), the exponential "
        "mechanism per group in Python.  The memory path's time excludes reading the file "
        "(the frame is given); OpenDP's includes starting its Python process.",
        "",
    ]
    (OUT / "groupby.md").write_text("\n".join(lines))
    slim = {k: v for k, v in res.items() if k != "timing"}
    slim["timing"] = [{k: v for k, v in t.items() if k not in ("sizes", "errors")}
                      for t in res["timing"]]
    (OUT / "groupby.json").write_text(json.dumps(slim, indent=2))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = max(res["timing"], key=lambda x: x["groups"])
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    sizes = np.asarray(t["sizes"])
    for m, mk in zip(methods, ("o", "s", "D", "^"), strict=False):
        e = np.asarray(t["errors"][m])
        ax.scatter(np.maximum(sizes, 0.8), np.maximum(e, 1e-4), s=7, marker=mk, alpha=0.5,
                   label=m)
    ax.set(xscale="log", yscale="log", xlabel="group size (rows)",
           ylabel="mean |release − group median|",
           title=f"{t['groups']} Zipf groups, {t['rows']:,} rows, ε = {EPSILON:g}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "groupby.png", dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="10^6 rows, 1 trial, no smooth-sensitivity column (full: 10^7 rows, "
                    "3 trials, timing also at 10^8 rows)")
    ap.add_argument("--peers", action="store_true",
                    help="create OpenDP's environment under .bench-envs/ if it is missing")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rows = 10**6 if a.quick else 10**7
    trials = 1 if a.quick else 3
    peer = peer_python(a.peers)
    t0 = time.perf_counter()
    res = run(rows, [50, 500, 5000], trials, a.seed, peer, None if a.quick else 10**8,
              smooth=not a.quick)
    res.update(seconds=time.perf_counter() - t0, rows_total=rows, trials=trials,
               machine={"cpu_count": os.cpu_count(), "python": platform.python_version()})
    write(res, a.quick)
    print((OUT / "groupby.md").read_text())


if __name__ == "__main__":
    main()
