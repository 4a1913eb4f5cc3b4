"""Ledger charge throughput → docs/results/ledger.{md,json,png}.

1. Against the number of rows already in the ledger (10² … 10⁶; ``--quick``
   stops at 10⁴): charges per second of one process, each charge its own
   durable transaction (WAL, ``synchronous=FULL``: one fsync per charge), on
   the disk under the system temp dir and on tmpfs (/dev/shm, no fsync cost:
   the CPU cost of a charge).  The rows are appended in bulk, in one
   transaction, through the same code path as a charge.
2. Against the number of processes (1, 2, 4, 8) charging one dataset at once:
   total charges per second.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

from instancedp.ledger import Ledger, _guarantee_json, charge_amount
from instancedp.privacy import PureDP

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"
EPS = PureDP(2.0**-20)


def _build(path: str, rows: int) -> None:
    with Ledger(path) as led:
        led.ensure_budget("d", PureDP(1e9))
        cost = charge_amount("pure", EPS)
        g = _guarantee_json(EPS)
        done = 0
        while done < rows:  # bulk: many appends per transaction (same _append as charge)
            step = min(50_000, rows - done)
            with led._tx("build") as con:
                for _ in range(step):
                    led._append(con, "d", "bench", cost, g, "bench", "{}", "t")
            done += step


def _rate(path: str, n: int) -> float:
    with Ledger(path, create=False) as led:
        t = time.perf_counter()
        for _ in range(n):
            led.charge("d", EPS, mechanism="bench")
        return n / (time.perf_counter() - t)


def _worker(path: str, seconds: float, q: mp.Queue) -> None:
    n = 0
    with Ledger(path, create=False) as led:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            led.charge("d", EPS, mechanism="bench")
            n += 1
    q.put(n)


def main(quick: bool = False) -> list[Path]:
    t0 = time.perf_counter()
    sizes = [100, 1_000, 10_000] if quick else [100, 1_000, 10_000, 100_000, 1_000_000]
    n_charges = 100 if quick else 300
    dirs = {"disk": tempfile.gettempdir()}
    if os.path.isdir("/dev/shm"):
        dirs["tmpfs"] = "/dev/shm"
    by_rows = []
    for where, base in dirs.items():
        with tempfile.TemporaryDirectory(dir=base) as d:
            path = os.path.join(d, "l.db")
            built = 0
            for rows in sizes:
                _build_more = rows - built
                if _build_more > 0:
                    if built == 0:
                        _build(path, rows)
                    else:
                        with Ledger(path, create=False) as led:
                            cost = charge_amount("pure", EPS)
                            g = _guarantee_json(EPS)
                            with led._tx("build") as con:
                                for _ in range(_build_more):
                                    led._append(con, "d", "bench", cost, g, "bench", "{}", "t")
                    built = rows
                r = _rate(path, n_charges)
                built += n_charges
                t = time.perf_counter()
                with Ledger(path, create=False) as led:
                    opened = time.perf_counter() - t
                    v = time.perf_counter()
                    ok = led.verify().ok if rows <= 100_000 else None
                    verify_s = time.perf_counter() - v if ok is not None else None
                by_rows.append(
                    {
                        "where": where,
                        "rows": rows,
                        "charges_per_s": r,
                        "open_s": opened,
                        "verify_s": verify_s,
                        "verify_ok": ok,
                    }
                )
                print(by_rows[-1], flush=True)
    by_procs = []
    ctx = mp.get_context("fork")
    seconds = 2.0 if quick else 5.0
    for where, base in dirs.items():
        for procs in (1, 2, 4, 8):
            with tempfile.TemporaryDirectory(dir=base) as d:
                path = os.path.join(d, "l.db")
                _build(path, 1000)
                q = ctx.Queue()
                ps = [ctx.Process(target=_worker, args=(path, seconds, q)) for _ in range(procs)]
                for p in ps:
                    p.start()
                total = sum(q.get(timeout=120) for _ in ps)
                for p in ps:
                    p.join()
                with Ledger(path, create=False) as led:
                    exact = led.count("d") == 1000 + total and led.verify().ok
                by_procs.append(
                    {
                        "where": where,
                        "processes": procs,
                        "charges_per_s": total / seconds,
                        "exact": exact,
                    }
                )
                print(by_procs[-1], flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    data = {
        "by_rows": by_rows,
        "by_processes": by_procs,
        "quick": quick,
        "cpus": os.cpu_count(),
        "seconds": time.perf_counter() - t0,
    }
    (OUT / "ledger.json").write_text(json.dumps(data, indent=2))
    lines = [
        "# Ledger charge throughput",
        "",
        "Written by `python benchmarks/ledger.py` (`--quick`: up to 10⁴ rows). Each charge is "
        "one durable transaction (WAL, synchronous=FULL); 'disk' is the system temp dir "
        "(fsync-bound), 'tmpfs' is /dev/shm (the CPU cost of a charge). "
        f"Machine: {os.cpu_count()} CPUs, shared with other jobs.",
        "",
        "## Against rows already in the ledger (one process)",
        "",
        "| where | rows | charges/s | open (ms) | verify (s) |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in by_rows:
        v = f"{r['verify_s']:.2f}" if r["verify_s"] is not None else "—"
        lines.append(
            f"| {r['where']} | {r['rows']:,} | {r['charges_per_s']:.0f} | "
            f"{1000 * r['open_s']:.1f} | {v} |"
        )
    lines += [
        "",
        "## Against concurrent processes (one dataset)",
        "",
        "| where | processes | charges/s (all together) | count exact, chain ok |",
        "|---|---:|---:|---|",
    ]
    for r in by_procs:
        lines.append(
            f"| {r['where']} | {r['processes']} | {r['charges_per_s']:.0f} | {r['exact']} |"
        )
    lines.append("")
    md = OUT / "ledger.md"
    md.write_text("\n".join(lines))
    png = OUT / "ledger.png"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for where in dirs:
            rs = [r for r in by_rows if r["where"] == where]
            ax.semilogx(
                [r["rows"] for r in rs], [r["charges_per_s"] for r in rs], marker="o", label=where
            )
        ax.set_xlabel("rows in the ledger")
        ax.set_ylabel("charges per second (one process)")
        ax.set_ylim(bottom=0)
        ax.legend()
        fig.tight_layout()
        fig.savefig(png, dpi=100)
        plt.close(fig)
    except Exception as exc:
        print(f"no plot: {exc}")
    print(md.read_text())
    return [md, OUT / "ledger.json", png]


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
