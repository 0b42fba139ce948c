"""Reading runs from S3 ahead of time: the files a window of runs will read are fetched at once.

The server is moto's S3 on loopback, recording every request it serves
(tests/s3_faults_server.py), so the tests see which reads cost a round trip and which were
answered from what `Bucket.prefetch` fetched.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from run_folders import write_run
from test_mixed_sources import write_prose_run
from test_s3_faults import s3, seed  # noqa: F401  (the `s3` fixture)

from pipeline.grade import PREFETCH_RUNS, read_runs
from pipeline.sources.bucket import Bucket
from pipeline.sources.prose import CONTRACT_CAP, DEFAULT_BINDING_CAP, files_read, read_run


class RecordingBucket(Bucket):
    """A local bucket that notes every path its readers read."""

    def __init__(self, uri: str):
        super().__init__(uri)
        self.read_paths: list[str] = []

    def read(self, path: str, cap: int):
        self.read_paths.append(path)
        return super().read(path, cap)


def gets(server) -> list[str]:
    """The object reads the server has served (not listings, not the bucket's location)."""
    return [r for r in server.requests if r.startswith("GET ") and "/runs/" in r]


def test_files_read_names_every_file_the_reader_reads_and_nothing_it_skips(tmp_path: Path):
    root = tmp_path / "runs"
    write_run(root, "20261112-000001-a", files={
        "workspace/writer/notes.md": "scratch\n", "workspace/writer/__error.md": "# Error\n",
        "services/extra.md": "# extra\n", "README.md": "not part of the run\n"})
    write_run(root, "20261112-000002-b", drop=("state.md",))  # refused: no log
    bucket = RecordingBucket(str(root))
    for ref in bucket.discover():
        bucket.list_run(ref)
        wanted = dict(files_read(ref))
        bucket.read_paths.clear()
        read_run(bucket, ref)
        assert {p[len(ref.path) + 1:] for p in bucket.read_paths} <= set(wanted), ref.run_id
        assert {"program.md", "manifest.md", "services/researcher.md",
                "bindings/writer/report.md"} <= set(wanted)
        assert not {"bindings/caller/question.md", "workspace/writer/notes.md",
                    "README.md"} & set(wanted)
        assert (wanted["program.md"], wanted["bindings/writer/report.md"]) == (
            CONTRACT_CAP, DEFAULT_BINDING_CAP)
    # the complete run reads every file named (the extra snapshot too: a snapshot the
    # manifest does not wire is read to see whether it is one more service)
    full = next(r for r in bucket.discover() if r.run_id.endswith("-a"))
    bucket.list_run(full)
    bucket.read_paths.clear()
    read_run(bucket, full)
    assert set(dict(files_read(full))) == {p[len(full.path) + 1:] for p in bucket.read_paths}


@pytest.mark.parametrize("forme", [False, True])
def test_files_read_covers_the_era_b_layout(tmp_path: Path, forme: bool):
    root = tmp_path / "runs"
    write_prose_run(root, "20261115-091200-b", era="B", forme=forme)
    bucket = RecordingBucket(str(root))
    (ref,) = bucket.discover()
    bucket.list_run(ref)
    read_run(bucket, ref)
    read = {p[len(ref.path) + 1:] for p in bucket.read_paths}
    assert read == set(dict(files_read(ref)))
    assert {"root.prose.md", "vm.log.md", "sources/tagger.prose.md",
            "forme.manifest.json" if forme else "manifest.run.md"} <= read


def test_prefetched_files_are_read_from_memory_once(s3, tmp_path: Path):  # noqa: F811
    local = tmp_path / "local"
    write_run(local, "20261112-000001-pf")
    bucket = Bucket(seed(s3, local), s3.endpoint)
    (ref,) = bucket.discover()
    wanted = [(f"{ref.path}/{rel}", cap) for rel, cap in files_read(ref, binding_cap=16)]
    bucket.prefetch(wanted)
    assert len(gets(s3)) == len(wanted)
    served = len(s3.requests)
    for path, cap in wanted:
        data, truncated = bucket.read(path, cap)
        whole = (local / path.split("/runs/", 1)[1]).read_bytes()
        assert (data, truncated) == (whole[:cap], len(whole) > cap)
    assert len(s3.requests) == served  # every read answered from memory

    path, cap = next((p, c) for p, c in wanted if "/bindings/writer/report.md" in p)
    assert bucket.read(path, cap)[1]  # read again: fetched again, still cut at the cap
    assert len(gets(s3)) == len(wanted) + 1
    bucket.prefetch([(path, 16)])
    data, truncated = bucket.read(path, 1 << 10)  # a larger cap than fetched: fetched anew
    assert not truncated and data.startswith(b"# Brief")
    assert len(gets(s3)) == len(wanted) + 3
    bucket.prefetch([(path, 16)])
    bucket.prefetch([])  # forgets what nobody read
    bucket.read(path, 16)
    assert len(gets(s3)) == len(wanted) + 5


def test_files_read_together_are_read_by_their_very_names(s3, tmp_path: Path):  # noqa: F811
    # A run folder may be named with `*`, `?` or `[`: files not fetched ahead are fetched
    # together by their names, never as patterns (`x-[ab]` is no folder `x-a` or `x-b`).
    local = tmp_path / "local"
    names = ("x-a", "x-b", "x-[ab]", "x-*", "x-?")
    for name in names:
        (local / name).mkdir(parents=True)
        (local / name / "f.md").write_text(f"the file of {name}\n")
    root = seed(s3, local)
    bucket = Bucket(root, s3.endpoint)
    paths = {f"{bucket.root}/{name}/f.md": (f"the file of {name}\n".encode(), False)
             for name in names}
    served = len(s3.requests)
    for path, read in paths.items():
        assert bucket.read_many([path], 1 << 10) == {path: read}
    assert len(s3.requests) == served + len(paths)  # one request each: no listing, no more
    assert bucket.read_many(list(paths), 1 << 10) == paths


def test_reading_a_shard_from_s3_reads_each_file_once_and_as_locally(s3, tmp_path: Path):  # noqa: F811
    local = tmp_path / "local"
    runs = PREFETCH_RUNS + 3  # two windows
    for i in range(runs):
        write_run(local, f"20261112-{i:06d}-w", drop=("state.md",) if i == 5 else ())
    uri = seed(s3, local)
    remote = list(Bucket(uri, s3.endpoint).discover())
    before = len(gets(s3))
    from_s3 = read_runs(uri, remote, endpoint_url=s3.endpoint, binding_cap=20)
    fetched = gets(s3)[before:]
    assert len(fetched) == len(set(fetched))  # no file fetched twice
    assert not [r for r in fetched if "/caller/" in r]

    refs = list(Bucket(str(local)).discover())
    from_disk = read_runs(str(local), refs, binding_cap=20)
    def keyed(rows, *cols):
        return sorted(tuple(row[c] for c in cols) for row in rows)
    for table, cols in [("bindings", ("run_id", "service", "name", "text", "sha256",
                                      "truncated", "size_bytes")),
                        ("clauses", ("run_id", "service", "clause_id", "text")),
                        ("refusals", ("run_id", "reason")), ("runs", ("run_id", "status"))]:
        assert keyed(getattr(from_s3, table), *cols) == keyed(getattr(from_disk, table), *cols)
    assert sum(b["truncated"] for b in from_s3.bindings) > 0
    assert [r["reason"] for r in from_s3.refusals] == ["incomplete-run"]
