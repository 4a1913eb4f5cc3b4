"""``make demo``: real private releases end to end on data shipped with the package.

1. The median closing price of Google stock (``data/goog.csv``, 1,047 trading
   days) at ε = 2 with the default (smooth-sensitivity) mechanism, charged to a fresh
   SQLite ledger with a total budget of ε = 3;
2. the number of triangles in Zachary's karate-club network
   (``data/karate.edges``) under edge privacy, on its own budget;
3. the budget left in the ledger;
4. the noise table of issue 2: the standard deviation of each smooth-sensitivity
   noise family per unit of smooth sensitivity;
5. a ``compare`` plot of every applicable median mechanism over ε.

Everything is written under ``out/demo/`` (or the folder given as the first
argument).  The releases use secure randomness; the comparison is a seeded
simulation and says so.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .io import read_column, shipped


def _section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 66 - len(title)))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else Path("out") / "demo"
    out.mkdir(parents=True, exist_ok=True)
    ledger = out / "ledger.db"
    for suffix in ("", "-wal", "-shm"):  # a fresh budget every run
        Path(str(ledger) + suffix).unlink(missing_ok=True)
    t0 = time.perf_counter()

    from .privacy import PureDP
    from .session import Session, build_mechanism

    goog, karate = shipped("goog.csv"), shipped("karate.edges")

    _section("1. A private median from a CSV file")
    print(f"data: {goog} (column 'close', public bounds [0, 1000] dollars)")
    print(
        "CLI:  instancedp release --owner src/instancedp/data/goog.csv --column close "
        "--statistic median --epsilon 2 --bounds 0 1000 "
        f"--ledger {ledger} --budget-epsilon 3 --dataset-id goog"
    )
    with Session(goog, PureDP(3.0), ledger=ledger, dataset_id="goog") as s:
        r = s.release_statistic("median", "close", epsilon=2.0, bounds=(0, 1000))
        print(f"released median close: {r.value:.2f} dollars")
        print(f"guarantee: {r.guarantee.describe()}  mechanism: {r.mechanism}")
        print(f"public parameters: {dict(r.parameters)}")
        print(f"secure randomness: {r.secure}")
        print(f"remaining for 'goog': {s.remaining.describe()} of {s.budget.describe()}")

    _section("2. A private triangle count from an edge list")
    print(f"data: {karate} (34 members, 78 friendships; edge privacy)")
    print(
        "CLI:  instancedp release-graph --owner src/instancedp/data/karate.edges "
        f"--statistic triangles --epsilon 0.5 --vertices 34 --ledger {ledger} --budget-epsilon 1 "
        "--dataset-id karate"
    )
    # Edge privacy: the vertex set (the club's 34 members) is public.
    tmech = build_mechanism("triangles", 0.5, vertices=34)
    with Session(karate, PureDP(1.0), ledger=ledger, dataset_id="karate") as s:
        r = s.release(tmech)
        print(f"released triangle count: {r.value:.1f}")
        print(f"guarantee: {r.guarantee.describe()}  mechanism: {r.mechanism}")
        print(f"remaining for 'karate': {s.remaining.describe()} of {s.budget.describe()}")

    _section("3. The budget ledger")
    print(f"CLI:  instancedp ledger show {ledger}")
    from .ledger import Ledger

    with Ledger(ledger, create=False) as led:
        for row in led.summary():
            b, r_ = row["budget"]["exact"], row["remaining"]["exact"]
            print(
                f"dataset '{row['dataset_id']}': {row['releases']} release(s); budget "
                + ", ".join(f"{k}={v}" for k, v in b.items())
                + "; remaining "
                + ", ".join(f"{k}={v}" for k, v in r_.items())
            )

    _section("4. Noise per unit of smooth sensitivity (issue 2, item 7)")
    print("CLI:  instancedp noise-table --epsilon 1")
    try:
        from .cli import _markdown_rows
        from .experiments import noise_table

        rows = noise_table.noise_std_table(epsilon=1.0)
        print(_markdown_rows(rows))
    except ImportError as exc:  # another piece of the package not installed
        print(f"(noise table unavailable: {exc})")

    _section("5. Compare the median mechanisms over ε (a simulation)")
    print(
        "CLI:  instancedp compare src/instancedp/data/goog.csv --column close "
        "--statistic median --bounds 0 1000 --quick --out out/demo"
    )
    from .experiments import compare

    x = read_column(goog, "close")
    res = compare.compare(
        x,
        "median",
        bounds=(0.0, 1000.0),
        quick=True,
        public=True,
        source="GOOG daily closes 2004–2008 (public prices; shipped data/goog.csv)",
    )
    paths = compare.write(res, out, name="compare")
    print(compare.to_markdown(res))
    png = paths[-1]
    print(f"\nplot: {png.resolve()}")
    print(f"table: {paths[0].resolve()}")
    print(f"\ndemo finished in {time.perf_counter() - t0:.1f} s; outputs in {out.resolve()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
