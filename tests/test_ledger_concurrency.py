"""Ledger atomicity across processes, and crash safety under SIGKILL, on both
backends (an SQLite file and a PostgreSQL server).

8 worker processes × 50 releases each against one ledger whose budget allows
exactly 300: exactly 300 succeed and 100 are refused.  Then again while some
workers are killed with SIGKILL in the middle of a release: the recorded
spend covers every release that returned a value, never exceeds the budget,
and the database passes ``PRAGMA integrity_check``.

Deterministic: the kill lands while the victim is provably inside
``mechanism.release`` (it signals, then blocks until killed), so no outcome
depends on timing.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import time
from decimal import Decimal

import numpy as np
import pytest

from instancedp.ledger import BudgetExceeded, Ledger
from instancedp.mechanisms.base import Mechanism
from instancedp.privacy import PureDP
from instancedp.random import simulation
from instancedp.session import Session

EPS = 2.0**-7
BUDGET = 300 * EPS  # exactly 300 releases (2⁻⁷ is exact in binary: no excess per charge)
WORKERS = 8
PER_WORKER = 50


class CountLaplace(Mechanism):
    """Pure Laplace on a count (sensitivity 1): a cheap real mechanism."""

    name = "count_laplace"

    def __init__(self, epsilon, hang_event=None, hang_at=None):
        self.epsilon = epsilon
        self.hang_event = hang_event
        self.hang_at = hang_at
        self.calls = 0

    @property
    def guarantee(self):
        return PureDP(self.epsilon)

    def parameters(self):
        return {"epsilon": self.epsilon}

    def release(self, data, rng=None):
        self.calls += 1
        if self.hang_at is not None and self.calls == self.hang_at:
            self.hang_event.set()  # inside the release, after the charge
            time.sleep(120)  # the parent kills us here
        value = float(len(data)) + rng.generator.laplace(0.0, 1.0 / self.epsilon)
        return self._record(value, rng)


def _worker(path, seed, out_path, hang_event=None, hang_at=None):
    mech = CountLaplace(EPS, hang_event, hang_at)
    ok = refused = 0
    with Session(np.ones(10), ledger=path, dataset_id="d") as s:
        fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        for i in range(PER_WORKER):
            try:
                s.release(mech, rng=simulation(seed * 1000 + i))
            except BudgetExceeded:
                refused += 1
                os.write(fd, b"r\n")
            else:
                ok += 1
                os.write(fd, b"v\n")  # written only after the value came back
        os.close(fd)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request, tmp_path):
    """(target, as_principal): where the ledger lives, and how principal p opens it
    (a keyword on SQLite; a database role, from ``session_user``, on PostgreSQL)."""
    if request.param == "sqlite":
        path = str(tmp_path / "ledger.db")
        return path, lambda p: (path, {"principal": p})
    pytest.importorskip("psycopg")
    name = f"conc_{request.node.name.split('[')[0][-30:]}"
    url = request.getfixturevalue("new_pg_db")(name)
    from instancedp.ledger_pg import PostgresLedger

    with psycopg_connect(url) as con:
        for i in range(4):
            con.execute(
                f"DO $$ BEGIN CREATE ROLE p{i} LOGIN; EXCEPTION WHEN duplicate_object "
                "THEN NULL; END $$"
            )
    with PostgresLedger(url, init=True) as led:
        for i in range(4):
            led.grant_analyst(f"p{i}")
    return url, lambda p: (url.replace("postgres@", f"{p}@", 1), {})


def psycopg_connect(url):
    import psycopg

    return psycopg.connect(url, autocommit=True)


def _make_ledger(path):
    with Ledger(path) as led:
        led.ensure_budget("d", PureDP(BUDGET))


def _lines(tmp_path, w):
    p = tmp_path / f"w{w}.out"
    return p.read_text().split() if p.exists() else []


def test_eight_processes_exactly_300_of_400(tmp_path, backend):
    path = backend[0]
    _make_ledger(path)
    ctx = mp.get_context("fork")
    procs = [
        ctx.Process(target=_worker, args=(path, w, str(tmp_path / f"w{w}.out")))
        for w in range(WORKERS)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    outs = [x for w in range(WORKERS) for x in _lines(tmp_path, w)]
    assert outs.count("v") == 300
    assert outs.count("r") == 100
    with Ledger(path, create=False) as led:
        assert led.count("d") == 300
        assert led.spent("d").epsilon == Decimal(BUDGET)
        assert led.remaining("d").epsilon == 0
        assert led.integrity_check() == "ok" and led.verify().ok


def test_sigkill_mid_release_only_over_counts(tmp_path, backend):
    path = backend[0]
    _make_ledger(path)
    ctx = mp.get_context("fork")
    # worker → release number at which it is killed.  The five others charge at most
    # 5 × 50 = 250 and the victims 5 + 17 + 25 = 47 before hanging: 297 ≤ 300, so every
    # victim reaches its release however the processes are scheduled.
    victims = {1: 5, 4: 17, 6: 25}
    events = {w: ctx.Event() for w in victims}
    procs = []
    for w in range(WORKERS):
        args = (path, w, str(tmp_path / f"w{w}.out"))
        if w in victims:
            args += (events[w], victims[w])
        procs.append(ctx.Process(target=_worker, args=args))
    for p in procs:
        p.start()
    # A random extra kill at an arbitrary moment (whatever it interrupts).
    rnd = np.random.default_rng(7)
    time.sleep(float(rnd.uniform(0.0, 0.2)))
    # a worker that already finished (and was reaped by a later start) has nothing left
    # to interrupt: the kill then finds no process
    with contextlib.suppress(ProcessLookupError):
        os.kill(procs[2].pid, signal.SIGKILL)
    for w, ev in events.items():
        assert ev.wait(60), "victim never reached its release"
        os.kill(procs[w].pid, signal.SIGKILL)
    for p in procs:
        p.join(120)
    for w in victims:
        assert procs[w].exitcode == -signal.SIGKILL
    returned = sum(_lines(tmp_path, w).count("v") for w in range(WORKERS))
    with Ledger(path, create=False) as led:  # never unreadable: the open's checks pass
        assert led.integrity_check() == "ok" and led.verify().ok
        spent = led.spent("d").epsilon
        n = led.count("d")
        statuses = [h["status"] for h in led.history("d")]
    # Every value that came back was charged; spend never above the budget.
    assert spent == Decimal(EPS) * n
    assert n >= returned
    assert spent <= Decimal(BUDGET)
    # Each victim died after its charge and before its release returned: at
    # least those three charges were never marked — the over-count.
    assert statuses.count("charged") >= len(victims)
    assert statuses.count("released") >= returned


def _principal_worker(target, kwargs, out_path):
    from instancedp.ledger import Ledger as _Ledger

    with _Ledger(target, create=False, **kwargs) as led:
        fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        for _ in range(10):
            try:
                led.charge("d", PureDP(0.0625))
            except BudgetExceeded:
                os.write(fd, b"r\n")
            else:
                os.write(fd, b"v\n")
        os.close(fd)


def test_allowances_hold_under_eight_processes(tmp_path, backend):
    # Four principals, allowance 0.5 each (8 releases of 2⁻⁴), dataset total 1.75
    # (28 releases): the total binds before the sum of the allowances (32).
    path, as_principal = backend
    with Ledger(path) as led:
        led.ensure_budget("d", PureDP(1.75))
        for i in range(4):
            led.set_allowance("d", f"p{i}", PureDP(0.5))
    ctx = mp.get_context("fork")
    procs = [
        ctx.Process(
            target=_principal_worker,
            args=(*as_principal(f"p{w % 4}"), str(tmp_path / f"w{w}.out")),
        )
        for w in range(WORKERS)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    per = {f"p{i}": 0 for i in range(4)}
    for w in range(WORKERS):
        per[f"p{w % 4}"] += _lines(tmp_path, w).count("v")
    assert sum(per.values()) == 28
    assert all(v <= 8 for v in per.values())
    with Ledger(path, create=False) as led:
        assert led.spent("d").epsilon == Decimal("1.75")
        spent = {
            r["principal"]: Decimal(r["spent"]["exact"]["epsilon"]) for r in led.principals("d")
        }
        assert spent == {k: Decimal("0.0625") * v for k, v in per.items() if v}
        assert led.verify().ok


def test_a_session_shared_by_threads(backend):
    # One Session (one ledger connection, serialised by the ledger's lock) used by 8
    # threads at once: exactly the budget's 64 releases of 2⁻⁶ succeed, every value that
    # came back was charged, and the chain verifies.
    import threading

    from instancedp.mechanisms import LaplaceMechanism
    from instancedp.queries.counts import Sum

    path = backend[0]
    with Ledger(path) as led:
        led.ensure_budget("t", PureDP(1.0))
    got, refused, errors = [], [], []
    with Session(np.arange(10.0), ledger=path, dataset_id="t") as s:
        mech = LaplaceMechanism(Sum(0, 10), 2.0**-6)

        def work(seed):
            for i in range(10):
                try:
                    got.append(s.release(mech, rng=simulation(seed * 100 + i)).value)
                except BudgetExceeded:
                    refused.append(1)
                except Exception as exc:  # any other failure fails the test below
                    errors.append(repr(exc))

        ts = [threading.Thread(target=work, args=(w,)) for w in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert errors == []
        assert len(got) == 64 and len(refused) == 16
        assert s.spent.epsilon == 1 and s.ledger.count("t") == 64
        assert [h["status"] for h in s.history()].count("released") == 64
    with Ledger(path, create=False) as led:
        assert led.verify().ok
