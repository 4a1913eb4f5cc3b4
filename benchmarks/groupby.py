"""Per-group medians on Zipf-skewed groups → docs/results/groupby.{md,json,png}.

Public synthetic data: G groups (50, 500, 5,000) whose sizes follow a Zipf law
(exponent 1.1), values Normal(μ_g, 10) clipped to the public bounds [0, 100],
μ_g uniform in [20, 80].  ``--quick``: 10⁶ rows, G ∈ {50, 5,000}, 1 trial, no
Tumult; full: 10⁷ rows, G ∈ {50, 500, 5,000}, 3 trials, the smooth-sensitivity
column, and Tumult on its own 10⁵-row tables (G ∈ {50, 500}, 1 trial).  Keys
are public (every group answered).
Same total ε = 1 (add/remove: one row touches one group) for:

* instancedp's default on the Parquet file (DuckDB): the single release's
  default per group — the exponential mechanism with the log base, drawn in
  stages (one grouped count, ONE statement reading every group's window of
  order statistics, further single order statistics only where the exact
  inversion asks).  The same call on the in-memory frame must give the very
  same values (checked: ``memory_equal`` in the JSON);
* instancedp's ``mechanism="candidate_quantile"`` on the file (one grouped
  histogram on the public 4,097-point log grid, the exponential mechanism
  over those candidates);
* ``mechanism="smooth"`` in memory (full run only; Nissim, Raskhodnikova &
  Smith 2007);
* OpenDP's polars API (``group_by(...).agg(pl.col("v").dp.median(grid))``,
  the public keys as a margin, a 1,001-point grid) in ``.bench-envs/opendp-polars``;
* Tumult Analytics (``QueryBuilder.groupby(KeySet).median(low, high)``, its
  own local Spark, ``AddOneRow``, ``PureDPBudget``) in
  ``.bench-envs/tmlt-analytics-0.21.0``.
Peer environments are created with ``--peers``; a missing OpenDP is replaced
by its mechanism written in numpy, a missing Tumult is left out (stated).
``--smooth-only`` reruns the smooth column alone on the full run's tables and
seeds (10⁷ rows, 3 trials) into the existing JSON and md (the other columns and
the plot are left as they are): it refreshes that column when only the smooth
mechanism changed, without the other columns' 45 minutes.

Error per group = |release − true group median|, summarised per size bin.
Time: the default release on the file versus DuckDB's own
``SELECT g, median(v) ... GROUP BY g`` on the same file, in the same run, at
the error table's size and on a larger file (``--quick``: 10⁷ rows, 50
groups; full: 10⁷ rows and 5,000 groups, 10⁸ rows and 50 or 5,000 groups), with the time to
generate each file.
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
ENVS = ROOT / ".bench-envs"
PEER_ENV = ENVS / "opendp-polars"
PEER_PACKAGES = ["opendp[polars]==0.16.0", "pyarrow"]
TUMULT_ENV = ENVS / "tmlt-analytics-0.21.0"
TUMULT_PACKAGES = ["tmlt.analytics==0.21.0", "pyarrow"]
BOUNDS = (0.0, 100.0)
EPSILON = 1.0
GRID = np.linspace(*BOUNDS, 1001)
DEFAULT = "instancedp default (staged, DuckDB)"
CAND = "instancedp candidate grid (DuckDB)"
MEM_SMOOTH = "instancedp smooth (memory)"
PEER = "OpenDP polars"
BASELINE = "grid exponential (OpenDP's mechanism, numpy)"
TUMULT = "Tumult Analytics"
#: a peer run longer than this is stopped and left out (with the reason in the log)
PEER_TIMEOUT_S = 1200
#: Tumult's per-group median ran for more than 6 minutes on 10^6 rows and 50 groups on
#: the loaded 2-core machine, so it is compared on its own smaller table (full run)
TUMULT_ROWS = 10**5

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

#: run by Tumult's environment: Tumult Analytics' group-by median, public keys (a KeySet)
TUMULT_SCRIPT = r"""
import json, os, sys, time
os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
t0 = time.perf_counter()
from pyspark.sql import SparkSession
from tmlt.analytics import AddOneRow, KeySet, PureDPBudget, QueryBuilder, Session
import tmlt.analytics
path, keys, trials, eps = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "4").config("spark.driver.memory", "6g")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
df = spark.read.parquet(path)
t1 = time.perf_counter()
out = []
for _ in range(trials):
    s = Session.from_dataframe(privacy_budget=PureDPBudget(eps), source_id="data",
                               dataframe=df, protected_change=AddOneRow())
    q = (QueryBuilder("data").groupby(KeySet.from_dict({"g": keys}))
         .median("v", low=0.0, high=100.0, name="m"))
    got = {r["g"]: r["m"] for r in s.evaluate(q, PureDPBudget(eps)).collect()}
    out.append([got.get(k) for k in keys])
print(json.dumps({"version": tmlt.analytics.__version__, "medians": out,
                  "startup_s": t1 - t0, "query_s": (time.perf_counter() - t1) / trials}))
"""


def env_python(env: Path, packages: list[str], create: bool) -> Path | None:
    """A peer environment's Python (created with ``create``), or None."""
    py = env / "bin" / "python"
    if not py.exists() and create:
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        subprocess.run([str(py), "-m", "pip", "-q", "install", *packages], check=True)
    return py if py.exists() else None


def peer_medians(py: Path, script: str, path: Path, keys: list[str],
                 trials: int) -> tuple[list, float, dict]:
    """A peer's per-group medians (trials × keys), the seconds per trial (process start
    included) and its JSON answer."""
    t0 = time.perf_counter()
    r = subprocess.run([str(py), "-c", script, str(path), json.dumps(keys), str(trials),
                        str(EPSILON)], capture_output=True, text=True, check=True,
                       timeout=PEER_TIMEOUT_S)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return out["medians"], (time.perf_counter() - t0) / trials, out


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


def _release(path_or_frame, names: list[str], seed: int, **kw) -> tuple[np.ndarray, float]:
    t0 = time.perf_counter()
    r = group_release(path_or_frame, "g", "v", "median", epsilon=EPSILON, keys=names,
                      bounds=BOUNDS, rng=simulation(seed), **kw)
    return np.array(r.values["median"], dtype=np.float64), time.perf_counter() - t0


def run(rows: int, groups_list: list[int], trials: int, seed: int, peers: dict,
        big: list[tuple[int, int]], smooth: bool, tumult_groups: set[int],
        tumult_trials: int) -> dict:
    import duckdb
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    out_rows, timing = [], []
    memory_equal: dict[str, bool] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for G in groups_list:
            t0 = time.perf_counter()
            keys, vals = zipf_table(rows, G, seed + G)
            path = Path(tmp) / f"t{G}.parquet"
            names = [f"g{k}" for k in range(G)]
            gcol = np.asarray(names, dtype=object)[keys]
            pq.write_table(pa.table({"g": gcol, "v": vals}), path)
            t_gen = time.perf_counter() - t0
            sizes = np.bincount(keys, minlength=G)
            per_group = np.split(vals, np.cumsum(sizes)[:-1])  # keys are sorted
            truth = np.array([np.median(x) if x.size else np.nan for x in per_group])
            t_duck = _duck_time(duckdb, path)
            opendp = peers.get("opendp")
            peer_name = PEER if opendp is not None else BASELINE
            errs: dict[str, list[np.ndarray]] = {DEFAULT: [], CAND: []}
            if smooth:
                errs[MEM_SMOOTH] = []
            errs[peer_name] = []
            log(f"{G} groups, {rows:,} rows (generated in {t_gen:.1f} s): "
                f"DuckDB median {t_duck:.2f} s")
            t_def, t_cand = [], []
            for t in range(trials):
                v, dt = _release(path, names, seed + t)
                t_def.append(dt)
                errs[DEFAULT].append(np.abs(v - truth))
                log(f"  default {dt:.1f} s")
                if t == 0:  # the in-memory frame: the very same values (one law, one draw)
                    frame = pd.DataFrame({"g": gcol, "v": vals})
                    mem, _ = _release(frame, names, seed + t)
                    same = bool(np.array_equal(mem, v))
                    memory_equal[f"{rows:,} rows, {G} groups"] = same
                    log(f"  memory path equal: {same}")
                v, dt = _release(path, names, seed + t, mechanism="candidate_quantile")
                t_cand.append(dt)
                errs[CAND].append(np.abs(v - truth))
                if smooth:
                    frame = pd.DataFrame({"g": gcol, "v": vals})
                    v, _ = _release(frame, names, seed + t, mechanism="smooth")
                    errs[MEM_SMOOTH].append(np.abs(v - truth))
                if opendp is None:
                    g = np.random.default_rng(seed + 10_000 + t)
                    base = np.array([grid_exponential_median(x, EPSILON, g) for x in per_group])
                    errs[peer_name].append(np.abs(base - truth))
            t_peer = t_tumult = None
            if opendp is not None:
                meds, t_peer, _ = peer_medians(opendp, OPENDP_SCRIPT, path, names, trials)
                for m in meds:
                    errs[peer_name].append(np.abs(_floats(m) - truth))
                log(f"  OpenDP {t_peer:.1f} s")
            tumult = peers.get("tumult")
            if tumult is not None and G in tumult_groups:
                try:
                    meds, t_tumult, info = peer_medians(tumult, TUMULT_SCRIPT, path, names,
                                                        tumult_trials)
                except subprocess.TimeoutExpired:
                    log(f"  Tumult stopped after {PEER_TIMEOUT_S} s: left out")
                else:
                    errs[TUMULT] = [np.abs(_floats(m) - truth) for m in meds]
                    peers["tumult_version"] = info["version"]
                    log(f"  Tumult {t_tumult:.1f} s (query {info['query_s']:.1f} s)")
            timing.append({"groups": G, "rows": rows, "generate_s": t_gen,
                           "duckdb_median_s": t_duck,
                           "instancedp_default_s": float(np.median(t_def)),
                           "instancedp_candidate_s": float(np.median(t_cand)),
                           "opendp_polars_s": t_peer, "tumult_analytics_s": t_tumult})
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
        for big_rows, G in big:  # time only: the default path against DuckDB, one file each
            t0 = time.perf_counter()
            keys, vals = zipf_table(big_rows, G, seed + G)
            path = Path(tmp) / f"big{G}.parquet"
            gcol = pa.DictionaryArray.from_arrays(
                pa.array(keys.astype(np.int32)), pa.array([f"g{k}" for k in range(G)]))
            pq.write_table(pa.table({"g": gcol, "v": vals}), path)
            del keys, vals, gcol
            t_gen = time.perf_counter() - t0
            t_duck = _duck_time(duckdb, path)
            _, dt = _release(path, [f"g{k}" for k in range(G)], seed)
            log(f"{G} groups, {big_rows:,} rows (generated in {t_gen:.1f} s): DuckDB "
                f"{t_duck:.1f} s, instancedp {dt:.1f} s")
            scale.append({"groups": G, "rows": big_rows, "generate_s": t_gen,
                          "duckdb_median_s": t_duck, "instancedp_default_s": dt})
            path.unlink()
    methods = sorted({m for r in out_rows for m in r if m not in
                      ("groups", "rows", "size_bin", "n_groups")}, key=_ORDER.index)
    return {"rows": out_rows, "timing": timing, "scale": scale, "methods": methods,
            "memory_equal": memory_equal,
            "tumult": peers.get("tumult_version"), "opendp": opendp is not None}


def smooth_column(res: dict, seed: int) -> dict:
    """Rerun ``MEM_SMOOTH`` on the full run's tables (same rows, groups, trials and
    seeds as :func:`run`) and overwrite it in ``res["rows"]``; what was run."""
    import pandas as pd

    t0 = time.perf_counter()
    done, at_bound, releases = [], 0, 0
    for G in sorted({r["groups"] for r in res["rows"] if MEM_SMOOTH in r}):
        rows = res["rows_total"]
        keys, vals = zipf_table(rows, G, seed + G)
        names = [f"g{k}" for k in range(G)]
        frame = pd.DataFrame({"g": np.asarray(names, dtype=object)[keys], "v": vals})
        sizes = np.bincount(keys, minlength=G)
        per_group = np.split(vals, np.cumsum(sizes)[:-1])  # keys are sorted
        truth = np.array([np.median(x) if x.size else np.nan for x in per_group])
        errs = []
        for t in range(res["trials"]):
            v, _ = _release(frame, names, seed + t, mechanism="smooth")
            errs.append(np.abs(v - truth))
            # a release on a bound: the projection onto [0, 100] acted (the group
            # medians lie strictly inside)
            at_bound += int(np.sum((v <= BOUNDS[0]) | (v >= BOUNDS[1])))
            releases += v.size
        for r in res["rows"]:
            if r["groups"] == G and r["rows"] == rows and MEM_SMOOTH in r:
                lo, hi = (int(b) for b in r["size_bin"].strip("[)").split(", "))
                sel = (sizes >= lo) & (sizes < hi)
                r[MEM_SMOOTH] = float(np.nanmedian(np.concatenate([e[sel] for e in errs])))
        done.append(G)
        log(f"smooth column, {G} groups: {time.perf_counter() - t0:.0f} s")
    return {"groups": done, "seconds": time.perf_counter() - t0,
            "releases": releases, "at_bound": at_bound}


_ORDER = [DEFAULT, CAND, MEM_SMOOTH, PEER, BASELINE, TUMULT]


def _floats(m: list) -> np.ndarray:
    return np.array([np.nan if x is None else x for x in m], dtype=np.float64)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _duck_time(duckdb, path: Path) -> float:
    con = duckdb.connect()
    t0 = time.perf_counter()
    con.execute(f"SELECT g, median(v) FROM '{path}' GROUP BY g").fetchall()
    t = time.perf_counter() - t0
    con.close()
    return t


def _s(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def write(res: dict, quick: bool) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    methods = res["methods"]
    peer_text = (
        "OpenDP's polars API ran in `.bench-envs/opendp-polars` (opendp 0.16.0): "
        "`group_by(\"g\").agg(pl.col(\"v\").dp.median(grid))`, the public keys as a "
        "margin, a 1,001-point grid, the same ε."
        if res["opendp"] else
        "OpenDP was not installed (run with `--peers`): its column is OpenDP's mechanism, "
        "the exponential mechanism over a public grid of 1,001 candidates, in numpy."
    )
    tumult_text = (
        f"Tumult Analytics {res['tumult']} ran in its own environment and local Spark "
        "(`QueryBuilder(...).groupby(KeySet.from_dict(...)).median(\"v\", low=0, high=100)`, "
        "`AddOneRow`, `PureDPBudget(1)`)"
        f" on its own {TUMULT_ROWS:,}-row tables (the rows marked {TUMULT_ROWS:,}), beside "
        "instancedp and OpenDP on the same files: on 10⁶ rows and 50 groups its per-group "
        "median ran for more than 6 minutes here."
        if res["tumult"] else
        ("Tumult Analytics runs in the full run only (its own Spark: minutes per release)."
         if quick else
         "Tumult Analytics was not installed (run with `--peers`) and is not shown.")
    )
    eq = ", ".join(f"{g}: {'yes' if v else 'NO'}" for g, v in res["memory_equal"].items())
    lines = [
        "# Per-group medians on Zipf-skewed groups",
        "",
        f"Generated by `benchmarks/groupby.py{' --quick' if quick else ''}` in "
        f"{res['seconds']:.0f} s ({res['machine']['cpu_count']} cores shared with other "
        f"jobs, Python {res['machine']['python']}).  {res['rows_total']:,} rows, Zipf(1.1) "
        "group sizes, values Normal(μ_g, 10) clipped to [0, 100], public keys, total "
        f"ε = {EPSILON:g} (add/remove: one row touches one group), {res['trials']} "
        "trial(s).  Median of |release − true group median| over the groups in each size "
        "bin and the trials.  " + peer_text + "  " + tumult_text,
        "",
        "instancedp's default per group is the single release's default (the exponential "
        "mechanism with the log base, drawn in stages from each group's window of order "
        "statistics).  The same call on the in-memory frame gave bit-identical values "
        f"({eq}).",
        "",
        "| groups | group size | groups in bin | " + " | ".join(methods) + " |",
        "|---|---|---|" + "---|" * len(methods),
    ]
    for r in res["rows"]:
        lines.append(f"| {r['groups']} | {r['size_bin']} | {r['n_groups']} | "
                     + " | ".join("—" if m not in r else f"{r[m]:.3g}" for m in methods)
                     + " |")
    rerun = res.get("smooth_rerun")
    if rerun:
        lines += [
            "",
            f"The smooth column was rerun alone (`--smooth-only`, {rerun['seconds']:.0f} s, "
            f"the same tables and seeds, {', '.join(map(str, rerun['groups']))} groups) "
            "after additive releases became projected onto the statistic's public range "
            f"[{BOUNDS[0]:g}, {BOUNDS[1]:g}]; the projection moved {rerun['at_bound']} of its "
            f"{rerun['releases']:,} per-group releases.  The other columns and the plot are "
            "from the full run above.",
        ]
    lines += [
        "",
        "## Time against DuckDB's own GROUP BY median (same Parquet file, same run)",
        "",
        "| groups | rows | file generated in (s) | DuckDB `median` GROUP BY (s) | "
        "instancedp default (s) | ratio | instancedp candidate grid (s) | OpenDP polars (s) "
        "| Tumult Analytics (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in res["timing"] + res["scale"]:
        lines.append(
            f"| {t['groups']} | {t['rows']:,} | {t['generate_s']:.1f} | "
            f"{t['duckdb_median_s']:.2f} | {t['instancedp_default_s']:.2f} | "
            f"{t['instancedp_default_s'] / t['duckdb_median_s']:.0f}× | "
            f"{_s(t.get('instancedp_candidate_s'))} | {_s(t.get('opendp_polars_s'))} | "
            f"{_s(t.get('tumult_analytics_s'))} |")
    lines += [
        "",
        "instancedp's times are whole releases: schema check, the grouped count, one "
        "statement for every group's window of order statistics (the candidate grid: one "
        "grouped histogram), the exact draw per group in Python.  The peers' times include "
        "starting their Python process (and, for Tumult, its Spark session).",
        "",
    ]
    (OUT / "groupby.md").write_text("\n".join(lines))
    slim = {k: v for k, v in res.items() if k != "timing"}
    slim["timing"] = [{k: v for k, v in t.items() if k not in ("sizes", "errors")}
                      for t in res["timing"]]
    (OUT / "groupby.json").write_text(json.dumps(slim, indent=2))
    if not all("errors" in t for t in res["timing"]):
        return  # a --smooth-only rerun from the JSON: the plot's per-group errors are not kept
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = max(res["timing"], key=lambda x: x["groups"])
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    sizes = np.asarray(t["sizes"])
    for m, mk in zip(t["errors"], ("o", "s", "D", "^", "v"), strict=False):
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
                    help="10^6 rows, 50 and 5,000 groups, 1 trial, no Tumult, timing also "
                    "on 10^7 rows (full: 10^7 rows, 3 trials, smooth column, Tumult on "
                    "10^5-row tables, timing also on 10^7 and 10^8 rows)")
    ap.add_argument("--peers", action="store_true",
                    help="create the OpenDP and Tumult environments under .bench-envs/ if "
                    "they are missing")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smooth-only", action="store_true",
                    help="rerun only the smooth column of the full run into the existing "
                    "docs/results/groupby.json and .md (same tables and seeds)")
    a = ap.parse_args()
    if a.smooth_only:
        res = json.loads((OUT / "groupby.json").read_text())
        res["smooth_rerun"] = smooth_column(res, a.seed)
        write(res, quick=False)
        print((OUT / "groupby.md").read_text())
        return
    rows = 10**6 if a.quick else 10**7
    trials = 1 if a.quick else 3
    peers = {"opendp": env_python(PEER_ENV, PEER_PACKAGES, a.peers),
             "tumult": env_python(TUMULT_ENV, TUMULT_PACKAGES, a.peers)}
    groups = [50, 5000] if a.quick else [50, 500, 5000]
    big = [(10**7, 50)] if a.quick else [(10**7, 5000), (10**8, 50), (10**8, 5000)]
    t0 = time.perf_counter()
    res = run(rows, groups, trials, a.seed, peers, big, smooth=not a.quick,
              tumult_groups=set(), tumult_trials=1)
    if not a.quick and peers["tumult"] is not None:
        small = run(TUMULT_ROWS, [50, 500], 1, a.seed, peers, [], smooth=False,
                    tumult_groups={50, 500}, tumult_trials=1)
        for k in ("rows", "timing"):
            res[k] += small[k]
        res["memory_equal"].update(small["memory_equal"])
        res["methods"] = sorted(set(res["methods"]) | set(small["methods"]), key=_ORDER.index)
        res["tumult"] = small["tumult"]
    res.update(seconds=time.perf_counter() - t0, rows_total=rows, trials=trials,
               machine={"cpu_count": os.cpu_count(), "python": platform.python_version()})
    write(res, a.quick)
    print((OUT / "groupby.md").read_text())


if __name__ == "__main__":
    main()
