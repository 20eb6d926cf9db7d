"""The Spark sessions of the Spark tests, defined here once: a classic local[2] session (``spark``), a Spark Connect
session on its JVM (``connect``), and ``session``, each kind in turn.

Defined once, so that one instance of each lives for the whole run: a test module that imported ``spark`` would
make a second session-scoped fixture of it, whose teardown (finalized before ``connect``'s, which it does not know)
stops the SparkContext and the Connect server under the open Connect client, whose ``stop`` then retries its release
of the session for 10 minutes (Spark Connect's default retry policy).
"""

import os
import shutil
import socket
import sys

import pytest


#: The test files that take longest, longest first (seconds of one all-core pass here: 280, 170, 165, 150, 145,
#: 90, ... of about 2000). pytest-xdist's workers take whole files in the order of collection (``--dist loadfile
#: --no-loadscope-reorder``, as ``make test`` runs them; by default xdist puts the files with the most tests first,
#: which left files of a few long tests, such as test_benchmarks.py, for the end); started first, the long files end
#: before the short ones, so the workers finish together. A file missing here runs after them, in its usual order.
LONGEST_FIRST = ("test_spark.py", "test_benchmarks.py", "test_host_process.py", "test_cli.py", "test_cli_spark.py",
                 "test_jit_cache.py", "test_bench_check.py", "test_precompile.py", "test_precompile_signals.py",
                 "test_docs.py", "test_segment_binning.py", "test_spark_segments.py", "test_dask.py",
                 "test_multicalibration.py", "test_spark_rough_edges.py", "test_platt.py", "test_weight_scale.py",
                 "test_sklearn_suite.py", "test_engine_drivers.py", "test_spark_grouped.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file's own order is kept


def _java_missing():
    home = os.environ.get("JAVA_HOME")
    return shutil.which("java") is None and not (home and os.path.exists(os.path.join(home, "bin", "java")))


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


#: The port of the Spark Connect server in the tests' JVM (see :func:`spark`).
CONNECT_PORT = _free_port()


@pytest.fixture(scope="session")
def spark():
    if _java_missing():
        pytest.skip("Java is missing: the Spark tests need a Java runtime (17 or later) on PATH or in JAVA_HOME")
    from pyspark.sql import SparkSession

    # Spark's Python workers run PYSPARK_PYTHON (default: python3 on PATH, which need not have fastcal): this one.
    env = pytest.MonkeyPatch()
    env.setenv("PYSPARK_PYTHON", sys.executable)
    session = (SparkSession.builder.master("local[2]").appName("fastcal-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.default.parallelism", "2")
               .config("spark.pyspark.python", sys.executable)
               .config("spark.pyspark.driver.python", sys.executable)
               .config("spark.python.worker.faulthandler.enabled", "true")
               .config("spark.driver.memory", "2g")
               # A Spark Connect server in the same JVM, for the `connect` fixture
               .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
               .config("spark.connect.grpc.binding.address", "localhost")
               .config("spark.connect.grpc.binding.port", str(CONNECT_PORT))
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    env.undo()


@pytest.fixture(scope="session")
def connect(spark):
    """A Spark Connect session (PySpark's gRPC client, no JVM in this process of its own) on the server the
    classic session's JVM runs: the same executors and cache, so both kinds of session read the same rows. Stopped
    before the classic session (it depends on it)."""
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    session = RemoteSparkSession.builder.remote(f"sc://localhost:{CONNECT_PORT}").create()
    yield session
    session.stop()


@pytest.fixture(params=["classic", "connect"])
def session(request, monkeypatch):
    """Each kind of session in turn: the classic one (``spark``), then Spark Connect (``connect``)."""
    if request.param == "classic":
        return request.getfixturevalue("spark")
    connect = request.getfixturevalue("connect")
    # pyspark.sql.functions makes Spark Connect's Columns where this is set, as a Connect session's builder sets it
    # for its process; this process has both kinds of session, so it is set for this test only.
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    return connect


@pytest.fixture(scope="session")
def connect_url(spark):
    """The URL of the Spark Connect server in the tests' JVM, for clients in other processes."""
    return f"sc://localhost:{CONNECT_PORT}"


@pytest.fixture(scope="module")
def dask_client():
    """A distributed.LocalCluster of two worker processes (data really travels between processes), per module."""
    import distributed

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                       silence_logs=40)
    client = distributed.Client(cluster)
    try:
        assert len(client.scheduler_info()["workers"]) == 2
        yield client
    finally:
        client.close()
        cluster.close()
