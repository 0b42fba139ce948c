"""Faults while grading: a results target that refuses writes, a disk that reports an error
when results are flushed to it, and SIGTERM mid-grade.

Each test grades once, injects the fault into a second grade, then checks that every file of
the earlier results is byte-identical, that the failure is reported clearly with a stable exit
code, and that rerunning the same command completes without duplicate rows.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest
from run_folders import write_run
from typer.testing import CliRunner

from pipeline import exit_codes
from pipeline import store as store_module
from pipeline.catalog import CATALOG_FILE, CATALOG_STAMP, connect
from pipeline.cli import app
from pipeline.store import ResultStore

REPO = Path(__file__).resolve().parent.parent


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


# Rewritten by any grade that commits (and by `rungrade catalog`): the catalog and what it
# was written for.
CATALOG = (CATALOG_FILE, CATALOG_STAMP)


def assert_intact(before: dict[str, bytes], root: Path, *, derived: tuple[str, ...] = ()):
    """Every file present before is still there with the same bytes (derived files aside)."""
    after = snapshot(root)
    for rel, data in before.items():
        if rel in derived:
            continue
        assert rel in after, f"{rel} disappeared"
        assert after[rel] == data, f"{rel} changed"


def grade_log(results: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((results / "_grades").glob("*.json"))]


def before_ids(before: dict[str, bytes]) -> set[str]:
    """The grade ids of the records in a snapshot."""
    return {Path(rel).stem for rel in before if rel.startswith("_grades/")}


def current_rows(results: Path) -> dict[str, list]:
    con = connect(str(results))
    return {
        "runs": con.sql("select run_uri, status from runs order by all").fetchall(),
        "verdicts": con.sql("select run_uri, clause_id, verdict from clause_verdicts "
                            "order by all").fetchall(),
    }


def assert_no_duplicates(results: Path, runs_expected: int) -> None:
    con = connect(str(results))
    n, distinct = con.sql("select count(*), count(distinct run_uri) from runs").fetchall()[0]
    assert n == distinct == runs_expected
    dup = con.sql("select count(*) - count(distinct (grader_id, run_uri, service, clause_id)) "
                  "from clause_verdicts").fetchall()[0][0]
    assert dup == 0


@contextlib.contextmanager
def refusing_writes(path: Path):
    """Make `path` (a folder) refuse new entries: immutable as root, read-only otherwise."""
    if os.geteuid() == 0:
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot make a folder immutable here: {done.stderr.decode().strip()}")
        undo = ["chattr", "-i", str(path)]
    else:
        path.chmod(0o555)
        undo = None
    try:
        yield
    finally:
        if undo:
            subprocess.run(undo, check=True)
        else:
            path.chmod(0o755)


@contextlib.contextmanager
def failing_flush():
    """Make flushing results to disk fail as it does on a disk that could not write back what
    was written: `syncfs` fails with errno EIO. No failing device can be made on a test
    machine, so libc's `syncfs` is replaced by a function that fails so."""
    def failing_syncfs(fd: int) -> int:
        os.fstat(fd)  # it is handed an open descriptor of the results folder
        return errno.EIO

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(store_module, "_syncfs", lambda: failing_syncfs)
        yield


def grade(runs: Path, out: Path, *extra: str):
    return CliRunner().invoke(app, ["grade", str(runs), "--out", str(out), "--json",
                                    "--workers", "1", *extra])


# Where the write fails: staging the parts, moving reports into place, the commit marker; or
# the disk reports an error when the batch's parts are flushed to it, before its marker.
@pytest.mark.parametrize("blocked", ["_staging", "reports", "_commits", "flush"])
def test_publish_failure_leaves_earlier_results_intact(tmp_path, blocked):
    runs, out = tmp_path / "runs", tmp_path / "results"
    for i in range(4):
        write_run(runs, f"20261112-0100{i:02d}-first")
    assert grade(runs, out).exit_code == 0
    before, rows_before = snapshot(out), current_rows(out)
    commits_before = ResultStore(str(out)).committed_batches()

    for i in range(3):  # new runs arrive; the next grade must publish them or nothing
        write_run(runs, f"20261113-0100{i:02d}-second")
    with failing_flush() if blocked == "flush" else refusing_writes(out / blocked):
        failed = grade(runs, out)
    assert failed.exit_code == exit_codes.STORAGE, failed.output
    assert "intact" in failed.output and "rerun" in failed.output
    assert "Traceback" not in failed.output
    if blocked == "flush":
        assert "flushing results to disk failed" in failed.output, failed.output
    assert_intact(before, out)
    # the grade log says it failed, and why (its folder was not the one refusing writes)
    (record,) = [r for r in grade_log(out) if r["grade_id"] not in before_ids(before)]
    assert record["status"] == "failed" and record["finished_at"] is not None
    assert ("EIO" in record["error"] or "Input/output" in record["error"]) if (
        blocked == "flush") else "Errno" in record["error"], record["error"]
    if blocked == "reports":
        # Reports move after the commit marker: the batch is committed, its reports are
        # rolled forward by the next grade.
        assert ResultStore(str(out)).committed_batches() > commits_before
    else:
        assert ResultStore(str(out)).committed_batches() == commits_before
        assert current_rows(out) == rows_before, "readers saw part of the failed batch"

    rerun = grade(runs, out)
    assert rerun.exit_code == 0, rerun.output
    assert json.loads(rerun.output)["found"] == 7
    assert_intact(before, out, derived=CATALOG)
    assert_no_duplicates(out, 7)
    assert len(list((out / "reports").glob("*.json"))) == 7
    assert not list((out / "_staging").glob("*"))


def test_catalog_refresh_failure_is_reported(tmp_path):
    # The batch commits, then the results root refuses the refreshed catalog file.
    runs, out = tmp_path / "runs", tmp_path / "results"
    write_run(runs, "20261112-010000-first")
    assert grade(runs, out).exit_code == 0
    before = snapshot(out)
    write_run(runs, "20261113-010000-second")
    with refusing_writes(out):
        failed = grade(runs, out)
    assert failed.exit_code == exit_codes.STORAGE, failed.output
    assert "catalog" in failed.output and "Traceback" not in failed.output
    assert_intact(before, out)
    rerun = grade(runs, out)  # commits nothing, and writes the catalog the failure left old
    assert rerun.exit_code == 0, rerun.output
    assert json.loads(rerun.output)["batches"] == []
    assert_intact(before, out, derived=CATALOG)
    assert_no_duplicates(out, 2)
    with duckdb.connect(str(out / "catalog.duckdb"), read_only=True) as con:
        assert con.sql("select count(*) from runs").fetchall() == [(2,)]


@pytest.mark.parametrize("command", ["catalog", "compact"])
def test_a_store_failing_under_catalog_or_compact_exits_4(tmp_path, command):
    # Two batches (so that compact has something to merge); then the folder refuses the
    # new catalog file, or the disk reports an error when the results are flushed to it.
    runs, out = tmp_path / "runs", tmp_path / "results"
    for day in ("12", "13"):
        write_run(runs, f"202611{day}-010000-r{day}")
        assert grade(runs, out).exit_code == 0
    before, rows = snapshot(out), current_rows(out)
    for fault in (lambda: refusing_writes(out), failing_flush):
        with fault():
            failed = CliRunner().invoke(app, [command, str(out)])
        assert failed.exit_code == exit_codes.STORAGE, failed.output
        said = " ".join(failed.output.split())
        assert f"a store failed while {'compacting' if command == 'compact' else 'writing'}" \
               in said and "rerun the same command" in said and "Traceback" not in said
        assert current_rows(out) == rows
        assert not list(out.glob("catalog.duckdb.tmp-*"))
    if command == "catalog":  # (the catalog, the one before or its equal, rewritten)
        assert_intact(before, out, derived=CATALOG)
    done = CliRunner().invoke(app, [command, str(out)])
    assert done.exit_code == 0, done.output
    assert current_rows(out) == rows


def test_a_file_where_the_results_need_a_folder_fails_clearly(tmp_path):
    # (results whose own path runs through a file are a usage error: see test_cli_mistakes)
    runs, out = tmp_path / "runs", tmp_path / "results"
    write_run(runs)
    out.mkdir()
    blocker = out / "run_scores"
    blocker.write_text("not a folder\n")
    result = grade(runs, out)
    assert result.exit_code == exit_codes.STORAGE, result.output
    assert "a store failed" in result.output and "Traceback" not in result.output
    assert blocker.read_text() == "not a folder\n"
    assert not (out / "_commits").exists() or not any((out / "_commits").iterdir())


# Runs the signal tests grade in batches of 10: enough that, after the first commit, the grade
# has seconds of work left when the signal comes, even on a loaded machine (with 200, a suite
# running on both cores once saw the grade end before the signal reached it).
SIGNALLED_RUNS = 400
# The rerun that finishes such a grade commits in larger batches: a batch of 10 is two shards
# of 5, each paying a shard's fixed cost, and that a rerun finishes the batches left is what
# is checked, not how it cuts them
RERUN_BATCH = 100


def _start_grade(runs: Path, out: Path, workers: int, batch_size: int = 10) -> subprocess.Popen:
    code = "import sys; from pipeline.cli import app; sys.exit(app())"
    return subprocess.Popen(
        [sys.executable, "-c", code, "grade", str(runs), "--out", str(out), "--json",
         "--batch-size", str(batch_size), "--workers", str(workers)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)


def _wait_for_commit(out: Path, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (out / "_commits").is_dir() and any((out / "_commits").glob("*.json")):
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.005)
    raise AssertionError("no batch committed in time")


def _wait_for_children(proc: subprocess.Popen, timeout: float = 60) -> None:
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    if not children.exists():
        pytest.skip("this system does not list child processes in /proc")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if children.read_text().split():
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.001)
    raise AssertionError("no reader process started in time")


@pytest.mark.parametrize(("target", "workers"), [("process", 1), ("process-group", 2)])
def test_sigterm_stops_cleanly_and_the_rerun_finishes(tmp_path, target, workers):
    runs, out = tmp_path / "runs", tmp_path / "results"
    total = SIGNALLED_RUNS
    for i in range(total):
        write_run(runs, f"20261112-{i:06d}-bulk")
    proc = _start_grade(runs, out, workers)
    _wait_for_commit(out, proc)
    if target == "process":
        proc.send_signal(signal.SIGTERM)
    else:  # what a scheduler does: the whole group, while reader processes are at work
        _wait_for_children(proc)
        os.killpg(proc.pid, signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == exit_codes.STOPPED, stderr
    assert "stopped by SIGTERM" in stderr and "Rerun" in stderr
    assert "Traceback" not in stderr
    summary = json.loads(stdout)
    assert summary["stopped"] and 0 < len(summary["batches"]) < total // 10

    # Nothing half-published: every batch folder on disk is committed, staging is empty.
    store = ResultStore(str(out))
    committed = store.committed_batches()
    assert committed == set(summary["batches"])
    on_disk = {p.name.removeprefix("batch=") for p in out.glob("*/grader=*/batch=*")}
    assert on_disk == committed
    assert not any((out / "_staging").glob("*"))
    assert_no_duplicates(out, 10 * len(committed))
    before = snapshot(out)

    (record,) = grade_log(out)
    assert (record["status"], record["grade_id"], record["batches"]) == (
        "stopped", summary["grade_id"], summary["batches"])

    rerun = _start_grade(runs, out, workers, RERUN_BATCH)
    stdout, stderr = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, stderr
    assert json.loads(stdout)["found"] == total
    assert [r["status"] for r in grade_log(out)] == ["stopped", "finished"]
    assert_intact(before, out, derived=CATALOG)
    assert_no_duplicates(out, total)


def test_ctrl_c_abandons_the_batch_in_hand_and_says_how_to_finish(tmp_path):
    # Ctrl-C ended the grade with exit code 130 and not a word
    runs, out = tmp_path / "runs", tmp_path / "results"
    total = SIGNALLED_RUNS
    for i in range(total):
        write_run(runs, f"20261112-{i:06d}-bulk")
    proc = _start_grade(runs, out, 2)
    _wait_for_commit(out, proc)
    _wait_for_children(proc)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends: its whole foreground group
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == exit_codes.INTERRUPTED, stderr
    said = " ".join(stderr.split())
    assert "interrupted (Ctrl-C)" in said and "Rerun the same command to finish" in said
    assert "Traceback" not in stderr
    committed = ResultStore(str(out)).committed_batches()
    assert 0 < len(committed) < total // 10
    assert_no_duplicates(out, 10 * len(committed))  # the views show committed batches only
    assert [r["status"] for r in grade_log(out)] == ["interrupted"]

    rerun = _start_grade(runs, out, 2, RERUN_BATCH)
    stdout, stderr = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, stderr
    assert json.loads(stdout)["found"] == total
    assert not any((out / "_staging").glob("*"))
    assert_no_duplicates(out, total)


def test_ctrl_c_while_the_grade_starts_says_so(tmp_path):
    # Ctrl-C before grading began (here: while a grader file loads) ended the command with
    # exit code 130 and not a word
    runs, out = tmp_path / "runs", tmp_path / "results"
    write_run(runs, "20261112-000000-one")
    ready = tmp_path / "loading"
    slow = tmp_path / "slow_grader.py"
    slow.write_text(f"import pathlib, time\npathlib.Path({str(ready)!r}).touch()\n"
                    "time.sleep(60)\n")
    code = "import sys; from pipeline.cli import app; sys.exit(app())"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "grade", str(runs), "--out", str(out), "--grader",
         str(slow)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == exit_codes.INTERRUPTED, stderr
    assert "interrupted (Ctrl-C) before the command finished" in " ".join(stderr.split())
    assert "Traceback" not in stderr and not out.exists()


INTERRUPT_WHILE = {
    # the console entry point imports typer, rich and the command before any of its code can
    # answer a Ctrl-C: one there ended `rungrade` with a traceback through the imports, -2
    "loading": """
        class Interrupted:
            def find_spec(self, name, path=None, target=None):
                if name == "typer":
                    raise KeyboardInterrupt
        sys.meta_path.insert(0, Interrupted())
    """,
    # typer answered one while it read the arguments with 130 and not a word
    "reading the arguments": """
        import typer.core
        def interrupted(*args, **kwargs):
            raise KeyboardInterrupt
        typer.core.TyperGroup.make_context = interrupted
    """,
}


@pytest.mark.parametrize("moment", list(INTERRUPT_WHILE))
def test_ctrl_c_while_the_command_loads_says_so(moment):
    code = "import sys\n" + textwrap.dedent(INTERRUPT_WHILE[moment]) + textwrap.dedent("""
        sys.argv = ["rungrade", "sql", "results", "select 1"]
        from pipeline.entry import main
        main()
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == exit_codes.INTERRUPTED, done.stderr
    assert done.stderr == ("error: interrupted (Ctrl-C) before the command started; nothing "
                           "was done: run it again.\n")
    assert done.stdout == ""


# A SIGTERM at a known moment: a hook that sends it to the process itself there
TERMINATED_WHILE = {
    # the console entry point's imports: a SIGTERM there ended `rungrade` by the signal, -15
    "loading": ("typer", ["sql", "results", "select 1"]),
    # the grade's own imports of the grading code, before its handler was set: -15 too
    "grade loading the grading code": ("pipeline.grade", ["grade", "RUNS", "--out", "OUT"]),
    # a command without a stop of its own ends by the signal once it runs, as before
    "sql running": ("pipeline.catalog", ["sql", "OUT", "select 1"]),
}
TERMINATE_AT = """
import os, signal, sys
class Terminated:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGTERM)
sys.meta_path.insert(0, Terminated())
sys.argv = ["rungrade", *{args!r}]
from pipeline.entry import main
main()
"""


@pytest.mark.parametrize("moment", list(TERMINATED_WHILE))
def test_a_sigterm_while_the_command_loads_exits_143(moment, tmp_path):
    module, args = TERMINATED_WHILE[moment]
    args = [{"RUNS": str(REPO / "data" / "runs"), "OUT": str(tmp_path / "out")}.get(a, a)
            for a in args]
    done = subprocess.run([sys.executable, "-c", TERMINATE_AT.format(module=module, args=args)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    if moment == "loading":
        assert done.returncode == exit_codes.STOPPED, done.stderr
        assert done.stderr == exit_codes.STOPPED_EARLY and done.stdout == ""
    elif moment == "grade loading the grading code":  # stopped before its first batch
        assert done.returncode == exit_codes.STOPPED, done.stderr
        assert "stopped by SIGTERM after 0 committed batch(es)" in " ".join(done.stderr.split())
        assert "Traceback" not in done.stderr
    else:
        assert done.returncode == -signal.SIGTERM, done.stderr
        assert "before the command started" not in done.stderr


@pytest.mark.parametrize("server", [True, False])
def test_a_worker_start_its_grade_abandoned_leaves_no_traceback(server):
    # A Ctrl-C or a kill while workers start: the fork server's child, reading what the
    # grading process sent it, finds the pipe cut short (or its locks gone) and the server
    # printed that traceback under the grade's own message. A worker forked from the server
    # (which imports pipeline.fork_server) shows any other error as before.
    code = textwrap.dedent(f"""
        import multiprocessing.spawn, os, sys
        if {server}:
            import pipeline.fork_server
        read, write = os.pipe()
        os.write(write, b"\\x80\\x04\\x95\\x10\\x00")  # a pickle cut short
        os.close(write)
        for start in (lambda: multiprocessing.spawn._main(read, None),
                      lambda: int("not a number")):
            try:  # as the fork server runs a child it forked
                start()
            except Exception:
                sys.excepthook(*sys.exc_info())
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert ("UnpicklingError" in done.stderr) is not server
    assert "ValueError: invalid literal for int()" in done.stderr


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_a_stop_while_the_fork_server_starts_is_answered_not_lost(stop):
    # The grading process ignored SIGINT and SIGTERM while it started the fork server (which
    # inherits the ignoring): a Ctrl-C in those milliseconds was lost, and the grade went on
    # to its end with exit 0. Here the signal comes as the server is started.
    code = textwrap.dedent(f"""
        import os, signal, sys
        from multiprocessing import forkserver
        from pipeline import processes
        started = forkserver.ensure_running
        def stopped_meanwhile():
            os.kill(os.getpid(), signal.{stop})
            started()
        forkserver.ensure_running = stopped_meanwhile
        answered = []
        signal.signal(signal.SIGTERM, lambda *_: answered.append("SIGTERM"))
        signal.signal(signal.SIGINT, lambda *_: answered.append("SIGINT"))
        processes.process_context()
        print(answered)
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [f"['{stop}']"]


def test_ctrl_c_while_compacting_says_what_is_left(capsys):
    # (Python's SIGINT handler raises KeyboardInterrupt wherever the main thread is)
    import typer

    from pipeline.cli import _writing_results

    with pytest.raises(typer.Exit) as stopped, _writing_results(
            "nothing to compact.", "compacting", "The results are as they were"):
        raise KeyboardInterrupt
    assert stopped.value.exit_code == exit_codes.INTERRUPTED
    said = " ".join(capsys.readouterr().err.split())
    assert "interrupted (Ctrl-C) while compacting. The results are as they were; rerun" in said


# What DuckDB raises when a signal's handler raises during a query: it takes the handler's
# exception (KeyboardInterrupt, SIGTERM's) and raises this in its place, with no trace of the
# signal (seen with duckdb 2.0 in a process of its own; a test runner's worker does not pass
# signals to DuckDB alike, so the query is stopped here as DuckDB stops it)
QUERY_INTERRUPTED = RuntimeError("Query interrupted")


@pytest.mark.parametrize(("sigterm", "code", "said"), [
    (False, exit_codes.INTERRUPTED, "interrupted (Ctrl-C) while compacting"),
    (True, exit_codes.STOPPED, "stopped by SIGTERM while compacting"),
])
def test_a_signal_stopping_a_duckdb_query_ends_with_its_exit_code(capsys, sigterm, code, said):
    # the command exited 1 with a traceback
    import typer

    from pipeline.cli import _TERMINATED, _terminated, _writing_results

    _TERMINATED.clear()
    try:
        with pytest.raises(typer.Exit) as stopped, _writing_results(
                "nothing to compact.", "compacting", "The results are as they were"):
            if sigterm:
                with contextlib.suppress(BaseException):
                    _terminated()  # (SIGTERM's handler, whose exception DuckDB takes)
            raise QUERY_INTERRUPTED
    finally:
        _TERMINATED.clear()
    assert stopped.value.exit_code == code
    assert said in " ".join(capsys.readouterr().err.split())


def test_ctrl_c_while_the_catalog_is_written_says_the_results_are_whole(tmp_path,
                                                                       monkeypatch):
    # it said "the batch in progress was abandoned" of a grade whose every batch was
    # committed; the signal lands in the catalog's DuckDB query, which raises in its place
    from pipeline import grade as grade_module

    runs, out = tmp_path / "runs", tmp_path / "results"
    for i in range(3):
        write_run(runs, f"20261112-{i:06d}-whole")

    def interrupted(store):
        raise QUERY_INTERRUPTED

    monkeypatch.setattr(grade_module, "write_catalog", interrupted)
    stopped = grade(runs, out)
    assert stopped.exit_code == exit_codes.INTERRUPTED, stopped.output
    said = " ".join(stopped.stderr.split())
    assert "after every batch was committed" in said and "are whole" in said
    assert f"rungrade catalog {out}" in said and "abandoned" not in said
    assert not (out / CATALOG_FILE).exists()
    assert [r["status"] for r in grade_log(out)] == ["interrupted"]
    assert_no_duplicates(out, 3)  # (the views of `rungrade sql` read the commits)
    monkeypatch.undo()
    rerun = grade(runs, out)  # nothing to grade, and the catalog is written
    assert rerun.exit_code == 0, rerun.output
    assert json.loads(rerun.stdout)["skipped"] == 3
    with duckdb.connect(str(out / CATALOG_FILE), read_only=True) as con:
        assert con.sql("select count(*) from runs").fetchall() == [(3,)]


def test_failed_commit_keeps_the_reports_of_changed_runs(tmp_path):
    runs, out = tmp_path / "runs", tmp_path / "results"
    write_run(runs, "20261112-010000-changes")
    assert grade(runs, out).exit_code == 0
    before = snapshot(out)
    (runs / "20261112-010000-changes" / "bindings/writer/tldr.md").unlink()  # a verdict changes
    with refusing_writes(out / "_commits"):
        failed = grade(runs, out)
    assert failed.exit_code == exit_codes.STORAGE, failed.output
    assert_intact(before, out)
