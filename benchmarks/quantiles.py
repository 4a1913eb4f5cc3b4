"""Several quantiles at total ε → docs/results/quantiles.{md,json,png}.

Mechanisms (``instancedp.mechanisms``): the joint exponential mechanism
(Gillenwater, Joseph & Kulesza 2021, exact sampler), the recursive algorithm
(Kaplan, Schnapp & Stemmer 2022) and m independent exponential mechanisms at
ε/m; peers OpenDP (``make_private_quantile``) and Tumult Core (``NoisyQuantile``)
at ε/m each, run in their own virtual environments under ``.bench-envs/``
(made by the accuracy benchmark) when they exist — otherwise skipped, with the
reason logged in the report.

Grid: m ∈ {3, 9, 19} evenly spaced levels j/(m+1); n ∈ {10³, 10⁴, 10⁵};
ε ∈ {0.5, 2}; add/remove and substitution.  The independent mechanisms' law
is the same under both relations (rank score sensitivity ≤ 1 under either),
so its draws serve both rows; the joint mechanism's utility sensitivity is
2·(1 − min gap weight) under add/remove and 2 under substitution, so it runs
under each; the recursive algorithm's per-mechanism ε halves under
substitution; ``--log-chart`` adds the joint mechanism on the log chart; the peers' guarantees
are add/remove ones, so they appear in add/remove rows only.

Error of one release: mean over the m levels of |released − empirical
quantile| (empirical = x_(⌈qn⌉)); a cell reports the mean and the median of
that over trials (a fresh dataset per trial), and the mean rank error (data
points between the release and the empirical quantile, GJK's "missed points").

The bound-free variant (m bound-free quantiles at ε/m, Durfee 2023) runs
without the bounds.  The default's choice is tested by a sign test over the
cells (joint against each other mechanism, per relation).

``--quick``: n ∈ {10³, 10⁴}, two datasets, 2 trials (≤ 2 min); full run
10 trials (≤ 30 min on 2 cores; ``--workers`` runs the (data, n) blocks in
parallel).  Also times the joint mechanism's secure release (forward pass +
exact draw) at n = 10⁵, m = 19, and ``Session.describe`` on a 10-column
Parquet file (10⁶ rows; quick 10⁵) against DuckDB's exact ``SUMMARIZE`` of the
same file in the same run.  ``--retime --describe-only`` redoes the describe
timing alone; ``--describe-memory`` adds describe's peak RSS on 4-column
Parquet files of 10⁶ and 10⁷ rows (quick 10⁵, 10⁶) with DuckDB's
``memory_limit = '1GB'``, each in a fresh process.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from instancedp.mechanisms.independent_quantiles import IndependentQuantiles
from instancedp.mechanisms.joint_quantiles import JointQuantiles
from instancedp.mechanisms.recursive_quantiles import RecursiveQuantiles
from instancedp.mechanisms.unbounded_quantiles import UnboundedQuantiles
from instancedp.queries.quantiles import Quantiles
from instancedp.random import simulation
from instancedp.recipes import build_quantiles_mechanism

ROOT = Path(__file__).resolve().parent.parent
#: the joint mechanism on the log chart (base="log"; same utility, another base measure)
JOINT_LOG = "joint, log chart"
#: the joint mechanism on the column's declared resolution (base="grid")
JOINT_GRID = "joint, declared resolution"
#: declared resolutions (public: a type or a scale, never read from the rows): the
#: elevations are integers, the closing prices have two decimals; normal declares none
RESOLUTION = {"integers": 1.0, "goog": 0.01, "elevation": 1.0, "atoms": 0.01}
OUT = ROOT / "docs" / "results"

PEER_CODE = {
    "opendp": r"""
import json, sys
import numpy as np
import opendp.prelude as dp
from importlib.metadata import version
dp.enable_features("contrib")
job = json.load(sys.stdin)
lo, hi = job["bounds"]
cands = np.linspace(lo, hi, job["grid"]).tolist()
dom = dp.vector_domain(dp.atom_domain(T=float, nan=False))
out = {"version": "opendp " + version("opendp"), "results": []}
meas = {}
for task in job["tasks"]:
    x = np.clip(np.asarray(job["data"][task["data"]], float), lo, hi).tolist()
    row = []
    for q in task["qs"]:
        key = (q, task["eps_each"])
        if key not in meas:
            mk = lambda s, c, q=q: dp.m.make_private_quantile(
                dom, dp.symmetric_distance(), dp.max_divergence(), candidates=c, alpha=q,
                scale=s)
            # the privacy map does not depend on the candidates: calibrate on two
            s = dp.binary_search_param(lambda s: mk(s, [lo, hi]), d_in=1, d_out=task["eps_each"])
            meas[key] = mk(s, cands)
            assert meas[key].map(1) <= task["eps_each"] * (1 + 1e-9)
        row.append(float(meas[key](x)))
    out["results"].append(sorted(row))
json.dump(out, sys.stdout)
""",
    "tumult": r"""
import json, sys
from fractions import Fraction
import numpy as np, pandas as pd
from importlib.metadata import version
from tmlt.core.domains.numpy_domains import NumpyFloatDomain
from tmlt.core.domains.pandas_domains import PandasSeriesDomain
from tmlt.core.measurements.pandas_measurements.series import NoisyQuantile
from tmlt.core.measures import PureDP
job = json.load(sys.stdin)
lo, hi = job["bounds"]
out = {"version": "tmlt.core " + version("tmlt.core"), "results": []}
dom = PandasSeriesDomain(NumpyFloatDomain())
cache = {}
for task in job["tasks"]:
    x = pd.Series(np.asarray(job["data"][task["data"]], float))
    eps = Fraction(task["eps_each"]).limit_denominator(10**9)
    if eps > Fraction(task["eps_each"]):
        eps = Fraction(task["eps_each"]).limit_denominator(10**6) - Fraction(1, 10**6)
    row = []
    for q in task["qs"]:
        if (q, eps) not in cache:
            cache[(q, eps)] = NoisyQuantile(dom, PureDP(), q, lo, hi, str(eps))
        row.append(float(cache[(q, eps)](x)))
    out["results"].append(sorted(row))
json.dump(out, sys.stdout)
""",
}


def load_dataset(name: str) -> tuple[np.ndarray | None, tuple[float, float], str]:
    """(pool of values or None for synthetic, public bounds, description)."""
    if name == "normal":
        return None, (-10.0, 10.0), "N(0, 1), a fresh sample per trial, bounds [−10, 10]"
    if name == "integers":
        return None, (0.0, 2000.0), ("round(N(500, 100)): synthetic integers (ties), a fresh "
                                     "sample per trial, bounds [0, 2000], declared resolution 1")
    if name == "atoms":
        return None, (0.0, 1000.0), (
            "a fresh pool of 1,000 values from N(400, 100) rounded to 0.01, resampled "
            "with replacement (n/1000 ties per value on average, gaps between values far "
            "wider than the grid), bounds [0, 1000], declared resolution 0.01")
    if name == "goog":
        import csv
        from importlib.resources import files

        with files("instancedp.data").joinpath("goog.csv").open() as f:
            close = np.array([float(r["close"]) for r in csv.DictReader(f)])
        return (
            close,
            (0.0, 1000.0),
            (
                f"instancedp's goog.csv closing prices ({close.size} days), bounds [0, 1000]; "
                "n above the pool size resamples with replacement (ties)"
            ),
        )
    if name == "elevation":
        import matplotlib.cbook as cbook

        dem = np.load(cbook.get_sample_data("jacksboro_fault_dem.npz", asfileobj=False))
        pool = dem["elevation"].astype(np.float64).ravel()
        return (
            pool,
            (0.0, 2000.0),
            (
                f"matplotlib's jacksboro_fault_dem elevations ({pool.size} integer cells, "
                "heavy ties), bounds [0, 2000]; subsampled without replacement"
            ),
        )
    raise ValueError(name)


def draw_data(pool: np.ndarray | None, n: int, gen: np.random.Generator,
              name: str = "normal") -> np.ndarray:
    if name == "integers":
        return np.rint(gen.normal(500.0, 100.0, n))
    if name == "atoms":
        atoms = np.clip(np.round(gen.normal(400.0, 100.0, 1000), 2), 0.0, 1000.0)
        return gen.choice(atoms, n, replace=True)
    if pool is None:
        return gen.normal(0.0, 1.0, n)
    return gen.choice(pool, n, replace=n > pool.size)


def levels(m: int) -> list[float]:
    return [j / (m + 1) for j in range(1, m + 1)]


def score(x: np.ndarray, truth: np.ndarray, out: np.ndarray) -> tuple[float, float]:
    xs = np.sort(x)
    rank = np.abs(np.searchsorted(xs, out) - np.searchsorted(xs, truth))
    return float(np.abs(out - truth).mean()), float(rank.mean())


def run_peer(peer: str, job: dict) -> tuple[list | None, str]:
    from accuracy import env_dir  # one home for the peers' cached environments

    py = env_dir(peer) / "bin" / "python"
    if not py.exists():
        return None, (f"{peer}: no environment at {env_dir(peer).relative_to(ROOT)} "
                      "(run the accuracy benchmark)")
    try:
        proc = subprocess.run(
            [str(py), "-c", PEER_CODE[peer]],
            input=json.dumps(job),
            capture_output=True,
            text=True,
            timeout=1800,
            env={**os.environ, "PYTHONPATH": ""},
        )
    except subprocess.TimeoutExpired:
        return None, f"{peer}: timed out"
    if proc.returncode != 0:
        return None, f"{peer}: failed: {proc.stderr.strip().splitlines()[-1:]}"
    res = json.loads(proc.stdout)
    return res["results"], res["version"]


def time_joint(n: int = 100_000, m: int = 19, reps: int = 3) -> dict:
    x = np.random.default_rng(7).normal(0, 1, n)
    out = {"n": n, "m": m, "reps": reps}
    for eps in (0.5, 2.0):
        mech = JointQuantiles(Quantiles(levels(m), -10.0, 10.0), eps)
        secure = []
        for _ in range(reps):
            t0 = time.perf_counter()
            mech.release(x)  # OS randomness, exactly rounded points
            secure.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        mech.sample(x, 10, simulation(1))
        per_batch = time.perf_counter() - t0
        t0 = time.perf_counter()
        state = mech._setup(mech.query.prepare(x).data)
        fwd = time.perf_counter() - t0
        out[str(eps)] = {
            "secure_release_s": float(np.median(secure)),
            "forward_s": fwd,
            "draw_s": max(per_batch - fwd, 0.0) / 10,
            "eta": state.eta,
        }
    # the library's default without a declared resolution: the same mechanism on the
    # bounds' public fine grid (recipes.default_joint_resolution), 7 chart rows per row
    out["default"] = {}
    for eps in (0.5, 2.0):
        mech = build_quantiles_mechanism(levels(m), eps, bounds=(-10.0, 10.0))
        secure = []
        for _ in range(reps):
            t0 = time.perf_counter()
            mech.release(x)
            secure.append(time.perf_counter() - t0)
        out["default"][str(eps)] = {"secure_release_s": float(np.median(secure)),
                                    "base": mech.base, "resolution": mech.resolution}
    return out


def run_block(dname: str, n: int, trials: int, log_chart: bool = False,
              grid_only: bool = False) -> dict:
    """The instancedp mechanisms on one (dataset, n) block: rows, data and peer tasks
    (``log_chart``: also the joint mechanism on the log chart; the joint mechanism on
    the declared resolution runs where the column declares one; ``grid_only``: only
    that one — the same datasets, as the seeds depend on (n, name) only)."""
    pool, bounds, desc = load_dataset(dname)
    gen = np.random.default_rng([n, len(dname)])
    data = [draw_data(pool, n, gen, dname) for _ in range(trials)]
    rows, peer_tasks = [], []
    for eps in (0.5, 2.0):
        for m in (3, 9, 19):
            qs = levels(m)
            res: dict[tuple, tuple] = {}
            for rel in ("add_remove", "substitution"):
                query = Quantiles(qs, *bounds, neighbours=rel)
                mechs: dict[str, Any] = {
                    "recursive (KSS 2022)": RecursiveQuantiles(query, eps),
                    "unbounded ε/m (Durfee 2023)": UnboundedQuantiles(qs, eps, neighbours=rel),
                    # the utility's sensitivity depends on the relation: run under each
                    "joint (GJK 2021)": JointQuantiles(query, eps),
                }
                if log_chart:
                    mechs[JOINT_LOG] = JointQuantiles(query, eps, base="log")
                if rel == "add_remove":
                    mechs["independent ε/m"] = IndependentQuantiles(query, eps)
                if dname in RESOLUTION:
                    mechs[JOINT_GRID] = JointQuantiles(query, eps, base="grid",
                                                       resolution=RESOLUTION[dname])
                if grid_only:
                    mechs = {k: v for k, v in mechs.items() if k == JOINT_GRID}
                for label, mech in mechs.items():
                    t0 = time.perf_counter()
                    errs = []
                    for k, x in enumerate(data):
                        truth = query.value(x)
                        out = mech.sample(x, 1, simulation([k, n, m]))[0]
                        errs.append(score(x, truth, out))
                    res[(label, rel)] = (errs, time.perf_counter() - t0)
            for (label, _rel), (errs, secs) in list(res.items()):
                if label == "independent ε/m":  # the same law under both relations
                    res[(label, "substitution")] = (errs, secs)
            for k in range(trials):
                peer_tasks.append({"data": k, "qs": qs, "eps_each": eps / m, "eps": eps, "m": m})
            for (label, rel), (errs, secs) in res.items():
                a = np.array(errs)
                rows.append(
                    {
                        "dataset": dname,
                        "n": n,
                        "epsilon": eps,
                        "m": m,
                        "relation": rel,
                        "method": label,
                        "trials": trials,
                        "mean_abs_error": float(a[:, 0].mean()),
                        "median_abs_error": float(np.median(a[:, 0])),
                        "mean_rank_error": float(a[:, 1].mean()),
                        "per_trial_abs_error": a[:, 0].tolist(),
                        "seconds": secs,
                    }
                )
    return {"dname": dname, "n": n, "rows": rows, "peer_tasks": peer_tasks,
            "data": data, "bounds": bounds, "desc": desc}


def recheck_mechanisms(query: Quantiles, eps: float, dname: str,
                       spreads: list[int] | None = None) -> dict[str, Any]:
    """What a re-measured cell runs: the default's candidates (continuous base, log chart,
    the recursive algorithm, and on a declared resolution every grid spread, or
    ``spreads``)."""
    from instancedp.mechanisms.joint_quantiles import DEFAULT_SPREAD, SPREADS

    mechs: dict[str, Any] = {
        "joint (GJK 2021)": JointQuantiles(query, eps),
        JOINT_LOG: JointQuantiles(query, eps, base="log"),
        "recursive (KSS 2022)": RecursiveQuantiles(query, eps),
    }
    if dname in RESOLUTION:
        for s in spreads or SPREADS:
            label = JOINT_GRID + (" (default spread 7)" if s == DEFAULT_SPREAD else
                                  f", spread {s}")
            mechs[label] = JointQuantiles(query, eps, base="grid",
                                          resolution=RESOLUTION[dname], spread=s)
    return mechs


def recheck(dname: str, n: int, eps: float, m: int, trials: int,
            peers: tuple[str, ...] = ("opendp", "tumult"),
            spreads: list[int] | None = None) -> dict:
    """One add/remove cell with more trials: per-level errors of the default's candidates
    and of the peers on the same datasets (the first trials are the table's), and each
    mechanism's error ÷ the better peer with a 95 % paired bootstrap interval over trials."""
    t0 = time.perf_counter()
    pool, bounds, _desc = load_dataset(dname)
    gen = np.random.default_rng([n, len(dname)])  # run_block's datasets, extended
    data = [draw_data(pool, n, gen, dname) for _ in range(trials)]
    qs = levels(m)
    query = Quantiles(qs, *bounds)
    truth = np.array([query.value(x) for x in data])
    per: dict[str, np.ndarray] = {}  # label -> trials × m absolute errors
    for label, mech in recheck_mechanisms(query, eps, dname, spreads).items():
        outs = [mech.sample(x, 1, simulation([k, n, m]))[0] for k, x in enumerate(data)]
        per[label] = np.abs(np.array(outs) - truth)
    job = {"bounds": list(bounds), "grid": 10_001, "data": [x.tolist() for x in data],
           "tasks": [{"data": k, "qs": qs, "eps_each": eps / m, "eps": eps, "m": m}
                     for k in range(trials)]}
    versions = {}
    for peer in peers:
        results, info = run_peer(peer, job)
        if results is None:
            raise RuntimeError(info)
        versions[peer] = info
        per[f"{peer} ε/m"] = np.abs(np.array(results) - truth)
    boot = np.random.default_rng(0).integers(0, trials, (2000, trials))
    means = {k: v.mean(axis=1) for k, v in per.items()}  # per-trial mean over levels
    best_peer = np.min([means[f"{p} ε/m"][boot].mean(axis=1) for p in peers], axis=0)
    peer_mean = min(means[f"{p} ε/m"].mean() for p in peers)
    methods = {}
    for label, errs in per.items():
        ratio = means[label][boot].mean(axis=1) / best_peer
        methods[label] = {
            "mean_abs_error": float(errs.mean()),
            "per_level_abs_error": errs.mean(axis=0).tolist(),
            "per_trial_abs_error": means[label].tolist(),
            "ratio_to_better_peer": float(errs.mean() / peer_mean),
            "ratio_ci95": [float(v) for v in np.percentile(ratio, [2.5, 97.5])],
        }
    return {"dataset": dname, "n": n, "epsilon": eps, "m": m, "trials": trials,
            "relation": "add_remove", "methods": methods, "peer_versions": versions,
            "seconds": time.perf_counter() - t0}


def time_describe(rows: int, columns: int = 10) -> dict:
    """Session.describe on a Parquet file vs DuckDB's exact SUMMARIZE, same run."""
    import tempfile

    import duckdb
    import pandas as pd

    from instancedp import Session
    from instancedp.privacy import PureDP

    gen = np.random.default_rng(11)
    cols = {}
    for j in range(columns):
        kind = j % 3
        cols[f"c{j}"] = (gen.normal(50, 10, rows) if kind == 0 else
                         gen.lognormal(8, 1, rows) if kind == 1 else
                         gen.integers(0, 100, rows).astype(np.int64))
    out: dict[str, Any] = {"rows": rows, "columns": columns}
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "t.parquet")
        pd.DataFrame(cols).to_parquet(path)
        con = duckdb.connect()
        out["duckdb_threads"] = int(con.execute("SELECT current_setting('threads')").fetchone()[0])
        bounds = {c: (0.0, 1e6) for c in cols}
        times: dict[str, list[float]] = {"summarize": [], "bound_free": [], "bounds": []}
        # the three timed in turn, three rounds: a load spike on a shared machine hits all
        for _ in range(3):
            t0 = time.perf_counter()
            con.execute(f"SUMMARIZE SELECT * FROM read_parquet('{path}')").fetchall()
            times["summarize"].append(time.perf_counter() - t0)
            for label, b in (("bound_free", None), ("bounds", bounds)):
                s = Session(path, PureDP(10.0))
                t0 = time.perf_counter()
                s.describe(1.0, bounds=b)
                times[label].append(time.perf_counter() - t0)
                s.close()
        out["duckdb_summarize_s"] = float(np.median(times["summarize"]))
        for label in ("bound_free", "bounds"):
            out[f"describe_{label}_s"] = float(np.median(times[label]))
            out[f"ratio_{label}"] = out[f"describe_{label}_s"] / out["duckdb_summarize_s"]
        out["seconds_each"] = times
    out["load_average"] = os.getloadavg()
    return out


#: DuckDB's memory limit in the describe memory measurement
DESCRIBE_MEMORY_LIMIT = "1GB"


def describe_memory_child(path: str, bounded: bool) -> None:
    """One describe of ``path`` in this (fresh) process; prints seconds and peak RSS."""
    import resource

    import pyarrow.parquet as pq

    import instancedp.describe as desc
    from instancedp import Session
    from instancedp.privacy import PureDP

    desc.ENGINE.update(memory_limit=DESCRIBE_MEMORY_LIMIT, threads=2)
    names = pq.ParquetFile(path).schema_arrow.names
    bounds = {c: (0.0, 1e6) for c in names} if bounded else None
    s = Session(path, PureDP(10.0))
    t0 = time.perf_counter()
    s.describe(1.0, bounds=bounds)
    secs = time.perf_counter() - t0
    s.close()
    # VmHWM: this process image's own peak (ru_maxrss keeps the parent's across exec)
    hwm = [line for line in Path("/proc/self/status").read_text().splitlines()
           if line.startswith("VmHWM:")]
    peak = (int(hwm[0].split()[1]) if hwm
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024
    print(json.dumps({"seconds": secs, "peak_rss_mb": peak}))


def describe_memory(rows_list: tuple[int, ...] = (1_000_000, 10_000_000), columns: int = 4
                    ) -> dict:
    """Peak RSS of describe on Parquet files of each size (DuckDB ``memory_limit`` 1 GB),
    each in a fresh child process, with bounds and without (every column from
    aggregates: without bounds one ``log_bins`` pass per column, its cells and the
    second stages' fetched windows)."""
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    out: dict[str, Any] = {"columns": columns, "memory_limit": DESCRIBE_MEMORY_LIMIT,
                           "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        for rows in rows_list:
            path = str(Path(tmp) / f"m{rows}.parquet")
            gen = np.random.default_rng(12)
            schema = pa.schema([(f"c{j}", pa.float64()) for j in range(columns)])
            with pq.ParquetWriter(path, schema) as w:
                for start in range(0, rows, 1_000_000):
                    k = min(1_000_000, rows - start)
                    w.write_table(pa.table({f"c{j}": (gen.normal(50, 10, k) if j % 2 == 0
                                                      else gen.lognormal(8, 1, k))
                                            for j in range(columns)}, schema=schema))
            for bounded in (True, False):
                cmd = [sys.executable, str(Path(__file__).resolve()),
                       "--describe-memory-child", path] + (["--bounded"] if bounded else [])
                done = subprocess.run(cmd, capture_output=True, text=True, check=True)
                r = json.loads(done.stdout.strip().splitlines()[-1])
                out["runs"].append({"rows": rows, "bounds": bounded, **r})
                print(f"describe memory rows={rows} bounds={bounded}: {r}", file=sys.stderr,
                      flush=True)
    out["load_average"] = os.getloadavg()
    return out


def sign_tests(rows: list[dict]) -> list[dict]:
    """Joint (the bounded default) against each other mechanism: cells won, a two-sided
    sign test over cells, and the geometric mean of the error ratio."""
    from scipy.stats import binomtest

    out = []
    for rel in ("add_remove", "substitution"):
        cells: dict[tuple, dict[str, float]] = {}
        for r in rows:
            if r["relation"] == rel:
                key = (r["dataset"], r["n"], r["epsilon"], r["m"])
                cells.setdefault(key, {})[r["method"]] = r["mean_abs_error"]
        others = dict.fromkeys(m for c in cells.values() for m in c if m != "joint (GJK 2021)")
        for other in others:
            pairs = [(c["joint (GJK 2021)"], c[other]) for c in cells.values()
                     if other in c and "joint (GJK 2021)" in c and c[other] > 0]
            if not pairs:
                continue
            wins = sum(a < b for a, b in pairs)
            ratio = float(np.exp(np.mean([np.log(max(a, 1e-300) / b) for a, b in pairs])))
            p = float(binomtest(wins, len(pairs), 0.5).pvalue)
            out.append({"relation": rel, "other": other, "cells": len(pairs), "joint_wins": wins,
                        "sign_test_p": p, "geomean_ratio": ratio})
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="quantiles")
    ap.add_argument("--trials", type=int, default=None, help="trials per cell (10; quick 2)")
    ap.add_argument("--peer-max-n", type=int, default=None, help="skip the peers above this n")
    ap.add_argument(
        "--retime", action="store_true", help="only redo the joint timing; rewrite the report"
    )
    ap.add_argument("--workers", type=int, default=1, help="processes for the (data, n) blocks")
    ap.add_argument("--describe-rows", type=int, default=None,
                    help="rows of the describe timing file (10⁶; quick 10⁵)")
    ap.add_argument("--ns", type=int, nargs="+", default=None, help="row counts to run")
    ap.add_argument("--append", action="store_true",
                    help="merge into the saved JSON (replacing its rows at these n)")
    ap.add_argument("--no-timing", action="store_true",
                    help="skip the joint and describe timings (kept from the saved JSON)")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite the report from the saved JSON (no runs)")
    ap.add_argument("--merge", nargs="+", default=None,
                    help="fold the rows of docs/results/NAME.json (other steps' --out) into "
                         "--out's JSON (replacing its rows of the same data and n; timings "
                         "taken where present), then rewrite the report")
    ap.add_argument("--datasets", nargs="+", default=None, help="datasets to run")
    ap.add_argument("--drop-note", action="append", default=[],
                    help="drop the notes containing this text (superseded by a later step)")
    ap.add_argument("--describe-only", action="store_true",
                    help="with --retime: only the describe timing (the joint's kept)")
    ap.add_argument("--drop-command", action="append", default=[],
                    help="with --merge/--report-only: drop the listed steps containing this "
                         "text (steps whose rows a later step replaced)")
    ap.add_argument("--describe-memory", action="store_true",
                    help="with --retime: also describe's peak RSS at 10^6 and 10^7 rows "
                         "(quick: 10^5 and 10^6)")
    ap.add_argument("--describe-memory-child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--bounded", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--note", action="append", default=[],
                    help="a line added to the report's notes (with --merge/--report-only)")
    ap.add_argument("--log-chart", action="store_true",
                    help="also run the joint mechanism on the log chart (base='log')")
    ap.add_argument("--grid-only", action="store_true",
                    help="run only the joint mechanism on the declared resolution (no peers, "
                         "no timing) and put its rows into --out's saved JSON")
    ap.add_argument("--recheck", nargs=4, action="append", default=None,
                    metavar=("DATA", "N", "EPS", "M"),
                    help="re-measure one add/remove cell with --trials trials (per-level "
                         "errors, the default's candidates, both peers, bootstrap intervals) "
                         "and put it into --out's saved JSON; repeatable")
    ap.add_argument("--recheck-peers", nargs="+", default=["opendp", "tumult"],
                    choices=["opendp", "tumult"], help="peers of --recheck (both)")
    ap.add_argument("--recheck-spreads", nargs="+", type=int, default=None,
                    help="grid spreads of --recheck (all)")
    args = ap.parse_args(argv)
    if args.describe_memory_child:
        describe_memory_child(args.describe_memory_child, args.bounded)
        return {}
    command = "benchmarks/quantiles.py " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.report_only or args.merge:
        res = json.loads((OUT / f"{args.out}.json").read_text())
        for name in args.merge or []:
            other = json.loads((OUT / f"{name}.json").read_text())
            keys = {(r["dataset"], r["n"]) for r in other["rows"]}
            res["rows"] = [r for r in res["rows"] if (r["dataset"], r["n"]) not in keys]
            res["rows"] += other["rows"]
            res["notes"] = list(dict.fromkeys(res["notes"] + other["notes"]))
            res["peer_versions"] = {**other["peer_versions"], **res["peer_versions"]}
            res["seconds"] += other["seconds"]
            for k in ("timing", "describe_timing"):
                if other.get(k):
                    res[k] = other[k]
            res["commands"] = commands_of(res) + commands_of(other)
        # --drop-note removes earlier notes only; this step's --note lines are kept
        res["notes"] = list(dict.fromkeys(
            [n for n in res["notes"] if not any(d in n for d in args.drop_note)] + args.note))
        if (args.note or args.drop_note or args.drop_command) and not args.merge:
            res["commands"] = commands_of(res) + [command]
        if args.merge:
            order = {d: i for i, d in enumerate(("normal", "integers", "goog", "elevation"))}
            res["rows"].sort(key=lambda r: (order.get(r["dataset"], 9), r["n"], r["epsilon"],
                                            r["m"]))
            res["sign_tests"] = sign_tests(res["rows"])
            res["commands"] = res["commands"] + [command]
        res["commands"] = [c for c in commands_of(res)
                           if c == command or not any(d in c for d in args.drop_command)]
        write(res, args.out)
        return res
    if args.recheck:
        res = json.loads((OUT / f"{args.out}.json").read_text())
        done = [recheck(d, int(n), float(e), int(m), args.trials or 100,
                        tuple(args.recheck_peers), args.recheck_spreads)
                for d, n, e, m in args.recheck]
        keys = {(r["dataset"], r["n"], r["epsilon"], r["m"]) for r in done}
        res["rechecks"] = [r for r in res.get("rechecks", [])
                           if (r["dataset"], r["n"], r["epsilon"], r["m"]) not in keys] + done
        res["seconds"] += sum(r["seconds"] for r in done)
        res["commands"] = commands_of(res) + [command]
        write(res, args.out)
        return res
    if args.grid_only:
        res = json.loads((OUT / f"{args.out}.json").read_text())
        t0 = time.perf_counter()
        new = []
        for d in args.datasets or list(RESOLUTION):
            for n in args.ns or [1000, 10_000]:
                new += run_block(d, n, args.trials or 20, grid_only=True)["rows"]
                print(f"{d} n={n} done", file=sys.stderr, flush=True)
        keys = {(r["dataset"], r["n"], r["method"]) for r in new}
        res["rows"] = [r for r in res["rows"]
                       if (r["dataset"], r["n"], r["method"]) not in keys] + new
        order = {d: i for i, d in enumerate(("normal", "integers", "goog", "elevation"))}
        res["rows"].sort(key=lambda r: (order.get(r["dataset"], 9), r["n"], r["epsilon"],
                                        r["m"]))
        res["sign_tests"] = sign_tests(res["rows"])
        res["seconds"] += time.perf_counter() - t0
        res["commands"] = commands_of(res) + [command]
        write(res, args.out)
        return res
    if args.retime:
        res = json.loads((OUT / f"{args.out}.json").read_text())
        if not args.describe_only:
            res["timing"] = time_joint()
        res["describe_timing"] = time_describe(args.describe_rows or 1_000_000)
        if args.describe_memory:
            res["describe_memory"] = describe_memory(
                (100_000, 1_000_000) if args.quick else (1_000_000, 10_000_000))
        if not args.describe_only:
            res["timing"]["load_average"] = os.getloadavg()
        res["commands"] = commands_of(res) + [command]
        write(res, args.out)
        return res
    quick = args.quick
    ns = args.ns or ([1000, 10_000] if quick else [1000, 10_000, 100_000])
    datasets = args.datasets or (["normal", "goog"] if quick else ["normal", "goog", "elevation"])
    trials = args.trials or (2 if quick else 10)
    t_start = time.perf_counter()
    rows, notes, versions = [], [], {}
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    blocks = [(d, n) for d in datasets for n in ns]
    if args.workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.workers) as ex:
            futs = [ex.submit(run_block, d, n, trials, args.log_chart) for d, n in blocks]
            done = [f.result() for f in futs]
    else:
        done = [run_block(d, n, trials, args.log_chart) for d, n in blocks]
    for block in done:
        dname, n, data, bounds = block["dname"], block["n"], block["data"], block["bounds"]
        peer_tasks = block["peer_tasks"]
        rows += block["rows"]
        if f"{dname}: {block['desc']}" not in notes:
            notes.append(f"{dname}: {block['desc']}")
        log(f"{dname} n={n} done ({time.perf_counter() - t_start:.0f} s)")
        job = {
            "bounds": list(bounds),
            "grid": 10_001,
            "tasks": peer_tasks,
            "data": [x.tolist() for x in data],
        }
        for peer in ("opendp", "tumult"):
            if args.peer_max_n is not None and n > args.peer_max_n:
                info = f"{peer}: not run above n = {args.peer_max_n} (--peer-max-n, for time)"
                if info not in notes:
                    notes.append(info)
                continue
            t0 = time.perf_counter()
            results, info = run_peer(peer, job)
            if results is None:
                if info not in notes:
                    notes.append(info)
                log(info)
                continue
            versions[peer] = info
            cells: dict[tuple, list] = {}
            for task, out in zip(peer_tasks, results, strict=True):
                x = data[task["data"]]
                query = Quantiles(task["qs"], *bounds)
                cells.setdefault((task["eps"], task["m"]), []).append(
                    score(x, query.value(x), np.array(out))
                )
            for (eps, m), errs in cells.items():
                a = np.array(errs)
                rows.append(
                    {
                        "dataset": dname,
                        "n": n,
                        "epsilon": eps,
                        "m": m,
                        "relation": "add_remove",
                        "method": f"{peer} ε/m",
                        "trials": trials,
                        "mean_abs_error": float(a[:, 0].mean()),
                        "median_abs_error": float(np.median(a[:, 0])),
                        "mean_rank_error": float(a[:, 1].mean()),
                        "per_trial_abs_error": a[:, 0].tolist(),
                        "seconds": (time.perf_counter() - t0) / len(cells),
                    }
                )
            log(f"{peer} {dname} n={n} done ({time.perf_counter() - t_start:.0f} s)")
    old = json.loads((OUT / f"{args.out}.json").read_text()) if args.append else {}
    if old:
        rows = [r for r in old["rows"] if r["n"] not in ns] + rows
        notes = list(dict.fromkeys(old["notes"] + notes))
        versions = {**old["peer_versions"], **versions}
    if args.no_timing:
        timing, describe_timing = old.get("timing"), old.get("describe_timing")
    else:
        timing = time_joint(reps=1 if quick else 3)
        describe_timing = time_describe(args.describe_rows or (100_000 if quick else 1_000_000))
    result = {
        "quick": quick,
        "seconds": time.perf_counter() - t_start + old.get("seconds", 0.0),
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version()},
        "notes": notes,
        "peer_versions": versions,
        "timing": timing,
        "describe_timing": describe_timing,
        "describe_memory": (describe_memory((100_000, 1_000_000) if quick else
                                            (1_000_000, 10_000_000))
                            if args.describe_memory else old.get("describe_memory")),
        "sign_tests": sign_tests(rows),
        "commands": (commands_of(old) if old else []) + [command],
        "rows": rows,
    }
    write(result, args.out)
    return result


def commands_of(res: dict) -> list[str]:
    """The command lines that produced a saved result (one per step)."""
    return list(dict.fromkeys(res.get("commands") or [f"benchmarks/quantiles.py{_flags(res)}"]))


def _flags(res: dict) -> str:
    trials = res["rows"][0]["trials"]
    flags = " --quick" if res["quick"] else ""
    if trials != (2 if res["quick"] else 10):
        flags += f" --trials {trials}"
    return flags


def trials_text(rows: list[dict]) -> str:
    """'20 trials per cell at n = 1000, 10000; 10 at n = 100000' (trials by row count)."""
    by: dict[int, list[int]] = {}
    for r in rows:
        by.setdefault(r["trials"], [])
        if r["n"] not in by[r["trials"]]:
            by[r["trials"]].append(r["n"])
    parts = [f"{t} at n = {', '.join(str(n) for n in sorted(ns))}" for t, ns in by.items()]
    return "trials per cell: " + "; ".join(parts) if len(parts) > 1 else (
        f"{next(iter(by))} trials per cell")


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def goal_rows(rows: list[dict]) -> list[str]:
    """Markdown rows: joint (uniform, then log chart) ÷ the better peer per (data, n, ε),
    for m = 3 and m = 9."""
    best: dict[tuple, float] = {}
    peers: dict[tuple, list[str]] = {}  # (data, n, ε) -> the peers that ran
    joint: dict[str, dict[tuple, float]] = {"joint (GJK 2021)": {}, JOINT_GRID: {},
                                            JOINT_LOG: {}}
    for r in rows:
        if r["relation"] != "add_remove" or r["m"] not in (3, 9):
            continue
        key = (r["dataset"], r["n"], r["epsilon"], r["m"])
        if r["method"] in joint:
            joint[r["method"]][key] = r["mean_abs_error"]
        elif r["method"] in ("opendp ε/m", "tumult ε/m"):
            best[key] = min(best.get(key, np.inf), r["mean_abs_error"])
            names = peers.setdefault(key[:3], [])
            if r["method"] not in names:
                names.append(r["method"])
    out = []
    for d, n, eps in dict.fromkeys(k[:3] for k in best):
        names = peers[(d, n, eps)]
        cells = ["both" if len(names) > 1 else names[0].split()[0]]
        for table in joint.values():
            for m in (3, 9):
                k = (d, n, eps, m)
                cells.append(f"{table[k] / best[k]:.2f}×" if k in best and k in table else "–")
        out.append(f"| {d} | {n} | {eps:g} | " + " | ".join(cells) + " |")
    return out


def write(res: dict, name: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rows = res["rows"]
    (OUT / f"{name}.json").write_text(json.dumps(res, indent=1))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    t = res.get("timing")
    lines = [
        "# Several quantiles at total ε",
        "",
        f"Generated by `benchmarks/quantiles.py` ({len(commands_of(res))} runs merged, listed "
        f"at the end) in {res['seconds']:.0f} s on a machine with "
        f"{res['machine']['cpu_count']} cores "
        f"({trials_text(rows)}, a fresh dataset per trial).  Levels j/(m+1), "
        "j = 1 … m.  Cell = mean over trials of the mean over the m levels of "
        "|release − empirical quantile| (median over trials in brackets).  The independent "
        "mechanisms have the same law under both relations; the joint mechanism's utility "
        "has sensitivity 2·(1 − 1/(m+1)) under add/remove and 2 under substitution; the "
        "recursive algorithm spends ε/(2L) per mechanism under substitution (L = ⌈log2(m+1)⌉); "
        "OpenDP and Tumult are add/remove mechanisms at ε/m each (OpenDP on a grid of "
        "10 001 candidates between the bounds).",
        "",
        "Data:",
        *[f"- {s}" for s in res["notes"]],
        "",
        "Peers: " + (", ".join(res["peer_versions"].values()) or "none run (see notes)") + ".",
        "",
        (
            f"**Joint sampler time at n = {t['n']}, m = {t['m']}** (one secure release: "
            "forward pass + exact draw, OS randomness, exactly rounded points; median of "
            + str(t.get("reps", 3))
            + (f"; load average {t['load_average'][0]:.1f} on "
               f"{res['machine']['cpu_count']} cores" if "load_average" in t else "")
            + "): "
            + "; ".join(
                f"ε = {e}: {t[e]['secure_release_s']:.2f} s (forward {t[e]['forward_s']:.2f} s,"
                f" then {t[e]['draw_s'] * 1000:.0f} ms per further draw; margin η = "
                f"{t[e]['eta']:.1e})"
                for e in ("0.5", "2.0")
            )
            + ("; the library's default without a declared resolution (the same mechanism "
               "on the bounds' public grid of 2^−24 of their width, 7 chart rows per row): "
               + "; ".join(f"ε = {e}: {t['default'][e]['secure_release_s']:.2f} s"
                           for e in ("0.5", "2.0")) if "default" in t else "")
            + "."
        ) if t else "Joint sampler time: not measured in this run (--no-timing).",
        "",
        f"![mean error against m, add/remove]({name}.png)",
        "",
    ]
    d = res.get("describe_timing")
    if d:
        lines += [
            f"**describe on a {d['rows']:,}-row, {d['columns']}-column Parquet file** (median "
            "of 3" + (" rounds, the three timed in turn in each" if "seconds_each" in d else "")
            + f", same run): DuckDB's exact `SUMMARIZE` {d['duckdb_summarize_s']:.2f} s "
            f"({d['duckdb_threads']} threads); `Session.describe(ε = 1)` without bounds "
            f"{d['describe_bound_free_s']:.2f} s ({d['ratio_bound_free']:.2f}×), with bounds "
            f"{d['describe_bounds_s']:.2f} s ({d['ratio_bounds']:.2f}×), each with its "
            "default 95 % error bars"
            + (f"; load average {d['load_average'][0]:.1f} on "
               f"{res['machine']['cpu_count']} cores" if "load_average" in d else "") + ".",
            "",
        ]
    mem = res.get("describe_memory")
    if mem:
        runs = mem["runs"]
        lines += [
            f"**describe's peak memory** ({mem['columns']} columns of Parquet, DuckDB "
            f"`memory_limit = '{mem['memory_limit']}'`, 2 threads; each run in a fresh "
            "process, peak RSS = its `VmHWM`, which includes the interpreter and the "
            "libraries):",
            "",
            "| rows | bounds | seconds | peak RSS MB |",
            "|---:|:---|---:|---:|",
        ]
        lines += [f"| {r['rows']:,} | {'yes' if r['bounds'] else 'no (bound-free)'} | "
                  f"{r['seconds']:.1f} | {r['peak_rss_mb']:.0f} |" for r in runs]
        lines += [
            "",
            "Every column is released from DuckDB aggregates (one pass of counts, "
            "minima, maxima and the exact sum per cell, then a few order windows; "
            "without bounds the range step first reads one aggregate of the rows' "
            "cells on a geometric grouping, the median's window and one histogram "
            "around it), so "
            "Python never holds a column: the peak is bounded by the "
            "interpreter and libraries, DuckDB's `memory_limit` and at most 2¹⁸ fetched "
            "rows per read, whatever the number of rows (what grows between the two "
            "sizes is DuckDB's own buffer use, within its limit).",
            "",
        ]
    goal = goal_rows(rows)
    if goal:
        lines += [
            "## The default against the peers (add/remove, quartiles m = 3 and deciles m = 9)",
            "",
            "Joint mechanism's mean error ÷ the better of OpenDP and Tumult at ε/m each "
            "(÷ the one that ran where the 'peers' column names one; goal: ≤ 1.0× on "
            "quartiles, ≤ 0.5× on deciles, every cell); uniform base "
            "measure (the default without a declared resolution), on the column's declared "
            "resolution (base 'grid', the default with one; – where the column declares "
            "none) and the log chart.",
            "",
            "| data | n | ε | peers | quartiles (m = 3) | deciles (m = 9) | quartiles, "
            "declared resolution | deciles, declared resolution | quartiles, log chart | "
            "deciles, log chart |",
            "|---|---|---|---|---|---|---|---|---|---|",
            *goal,
            "",
        ]
    lines += recheck_lines(res.get("rechecks") or [])
    tests = res.get("sign_tests")
    if tests:
        lines += [
            "## The default: joint against each mechanism, over all cells",
            "",
            "Sign test over cells (two-sided; H0: each mechanism equally likely to have the "
            "lower mean error) and the geometric mean of the joint mechanism's error ÷ the "
            "other's (below 1: joint better).",
            "",
            "| relation | against | cells | joint better | sign-test p | geomean joint ÷ other |",
            "|---|---|---|---|---|---|",
        ]
        for t in tests:
            lines.append(
                f"| {t['relation'].replace('_', '/')} | {t['other']} | {t['cells']} | "
                f"{t['joint_wins']} | {t['sign_test_p']:.2g} | {t['geomean_ratio']:.2f} |"
            )
        lines.append("")
    for rel in ("add_remove", "substitution"):
        lines += [f"## {rel.replace('_', '/')} neighbours", ""]
        cols = [m for m in methods if any(r["method"] == m and r["relation"] == rel for r in rows)]
        lines.append("| data | n | ε | m | " + " | ".join(cols) + " | best |")
        lines.append("|---" * (5 + len(cols)) + "|")
        keys = dict.fromkeys((r["dataset"], r["n"], r["epsilon"], r["m"]) for r in rows)
        for key in keys:
            cell = {
                r["method"]: r
                for r in rows
                if r["relation"] == rel and (r["dataset"], r["n"], r["epsilon"], r["m"]) == key
            }
            vals = [
                f"{_fmt(cell[c]['mean_abs_error'])} ({_fmt(cell[c]['median_abs_error'])})"
                if c in cell
                else "–"
                for c in cols
            ]
            best = min(cell, key=lambda c: cell[c]["mean_abs_error"])
            lines.append(
                f"| {key[0]} | {key[1]} | {key[2]:g} | {key[3]} | "
                + " | ".join(vals)
                + f" | {best} |"
            )
        lines.append("")
    lines += ["## Mean rank error (data points between release and truth), add/remove", ""]
    cols = [m for m in methods]
    lines.append("| data | n | ε | m | " + " | ".join(cols) + " |")
    lines.append("|---" * (4 + len(cols)) + "|")
    for key in dict.fromkeys((r["dataset"], r["n"], r["epsilon"], r["m"]) for r in rows):
        cell = {
            r["method"]: r
            for r in rows
            if r["relation"] == "add_remove" and (r["dataset"], r["n"], r["epsilon"], r["m"]) == key
        }
        lines.append(
            f"| {key[0]} | {key[1]} | {key[2]:g} | {key[3]} | "
            + " | ".join(_fmt(cell[c]["mean_rank_error"]) if c in cell else "–" for c in cols)
            + " |"
        )
    lines += ["", "## How this report was produced", "",
              "Each run of `benchmarks/quantiles.py`, in order (the text of `--note` and "
              "`--drop-note` is under Data above):", ""]
    lines += [f"{i}. `{_without_notes(c)}`" for i, c in enumerate(commands_of(res), 1)]
    lines.append("")
    (OUT / f"{name}.md").write_text("\n".join(lines))
    plot(res, OUT / f"{name}.png")


def _without_notes(command: str) -> str:
    """A recorded command with the text of its notes elided (the report lists the notes)."""
    return re.sub(r" --(drop-)?note .*?(?= --[a-z]|$)", lambda m: f" --{m.group(1) or ''}note …",
                  command)


def recheck_lines(rechecks: list[dict]) -> list[str]:
    """Markdown: the cells re-measured with more trials (``--recheck``)."""
    if not rechecks:
        return []
    out = [
        "## Cells re-measured with more trials (add/remove)",
        "",
        "The same datasets as the table's (its trials are the first ones here), more of "
        "them; each mechanism's mean error, ÷ the better of OpenDP and Tumult with a 95 % "
        "paired bootstrap interval over trials (2,000 resamples), and the mean error at "
        "each level j/(m+1).",
        "",
    ]
    for r in rechecks:
        peers = " and ".join(p.split()[0] for p in r["peer_versions"].values())
        out += [
            f"**{r['dataset']}, n = {r['n']}, ε = {r['epsilon']:g}, m = {r['m']}** "
            f"({r['trials']} trials; peers: {peers}):",
            "",
            "| mechanism | mean error | ÷ better peer (95 % CI) | error per level |",
            "|---|---|---|---|",
        ]
        for label, v in r["methods"].items():
            lo, hi = v["ratio_ci95"]
            levels_ = " ".join(_fmt(e) for e in v["per_level_abs_error"])
            out.append(f"| {label} | {_fmt(v['mean_abs_error'])} | "
                       f"{v['ratio_to_better_peer']:.2f}× ({lo:.2f}–{hi:.2f}) | {levels_} |")
        out.append("")
    return out


def plot(res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in res["rows"] if r["relation"] == "add_remove"]
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    ran: dict[int, set[str]] = {}
    for r in rows:
        if r["method"] in ("opendp ε/m", "tumult ε/m"):
            ran.setdefault(r["n"], set()).add(r["method"])
    both = [k for k, v in ran.items() if len(v) == 2]
    # the largest n both peers ran at (else the largest any peer ran at, else any n)
    n = max(both or list(ran) or [r["n"] for r in rows])
    fig, axes = plt.subplots(2, len(datasets), figsize=(4.2 * len(datasets), 7), squeeze=False)
    methods = list(dict.fromkeys(r["method"] for r in rows))
    for i, eps in enumerate((0.5, 2.0)):
        for j, d in enumerate(datasets):
            ax = axes[i][j]
            for method in methods:
                pts = sorted(
                    (r["m"], r["mean_abs_error"])
                    for r in rows
                    if r["method"] == method
                    and r["dataset"] == d
                    and r["epsilon"] == eps
                    and r["n"] == n
                )
                if pts:  # one colour per method in every panel
                    ax.plot(*zip(*pts, strict=True), marker="o", label=method,
                            color=f"C{methods.index(method) % 10}")
            ax.set_yscale("log")
            ax.set_title(f"{d}, n = {n}, ε = {eps:g} (add/remove)", fontsize=9)
            ax.set_xlabel("m quantiles")
            ax.set_ylabel("mean |error|")
    handles = {}
    for ax in axes.ravel():
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    axes[0][0].legend(handles.values(), handles.keys(), fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
