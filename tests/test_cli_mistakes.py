"""What the commands answer to a user's mistakes and to damaged results: an exit code a
script can trust and a message saying what to do, never a traceback; and nothing written
where a mistaken command should write nothing."""

from __future__ import annotations

import contextlib
import csv
import ctypes
import io
import json
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest
from conftest import RUNGRADE
from typer.testing import CliRunner

from pipeline import exit_codes
from pipeline.checks import DEFAULT_GRADER_ID
from pipeline.cli import app
from pipeline.store import GRADES

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "runs"


def run(*args: str):
    result = CliRunner().invoke(app, list(args))
    # a traceback is exit 1 with the exception kept; every answer here is a deliberate exit
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.output)
    return result


def said(result) -> str:
    """What the command printed, as one line (click's error box drawn away)."""
    return " ".join(result.output.replace("│", " ").split())


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> tuple[Path, Path]:
    """(runs, results): the sample runs graded once (never changed by a test)."""
    root = tmp_path_factory.mktemp("mistakes")
    runs, results = root / "runs", root / "results"
    shutil.copytree(SAMPLE, runs)
    assert run("grade", str(runs), "--out", str(results), "--workers", "1").exit_code == 0
    return runs, results


def copied(graded, tmp_path: Path) -> tuple[Path, Path]:
    runs, results = graded
    shutil.copytree(runs, tmp_path / "runs")
    shutil.copytree(results, tmp_path / "results")
    return tmp_path / "runs", tmp_path / "results"


def test_a_long_query_beside_the_results_is_run_in_either_order(graded):
    # the query was looked up as a folder: a name over 255 bytes made the look raise
    _, results = graded
    query = ("select r.run_id, r.program, s.overall_score from runs as r join run_scores as s "
             "using (run_uri) where r.status = 'graded' " + "and s.overall_score >= 0 " * 8
             + "order by 1")
    assert len(query) > 255
    for words in ((str(results), query), (query, str(results))):
        result = run("sql", *words, "--csv", "-")
        assert result.exit_code == 0, result.output
        assert len(list(csv.reader(io.StringIO(result.stdout)))) > 2


def test_a_mistyped_results_folder_after_the_query_is_named_as_such(graded, tmp_path):
    result = run("sql", "select count(*) from runs", str(tmp_path / "reslts"))
    assert result.exit_code == exit_codes.USAGE
    assert f"{tmp_path / 'reslts'} holds no committed results" in said(result)


@pytest.mark.parametrize("query", ["", "   ", "empty.sql"])
@pytest.mark.parametrize("query_first", [False, True])
def test_an_empty_query_is_a_usage_error(graded, tmp_path, query, query_first):
    # an empty query before the results was read as the results' path (`Path("")` is `.`)
    (tmp_path / "empty.sql").write_text("")
    words = [str(graded[1]), str(tmp_path / query) if query.endswith(".sql") else query]
    result = run("sql", *(words[::-1] if query_first else words))
    assert result.exit_code == exit_codes.USAGE
    assert "is empty: give a statement" in said(result)


@pytest.mark.parametrize("query_first", [False, True])
def test_results_named_like_sql_are_taken_for_the_results(graded, tmp_path, query_first):
    # `from-ci` starts as a query does: both words were taken for queries
    shutil.copytree(graded[1], tmp_path / "from-ci")
    words = [str(tmp_path / "from-ci"), "select count(*) as n from runs"]
    result = run("sql", *(words[::-1] if query_first else words), "--csv", "-")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["n", "21"]


def test_two_queries_are_named_as_such(graded):
    # the first was taken for the results: "run `rungrade grade RUNS --out select 1` first"
    result = run("sql", "select 1", "select count(*) from runs")
    assert result.exit_code == exit_codes.USAGE
    assert said(result).startswith("error: got two queries ('select 1' and 'select count(*) "
                                   "from runs') where one query and the results were expected")


@pytest.mark.parametrize("statement", ["set threads = 1", "create temp view v as select 1"])
def test_a_statement_returning_no_rows_says_done(graded, statement):
    # DuckDB answers these with an empty `Success` or `Count` column: an empty table was
    # printed, and a CSV of one header line written
    _, results = graded
    for extra in ([], ["--csv", "-"]):
        result = run("sql", str(results), statement, *extra)
        assert result.exit_code == 0, result.output
        assert said(result) == "done: the statement returns no rows", result.output


def test_csv_holds_lists_and_maps_as_json(graded):
    # before: "CSV format does not support nested data", a traceback
    _, results = graded
    result = run("sql", str(results), "select service, declared_errors from services "
                 "where len(declared_errors) > 0 order by all limit 1", "--csv", "-")
    assert result.exit_code == 0, result.output
    (row,) = list(csv.DictReader(io.StringIO(result.stdout)))
    assert isinstance(json.loads(row["declared_errors"]), list)
    grades = run("sql", str(results), "select refusals, batches from grades", "--csv", "-")
    assert grades.exit_code == 0, grades.output
    (row,) = list(csv.DictReader(io.StringIO(grades.stdout)))
    assert json.loads(row["refusals"]) and json.loads(row["batches"])


def test_output_files_that_cannot_be_written_are_usage_errors(graded, tmp_path):
    _, results = graded
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "file").write_text("")
    folder, under_a_file = str(tmp_path / "folder.csv"), str(tmp_path / "file" / "x.csv")
    for args, path in [
        (("trend", str(results), "--out", folder), folder),
        (("trend", str(results), "--out", under_a_file), under_a_file),
        (("grades", str(results), "--out", folder), folder),
        (("sql", str(results), "select 1", "--csv", folder), folder),
        (("report", str(results), "-o", folder), folder),
        (("synth", str(tmp_path / "file"), "--runs", "2", "--workers", "1"),
         str(tmp_path / "file")),
    ]:
        result = run(*args)
        assert result.exit_code == exit_codes.USAGE, (args, result.output)
        assert path in said(result) and "traceback" not in result.output.lower(), args


@pytest.mark.parametrize("command", [["sql", "{results}", "select 1", "--csv"],
                                     ["trend", "{results}", "--out"],
                                     ["grades", "{results}", "-o"],
                                     ["report", "{results}", "-o"]])
def test_an_output_path_ending_in_a_slash_is_a_usage_error(graded, tmp_path, command):
    # `-o out/` wrote a file named `out`
    words = [w.format(results=graded[1]) for w in command] + [f"{tmp_path}/out/"]
    result = run(*words)
    assert result.exit_code == exit_codes.USAGE, result.output
    assert "ends with '/', which names a folder" in said(result)
    assert list(tmp_path.iterdir()) == []


@contextlib.contextmanager
def writes_counted(path: Path):
    """Counts the times `path` is closed after being opened to write, by any process while
    inside, as the kernel tells them (inotify), read by calling what it yields. Opens are
    watched too, so that no two closes in a row are merged into one event."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK)
    in_close_write, in_open = 0x08, 0x20
    assert fd >= 0 and libc.inotify_add_watch(fd, os.fsencode(path),
                                              in_close_write | in_open) >= 0
    events = bytearray()

    def count() -> int:
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(fd, 4096):
                events.extend(chunk)
        closes, at = 0, 0
        while at < len(events):  # struct inotify_event: wd, mask, cookie, len, name
            _, mask, _, size = struct.unpack_from("iIII", events, at)
            closes, at = closes + bool(mask & in_close_write), at + 16 + size
        return closes

    try:
        yield count
    finally:
        os.close(fd)


def test_an_output_that_is_a_device_a_pipe_or_a_link_is_written_through(graded, tmp_path):
    # v20 replaced whatever was there with a file of its own: run as root, `--csv /dev/null`
    # made /dev/null a plain file for the whole machine; a pipe's reader waited for good
    _, results = graded
    pipe = tmp_path / "rows.pipe"
    os.mkfifo(pipe)
    read, answers = bytearray(), []

    def reader() -> None:  # as `cat`: waiting in read() at once, done at the first end
        fd = os.open(pipe, os.O_RDONLY)
        while chunk := os.read(fd, 1 << 16):
            read.extend(chunk)
        os.close(fd)

    def command() -> None:
        answers.append(run("sql", str(results), "select 42 as answer", "--csv", str(pipe)))

    threads = [threading.Thread(target=reader), threading.Thread(target=command)]
    with writes_counted(pipe) as writes:
        for thread in threads:
            thread.start()
        threads[1].join(timeout=60)
        if threads[1].is_alive():  # opened again after its reader had gone: released here,
            os.close(os.open(pipe, os.O_RDONLY | os.O_NONBLOCK))  # so the suite goes on
            threads[1].join(timeout=60)
        threads[0].join(timeout=60)
        # whether the reader sees the first of two writes end is a race it mostly loses: the
        # writes themselves are counted
        assert writes() == 1
    assert answers and answers[0].exit_code == 0, answers and answers[0].output
    assert bytes(read) == b"answer\n42\n" and stat.S_ISFIFO(pipe.lstat().st_mode)
    if os.geteuid() == 0:  # a null device of the test's own (never the machine's)
        null = tmp_path / "null"
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        assert run("sql", str(results), "select 1", "--csv", str(null)).exit_code == 0
        assert stat.S_ISCHR(null.lstat().st_mode)
    # a link to a file: the file is replaced whole, the link kept
    target, link = tmp_path / "target.csv", tmp_path / "link.csv"
    target.write_text("old\n")
    link.symlink_to(target)
    assert run("sql", str(results), "select 7 as seven", "--csv", str(link)).exit_code == 0
    assert link.is_symlink() and target.read_text() == "seven\n7\n"


def test_the_summary_counts_the_verdicts_of_openprose_runs_only(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "runs")
    result = run("grade", str(tmp_path / "runs"), "--out", str(tmp_path / "results"),
                 "--workers", "1", "--json")
    summary = json.loads(result.stdout)
    ledgers = sum(summary["ledger_verdicts"].values())
    assert ledgers > 0
    # before, the ledgers were counted in `verdicts` too (and their scores in the mean)
    assert sum(summary["verdicts"].values()) == summary["graded"] - ledgers
    scores = pl.read_parquet(tmp_path / "results" / "run_scores" / "**" / "*.parquet",
                             hive_partitioning=False)
    runs = pl.read_parquet(tmp_path / "results" / "runs" / "**" / "*.parquet",
                           hive_partitioning=False)
    prose = scores.join(runs.filter(pl.col("source") == "prose"), on="run_uri", how="semi")
    assert summary["mean_overall_score"] == round(prose["overall_score"].mean(), 2)


def test_a_damaged_part_stops_the_catalog_with_exit_4_and_leaves_no_temporary_file(
        graded, tmp_path):
    _, results = copied(graded, tmp_path)
    part = next((results / "run_scores").rglob("*.parquet"))
    part.write_text("not parquet\n")
    result = run("catalog", str(results))
    assert result.exit_code == exit_codes.STORAGE
    assert "A committed part is damaged. Restore what is damaged" in said(result)
    assert not list(results.glob("catalog.duckdb.tmp-*"))


@pytest.mark.parametrize("damage", ["runs part", "commit marker"])
def test_damaged_results_are_refused_by_a_grade_and_a_query_naming_what_to_do(
        graded, tmp_path, damage):
    # a grade into them wrote a traceback (exit 1); `sql` told to fix permissions
    runs, results = copied(graded, tmp_path)
    if damage == "runs part":
        damaged = next((results / "runs").rglob("*.parquet"))
        damaged.write_bytes(b"PAR1")
        named = damaged.parent.name.split("=", 1)[1] + "/" + damaged.name
    else:
        damaged = sorted((results / "_commits").glob("*.json"))[0]
        damaged.write_bytes(damaged.read_bytes()[:12])
        named = damaged.name
    before = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    for args in (["grade", str(runs), "--out", str(results), "--workers", "1"],
                 ["grade", str(runs), "--out", str(results), "--workers", "1", "--full"],
                 ["sql", str(results), "select count(*) from runs"]):
        result = run(*args)
        assert result.exit_code == exit_codes.STORAGE, result.output
        assert named in said(result) and "Restore what is damaged" in said(result), (
            said(result))
    # nothing written but the grade log (two records, each failed and naming it)
    after = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    assert {p for p in after if p not in before or after[p] != before[p]} == {
        p for p in after if p.parent.name == GRADES and p not in before}
    failed = [json.loads(p.read_text()) for p in after if p not in before]
    assert [r["status"] for r in failed] == ["failed", "failed"]


def _without_reading_everything() -> list[str]:
    """The words before a command that make it run as a user who may not read every folder:
    none for such a user; for root, root without its power to read and search any folder."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("root reads every folder, and setpriv is not here to drop that")
    return ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search", "--"]


@pytest.mark.parametrize("command", [["sql", "{results}", "select 1"], ["grades", "{results}"],
                                     ["trend", "{results}"],
                                     ["grade", "{runs}", "--out", "{tmp}/fresh"]])
def test_a_folder_this_user_may_not_look_in_is_said_so_not_missing(graded, tmp_path, command):
    # another user's results (`umask 077`) read as "no committed results; run `rungrade
    # grade` first", exit 2, and runs under a folder not searchable as "does not exist"
    locked = tmp_path / "locked"
    shutil.copytree(graded[0], locked / "runs")
    shutil.copytree(graded[1], locked / "results")
    words = [w.format(runs=locked / "runs", results=locked / "results", tmp=tmp_path)
             for w in command]
    locked.chmod(0)
    try:
        done = subprocess.run([*_without_reading_everything(), RUNGRADE, *words],
                              capture_output=True, text=True, timeout=120)
    finally:
        locked.chmod(0o755)
    assert done.returncode == exit_codes.STORAGE, done.stdout + done.stderr
    assert "Permission denied" in done.stderr
    assert "first" not in done.stderr and "does not exist" not in done.stderr


def test_a_damaged_grade_record_is_left_out_and_named(graded, tmp_path):
    # one record cut short (a full disk) failed every reading of the log, the report's too
    runs, results = copied(graded, tmp_path)
    assert run("grade", str(runs), "--out", str(results), "--workers", "1").exit_code == 0
    first, second = sorted((results / GRADES).glob("*.json"))
    first.write_bytes(first.read_bytes()[:40])
    result = run("grades", str(results))
    assert result.exit_code == 0, result.output
    assert f"1 grade record(s) of {results} are damaged" in said(result)
    assert first.name in said(result) and second.stem[:19] not in said(result)
    page = run("report", str(results), "-o", str(tmp_path / "r.html"))
    assert page.exit_code == 0 and (tmp_path / "r.html").exists(), page.output
    # the grades view of `sql` and of catalog.duckdb leaves it out too (it failed every query)
    view = run("sql", str(results), "select grade_id from grades", "--csv", "-")
    assert view.exit_code == 0, view.output
    assert view.stdout.split() == ["grade_id", second.stem]
    assert run("catalog", str(results)).exit_code == 0
    with duckdb.connect(str(results / "catalog.duckdb"), read_only=True) as con:
        assert con.sql("select grade_id, found from grades").fetchall() == [(second.stem, 21)]
    # a JSON value that is no grade's record is damaged too; one of a wrong type reads as null
    (results / GRADES / "list.json").write_text("[1, 2]")
    (results / GRADES / "no-id.json").write_text('{"status": "finished"}')
    second.write_text(second.read_text().replace('"found": 21', '"found": "many"'))
    result = run("grades", str(results))
    assert result.exit_code == 0, result.output
    assert "3 grade record(s)" in said(result) and "list.json, no-id.json" in said(result)
    second.write_bytes(b"")
    only = run("grades", str(results))
    assert only.exit_code == exit_codes.USAGE
    assert "holds only damaged grade records" in said(only)


@pytest.mark.parametrize("where", ["empty runs", "empty results", "backslash"])
def test_paths_that_cannot_be_meant_are_refused_before_anything_is_written(tmp_path,
                                                                           monkeypatch, where):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(SAMPLE, tmp_path / "runs")
    args = {"empty runs": ("", "results"), "empty results": ("runs", ""),
            "backslash": ("runs", "res\\nightly")}[where]
    result = run("grade", args[0], "--out", args[1], "--workers", "1")
    assert result.exit_code == exit_codes.USAGE, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]  # nothing written
    assert not list((tmp_path / "runs").glob("_*"))


@pytest.mark.parametrize(("results", "said_of_it"), [
    ("a-file", "is a file, not a folder"),
    ("a-file/results", "lies under {tmp}/a-file, which is not a folder"),
    ("a-file/deeper/results", "lies under {tmp}/a-file, which is not a folder"),
    ("nowhere", "is a symlink to nothing"),
    ("/dev/null", "is not a folder (a device, a pipe or a socket)"),
])
def test_a_results_folder_that_cannot_be_is_a_usage_error(graded, tmp_path, monkeypatch,
                                                          results, said_of_it):
    # a device, or a path through a file, was exit 4, "a store failed … batches committed
    # in /dev/null are intact"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("notes")
    (tmp_path / "nowhere").symlink_to(tmp_path / "gone")
    result = run("grade", str(graded[0]), "--out", results, "--workers", "1")
    assert result.exit_code == exit_codes.USAGE, result.output
    assert said(result).startswith(
        f"error: results folder {results} {said_of_it.format(tmp=tmp_path)}. Check the path")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "nowhere"]


def test_arguments_given_the_wrong_way_round_write_nothing_into_the_runs(graded, tmp_path):
    runs, results = copied(graded, tmp_path)
    before = sorted(p.name for p in results.iterdir())
    result = run("grade", str(results), "--out", str(runs), "--workers", "1")
    assert result.exit_code == exit_codes.USAGE
    assert "holds rungrade results (_commits/) and no run folder" in said(result)
    assert not list(runs.glob("_*"))  # no lock, no grade record
    assert sorted(p.name for p in results.iterdir()) == before


@pytest.mark.parametrize("inside", ["20261204-020000-nightly",
                                    "acme-research/.prose/runs/20261103-091422-a7b3c9/out"])
def test_results_kept_in_a_run_folder_are_refused(tmp_path, inside):
    # a results folder named like a run was found as a run (refused, every night); one in a
    # run folder made that run change at every grade
    shutil.copytree(SAMPLE, tmp_path / "runs")
    result = run("grade", str(tmp_path / "runs"), "--out", str(tmp_path / "runs" / inside),
                 "--workers", "1")
    assert result.exit_code == exit_codes.USAGE, result.output
    assert "would be graded as part of that run (or as a run)" in said(result)
    assert not (tmp_path / "runs" / inside / "_commits").exists()


def test_other_results_named_like_a_run_are_refused_saying_what_they_are(graded, tmp_path):
    # another grade's results, moved under RUNS into a folder named like a run, are found as
    # a run: refused at every grade, and the refusal must say why, not only "no program.md"
    runs, results = copied(graded, tmp_path)
    shutil.move(results, runs / "20261204-020000-old")
    assert run("grade", str(runs), "--out", str(tmp_path / "new"), "--workers", "1"
               ).exit_code == exit_codes.OK
    found = run("sql", str(tmp_path / "new"), "select reason, detail from refusals where "
                "run_uri like '%/20261204-020000-old'", "--csv", "-")
    assert [tuple(row) for row in csv.reader(io.StringIO(found.stdout))][1:] == [(
        "missing-program", "no program.md in the run folder: it holds rungrade results "
        "(_commits/), not a run. Results kept in a folder named like a run are found as a run "
        "at every grade: keep them beside RUNS, or in a folder of RUNS named otherwise")]


def test_a_grader_file_that_exits_or_is_a_folder_is_a_usage_error(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "runs")
    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nsys.exit(0)\n")
    # a grader taking the built-in grader's id: its rows would pass for the built-in's (and
    # runs graded by the built-in one were skipped, its checks never run)
    borrowed = tmp_path / "borrowed.py"
    borrowed.write_text("from pipeline.checks import DEFAULT_GRADER_ID, Grader, builtin_checks"
                        "\ngrader = Grader(DEFAULT_GRADER_ID, builtin_checks()[:3])\n")
    judged = tmp_path / "judged.py"  # (a judged id of the built-in grader's passes for it too)
    judged.write_text("from pipeline.checks import Grader, builtin_checks\ngrader = Grader("
                      "'prose.contract.judged-by-x.grader/v16', builtin_checks()[:3])\n")
    for grader, message in ((exits, "calls sys.exit(0) as it is imported"),
                            (tmp_path / "runs", "is a folder: give the Python file"),
                            (borrowed, "is the built-in grader's: give your grader an id of "
                                       "its own"),
                            (judged, "is the built-in grader's: give your grader an id of "
                                     "its own")):
        result = run("grade", str(tmp_path / "runs"), "--out", str(tmp_path / "results"),
                     "--grader", str(grader))
        assert result.exit_code == exit_codes.USAGE, result.output
        assert message in said(result)
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(("own_grader", "grader_id", "said_of_it"), [
    (False, "prose.contract.grader/v3", "would stamp the built-in grader's current checks "
                                        f"({DEFAULT_GRADER_ID}) as another version's"),
    (True, DEFAULT_GRADER_ID, "is the built-in grader's, whose rows those of "
                              "'acme.contract.grader/v1' would pass for"),
    (True, "prose.contract.grader/v99", "is the built-in grader's"),
    (False, "prose.contract.judged-by-x.grader/v3", "is a judged id of the built-in grader's"),
    (True, "prose.contract.judged-by-gpt-4o.mini.grader/v16", "is a judged id of the built-in "
                                                              "grader's"),
])
def test_a_grader_id_of_the_built_in_graders_is_refused(graded, tmp_path, own_grader,
                                                        grader_id, said_of_it):
    # rows were stamped with it: a grader of one's own, or today's checks, passing for the
    # rows of a version of the built-in grader (and its runs skipped as graded)
    grader = ["--grader", str(REPO / "examples" / "grader_example.py")] if own_grader else []
    result = run("grade", str(graded[0]), "--out", str(tmp_path / "results"), *grader,
                 "--grader-id", grader_id)
    assert result.exit_code == exit_codes.USAGE, result.output
    assert said(result).startswith(f"error: --grader-id '{grader_id}' {said_of_it}")
    assert not (tmp_path / "results").exists()


def test_a_grader_id_of_ones_own_holding_a_judges_part_is_refused(graded, tmp_path):
    # graded without a judge under 'team.custom.judged-by-myjudge.grader/v1', the runs were
    # then skipped by the grade with that judge (the same id), its questions never asked
    own = tmp_path / "own.py"
    own.write_text("from pipeline.checks import Grader, builtin_checks\ngrader = Grader("
                   "'team.custom.judged-by-myjudge.grader/v1', builtin_checks()[:3])\n")
    example = str(REPO / "examples" / "grader_example.py")
    for args, who in ((["--grader", str(own)], f"{own}: grader id "
                                                "'team.custom.judged-by-myjudge.grader/v1'"),
                      (["--grader", example, "--grader-id", "team.other.judged-by-x.grader/v1"],
                       "--grader-id 'team.other.judged-by-x.grader/v1'")):
        result = run("grade", str(graded[0]), "--out", str(tmp_path / "results"), *args)
        assert result.exit_code == exit_codes.USAGE, result.output
        assert said(result).startswith(f"error: {who} holds a judge's part (.judged-by-NAME)")
    assert not (tmp_path / "results").exists()


def test_the_built_in_graders_own_id_may_be_given(graded, tmp_path):
    result = run("grade", str(graded[0]), "--out", str(tmp_path / "results"), "--grader-id",
                 DEFAULT_GRADER_ID, "--workers", "1")
    assert result.exit_code == 0, result.output


def test_diff_refuses_a_negative_limit_and_writes_its_pair(tmp_path):
    runs, results = tmp_path / "runs", tmp_path / "results"
    shutil.copytree(SAMPLE, runs)
    for grader_id in ("first.grader/v1", "second.grader/v1"):
        assert run("grade", str(runs), "--out", str(results), "--workers", "1",
                   "--grader-id", grader_id).exit_code == 0
    assert run("diff", str(results), "--limit", "-1").exit_code == exit_codes.USAGE
    out = tmp_path / "pairs.parquet"
    assert run("diff", str(results), "--out", str(out)).exit_code == 0
    written = pl.read_parquet(out)
    assert written.select("base_grader_id", "head_grader_id").unique().rows() == [
        ("first.grader/v1", "second.grader/v1")]


def test_a_report_where_two_ids_share_only_refused_runs_is_written(tmp_path):
    # the pair was taken from every row of `runs`, refused ones too, and the report then
    # failed on a diff of no run (exit 2, no page)
    from run_folders import write_run

    runs, results = tmp_path / "runs", tmp_path / "results"
    done = write_run(runs, "20261112-031502-done")
    write_run(runs, "20261112-031502-late", drop=("state.md",))
    assert run("grade", str(runs), "--out", str(results), "--workers", "1").exit_code == 0
    (done / "state.md").unlink()  # now refused too, under the second id
    assert run("grade", str(runs), "--out", str(results), "--workers", "1",
               "--grader-id", "second.grader/v1").exit_code == 0
    page = run("report", str(results), "-o", str(tmp_path / "r.html"))
    assert page.exit_code == 0, page.output
    assert "no two of which graded the same run" in (tmp_path / "r.html").read_text()
    no_pair = run("diff", str(results))
    assert no_pair.exit_code == exit_codes.USAGE
    assert "that graded the same runs" in said(no_pair)


def test_a_cluster_of_its_own_needs_absolute_paths(tmp_path, monkeypatch):
    # a relative --out was written in the workers' own folders: markers with no parts
    monkeypatch.chdir(tmp_path)
    result = run("grade", "runs", "--out", "results", "--engine", "dask", "--scheduler",
                 "tcp://127.0.0.1:9")
    assert result.exit_code == exit_codes.USAGE
    assert "with --scheduler, give RUNS and --out as absolute paths" in said(result)


def test_an_empty_judge_command_is_a_usage_error(tmp_path):
    # an unset variable graded without a judge, exit 0, as if asked to
    shutil.copytree(SAMPLE, tmp_path / "runs")
    result = run("grade", str(tmp_path / "runs"), "--out", str(tmp_path / "results"),
                 "--judge-cmd", "")
    assert result.exit_code == exit_codes.USAGE
    assert "--judge-cmd is empty" in said(result)


@pytest.mark.parametrize("first_grade", [False, True])
def test_a_command_the_lock_stops_is_told_what_it_can_do(graded, tmp_path, first_grade):
    # while the first grade into results had committed nothing yet, both said "no committed
    # results" (exit 2), telling the user to run the grade that was running
    from pipeline.store import ResultStore

    results = tmp_path / "results" if first_grade else copied(graded, tmp_path)[1]
    with ResultStore(str(results)).lock():
        for command in (("compact", str(results)), ("catalog", str(results))):
            result = run(*command)
            assert result.exit_code == exit_codes.LOCKED
            assert "then run this command again" in said(result)
            assert "--out" not in said(result)  # (neither command has one)


def _into_a_closed_pipe(command: list[str], read: int = 0,
                        **env: str) -> subprocess.CompletedProcess:
    """`command` run with its standard output a pipe whose reader has gone (`… | head`),
    after reading `read` bytes."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **env})
    proc.stdout.read(read)
    proc.stdout.close()
    return subprocess.CompletedProcess(command, proc.wait(timeout=120), None,
                                       proc.stderr.read().decode())


@pytest.mark.parametrize("printed", [["grade", "--json"], ["grade"], ["sql"], ["sql", "--csv"]])
def test_a_reader_that_closes_the_pipe_ends_the_command_with_sigpipes_code(graded, tmp_path,
                                                                          printed):
    # rich and Python exited 1 with nothing said, which tells a script the command failed
    # where a grade had committed its results
    runs, results = graded
    if printed[0] == "grade":
        command = [RUNGRADE, "grade", str(runs), "--out", str(tmp_path / "new"), *printed[1:]]
    else:
        command = [RUNGRADE, "sql", str(results), "select * from clause_verdicts",
                   *(["--csv", "-"] if "--csv" in printed else [])]
    done = _into_a_closed_pipe(command)
    assert (done.returncode, done.stderr) == (exit_codes.PIPE_CLOSED, "")
    if printed[0] == "grade":  # its work stands
        counted = run("sql", str(tmp_path / "new"), "select count(*) as n from runs", "--csv",
                      "-")
        assert counted.stdout.splitlines() == ["n", "21"]


@pytest.mark.parametrize("as_json", [False, True])
def test_a_failure_after_the_pipe_closed_keeps_its_own_exit_code(tmp_path, as_json):
    # a folder that cannot be listed fails the grade (exit 4) after its summary is printed
    from run_folders import write_run

    root = tmp_path / "runs"
    write_run(root / "team-a", "20261112-000001-seen")
    write_run(root / "team-b", "20261112-000002-hidden")
    denying = textwrap.dedent(f"""
        import errno, os, sys
        from pipeline.sources import bucket
        opened = bucket._open_beneath
        def denying(dir_fd, path, folder=False):  # (the tests run as root, whom none stops)
            if folder and path == "team-b":
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
            return opened(dir_fd, path, folder)
        bucket._open_beneath = denying
        from pipeline.cli import app
        app({["grade", str(root), "--out", str(tmp_path / "results"), "--workers", "1",
              *(["--json"] if as_json else [])]!r})
    """)
    done = _into_a_closed_pipe([sys.executable, "-c", denying])
    assert done.returncode == exit_codes.STORAGE, done.stderr
    assert "team-b ([Errno 13] Permission denied)" in " ".join(done.stderr.split())


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_a_csv_whose_reader_leaves_midway_ends_with_sigpipes_code(graded, unbuffered):
    # one large write on an unbuffered standard output (PYTHONUNBUFFERED) took the part the
    # pipe held and returned: the command exited 0 with its CSV cut short
    query = "select * from bindings, range(8)"  # (more than a pipe holds)
    whole = run("sql", str(graded[1]), query, "--csv", "-").stdout
    assert len(whole.encode()) > 1 << 18
    done = _into_a_closed_pipe([RUNGRADE, "sql", str(graded[1]), query, "--csv", "-"], read=10,
                               PYTHONUNBUFFERED=unbuffered)
    assert (done.returncode, done.stderr) == (exit_codes.PIPE_CLOSED, "")


def _to_a_full_device(command: list[str], stream: str = "stdout", **env: str):
    with open("/dev/full", "wb") as full:
        return subprocess.run(command, **{stream: full}, capture_output=False, text=True,
                              env={**os.environ, **env}, timeout=120,
                              **{"stderr" if stream == "stdout" else "stdout": subprocess.PIPE})


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("as_json", [False, True])
def test_a_summary_that_cannot_be_written_fails_the_grade_with_exit_4(graded, tmp_path, as_json):
    # a full disk under the log: a traceback and exit 1 for a grade that had committed
    done = _to_a_full_device([RUNGRADE, "grade", str(graded[0]), "--out", str(tmp_path / "new"),
                              *(["--json"] if as_json else [])])
    assert done.returncode == exit_codes.STORAGE, done.stderr
    assert " ".join(done.stderr.split()) == (
        "error: the output could not be written to standard output (No space left on device); "
        "the command's work stands (a grade's results are committed).")
    counted = run("sql", str(tmp_path / "new"), "select count(*) as n from runs", "--csv", "-")
    assert counted.stdout.splitlines() == ["n", "21"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_version_that_cannot_be_printed_says_so(tmp_path):
    # `--version` is no command: it exited 0, its output lost
    assert _to_a_full_device([RUNGRADE, "--version"]).returncode == exit_codes.STORAGE
    done = _into_a_closed_pipe([RUNGRADE, "--version"])
    assert (done.returncode, done.stderr) == (exit_codes.PIPE_CLOSED, "")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_usage_error_that_cannot_be_said_keeps_its_exit_code(tmp_path):
    done = _to_a_full_device([RUNGRADE, "grade", str(tmp_path / "none"), "--out",
                              str(tmp_path / "results")], stream="stderr")
    assert done.returncode == exit_codes.USAGE


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_terminal_that_cannot_show_a_character_shows_a_question_mark(graded, encoding):
    # a nightly rerun's summary ("—" for no verdicts) raised UnicodeEncodeError: exit 1
    done = subprocess.run([RUNGRADE, "grade", str(graded[0]), "--out", str(graded[1])],
                          capture_output=True, env={**os.environ, "PYTHONIOENCODING": encoding},
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert re.search(rb"verdicts +\? ", done.stdout), done.stdout


def test_json_stays_json_where_colour_is_forced(graded, tmp_path):
    # FORCE_COLOR (set by many CI images) coloured the summary's JSON in a pipe too
    done = subprocess.run([RUNGRADE, "grade", str(graded[0]), "--out", str(tmp_path / "new"),
                           "--json"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "FORCE_COLOR": "1"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["found"] == 21


@pytest.mark.parametrize("words", [
    ["synth", ""],
    ["grade", "{runs}", "--out", "{tmp}/r", "--grader-id", ""],
    ["grade", "{runs}", "--out", "{tmp}/r", "--grader", ""],
    ["grade", "{runs}", "--out", "{tmp}/r", "--ledger-grader", ""],
    ["diff", "{results}", "--base", ""],
    ["report", "{results}", "--head", ""],
    ["trend", "{results}", "--grader-id", ""],
    ["sql", "{results}", "select 1", "--csv", ""],
    ["grades", "{results}", "-o", ""],
    # (v20 graded on a local cluster, or under another judge's id, and said nothing)
    ["grade", "{runs}", "--out", "{tmp}/r", "--engine", "dask", "--scheduler", ""],
    ["grade", "{runs}", "--out", "{tmp}/r", "--judge-cmd", "true", "--judge-name", ""],
    ["grade", "{runs}", "--out", "{tmp}/r", "--judge-url", "http://127.0.0.1:9",
     "--judge-model", ""],
    ["grade", "{runs}", "--out", "{tmp}/r", "--judge-url", "http://127.0.0.1:9",
     "--judge-api-key-env", ""],
])
def test_an_empty_value_is_refused_before_anything_is_written(graded, tmp_path, monkeypatch,
                                                               words):
    # `synth ""` wrote its runs into the working folder, `--grader-id ""` graded under the
    # default id, `--base ""` asked for "grader id None"
    monkeypatch.chdir(tmp_path)
    words = [w.format(runs=graded[0], results=graded[1], tmp=tmp_path) for w in words]
    result = run(*words)
    assert result.exit_code == exit_codes.USAGE, result.output
    assert "is empty (an unset variable in a script?)" in said(result)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("words", [
    ["report", "{results}", "-o", "--base"],
    ["sql", "{results}", "select 1", "--csv", "--results"],
    ["grades", "{results}", "-o", "-x.csv"],
    ["diff", "{results}", "-o", "--limit"],
    ["synth", "--runs", "2", "--", "-out"],
])
def test_an_option_taken_as_an_output_file_is_refused(graded, tmp_path, monkeypatch, words):
    # each wrote a file named after the option (`report -o --base`: `./--base`), exit 0
    monkeypatch.chdir(tmp_path)
    words = [w.format(results=graded[1]) for w in words]
    result = run(*words)
    assert result.exit_code == exit_codes.USAGE, result.output
    assert "reads as an option given where a path was expected; for a file of that name, " \
           "give ./" in said(result)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("words", [
    ["report", "{results}", "-o", "s3://bucket/www/report.html"],
    ["sql", "{results}", "select 1", "--csv", "s3://bucket/x.csv"],
    ["trend", "{results}", "--out", "s3://bucket/t.csv"],
    ["grades", "{results}", "-o", "s3://bucket/log.parquet"],
    ["synth", "--runs", "2", "s3://bucket/corpus"],
])
def test_a_url_given_for_a_file_written_here_is_refused(graded, tmp_path, monkeypatch, words):
    # each wrote ./s3:/bucket/… (a path of one slash) and said it wrote it, exit 0: a night's
    # report "published" to a bucket stayed in a stray folder where the job ran
    monkeypatch.chdir(tmp_path)
    words = [w.format(results=graded[1]) for w in words]
    result = run(*words)
    assert result.exit_code == exit_codes.USAGE, result.output
    assert "is a URL: this is written to a local file or folder only" in said(result)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("hidden", "extra", "command"), [
    ("s3fs", "s3", ["sql", "s3://bucket/results", "select 1"]),
    ("altair", "report", ["report", "{results}", "-o", "{tmp}/report.html"]),
    ("vl_convert", "report", ["report", "{results}", "-o", "{tmp}/report.html"]),
])
def test_an_optional_part_not_installed_is_named_with_its_install(graded, tmp_path, hidden,
                                                                   extra, command):
    # `pip install rungrade` without the extra: a traceback ending in ImportError, exit 1
    command = [word.format(results=graded[1], tmp=tmp_path) for word in command]
    hiding = (f"import sys; sys.modules[{hidden!r}] = None  # (as Python marks it unimportable)\n"
              f"from pipeline.cli import app; app({command!r})")
    done = subprocess.run([sys.executable, "-c", hiding], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == exit_codes.USAGE, done.stderr
    said = " ".join(done.stderr.split())
    assert said.startswith(f"error: rungrade's optional '{extra}' packages are not installed")
    assert f"pip install 'rungrade[{extra}]'" in said and "Traceback" not in said
    assert not (tmp_path / "report.html").exists()


def test_a_query_file_that_is_not_utf8_is_a_usage_error(graded, tmp_path):
    # a traceback (UnicodeDecodeError), exit 1
    (tmp_path / "latin.sql").write_bytes("select 'caf\u00e9' as x".encode("latin-1"))
    result = run("sql", str(graded[1]), str(tmp_path / "latin.sql"))
    assert result.exit_code == exit_codes.USAGE
    assert said(result) == f"error: cannot read the query in {tmp_path / 'latin.sql'}: it is " \
                           "not UTF-8 text"


def test_a_stopped_grades_summary_says_how_many_runs_found_were_not_graded(capsys):
    # "runs found 201" beside 100 graded or refused, and no word of the other 101
    from pipeline.cli import print_summary
    from pipeline.grade import Summary

    summary = Summary("runs", "results", "prose.contract.grader/v16", found=201, new=201,
                      graded=95, refused=5, stopped=True)
    print_summary(summary)
    shown = " ".join(capsys.readouterr().out.split())
    assert "not graded 101 (found before SIGTERM stopped the grade; the rerun grades them" in shown
    # the --json summary says so too, and its counts add up (v20 left the 101 out)
    data = summary.as_dict()
    assert data["not_graded"] == 101
    assert data["found"] == data["skipped"] + data["graded"] + data["refused"] + 101
    summary.stopped = False  # (a finished grade has no such row)
    summary.graded = 196
    print_summary(summary)
    assert "not graded" not in capsys.readouterr().out


def test_a_narrow_terminal_folds_text_and_never_cuts_a_number_or_a_column(graded,
                                                                          monkeypatch):
    # at 40 columns rich cut the table at the edge: the last columns were gone and 86.11
    # showed as 86
    from pipeline import cli

    query = ("select run_id, program, overall_score * 1.0001 as score, services_scored, "
             "services, overall_verdict from run_scores order by run_id")
    wide = run("sql", str(graded[1]), query, "--csv", "-").stdout.splitlines()
    monkeypatch.setattr(cli.out, "width", 40)
    shown = run("sql", str(graded[1]), query).stdout
    assert all(len(line) <= 120 for line in shown.splitlines())  # (text folds to fit)
    for row in list(csv.reader(wide))[1:]:  # every number whole
        assert f" {float(row[2]):.2f} " in shown, row
    trend = run("trend", str(graded[1])).stdout
    assert " program " in trend and " verdicts " in trend  # (a name folds at spaces only)
    grades = run("grades", str(graded[1])).stdout
    assert all(f" {word} " in grades for word in ("graded", "refused", "unlisted")), grades


@pytest.mark.parametrize("command", [["sql", "{file}", "select 1"], ["grades", "{file}"],
                                     ["trend", "{file}"], ["diff", "{file}"],
                                     ["compact", "{file}"], ["catalog", "{file}"]])
@pytest.mark.parametrize(("where", "why"), [
    ("notes.txt", "is a file, not a folder"),
    ("notes.txt/results", "lies under {tmp}/notes.txt, which is not a folder")])
def test_results_that_are_a_file_are_named_as_such(tmp_path, command, where, why):
    # each advised `rungrade grade RUNS --out notes.txt`, which refuses a file
    (tmp_path / "notes.txt").write_text("not results")
    result = run(*[word.format(file=tmp_path / where) for word in command])
    assert result.exit_code == exit_codes.USAGE
    assert said(result).startswith(
        f"error: {tmp_path / where} is not a results folder: it {why.format(tmp=tmp_path)}; "
        "give the folder a `rungrade grade --out` wrote")


def _limited_to(size: int):
    """For a child process: files it writes may not grow past `size` bytes (the kernel fails
    the write with EFBIG, as a full disk fails it with ENOSPC)."""
    import resource
    import signal

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return limit


def test_a_file_the_disk_cannot_take_exits_4_and_leaves_the_one_before_whole(graded, tmp_path):
    # a full disk cut yesterday's page in place (exit 2, as for a mistyped path)
    _, results = graded
    page, rows = tmp_path / "report.html", tmp_path / "runs.csv"
    assert run("report", str(results), "-o", str(page)).exit_code == 0
    assert run("sql", str(results), "select * from runs", "--csv", str(rows)).exit_code == 0
    before = page.read_bytes(), rows.read_bytes()
    for args in (["report", str(results), "-o", str(page)],
                 ["sql", str(results), "select * from runs, range(3)", "--csv", str(rows)]):
        done = subprocess.run([RUNGRADE, *args], capture_output=True, text=True, timeout=120,
                              preexec_fn=_limited_to(4096))
        assert done.returncode == exit_codes.STORAGE, done.stderr
        assert "a file that was there is as it was" in done.stderr, done.stderr
    assert (page.read_bytes(), rows.read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "runs.csv"]


def test_a_table_at_80_columns_folds_text_at_spaces_and_no_word(graded, monkeypatch):
    # at the 80 columns of output that is no terminal (cron's mail, a file), run ids and
    # verdicts were folded in two, and a copied id named no run
    _, results = graded
    monkeypatch.setenv("COLUMNS", "80")
    query = ("select run_id, service, text, verdict || '→' || 'partially_satisfied' as flip "
             "from clauses join clause_verdicts using (run_id, run_uri, service, clause_id) "
             "order by length(run_id) desc limit 5")
    result = run("sql", str(results), query)
    assert result.exit_code == 0, result.output
    ids = duckdb.connect(str(results / "catalog.duckdb"), read_only=True).sql(
        query).fetchall()
    for run_id, _, text, flip in ids:
        assert run_id in result.stdout and flip in result.stdout
        assert text.split()[0] in result.stdout  # (text folds, at its spaces)


def test_a_table_at_80_columns_shows_every_value_whole_under_long_names(graded, monkeypatch):
    # a name with spaces was counted by its longest word: rich squeezed the columns, and
    # the last one's values were blank (78.06 and 50.0 not shown), 99.96 shown "99."; an id
    # beside one over 40 characters was folded ("prose.contract.grader/v1", then "8")
    from pipeline import cli

    _, results = graded
    monkeypatch.setenv("COLUMNS", "80")
    query = ("select grader_id, count(distinct run_uri), avg(overall_score) * 1.0001, "
             "avg(overall_score) filter (where overall_verdict <> 'satisfied') * 1.0001 "
             "from run_scores group by 1 union all select 'prose.contract.judged-by-a-judge-"
             "of-ours.grader/v18', 0, 1.2345, 2.3456 order by 1")
    result = run("sql", str(results), query)
    assert result.exit_code == 0, result.output
    lines = [line.split() for line in result.stdout.splitlines()]
    for grader_id, runs, mean, failing in csv.reader(
            run("sql", str(results), query, "--csv", "-").stdout.splitlines()[1:]):
        # (an id of more than 40 characters folds, at the 40th)
        shown = grader_id if len(grader_id) <= cli.WORD_WHOLE else grader_id[:cli.WORD_WHOLE]
        numbers = [runs] + [f"{float(n):.2f}" for n in (mean, failing) if n]
        assert [shown, *numbers] in lines, grader_id


@pytest.mark.parametrize(("option", "value"), [("--runs", "100000000000000"),
                                                ("--start", "99999999999999")])
def test_synth_refuses_more_runs_than_it_can_name(tmp_path, option, value):
    # a huge --runs built its whole job list first (a MemoryError's traceback), a huge
    # --start a date past year 9999 (an OverflowError's)
    result = run("synth", str(tmp_path / "corpus"), option, value, "--workers", "1")
    assert result.exit_code == exit_codes.USAGE, result.output
    assert "is not in the range" in said(result)
    assert not (tmp_path / "corpus").exists()


@pytest.mark.parametrize("command", [["trend"], ["grades"], ["sql", "select 1"],
                                     ["report", "-o", "{tmp}/r.html"], ["compact"],
                                     ["catalog"]])
@pytest.mark.parametrize("given", ["runs", "a run", "a table of the results"])
def test_runs_or_a_folder_inside_results_given_as_results_are_named_as_such(
        graded, tmp_path, command, given):
    # each said to run `rungrade grade RUNS --out` the folder given: results in the runs
    runs, results = graded
    folder = {"runs": runs, "a run": next(p.parent for p in runs.rglob("state.md")),
              "a table of the results": results / "run_scores"}[given]
    before = sorted(folder.rglob("*"))
    result = run(command[0], str(folder), *(w.format(tmp=tmp_path) for w in command[1:]))
    assert result.exit_code == exit_codes.USAGE, result.output
    expected = {"runs": f"{folder} holds runs, not results",
                "a run": f"{folder} is a run folder, not results",
                "a table of the results": f"{folder} lies inside the results in {results}"}
    assert expected[given] in said(result), said(result)
    assert sorted(folder.rglob("*")) == before and not list(tmp_path.iterdir())


def test_a_grade_the_disk_cannot_take_leaves_no_file_cut_short(graded, tmp_path):
    # its record, cut short by the full disk, stayed as `_grades/{id}.json.tmp-…` for good
    runs, _ = graded
    results = tmp_path / "results"
    done = subprocess.run([RUNGRADE, "grade", str(runs), "--out", str(results), "--workers",
                           "1"], capture_output=True, text=True, timeout=120,
                          preexec_fn=_limited_to(600))
    assert done.returncode == exit_codes.STORAGE, done.stderr
    assert not [p for p in results.rglob("*") if ".tmp-" in p.name]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("words", [["--help"], ["trend", "--help"]])
def test_help_that_cannot_be_printed_says_so(words):
    # click prints help through typer's console before any command runs: rich exited 1 for
    # `rungrade --help | head -1`, and a full disk was a traceback
    done = _into_a_closed_pipe([RUNGRADE, *words])
    assert (done.returncode, done.stderr) == (exit_codes.PIPE_CLOSED, "")
    full = _to_a_full_device([RUNGRADE, *words])
    assert full.returncode == exit_codes.STORAGE, full.stderr
    assert full.stderr == "error: the help could not be written (No space left on device).\n"
    # a usage error that cannot be said keeps its code
    bogus = _to_a_full_device([RUNGRADE, *words[:-1], "--bogus"], stream="stderr")
    assert bogus.returncode == exit_codes.USAGE


@pytest.mark.parametrize("then", ["grade", "compact"])
def test_what_a_killed_writer_left_is_removed_by_the_next_grade_or_compaction(graded, tmp_path,
                                                                            then):
    # a SIGKILL never reaches the cleanup of an `except`: catalog.duckdb's next copy and its
    # WAL, a record or a marker cut short, stayed beside the results for good
    runs, results = copied(graded, tmp_path)
    left = [results / "catalog.duckdb.tmp-1a2b3c4d", results / "catalog.duckdb.tmp-1a2b3c4d.wal",
            results / GRADES / "20261205T000000000000Z-aaaaaa.json.tmp-5e6f7a8b",
            results / "_commits" / "20261205T000000000000Z-aaaaaa.json.tmp-00000000",
            next((results / "reports").glob("grader=*")) / "x.json.tmp-11111111"]
    for path in left:
        path.write_bytes(b"cut sh")
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    fresh = results / GRADES / "20261205T000000000001Z-bbbbbb.json.tmp-22222222"
    fresh.write_bytes(b"")  # (begun a moment ago: perhaps by a writer still at work)
    if then == "grade":
        assert run("grade", str(runs), "--out", str(results), "--workers", "1").exit_code == 0
    else:
        assert run("compact", str(results)).exit_code == 0
    assert not [p for p in left if p.exists()] and fresh.exists()


def test_a_query_that_opens_with_a_comment_is_the_query(graded):
    # "-- top runs\nselect …" was taken for an option: "No such option: -- top runs…", exit 2,
    # unless it came after `--`. Through the console entry point, as a shell runs it.
    _, results = graded
    query = "-- runs graded\nselect count(*) as n from runs where status = 'graded'"

    def rungrade(*args: str) -> subprocess.CompletedProcess:
        code = ("import sys; sys.argv = ['rungrade', *sys.argv[1:]]; "
                "from pipeline.entry import main; main()")
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                              text=True, timeout=120)

    for args in (["sql", str(results), query, "--csv", "-"],
                 ["sql", query, "--results", str(results), "--csv", "-"],
                 ["sql", "--csv", "-", str(results), "--", query]):
        done = rungrade(*args)
        assert done.returncode == 0, (args, done.stderr)
        assert done.stdout.splitlines() == ["n", "15"], args
    # an option mistyped is still one, and said so
    typo = rungrade("sql", str(results), "--cvs", "-", query)
    assert typo.returncode == exit_codes.USAGE
    assert "No such option: --cvs" in typo.stderr
