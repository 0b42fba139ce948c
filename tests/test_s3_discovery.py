"""Discovering runs on S3 in one listing.

A ledger folder is told by a marker (`completion.json`, `records.ndjson`) that may sort after
its other keys, pages later. A key must not be placed before the folders above it are known to
be ledgers or not: the listing decides a folder once it has passed its markers' place, and a
folder with more keys than the grader holds back before that place is asked about directly
(HEAD). Whatever the layout, the result must be what grouping the complete listing gives, from
one listing of the keys.
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

import pytest
from run_folders import write_run
from test_s3_faults import grade, s3, seed  # noqa: F401  (the `s3` fixture)

from pipeline.catalog import connect
from pipeline.sources import bucket as bucket_module
from pipeline.sources.bucket import (
    Bucket,
    _Ledgers,
    _PageSizer,
    _timestamp,
    group_runs,
    iter_runs,
)


def graded(runs: str, out: Path, endpoint: str) -> dict:
    """The JSON summary of a grade of `runs` that exited 0."""
    done = grade(runs, out, endpoint)
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


def described(refs) -> list[tuple[str, str, list[str]]]:
    return [(r.uri, r.source, sorted(r.files)) for r in refs]


def test_a_marker_pages_after_its_folder_still_makes_the_folder_a_ledger(s3, tmp_path: Path):  # noqa: F811
    local = tmp_path / "local"
    ledger = local / "aaa-eval"
    for i in range(1100):  # the ledger's own keys fill the first page of the listing
        (ledger / "artifacts").mkdir(parents=True, exist_ok=True)
        (ledger / "artifacts" / f"{i:04d}.txt").write_text("turn\n")
    write_run(ledger, "20261112-000000-inside")  # named like a run, but inside the ledger
    for name in ("completion.json", "manifest.json", "records.ndjson"):
        (ledger / name).write_text("{}\n")
    write_run(local / "prose", "20261112-000001-after")
    write_run(local, "20261112-000002-top")
    bucket = Bucket(seed(s3, local), s3.endpoint)

    found = by_uri(bucket.discover())
    assert described(found) == described(group_runs(bucket, bucket.walk()))
    assert [(r.uri.rsplit("/", 1)[-1], r.source) for r in found] == [
        ("20261112-000002-top", "prose"), ("aaa-eval", "ledger"),
        ("20261112-000001-after", "prose")]
    (eval_ref,) = [r for r in found if r.source == "ledger"]
    assert "20261112-000000-inside/program.md" in eval_ref.files
    assert len(eval_ref.files) == 1100 + 3 + len(found[0].files)


def test_folder_markers_are_no_files_of_a_run(s3, tmp_path: Path):  # noqa: F811
    # The S3 console, sync tools and Hadoop write a zero-byte key ending in "/" for a folder
    # made. Read as files, the run folder's own marker made every run "a file, not a folder"
    # (refused missing-program), and a marker with nothing under it a run of its own.
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    local = tmp_path / "local"
    run = write_run(local, "20261112-000001-marked")
    runs = seed(s3, local)
    name = runs.split("/")[2]
    for key in ("runs/", "runs/20261112-000001-marked/", "runs/20261112-000001-marked/bindings/",
                "runs/20261112-000002-made/"):
        s3_backends[DEFAULT_ACCOUNT_ID]["aws"].put_object(name, key, b"")
    found = list(Bucket(runs, s3.endpoint).discover())
    assert [(r.run_id, sorted(r.files)) for r in found] == [
        ("20261112-000001-marked",
         sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_file()))]
    summary = graded(runs, tmp_path / "results", s3.endpoint)
    assert (summary["found"], summary["graded"], summary["refused"]) == (1, 1, 0)


def test_a_run_under_a_key_with_an_empty_folder_name_is_read_back_under_it(
        s3, tmp_path: Path):  # noqa: F811
    # "runs//RUN/..." (a prefix joined with one '/' too many): the run was found under
    # "runs/RUN", read back there, found no file, and refused
    run = write_run(tmp_path / "local", "20261112-000001-doubled")
    runs = seed(s3, tmp_path / "local", under="runs//")
    name = runs.split("/")[2]
    (found,) = Bucket(runs, s3.endpoint).discover()
    assert found.uri == f"s3://{name}/runs//{run.name}" and found.run_id == run.name
    summary = graded(runs, tmp_path / "results", s3.endpoint)
    assert (summary["found"], summary["graded"], summary["refused"]) == (1, 1, 0)


def test_files_under_keys_with_an_empty_folder_name_inside_a_run_are_read(
        s3, tmp_path: Path):  # noqa: F811
    # `RUN//program.md`, `RUN/bindings//writer/report.md` (a writer that joined a path with one
    # '/' too many): the run knew them as "/program.md" and "bindings//writer/…", found no
    # program.md and was refused missing-program, night after night
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    run = write_run(tmp_path / "local", "20261112-000002-inner")
    runs = seed(s3, tmp_path / "local")
    name = runs.split("/")[2]
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    doubled = {"program.md": "/program.md",
               "bindings/writer/report.md": "bindings//writer/report.md"}
    for rel, key in doubled.items():
        backend.put_object(name, f"runs/{run.name}/{key}", (run / rel).read_bytes())
        backend.delete_object(name, f"runs/{run.name}/{rel}")
    (found,) = Bucket(runs, s3.endpoint).discover()
    assert set(doubled) <= set(found.files) and found.keys == doubled
    summary = graded(runs, tmp_path / "results", s3.endpoint)
    assert (summary["graded"], summary["refused"]) == (1, 0)
    (uri,), = connect(str(tmp_path / "results")).sql(
        "select uri from bindings where name = 'report'").fetchall()
    assert uri == f"s3://{name}/runs/{run.name}/bindings//writer/report.md"
    again = graded(runs, tmp_path / "results", s3.endpoint)
    assert (again["skipped"], again["graded"]) == (1, 0)
    # the key without the empty name wins where both name one file
    backend.put_object(name, f"runs/{run.name}/program.md", (run / "program.md").read_bytes())
    (found,) = Bucket(runs, s3.endpoint).discover()
    assert found.keys == {"bindings/writer/report.md": "bindings//writer/report.md"}


def by_uri(refs) -> list:
    return sorted(refs, key=lambda r: r.uri)


def requests(server, method: str, query: str = "") -> list[str]:
    return [r for r in server.requests if r.startswith(f"{method} ") and query in r]


def test_runs_are_found_in_one_listing_and_big_folders_are_asked_about_once(
        s3, tmp_path: Path, monkeypatch):  # noqa: F811
    monkeypatch.setattr(_Ledgers, "HELD_KEYS", 40)  # a program's runs hold more keys than this
    local = tmp_path / "local"
    for program in ("alpha", "beta"):
        for i in range(12):
            write_run(local / program / ".prose" / "runs", f"20261112-{i:06d}-{program}")
    evals = local / "evals"
    for i in range(8):  # ledgers under a folder that is not one, each small
        for name in ("completion.json", "records.ndjson", "notes.md"):
            (evals / f"scenario-{i}").mkdir(parents=True, exist_ok=True)
            (evals / f"scenario-{i}" / name).write_text("{}\n")
    big = local / "zeta-ledger"  # a ledger whose 60 other keys come before its markers
    for i in range(60):
        (big / "artifacts").mkdir(parents=True, exist_ok=True)
        (big / "artifacts" / f"{i:03d}.txt").write_text("turn\n")
    write_run(big, "20261112-000099-inside")
    (big / "records.ndjson").write_text("{}\n")
    bucket = Bucket(seed(s3, local), s3.endpoint)
    listing = bucket.walk()
    s3.requests.clear()

    ledgers = _Ledgers(bucket)
    found = list(iter_runs(bucket, ledgers.decided(bucket._iter_s3_files()), ledgers.found))

    assert described(found) == described(group_runs(bucket, listing))
    assert [r.path for r in found] == sorted(r.path for r in found)
    assert len(found) == 2 * 12 + 8 + 1 and {r.source for r in found} == {"prose", "ledger"}
    assert len(requests(s3, "GET", "list-type=2")) == 1  # 400-odd keys: one page, listed once
    # asked about: only folders above runs whose markers' place lies beyond the held keys
    assert set(ledgers.asked) <= {"alpha", "alpha/.prose", "alpha/.prose/runs", "beta",
                                  "beta/.prose", "beta/.prose/runs", "zeta-ledger"}
    assert ledgers.asked["zeta-ledger"] is True and ledgers.asked["alpha"] is False
    assert len(requests(s3, "HEAD")) == ledgers.probes <= 2 * len(ledgers.asked)

    # discover() lists each top-level folder on its own (several at once), after one listing
    # of the root's own entries: every key is still listed once
    s3.requests.clear()
    runs = list(bucket.discover())
    assert described(by_uri(runs)) == described(found)
    lists = requests(s3, "GET", "list-type=2")
    assert len(lists) == 1 + 4 and sum("delimiter=%2F" in r for r in lists) == 1
    assert sorted(r.split("prefix=runs%2F", 1)[1].split("&")[0] for r in lists
                  if "delimiter" not in r) == ["alpha%2F", "beta%2F", "evals%2F",
                                               "zeta-ledger%2F"]
    for top in ("alpha", "beta", "evals"):  # within a top-level folder, in path order
        paths = [r.path for r in runs if r.path.split("/")[2] == top]
        assert paths == sorted(paths) and paths


LAYOUT_NAMES = ["20261112-000001-a", "20261112-000002-b", "prog", ".prose", "runs", "evals",
                "x-1", "zz"]


def random_layout(root: Path, rng: random.Random) -> None:
    """Folders up to four deep, named like runs or not, with markers, other files, and files
    named like runs, at random."""
    for _ in range(rng.randint(5, 40)):
        depth = rng.randint(1, 4)
        parts = [rng.choice(LAYOUT_NAMES) for _ in range(depth)]
        last = rng.choice(["records.ndjson", "completion.json", "program.md", "a.txt",
                           "20261112-000003-f", "manifest.json"])
        path = root.joinpath(*parts, last)
        if any(p.is_file() for p in [*path.parents, path] if p != path or p.is_dir()) or \
                path.is_dir():
            continue  # a name already taken by a file (or a folder)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")


@pytest.mark.parametrize("held, ranges", [(1, False), (4000, False), (4000, True)])
def test_random_layouts_are_grouped_as_the_complete_listing_groups_them(
        s3, tmp_path: Path, monkeypatch, held, ranges):  # noqa: F811
    monkeypatch.setattr(_Ledgers, "HELD_KEYS", held)
    if ranges:  # every level of folders listed in ranges (of 1 or 2 folders), 3 keys a page
        monkeypatch.setattr(bucket_module, "SIDE_BY_SIDE", 0)
        monkeypatch.setattr(bucket_module, "PAGE_KEYS", 3)
    for seed_value in range(12):
        if ranges:
            monkeypatch.setattr(bucket_module, "FOLDERS_PER_RANGE", 1 + seed_value % 2)
        local = tmp_path / f"local-{held}-{ranges}-{seed_value}"
        # every other layout sits in a single folder, which discovery looks into
        random_layout(local / "outer" if seed_value % 2 else local, random.Random(seed_value))
        bucket = Bucket(seed(s3, local), s3.endpoint)
        expected = described(group_runs(bucket, bucket.walk()))
        assert described(by_uri(bucket.discover())) == expected, seed_value


def test_a_discovery_left_early_stops_its_listing_threads(s3, tmp_path: Path):  # noqa: F811
    local = tmp_path / "local"
    for program in ("alpha", "beta", "gamma"):
        for i in range(5):
            write_run(local / program, f"20261112-{i:06d}-{program}")
    bucket = Bucket(seed(s3, local), s3.endpoint)
    runs = bucket.discover()
    assert next(runs).run_id.startswith("20261112-")
    runs.close()
    deadline = time.monotonic() + 10
    while any(t.name.startswith("rungrade-ahead") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "listing threads still running"
        time.sleep(0.05)


def test_a_root_holding_one_folder_is_looked_into(s3, tmp_path: Path, monkeypatch):  # noqa: F811
    monkeypatch.setattr(_Ledgers, "HELD_KEYS", 5)  # program folders are asked about (HEAD)
    local = tmp_path / "local"
    inner = local / "outer" / "inner"
    for program in ("p1", "p2", "p3"):
        for i in range(2):
            write_run(inner / program / ".prose" / "runs", f"20261112-{i:06d}-{program}")
    (inner / "20261112-000009-file").write_text("a file named like a run is a run\n")
    (inner / "readme.md").write_text("not a run\n")
    bucket = Bucket(seed(s3, local), s3.endpoint)
    s3.requests.clear()

    runs = by_uri(bucket.discover())

    assert described(runs) == described(group_runs(bucket, bucket.walk()))
    assert len(runs) == 3 * 2 + 1
    lists = requests(s3, "GET", "list-type=2")
    assert sum("delimiter=%2F" in r for r in lists) == 3  # the root, outer/, outer/inner/
    flat = sorted(r.split("prefix=", 1)[1].split("&")[0] for r in lists if "delimiter" not in r)
    assert flat == [f"runs%2Fouter%2Finner%2F{p}%2F" for p in ("p1", "p2", "p3")]
    asked = {r.split(" ", 1)[1].rsplit("/", 1)[0] for r in requests(s3, "HEAD")}
    assert asked and all(a.split("/")[-1] in ("p1", "p2", "p3", ".prose", "runs")
                         for a in asked), asked  # never outer/ or inner/: known not ledgers


@pytest.mark.parametrize("layout", ["run folders", "a ledger"])
def test_a_root_holding_one_folder_of_few_runs_or_a_ledger_is_one_listing(
        s3, tmp_path: Path, layout):  # noqa: F811
    local = tmp_path / "local"
    for i in range(3):  # three run folders: one range of folders (a ledger: one run)
        write_run(local / "only", f"20261112-{i:06d}-x")
    if layout == "a ledger":
        (local / "only" / "records.ndjson").write_text("{}\n")
    bucket = Bucket(seed(s3, local), s3.endpoint)
    s3.requests.clear()

    runs = by_uri(bucket.discover())

    assert described(runs) == described(group_runs(bucket, bucket.walk()))
    assert len(runs) == (1 if layout == "a ledger" else 3)
    flat = [r for r in requests(s3, "GET", "list-type=2") if "delimiter" not in r]
    assert len(flat) == 1 and "prefix=runs%2Fonly%2F" in flat[0]


@pytest.mark.parametrize("per_range", [16, 2])
def test_a_root_of_run_folders_is_listed_in_ranges_of_folders(
        s3, tmp_path: Path, monkeypatch, per_range):  # noqa: F811
    # a root at a program's runs: listed side by side, each run would cost a request
    monkeypatch.setattr(bucket_module, "FOLDERS_PER_RANGE", per_range)
    local = tmp_path / "local"
    for i in range(7):
        write_run(local, f"20261112-{i:06d}-run")
    # sorts just before `…-000003-run/`, whose range starts after `…-000003-run`
    write_run(local, "20261112-000003-run.old")
    (local / "notes" / "a.md").parent.mkdir()
    (local / "notes" / "a.md").write_text("not a run\n")
    (local / "20261112-000009-file").write_text("a file named like a run is a run\n")
    bucket = Bucket(seed(s3, local), s3.endpoint)
    s3.requests.clear()

    runs = list(bucket.discover())

    assert described(by_uri(runs)) == described(group_runs(bucket, bucket.walk()))
    assert len(runs) == 8 + 1 == len({r.uri for r in runs})
    lists = requests(s3, "GET", "list-type=2")
    assert sum("delimiter=%2F" in r for r in lists) == 1  # the root's entries, then
    flat = [r for r in lists if "delimiter" not in r]
    # one request per range of folders (9 folders), each asking for about what it holds
    assert len(flat) == -(-9 // per_range)
    assert all("start-after=" in r for r in flat)
    # at most a guess of 32 keys a folder (less once ranges are listed): far from 1,000 keys
    guess = int(32 * (min(9, per_range) + 1) * 1.25) + 10
    sizes = [int(r.split("max-keys=", 1)[1].split("&")[0]) for r in flat]
    assert all(bucket_module.PAGE_KEYS_LEAST <= size <= guess for size in sizes), sizes


def test_ranges_ask_for_the_keys_their_folders_hold_by_what_was_listed_before():
    sizer = _PageSizer()
    assert sizer.page(3) == 32 * 4 * 1.25 + 10  # the first guess: 32 keys a folder
    sizer.learn(keys=200, folders=20)  # ledgers of a few keys each
    assert sizer.page(3) == bucket_module.PAGE_KEYS_LEAST  # (10 * 4 * 1.25 + 10: too few)
    assert sizer.page(30) == int(10 * 31 * 1.25) + 10
    sizer.learn(keys=99_800, folders=10)  # two big programs
    assert sizer.page(3) == bucket_module.PAGE_KEYS  # never more than a page holds


def test_a_root_of_programs_and_a_stray_run_lists_the_folders_side_by_side(
        s3, tmp_path: Path):  # noqa: F811
    local = tmp_path / "local"
    for program in ("alpha", "beta"):
        write_run(local / program / ".prose" / "runs", f"20261112-000001-{program}")
    write_run(local, "20261112-000002-stray")
    bucket = Bucket(seed(s3, local), s3.endpoint)
    s3.requests.clear()

    runs = by_uri(bucket.discover())

    assert described(runs) == described(group_runs(bucket, bucket.walk()))
    flat = [r for r in requests(s3, "GET", "list-type=2") if "delimiter" not in r]
    assert len(flat) == 3  # alpha/, beta/ and the run folder, each on its own


def test_many_folders_not_named_like_runs_are_listed_in_ranges(
        s3, tmp_path: Path, monkeypatch):  # noqa: F811
    # moltzap ledgers may have any name: a root of many small ones is not a request each
    monkeypatch.setattr(bucket_module, "SIDE_BY_SIDE", 3)
    monkeypatch.setattr(bucket_module, "FOLDERS_PER_RANGE", 2)
    local = tmp_path / "local"
    for i in range(7):
        for name in ("completion.json", "manifest.json", "records.ndjson"):
            (local / f"eval-{i}").mkdir(parents=True, exist_ok=True)
            (local / f"eval-{i}" / name).write_text("{}\n")
    bucket = Bucket(seed(s3, local), s3.endpoint)
    s3.requests.clear()

    runs = by_uri(bucket.discover())

    assert described(runs) == described(group_runs(bucket, bucket.walk()))
    assert [r.source for r in runs] == ["ledger"] * 7
    flat = [r for r in requests(s3, "GET", "list-type=2") if "delimiter" not in r]
    assert len(flat) == 4  # ranges of two folders (seven: 2 + 2 + 2 + 1), not seven listings
    assert not requests(s3, "HEAD")  # each ledger's markers are listed within its range


@pytest.mark.parametrize("text", ["2026-11-12T03:15:02.000Z", "2026-11-12T03:15:02Z",
                                  "2026-11-12T03:15:02.123456+02:00", "2026-11-12T03:15:02",
                                  "Thu, 12 Nov 2026 03:15:02 GMT", "1794458102", "2026-11-12"])
def test_timestamps_are_read_as_botocore_reads_them(text):
    from botocore.utils import parse_timestamp

    assert _timestamp(text) == parse_timestamp(text)
    assert _timestamp(text).timestamp() == parse_timestamp(text).timestamp()


def test_listed_times_are_those_a_plain_client_reads(s3, tmp_path: Path):  # noqa: F811
    import boto3

    local = tmp_path / "local"
    write_run(local, "20261112-000000-run")
    bucket = Bucket(seed(s3, local), s3.endpoint)
    name, prefix = bucket.root.split("/", 1)
    plain = boto3.client("s3", endpoint_url=s3.endpoint)
    expected = {f"{name}/{item['Key']}": item["LastModified"].timestamp()
                for item in plain.list_objects_v2(Bucket=name, Prefix=prefix)["Contents"]}
    (run,) = bucket.discover()
    assert {f"{run.path}/{rel}": info.mtime for rel, info in run.files.items()} == expected
