"""Noise per unit of smooth sensitivity → docs/results/noise_std.{md,json,png}.

Thin wrapper over :func:`instancedp.experiments.noise_table.reproduce`: the
std table of Hladík–Tětek (Figure 1; reference values in docs/noise.md), its brute-force
cross-check, the chosen shapes, and sampling throughput against
``numpy.random.Generator.laplace`` measured in the same run.  ``--quick`` for
a short throughput run.
"""

from __future__ import annotations

import sys
from pathlib import Path

from instancedp.experiments import noise_table as nt

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"


def main(quick: bool = False) -> list[Path]:
    paths = nt.reproduce(OUT, quick=quick)
    print(paths[0].read_text())
    return paths


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
