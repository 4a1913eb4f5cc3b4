"""Laplace vs SmallDB (Wang et al.) → docs/results/smalldb.{md,json,png}.

Thin wrapper over :func:`instancedp.experiments.smalldb.reproduce`
(also run by ``instancedp reproduce``).

Run: .venv/bin/python benchmarks/smalldb.py [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from instancedp.experiments import smalldb

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run (at most 2 minutes)")
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (docs/results)")
    args = parser.parse_args(argv)
    paths = smalldb.reproduce(args.out, quick=args.quick)
    print(paths[0].read_text())
    return paths


if __name__ == "__main__":
    main()
