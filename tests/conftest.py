"""Shared test settings: hypothesis is derandomised so that no test is flaky."""

import os

# One BLAS/OpenMP thread per test process, set before numpy loads: `make test` runs two
# xdist workers on two cores, and a multi-threaded OpenBLAS in each spins beside the other
# worker and the Spark JVM (a harness case whose eigenproblem takes about 1 s took 19 s).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile("ci")

# -- a throwaway PostgreSQL server (initdb + postgres as the `postgres` system user) ----------
import contextlib  # noqa: E402
import glob  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import pytest  # noqa: E402


# -- scheduling: whole files per worker, every Spark test on one worker -----------------
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` (the Makefile's): every test whose id names Spark runs on one
    worker (one JVM, ~10 s to start on two cores, instead of one per worker); every
    other test goes with its file, as under ``--dist loadfile`` (module fixtures built
    once).  The controller sees only test ids, so the group is read from the id; the
    hook below makes every test that uses the ``spark`` fixture carry "spark" in it."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileOrSpark(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "spark" if "spark" in nodeid.lower() else nodeid.split("::", 1)[0]

    return FileOrSpark(config, log)


def pytest_collection_modifyitems(items):
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) and "spark" not in item.nodeid.lower():
            raise pytest.UsageError(
                f"{item.nodeid} uses the spark fixture: put 'spark' in its name or file name "
                "so that it runs on the worker that holds the JVM"
            )


def _pg_bindir() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(found[-1]) if found else None


@pytest.fixture(scope="session")
def spark():
    """A local[1] SparkSession (UI off, one shuffle partition, 1 MB driver result limit)."""
    pyspark = pytest.importorskip("pyspark", reason="pip install 'instancedp[spark]'")
    del pyspark
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("instancedp-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.default.parallelism", "1")
        .config("spark.driver.maxResultSize", "1m")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.codegen.wholeStage", "false")  # tiny test tables: skip compiling
        .config("spark.ui.showConsoleProgress", "false")
        # tiny jobs on two shared cores: the quick JIT tier only and one GC thread (the
        # Spark tests ran in 42-50 s instead of 57-61 s, measured back to back)
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def postgres_url():
    """``postgresql://postgres@127.0.0.1:PORT/postgres`` of a server started for the run.

    CI runs as root and initdb refuses root, so the server runs as ``postgres`` in a
    temporary directory it owns, with its socket inside that directory."""
    bindir = _pg_bindir()
    if bindir is None or shutil.which("runuser") is None:
        pytest.skip("PostgreSQL binaries not installed (.ci/run installs them)")
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    d = tempfile.mkdtemp(prefix="instancedp-pg-")
    if os.geteuid() == 0:
        shutil.chown(d, "postgres", "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run(
        [
            *as_pg,
            f"{bindir}/initdb",
            "-D",
            f"{d}/data",
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
    )
    proc = subprocess.Popen(
        [
            *as_pg,
            f"{bindir}/postgres",
            "-D",
            f"{d}/data",
            "-k",
            d,
            "-p",
            str(port),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    try:
        import psycopg

        for _ in range(300):
            try:
                psycopg.connect(url, connect_timeout=1).close()
                break
            except psycopg.OperationalError:
                time.sleep(0.05)
        else:
            pytest.fail("the test PostgreSQL server did not start")
        yield url
    finally:
        # Fast shutdown (SIGINT to the postmaster: open sessions are closed, not waited
        # for).  SIGTERM to runuser would pass a smart shutdown on and SIGKILL it 2 s later.
        try:
            with open(f"{d}/data/postmaster.pid") as f:
                pid = int(f.readline())
            os.kill(pid, signal.SIGINT)
        except (OSError, ValueError):
            proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(20)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def new_pg_db(postgres_url):
    """A callable: ``new_pg_db(name, template=None)`` creates database ``name`` (dropping
    an old one) on the test server and returns its URL."""
    import psycopg

    def make(name: str, template: str | None = None) -> str:
        with psycopg.connect(postgres_url, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            tail = f' TEMPLATE "{template}"' if template else ""
            con.execute(f'CREATE DATABASE "{name}"{tail}')
        return postgres_url.rsplit("/", 1)[0] + "/" + name

    return make
