"""Reproductions of the papers' figures and comparisons.

One module per study: plain functions returning tables (lists of dicts), and
``reproduce(outdir, quick) -> list[Path]`` that renders the study into
``outdir`` (Markdown, JSON, and a PNG where there is a figure) and returns the
files written.  :data:`EXPERIMENTS` is the one table of names → ``reproduce``
functions: ``instancedp reproduce`` calls them, and the ``benchmarks/``
scripts are thin wrappers (argument parsing, then one call) that write into
``docs/results/``.  Nothing here imports from ``tests/`` or ``benchmarks/``;
plotting imports matplotlib lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from . import (
    compare,
    gamma_study,
    gaussian,
    levels,
    median,
    noise_table,
    ratio,
    safe_sampling,
    sensitivity,
    smalldb,
)

Reproduce = Callable[..., list[Path]]

#: name → ``reproduce(outdir, quick=...)``; Example 23 (``two_triangles``) is
#: rendered by ``levels`` beside Example 22.
EXPERIMENTS: dict[str, Reproduce] = {
    "noise_table": noise_table.reproduce,
    "median": median.reproduce,
    "ratio": ratio.reproduce,
    "gamma_study": gamma_study.reproduce,
    "levels": levels.reproduce,
    "gaussian": gaussian.reproduce,
    "smalldb": smalldb.reproduce,
    "compare": compare.reproduce,
    "sensitivity": sensitivity.reproduce,
    "safe_sampling": safe_sampling.reproduce,
}

__all__ = ["EXPERIMENTS", "Reproduce"]
