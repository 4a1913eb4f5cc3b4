"""Speed of the exact sensitivity engine → docs/results/sensitivity.{md,json}.

Thin wrapper over :func:`instancedp.experiments.sensitivity.reproduce`
(also run by ``instancedp reproduce``).  The full run sorts 10^8 floats several
times: minutes, about 3 GB of memory.

Run: .venv/bin/python benchmarks/sensitivity.py [--quick] [--out DIR]
    [--largest-kinds uniform,all_equal]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from instancedp.experiments import sensitivity

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run (at most 2 minutes)")
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (docs/results)")
    parser.add_argument(
        "--largest-kinds",
        default=None,
        help="comma-separated data kinds to run at the largest n (default: all)",
    )
    args = parser.parse_args(argv)
    paths = sensitivity.reproduce(
        args.out,
        quick=args.quick,
        largest_kinds=args.largest_kinds.split(",") if args.largest_kinds else None,
    )
    print(paths[0].read_text())
    return paths


if __name__ == "__main__":
    main()
