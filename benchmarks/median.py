"""Private medians, Gillenwater–Joseph–Kulesza 2021 protocol → docs/results/median.{md,json,png}.

Thin wrapper over :mod:`instancedp.experiments.median`.  Peers (diffprivlib,
OpenDP) come from the optional ``bench`` extra or the cached environments below,
and are skipped when missing.
``--quick`` for a small run.  ``--ties`` runs integer-valued data with many
ties instead (``docs/results/median_ties.*``), where the local sensitivity of
the median vanishes inside runs of equal values.

The peers are imported in this process from the environments the accuracy
benchmark caches under ``.bench-envs/`` (``accuracy.env_dir``): their
site-packages are appended to ``sys.path``, so this environment's own packages
(numpy, scipy) keep precedence.

Run: .venv/bin/python benchmarks/median.py [--quick] [--ties] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from instancedp.experiments import median

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy import env_dir  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run (at most 2 minutes)")
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (docs/results)")
    parser.add_argument(
        "--ties", action="store_true", help="integer data with many ties (median_ties.*)"
    )
    args = parser.parse_args(argv)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for peer in ("diffprivlib", "opendp"):  # appended: this environment's packages win
        site = env_dir(peer) / "lib" / version / "site-packages"
        if site.is_dir() and str(site) not in sys.path:
            sys.path.append(str(site))
    paths = median.reproduce(args.out, quick=args.quick, ties=args.ties)
    print(paths[0].read_text())
    return paths


if __name__ == "__main__":
    main()
