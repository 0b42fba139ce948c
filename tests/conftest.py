from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# `rungrade` subprocesses that fail print Python's plain traceback, not typer's framed one:
# a few lines a frame rather than a dozen, so the tail a failed test shows holds the frames
# that matter (the framed one of an import failing in a subprocess was cut before its cause)
os.environ.setdefault("TYPER_STANDARD_TRACEBACK", "1")
# polars on one thread in the suite's processes (set before it is imported, and inherited by
# the `rungrade` subprocesses), as in a grading worker: the suite runs a process per core, so
# a pool of polars threads in each only competes for the same cores, and each thread a reading
# runs on compiles the readers' regexes again (a clause reading: 1.3 CPU-seconds on one
# thread, 2.2 on two). The tests of that setting itself start their processes without it.
os.environ.setdefault("POLARS_MAX_THREADS", "1")

from run_folders import write_run
from s3_server import s3_bucket, s3_server, s3fs_client  # noqa: F401  (fixtures)

REPO = Path(__file__).resolve().parent.parent
SAMPLE_RUNS = REPO / "data" / "runs"
RUNGRADE = str(Path(sys.executable).parent / "rungrade")  # the console script under test


@pytest.fixture
def run_root(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    root.mkdir()
    return root


@pytest.fixture
def make_run(run_root: Path):
    def make(run_id: str = "20261112-031502-abc123", **kwargs) -> Path:
        return write_run(run_root, run_id, **kwargs)

    return make
