"""A corpus of broken and hostile runs, built by the test and graded through the CLI.

Every run found must end graded or refused with the expected reason, nothing outside the runs
root may be read, no run content may execute, and the batch must finish.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import duckdb
import polars as pl
import pytest
from conftest import RUNGRADE, SAMPLE_RUNS
from run_folders import BINDINGS, RESEARCHER, STATE, WRITER, write_run
from typer.testing import CliRunner

from pipeline.catalog import connect
from pipeline.checks import DEFAULT_GRADER_ID
from pipeline.cli import app
from pipeline.names import shown
from pipeline.sources.bucket import Bucket, group_runs
from pipeline.sources.ledger_builder import evaluation
from pipeline.sources.prose import DEFAULT_BINDING_CAP, read_run
from pipeline.store import ROW_GROUP_BYTES, grader_slug
from pipeline.tables import TABLES

SECRET = "OUTSIDE-THE-ROOT-7f3a9c"  # planted outside the runs root; must never be read
HUGE = 200 << 20
MANY = 10_000
REPO = Path(__file__).resolve().parent.parent

# YAML that would run a command if it were ever loaded with an unsafe loader.
PYTHON_TAG = """---
name: !!python/object/apply:os.system ["touch {marker}"]
kind: service
boom: !!python/object/new:subprocess.Popen [["touch", "{marker}"]]
---

### Ensures
- `summary`: a summary
- `tldr`: one sentence
"""
# Nine levels of nine-fold aliases: expanding the name would take 9**9 list items.
LAUGHS = "---\n" + "\n".join(
    [f"l0: &l0 [{', '.join(['lol'] * 9)}]"]
    + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    + ["name: *l8", "kind: *l8"]) + "\n---\n\n### Ensures\n- `report`: a markdown brief\n"
MANY_ENSURES = "---\nname: writer\nkind: service\n---\n\n### Ensures\n" + "".join(
    f"- `out{i}`: output number {i}\n" for i in range(MANY)) + "- `tldr`: one sentence\n"
DEEP_ITEMS = "### Ensures\n- `summary`: a summary\n" + "".join(
    f"{'  ' * (i + 1)}- level {i} detail\n" for i in range(300)) + "- `tldr`: one sentence\n"
DUPLICATE_BLOCKS = """# Manifest: brief

## Graph

### researcher
source: services/researcher.md
outputs:
- (public) findings → bindings/researcher/findings.md

### writer
source: services/writer.md
outputs:
- (public) summary → bindings/writer/summary.md

### writer (patch loop)
source: services/writer.md
outputs:
- (public) tldr → bindings/writer/tldr.md
"""


def build_corpus(base: Path, marker: Path) -> dict[str, tuple[str, str | None]]:
    """Write the broken runs under base/runs; return {run folder (relative): (status, reason)}.

    Also writes base/outside/, the target of every symlink, which must never be read.
    """
    root, outside = base / "runs", base / "outside"
    outside.mkdir(parents=True)
    (outside / "secret.md").write_text(f"# {SECRET}\n")
    write_run(outside, "20261112-000099-outside", files={
        "bindings/writer/report.md": SECRET, "services/writer.md": WRITER + f"\n{SECRET}\n"})
    (outside / "folder").mkdir()
    (outside / "folder" / "summary.md").write_text(SECRET)

    expected: dict[str, tuple[str, str | None]] = {}

    def run(rel: str, status: str = "graded", reason: str | None = None, **kwargs) -> Path:
        parent, _, run_id = rel.rpartition("/")
        expected[rel] = (status, reason)
        return write_run(root / parent if parent else root, run_id, **kwargs)

    # Undecodable and binary outputs are read, flagged and graded.
    path = run("20261112-000001-bytes")
    (path / "bindings/writer/summary.md").write_bytes("Résumé, naïve café\n".encode("latin-1"))
    (path / "bindings/writer/tldr.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe" * 64)
    # (half a UTF-16 mark: the whole mark, b"\xff\xfe", opens a UTF-16 text, read so)
    (path / "bindings/writer/report.json").write_bytes(b"\xff{\x00}\x00")

    # Empty files: outputs, contracts, the log.
    path = run("20261112-000002-empty-outputs")
    for out in (path / "bindings").rglob("*.md"):
        out.write_bytes(b"")
    run("20261112-000003-empty-program", files={"program.md": ""})
    run("20261112-000004-empty-state", "refused", "incomplete-run", files={"state.md": ""})
    run("20261112-000005-empty-manifest", files={"manifest.md": ""})
    run("20261112-000006-empty-service", files={"services/writer.md": ""})

    # A 200 MB output: sparse on disk, read up to the cap only.
    path = run("20261112-000007-huge")
    with open(path / "bindings/writer/report.md", "r+b") as handle:
        handle.truncate(HUGE)

    # 10,000 ensures clauses in one service.
    run("20261112-000008-many-clauses", files={"services/writer.md": MANY_ENSURES})

    # Deep nesting: the run 60 folders down, 150 folders inside it, items 300 levels deep.
    run("/".join(["deep"] * 60) + "/20261112-000009-deep")
    path = run("20261112-000010-deep-inside", files={"services/writer.md": DEEP_ITEMS})
    nested = path / "workspace" / "writer" / Path(*["n"] * 150)
    nested.mkdir(parents=True)
    (nested / "scratch.md").write_text("deep scratch\n")

    # Symlinks leaving the root: a file, a subfolder, the run folder itself.
    path = run("20261112-000011-link-file", "refused", "unsafe-path")
    (path / "bindings/writer/report.md").unlink()
    (path / "bindings/writer/report.md").symlink_to(outside / "secret.md")
    path = run("20261112-000012-link-folder", "refused", "unsafe-path")
    for out in (path / "bindings/writer").iterdir():
        out.unlink()
    (path / "bindings/writer").rmdir()
    (path / "bindings/writer").symlink_to(outside / "folder", target_is_directory=True)
    expected["20261112-000013-link-run"] = ("refused", "unsafe-path")
    (root / "20261112-000013-link-run").symlink_to(outside / "20261112-000099-outside",
                                                   target_is_directory=True)
    # A manifest source that climbs out of the run is looked up in the run listing only.
    run("20261112-000014-climbing-source", files={"manifest.md": DUPLICATE_BLOCKS.replace(
        "source: services/writer.md", "source: ../../outside/20261112-000099-outside/"
        "services/writer.md", 1)})

    # Names with '..', spaces and unicode, in the run id, a service and an output.
    run("20261112-000015-a..b c ü", files={
        "bindings/wri ter/ré sumé..md": "a résumé\n", "bindings/writer/..hidden.md": "dots\n"})
    # Line breaks and tabs in the run id and an output's name: a suffix may hold any character.
    run("20261112-000031-new\nline\tand tab", files={"bindings/writer/odd\nname.md": "odd\n"})

    # A run still being written: no '---end' yet.
    run("20261112-000016-writing", "refused", "incomplete-run", files={
        "state.md": "# run:20261112-000016-writing brief\n1→ researcher ✓\n2→ writer\n"})

    # Malformed and hostile YAML front matter: safe loading only, nothing executes.
    run("20261112-000017-yaml-broken", files={
        "program.md": "---\nname: [unclosed\nkind: {\n---\n\n### Ensures\n- `report`: brief\n",
        "services/researcher.md": "---\nname: researcher\n\tkind: tab\n" + RESEARCHER[4:]})
    run("20261112-000018-yaml-python", files={
        "services/writer.md": PYTHON_TAG.format(marker=marker),
        "program.md": PYTHON_TAG.format(marker=marker)})
    run("20261112-000019-yaml-laughs", files={"program.md": LAUGHS})
    run("20261112-000020-yaml-unclosed", files={"program.md": "---\nname: brief\n# never closed"})

    # The same run id under two prefixes: two runs, told apart by their uri.
    run("team-a/20261112-000021-same")
    run("team-b/20261112-000021-same")

    # Folders where the program and the state log belong: refused, and the detail says so.
    for n, rel, reason in ((32, "program.md", "missing-program"),
                           (33, "state.md", "incomplete-run")):
        path = run(f"20261112-0000{n}-folder-{rel.split('.')[0]}", "refused", reason)
        (path / rel).unlink()
        (path / rel / "inside.md").parent.mkdir()
        (path / rel / "inside.md").write_text("not the file\n")

    # A file named like a run folder: a run, refused, and the detail says why.
    (root / "20261112-000024-a-file").write_text("not a run folder\n")
    expected["20261112-000024-a-file"] = ("refused", "missing-program")

    # Names that are not UTF-8 (a file system allows any bytes but "/"): the run folder's,
    # a folder's above a run, an output's and a workspace file's. Read by their paths, graded,
    # and shown with \xNN escapes in the results.
    for rel in (b"20261112-000025-\xff\xfe", b"team-\xfa/20261112-000026-below"):
        name = os.fsdecode(rel)
        path = run(name, files={"state.md": STATE.format(run_id=shown(name.split("/")[-1]))})
        expected[shown(name)] = expected.pop(name)
    (path / "bindings/writer" / os.fsdecode(b"caf\xe9.md")).write_text("an extra output\n")
    (path / "workspace").mkdir()
    (path / "workspace" / os.fsdecode(b"notes-\xff.md")).write_text("scratch\n")

    # A run folder named with 250 bytes (255 is the most a name may take): its report's file
    # name, with the tags a staged copy carries, took more and failed every grade.
    run("20261112-000027-" + "long" * 58 + "xy")

    # A manifest listing a service twice, and a program named like one of its services.
    run("20261112-000022-repeated-service", files={"manifest.md": DUPLICATE_BLOCKS})
    run("20261112-000023-program-named-writer", files={
        "program.md": "---\nname: writer\nkind: program\n---\n\n### Ensures\n- `report`: x\n"})
    return expected


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    marker = base / "executed"
    expected = build_corpus(base, marker)
    out = base / "results"
    started = time.perf_counter()
    result = CliRunner().invoke(app, ["grade", str(base / "runs"), "--out", str(out), "--json",
                                      "--workers", "2", "--validate"])
    elapsed = time.perf_counter() - started
    assert result.exit_code == 0, result.output
    return base, out, expected, json.loads(result.output), marker, elapsed


def load(out: Path, table: str) -> pl.DataFrame:
    return pl.read_parquet(out / table / "**" / "*.parquet", hive_partitioning=True)


def by_folder(base: Path, df: pl.DataFrame) -> dict[str, dict]:
    prefix = str(base / "runs") + "/"
    return {row["run_uri"].removeprefix(prefix): row for row in df.iter_rows(named=True)}


def test_every_broken_run_is_graded_or_refused_as_expected(corpus):
    base, out, expected, summary, _, elapsed = corpus
    assert summary["found"] == len(expected)
    assert summary["found"] == summary["graded"] + summary["refused"]
    runs = by_folder(base, load(out, "runs"))
    refusals = by_folder(base, load(out, "refusals"))
    got = {rel: (row["status"], refusals.get(rel, {}).get("reason")) for rel, row in runs.items()}
    assert got == expected
    assert "internal-error" not in summary["refusals"]
    assert elapsed < 120, f"the hostile corpus took {elapsed:.0f}s"


def test_a_file_named_like_a_run_is_refused_as_a_file(corpus):
    base, out, *_ = corpus
    refusals = by_folder(base, load(out, "refusals"))
    assert refusals["20261112-000024-a-file"]["detail"] == (
        "the run path is a file, not a folder: no program.md to read")


def test_a_folder_named_like_a_file_the_run_needs_is_named_in_the_refusal(corpus):
    base, out, *_ = corpus
    refusals = by_folder(base, load(out, "refusals"))
    assert refusals["20261112-000032-folder-program"]["detail"] == (
        "no program.md in the run folder (program.md is a folder, not a file)")
    assert refusals["20261112-000033-folder-state"]["detail"] == (
        "no state.md: completion cannot be established (state.md is a folder, not a file)")


def test_nothing_outside_the_root_is_read(corpus):
    base, out, *_ = corpus
    con = duckdb.connect()
    for table in TABLES:
        rows = con.sql(f"select * from read_parquet('{out}/{table}/**/*.parquet')").fetchall()
        assert SECRET not in repr(rows), table
    for report in (out / "reports").rglob("*.json"):
        assert SECRET not in report.read_text(encoding="utf-8")
    # the climbing manifest source is not followed: the run's own snapshot is used instead
    services = by_folder(base, load(out, "services").filter(pl.col("service") == "writer"))
    assert services["20261112-000014-climbing-source"]["contract_source"] == "services/writer.md"


def _swapped_for_a_link(folder: Path, target: Path) -> None:
    for item in sorted(folder.rglob("*"), reverse=True):
        item.rmdir() if item.is_dir() else item.unlink()
    folder.rmdir()
    folder.symlink_to(target, target_is_directory=True)


def _with_or_without_openat2(how: str, monkeypatch) -> None:
    """Paths are opened with `openat2` where the system has it (skip where it has not), or as
    on a system without it, one name at a time."""
    from pipeline.sources import bucket as bucket_module

    if how == "without openat2":
        monkeypatch.setattr(bucket_module, "_openat2", lambda: None)
    elif bucket_module._openat2() is None:
        pytest.skip("no openat2 on this system")


OPENS = ["with openat2", "without openat2"]


@pytest.mark.parametrize("opens", OPENS)
@pytest.mark.parametrize("swapped", ["the run folder", "a folder inside the run"])
def test_a_folder_swapped_for_a_symlink_after_listing_is_not_read_through(tmp_path, swapped,
                                                                          opens, monkeypatch):
    # Between the listing of a run and its reading, its folder (or its service's bindings
    # folder) is replaced by a symlink to a copy outside the root: the run is refused, and
    # nothing is read through the link.
    from pipeline.grade import _read_shard

    _with_or_without_openat2(opens, monkeypatch)
    root, outside = tmp_path / "runs", tmp_path / "outside"
    target = write_run(outside, "20261112-000099-outside", files={
        "bindings/writer/report.md": SECRET, "services/writer.md": WRITER})
    path = write_run(root, "20261112-000001-swapped")
    bucket = Bucket(str(root))
    ref = bucket.list_run(next(bucket.discover()))
    # the run as it was is read as usual
    read = _read_shard((str(root), None, [dataclasses.replace(ref)], DEFAULT_BINDING_CAP, ()))
    assert read.refusals == [] and read.bindings
    if swapped.startswith("the run folder"):
        _swapped_for_a_link(path, target)
        unread = "program.md"
    else:
        _swapped_for_a_link(path / "bindings" / "writer", target / "bindings" / "writer")
        unread = "a binding could not be read"
    rows = _read_shard((str(root), None, [ref], DEFAULT_BINDING_CAP, ()))
    assert [(r["reason"], r["detail"].split(":")[0]) for r in rows.refusals] == [
        ("unreadable-file", unread)]
    assert rows.bindings == [] and SECRET not in repr(rows.__dict__)


@pytest.mark.parametrize("opens", OPENS)
@pytest.mark.parametrize("swapped", ["bindings/writer", "bindings"])
def test_a_folder_swapped_for_a_symlink_while_its_run_is_listed_is_not_listed(
        tmp_path, swapped, opens, monkeypatch):
    # The run's `bindings` folder has been listed, and its `writer` folder (or `bindings`
    # itself) is replaced by a symlink to a folder outside the root before the listing reaches
    # `writer`: nothing below the link is listed (names and sizes of files outside the root
    # would end up in the run's fingerprint and refusals).
    from pipeline.sources import bucket as bucket_module

    _with_or_without_openat2(opens, monkeypatch)
    outside = tmp_path / "outside" / "bindings"
    (outside / "writer").mkdir(parents=True)
    (outside / "writer" / "leak.md").write_text(SECRET)
    path = write_run(tmp_path / "runs", "20261112-000001-swapped")
    scandir, swaps = os.scandir, []

    def swapping(target):
        with scandir(target) as it:
            entries = list(it)
        if any(e.name == "writer" for e in entries) and not swaps:
            swaps.append(swapped)  # moved away whole: the listing's entries can still be read
            (path / swapped).rename(tmp_path / "moved")
            (path / swapped).symlink_to(outside.parent / swapped, target_is_directory=True)
        return contextlib.nullcontext(entries)

    monkeypatch.setattr(bucket_module.os, "scandir", swapping)
    files, folders, unlisted = bucket_module._list_local(str(path), 0,
                                                         os.open(path, os.O_RDONLY))
    monkeypatch.undo()
    assert (path / swapped).is_symlink()  # the swap happened mid-listing
    assert "bindings" in folders and "program.md" in files
    assert not [rel for rel in files if rel.startswith("bindings/writer/")]
    # and the run is refused for it, not graded on what was listed
    assert "bindings/writer" in unlisted and all(rel.startswith("bindings/") for rel in unlisted)
    assert unlisted["bindings/writer"].startswith(("[Errno 40]", "[Errno 20]"))  # ELOOP, ENOTDIR


def _denied(monkeypatch, *names: str) -> None:
    """Folders named `names` (paths relative to the folder they are opened from) cannot be
    opened, as for a user without permission (the tests run as root, whom none stops)."""
    from pipeline.sources import bucket as bucket_module

    opened = bucket_module._open_beneath

    def denying(dir_fd: int, path: str, folder: bool = False) -> int:
        if folder and path in names:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return opened(dir_fd, path, folder)

    monkeypatch.setattr(bucket_module, "_open_beneath", denying)


@pytest.mark.parametrize("denied", ["bindings/writer", "the run folder"])
def test_a_run_whose_folder_cannot_be_listed_is_refused(tmp_path, denied, monkeypatch):
    # Graded whole or not at all: without a folder's files the run would be graded as if its
    # writer had published nothing.
    from pipeline.grade import _listing_row, _read_shard

    root = tmp_path / "runs"
    path = write_run(root / "team", "20261112-000001-denied")
    whole = Bucket(str(root)).list_run(next(Bucket(str(root)).discover()))
    _denied(monkeypatch, "team/20261112-000001-denied" if denied == "the run folder" else denied)
    ref = next(Bucket(str(root)).discover())
    rows = _read_shard((str(root), None, [ref], DEFAULT_BINDING_CAP, ()))
    assert [(r["reason"], r["detail"]) for r in rows.refusals] == [
        ("unreadable-file", f"could not be listed: {denied}: [Errno 13] Permission denied")]
    assert [r["status"] for r in rows.runs] == ["refused"] and rows.bindings == []
    # its fingerprint tells it from the run listed whole, and no listing is kept for a rerun
    # to check it by (it is listed again each time, and graded once it can be)
    assert ref.unlisted and not ref.empty and ref.fingerprint != whole.fingerprint
    assert rows.runs[0]["fingerprint"] == ref.fingerprint
    assert _listing_row(ref, ref.fingerprint) is None and _listing_row(whole, whole.fingerprint)
    assert path.is_dir()


def test_a_folder_above_the_runs_that_cannot_be_listed_fails_the_grade_after_the_rest(
        tmp_path, monkeypatch):
    # The runs in it are not found, so the grade cannot say it handled every run: it grades
    # and commits every run it found, names the folder, and exits 4; once the folder can be
    # listed, the same command grades what it holds.
    root, out = tmp_path / "runs", tmp_path / "results"
    write_run(root / "team-a", "20261112-000001-seen")
    write_run(root / "team-b", "20261112-000002-hidden")
    _denied(monkeypatch, "team-b")  # (discovery runs in this process)
    command = ["grade", str(root), "--out", str(out), "--json", "--workers", "1"]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 4, result.output
    summary = json.loads(result.stdout)
    assert (summary["found"], summary["graded"]) == (1, 1)
    assert summary["unlisted"] == [{"path": str(root / "team-b"),
                                    "error": "[Errno 13] Permission denied"}]
    assert f"{root / 'team-b'} ([Errno 13] Permission denied)" in result.stderr
    assert load(out, "runs")["run_id"].to_list() == ["20261112-000001-seen"]
    monkeypatch.undo()
    again = CliRunner().invoke(app, command)
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)
    assert (summary["new"], summary["skipped"], summary["graded"], summary["unlisted"]) == (
        1, 1, 1, [])
    assert sorted(load(out, "runs")["run_id"].to_list()) == [
        "20261112-000001-seen", "20261112-000002-hidden"]


def test_a_first_grades_early_reading_of_clauses_leaves_ledgers_out(tmp_path, monkeypatch):
    # It reads a sample of the runs for their clauses while the shards grade them: a ledger
    # has none (its checks are its grader's), and a large one was read twice at once (1.8 GiB
    # a worker for a 206 MiB ledger, in each of two). Named like a run, a ledger is known one
    # only once listed.
    from pipeline import grade
    from pipeline.sources import ledger as ledger_module

    root = tmp_path / "runs"
    write_run(root / "team", "20261112-000001-prose")
    evaluation("20261112-000002-ledger", "evals.sender-name/v1", ["eval-sender"]).write(
        root / "team" / "20261112-000002-ledger")
    evaluation("ledger-3", "evals.sender-name/v1", ["eval-sender"]).write(root / "l" / "ledger-3")
    read = []
    monkeypatch.setattr(ledger_module, "_records", lambda data: read.append(data) or [])
    read_runs = []
    monkeypatch.setattr(grade, "read_run", lambda bucket, ref, cap: read_runs.append(
        ref.run_id) or grade.RunRows())
    monkeypatch.setitem(grade._WORKER, "ledger_graders", grade.default_ledger_graders())
    job = grade.Job(str(root), str(tmp_path / "out"), None, DEFAULT_BINDING_CAP, False, False)
    grade._preread_task(job, None)
    assert read_runs == ["20261112-000001-prose"] and read == []


def test_a_symlink_above_the_runs_to_a_folder_outside_is_named_not_followed(tmp_path):
    # A program's `.prose/runs` linked to a bigger disk: never followed, and its runs were
    # not found, with no word (found 0 said only how runs are named). It is named as a
    # folder not listed (exit 4, after the rest); a link to a folder inside the root (a
    # `latest`) is passed over, its runs found by their own path; once the runs are moved
    # inside, the same command grades them.
    root, out, outside = tmp_path / "runs", tmp_path / "results", tmp_path / "bigdisk"
    seen = write_run(root / "team-a", "20261112-000001-seen")
    write_run(outside, "20261112-000002-elsewhere")
    (root / "team-b" / ".prose").mkdir(parents=True)
    (root / "team-b" / ".prose" / "runs").symlink_to(outside, target_is_directory=True)
    (root / "team-a" / "latest").symlink_to(seen, target_is_directory=True)
    (root / "notes").symlink_to(tmp_path / "nothing-here")  # dangling: nothing to say
    command = ["grade", str(root), "--out", str(out), "--json", "--workers", "1"]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 4, result.output
    summary = json.loads(result.stdout)
    assert (summary["found"], summary["graded"]) == (1, 1)
    link = str(root / "team-b" / ".prose" / "runs")
    assert [u["path"] for u in summary["unlisted"]] == [link]
    assert "never followed" in summary["unlisted"][0]["error"]
    assert link in " ".join(result.stderr.split())
    (root / "team-b" / ".prose" / "runs").unlink()
    shutil.move(outside, root / "team-b" / ".prose" / "runs")
    again = CliRunner().invoke(app, command)
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)
    assert (summary["new"], summary["skipped"], summary["unlisted"]) == (1, 1, [])


@pytest.mark.parametrize("opens", OPENS)
def test_a_folder_above_a_run_swapped_for_a_symlink_after_discovery_is_not_followed(
        tmp_path, opens, monkeypatch):
    # The run is found under runs/team/, then `team` is replaced by a symlink to a copy of it
    # outside the root: the run is neither listed nor read through the link.
    from pipeline.grade import _read_shard

    _with_or_without_openat2(opens, monkeypatch)
    root, outside = tmp_path / "runs", tmp_path / "outside"
    write_run(outside / "team", "20261112-000001-moved", files={
        "bindings/writer/report.md": SECRET, "services/writer.md": WRITER})
    path = write_run(root / "team", "20261112-000001-moved")
    refs = list(Bucket(str(root)).discover())
    assert [ref.path for ref in refs] == [str(path)]
    _swapped_for_a_link(root / "team", outside / "team")
    rows = _read_shard((str(root), None, refs, DEFAULT_BINDING_CAP, ()))
    assert refs[0].files == {} and rows.runs == [] and rows.bindings == []
    assert SECRET not in repr(rows.__dict__)


@pytest.mark.parametrize("sampled", [False, True])
@pytest.mark.parametrize("opens", OPENS)
def test_a_folder_swapped_for_a_symlink_while_the_runs_are_found_is_not_walked(
        tmp_path, opens, sampled, monkeypatch):
    # The runs root has been listed, and its folder `team` is replaced by a symlink to a
    # folder outside the root before the walk reaches it: no run beyond the link is found
    # (they would be reported by a path inside the root), the others are.
    from pipeline.sources import bucket as bucket_module

    _with_or_without_openat2(opens, monkeypatch)
    root, outside = tmp_path / "runs", tmp_path / "outside"
    write_run(outside / "team", "20261112-000002-beyond", files={
        "bindings/writer/report.md": SECRET, "services/writer.md": WRITER})
    write_run(root / "team", "20261112-000002-beyond")
    kept = write_run(root / "other", "20261112-000001-kept")
    scandir = os.scandir

    def swapping(target):
        with scandir(target) as it:
            entries = list(it)
        if {e.name for e in entries} == {"other", "team"} and not (root / "team").is_symlink():
            _swapped_for_a_link(root / "team", outside / "team")
        return contextlib.nullcontext(entries)

    monkeypatch.setattr(bucket_module.os, "scandir", swapping)
    bucket = Bucket(str(root))
    found = list(bucket.sample() if sampled else bucket.discover())
    monkeypatch.undo()
    assert (root / "team").is_symlink()  # the swap happened mid-walk
    assert [ref.path for ref in found] == [str(kept)]
    assert bucket.unlisted == []  # no longer a folder: as a walk begun now, it is not one


def test_hostile_yaml_never_executes(corpus):
    base, out, _, _, marker, _ = corpus
    assert not marker.exists(), "run content was executed"
    runs = by_folder(base, load(out, "runs"))
    assert runs["20261112-000018-yaml-python"]["status"] == "graded"
    # an alias bomb as the program name is ignored, not expanded
    assert runs["20261112-000019-yaml-laughs"]["program"] == "brief"


def _aliases(levels: int) -> list[str]:
    """YAML lines of `levels` nine-fold aliases: `l{levels - 1}` holds 9**levels items."""
    return ([f"l0: &l0 [{', '.join(['lol'] * 9)}]"]
            + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)])


def test_a_vm_logs_front_matter_of_aliases_is_never_expanded():
    # An 867-byte vm.log.md of aliases in its status took gigabytes a worker and a minute
    # (str() of every field, where contracts read scalars only); here 9**7 items in every
    # field it reads, which it leaves aside as it does lists and mappings
    from pipeline.sources.vm_log import parse_vm_log

    fields = ["status", "error", "ended_at", "endedAt", "run_id", "system"]
    log = parse_vm_log("\n".join(["---", *_aliases(7), *(f"{f}: *l6" for f in fields),
                                   "program: brief", "---", "", "1. → writer", ""]))
    assert (log.program, log.run_id, log.completed, log.ended_at) == ("brief", None, False, None)
    assert not log.errors


def test_front_matter_beyond_its_cap_is_not_read():
    # 16 MB of front matter took PyYAML 146 s and 3.5 GB a process: past 64 KiB it is left
    # unread, the problem recorded, the body read as ever
    from pipeline.sources.contract import FRONT_MATTER_CAP, split_front_matter
    from pipeline.sources.vm_log import parse_vm_log

    lines = [f"k{i}: [a, b, c, {{x: y}}]" for i in range(FRONT_MATTER_CAP // 20)]
    front, body, problem = split_front_matter("\n".join(["---", *lines, "---", "# Body"]))
    assert (front, body) == ({}, "# Body") and "larger than 64 KiB" in problem
    log = parse_vm_log("\n".join(["---", "system: brief", *lines, "---", "---end 2026-11-12"]))
    assert log.program is None and log.completed
    # just under the cap, read as ever
    front, _, problem = split_front_matter("\n".join(["---", *lines[:2000], "---"]))
    assert problem is None and len(front) == 2000


def test_bad_bytes_are_flagged_and_kept(corpus):
    base, out, *_ = corpus
    rel = "20261112-000001-bytes"
    b = load(out, "bindings").filter(pl.col("run_uri") == str(base / "runs" / rel))
    flags = {(row["name"], row["extension"]): row["decode_errors"]
             for row in b.iter_rows(named=True)}
    assert flags[("summary", "md")] and flags[("tldr", "md")] and flags[("report", "json")]
    assert not flags[("findings", "md")] and not flags[("report", "md")]
    summary = b.filter(pl.col("name") == "summary").row(0, named=True)
    assert summary["text"].startswith("R\ufffdsum\ufffd")
    raw = (base / "runs" / rel / "bindings/writer/summary.md").read_bytes()
    assert summary["size_bytes"] == len(raw)


def test_empty_outputs_are_graded_as_missing(corpus):
    base, out, *_ = corpus
    uri = str(base / "runs" / "20261112-000002-empty-outputs")
    published = load(out, "checks").filter(
        (pl.col("run_uri") == uri) & (pl.col("check") == "output_published"))
    assert published.height > 0
    assert published["outcome"].unique().to_list() == ["failed"]
    assert published["evidence"].str.contains("is empty").all()


def test_huge_binding_is_capped_and_flagged(corpus):
    base, out, *_ = corpus
    uri = str(base / "runs" / "20261112-000007-huge" / "bindings/writer/report.md")
    b = load(out, "bindings").filter(pl.col("uri") == uri).row(0, named=True)
    assert b["truncated"] and b["size_bytes"] == HUGE
    assert len(b["text"]) == DEFAULT_BINDING_CAP


def test_huge_binding_keeps_memory_flat(tmp_path):
    path = write_run(tmp_path, "20261112-000007-huge")
    with open(path / "bindings/writer/report.md", "r+b") as handle:
        handle.truncate(HUGE)
    bucket = Bucket(str(tmp_path))
    (ref,) = group_runs(bucket, bucket.walk())
    tracemalloc.start()
    try:
        rows = read_run(bucket, ref)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rows.runs[0]["status"] == "graded"
    assert peak < 8 << 20, f"reading a 200 MB binding peaked at {peak >> 20} MB"


def test_a_run_of_many_large_outputs_is_held_once_while_it_is_graded(tmp_path, monkeypatch):
    # 400 outputs of 64 KB, graded as a worker grades a shard. Their text used to be held
    # twice while read (the bytes of every output, and the strings decoded from them), and
    # the strings while the grade's frames held it again; a staged part's row group held
    # every output's text once more before compressing it.
    from pipeline import grade
    from pipeline.checks import default_grader

    outputs = 400
    files = {f"bindings/writer/part{k}.md": f"# Part {k}\n\n" + "words and words " * 4096
             for k in range(outputs)}
    write_run(tmp_path / "runs", "20261112-000009-many-large", files=files)
    text = sum(len(t) for t in files.values())
    refs = list(Bucket(str(tmp_path / "runs")).discover())
    monkeypatch.setitem(grade._WORKER, "grader", default_grader())
    monkeypatch.setitem(grade._WORKER, "ledger_graders", grade.default_ledger_graders())
    monkeypatch.setitem(grade._WORKER, "judge", None)
    held_when_graded = []
    grade_tables = grade.grade_tables

    def measured(*args, **kwargs):
        held_when_graded.append(tracemalloc.get_traced_memory()[0])
        return grade_tables(*args, **kwargs)

    monkeypatch.setattr(grade, "grade_tables", measured)
    # (more than a group holds: graded as soon as it is read, while the next is still to come)
    job = grade.Job(str(tmp_path / "runs"), str(tmp_path / "out"), None, DEFAULT_BINDING_CAP,
                    False, False, shard_bytes=text // 2)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        shard = grade._grade_task(job, "20261112T000000000000Z-aaaaaa", 0, refs)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert shard.stats[default_grader().grader_id]["graded"] == 1
    assert peak < 1.5 * text, f"{peak >> 20} MB held in Python for {text >> 20} MB of text"
    (held,) = held_when_graded
    assert held - before < 0.2 * text, f"{(held - before) >> 20} MB held while graded"
    import pyarrow.parquet as pq

    (bindings,) = (tmp_path / "out" / "_staging").glob("*/bindings/*.parquet")
    groups = pq.ParquetFile(bindings).metadata
    assert groups.num_rows == outputs + 4  # (and the run's own four)
    assert groups.num_row_groups >= -(-text // ROW_GROUP_BYTES) >= 2
    assert all(groups.row_group(k).total_byte_size < 2 * ROW_GROUP_BYTES
               for k in range(groups.num_row_groups))
    (runs,) = (tmp_path / "out" / "_staging").glob("*/runs/*.parquet")
    assert pq.ParquetFile(runs).metadata.num_row_groups == 1


def _grade_rss(runs: Path, out: Path) -> int:
    """Peak resident memory (KB) of a fresh process grading `runs` with one reader."""
    code = ("import resource, sys; from pipeline.checks import default_grader; "
            "from pipeline.grade import grade_runs; "
            "s = grade_runs(sys.argv[1], sys.argv[2], default_grader(), workers=1); "
            "assert s.graded == 1, s; "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", code, str(runs), str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=True)
    return int(done.stdout.split()[-1])


def test_huge_binding_process_memory_matches_a_small_run(tmp_path):
    small, huge = tmp_path / "small", tmp_path / "huge"
    write_run(small, "20261112-000007-huge")
    path = write_run(huge, "20261112-000007-huge")
    with open(path / "bindings/writer/report.md", "r+b") as handle:
        handle.truncate(HUGE)
    base = _grade_rss(small, tmp_path / "r1")
    peak = _grade_rss(huge, tmp_path / "r2")
    assert peak - base < 32 << 10, f"grading a 200 MB binding cost {(peak - base) >> 10} MB more"


def test_ten_thousand_clauses_are_each_judged_once(corpus):
    base, out, *_ = corpus
    uri = str(base / "runs" / "20261112-000008-many-clauses")
    verdicts = load(out, "clause_verdicts").filter(
        (pl.col("run_uri") == uri) & (pl.col("service") == "writer"))
    assert verdicts.height == MANY + 1
    assert verdicts["clause_id"].n_unique() == MANY + 1
    scores = load(out, "service_scores").filter(
        (pl.col("run_uri") == uri) & (pl.col("service") == "writer")).row(0, named=True)
    assert scores["clauses"] == MANY + 1
    # only `tldr` was published; the 10,000 other outputs are missing
    assert scores["satisfied"] == 1 and scores["violated"] == MANY


def test_ten_thousand_clauses_grade_fast(tmp_path):
    write_run(tmp_path / "runs", "20261112-000008-many-clauses",
              files={"services/writer.md": MANY_ENSURES})
    started = time.perf_counter()
    result = CliRunner().invoke(app, ["grade", str(tmp_path / "runs"), "--out",
                                      str(tmp_path / "r"), "--json", "--workers", "1"])
    elapsed = time.perf_counter() - started
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["graded"] == 1
    assert elapsed < 20, f"10,000 clauses took {elapsed:.1f}s"


def test_deep_nesting_is_found_and_graded(corpus):
    base, out, *_ = corpus
    runs = by_folder(base, load(out, "runs"))
    deep = "/".join(["deep"] * 60) + "/20261112-000009-deep"
    assert runs[deep]["status"] == "graded"
    inside = runs["20261112-000010-deep-inside"]
    assert inside["file_count"] == 11  # the scratch file 150 folders down is listed
    clauses = load(out, "clauses").filter(pl.col("run_uri") == inside["run_uri"])
    writer = clauses.filter(pl.col("service") == "writer")
    assert writer.filter(pl.col("kind") == "detail").height == 300
    assert writer.filter(pl.col("kind") != "detail")["output_name"].to_list() == [
        "summary", "tldr"]


def test_odd_names_are_kept_verbatim(corpus):
    base, out, *_ = corpus
    uri = str(base / "runs" / "20261112-000015-a..b c ü")
    runs = load(out, "runs").filter(pl.col("run_uri") == uri)
    assert runs["run_id"].to_list() == ["20261112-000015-a..b c ü"]
    names = load(out, "bindings").filter(pl.col("run_uri") == uri).select("service", "name")
    assert ("wri ter", "ré sumé.") in names.rows()
    assert ("writer", "..hidden") in names.rows()
    assert (out / "reports" / "20261112-000015-a..b c ü.json").exists()
    run_id = "20261112-000031-new\nline\tand tab"
    uri = str(base / "runs" / run_id)
    assert load(out, "runs").filter(pl.col("run_uri") == uri)["run_id"].to_list() == [run_id]
    names = load(out, "bindings").filter(pl.col("run_uri") == uri)["name"].to_list()
    assert "odd\nname" in names
    assert json.loads((out / "reports" / f"{run_id}.json").read_text())["run_id"] == run_id


def test_names_that_are_not_utf8_are_shown_escaped_and_found_again(corpus):
    base, out, _, summary, *_ = corpus
    assert shown(os.fsdecode(b"caf\xe9")) == "caf\\xe9" and shown("café") == "café"
    runs = by_folder(base, load(out, "runs"))
    assert runs["20261112-000025-\\xff\\xfe"]["run_id"] == "20261112-000025-\\xff\\xfe"
    below = runs["team-\\xfa/20261112-000026-below"]
    assert below["status"] == "graded"
    real = base / "runs" / os.fsdecode(b"team-\xfa") / "20261112-000026-below"
    # every file counted, the workspace file among them
    assert below["file_count"] == sum(len(files) for _, _, files in os.walk(real)) == 12
    names = load(out, "bindings").filter(pl.col("run_uri") == below["run_uri"])
    assert ("writer", "caf\\xe9") in names.select("service", "name").rows()
    assert (out / "reports" / "20261112-000025-\\xff\\xfe.json").exists()
    # a rerun finds every run as committed: none is new again (a name's escapes are its
    # uri in the results and in the rerun alike)
    again = CliRunner().invoke(app, ["grade", str(base / "runs"), "--out", str(out), "--json",
                                     "--workers", "2"])
    assert again.exit_code == 0, again.output
    rerun = json.loads(again.output)
    assert rerun["found"] == summary["found"] == rerun["skipped"]


def test_a_run_named_as_long_as_a_file_name_may_be_has_its_report(corpus):
    _, out, *_ = corpus
    run_id = "20261112-000027-" + "long" * 58 + "xy"
    assert len(run_id.encode()) == 250
    (report,) = (out / "reports").glob("20261112-000027-*.json")
    assert len(report.name.encode()) <= 255 and report.stem.startswith(run_id[:180])
    assert json.loads(report.read_text())["run_id"] == run_id
    assert (out / "reports" / f"grader={grader_slug(DEFAULT_GRADER_ID)}" / report.name).exists()


def test_same_run_id_under_two_prefixes_is_kept_twice(corpus):
    base, out, *_ = corpus
    runs = load(out, "runs").filter(pl.col("run_id") == "20261112-000021-same")
    assert sorted(runs["run_uri"].to_list()) == [
        str(base / "runs" / "team-a" / "20261112-000021-same"),
        str(base / "runs" / "team-b" / "20261112-000021-same")]
    assert load(out, "run_scores").filter(pl.col("run_id") == "20261112-000021-same").height == 2
    reports = sorted((out / "reports").glob("20261112-000021-same*.json"))
    assert len(reports) == 2
    assert reports[0].read_bytes() == reports[1].read_bytes()  # same content, two files


def test_each_report_of_one_run_id_under_three_prefixes_is_named_by_its_own_uri(tmp_path):
    # Two copies in one shard and one in another, each graded differently: every report is
    # named `{run_id}.json` or `{run_id}~{its own uri's tag}.json`, and none is lost. (A name
    # used to be paired with the uri of the shard's last run of that id: c's report was named
    # by d's uri, and d's took a second tag, or overwrote it.)
    run_id = "20261112-000021-same"
    runs = tmp_path / "runs"
    write_run(runs / "a", run_id)
    write_run(runs / "b", "20261112-000022-other")
    one_paragraph = {"bindings/writer/summary.md": "One paragraph only.\n"}
    write_run(runs / "c", run_id, files=one_paragraph)
    write_run(runs / "d", run_id, files={**one_paragraph,
                                         "bindings/writer/tldr.md": "One. Two. Three.\n"})
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["grade", str(runs), "--out", str(out), "--json",
                                      "--workers", "2", "--shard-runs", "2"])
    assert result.exit_code == 0, result.output
    scores = dict(load(out, "run_scores").filter(pl.col("run_id") == run_id)
                  .select("run_uri", "overall_score").iter_rows())
    assert len(set(scores.values())) == 3  # three reports that tell the runs apart
    for folder in (out / "reports", out / "reports" / f"grader={grader_slug(DEFAULT_GRADER_ID)}"):
        named = {path.name: json.loads(path.read_text())["overall_score"]
                 for path in folder.glob(f"{run_id}*.json")}
        tagged = {f"{run_id}~{hashlib.sha1(uri.encode()).hexdigest()[:8]}.json": score
                  for uri, score in scores.items()}
        plain = [name for name, score in tagged.items() if score == named.get(f"{run_id}.json")]
        assert len(plain) == 1, named
        assert named == {f"{run_id}.json" if name in plain else name: score
                         for name, score in tagged.items()}


def _reports(out: Path, run_id: str) -> dict[str, dict[str, bytes]]:
    """{folder: {name: bytes}} of the reports of `run_id`, top level and per grader id."""
    folders = {"reports": out / "reports",
               "grader": out / "reports" / f"grader={grader_slug(DEFAULT_GRADER_ID)}"}
    return {key: {p.name: p.read_bytes() for p in folder.glob(f"{run_id}*.json")}
            for key, folder in folders.items()}


def _grade(runs: Path, out: Path, *options: str) -> dict:
    result = CliRunner().invoke(app, ["grade", str(runs), "--out", str(out), "--json",
                                      "--workers", "1", *options])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


SAME = "20261112-000021-same"
ONE_PARAGRAPH = {"bindings/writer/summary.md": "One paragraph only.\n"}


def _tagged(uri: Path) -> str:
    return f"{SAME}~{hashlib.sha1(str(uri).encode()).hexdigest()[:8]}.json"


def test_a_run_id_found_again_under_another_prefix_later_keeps_both_reports(tmp_path):
    # `{run_id}.json` belongs to the first run graded with that id; a run with the same id
    # under another prefix, graded in a later grade, gets its own tagged name instead of
    # replacing the first run's report (in the top-level copy and in the grader's folder).
    runs, out = tmp_path / "runs", tmp_path / "out"
    first = write_run(runs / "a", SAME)
    _grade(runs, out)
    before = _reports(out, SAME)
    assert {k: list(v) for k, v in before.items()} == {
        "reports": [f"{SAME}.json"], "grader": [f"{SAME}.json"]}

    second = write_run(runs / "b", SAME, files=ONE_PARAGRAPH)  # graded differently
    assert _grade(runs, out)["graded"] == 1
    after = _reports(out, SAME)
    for folder in after.values():
        assert set(folder) == {f"{SAME}.json", _tagged(second)}
        assert folder[f"{SAME}.json"] == before["reports"][f"{SAME}.json"]
        assert folder[f"{SAME}.json"] != folder[_tagged(second)]

    # The first run changes and is graded again: it keeps its name, the other's is untouched.
    (first / "bindings/writer/tldr.md").write_text("One. Two. Three.\n")
    assert _grade(runs, out)["graded"] == 1
    again = _reports(out, SAME)
    for key, folder in again.items():
        assert set(folder) == {f"{SAME}.json", _tagged(second)}
        assert folder[_tagged(second)] == after[key][_tagged(second)]
        assert folder[f"{SAME}.json"] != after[key][f"{SAME}.json"]


def test_runs_of_one_id_in_batches_of_one_grade_each_keep_their_report(tmp_path):
    runs, out = tmp_path / "runs", tmp_path / "out"
    write_run(runs / "a", SAME)
    second = write_run(runs / "b", SAME, files=ONE_PARAGRAPH)
    assert len(_grade(runs, out, "--batch-size", "1")["batches"]) == 2
    scores = {name: json.loads(text)["overall_score"]
              for name, text in _reports(out, SAME)["grader"].items()}
    by_uri = dict(load(out, "run_scores").select("run_uri", "overall_score").iter_rows())
    assert scores == {f"{SAME}.json": by_uri[str(runs / "a" / SAME)],
                      _tagged(second): by_uri[str(second)]}


@pytest.mark.parametrize("prefixes", [("alpha", "beta"), ("beta", "alpha")])
def test_a_run_refused_and_graded_again_keeps_the_name_its_batch_gave_it(tmp_path, prefixes):
    # Two runs of one id graded in one batch: the batch gave the name by uri tag, the next
    # grades looked for its holder in row order. Once the run with the tagged name was
    # refused (its report removed) and graded again, it took the other run's name, whose
    # report was lost.
    runs, out = tmp_path / "runs", tmp_path / "out"
    folders = [write_run(runs / prefixes[0], SAME),
               write_run(runs / prefixes[1], SAME, files=ONE_PARAGRAPH)]
    _grade(runs, out)
    first = {name: json.loads(text)["overall_score"]
             for name, text in _reports(out, SAME)["reports"].items()}
    tagged = next(f for f in folders if _tagged(f) in first)
    program = tagged / "program.md"
    kept = program.read_bytes()
    program.unlink()
    assert _grade(runs, out)["refused"] == 1
    program.write_bytes(kept)
    assert _grade(runs, out)["graded"] == 1
    for folder in ("reports", "grader"):
        now = {name: json.loads(text)["overall_score"]
               for name, text in _reports(out, SAME)[folder].items()}
        assert now == first, folder


def _one_grade_each(runs: Path, out: Path, first: str = "a", second: str = "b"
                    ) -> tuple[Path, Path]:
    """Two runs of one id, under the prefixes `first` and `second`, graded in that order, one
    grade each (the second is graded differently); returns their folders."""
    one = write_run(runs / first, SAME)
    _grade(runs, out)
    two = write_run(runs / second, SAME, files=ONE_PARAGRAPH)
    _grade(runs, out)
    return one, two


def test_a_compaction_does_not_move_a_report_name_to_another_run(tmp_path):
    # A compaction keeps each run's latest rows, in no set order: here the run that came
    # second (a) ends first in the compacted batch. Its next grade must still not take the
    # name the first run (b) holds.
    runs, out = tmp_path / "runs", tmp_path / "out"
    first, second = _one_grade_each(runs, out, "b", "a")
    (first / "bindings/writer/tldr.md").write_text("One. Two. Three.\n")
    _grade(runs, out)  # b graded again: the latest rows are a's, then b's
    compacted = CliRunner().invoke(app, ["compact", str(out)])
    assert compacted.exit_code == 0, compacted.output
    before = _reports(out, SAME)
    (second / "bindings/writer/tldr.md").write_text("Short.\n")
    assert _grade(runs, out)["graded"] == 1
    after = _reports(out, SAME)
    for key, folder in after.items():
        assert set(folder) == {f"{SAME}.json", _tagged(second)}
        assert folder[f"{SAME}.json"] == before[key][f"{SAME}.json"]  # b's, untouched
        assert folder[_tagged(second)] != before[key][_tagged(second)]  # a's, graded again


def _stopped_before_its_reports(runs: Path, out: Path, monkeypatch) -> None:
    """A grade of `runs` stopped after its batch committed, before its reports were put in
    place."""
    from pipeline.store import ResultStore

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(ResultStore, "_publish_reports", crash)
        result = CliRunner().invoke(app, ["grade", str(runs), "--out", str(out), "--json",
                                          "--workers", "1"])
    assert result.exit_code != 0


def test_reports_a_crash_left_staged_take_the_names_their_batch_chose(tmp_path, monkeypatch):
    # The grade is stopped after its batch committed, before its reports were put in place:
    # the next grade puts them there under the names the batch chose (its marker keeps them),
    # not under names chosen again from what is left staged.
    runs, out = tmp_path / "runs", tmp_path / "out"
    write_run(runs / "a", SAME)
    _grade(runs, out)
    first = _reports(out, SAME)
    second = write_run(runs / "b", SAME, files=ONE_PARAGRAPH)
    _stopped_before_its_reports(runs, out, monkeypatch)
    assert _reports(out, SAME) == first  # committed, its report still staged
    assert _grade(runs, out)["graded"] == 0  # the batch stands; its report is put in place
    for key, folder in _reports(out, SAME).items():
        assert set(folder) == {f"{SAME}.json", _tagged(second)}
        assert folder[f"{SAME}.json"] == first[key][f"{SAME}.json"]


def test_a_run_refused_after_it_was_graded_keeps_no_report(tmp_path):
    # A refusal is never a verdict: a run graded once, then changed so that it is refused,
    # loses the report of its earlier grade (both copies), whichever name it held; the other
    # run of its id keeps its own. Graded again, it takes back the name it held.
    runs, out = tmp_path / "runs", tmp_path / "out"
    first, second = _one_grade_each(runs, out)
    graded = _reports(out, SAME)
    assert {k: set(v) for k, v in graded.items()} == {
        k: {f"{SAME}.json", _tagged(second)} for k in graded}

    (first / "program.md").unlink()
    assert _grade(runs, out)["refusals"] == {"missing-program": 1}
    assert _reports(out, SAME) == {k: {_tagged(second): v[_tagged(second)]}
                                   for k, v in graded.items()}
    (second / "program.md").unlink()
    assert _grade(runs, out)["refusals"] == {"missing-program": 1}  # (a is unchanged)
    assert _reports(out, SAME) == {"reports": {}, "grader": {}}
    assert connect(str(out)).sql(  # the views: each run's latest grade
        "select status, count(*) from runs group by all").fetchall() == [("refused", 2)]

    write_run(runs / "a", SAME)  # program.md is back: a is graded again, under its name
    assert _grade(runs, out)["graded"] == 1
    assert _reports(out, SAME) == {k: {f"{SAME}.json": v[f"{SAME}.json"]}
                                   for k, v in graded.items()}


def test_a_ledger_run_id_naming_folders_names_one_report_inside_the_results(tmp_path):
    # A ledger's runId is any string. Named after it, the report of `/../../…/x` was written
    # wherever the path climbed to, outside the results; that of `a/b` went to a folder
    # below `reports/` and was lost. Each is named with its `/` made `_`, followed by `~` and
    # 12 hex digits of the whole id's SHA-1 (no other id can take that name).
    runs, out = tmp_path / "runs", tmp_path / "deep" / "er" / "out"
    escape = "/" + "../" * 12 + str(tmp_path.relative_to("/")) + "/escaped"
    ids = {"a": escape, "b": "team/run/7", "c": "..", "d": "plain", "e": "nul\0byte"}
    for folder, run_id in ids.items():
        evaluation(run_id, "evals.sender-name/v1", ["eval-sender"]).write(runs / folder)
    assert _grade(runs, out)["graded"] == 5
    assert not list(tmp_path.glob("escaped*"))  # nothing written outside the results

    def named(run_id: str) -> str:
        if "/" not in run_id and "\0" not in run_id:
            return f"{run_id}.json"
        digest = hashlib.sha1(run_id.encode()).hexdigest()[:12]
        return f"{run_id.replace('/', '_').replace(chr(0), '_')}~{digest}.json"

    slug = "grader=moltzap.sender-name.grader-v1"
    assert sorted(str(p.relative_to(out / "reports")) for p in (out / "reports").rglob("*")
                  if p.is_file()) == sorted(
        name for run_id in ids.values() for name in (named(run_id), f"{slug}/{named(run_id)}"))
    for run_id in ids.values():
        assert json.loads((out / "reports" / named(run_id)).read_text())["run_id"] == run_id


def test_a_ledger_refused_after_it_was_graded_keeps_its_ledger_graders_copy(tmp_path):
    # A refused ledger carries the batch's grader id (the contract grader's): its top-level
    # report goes, its ledger grader's copy stays (a record of that grading), and the views
    # show the refusal alone (v19 showed the grading's verdicts beside it: a refused run with
    # a verdict, counted twice in `runs`). Mended, it is graded and shown graded again.
    runs, out = tmp_path / "runs", tmp_path / "out"
    shutil.copytree(SAMPLE_RUNS / "moltzap-evals", runs)
    name = "20261112-091500-pwguard.json"
    copy = out / "reports" / "grader=moltzap.password-guard.grader-v1" / name
    _grade(runs, out)
    assert (out / "reports" / name).exists() and copy.exists()
    completion = runs / "ledgers" / name.removesuffix(".json") / "completion.json"
    sealed = completion.read_bytes()
    completion.unlink()
    assert _grade(runs, out)["refusals"] == {"ledger-incomplete": 1}
    assert not (out / "reports" / name).exists() and copy.exists()

    def shown() -> list[tuple]:
        with connect(str(out)) as con:
            return [con.sql("select grader_id, status from runs where run_id = "
                            "'20261112-091500-pwguard' order by 1").fetchall(),
                    con.sql("select count(*) from run_scores where run_id = "
                            "'20261112-091500-pwguard'").fetchall()[0][0]]

    assert shown() == [[(DEFAULT_GRADER_ID, "refused")], 0]
    (runs / "ledgers" / name.removesuffix(".json") / "completion.json").write_bytes(sealed)
    assert _grade(runs, out)["graded"] == 1
    assert shown() == [[("moltzap.password-guard.grader/v1", "graded")], 1]


def test_a_refused_run_does_not_hold_the_report_name_of_its_id(tmp_path):
    # Refused and graded runs of one id in one batch: the graded run takes `{run_id}.json`
    # and keeps it when graded again. (The refused run, committed first, used to be taken for
    # the name's holder by the next grade: the graded run's new report went to a tagged name,
    # and its old one stayed as `{run_id}.json`.)
    runs, out = tmp_path / "runs", tmp_path / "out"
    write_run(runs / "a", SAME, drop=("program.md",))
    second = write_run(runs / "b", SAME, files=ONE_PARAGRAPH)
    assert _grade(runs, out)["refused"] == 1
    before = _reports(out, SAME)
    assert {k: list(v) for k, v in before.items()} == {"reports": [f"{SAME}.json"],
                                                       "grader": [f"{SAME}.json"]}
    (second / "bindings/writer/tldr.md").write_text("One. Two. Three.\n")
    assert _grade(runs, out)["graded"] == 1
    after = _reports(out, SAME)
    for key, folder in after.items():
        assert list(folder) == [f"{SAME}.json"]
        assert folder[f"{SAME}.json"] != before[key][f"{SAME}.json"]


def test_a_crash_after_the_marker_still_removes_a_refused_runs_report(tmp_path, monkeypatch):
    runs, out = tmp_path / "runs", tmp_path / "out"
    run = write_run(runs / "a", SAME)
    _grade(runs, out)
    (run / "program.md").unlink()
    _stopped_before_its_reports(runs, out, monkeypatch)
    assert [list(v) for v in _reports(out, SAME).values()] == [[f"{SAME}.json"]] * 2
    assert _grade(runs, out)["skipped"] == 1  # the batch stands, and is finished
    assert _reports(out, SAME) == {"reports": {}, "grader": {}}
    assert not any((out / "_staging").iterdir())


def test_repeated_service_and_program_named_like_a_service(corpus):
    base, out, *_ = corpus
    services = load(out, "services")
    verdicts = load(out, "clause_verdicts")
    assert not verdicts.select("run_uri", "clause_id").is_duplicated().any()
    uri = str(base / "runs" / "20261112-000022-repeated-service")
    assert services.filter((pl.col("run_uri") == uri)
                           & (pl.col("service") == "writer")).height == 1
    assert verdicts.filter((pl.col("run_uri") == uri)
                           & (pl.col("service") == "writer")).height == 2
    uri = str(base / "runs" / "20261112-000023-program-named-writer")
    named = services.filter(pl.col("run_uri") == uri).select("service", "kind").rows()
    assert ("writer", "service") in named and ("writer (program)", "program") in named


def test_symlinked_runs_root_is_graded(tmp_path):
    # The root itself may be a link (a mounted share); links inside it still may not leave it.
    write_run(tmp_path / "real", "20261112-000030-linked-root")
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    result = CliRunner().invoke(app, ["grade", str(tmp_path / "alias"), "--out",
                                      str(tmp_path / "r"), "--json", "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["graded"] == 1
    assert os.path.islink(tmp_path / "alias")


def _grade_in_time(runs: Path, out: Path, seconds: float = 120) -> dict:
    """The `--json` summary of `rungrade grade RUNS --out OUT`, run in a session of its own
    and killed whole (workers too) if it has not finished in `seconds`: opening a named pipe
    for reading waits for a writer, so a grade that opened one would never end."""
    proc = subprocess.Popen([RUNGRADE, "grade", str(runs), "--out", str(out), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"the grade did not finish in {seconds} s: it opened a named pipe")
    assert proc.returncode == 0, stderr
    return json.loads(stdout)


# run folder: the path of the run made a named pipe
PIPES = {"20261112-000040-pipe-program": "program.md", "20261112-000041-pipe-state": "state.md",
         "20261112-000042-pipe-output": "bindings/writer/summary.md",
         "20261112-000043-pipe-contract": "services/writer.md"}


def test_special_files_a_run_needs_are_refused_by_name_and_never_opened(tmp_path):
    root = tmp_path / "runs"
    for run_id, rel in PIPES.items():
        path = write_run(root, run_id)
        (path / rel).unlink()
        os.mkfifo(path / rel)
    # What the grader does not read may be anything: a pipe among the caller's inputs, a
    # socket in the workspace (made with mknod, which needs no privilege for a socket).
    path = write_run(root, "20261112-000044-unread-specials")
    (path / "bindings/caller/question.md").unlink()
    os.mkfifo(path / "bindings/caller/question.md")
    (path / "workspace/writer").mkdir(parents=True)
    os.mknod(path / "workspace/writer/agent.sock", 0o600 | stat.S_IFSOCK)
    ledger = evaluation("run-20261112-pipe", "evals.sender-name/v1", ["eval-sender"]).write(
        root / "evals" / "run-20261112-pipe", omit=["records.ndjson"])
    os.mkfifo(ledger / "records.ndjson")

    summary = _grade_in_time(root, tmp_path / "out")
    assert (summary["found"], summary["graded"], summary["refused"]) == (6, 1, 5)
    refusals = by_folder(tmp_path, load(tmp_path / "out", "refusals"))
    never = "is a named pipe, not a file: it is never opened"
    assert {rel: (row["reason"], row["detail"]) for rel, row in refusals.items()} == {
        **{run_id: ("unreadable-file", f"{rel} {never}") for run_id, rel in PIPES.items()},
        "evals/run-20261112-pipe": ("ledger-unreadable-artifact", f"records.ndjson {never}"),
    }
    graded = load(tmp_path / "out", "runs").filter(pl.col("status") == "graded")
    assert graded["run_id"].to_list() == ["20261112-000044-unread-specials"]

    # The runs are known again: nothing is graded twice, and no pipe is opened.
    again = _grade_in_time(root, tmp_path / "out")
    assert (again["found"], again["skipped"]) == (6, 6)


@pytest.mark.parametrize("opens", OPENS)
def test_a_file_swapped_for_a_named_pipe_after_listing_is_read_without_waiting(
        tmp_path, opens, monkeypatch):
    # Between the listing of a run and its reading, an output is replaced by a named pipe
    # (with no writer): its read ends at once, as an empty file, instead of waiting for ever.
    from pipeline.grade import _read_shard

    _with_or_without_openat2(opens, monkeypatch)
    path = write_run(tmp_path / "runs", "20261112-000045-swapped")
    bucket = Bucket(str(tmp_path / "runs"))
    ref = bucket.list_run(next(bucket.discover()))
    (path / "bindings/writer/tldr.md").unlink()
    os.mkfifo(path / "bindings/writer/tldr.md")
    read = []
    reader = threading.Thread(target=lambda: read.append(_read_shard(
        (str(tmp_path / "runs"), None, [ref], DEFAULT_BINDING_CAP, ()))), daemon=True)
    reader.start()
    reader.join(30)
    assert read, "the read waited on the named pipe"
    (rows,) = read
    assert rows.refusals == []
    assert {b["name"]: b["text"] for b in rows.bindings if b["service"] == "writer"} == {
        "summary": BINDINGS["bindings/writer/summary.md"], "tldr": "",
        "report": BINDINGS["bindings/writer/report.md"]}
