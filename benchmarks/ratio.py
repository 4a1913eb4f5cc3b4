"""Private ratios (LS-bound note) → docs/results/ratio.{md,json,png}.

Thin wrapper over :mod:`instancedp.experiments.ratio`.  ``--quick`` for a small run.

Run: .venv/bin/python benchmarks/ratio.py [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from instancedp.experiments import ratio

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run (at most 2 minutes)")
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (docs/results)")
    args = parser.parse_args(argv)
    paths = ratio.reproduce(args.out, quick=args.quick)
    print(paths[0].read_text())
    return paths


if __name__ == "__main__":
    main()
