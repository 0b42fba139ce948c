"""Grading workers come from the fork server with the worker environment (polars on one
thread, its allocator with one arena), and the calling process's own environment is left as
it was."""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import polars as pl
from conftest import RUNGRADE, SAMPLE_RUNS

from pipeline.processes import process_context, worker_environment


def test_grading_workers_start_with_the_worker_environment():
    before = dict(os.environ)
    with ProcessPoolExecutor(max_workers=1, mp_context=process_context()) as pool:
        threads = pool.submit(os.getenv, "POLARS_MAX_THREADS").result()
        allocator = pool.submit(os.getenv, "_RJEM_MALLOC_CONF").result()
        pool_size = pool.submit(pl.thread_pool_size).result()
    assert threads == before.get("POLARS_MAX_THREADS", "1") and pool_size == int(threads)
    # (polars puts its own settings first as it is imported: the last word is ours)
    assert allocator.split(",")[-1] == "narenas:1" or "narenas:" in before.get(
        "_RJEM_MALLOC_CONF", "")
    assert dict(os.environ) == before


def test_the_arena_count_is_added_to_what_the_allocator_is_told(monkeypatch):
    monkeypatch.setenv("_RJEM_MALLOC_CONF", "dirty_decay_ms:500")
    assert worker_environment()["_RJEM_MALLOC_CONF"] == "dirty_decay_ms:500,narenas:1"
    monkeypatch.setenv("_RJEM_MALLOC_CONF", "narenas:3")  # the user's word holds
    assert worker_environment()["_RJEM_MALLOC_CONF"] == "narenas:3"
    monkeypatch.delenv("_RJEM_MALLOC_CONF")
    monkeypatch.setenv("POLARS_MAX_THREADS", "4")
    assert worker_environment() == {"POLARS_MAX_THREADS": "4", "_RJEM_MALLOC_CONF": "narenas:1"}
    monkeypatch.delenv("POLARS_MAX_THREADS")  # (the suite sets it: see conftest.py)
    assert worker_environment()["POLARS_MAX_THREADS"] == "1"


def test_a_grade_starts_its_workers_under_a_temporary_folder_too_long_for_a_socket(
        tmp_path: Path):
    # The fork server listens on a Unix socket in the temporary folder, whose path may hold
    # 107 bytes: under a longer TMPDIR the grade ended with `AF_UNIX path too long` and a
    # traceback, exit 1, before it graded anything. Its socket now goes to /tmp.
    deep = tmp_path / ("t" * 60) / ("m" * 60)
    deep.mkdir(parents=True)
    done = subprocess.run([RUNGRADE, "grade", str(SAMPLE_RUNS), "--out", str(tmp_path / "out"),
                           "--workers", "2", "--json"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TMPDIR": str(deep)})
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["found"] == summary["graded"] + summary["refused"] > 0
    assert summary["graded"] > 0

