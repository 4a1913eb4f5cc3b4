"""Accuracy of private quantiles against the peers, per neighbour relation.

One benchmark, one JSON: ``docs/results/accuracy.{md,json,png}`` (every
configuration, synthetic cells for tuning and real columns for reporting) and
``docs/results/neighbours.{md,json,png}`` (the real cells read per relation:
the library's default under add/remove against every add/remove peer
configuration, under substitution against every substitution one).

Peers run in their own virtual environments, created by this script and cached
by version under ``.bench-envs/<peer>-<version>/`` (git-ignored), one process
per environment over all cells: diffprivlib (scikit-learn < 1.6; its
``quantile`` is the exponential mechanism with a uniform base, ε stated for
one substitution), OpenDP (``make_private_quantile`` on several candidate
grids, with an unsized domain for add/remove and a sized one — one
substitution is d_in = 2 — for substitution) and Tumult Core
(``NoisyQuantile``, add/remove; it pins numpy 1.26 and pandas 1.5).

Trials.  Each cell draws S subsamples (with replacement, seeded) of its column
and releases D times on each (``Mechanism.sample``: one weights computation
per subsample, D draws; the peers are called D times), S·D trials in all.
Scores: the mean absolute error (MAE) over the trials and the median absolute
error, against the subsample's own order statistic x_m, m = max(1, ⌈q·n⌉).
Every method sees the same subsamples.

Bounds are public: "wide" puts the column's range in 5 % of the bounds
(lower = min − 2w, upper = max + 17w, w = max − min of the whole column);
"x100" in 1 % (lower = min − 10w, upper = max + 89w), where the bound-free
release (``bounds=None``) is compared with the best bounded peer.  The
declared resolution of a column (1 where its documentation says integer
counts; in a real pipeline a Parquet/Arrow/SQL integer type) is public
schema, never inferred from the values.

Running.  Work is split into (group, chunk of cells) worker processes, ``--jobs``
at a time (default 2); the groups are instancedp, diffprivlib, OpenDP per
relation and Tumult.  Every (group, cell) is written to its own file under
``.bench-cache/accuracy/<configuration>/`` (git-ignored) as soon as it is
done, and instancedp's cells are keyed by a hash of the library's release
code: an interrupted run resumes where it stopped when the same command is
run again, and a run after a library change redraws instancedp only.

``--quick``: 3 columns (2 real, 1 synthetic), 10 × 5 = 50 trials per cell,
the defaults and the private tie choice only, OpenDP without its 4,001-point
grid; peers included when their environment exists: about 50 CPU-seconds
(under a minute on two idle cores; 2 min 44 s on a machine loaded to 18
runnable processes).  Full (no options):
11 columns (6 real, 5 synthetic: the fifth, ``normal-4200``, far from 0, on its
own generator), 220 cells (the 160 of q = 0.5 and 0.9 with wide and x100 bounds,
then the bound-free rows at q = 0.1: x100 only, and ``normal-4200``'s 20), 100 × 5
= 500 trials per cell, creates the peers' environments when missing.  Cost,
measured in CPU seconds per cell (``time.process_time`` in each worker; a
100-trial run of the 160-cell configuration scaled to 500 trials): OpenDP 14
CPU-minutes (both relations; its 4,001-point grid is the largest part),
instancedp 8, Tumult 2.5, diffprivlib 2, the workers' imports under 1: about 27
CPU-minutes in all, about 14 minutes of wall time with ``--jobs 2`` on two idle
cores (on a machine loaded to 12 runnable processes the 100-trial run took 18
minutes: the CPU seconds do not change, the wall time does).  The bound-free
sweep (``bound_free_variants``: 6 configurations on the 140 x100 cells) took 503
CPU-seconds for instancedp's 132 x100 cells with ``--bound-free-only``; the 60
added cells add about 37 % to the peers' time: about 45 CPU-minutes in all, some
23 minutes of wall time with ``--jobs 2`` on two idle cores (an estimate from
these parts; the whole run was not timed in one piece after the cells were
added).
``--subsamples`` scales it linearly.

Tuning the bound-free release: ``--bound-free-only --only-kind synthetic --out
DIR`` (DIR holding a copy of the saved JSON) redraws the synthetic x100 cells
only and writes the sweep's table and choice (``SELECTION``) without drawing
the real columns; ``--bound-free-only`` then reports the real ones.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ENVS = ROOT / ".bench-envs"
# peer → (distribution, pinned requirements); the environment's directory is named by version
PEER_ENVS = {
    "diffprivlib": ("diffprivlib", ["diffprivlib==0.6.6", "scikit-learn<1.6"]),
    "opendp": ("opendp", ["opendp==0.16.0", "numpy"]),
    "tumult": ("tmlt.core", ["tmlt.core==0.20.0"]),
}
# OpenDP's natural grid (lower + k·resolution) is run when it has at most this many
# candidates (its cost grows linearly in the candidates)
NATURAL_MAX = 10_001


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
    if name == "few-values":
        # a float column with heavy ties and no declared resolution (e.g. a count stored
        # as a double): the case the private tie choice is for
        return rng.poisson(3, size).astype(float)
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
    "few-values": None,
}
SYNTHETIC_FULL = ("lognormal", "poisson", "mixture", "few-values")
SYNTHETIC_QUICK = ("poisson",)
REAL_QUICK = ("diabetes-tc", "cancer-area")


def _sklearn_data() -> Path | None:
    for p in sorted(ENVS.glob("*/lib/python*/site-packages/sklearn/datasets/data")):
        return p
    return None


def real_columns(log) -> dict[str, tuple[np.ndarray, float | None]]:
    """Public columns shipped offline: the repo's sample data and scikit-learn's
    (from the diffprivlib environment).  Resolution 1 where the documentation
    says integer counts (a declared type, never inferred from the values)."""
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
    out["wine-proline"] = (w[:, 12], 1.0)  # column 13 is the class label
    b = np.loadtxt(sk / "breast_cancer.csv", delimiter=",", skiprows=1)
    out["cancer-area"] = (b[:, 3], None)
    return out


def bounds_for(col: np.ndarray, kind: str) -> tuple[float, float]:
    lo, hi = float(col.min()), float(col.max())
    w = max(hi - lo, 1.0)
    if kind == "wide":
        return lo - 2 * w, hi + 17 * w
    if kind == "x100":
        return lo - 10 * w, hi + 89 * w
    raise ValueError(kind)


# --------------------------------------------------------------------------- instancedp


#: fractions of the bounds' width tried as the log base's scale (full run only)
LOG_SCALE_SWEEP = (1e-2, 1e-1)


#: the bound-free release's sweep (full run only).  An earlier sweep (β ∈ {1.01, 1.05,
#: 1.1, 1.25, 1.5, 2}, scan shares 0.4/0.6, sign shares 0.1/0.05, k ∈ {6, 9, 12}, the scan
#: looking for q itself) chose β = 1.01, 0.4/0.1, k = 6; its dominated variants are
#: dropped.  This one varies what the scan looks for: q itself (``q``: the earlier
#: default), the median (``0.5``), or the level of q and ½ beyond the median from 0
#: (``auto``: the median for q < ½ upward, q for q ≥ ½; mirrored on the negated rows) —
#: (β, scan share, sign share, k of the bracket rule, the scan's level)
BOUND_FREE_SWEEP = (
    (1.01, 0.4, 0.1, 6, "q"),
    (1.01, 0.4, 0.1, 6, "auto"),
    (1.01, 0.4, 0.1, 4, "auto"),
    (1.01, 0.3, 0.1, 6, "auto"),
    (1.01, 0.4, 0.1, 6, 0.5),
    (1.01, 0.4, 0.1, 4, 0.5),
)


#: the configurations whose median (q = ½) is released in one step instead
#: (``LogLogQuantile``: the exponential mechanism on the whole line, log-log base);
#: their other levels are the scan configuration's
BOUND_FREE_LOGLOG_MEDIAN = ((1.01, 0.3, 0.1, 6, "auto"),)


def bound_free_variants() -> list[tuple[str, dict]]:
    """(name, UnboundedQuantile keywords) of the sweep; the name states every parameter:
    ``unbounded-b<β>-s<scan share>-g<sign share>-k<k of the bracket rule>-m<the scan's
    level>``, and ``+loglog-median`` where the median is released in one step."""
    def one(beta, scan, sign, k, m, median=None):
        suffix = "+loglog-median" if median else ""
        return (f"unbounded-b{beta:g}-s{scan:g}-g{sign:g}-k{k:g}-m{m}{suffix}",
                dict(beta=beta, scan_fraction=scan, sign_fraction=sign, k=k, scan_quantile=m,
                     median=median))

    return ([one(*c) for c in BOUND_FREE_SWEEP]
            + [one(*c, median="loglog") for c in BOUND_FREE_LOGLOG_MEDIAN])


def bound_free_keywords(kw: dict, q: float) -> dict:
    """UnboundedQuantile's keywords for one sweep variant at level q: the bracket by the
    library's rules (``default_bracket`` for ``auto``, ``bracket_rule`` for a fixed
    level)."""
    from instancedp.mechanisms.unbounded import bracket_rule, default_bracket

    kw = dict(kw)
    k, m = kw.pop("k"), kw.pop("scan_quantile")
    kw.pop("median")
    if m == "auto":
        return dict(kw, bracket=default_bracket(q, k))
    level = q if m == "q" else float(m)
    return dict(kw, scan_quantile=level, bracket=bracket_rule(k, q, level))


def our_methods(cell: dict, quick: bool = False) -> dict:
    """name → mechanism, for one cell (each name ends in its relation, /ar or /sub).

    ``default/*`` is exactly what the library builds when no mechanism is
    named (``recipes.build_mechanism``; under substitution with the public n);
    ``default+res/*`` the same with the column's declared resolution."""
    sys.path.insert(0, str(ROOT / "src"))
    import inspect

    from instancedp.mechanisms.inverse import InverseSensitivity
    from instancedp.mechanisms.loglog import LogLogQuantile
    from instancedp.mechanisms.quantile import ExponentialQuantile
    from instancedp.mechanisms.unbounded import UnboundedQuantile, bound_free_quantile
    from instancedp.queries.order import Quantile
    from instancedp.recipes import build_mechanism

    q, eps, lo, hi, res, n = (
        cell["q"],
        cell["epsilon"],
        cell["lower"],
        cell["upper"],
        cell["resolution"],
        cell["n"],
    )
    takes_res = "resolution" in inspect.signature(build_mechanism).parameters

    def query(rel):
        qq = Quantile(q, lo, hi)
        qq.neighbours = rel
        return qq

    out = {}
    for rel, tag in (("add_remove", "ar"), ("substitution", "sub")):
        if cell["bounds"] == "x100":
            out[f"unbounded/{tag}"] = bound_free_quantile(q, eps, neighbours=rel)
            if not quick:  # Durfee's scan alone on its 1.001 grid (the earlier release)
                out[f"unbounded-scan/{tag}"] = UnboundedQuantile(
                    q, eps, neighbours=rel, scan_fraction=1.0, beta=1.001)
                # the sweep the defaults are chosen from (synthetic cells only:
                # select_bound_free); a variant equal to the default reuses its draws
                for name, kw in bound_free_variants():
                    out[f"{name}/{tag}"] = (
                        LogLogQuantile(q, eps, neighbours=rel)
                        if kw["median"] == "loglog" and q == 0.5 else
                        UnboundedQuantile(q, eps, neighbours=rel, **bound_free_keywords(kw, q)))
            continue
        public_n = n if rel == "substitution" else None
        out[f"default/{tag}"] = build_mechanism(
            "quantile", eps, bounds=(lo, hi), quantile=q, neighbours=rel, n=public_n
        )
        if res is not None and takes_res:
            out[f"default+res/{tag}"] = build_mechanism(
                "quantile",
                eps,
                bounds=(lo, hi),
                quantile=q,
                neighbours=rel,
                n=public_n,
                resolution=res,
            )
        # the private choice between smooth sensitivity and the exponential mechanism
        out[f"tie-adaptive/{tag}"] = build_mechanism(
            "quantile", eps, bounds=(lo, hi), quantile=q, neighbours=rel, n=public_n,
            mechanism="tie-adaptive",
        )
        if quick:  # the defaults and the private choice only
            continue
        out[f"em-uniform/{tag}"] = ExponentialQuantile(query(rel), eps)
        out[f"em-log/{tag}"] = ExponentialQuantile(query(rel), eps, base="log")
        # the log base's public scale s (default 1e-4 of the bounds' width): larger s is
        # closer to uniform (less tilt inside the data, a lower spike at 0)
        for frac in LOG_SCALE_SWEEP:
            out[f"em-log-s{frac:g}/{tag}"] = ExponentialQuantile(
                query(rel), eps, base="log", log_scale=(hi - lo) * frac
            )
        if rel == "substitution":
            # under add/remove the exact path length is a search of cost O(n^2) per
            # interval (too slow at these n): the inverse mechanism runs under substitution
            out[f"inverse/{tag}"] = InverseSensitivity(query(rel), eps)
        if res is not None:
            out[f"em-grid/{tag}"] = ExponentialQuantile(
                query(rel), eps, base="grid", resolution=res
            )
            out[f"em-log-grid/{tag}"] = ExponentialQuantile(
                query(rel), eps, base="log-grid", resolution=res
            )
            if rel == "substitution":
                out[f"inverse-grid/{tag}"] = InverseSensitivity(query(rel), eps, resolution=res)
    return out


def run_ours(cell: dict, samples: np.ndarray, draws: int, quick: bool) -> dict[str, np.ndarray]:
    """Every configuration's draws; a configuration that is the same mechanism with the
    same public parameters as one already drawn (em-log is the default without a
    resolution, em-log-grid the default with one) reuses its draws."""
    from instancedp.random import simulation

    out: dict[str, np.ndarray] = {}
    seen: dict[tuple, str] = {}
    for name, mech in our_methods(cell, quick).items():
        ident = (type(mech).__name__, json.dumps(mech.parameters(), sort_keys=True, default=str))
        if ident in seen:
            out[name] = out[seen[ident]]
            continue
        seen[ident] = name
        src = simulation(cell["seed"])
        out[name] = np.array([mech.sample(x, draws, src) for x in samples])
    return out


# --------------------------------------------------------------------------- peers (in their envs)


def peer_grids(cell: dict, quick: bool = False) -> dict[str, np.ndarray]:
    """OpenDP's candidate grids: 1001 and 4001 evenly spaced points over the bounds
    (4001 not in --quick: it is the slowest configuration), and the column's natural
    grid lower + k·resolution where its type declares one."""
    lo, hi, res = cell["lower"], cell["upper"], cell["resolution"]
    grids = {"grid1k": np.linspace(lo, hi, 1001)}
    if cell["bounds"] == "wide":
        if not quick:
            grids["grid4k"] = np.linspace(lo, hi, 4001)
        if res is not None and (hi - lo) / res < NATURAL_MAX:
            grids["natural"] = lo + res * np.arange(math.floor((hi - lo) / res) + 1)
    return grids


def peer_main(peer: str, job: Path, relation: str | None, chunk: Path) -> None:
    """One worker: the cells listed in ``chunk`` for one peer (and relation), each
    written to its own file in the job's cache as soon as it is done (resumable)."""
    data = np.load(job / "samples.npz")
    want = set(json.loads(chunk.read_text()))
    cells = [c for c in json.loads((job / "cells.json").read_text()) if c["key"] in want]
    draws = int((job / "draws").read_text())
    group = peer + (f"-{relation}" if relation else "")
    # import before the clock starts: a cell's time is its releases, not the import
    if peer == "diffprivlib":
        import diffprivlib.tools  # noqa: F401
    elif peer == "opendp":
        import opendp.prelude  # noqa: F401
    elif peer == "tumult":
        import tmlt.core.measurements.pandas_measurements.series  # noqa: F401
    for cell in cells:
        t_cell = time.process_time()
        results: dict[str, np.ndarray] = {}
        key = cell["key"]
        samples = data[cell["sample"]]
        rng = np.random.default_rng(cell["seed"])
        if peer == "diffprivlib":
            import diffprivlib.tools as dpl

            results[f"{key}|diffprivlib/sub"] = np.array(
                [
                    [
                        dpl.quantile(
                            x,
                            cell["q"],
                            epsilon=cell["epsilon"],
                            bounds=(cell["lower"], cell["upper"]),
                            random_state=int(rng.integers(2**31)),
                        )
                        for _ in range(draws)
                    ]
                    for x in samples
                ]
            )
        elif peer == "opendp":
            import opendp.prelude as dp

            dp.enable_features("contrib")
            rels = (("ar", None, 1), ("sub", samples.shape[1], 2))
            for gname, grid in peer_grids(cell, (job / "quick").read_text() == "1").items():
                cands = [float(c) for c in grid]
                for tag, size, d_in in rels:
                    if relation is not None and tag != relation:
                        continue
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
                    results[f"{key}|opendp-{gname}/{tag}"] = np.array(
                        [
                            [m(xs) for _ in range(draws)]
                            for xs in (list(map(float, x)) for x in samples)
                        ]
                    )
        elif peer == "tumult":
            import pandas as pd
            import sympy
            from tmlt.core.domains.numpy_domains import NumpyFloatDomain
            from tmlt.core.domains.pandas_domains import PandasSeriesDomain
            from tmlt.core.measurements.pandas_measurements.series import NoisyQuantile
            from tmlt.core.measures import PureDP

            m = NoisyQuantile(
                PandasSeriesDomain(NumpyFloatDomain()),
                PureDP(),
                cell["q"],
                cell["lower"],
                cell["upper"],
                sympy.Rational(str(cell["epsilon"])),
            )
            results[f"{key}|tumult/ar"] = np.array(
                [[float(m(s)) for _ in range(draws)] for s in (pd.Series(x) for x in samples)]
            )
        save_cell(job, group, key, results, time.process_time() - t_cell)


def cell_file(job: Path, group: str, key: str) -> Path:
    return job / group / (hashlib.sha1(key.encode()).hexdigest()[:20] + ".npz")


def save_cell(job: Path, group: str, key: str, results: dict, seconds: float) -> None:
    """Atomically write one cell's draws (name → S × D array) and its CPU seconds."""
    path = cell_file(job, group, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, **{k.rsplit("|", 1)[-1]: v for k, v in results.items()},
             __seconds__=np.array(seconds))
    tmp.replace(path)


def env_dir(peer: str) -> Path:
    req = PEER_ENVS[peer][1][0]
    return ENVS / f"{peer}-{req.split('==')[1]}"


def ensure_env(peer: str, log, create: bool) -> Path | None:
    py = env_dir(peer) / "bin" / "python"
    if py.exists():
        return py
    if not create:
        log(f"peer {peer} skipped: no environment at {env_dir(peer)} (the full run creates it)")
        return None
    log(f"creating {env_dir(peer)} with {PEER_ENVS[peer][1]}")
    subprocess.run([sys.executable, "-m", "venv", str(env_dir(peer))], check=True)
    subprocess.run([str(py), "-m", "pip", "-q", "install", *PEER_ENVS[peer][1]], check=True)
    return py


def peer_version(py: Path, peer: str) -> str:
    dist = PEER_ENVS[peer][0]
    r = subprocess.run(
        [str(py), "-c", f"from importlib.metadata import version; print(version('{dist}'))"],
        capture_output=True,
        text=True,
    )
    return r.stdout.strip() or "unknown"


# --------------------------------------------------------------------------- driver


def ours_main(job: Path, chunk: Path) -> None:
    """The instancedp worker: the cells in ``chunk``, one file per cell (resumable).

    This tree's library first on the path (the same code ``code_hash`` reads), not
    whichever instancedp the interpreter has installed."""
    sys.path.insert(0, str(ROOT / "src"))
    data = np.load(job / "samples.npz")
    want = set(json.loads(chunk.read_text()))
    cells = [c for c in json.loads((job / "cells.json").read_text()) if c["key"] in want]
    draws = int((job / "draws").read_text())
    quick = (job / "quick").read_text() == "1"
    for cell in cells:
        t = time.process_time()
        out = run_ours(cell, data[cell["sample"]], draws, quick)
        save_cell(job, f"ours-{code_hash()}", cell["key"], out, time.process_time() - t)


def code_hash() -> str:
    """The library's release code and the configurations this script builds from it, so
    that cached instancedp cells follow their changes."""
    import inspect

    h = hashlib.sha1()
    h.update((inspect.getsource(our_methods) + inspect.getsource(bound_free_variants)
              + inspect.getsource(bound_free_keywords)
              + repr((LOG_SCALE_SWEEP, BOUND_FREE_SWEEP, BOUND_FREE_LOGLOG_MEDIAN))).encode())
    src = ROOT / "src" / "instancedp"
    for path in sorted([*src.glob("mechanisms/*.py"), *src.glob("queries/*.py"),
                        *src.glob("noise/*.py"), src / "recipes.py", src / "random.py"]):
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def job_dir(args, cells: list[dict]) -> Path:
    """The cache folder of one configuration (its cells, trials and mode, and the code
    that runs the peers: a change to it redraws everything)."""
    import inspect

    peers_code = inspect.getsource(peer_main) + inspect.getsource(peer_grids)
    spec = json.dumps([args.subsamples, args.draws, args.quick, cells, peers_code],
                      sort_keys=True)
    return args.cache / hashlib.sha1(spec.encode()).hexdigest()[:16]


def run_groups(job: Path, groups: dict, cells: list[dict], jobs: int, chunk: int, log) -> None:
    """Run every missing (group, cell) in worker processes, ``jobs`` at a time, in chunks
    of ``chunk`` cells; the slowest groups first.  Each cell lands in its own file, so an
    interrupted run resumes where it stopped."""
    order = {"opendp": 0, "tumult": 1, "ours": 2, "diffprivlib": 3}
    todo = []
    for group, (py, peer, rel) in sorted(groups.items(), key=lambda g: order[g[1][1]]):
        missing = [c["key"] for c in cells if not cell_file(job, group, c["key"]).exists()]
        if len(missing) < len(cells):
            log(f"{group}: {len(cells) - len(missing)} cells cached, {len(missing)} to run")
        for i in range(0, len(missing), chunk):
            f = job / "chunks" / f"{group}-{i // chunk}.json"
            f.parent.mkdir(exist_ok=True)
            f.write_text(json.dumps(missing[i : i + chunk]))
            cmd = [py, __file__, "--peer", peer, "--job", str(job), "--chunk-file", str(f)]
            todo.append((group, f, cmd + (["--relation", rel] if rel else [])))
    running: list = []
    t0 = time.time()
    done = 0
    while todo or running:
        while todo and len(running) < max(1, jobs):
            group, f, cmd = todo.pop(0)
            logf = open(f.with_suffix(".log"), "w")
            running.append((group, subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT),
                            logf))
        time.sleep(0.2)
        for item in list(running):
            group, proc, logf = item
            if proc.poll() is None:
                continue
            running.remove(item)
            logf.close()
            done += 1
            if proc.returncode != 0:
                tail = Path(logf.name).read_text()[-1500:]
                log(f"worker {group} failed (rc {proc.returncode}): {tail}")
            elif done % 10 == 0 or not (todo or running):
                log(f"{done} chunks done at {time.time() - t0:.0f} s, {len(todo)} waiting")


def build_cells(args, log) -> tuple[list[dict], dict[str, np.ndarray]]:
    rng = np.random.default_rng(20261124)
    columns: dict[str, tuple[np.ndarray, float | None, str]] = {}
    syn = args.synthetic.split(",") if args.synthetic else None
    for name in syn or (SYNTHETIC_QUICK if args.quick else SYNTHETIC_FULL):
        columns[name] = (synthetic(name, 20000, rng), SYNTHETIC[name], "synthetic")
    real = real_columns(log)
    if args.quick:
        real = {k: real[k] for k in REAL_QUICK if k in real}
    for name, (col, res) in real.items():
        columns[name] = (col, res, "real")
    cells, samples = [], {}

    def add(skey: str, column: str, kind: str, n: int, eps: float, q: float, bkind: str,
            lo: float, hi: float, res: float | None) -> None:
        """One cell; seeds count up in the order cells are added (cached draws key on it)."""
        cells.append(dict(key=f"{skey}|eps={eps}|q={q}|{bkind}", sample=skey, column=column,
                          kind=kind, n=n, epsilon=eps, q=q, bounds=bkind, lower=lo, upper=hi,
                          resolution=res, seed=len(cells) + 1))

    for name, (col, res, kind) in columns.items():
        for n in (101, 1001):
            skey = f"{name}|n={n}"
            samples[skey] = col[rng.integers(0, col.size, size=(args.subsamples, n))]
            for bkind in ("wide", "x100"):
                lo, hi = bounds_for(col, bkind)
                for eps in (0.25, 1.0):
                    for q in (0.5, 0.9):
                        add(skey, name, kind, n, eps, q, bkind, lo, hi, res)
    # the bound-free rows at a low quantile (x100 bounds only; appended, so the cells
    # above keep their seeds and their cached draws)
    for name, (col, res, kind) in columns.items():
        for n in (101, 1001):
            skey = f"{name}|n={n}"
            lo, hi = bounds_for(col, "x100")
            for eps in (0.25, 1.0):
                for q in LOW_QS:
                    add(skey, name, kind, n, eps, q, "x100", lo, hi, res)
    # a synthetic column far from 0 (a body mass in grams: N(4200, 800)), where a scan
    # crosses some 800 grid steps before the data; its own generator, appended last, so
    # the columns above keep their subsamples and cells
    if not args.quick and not syn:
        rng2 = np.random.default_rng(20261125)
        col = rng2.normal(4200.0, 800.0, 20000)
        for n in (101, 1001):
            skey = f"{SCALE_COLUMN}|n={n}"
            samples[skey] = col[rng2.integers(0, col.size, size=(args.subsamples, n))]
            for bkind in ("wide", "x100"):
                lo, hi = bounds_for(col, bkind)
                for eps in (0.25, 1.0):
                    for q in (0.5, 0.9) + (LOW_QS if bkind == "x100" else ()):
                        add(skey, SCALE_COLUMN, "synthetic", n, eps, q, bkind, lo, hi, None)
    return cells, samples


SCALE_COLUMN = "normal-4200"


#: the low quantiles of the bound-free rows (a scan for a low q crosses the grid below
#: the data with a margin of only q·n)
LOW_QS = (0.1,)


def truth(samples: np.ndarray, q: float) -> np.ndarray:
    n = samples.shape[1]
    m = max(1, math.ceil(q * n - 1e-12))
    return np.sort(samples, axis=1)[:, m - 1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--subsamples", type=int, default=None, help="S (default 100; quick 10)")
    ap.add_argument("--draws", type=int, default=5, help="D releases per subsample")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--synthetic", help="comma-separated synthetic columns (default per mode)")
    ap.add_argument(
        "--report-only", action="store_true", help="rewrite the reports from the JSON in --out"
    )
    ap.add_argument("--bound-free-only", action="store_true",
                    help="redraw instancedp on the x100 (bound-free) cells only; the other cells "
                         "keep their rows from the saved JSON of the same configuration")
    ap.add_argument("--only-kind", choices=("synthetic", "real"),
                    help="redraw instancedp on the cells of this kind only (with "
                         "--bound-free-only: tune on the synthetic cells without drawing the "
                         "real ones); the other cells keep their rows from the saved JSON")
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    ap.add_argument("--relation", help=argparse.SUPPRESS)
    ap.add_argument("--job", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--chunk-file", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--jobs", type=int, default=2,
                    help="worker processes at once (default 2: the cores of the CI machine)")
    ap.add_argument("--chunk", type=int, default=24,
                    help="cells per worker process (each process pays its peer's import once)")
    ap.add_argument("--cache", type=Path, default=ROOT / ".bench-cache" / "accuracy",
                    help="per-cell results, reused by a rerun of the same command")
    args = ap.parse_args(argv)
    if args.peer == "ours":
        ours_main(args.job, args.chunk_file)
        return 0
    if args.peer:
        peer_main(args.peer, args.job, args.relation, args.chunk_file)
        return 0
    if args.report_only:
        summary = json.loads((args.out / "accuracy.json").read_text())
        write_reports(summary, args.out)
        return 0
    if args.subsamples is None:
        args.subsamples = 10 if args.quick else 100
    t0 = time.time()
    logs: list[str] = []

    def log(msg: str) -> None:
        logs.append(msg)
        print(msg, flush=True)

    # the full run creates the environments first (scikit-learn's data come from one)
    pys = {}
    if not args.no_peers:
        for peer in PEER_ENVS:
            py = ensure_env(peer, log, create=not args.quick)
            if py is not None:
                pys[peer] = py
    cells, samples = build_cells(args, log)
    trials = args.subsamples * args.draws
    log(
        f"{len(cells)} cells, {args.subsamples} subsamples x {args.draws} draws = "
        f"{trials} trials each"
    )
    job = job_dir(args, cells)
    job.mkdir(parents=True, exist_ok=True)
    if not (job / "cells.json").exists():
        np.savez(job / "samples.npz", **samples)
        (job / "draws").write_text(str(args.draws))
        (job / "quick").write_text("1" if args.quick else "0")
        (job / "cells.json").write_text(json.dumps(cells))
    log(f"cache {job.relative_to(ROOT) if job.is_relative_to(ROOT) else job} "
        "(a rerun of the same command resumes from it)")
    versions = {peer: peer_version(py, peer) for peer, py in pys.items()}
    groups = {f"ours-{code_hash()}": (sys.executable, "ours", None)}
    for peer, py in pys.items():
        # OpenDP is the slowest peer (its cost grows with the candidates): one group
        # per relation
        for rel in ("ar", "sub") if peer == "opendp" else (None,):
            groups[peer + (f"-{rel}" if rel else "")] = (str(py), peer, rel)
    kept: dict[str, dict] = {}
    if args.bound_free_only or args.only_kind:
        # instancedp redraws the x100 cells only (the bound-free release) and/or the
        # cells of one kind; every other cell keeps its row from the saved JSON, which
        # must come from the same configuration (cells, trials) — checked below
        def redraw(c: dict) -> bool:
            return ((not args.bound_free_only or c["bounds"] == "x100")
                    and (not args.only_kind or c["kind"] == args.only_kind))

        old = json.loads((args.out / "accuracy.json").read_text())
        # a cell the saved JSON lacks (a new cell) is drawn in full, peers included
        saved = {r["key"] for r in old["cells"]}
        want = {c["key"] for c in cells if not redraw(c) and c["key"] in saved}
        kept = {r["key"]: r for r in old["cells"] if r["key"] in want}
        if (old.get("subsamples"), old.get("draws")) != (args.subsamples, args.draws) or \
                sorted(kept) != sorted(want) or not saved <= {c["key"] for c in cells}:
            raise SystemExit("--bound-free-only and --only-kind need the saved JSON of the "
                             "same configuration")
        log(f"{len(kept)} cells kept from {args.out / 'accuracy.json'}")
    run_cells = [c for c in cells if c["key"] not in kept]
    run_groups(job, groups, run_cells, args.jobs, args.chunk, log)
    results: dict[str, dict[str, np.ndarray]] = {c["key"]: {} for c in run_cells}
    seconds: dict[str, float] = {}
    for group in groups:
        for cell in run_cells:
            path = cell_file(job, group, cell["key"])
            if not path.exists():
                log(f"missing: {group} {cell['key']}")
                continue
            got = np.load(path)
            for name in got.files:
                if name == "__seconds__":
                    seconds[group.split("-")[0]] = seconds.get(group.split("-")[0], 0.0) + float(
                        got[name])
                else:
                    results[cell["key"]][name] = got[name]
    log("CPU seconds per group: " + ", ".join(f"{g} {t:.0f}" for g, t in seconds.items()))
    summary = summarise(run_cells, samples, results)
    extreme = max(float(np.max(np.abs(x))) for x in samples.values())
    summary["lower_bound"] = {"extreme": extreme, "rows": lower_bound_check(extreme)}
    if kept:
        order = {c["key"]: i for i, c in enumerate(cells)}
        summary["cells"] = sorted(summary["cells"] + list(kept.values()),
                                  key=lambda r: order[r["key"]])
    summary.update(
        versions=versions,
        log=logs,
        quick=args.quick,
        subsamples=args.subsamples,
        draws=args.draws,
        trials=trials,
        seconds=round(time.time() - t0, 1),
    )
    write_reports(summary, args.out)
    log(f"total {time.time() - t0:.0f} s")
    return 0


def summarise(cells, samples, results) -> dict:
    table = []
    for cell in cells:
        t = truth(samples[cell["sample"]], cell["q"])[:, None]
        row = dict(cell)
        row["mae"], row["medae"], row["se"] = {}, {}, {}
        for name, vals in results[cell["key"]].items():
            err = np.abs(np.asarray(vals, float) - t)
            row["mae"][name] = float(err.mean())
            row["medae"][name] = float(np.median(err))
            # standard error of the MAE from the S independent subsamples
            per = err.mean(axis=1)
            row["se"][name] = float(per.std(ddof=1) / math.sqrt(per.size)) if per.size > 1 else 0.0
        table.append(row)
    return {"cells": table}


# --------------------------------------------------------------------------- reports

PEER_PREFIXES = {"ar": ("opendp", "tumult"), "sub": ("opendp", "diffprivlib")}


def _floor(r: dict) -> float:
    """The smallest error a ratio reads: 1e-9 of the bounds' width, and on a column with
    a declared resolution 1 % of it (a smaller MAE is an exact hit in 99 % of the
    trials; without the floor a peer's MAE of 0 makes the ratio infinite)."""
    return max(1e-9 * (r["upper"] - r["lower"]), 0.01 * (r["resolution"] or 0.0))


def _ratio(r: dict, mine: str, peer: str, stat: str = "mae") -> tuple[float, float]:
    """(ratio, z): MAE ratio and |log ratio| in standard errors (independent-error bound)."""
    f = _floor(r)
    a, b = max(r[stat][mine], f), max(r[stat][peer], f)
    sa, sb = r["se"].get(mine, 0.0) / a, r["se"].get(peer, 0.0) / b
    sd = math.sqrt(sa * sa + sb * sb)
    return a / b, (abs(math.log(a / b)) / sd if sd > 0 else math.inf)


def _gm(vals: list[float]) -> float:
    return float(np.exp(np.mean(np.log(vals)))) if vals else math.nan


def peers_of(rows: list[dict], tag: str) -> list[str]:
    return sorted(
        {
            k
            for r in rows
            for k in r["mae"]
            if k.endswith("/" + tag) and k.startswith(PEER_PREFIXES[tag])
        }
    )


def _stats(rs: list[tuple[str, float, float]]) -> dict:
    v = [x for _, x, _ in rs]
    qs = np.quantile(v, [0.0, 0.25, 0.5, 0.75, 1.0])
    return {
        "geomean": _gm(v),
        "quartiles": [float(x) for x in qs],
        "cells": len(v),
        "cells_le_1": sum(x <= 1.0 for x in v),
        "cells_le_0.5": sum(x <= 0.5 for x in v),
        "losing": sorted([(k, x, z) for k, x, z in rs if x > 1.0], key=lambda t: -t[1]),
    }


def compare(rows: list[dict], mine_tag: str, peer: str, stat: str = "mae") -> dict | None:
    """mine ÷ peer per cell; ``peer`` may be "best" (the best configuration of the relation)."""
    tag = mine_tag.rsplit("/", 1)[1]
    rs = []
    for r in rows:
        if mine_tag not in r[stat]:
            continue
        if peer == "best":
            ps = [p for p in peers_of([r], tag) if p in r[stat]]
            if not ps:
                continue
            p = min(ps, key=lambda p: r[stat][p])
        elif peer in r[stat]:
            p = peer
        else:
            continue
        x, z = _ratio(r, mine_tag, p, stat)
        rs.append((r["key"], x, z))
    return _stats(rs) if rs else None


def bound_free_vs_peers(rows: list[dict]) -> dict[str, dict]:
    """The bound-free releases at the x100 cells against the best bounded peer with the
    same x100 bounds, per statistic (the mean and the median absolute error)."""
    unb: dict[str, dict] = {}
    for kind in ("synthetic", "real"):
        sel = [r for r in rows if r["kind"] == kind and r["bounds"] == "x100"]
        for tag in ("ar", "sub"):
            for name, suffix in (("unbounded", ""), ("unbounded-scan", "|scan-only")):
                for stat in ("mae", "medae"):
                    c = compare(sel, f"{name}/{tag}", "best", stat)
                    if not c:
                        continue
                    ratios = [(r["key"], x) for r in sel
                              for x in [_unb_ratio(r, tag, name, stat)] if x is not None]
                    c["cells_le_2"] = sum(x <= 2.0 for _, x in ratios)
                    c["over_2"] = sorted(((k, x) for k, x in ratios if x > 2.0),
                                         key=lambda kx: -kx[1])
                    unb[f"{kind}|{tag}{suffix}|{stat}"] = c
    return unb


def _num(x: float) -> str:
    """A ratio for the tables: two decimals, or three digits where it is huge (a
    bound-free release's far tail)."""
    return f"{x:.2f}" if abs(x) < 1e4 else f"{x:.3g}"


def write_reports(summary: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rows = summary["cells"]
    # what a user gets who declares the column's type: default+res where the column
    # has a declared resolution, else default
    for r in rows:
        for tag in ("ar", "sub"):
            src = f"default+res/{tag}" if f"default+res/{tag}" in r["mae"] else f"default/{tag}"
            if src in r["mae"]:
                for stat in ("mae", "medae", "se"):
                    r[stat][f"default-declared/{tag}"] = r[stat][src]
    ours = sorted(
        {k for r in rows for k in r["mae"]} - set(peers_of(rows, "ar")) - set(peers_of(rows, "sub"))
    )
    comp: dict[str, dict] = {}
    for kind in ("synthetic", "real"):
        sel = [r for r in rows if r["kind"] == kind and r["bounds"] == "wide"]
        for tag in ("ar", "sub"):
            for mine in [o for o in ours if o.endswith("/" + tag)]:
                for p in [*peers_of(sel, tag), "best"]:
                    for stat in ("mae", "medae"):
                        c = compare(sel, mine, p, stat)
                        if c:
                            comp[f"{kind}|{mine}|{p}|{stat}"] = c
    summary["comparisons"] = comp
    summary["unbounded_vs_best_bounded_peer"] = bound_free_vs_peers(rows)
    summary["bound_free_sweep"] = select_bound_free(rows)
    (out / "accuracy.json").write_text(json.dumps(summary, indent=1, default=float))
    _markdown(summary, out, ours)
    _plot(summary, out)


def _losing_section(summary: dict) -> list[str]:
    """The generated half of "Where the default loses, and why": the default with the
    column's declared type against the best peer configuration of its relation (real
    columns, wide bounds), a same-law control that measures the Monte-Carlo noise, and
    the private tie choice against the default."""
    rows = [r for r in summary["cells"] if r["kind"] == "real" and r["bounds"] == "wide"]
    comp = summary["comparisons"]
    out = ["## Where the default loses, and why (generated; the reading follows the tables)\n"]
    # the control: em-uniform/sub is diffprivlib's law (the exponential mechanism,
    # uniform base, substitution): every gap between them is Monte-Carlo noise
    ctl = compare(rows, "em-uniform/sub", "diffprivlib/sub")
    if ctl:
        both = [r for r in rows if "em-uniform/sub" in r["mae"] and "diffprivlib/sub" in r["mae"]]
        z2 = sum(1 for r in both for x, z in [_ratio(r, "em-uniform/sub", "diffprivlib/sub")]
                 if x > 1 and z >= 2)
        out.append(
            f"- Same-law control (`em-uniform/sub` ÷ `diffprivlib/sub`, one mechanism run by "
            f"two libraries): geometric mean {ctl['geomean']:.3f}, ≤ 1 in "
            f"{ctl['cells_le_1']}/{ctl['cells']} cells, worst {ctl['quartiles'][4]:.2f}×, "
            f"{z2} losses at z ≥ 2.  At {summary['trials']} trials a cell's ratio is "
            "noise of this size; against the minimum over k peer configurations of equal "
            "accuracy an identical mechanism is ≤ 1 in only 1/(k + 1) of the cells."
        )
    for tag in ("ar", "sub"):
        c = comp.get(f"real|default-declared/{tag}|best|mae")
        if not c:
            continue
        lose = c["losing"]
        sig = [x for x in lose if x[2] >= 2]
        out.append(
            f"- `default-declared/{tag}` ÷ best peer: ≤ 1 in {c['cells_le_1']}/{c['cells']} "
            f"cells, ≤ 0.5 in {c['cells_le_0.5']}; {len(lose)} losses, {len(sig)} of them "
            "at z ≥ 2 (outside the Monte-Carlo noise):"
        )
        by_key = {r["key"]: r for r in rows}
        for cell, x, z in sig:
            out.append(f"  - {cell}: {x:.2f}× (z = {z:.1f}); "
                       f"{why(by_key[cell], f'default-declared/{tag}', 'best', z)}")
    out.extend(_peer_dominance(rows))
    for kind in ("real", "synthetic"):
        for tag in ("ar", "sub"):
            a = comp.get(f"{kind}|tie-adaptive/{tag}|best|mae")
            b = comp.get(f"{kind}|default/{tag}|best|mae")
            if a and b:
                out.append(
                    f"- {kind}, `tie-adaptive/{tag}` (the private choice) ÷ best peer: geometric "
                    f"mean {a['geomean']:.3f} against {b['geomean']:.3f} for `default/{tag}`; "
                    f"≤ 1 in {a['cells_le_1']} cells against {b['cells_le_1']}."
                )
    return out


def _peer_dominance(rows: list[dict]) -> list[str]:
    """Each peer configuration against the best of the OTHER configurations of its
    relation, cell by cell (the goal's test, applied to the peers themselves): how
    often a shipped mechanism is ≤ 1 there, and its worst cell — next to the default's
    figure against all of them."""
    out = ["- The goal's test applied to the peers (each configuration ÷ the best of the "
           "others of its relation, real cells, MAE; the default ÷ the best of all of them):"]
    for tag in ("ar", "sub"):
        peers = peers_of(rows, tag)
        for name in [*peers, f"default-declared/{tag}"]:
            rs = []
            for r in rows:
                others = [p for p in peers if p != name and p in r["mae"]]
                if name in r["mae"] and others:
                    best = min(others, key=lambda p: r["mae"][p])
                    rs.append(_ratio(r, name, best))
            if rs:
                out.append(
                    f"  - `{name}`: ≤ 1 in {sum(x <= 1 for x, _ in rs)}/{len(rs)} cells, "
                    f"losses at z ≥ 2 in {sum(x > 1 and z >= 2 for x, z in rs)}, worst "
                    f"{max(x for x, _ in rs):.2f}×")
    # hindsight: the best of instancedp's own variants in each cell, chosen after seeing
    # the errors and at no privacy cost — what a rule choosing one of them per cell reaches
    out.append("- The oracle over instancedp's bounded variants (the best of them in each "
               "cell, chosen in hindsight at no privacy cost: a rule that picks one of them "
               "per cell cannot do better; only a rule that reads each subsample could) ÷ "
               "the best peer, real cells, MAE:")
    for tag in ("ar", "sub"):
        peers = set(peers_of(rows, tag))
        rs = []
        for r in rows:
            mine = [k for k in r["mae"] if k.endswith("/" + tag) and k not in peers
                    and not k.startswith("unbounded")]
            theirs = [p for p in peers if p in r["mae"]]
            if mine and theirs:
                rs.append(min(r["mae"][k] for k in mine) / min(r["mae"][p] for p in theirs))
        if rs:
            out.append(f"  - {tag}: ≤ 1 in {sum(x <= 1 for x in rs)}/{len(rs)} cells, ≤ 0.5 "
                       f"in {sum(x <= 0.5 for x in rs)}, geometric mean {_gm(rs):.2f}")
    return out


def _unb_ratio(r: dict, tag: str, name: str = "unbounded", stat: str = "mae") -> float | None:
    """A bound-free configuration's error ÷ the best bounded peer's (best by ``stat``)."""
    ps = [p for p in peers_of([r], tag) if p in r[stat]]
    if not ps or f"{name}/{tag}" not in r[stat]:
        return None
    return _ratio(r, f"{name}/{tag}", min(ps, key=lambda p: r[stat][p]), stat)[0]


#: the criterion the bound-free defaults are chosen by, declared before the sweep ran
SELECTION = (
    "over the synthetic x100 cells (q = 0.1, 0.5 and 0.9; the columns lognormal, poisson, "
    "mixture, few-values and normal-4200) under both relations, the most (cell, relation) "
    "pairs "
    "where the release is within 2× of the best bounded peer in BOTH the mean and the "
    "median absolute error (the best peer taken per statistic); ties broken by the "
    "smaller geometric mean of all those ratios (MAE and median, both relations); the "
    "default changes only for a configuration that beats it by this rule"
)


def bound_free_scores(rows: list[dict], name: str) -> dict | None:
    """One bound-free configuration on ``rows`` (x100 cells), both relations: (cell,
    relation) pairs within 2× of the best bounded peer in MAE, in median, in both; the
    geometric means and the worst ratios."""
    mae, med, both = [], [], 0
    for r in rows:
        for tag in ("ar", "sub"):
            a, b = _unb_ratio(r, tag, name, "mae"), _unb_ratio(r, tag, name, "medae")
            if a is None or b is None:
                continue
            mae.append(a)
            med.append(b)
            both += a <= 2.0 and b <= 2.0
    if not mae:
        return None
    return {"pairs": len(mae), "mae_le_2": sum(x <= 2.0 for x in mae),
            "medae_le_2": sum(x <= 2.0 for x in med), "both_le_2": both,
            "geomean_mae": _gm(mae), "geomean_medae": _gm(med), "geomean": _gm(mae + med),
            "worst_mae": max(mae), "worst_medae": max(med)}


def select_bound_free(rows: list[dict]) -> dict:
    """The sweep's table (synthetic and real x100 cells) and its winner by SELECTION,
    chosen on the synthetic cells only; ``default`` names the sweep configuration whose
    draws are the library default's (the benchmark reuses draws of equal parameters)."""
    x100 = [r for r in rows if r["bounds"] == "x100"]
    names = sorted({k.rsplit("/", 1)[0] for r in x100 for k in r["mae"]
                    if k.startswith("unbounded-b")})
    table = {kind: {nm: s for nm in names
                    for s in [bound_free_scores([r for r in x100 if r["kind"] == kind], nm)] if s}
             for kind in ("synthetic", "real")}
    syn = table["synthetic"]
    winner = max(syn, key=lambda nm: (syn[nm]["both_le_2"], -syn[nm]["geomean"])) if syn else None
    pairs = [(r, t) for r in x100 for t in ("ar", "sub") if f"unbounded/{t}" in r["mae"]]
    default = next((nm for nm in names
                    if all(r["mae"].get(f"{nm}/{t}", r["mae"][f"unbounded/{t}"])
                           == r["mae"][f"unbounded/{t}"] for r, t in pairs)
                    and any(f"{nm}/{t}" in r["mae"] for r, t in pairs)), None)
    return {"criterion": SELECTION, "table": table, "winner": winner, "default": default}


def lower_bound_check(extreme: float, trials: int = 100, seed: int = 7) -> list[dict]:
    """The group-privacy lower bound (docs/formulas.md, "what no bound-free release can
    avoid") at the benchmark's (n, ε, q, relation), for a scale V at which the default
    bound-free release is checked to be accurate: the largest V on a public ladder with
    at least 65 of ``trials`` releases within a factor 2 of the q-quantile t of the
    n-row table V·(1 + i/n), i < n (t in [V, 2V), so each such release is ≥ V/2, the
    event the bound needs; if the true probability were below 1/2, 65 or more of 100
    happens with probability < 0.2 %).  Not n copies of V: on n tied rows the median's
    score is the same on either side of V and the continuous exponential mechanism
    spreads over its whole range (ties are not a matter of scale).
    ``extreme`` = the largest |value| of the benchmark's columns (max|x| of every table)."""
    sys.path.insert(0, str(ROOT / "src"))
    from instancedp.mechanisms.unbounded import bound_free_quantile
    from instancedp.random import simulation

    ladder = (8e307, 1e256, 1e128, 1e64, 1e32, 1e16, 1e8, 1e4, 1e2)
    out = []
    for rel, d_per_row in (("add_remove", 2), ("substitution", 1)):
        for n in (101, 1001):
            for eps in (0.25, 1.0):
                for q in (0.5, 0.9):
                    mech = bound_free_quantile(q, eps, neighbours=rel)
                    v_ok, hits = None, None
                    for v in ladder:
                        table = v * (1 + np.arange(n) / n)
                        t = float(truth(table[None, :], q)[0])
                        got = mech.sample(table, trials, simulation(seed))
                        k = int(np.sum((got >= t / 2) & (got <= 2 * t)))
                        if k >= 65:
                            v_ok, hits = v, k
                            break
                    row = dict(relation=rel, n=n, epsilon=eps, q=q, V=v_ok, hits=hits,
                               trials=trials, distance=d_per_row * n, log10_bound=None)
                    if v_ok is not None and v_ok / 2 > extreme:
                        # (V/2 − max|x|)·e^{−dε}/2, in log10 (e^{−dε} underflows at n·ε = 1001)
                        row["log10_bound"] = (math.log10(v_ok / 2 - extreme)
                                              - d_per_row * n * eps / math.log(10)
                                              - math.log10(2))
                    out.append(row)
    return out


def _fmt_q(c: dict) -> str:
    return " / ".join(_num(x) for x in c["quartiles"])


def _comp_table(comp: dict, keys: list[str]) -> list[str]:
    lines = [
        "| data | instancedp | peer | stat | geomean | min / q1 / median / q3 / max "
        "| ≤ 1 | ≤ 0.5 | cells |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key in keys:
        c = comp[key]
        kind, mine, p, stat = key.split("|")
        lines.append(
            f"| {kind} | {mine} | {p} | {stat} | {c['geomean']:.3f} | {_fmt_q(c)} | "
            f"{c['cells_le_1']} | {c['cells_le_0.5']} | {c['cells']} |"
        )
    return lines


def _header(summary: dict) -> str:
    return (
        f"Generated by `benchmarks/accuracy.py{' --quick' if summary['quick'] else ''}"
        + ("" if summary["subsamples"] == (10 if summary["quick"] else 100)
           else f" --subsamples {summary['subsamples']}")
        + ("" if summary["draws"] == 5 else f" --draws {summary['draws']}")
        + "` "
        f"({summary['subsamples']} subsamples × {summary['draws']} releases = "
        f"{summary['trials']} trials per cell, {summary['seconds']} s). Peers: "
        + ", ".join(f"{k} {v}" for k, v in summary["versions"].items())
        + ".\n"
    )


def _markdown(summary: dict, out: Path, ours: list[str]) -> None:
    rows = summary["cells"]
    comp = summary["comparisons"]
    head = _header(summary)
    lines = [
        "# Accuracy of private quantiles\n",
        head,
        "Ratio = instancedp's error ÷ the peer's on the same subsamples (< 1: instancedp is "
        "more accurate); `mae` = mean absolute error, `medae` = median absolute error. "
        "Wide bounds: the column's range fills 5 % of them. `best` = the best peer "
        "configuration of the relation in each cell. Relations: `/ar` add/remove, `/sub` "
        "substitution (one row replaced, n public); each method is compared with the peers "
        "of its own relation only.\n",
        "## Every configuration against every peer configuration (MAE)\n",
    ]
    lines += _comp_table(comp, [k for k in sorted(comp) if k.endswith("|mae")])
    lines += [""] + _losing_section(summary)
    lines += [
        "",
        "## Bound-free (bounds=None) vs the best bounded peer, bounds 100× the data's range\n",
        "`unbounded` is the release (`bounds=None`, `bound_free_quantile`: every level, "
        "the median included, by Durfee's scan at the library's default share, which "
        "places a bracket, the exponential mechanism with the log base drawing inside it; "
        "the one-step log-log median is the sweep's `+loglog-median` row); `scan-only` is "
        "Durfee's scan alone on a 1.001 grid (the earlier release), for comparison.  "
        "`mae`: the mean absolute error, dominated by the far tail no bound-free release "
        "avoids (below); `medae`: the median absolute error.\n",
        "| data | relation | release | stat | geomean | min / q1 / median / q3 / max "
        "| cells ≤ 2× | cells |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, c in sorted(bound_free_vs_peers(rows).items()):
        kind, tag, *rest = key.split("|")
        release = rest[0] if len(rest) == 2 else "unbounded"
        lines.append(
            f"| {kind} | {tag} | {release} | {rest[-1]} | {_num(c['geomean'])} | "
            f"{_fmt_q(c)} | {c['cells_le_2']} | {c['cells']} |"
        )
    real100 = [r for r in rows if r["kind"] == "real" and r["bounds"] == "x100"]
    for tag in ("ar", "sub"):
        over = sorted(((r["key"].rsplit("|", 1)[0], a, b) for r in real100
                       for a, b in [(_unb_ratio(r, tag), _unb_ratio(r, tag, stat="medae"))]
                       if a is not None and b is not None and max(a, b) > 2.0),
                      key=lambda t: -max(t[1], t[2]))
        if over:
            lines.append(
                f"\n- `unbounded/{tag}`, real cells over 2× in either statistic (MAE ratio / "
                "median absolute error ratio, each to the best bounded peer by that "
                "statistic): " + "; ".join(f"{k} {_num(a)}× / {_num(b)}×" for k, a, b in over))
    lines += _bound_free_sections(summary)
    for bk in ("wide", "x100"):
        sel = [r for r in rows if r["kind"] == "real" and r["bounds"] == bk]
        names = [o for o in ours if any(o in r["mae"] for r in sel)]
        names += [p for t in ("ar", "sub") for p in peers_of(sel, t)]
        lines += ["", f"## Per cell (real columns, {bk} bounds): MAE\n"]
        lines.append("| cell | " + " | ".join(names) + " |")
        lines.append("|---" * (len(names) + 1) + "|")
        for r in sel:
            lines.append(
                f"| {r['key'].rsplit('|', 1)[0]} | "
                + " | ".join(f"{r['mae'].get(nm, float('nan')):.4g}" for nm in names)
                + " |"
            )
    lines += ["", "## Log\n"] + [f"- {x}" for x in summary["log"]]
    _write_keeping_notes(out / "accuracy.md", lines)

    # neighbours.md: the default per relation against that relation's peers
    nl = [
        "# Quantiles per neighbour relation\n",
        head,
        "The library's default (`default/ar`, `default/sub`: what `build_mechanism` returns "
        "when no mechanism is named; `default+res`: the same with the column's declared "
        "resolution, on the columns that declare one; `default-declared`: `default+res` where "
        "the column declares a resolution, else `default` — what a user who declares the "
        "column's type gets) against every peer configuration of the same relation and the "
        "best of them per cell, real columns, wide bounds. Tuned on the synthetic cells "
        "only.\n",
    ]
    keys = [
        k for k in sorted(comp) if k.startswith("real|default") and k.endswith(("|mae", "|medae"))
    ]
    nl += _comp_table(comp, keys)
    nl += ["", "## Cells where the default loses (MAE; z = |log ratio| in standard errors)\n"]
    nl += ["| instancedp | peer | cell | ratio | z | why |", "|---|---|---|---|---|---|"]
    by_key = {r["key"]: r for r in rows}
    for k in keys:
        if not k.endswith("|mae"):
            continue
        _, mine, p, _ = k.split("|")
        for cell, x, z in comp[k]["losing"]:
            nl.append(
                f"| {mine} | {p} | {cell} | {x:.2f} | {z:.1f} | {why(by_key[cell], mine, p, z)} |"
            )
    _write_keeping_notes(out / "neighbours.md", nl)
    (out / "neighbours.json").write_text(
        json.dumps(
            {
                "versions": summary["versions"],
                "trials": summary["trials"],
                "comparisons": {k: comp[k] for k in keys},
            },
            indent=1,
        )
    )


def _bound_free_sections(summary: dict) -> list[str]:
    """The sweep the bound-free defaults were chosen from, and the lower bound that
    explains why the median absolute error is the statistic to read."""
    sw = summary.get("bound_free_sweep") or {}
    out = []
    if sw.get("table", {}).get("synthetic"):
        out += [
            "", "### The bound-free sweep: synthetic cells choose, real cells report\n",
            "Configurations `unbounded-b<β>-s<scan share>-g<sign share>-k<k>-m<level>`: grid "
            "ratio β, the scan's share of ε (sign step included), the sign step's share, the "
            "level the scan looks for (`q`: q itself, bracket 4^max(1, k·q) below the scan's "
            "value and 4^max(1, k·(1 − q)) above; `0.5`: the median, bracket 4^max(1, "
            "k·(1 − q)) below and 4^max(1, k·q) above; `auto`: the level of q and ½ beyond "
            "the median from 0, bracket 4^max(1, k·max(q, 1 − q)) toward 0 and 4^max(1, "
            "k·min(q, 1 − q)) away); the rest of ε goes to the exponential mechanism on the "
            "bracket (a fixed factor in value: ⌈ln γ / ln β⌉ grid steps). Each (cell, "
            "relation) pair is "
            "compared with the best bounded peer (bounds 100× the data's range) per "
            "statistic.\n",
            f"Selection criterion, declared before the sweep ran: {sw['criterion']}.\n",
            f"- Chosen on the synthetic cells: `{sw['winner']}`; the library's default draws "
            f"as `{sw['default']}`"
            + (" (the same configuration)." if sw["winner"] == sw["default"] else
               " (the default should be the chosen configuration: rerun after changing it)."),
            "",
            "| data | configuration | both ≤ 2× | MAE ≤ 2× | median ≤ 2× | pairs | geomean "
            "(MAE) | geomean (median) | worst (MAE) | worst (median) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for kind in ("synthetic", "real"):
            for nm, c in sorted(sw["table"].get(kind, {}).items(),
                                key=lambda kv: (-kv[1]["both_le_2"], kv[1]["geomean"])):
                mark = " **(default)**" if nm == sw["default"] else ""
                out.append(
                    f"| {kind} | `{nm}`{mark} | {c['both_le_2']} | {c['mae_le_2']} | "
                    f"{c['medae_le_2']} | {c['pairs']} | {c['geomean_mae']:.3f} | "
                    f"{c['geomean_medae']:.3f} | {c['worst_mae']:.3g} | "
                    f"{c['worst_medae']:.3g} |")
    lb = summary.get("lower_bound")
    if lb:
        out += [
            "", "### What no bound-free release can avoid (group privacy)\n",
            "For every ε-DP release M and n-row tables x, x′ (d(x, x′) = 2n under "
            "add/remove, n under substitution; docs/formulas.md, bound-free quantiles): if "
            "P(M(x′) ≥ V/2) ≥ 1/2 then E|M(x) − x_q| ≥ (V/2 − max|x|)·e^{−dε}/2. V below is "
            "the largest scale on the ladder 10², 10⁴, 10⁸, …, 10²⁵⁶, 8·10³⁰⁷ at which "
            "the default bound-free release was checked to be accurate (≥ 65 of "
            f"{lb['rows'][0]['trials']} releases within a factor 2 of the q-quantile of "
            "the table V·(1 + i/n), i < n); max|x| = "
            f"{lb['extreme']:.4g}, the largest |value| of the benchmark's columns. Where no "
            "V passed, the release is not accurate at any scale on the ladder at this n·ε "
            "and the bound says nothing about it. A Monte-Carlo MAE over "
            f"{summary.get('trials', '')} trials samples only the body of the error's law "
            "(the bound's mass sits at probability e^{−dε}/2), so the median absolute error "
            "is the statistic that compares a bound-free release with bounded ones.\n",
            "| relation | n | ε | q | d | V checked | releases within 2× | lower bound on "
            "E|error| for every table of the benchmark |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in lb["rows"]:
            v = "none" if r["V"] is None else f"{r['V']:.3g}"
            hits = "—" if r["hits"] is None else f"{r['hits']}/{r['trials']}"
            b = "—" if r["log10_bound"] is None else f"10^{r['log10_bound']:.1f}"
            out.append(f"| {r['relation']} | {r['n']} | {r['epsilon']:g} | {r['q']:g} | "
                       f"{r['distance']} | {v} | {hits} | {b} |")
    return out


NOTES_MARK = "<!-- notes: kept when the benchmark rewrites this file -->"


def _write_keeping_notes(path: Path, lines: list[str]) -> None:
    """Write the generated tables, keeping the hand-written reading below NOTES_MARK."""
    notes = ""
    if path.exists():
        old = path.read_text()
        if NOTES_MARK in old:
            notes = old[old.index(NOTES_MARK) :]
    path.write_text("\n".join(lines) + "\n\n" + (notes or NOTES_MARK + "\n"))


def why(r: dict, mine: str, peer: str, z: float) -> str:
    """A first reading of one losing cell, from its own numbers (the notes go further)."""
    if peer == "best":
        tag = mine.rsplit("/", 1)[1]
        ps = [p for p in peers_of([r], tag) if p in r["mae"]]
        peer = min(ps, key=lambda p: r["mae"][p])
    if z < 2:
        return f"within noise (z < 2; {peer})"
    if r["medae"][peer] == 0 and r["medae"][mine] > 0:
        hint = ""
        if r["resolution"] is not None and not mine.startswith(
            ("default+res", "em-grid", "em-log-grid")
        ):
            hint = "; `default+res` releases on the declared grid"
        return (
            f"{peer} hits the data's values exactly (median error 0): its grid holds the ties{hint}"
        )
    if peer.startswith("opendp-natural"):
        return f"{peer}: the candidates are the data's resolution"
    if peer.startswith("opendp-grid") and r["resolution"] is None:
        return (f"{peer}: permute-and-flip on its coarse candidates (drawn by the exponential "
                "mechanism the same candidates lose to ours: permute_flip.md)")
    uniform = r["mae"].get(f"em-uniform/{mine.rsplit('/', 1)[1]}")
    if uniform is not None and uniform > 1.2 * r["mae"][peer]:
        return f"{peer}: the uniform-base variant loses too, not a base-measure effect (notes)"
    return f"{peer}: base measure (see the notes)"


def _plot(summary: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary["cells"]
    for name, prefix in (
        ("accuracy", ("real|default", "synthetic|default")),
        ("neighbours", ("real|default",)),
    ):
        keys = [
            k for k in sorted(summary["comparisons"]) if k.startswith(prefix) and k.endswith("|mae")
        ]
        if not keys:
            continue
        fig, ax = plt.subplots(figsize=(9, 0.35 * len(keys) + 1.5))
        for i, k in enumerate(keys):
            kind, mine, p, _ = k.split("|")
            sel = [r for r in rows if r["kind"] == kind and r["bounds"] == "wide"]
            c = compare(sel, mine, p)
            tag = mine.rsplit("/", 1)[1]
            v = []
            for r in sel:
                ps = [x for x in peers_of([r], tag) if x in r["mae"]]
                if mine in r["mae"] and ps:
                    pp = min(ps, key=lambda x: r["mae"][x]) if p == "best" else p
                    if pp in r["mae"]:
                        v.append(_ratio(r, mine, pp)[0])
            ax.scatter(v, [i] * len(v), s=8, alpha=0.6)
            ax.scatter([c["geomean"]], [i], marker="|", s=200, color="k")
        ax.set_yticks(range(len(keys)))
        ax.set_yticklabels([k.rsplit("|", 1)[0].replace("|", "  ") for k in keys], fontsize=7)
        ax.set_xscale("log")
        ax.axvline(1.0, color="grey", lw=0.8)
        ax.axvline(0.5, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("MAE ratio instancedp ÷ peer, per cell (bar = geometric mean)")
        fig.tight_layout()
        fig.savefig(out / f"{name}.png", dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
