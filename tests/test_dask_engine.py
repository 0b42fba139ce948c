"""`--engine dask`: the same stages on a real Dask LocalCluster on loopback, the same rows.

One two-worker cluster serves the whole module. Faults are put inside the worker processes
with `client.run`, so they strike where the shards are graded, not in the test process.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import RUNGRADE
from typer.testing import CliRunner

from pipeline.checks import default_grader
from pipeline.cli import app
from pipeline.engines import DaskSpec
from pipeline.grade import grade_runs
from pipeline.store import ResultStore
from pipeline.synth import synthesize
from pipeline.tables import TABLES

REPO = Path(__file__).resolve().parent.parent
SYNTH_RUNS = 24
VOLATILE = ("batch_id", "discovered_at", "graded_in")  # differ between any two grades


@pytest.fixture(scope="module")
def client(s3_server):
    """A client of a two-worker LocalCluster; workers start after the S3 variables are set."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Synthetic runs beside the sample runs (ledgers, refusals, both eras)."""
    root = tmp_path_factory.mktemp("dask") / "runs"
    synthesize(str(root / "synth"), SYNTH_RUNS, seed=3, workers=1)
    shutil.copytree(REPO / "data" / "runs", root / "samples", symlinks=True)
    return root


@pytest.fixture(scope="module")
def local(corpus: Path, tmp_path_factory) -> tuple[Path, dict]:
    """The corpus graded by the local engine: (results, summary)."""
    out = tmp_path_factory.mktemp("local") / "results"
    summary = grade_runs(str(corpus), str(out), default_grader(), batch_size=20, workers=2)
    return out, summary.as_dict()


def tables(results: str, endpoint: str | None = None, root: str = "",
           drop: tuple[str, ...] = VOLATILE) -> dict[str, pl.DataFrame]:
    """Every committed table without the `drop` columns, runs under `root` only, with `root`
    cut from paths; rows sorted."""
    store = ResultStore(results, endpoint)
    out = {}
    for table in TABLES:
        parts = []
        for url in store.table_files(table):
            with store.fs.open(url if store.local else url.split("://", 1)[1], "rb") as fh:
                parts.append(pl.read_parquet(fh))
        if not parts:
            continue
        df = pl.concat(parts).drop(drop, strict=False)
        df = df.filter(pl.col("run_uri").str.starts_with(root)).with_columns(
            pl.col(pl.String).str.replace_all(root, "", literal=True))
        if df.height:
            out[table] = df.sort(df.columns, nulls_last=True)
    return out


def counts(summary: dict) -> dict:
    keep = ("found", "new", "graded", "refused", "refusals", "verdicts", "ledger_verdicts",
            "mean_overall_score")
    return {k: summary[k] for k in keep}


def assert_same_tables(a: dict[str, pl.DataFrame], b: dict[str, pl.DataFrame]) -> None:
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].height == b[name].height, name
        assert a[name].equals(b[name], null_equal=True), name


def test_dask_engine_gives_the_local_engines_rows(client, corpus: Path, local, tmp_path: Path):
    out = tmp_path / "results"
    summary = grade_runs(str(corpus), str(out), default_grader(), batch_size=20,
                         engine=DaskSpec(scheduler=client.scheduler.address)).as_dict()
    local_out, local_summary = local
    assert counts(summary) == counts(local_summary)
    assert summary["found"] == summary["graded"] + summary["refused"] > SYNTH_RUNS
    assert summary["refused"] > 0 and summary["ledger_verdicts"]  # refusals and ledgers too
    assert len(summary["batches"]) == len(local_summary["batches"])
    got, want = tables(str(out)), tables(str(local_out))
    assert {"runs", "clauses", "checks", "clause_verdicts", "run_scores"} <= set(got)
    assert_same_tables(got, want)
    reports = sorted(p.name for p in (out / "reports").glob("*.json"))
    assert reports == sorted(p.name for p in (local_out / "reports").glob("*.json"))
    # the next grade skips every run, as under the local engine
    again = grade_runs(str(corpus), str(out), default_grader(),
                       engine=DaskSpec(scheduler=client.scheduler.address))
    assert (again.skipped, again.graded + again.refused) == (summary["found"], 0)


def _break_runs(checks_uri: str, read_uri: str) -> None:
    """In a worker: the checks raise on a shard holding `checks_uri`; reading `read_uri`
    raises too."""
    import pipeline.grade as grade
    import pipeline.sources.prose as prose

    verdicts, read = grade.clause_verdicts, prose._read

    def failing_verdicts(clauses, *args, **kwargs):
        if checks_uri in clauses["run_uri"].to_list():
            raise RuntimeError("clause verdicts broke on this run")
        return verdicts(clauses, *args, **kwargs)

    def failing_read(bucket, ref, run, cap):
        if ref.uri == read_uri:
            raise KeyError("reader broke on this run")
        return read(bucket, ref, run, cap)

    grade.clause_verdicts, prose._read = failing_verdicts, failing_read
    grade._mend = lambda: setattr(grade, "clause_verdicts", verdicts) or setattr(
        prose, "_read", read)


def _mend_runs() -> None:
    import pipeline.grade as grade

    grade.__dict__.pop("_mend", lambda: None)()


def _grade_on(client, corpus: Path, out: Path) -> dict:
    """Grade `corpus` on the module's cluster, then mend whatever a test broke in its workers."""
    try:
        return grade_runs(str(corpus), str(out), default_grader(), batch_size=20,
                          engine=DaskSpec(scheduler=client.scheduler.address)).as_dict()
    finally:
        client.run(_mend_runs)


def test_a_run_that_raises_in_a_worker_is_refused_and_the_others_graded(
        client, corpus: Path, local, tmp_path: Path):
    local_out, local_summary = local
    graded = tables(str(local_out))["runs"].filter(pl.col("status") == "graded")
    checks_uri, read_uri = sorted(graded["run_uri"].to_list())[:2]
    client.run(_break_runs, checks_uri, read_uri)
    summary = _grade_on(client, corpus, tmp_path / "results")
    assert summary["found"] == local_summary["found"] == summary["graded"] + summary["refused"]
    assert summary["refusals"]["internal-error"] == 2
    assert summary["graded"] == local_summary["graded"] - 2
    got = tables(str(tmp_path / "results"))
    refusals = got["refusals"].filter(pl.col("reason") == "internal-error")
    detail = dict(refusals.select("run_uri", "detail").iter_rows())
    assert sorted(detail) == sorted([checks_uri, read_uri])
    assert "Traceback" in detail[checks_uri] and "clause verdicts broke" in detail[checks_uri]
    assert "reader broke on this run" in detail[read_uri]
    assert len(detail[checks_uri]) <= 1500
    # every other run has the rows the local engine gave it
    want = tables(str(local_out))
    for name in ("runs", "clause_verdicts", "run_scores"):
        others = pl.col("run_uri").is_in([checks_uri, read_uri]).not_()
        mine = got[name].filter(others)
        assert mine.equals(want[name].filter(others), null_equal=True), name
    assert set(got["runs"]["run_uri"]) == set(want["runs"]["run_uri"])  # none dropped


def test_a_shard_that_raises_in_the_local_engine_refuses_only_its_bad_run(
        corpus: Path, local, tmp_path: Path, monkeypatch):
    import pipeline.grade as grade

    local_out, local_summary = local
    graded = tables(str(local_out))["runs"].filter(pl.col("status") == "graded")
    bad = graded["run_uri"].to_list()[0]
    verdicts = grade.clause_verdicts
    shards: list[int] = []  # the runs of each grading of a shard or of a part of one

    def failing(clauses, *args, **kwargs):
        shards.append(clauses["run_uri"].n_unique())
        if bad in clauses["run_uri"].to_list():
            raise ValueError("no verdict for this run")
        return verdicts(clauses, *args, **kwargs)

    monkeypatch.setattr(grade, "clause_verdicts", failing)
    summary = grade_runs(str(corpus), str(tmp_path / "results"), default_grader(),
                         workers=1).as_dict()
    assert summary["refusals"]["internal-error"] == 1
    # the shard is graded again in halves, each half that raises halved again: one grading
    # of each half on the way down to the bad run (and of the bad run alone), not of each run
    whole = max(shards)
    assert shards[0] == whole and len(shards) <= 1 + 2 * math.ceil(math.log2(whole)), shards
    assert summary["found"] == local_summary["found"] == summary["graded"] + summary["refused"]
    refusal = tables(str(tmp_path / "results"))["refusals"].filter(
        pl.col("reason") == "internal-error")
    assert refusal["run_uri"].to_list() == [bad]
    assert "no verdict for this run" in refusal["detail"][0]


def _die_once(marker: str) -> None:
    """In a worker: the first shard graded anywhere kills its worker process."""
    import os

    import pipeline.grade as grade

    tables = grade.grade_tables

    def dying(*args, **kwargs):
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return tables(*args, **kwargs)
        os._exit(1)  # the worker dies mid-shard, as on an out-of-memory kill

    grade.grade_tables = dying
    grade._mend = lambda: setattr(grade, "grade_tables", tables)


def test_a_shard_whose_worker_dies_is_retried(client, corpus: Path, local, tmp_path: Path):
    marker = tmp_path / "died"
    client.run(_die_once, str(marker))
    summary = _grade_on(client, corpus, tmp_path / "results")
    assert marker.exists()  # a worker did die
    local_out, local_summary = local
    assert counts(summary) == counts(local_summary)
    assert_same_tables(tables(str(tmp_path / "results")), tables(str(local_out)))


def test_s3_runs_and_results_on_dask(client, corpus: Path, local, s3_server: str,
                                     s3_bucket: str, s3fs_client):
    project = corpus / "synth" / "data-team"  # a few runs: the loopback S3 server is slow
    s3fs_client.put(f"{project}/", f"{s3_bucket}/nightly/", recursive=True)
    runs, results = f"s3://{s3_bucket}/nightly", f"s3://{s3_bucket}/results"
    result = CliRunner().invoke(app, ["grade", runs, "--out", results, "--engine", "dask",
                                      "--scheduler", client.scheduler.address,
                                      "--endpoint-url", s3_server, "--batch-size", "10",
                                      "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    found = len(list((project / ".prose" / "runs").iterdir()))
    assert summary["found"] == found == summary["graded"] + summary["refused"] > 1
    local_out, _ = local
    # S3 keeps its own mtimes, so fingerprints differ from the local files'; all else agrees
    drop = (*VOLATILE, "fingerprint")
    assert_same_tables(tables(results, s3_server, root=runs + "/", drop=drop),
                       tables(str(local_out), root=f"{project}/", drop=drop))


def test_cli_starts_a_local_cluster_and_refuses_bad_engine_options(corpus: Path,
                                                                   tmp_path: Path):
    cli = CliRunner()
    runs = str(corpus / "samples" / "acme-research")
    result = cli.invoke(app, ["grade", runs, "--out", str(tmp_path / "r"), "--engine", "dask",
                              "--workers", "1", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["found"] == summary["graded"] + summary["refused"] > 0
    for args, words in [(["--engine", "spark"], "--engine must be"),
                        (["--scheduler", "tcp://127.0.0.1:1"], "needs --engine dask"),
                        (["--engine", "dask", "--scheduler", "tcp://127.0.0.1:1",
                          "--workers", "2"], "not both"),
                        # (distributed's ValueError was a traceback)
                        (["--engine", "dask", "--scheduler", "scheduler-host"],
                         "is not a scheduler's address")]:
        bad = cli.invoke(app, ["grade", runs, "--out", str(tmp_path / "x"), *args])
        assert bad.exit_code == 2 and words in bad.output, bad.output


def test_the_cluster_the_engine_starts_leaves_the_grading_task_the_gil():
    # no sampling profiler, and a slow tick and memory check: each takes the GIL from the
    # grading task; the settings reach the workers, not this process (nor does the workers'
    # environment)
    import dask

    from pipeline.engines import LOCAL_CLUSTER_CONFIG
    from pipeline.grade import default_ledger_graders

    engine = DaskSpec(workers=1)(1, default_grader(), default_ledger_graders(), None)
    try:
        seen = engine.client.run(lambda: {key: dask.config.get(key)
                                          for key in LOCAL_CLUSTER_CONFIG})
        assert list(seen.values()) == [LOCAL_CLUSTER_CONFIG]
        assert dask.config.get("distributed.worker.profile.enabled")  # this process's is kept
        # the local engine's worker environment too (polars' allocator with one arena)
        allocator = engine.client.run(os.getenv, "_RJEM_MALLOC_CONF")
        assert [conf.split(",")[-1] for conf in allocator.values()] == ["narenas:1"]
    finally:
        engine.close()


# A program that imports polars as it loads, then grades on Dask: its workers load it too
# (they import the program's main module), before the environment `env=` would give them.
POLARS_FIRST = """
import polars, sys, logging
from pipeline.checks import default_grader
from pipeline.engines import DaskSpec
from pipeline.grade import default_ledger_graders

def threads():
    import polars
    return polars.thread_pool_size()

if __name__ == "__main__":
    logging.disable(logging.WARNING)
    engine = DaskSpec(workers=2)(2, default_grader(), default_ledger_graders(), None)
    try:
        print(sorted(engine.client.run(threads).values()))
    finally:
        engine.close()
"""


def test_cluster_workers_run_polars_on_one_thread(tmp_path: Path):
    script = tmp_path / "polars_first.py"
    script.write_text(POLARS_FIRST)
    # (without the suite's own setting, see conftest.py: the workers must come to it alone)
    env = {k: v for k, v in os.environ.items() if k != "POLARS_MAX_THREADS"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[1, 1]", done.stdout


def _interrupted_while_polars_runs() -> str:
    """On a worker: a Ctrl-C (SIGINT to the process, as a terminal sends it to the whole
    process group) arrives while polars runs a query, as it does while a shard is graded."""
    import signal
    import threading

    frame = pl.DataFrame({"a": range(2_000_000)})
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
    for _ in range(30):  # (one query takes about 0.05 s: the signal comes during one)
        frame.lazy().select(pl.col("a").cast(pl.String).str.len_bytes().sum()).collect()
    return "finished"


def test_a_local_clusters_workers_leave_a_ctrl_c_to_the_grading_process():
    # polars installs a SIGINT handler of its own when imported, whatever was ignored before:
    # each worker's query raised KeyboardInterrupt, and printed its traceback, before the
    # grade's one-line message. Only the grading process decides what a stop abandons.
    engine = DaskSpec(workers=1)(1, default_grader(), (), None)
    try:
        assert engine.client.submit(_interrupted_while_polars_runs, pure=False).result() \
            == "finished"
        engine.client.restart()  # a worker its nanny starts again ignores it too
        assert engine.client.submit(_interrupted_while_polars_runs, pure=False).result() \
            == "finished"
    finally:
        engine.close()


# A LocalCluster's worker logs what a heartbeat meets as the grade closes the cluster: the
# scheduler gone (logged with its traceback), or not knowing the worker any more.
HEARTBEAT_AT_CLOSE = """
import logging
from pipeline.checks import default_grader
from pipeline.engines import DaskSpec

def heartbeat_at_close():
    log = logging.getLogger("distributed.worker")
    try:
        raise OSError("Stream is closed")
    except OSError:
        log.exception("Failed to communicate with scheduler during heartbeat.")
    log.warning("Scheduler was unaware of this worker; shutting down.")
    log.error("a worker's own error: %s", "kept")

if __name__ == "__main__":
    engine = DaskSpec(workers=1)(1, default_grader(), (), None)
    try:
        engine.client.run(heartbeat_at_close)
    finally:
        engine.close()
"""


def test_a_local_clusters_workers_say_nothing_of_a_heartbeat_the_closing_cluster_cut(
        tmp_path: Path):
    # a finished grade printed a worker's forty-line traceback under its summary, now and then
    script = tmp_path / "heartbeat.py"
    script.write_text(HEARTBEAT_AT_CLOSE)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "a worker's own error: kept" in done.stderr  # the workers' log is shown
    assert "heartbeat" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "unaware" not in done.stderr, done.stderr


STOP_WHILE_STARTING = '''
import contextlib
import os
import signal

import pipeline.engines as engines
from pipeline.checks import default_grader

_held = engines.stops_held_while_starting


@contextlib.contextmanager
def _stopped_inside():
    with _held():
        os.kill(os.getpid(), getattr(signal, os.environ["STOP_WITH"]))  # as the cluster starts
        yield


engines.stops_held_while_starting = _stopped_inside
grader = default_grader("stopwhilestarting.contract.grader/v1")
'''


@pytest.mark.parametrize("stop, code, said", [("SIGINT", 130, "interrupted"),
                                              ("SIGTERM", 143, "stopped by SIGTERM")])
def test_a_stop_that_comes_while_the_local_cluster_starts_is_answered(
        corpus: Path, tmp_path: Path, stop: str, code: int, said: str):
    # The grading process ignored SIGINT and SIGTERM while the LocalCluster started (0.6-1 s),
    # so that its workers are born ignoring them: a Ctrl-C or a scheduler's SIGTERM then was
    # lost, and the grade went on to its end. They are now held and answered once the
    # cluster is up. The grader file sends the signal from inside that window.
    grader = tmp_path / "stop_grader.py"
    grader.write_text(STOP_WHILE_STARTING)
    done = subprocess.run(
        [RUNGRADE, "grade", str(corpus / "samples"),
         "--out", str(tmp_path / "results"), "--engine", "dask", "--workers", "2",
         "--grader", str(grader)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "STOP_WITH": stop})
    assert done.returncode == code, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "results" / "_commits").exists() or not any(
        (tmp_path / "results" / "_commits").iterdir())  # nothing was graded
