"""Discovering runs on S3: the ledger pass runs ahead of the grouping listing, never behind it.

A ledger folder is told by a marker (`completion.json`, `records.ndjson`) that may sort after
its other keys, pages later. The grouping listing must not place a key before the ledger pass
has listed past every marker that could claim it; the result must be what grouping the
complete listing gives.
"""

from __future__ import annotations

from pathlib import Path

from run_folders import write_run
from test_s3_faults import s3, seed  # noqa: F401  (the `s3` fixture)

from pipeline.sources.bucket import Bucket, group_runs


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

    found = list(bucket.discover())
    assert described(found) == described(group_runs(bucket, bucket.walk()))
    assert [(r.uri.rsplit("/", 1)[-1], r.source) for r in found] == [
        ("20261112-000002-top", "prose"), ("aaa-eval", "ledger"),
        ("20261112-000001-after", "prose")]
    (eval_ref,) = [r for r in found if r.source == "ledger"]
    assert "20261112-000000-inside/program.md" in eval_ref.files
    assert len(eval_ref.files) == 1100 + 3 + len(found[0].files)
