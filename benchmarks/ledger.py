"""Ledger charge throughput → docs/results/ledger.{md,json,png}.

1. Against the number of rows already in the ledger (10², 10⁴, 10⁶; ``--quick``
   stops at 10⁴): charges per second of one process, each charge its own
   transaction, on the real disk (the filesystem is named in the output) under
   both durability settings — ``full`` (the default: an fsync per charge,
   durable against power loss) and ``process`` (WAL with synchronous=NORMAL:
   durable against a killed process, not against power loss) — and on tmpfs
   (/dev/shm: no fsync, the CPU cost of a charge).  The rows are appended in
   bulk, in one transaction, through the ledger's own append (the same chain,
   running totals and head as a charge).
2. Against the number of processes (1, 2, 8, 32) charging one dataset whose
   budget admits exactly K charges, each process charging until refused:
   exactly K must succeed, the chain and totals must verify, and the total
   charges per second is reported.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

from instancedp.ledger import BudgetExceeded, Ledger, _guarantee_json, charge_amount
from instancedp.privacy import PureDP

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"
EPS = PureDP(2.0**-20)  # exact in binary: K charges cost exactly K·2⁻²⁰
REPO = Path(__file__).resolve().parent.parent


def _filesystem(path: str) -> str:
    """The filesystem type and device holding ``path`` (longest mount point in /proc/mounts)."""
    best = ("", "?", "?")
    try:
        with open("/proc/mounts") as f:
            for line in f:
                dev, mnt, fs, *_ = line.split()
                if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) > len(
                    best[0]
                ):
                    best = (mnt, fs, dev)
    except OSError:
        pass
    return f"{best[1]} on {best[2]}"


def _build(path: str, rows: int, durability: str) -> float:
    """A ledger of ``rows`` charges, appended in one transaction; returns the seconds."""
    t = time.perf_counter()
    with Ledger(path, durability=durability) as led:
        led.ensure_budget("d", PureDP(1e9))
        led.ensure_budget("x", PureDP(1e9))
        with led._tx("build") as con:
            led._append(
                con,
                "d",
                "bench",
                charge_amount("pure", EPS),
                _guarantee_json(EPS),
                "bench",
                "{}",
                "2026-01-01T00:00:00+00:00",
                count=rows,
            )
    return time.perf_counter() - t


def _rate(path: str, n: int, durability: str) -> tuple[float, float]:
    """(charges per wall-clock second, charges per CPU second of this process)."""
    with Ledger(path, create=False, durability=durability) as led:
        t, c = time.perf_counter(), time.process_time()
        for _ in range(n):
            led.charge("d", EPS, mechanism="bench")
        return n / (time.perf_counter() - t), n / (time.process_time() - c)


def _worker(path: str, ds: str, durability: str, go: mp.Event, q: mp.Queue) -> None:
    ok = 0
    with Ledger(path, create=False, durability=durability) as led:
        go.wait()
        c = time.process_time()
        while True:
            try:
                led.charge(ds, EPS, mechanism="bench")
            except BudgetExceeded:
                break
            ok += 1
    q.put((ok, time.perf_counter(), time.process_time() - c))


def _processes(path: str, procs: int, k: int, durability: str, tag: str) -> dict:
    ds = f"p{procs}-{durability}-{tag}"
    with Ledger(path, create=False) as led:
        led.ensure_budget(ds, PureDP(k * EPS.epsilon))
    ctx = mp.get_context("fork")
    q, go = ctx.Queue(), ctx.Event()
    ps = [ctx.Process(target=_worker, args=(path, ds, durability, go, q)) for _ in range(procs)]
    for p in ps:
        p.start()
    time.sleep(0.5)  # every worker opened its ledger
    t0 = time.perf_counter()
    go.set()
    got = [q.get(timeout=600) for _ in ps]
    for p in ps:
        p.join()
    wall = max(t for _, t, _ in got) - t0
    ok = sum(n for n, _, _ in got)
    cpu = sum(c for _, _, c in got)
    with Ledger(path, create=False) as led:  # the open runs the quick checks
        exact = ok == k and led.count(ds) == k and led.spent(ds).epsilon == k * EPS.epsilon
    return {
        "processes": procs,
        "durability": durability,
        "budget_admits": k,
        "succeeded": ok,
        "exact": bool(exact and all(p.exitcode == 0 for p in ps)),
        "charges_per_s": ok / wall,
        "charges_per_cpu_s": ok / cpu,
    }


def main(quick: bool = False) -> list[Path]:
    t0 = time.perf_counter()
    load0 = os.getloadavg()
    sizes = [100, 10_000] if quick else [100, 10_000, 1_000_000]
    n_charges = 200 if quick else 1000
    disk_base = tempfile.gettempdir()
    if _filesystem(os.path.realpath(disk_base)).startswith("tmpfs"):
        disk_base = str(REPO)  # the real disk under the checkout, not a tmpfs /tmp
    places = [("disk", disk_base, "full"), ("disk", disk_base, "process")]
    if os.path.isdir("/dev/shm"):
        places.append(("tmpfs", "/dev/shm", "full"))
    fs = {where: _filesystem(os.path.realpath(base)) for where, base, _ in places}
    by_rows, by_procs = [], []
    big = None
    for where, base, durability in places:
        with tempfile.TemporaryDirectory(dir=base, prefix="idp-ledger-bench-") as d:
            for rows in sizes:
                path = os.path.join(d, f"l{rows}.db")
                build_s = _build(path, rows, durability)
                r, r_cpu = _rate(path, n_charges, durability)
                t = time.perf_counter()
                with Ledger(path, create=False) as led:
                    opened = time.perf_counter() - t
                    v = time.perf_counter()
                    ok = led.verify().ok
                    verify_s = time.perf_counter() - v
                by_rows.append(
                    {
                        "where": where,
                        "filesystem": fs[where],
                        "durability": durability,
                        "rows": rows,
                        "build_s": build_s,
                        "charges_per_s": r,
                        "charges_per_cpu_s": r_cpu,
                        "open_s": opened,
                        "verify_s": verify_s,
                        "verify_ok": ok,
                    }
                )
                print(by_rows[-1], flush=True)
                if where == "disk" and rows == sizes[-1]:
                    # Concurrency on the largest ledger, under each durability.
                    for procs in (1, 2, 8, 32):
                        k = (200 if quick else 1000) if durability == "process" else 200
                        if quick and durability == "full":
                            k = 100
                        by_procs.append(
                            {
                                "where": where,
                                "rows": rows,
                                **_processes(path, procs, k, durability, str(rows)),
                            }
                        )
                        print(by_procs[-1], flush=True)
                    big = rows
                os.unlink(path)
    OUT.mkdir(parents=True, exist_ok=True)
    data = {
        "by_rows": by_rows,
        "by_processes": by_procs,
        "quick": quick,
        "cpus": os.cpu_count(),
        "filesystems": fs,
        "seconds": time.perf_counter() - t0,
        "load_average_start_end": [load0[0], os.getloadavg()[0]],
    }
    (OUT / "ledger.json").write_text(json.dumps(data, indent=2) + "\n")
    lines = [
        "# Ledger charge throughput",
        "",
        "Written by `python benchmarks/ledger.py` (`--quick`: up to 10⁴ rows, fewer charges). "
        "Each charge is one transaction of its own (check the budget and allowance, append a "
        "hash-chained row, update two running totals and the head). "
        f"'disk' is {fs['disk']} (the system temp directory); 'tmpfs' is "
        f"{fs.get('tmpfs', '—')} (no fsync: the CPU cost of a charge). Durability 'full' "
        "(the default) syncs every charge to disk (WAL, synchronous=FULL): it survives power "
        "loss. 'process' (WAL, synchronous=NORMAL) survives a killed process but may lose "
        "the last charges on power loss or an OS crash (docs/ledger.md). "
        f"Machine: {os.cpu_count()} CPUs shared with other jobs (1-minute load average "
        f"{data['load_average_start_end'][0]:.1f} at the start, "
        f"{data['load_average_start_end'][1]:.1f} at the end), so wall-clock rates are "
        "lower bounds; 'per CPU second' divides by the CPU time the charging processes "
        "used (what one uncontended core would sustain when fsync is not the bound). "
        f"Total run {data['seconds']:.0f} s.",
        "",
        "## Against rows already in the ledger (one process)",
        "",
        "| where | durability | rows | built in (s) | charges/s | per CPU second | open (ms) "
        "| verify (s) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in by_rows:
        lines.append(
            f"| {r['where']} | {r['durability']} | {r['rows']:,} | {r['build_s']:.1f} | "
            f"{r['charges_per_s']:.0f} | {r['charges_per_cpu_s']:.0f} | "
            f"{1000 * r['open_s']:.1f} | "
            f"{r['verify_s']:.2f}{'' if r['verify_ok'] else ' (FAILED)'} |"
        )
    lines += [
        "",
        f"## Against concurrent processes (one dataset, on the {big:,}-row disk ledger)",
        "",
        "Each process charges 2⁻²⁰ until refused; the budget admits exactly K charges. "
        "'exact': exactly K succeeded, the running total is K·2⁻²⁰ and the ledger re-opens "
        "with its checks passing.",
        "",
        "| durability | processes | K | succeeded | exact | charges/s (all together) "
        "| per CPU second |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for r in by_procs:
        lines.append(
            f"| {r['durability']} | {r['processes']} | {r['budget_admits']} | {r['succeeded']} "
            f"| {r['exact']} | {r['charges_per_s']:.0f} | {r['charges_per_cpu_s']:.0f} |"
        )
    lines.append("")
    md = OUT / "ledger.md"
    md.write_text("\n".join(lines))
    png = OUT / "ledger.png"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
        for i, (where, _, durability) in enumerate(places):
            rs = [r for r in by_rows if r["where"] == where and r["durability"] == durability]
            xs = [r["rows"] for r in rs]
            ax.loglog(
                xs, [r["charges_per_s"] for r in rs], marker="o", color=f"C{i}",
                label=f"{where}, {durability} (wall clock)",
            )  # fmt: skip
            ax.loglog(
                xs, [r["charges_per_cpu_s"] for r in rs], ls="--", marker="x", color=f"C{i}",
                label=f"{where}, {durability} (per CPU second)",
            )  # fmt: skip
        ax.axhline(1000, color="grey", ls=":", lw=1)
        ax.set_xlabel("rows already in the ledger")
        ax.set_ylabel("charges per second (one process)")
        ax.legend(fontsize=7)
        for durability in ("full", "process"):
            rs = [r for r in by_procs if r["durability"] == durability]
            bx.semilogx(
                [r["processes"] for r in rs],
                [r["charges_per_s"] for r in rs],
                marker="o",
                base=2,
                label=f"disk, {durability}",
            )
        bx.set_xlabel("concurrent processes")
        bx.set_ylabel("charges per second (all together)")
        bx.set_ylim(bottom=0)
        bx.legend()
        fig.tight_layout()
        fig.savefig(png, dpi=100)
        plt.close(fig)
    except Exception as exc:
        print(f"no plot: {exc}")
    print(md.read_text())
    return [md, OUT / "ledger.json", png]


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
