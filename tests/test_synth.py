"""The synthetic corpus: deterministic for a seed, growable, and shaped like real runs."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pipeline.checks import default_grader
from pipeline.grade import grade_runs
from pipeline.synth import OUTCOMES, synthesize


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def test_same_seed_same_bytes_and_growth_appends(tmp_path: Path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    synthesize(str(a), 30, seed=4, workers=2)
    synthesize(str(b), 30, seed=4, workers=1)
    assert _digest(a) == _digest(b)
    synthesize(str(c), 30, seed=5, workers=1)
    assert _digest(a) != _digest(c)
    # growing a corpus writes runs 30… and leaves the first 30 as they were
    synthesize(str(b), 10, seed=4, start=30, workers=1)
    whole = tmp_path / "whole"
    synthesize(str(whole), 40, seed=4, workers=1)
    assert _digest(b) == _digest(whole)


def test_corpus_looks_like_a_bucket_and_grades(tmp_path: Path):
    made = synthesize(str(tmp_path / "runs"), 300, seed=1, workers=2)
    assert 17 <= made.files / made.runs <= 23  # about 20 files per run
    assert set(made.outcomes) == {name for name, _ in OUTCOMES}
    bindings = [p.stat().st_size for p in (tmp_path / "runs").rglob("bindings/*/*")
                if p.parent.name != "caller"]
    bindings.sort()
    assert 300 <= bindings[len(bindings) // 2] <= 7000  # the median binding: 0.3–7 KB
    assert bindings[-1] > 20_000  # and a few much larger ones
    assert any((tmp_path / "runs").rglob("workspace/*/__error.md"))
    summary = grade_runs(str(tmp_path / "runs"), str(tmp_path / "out"), default_grader(),
                         workers=2)
    assert summary.found == 300 == summary.graded + summary.refused
    expected_refusals = {"missing-program", "missing-manifest", "incomplete-run", "no-outputs"}
    assert set(summary.refusals) == expected_refusals  # era-B runs are graded like era A
    assert summary.refused == sum(made.outcomes[k] for k in expected_refusals)
    assert {"satisfied", "partial"} <= set(summary.verdicts)


def test_repeated_snapshots_and_manifests_are_parsed_once(tmp_path: Path):
    from pipeline.sources import prose
    from pipeline.sources.bucket import Bucket

    synthesize(str(tmp_path), 80, seed=2, workers=1)
    bucket = Bucket(str(tmp_path))
    prose._contract.cache_clear()
    prose._manifest_cached.cache_clear()
    for ref in bucket.discover():
        prose.read_run(bucket, bucket.list_run(ref))
    contracts, manifests = prose._contract.cache_info(), prose._manifest_cached.cache_info()
    # every manifest carries its own generation time, yet a program's manifests share a parse
    assert manifests.misses <= 4 * 2 * 2  # programs × arrow styles × inline-or-not at most
    assert manifests.hits >= 50
    assert contracts.misses <= 4 * 2 * 5  # programs × revisions × (program + services)
    assert contracts.hits > 3 * contracts.misses
