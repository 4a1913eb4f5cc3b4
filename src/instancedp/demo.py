"""``make demo``: real private releases end to end on data shipped with the package.

1. The median closing price of Google stock (``data/goog.csv``, 1,047 trading
   days) at ε = 2, charged to a fresh SQLite ledger with a total budget of ε = 3;
2. the number of triangles in Zachary's karate-club network
   (``data/karate.edges``) under edge privacy, on its own budget;
3. the budget left in the ledger;
4. how much noise each smooth-sensitivity noise family adds (a short version
   of ``instancedp noise-table``; Hladík–Tětek, Figure 1);
5. a ``compare`` plot of every applicable median mechanism over ε.

The demo speaks as the data owner, through the Python API (``Session``); each
section prints the equivalent command, with ``--owner``.  Every section opens
with one sentence saying what it shows and how to read it.  Everything is
written under ``out/demo/`` (or the folder given as the first argument).  The
releases use secure randomness; the comparison is a seeded simulation and
says so.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

from .io import read_column, shipped

#: The smoothness values and noise families of the short noise table (section 4).
DEMO_GAMMAS: tuple[float, ...] = (0.01, 0.1, 0.3)
DEMO_FAMILIES: tuple[tuple[str, str], ...] = (
    ("polyplace", "PolyPlace (ε-DP, the default)"),
    ("student_t", "Student t (ε-DP)"),
    ("cauchy", "Cauchy (ε-DP)"),
    ("laplace", "Laplace ((ε, δ)-DP, δ = 1e-5)"),
)


def _section(title: str, how_to_read: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 66 - len(title)))
    print(how_to_read)


def _summary(release: object, chosen: dict[str, object]) -> None:
    from .cli import summary_lines

    for label, text in summary_lines(release, chosen):
        print(f"  {label:11s} {text}")
    print(f"  {'secure':11s} {str(release.secure).lower()}")  # type: ignore[attr-defined]


def _cell(v: float) -> str:
    if math.isnan(v):
        return "—"
    if math.isinf(v):
        return "∞"
    return f"{v:.3g}"


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
    print(
        "instancedp demo: the data owner releases private statistics through the Python API.\n"
        "Each release is charged to a budget ledger before any noise is drawn. An analyst\n"
        "spending the owner's budget would use the same commands without --owner (analyst mode)."
    )

    _section(
        "1. A private median from a CSV file",
        "What it shows: the median closing price, released with noise; read 'value' as the\n"
        "answer, 'guarantee' as how private it is (smaller ε is more private) and\n"
        "'neighbours' as what is protected: by default whether any one row (one trading day)\n"
        "is in the file at all.",
    )
    print(f"data: {goog} (column 'close', public bounds [0, 1000] dollars)")
    print(
        "CLI:  instancedp release --owner src/instancedp/data/goog.csv --column close "
        "--statistic median --epsilon 2 --bounds 0 1000 "
        f"--ledger {ledger} --budget-epsilon 3 --dataset-id goog"
    )
    with Session(goog, PureDP(3.0), ledger=ledger, dataset_id="goog") as s:
        r = s.release_statistic("median", "close", epsilon=2.0, bounds=(0, 1000))
        _summary(r, {"statistic": "median", "column": "close"})
        print(f"remaining for 'goog': {s.remaining.describe()} of {s.budget.describe()}")
    print("The full public record (every parameter) is Release.to_dict(), or --json on the CLI.")

    _section(
        "2. A private triangle count from an edge list",
        "What it shows: the number of triangles (three members who are all friends) in a\n"
        "friendship network; 'neighbours' says that one friendship (edge) is protected,\n"
        "and the 34 members are public.",
    )
    print(f"data: {karate} (34 members, 78 friendships)")
    print(
        "CLI:  instancedp release-graph --owner src/instancedp/data/karate.edges "
        f"--statistic triangles --epsilon 0.5 --vertices 34 --ledger {ledger} --budget-epsilon 1 "
        "--dataset-id karate"
    )
    # Edge privacy: the vertex set (the club's 34 members) is public.
    tmech = build_mechanism("triangles", 0.5, vertices=34)
    with Session(karate, PureDP(1.0), ledger=ledger, dataset_id="karate") as s:
        r = s.release(tmech)
        _summary(r, {"statistic": "triangles", "vertices": 34, "neighbours": "edge"})
        print(f"remaining for 'karate': {s.remaining.describe()} of {s.budget.describe()}")

    _section(
        "3. The budget ledger",
        "What it shows: what each dataset has spent and has left; a release that does not\n"
        "fit its dataset's budget is refused before any noise is drawn.",
    )
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

    _section(
        "4. How much noise smooth sensitivity adds",
        "What it shows: the noise's standard deviation at ε = 1 when the dataset's smooth\n"
        "sensitivity is 1 (multiply by yours). A row is a smoothness γ (gamma: how fast the\n"
        "noise scale may change between neighbouring datasets; a larger γ follows your data\n"
        "more closely but needs heavier-tailed noise), a column a noise family. ∞: infinite\n"
        "variance at that γ; —: the family cannot be used at that γ. Smaller is better.",
    )
    print("CLI:  instancedp noise-table --epsilon 1   (the full table, all families)")
    try:
        from .experiments import noise_table

        rows = noise_table.noise_std_table(epsilon=1.0, gammas=DEMO_GAMMAS)
        header = ["γ"] + [label for _, label in DEMO_FAMILIES]
        width = [6] + [max(12, len(h)) for h in header[1:]]
        print("  ".join(h.ljust(w) for h, w in zip(header, width, strict=True)))
        for row in rows:
            cells = [f"{row['gamma']:g}"] + [_cell(float(row[f])) for f, _ in DEMO_FAMILIES]
            print("  ".join(c.ljust(w) for c, w in zip(cells, width, strict=True)))
    except ImportError as exc:  # another piece of the package not installed
        print(f"(noise table unavailable: {exc})")

    _section(
        "5. Compare the median mechanisms over ε (a simulation)",
        "What it shows: how far each mechanism's answer typically lands from the true median\n"
        "on these public prices, so you can choose before spending budget. It is a seeded\n"
        "simulation, not a private release; the table says how to read it.",
    )
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
