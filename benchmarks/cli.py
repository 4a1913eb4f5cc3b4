"""Wall time of ``instancedp release`` on a 10^7-row Parquet file (median), via DuckDB.

Writes docs/results/cli.md and docs/results/cli.json.  The end-to-end time is
the median of a few ``instancedp release`` subprocess runs (secure
randomness, default smooth-sensitivity mechanism, a fresh ledger each run);
the share per stage comes from one fresh process that runs the same release
path with a timer around each stage (``STAGES`` below; the run with the
median total of ``--repeats`` is reported):

- interpreter start (``python -c pass``) and imports;
- read: DuckDB reads the column from Parquet into a float64 array, with the
  NULL/NaN/emptiness checks;
- building the mechanism (its calibration);
- the query value and its exact smooth sensitivity;
- ledger: open and the ``BEGIN IMMEDIATE`` charge (fsync'd);
- noise: one exactly rounded secure sample (``instancedp.noise.exact``).

Usage: ``python benchmarks/cli.py [--rows N] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "results"


_STAGE_NAMES = {
    "imports": "imports (typer, numpy, scipy, duckdb, pyarrow, instancedp, flint)",
    "read": "read (DuckDB Parquet → float64 + NULL/NaN/empty checks)",
    "build": "build + validate the mechanism (calibration)",
    "prepare": "prepare (validate, clamp, sort once)",
    "value": "query value (median, on the sorted data)",
    "smooth_sensitivity": "exact smooth sensitivity (on the sorted data)",
    "ledger": "ledger: open + BEGIN IMMEDIATE charge (fsync)",
    "noise": "noise: one exactly rounded secure sample (first, cold)",
}


def _cli_python(*args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True)
    return time.perf_counter() - t0


def _cli(*args: str) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "instancedp.cli", *args], capture_output=True, text=True
    )
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"instancedp {' '.join(args)} failed: {r.stderr}")
    return dt


# The CLI's release path with a timer around each stage, in a fresh process (so
# that imports are counted as they are in a real `instancedp release` run).
STAGES = r"""
import json, statistics, sys, time
t0 = time.perf_counter()
import duckdb, numpy as np, pyarrow
import instancedp.cli
from instancedp.io import read_column
from instancedp.ledger import Ledger
from instancedp.mechanisms.base import add_noise
from instancedp.privacy import PureDP
from instancedp.random import SecureRandom
from instancedp.session import build_mechanism
import instancedp.mechanisms.smooth, instancedp.noise.exact
out = {"imports": time.perf_counter() - t0}
path, ledger = sys.argv[1], sys.argv[2]
t = time.perf_counter(); x = read_column(path, "price"); out["read"] = time.perf_counter() - t
t = time.perf_counter()
mech = build_mechanism("median", 1.0, bounds=(0, 1000), n=len(x))
gamma = mech._gamma_for(len(x)); cal = mech._calibration(gamma)
out["build"] = time.perf_counter() - t
t = time.perf_counter(); p = mech.query.prepare(x); out["prepare"] = time.perf_counter() - t
t = time.perf_counter(); v = mech.query.value(p); out["value"] = time.perf_counter() - t
t = time.perf_counter(); ss = mech.query.smooth_sensitivity(p, gamma)
out["smooth_sensitivity"] = time.perf_counter() - t
t = time.perf_counter()
with Ledger(ledger) as led:
    led.ensure_budget("default", PureDP(10.0))
    led.charge("default", mech.guarantee)
out["ledger"] = time.perf_counter() - t
src = SecureRandom()
t = time.perf_counter(); add_noise(v, ss, cal.noise, src); out["noise"] = time.perf_counter() - t
reps = []
for _ in range(51):
    t = time.perf_counter(); add_noise(v, ss, cal.noise, src); reps.append(time.perf_counter() - t)
out["noise_warm_median"] = statistics.median(reps)
t = time.perf_counter(); np.sort(x); out["numpy_sort"] = time.perf_counter() - t
print(json.dumps(out))
"""


def _stages(path: Path, ledger: Path) -> dict:
    r = subprocess.run(
        [sys.executable, "-c", STAGES, str(path), str(ledger)], capture_output=True, text=True
    )
    if r.returncode != 0:
        raise SystemExit(f"stage run failed: {r.stderr}")
    return json.loads(r.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="instancedp-bench-"))
    path = tmp / "prices.parquet"
    rng = np.random.default_rng(0)
    n = args.rows
    pq.write_table(
        pa.table(
            {
                "price": rng.lognormal(3.5, 0.6, n),
                "region": pa.array(rng.integers(0, 4, n).astype(np.int8)),
            }
        ),
        path,
    )
    size_mb = path.stat().st_size / 2**20
    release_args = [
        "release", "--owner", str(path), "--column", "price", "--statistic", "median",
        "--epsilon", "1", "--bounds", "0", "1000", "--json",
    ]  # fmt: skip

    # End to end (subprocess), a fresh ledger each run.
    walls = []
    for i in range(args.repeats):
        led = tmp / f"ledger{i}.db"
        walls.append(_cli(*release_args, "--ledger", str(led), "--budget-epsilon", "10"))
    wall = statistics.median(walls)
    python_start = statistics.median([_cli_python("-c", "pass") for _ in range(args.repeats)])
    runs = [_stages(path, tmp / f"stages{i}.db") for i in range(args.repeats)]
    # One run's shares (the run with the median total), as the standards ask.
    runs.sort(key=lambda r: sum(v for k, v in r.items() if k in _STAGE_NAMES))
    st = runs[len(runs) // 2]
    stages = {label: st[key] for key, label in _STAGE_NAMES.items()}
    stages = {"interpreter start": python_start, **stages}
    total_stages = sum(stages.values())
    t_sort = st["numpy_sort"]
    t_sens = st["prepare"] + st["value"] + st["smooth_sensitivity"]
    result = {
        "rows": n,
        "parquet_mb": round(size_mb, 1),
        "cpu_count": os.cpu_count(),
        "machine": platform.platform(),
        "python": platform.python_version(),
        "repeats": args.repeats,
        "wall_seconds_median": wall,
        "wall_seconds_runs": walls,
        "stages_seconds": stages,
        "stage_runs": runs,
        "noise_warm_median_seconds": st["noise_warm_median"],
        "stages_sum_seconds": total_stages,
        "numpy_sort_seconds": t_sort,
        "sensitivity_over_sort": t_sens / t_sort,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "cli.json").write_text(json.dumps(result, indent=2))
    lines = [
        "# `instancedp release` on a 10^7-row Parquet file",
        "",
        f"Produced by `python benchmarks/cli.py` (rows = {n:,}, {size_mb:.0f} MB Parquet, "
        f"lognormal prices, median with bounds [0, 1000], ε = 1, default smooth-sensitivity "
        f"mechanism with PolyPlace noise, secure randomness, a fresh SQLite ledger). "
        f"Machine: {os.cpu_count()} cores (os.cpu_count()), {platform.platform()}, Python "
        f"{platform.python_version()}; shared with other jobs while measured, so absolute "
        "times are noisy — the shares come from one run.",
        "",
        f"**End to end (subprocess, median of {args.repeats}): {wall:.2f} s** "
        f"(runs: {', '.join(f'{w:.2f}' for w in walls)} s).",
        "",
        "| stage | seconds | share of the stage sum |",
        "|---|---|---|",
    ]
    for k, v in stages.items():
        lines.append(f"| {k} | {v:.4g} | {100 * v / total_stages:.1f}% |")
    lines += [
        f"| **sum of stages** | {total_stages:.3f} | 100% |",
        "",
        f"For scale: one `numpy.sort` of the column takes {t_sort:.3f} s. The mechanism "
        f"prepares the data once ({st['prepare']:.3f} s: validate, clamp, sort), then "
        f"computes the median ({st['value']:.4f} s) and its smooth sensitivity "
        f"({st['smooth_sensitivity']:.4f} s) on the sorted array: together "
        f"{t_sens / t_sort:.2f}× one sort. A warm "
        f"secure noise sample takes {1e3 * st['noise_warm_median']:.3f} ms (median of 51).",
        "",
        f"The stages (one fresh process) sum to {total_stages:.2f} s against {wall:.2f} s "
        "end to end (median run); the end-to-end run also re-checks the column in the "
        "Session and prints JSON. "
        + (
            "The stage run was the slower one here: the gap is run-to-run noise on this "
            "shared machine."
            if total_stages > wall
            else f"The remaining {wall - total_stages:.2f} s is those steps, process teardown "
            "and run-to-run noise on this shared machine."
        ),
        "",
        "Largest shares in this run: "
        + ", ".join(
            f"{k.split(' (')[0]} {100 * v / total_stages:.0f}%"
            for k, v in sorted(stages.items(), key=lambda kv: -kv[1])[:3]
        )
        + ".",
    ]
    (OUT / "cli.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()


if __name__ == "__main__":
    main()
