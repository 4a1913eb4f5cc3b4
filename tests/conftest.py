"""Shared test settings: hypothesis is derandomised so that no test is flaky."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile("ci")


# --- real engines: one local SparkSession, one PostgreSQL server per test session ---------
import os  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import pytest  # noqa: E402


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
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _pg_bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    root = "/usr/lib/postgresql"
    for version in sorted(os.listdir(root), reverse=True) if os.path.isdir(root) else []:
        path = os.path.join(root, version, "bin", name)
        if os.path.exists(path):
            return path
    pytest.skip(f"PostgreSQL binary {name!r} not found (apt-get install postgresql)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def postgres_url():
    """A throwaway PostgreSQL server; initdb/postgres run as the `postgres` user when root."""
    pytest.importorskip("psycopg")
    initdb, postgres = _pg_bin("initdb"), _pg_bin("postgres")
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    root = tempfile.mkdtemp(prefix="instancedp-pg-")
    data, sock = os.path.join(root, "data"), os.path.join(root, "sock")
    os.makedirs(sock)
    if as_user:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
    subprocess.run(as_user + [initdb, "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"],
                   check=True, capture_output=True)
    port = _free_port()
    proc = subprocess.Popen(
        as_user + [postgres, "-D", data, "-p", str(port), "-k", sock, "-h", "127.0.0.1",
                   "-c", "fsync=off", "-c", "full_page_writes=off"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    import psycopg

    deadline = time.monotonic() + 30
    while True:
        try:
            psycopg.connect(url).close()
            break
        except psycopg.OperationalError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.terminate()
                pytest.fail("PostgreSQL did not start")
            time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(timeout=30)
    shutil.rmtree(root, ignore_errors=True)
