"""Speed of the exact sensitivity engine → docs/results/sensitivity.{md,json}.

Run: .venv/bin/python benchmarks/sensitivity.py [--quick] [--largest-kinds uniform,all_equal]
(the full run sorts 10^8 floats several times: minutes, about 3 GB of memory).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from instancedp.experiments.sensitivity import run, to_markdown

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument(
        "--largest-kinds",
        default=None,
        help="comma-separated data kinds to run at the largest n (default: all)",
    )
    args = parser.parse_args()
    kinds = args.largest_kinds.split(",") if args.largest_kinds else None
    res = run(quick=args.quick, largest_kinds=kinds)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "sensitivity.json").write_text(json.dumps(res, indent=2) + "\n")
    (OUT / "sensitivity.md").write_text(to_markdown(res))
    print(to_markdown(res))


if __name__ == "__main__":
    main()
