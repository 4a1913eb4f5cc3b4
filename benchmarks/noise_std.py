"""Noise per unit of smooth sensitivity → docs/results/noise_std.{md,json,png}.

Thin wrapper over :func:`instancedp.experiments.noise_table.reproduce`: the
std table of Hladík–Tětek (Figure 1; reference values in docs/noise.md), its brute-force
cross-check, the chosen shapes, and sampling throughput against
``numpy.random.Generator.laplace`` measured in the same run.  ``--quick`` for
a short throughput run.

Run: .venv/bin/python benchmarks/noise_std.py [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from instancedp.experiments import noise_table

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run (at most 2 minutes)")
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (docs/results)")
    args = parser.parse_args(argv)
    paths = noise_table.reproduce(args.out, quick=args.quick)
    print(paths[0].read_text())
    return paths


if __name__ == "__main__":
    main()
