"""The benchmark script runs at a tiny size, so it cannot rot (figures printed, not asserted)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.checks import default_grader
from pipeline.checks.output_analysis import FAMILY

BENCH = Path(__file__).resolve().parent.parent / "bench" / "grade_bench.py"
PATTERN_BENCH = BENCH.with_name("pattern_bench.py")
S3_BENCH = BENCH.with_name("s3_bench.py")
STAGE_BENCH = BENCH.with_name("stage_bench.py")


def test_bench_script_runs_end_to_end(tmp_path: Path):
    done = subprocess.run([sys.executable, str(BENCH), "--runs", "30", "--big-runs", "45",
                           "--dir", str(tmp_path), "--workers", "2", "--repeat", "1",
                           "--shard-runs", "10"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    assert re.search(r"\nrungrade options +--workers 2 --shard-runs 10\n", done.stdout)
    for figure in ("plain read", "rungrade grade", "CPU seconds", "throughput", "peak memory",
                   "clauses known (kept readings)", "one worker (kept readings)",
                   "no-change rerun", "lstat every path",
                   "dask engine (2 workers)", "45 runs"):
        assert figure in done.stdout
    # every grade wrote results of its own; none outlive the bench without --keep
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "corpus-30-seed7", "corpus-30-seed7.complete", "corpus-45-seed7",
        "corpus-45-seed7.complete"]


def test_pattern_bench_script_runs_end_to_end():
    done = subprocess.run([sys.executable, str(PATTERN_BENCH), "--runs", "20", "--few", "4",
                           "--many", "40", "--repeat", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    assert "40 distinct names" in done.stdout and "many / few" in done.stdout


def test_stage_bench_script_runs_end_to_end():
    done = subprocess.run([sys.executable, str(STAGE_BENCH), "--sizes", "6,1", "--shards", "2",
                           "--json", "--breakdown"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    figures = json.loads(done.stdout)
    for size, runs in (("6", 6), ("1", 1)):
        shard = figures["sizes"][size]
        assert shard["runs"] == runs
        # every stage a worker runs was timed, and they add up to the whole task
        assert {"list and read runs", "checks", "output measures", "Parquet parts staged",
                "other"} <= set(shard["stages_ms"])
        assert shard["stages_ms"]["list and read runs"] > 0 and shard["plain_read_ms"] > 0
        assert abs(sum(shard["stages_ms"].values()) - shard["task_ms"]) < 1
    # the larger size's measure families (inside its measures stage) and its checks, each
    # timed: every clause naming an output is judged by output_published
    breakdown = figures["breakdown"]
    assert breakdown["size"] == 6
    families = breakdown["families_ms"]
    assert families and set(families) <= set(FAMILY)
    assert 0 < sum(families.values()) <= figures["sizes"]["6"]["stages_ms"]["output measures"]
    assert breakdown["checks_alone_ms"]["output_published"] > 0
    assert set(breakdown["checks_alone_ms"]) <= {c.name for c in default_grader().checks}
    # the printed table has a row for each stage, one for a stage timed in several functions
    rows = [line.split("  ")[0] for line in _grade_bench(STAGE_BENCH).report(figures).splitlines()]
    for stage in figures["sizes"]["6"]["stages_ms"]:
        assert rows.count(stage) == 1, stage


def test_s3_bench_script_runs_end_to_end():
    done = subprocess.run([sys.executable, str(S3_BENCH), "--runs", "6", "--latency-ms", "5",
                           "--workers", "2"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    for figure in ("S3 corpus", "plain read", "rungrade grade from S3", "object reads per run",
                   "requests in flight", "no-change rerun from S3", "discovery of the runs",
                   "one flat listing", "ms per 1,000 keys", "under one program",
                   "from local disk",
                   "analysts' queries", "views opened", "the grade log"):
        assert figure in done.stdout


def _grade_bench(script: Path = BENCH):
    """A bench script (bench/grade_bench.py unless told) as a module: scripts are not a
    package's."""
    spec = importlib.util.spec_from_file_location(script.stem, script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


BUSY = "import time\nwhile time.process_time() < 0.6: pass\n"


def test_cpu_time_counts_every_process_of_the_tree():
    # a parent busy for 0.6 CPU-seconds that runs a child busy for as long: the sampler sees
    # both (each loses at most its last 0.2 s between samples)
    bench = _grade_bench()
    code = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {BUSY!r}])\n{BUSY}"
    proc = subprocess.Popen([sys.executable, "-c", code])
    cpu = bench.CPUTime(proc.pid, every=0.05)
    proc.wait()
    cpu.stop()
    seconds = cpu.seconds
    assert 1.0 <= seconds <= 2.0, seconds


def test_a_corpus_given_as_the_folder_for_corpora_is_refused(tmp_path: Path):
    # `--dir` names the folder that holds corpora; given a corpus itself, the bench would
    # write a second corpus inside it, whose runs every later bench of the first would grade
    bench = _grade_bench()
    made = tmp_path / "corpus-30-seed7"
    (made / "acme").mkdir(parents=True)
    (tmp_path / "corpus-30-seed7.complete").write_text("{}")
    with pytest.raises(SystemExit, match=r"is a corpus; give the folder that holds it"):
        bench.corpus(made, 30, 7, None)
    assert sorted(p.name for p in made.iterdir()) == ["acme"]
    # the folder that holds it is used as before: the corpus is there already
    assert bench.corpus(tmp_path, 30, 7, None) == made


def test_the_large_corpus_is_skipped_where_the_disk_has_no_room_for_it(tmp_path: Path):
    # `make bench` also writes a 100,000-run corpus (about 15 GB with its results): on a disk
    # without that much room it says so and goes on, instead of failing when the disk fills
    bench = _grade_bench()
    free = shutil.disk_usage(tmp_path).free
    fits = free // bench.DISK_PER_RUN // 2
    assert bench._short_of_room(tmp_path, fits, 7) is None
    too_many = free // bench.DISK_PER_RUN + 1000
    said = bench._short_of_room(tmp_path, too_many, 7)
    assert said.startswith("it needs about ") and str(tmp_path) in said
    assert "--big-runs 0" in said
    (tmp_path / f"corpus-{too_many}-seed7.complete").write_text("{}")  # written already
    assert bench._short_of_room(tmp_path, too_many, 7) is None
