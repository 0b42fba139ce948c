"""The grading flow: discover, read + flatten, check, score, store. Stages pass tables.

`grade_tables` is the pure part (tables in, tables out) that every engine runs; `grade_runs`
drives it over a runs root in committed batches: it skips runs graded before and unchanged,
and grades the rest shard by shard in worker processes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import importlib.util
import itertools
import multiprocessing
import os
import pickle
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from typing import TYPE_CHECKING

import polars as pl
from polars.exceptions import PanicException

from . import scratch
from .catalog import (
    catalog_stale,
    interrupted,
    query_interrupted,
    tidy_compacted,
    write_catalog,
)
from .checks import BUILTIN_NAMES
from .checks.clause_analysis import readings_version, shared_readings
from .checks.frame import clause_frame
from .checks.grader import (
    Check,
    Grader,
    GraderError,
    finished,
    judged_rows,
    measure,
    refuse_unknown_columns,
    run_checks,
)
from .checks.ledger import (
    LEDGER_CLAUSE_KIND,
    LedgerGrader,
    ledger_grader_ids,
    ledger_grader_set,
    run_ledger_checks,
)
from .checks.moltzap import builtin_ledger_graders
from .checks.verdicts import clause_verdicts
from .compact import uncompacted
from .names import shown
from .numbers import rounded
from .processes import process_context, start_resource_tracker
from .reports import build_reports
from .scoring import run_models
from .sources.bucket import (
    RUN_DIR,
    RUNS_QUEUED,
    Ahead,
    Bucket,
    Listing,
    RunRef,
    split_uri,
    spread_runs,
)
from .sources.ledger import grader_rows, read_ledger
from .sources.outage import is_outage
from .sources.prose import (
    DEFAULT_BINDING_CAP,
    RETRIED,
    RunRows,
    files_read,
    read_run,
    refuse,
)
from .store import (
    LEDGER_GRADERS,
    ListingIndex,
    ReportOwners,
    ResultStore,
    close_inherited_locks,
    ledger_graders_changed,
    new_attempt,
    new_batch_id,
    no_folder_for,
    pack_listing,
)
from .tables import SOURCE_TABLES, collect, conform, frame

if TYPE_CHECKING:
    from .engines import Engine, EngineFactory
    from .judging import Judge


def source_tables(rows: RunRows) -> dict[str, pl.DataFrame]:
    return {name: frame(name, getattr(rows, name)) for name in SOURCE_TABLES}


def grade_tables(source: dict[str, pl.DataFrame], grader: Grader,
                 ledger_graders: tuple[LedgerGrader, ...] | None = None,
                 judge: Judge | None = None,
                 ) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """Check, judge and score a batch. Returns (all tables stamped with grader_id, clause frame).

    OpenProse runs are checked by `grader`; each moltzap ledger by the ledger grader it was
    read for, whose id its rows carry instead. With a `judge`, the grader id becomes the
    judged one (`Judge.grader`) and judgeable undecided checks are settled by it.
    """
    grader = judge.grader(grader) if judge else grader
    ledger_graders = default_ledger_graders() if ledger_graders is None else ledger_graders
    ids = ledger_grader_ids(source["services"])

    def stamp(df: pl.DataFrame) -> pl.DataFrame:
        if ids.is_empty():  # no ledger in the batch: one id for every row
            return df.drop("grader_id", strict=False).with_columns(
                pl.lit(grader.grader_id).alias("grader_id"))
        df = df.drop("grader_id", strict=False).join(ids, on="run_uri", how="left",
                                                      maintain_order="left")
        return df.with_columns(pl.col("grader_id").fill_null(grader.grader_id))

    tables = {name: stamp(source[name]) for name in SOURCE_TABLES}
    clauses = clause_frame(tables["clauses"], tables["services"], tables["bindings"],
                           measured=False)
    prose = clauses.filter(pl.col("kind") != LEDGER_CLAUSE_KIND)
    checks = pl.concat([
        run_checks(grader, prose),
        run_ledger_checks(ledger_graders, tables["clauses"], tables["bindings"],
                          tables["services"]),
    ])
    if judge:
        from .judging.judge import UNANSWERED

        checks = judge.settle(checks, clauses, tables["runs"])
        if judge.unanswered:  # graded again by the next grade, which asks again
            asked_again = pl.col("run_uri").is_in(sorted(judge.unanswered))
            tables["runs"] = tables["runs"].with_columns(
                pl.when(asked_again).then(pl.col("fingerprint") + UNANSWERED)
                .otherwise(pl.col("fingerprint")).alias("fingerprint"))
    tables["checks"] = checks
    tables["clause_verdicts"] = stamp(clause_verdicts(clauses, checks, grader.grader_id,
                                                      grader.preconditions))
    tables.update({name: conform(name, df) for name, df in run_models(tables).items()})
    return tables, clauses


def by_grader(tables: dict[str, pl.DataFrame]) -> list[tuple[str, dict[str, pl.DataFrame]]]:
    """Split graded tables by the grader id stamped on their rows, runs' order kept."""
    ids = tables["runs"]["grader_id"].unique(maintain_order=True).to_list()
    if len(ids) <= 1:
        return [(ids[0], tables)] if ids else []
    return [(gid, {name: df.filter(pl.col("grader_id") == gid) for name, df in tables.items()})
            for gid in ids]


def default_ledger_graders(extra: tuple[LedgerGrader, ...] = ()) -> tuple[LedgerGrader, ...]:
    """The built-in ledger graders, with `extra` replacing any for the same scenario."""
    return ledger_grader_set(builtin_ledger_graders(), extra)


@dataclass
class Summary:
    """What a `grade` did. found = new + changed + unchanged; graded + refused = the runs read.

    Unchanged runs (same fingerprint as their committed rows under this job's grader ids) are
    skipped unless `full`; then graded + refused + skipped = found.
    """

    runs_uri: str
    results_uri: str
    grader_id: str
    grade_id: str = ""  # its record in RESULTS/_grades/ (the `grades` view)
    versions: dict[str, str | None] = field(default_factory=dict)  # see library_versions
    found: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    skipped: int = 0
    graded: int = 0
    refused: int = 0
    full: bool = False
    refusals: Counter = field(default_factory=Counter)
    verdicts: Counter = field(default_factory=Counter)
    ledger_verdicts: Counter = field(default_factory=Counter)  # GradeReport verdicts
    score_sum: float = 0.0
    scored: int = 0
    batches: list[str] = field(default_factory=list)
    discarded: list[str] = field(default_factory=list)
    judging: dict | None = None  # JudgeStats of the judge, when one was used
    stopped: bool = False  # a stop was requested; runs of later batches were not graded
    # (path, why) of each folder under the runs root that could not be listed: the runs
    # in it were not found (see Bucket.unlisted)
    unlisted: list[tuple[str, str]] = field(default_factory=list)
    elapsed_s: float = 0.0  # wall time of the whole grade, the catalog's update included
    uncompacted: int = 0  # committed batches a `rungrade compact` would merge
    compacted: dict[str, int] | None = None  # `--compact-after`: grader id -> batches merged

    @property
    def mean_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None

    def add(self, stats: dict) -> None:
        """Add the `shard_stats` of one graded shard."""
        self.graded += stats["graded"]
        self.refused += stats["refused"]
        self.refusals.update(stats["refusals"])
        self.verdicts.update(stats["verdicts"])
        self.ledger_verdicts.update(stats["ledger_verdicts"])
        self.score_sum += stats["score_sum"]
        self.scored += stats["scored"]
        # a run folder found empty when its worker listed it is not a run (yet)
        self.found -= stats["empty"]
        self.new -= stats["empty"]

    def see(self, status: str) -> None:
        """Count one discovered run as new, changed or unchanged (and maybe skipped)."""
        self.found += 1
        setattr(self, status, getattr(self, status) + 1)
        if status == "unchanged" and not self.full:
            self.skipped += 1

    def as_dict(self) -> dict:
        return {
            "grade_id": self.grade_id,
            "runs": self.runs_uri, "results": self.results_uri, "grader_id": self.grader_id,
            "versions": self.versions, "found": self.found, "new": self.new,
            "changed": self.changed, "unchanged": self.unchanged, "skipped": self.skipped,
            "full": self.full, "graded": self.graded, "refused": self.refused,
            # (runs found that a stop left ungraded: 0 once the grade finished)
            "not_graded": self.found - self.skipped - self.graded - self.refused,
            "refusals": dict(sorted(self.refusals.items())),
            "verdicts": dict(sorted(self.verdicts.items())),
            "ledger_verdicts": dict(sorted(self.ledger_verdicts.items())), "mean_overall_score":
            None if self.mean_score is None else rounded(self.mean_score, 2),
            "batches": self.batches, "discarded": self.discarded, "stopped": self.stopped,
            "unlisted": [{"path": path, "error": why} for path, why in self.unlisted],
            "elapsed_s": round(self.elapsed_s, 2), "uncompacted": self.uncompacted,
            **({"judge": self.judging} if self.judging else {}),
            **({"compacted": self.compacted} if self.compacted is not None else {}),
        }


GRADE_LOG_EVERY_S = 1.0  # a running grade's record is rewritten at most this often
# What a grade's verdicts rest on besides its grader id: the libraries whose behaviour the
# checks and scores use (regexes and string kernels, JSON parsing, SQL), and the interpreter.
GRADING_LIBRARIES = ("rungrade", "polars", "duckdb", "pyarrow")


def library_versions() -> dict[str, str | None]:
    """{name: version} of Python and GRADING_LIBRARIES in this environment (None where a
    library is not installed as a package: rungrade run from a source folder)."""
    found: dict[str, str | None] = {"python": ".".join(map(str, sys.version_info[:3]))}
    for name in GRADING_LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


class GradeLog:
    """The record of one grade in its results, `_grades/{grade_id}.json` (the `grades` view):
    written `running` once the grade holds the lock, rewritten after a committed batch (at
    most every GRADE_LOG_EVERY_S: the record holds every batch id, so a grade of thousands
    of small batches would otherwise write it over and over), and on the way out `finished`,
    `stopped` (SIGTERM), `failed` (with the error) or `interrupted` (Ctrl-C). A grade killed
    outright leaves its record `running`: the next grade (or compaction) on the same results
    marks it `interrupted`, and `read_grades` reads it so once no process holds the lock. The
    record is the `--json` summary with the grade's status and times."""

    def __init__(self, store: ResultStore, summary: Summary, started: float):
        self.store, self.summary, self.started = store, summary, started
        summary.grade_id = new_batch_id()
        self.started_at = _now()
        self.written = 0.0  # when the record was last written (time.monotonic)

    def __enter__(self) -> GradeLog:
        self.store.close_interrupted_grade()
        self.write("running")
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if exc is None:
            self.write("stopped" if self.summary.stopped else "finished")
        else:
            # (a query Ctrl-C stopped fails with DuckDB's error, not KeyboardInterrupt; a
            # grade's SIGTERM raises nothing, see `should_stop`)
            failed = isinstance(exc, Exception) and not query_interrupted(exc)
            with contextlib.suppress(Exception):  # the store may be what failed
                self.write(*(("failed", f"{kind.__name__}: {exc}") if failed
                             else ("interrupted",)))

    def committed(self) -> None:
        """A batch was committed: the record says so, unless it was written just now."""
        if time.monotonic() - self.written >= GRADE_LOG_EVERY_S:
            self.write("running")

    def write(self, status: str, error: str | None = None) -> None:
        self.written = time.monotonic()
        self.summary.elapsed_s = self.written - self.started
        done = self.summary.as_dict()
        record = {
            "grade_id": done.pop("grade_id"), "status": status, "started_at": self.started_at,
            "finished_at": None if status == "running" else _now(),
            "elapsed_s": done.pop("elapsed_s"), "runs_uri": done.pop("runs"),
            "results_uri": done.pop("results"), **done, "error": error}
        if status in ("interrupted", "failed"):  # (stopped between a commit and its count)
            record = self.store.with_its_commits(record)
        self.store.log_grade(record)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def shard_stats(tables: dict[str, pl.DataFrame], empty: int = 0) -> dict:
    """The counts a shard adds to the summary (small and picklable, unlike its tables)."""
    runs = tables["runs"]
    scores = tables["run_scores"]
    ledger_runs = runs.filter(pl.col("source") == "ledger")
    ledgers = scores.join(ledger_runs, on="run_uri", how="semi")
    scores = scores.join(ledger_runs, on="run_uri", how="anti")  # OpenProse runs' (README)
    valid = scores["overall_score"].drop_nulls()
    return {
        "runs": runs.height,
        "graded": runs.filter(pl.col("status") == "graded").height,
        "refused": runs.filter(pl.col("status") == "refused").height,
        "refusals": Counter(tables["refusals"]["reason"].to_list()),
        "verdicts": Counter(scores["overall_verdict"].to_list()),
        "ledger_verdicts": Counter(ledgers["outcome_verdict"].to_list()),
        "score_sum": float(valid.sum()) if len(valid) else 0.0,
        "scored": len(valid),
        "empty": empty,
        # each table's rows, which the batch's commit marker records (see catalog.check_whole)
        "rows": Counter({table: frame.height for table, frame in tables.items()}),
    }


def _ignore_stop_signals() -> None:
    # Workers finish their shard; only the parent decides what a stop abandons.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _read_shard(args: tuple[str, str | None, list[RunRef], int, tuple[LedgerGrader, ...]]
                ) -> RunRows:
    rows = RunRows()
    for _, one in _read_each(args):
        rows.extend(one)
    return rows


def _read_each(args: tuple[str, str | None, list[RunRef], int, tuple[LedgerGrader, ...]]
               ) -> Iterator[tuple[RunRef, RunRows]]:
    """Each run of a shard, listed and read, with its rows (none for an empty folder)."""
    runs_uri, endpoint, refs, cap, ledger_graders = args
    bucket = Bucket(runs_uri, endpoint)
    for window in _prefetch_windows(bucket, refs, cap):
        for ref in window:
            bucket.list_run(ref)
            if ref.unlisted:  # read whole or not at all
                yield ref, refused_run(ref, "unreadable-file", _unlisted(ref.unlisted))
            elif ref.empty:
                yield ref, RunRows()  # an empty folder is not a run yet (object stores have none)
            else:  # (no name for the rows here: the generator would hold them while it waits)
                yield ref, _read_one(bucket, ref, cap, ledger_graders)
    bucket.prefetch(())  # drop what no reader took


def _read_one(bucket: Bucket, ref: RunRef, cap: int, ledger_graders: tuple[LedgerGrader, ...]
              ) -> RunRows:
    with bucket.run_folder(ref.path):
        return (read_ledger(bucket, ref, ledger_graders) if ref.source == "ledger"
                else read_run(bucket, ref, cap))


PREFETCH_RUNS = 32  # runs whose files a remote store fetches in one go
PREFETCH_BYTES = 32 << 20  # and at most this many bytes of them (by their listed sizes)


# What grading a run's data may raise: polars panics (a Rust panic on some input, in our
# checks or a user's) are BaseExceptions, which no `except Exception` catches, and which do
# not even pickle back from a worker: one run's output failed every grade of its bucket.
RUN_ERRORS = (Exception, PanicException)
# what a shard's grading makes: per grader id, its tables and its runs' reports
Parts = list[tuple[str, dict[str, pl.DataFrame], dict[str, str]]]


def _unlisted(unlisted: dict[str, str], named: int = 3) -> str:
    parts = [f"{rel or 'the run folder'}: {why}" for rel, why in sorted(unlisted.items())]
    more = f"; and {len(parts) - named} more" if len(parts) > named else ""
    return f"could not be listed: {'; '.join(parts[:named])}{more}"


def refused_run(ref: RunRef, reason: str, detail: str) -> RunRows:
    """The rows of a run refused before it was read (its source and layout as listed)."""
    rows = refuse(ref, reason, detail)
    rows.runs[0].update(source=ref.source, layout=(
        "moltzap-ledger" if ref.source == "ledger" else rows.runs[0]["layout"]))
    return rows


def _prefetch_windows(bucket: Bucket, refs: list[RunRef], cap: int) -> Iterator[list[RunRef]]:
    """The runs in windows, the files each window's OpenProse runs will read fetched ahead
    (remote stores only: one round trip per window instead of one per file). Ledgers are
    read whole, up to 32 MiB each (LEDGER_CAP), so they are not fetched ahead."""
    if bucket.local:
        yield refs
        return
    window: list[RunRef] = []
    wanted: list[tuple[str, int]] = []
    size = 0
    for ref in refs:
        if ref.source != "ledger":
            files = files_read(ref, cap)
            more = sum(min(ref.files[rel].size, limit) for rel, limit in files)
            if window and (len(window) >= PREFETCH_RUNS or size + more > PREFETCH_BYTES):
                bucket.prefetch(wanted)
                yield window
                window, wanted, size = [], [], 0
            wanted += [(f"{ref.path}/{ref.key(rel)}", limit) for rel, limit in files]
            size += more
        window.append(ref)
    if window:
        bucket.prefetch(wanted)
        yield window


def read_runs(runs_uri: str, refs: list[RunRef], *, endpoint_url: str | None = None,
              binding_cap: int = DEFAULT_BINDING_CAP, workers: int = 1,
              ledger_graders: tuple[LedgerGrader, ...] | None = None,
              on_progress: Callable[[int], None] | None = None) -> RunRows:
    """Read + flatten runs, in worker processes over shards when `workers` > 1."""
    ledger_graders = default_ledger_graders() if ledger_graders is None else ledger_graders
    shard = max(1, min(64, len(refs) // max(1, workers * 4) or 1))
    shards = [refs[i:i + shard] for i in range(0, len(refs), shard)]
    rows = RunRows()
    if workers <= 1 or len(shards) <= 1:
        for part in shards:
            rows.extend(_read_shard((runs_uri, endpoint_url, part, binding_cap, ledger_graders)))
            if on_progress:
                on_progress(len(part))
        return rows
    with ProcessPoolExecutor(max_workers=workers, mp_context=process_context(),
                             initializer=_ignore_stop_signals) as pool:
        jobs = [(runs_uri, endpoint_url, part, binding_cap, ledger_graders) for part in shards]
        for part, result in zip(shards, pool.map(_read_shard, jobs), strict=True):
            rows.extend(result)
            if on_progress:
                on_progress(len(part))
    return rows


def chunks(items: Iterable, size: int) -> Iterator[list]:
    chunk: list = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# -- the nightly job: discover, skip what is graded, grade the rest in committed batches -------
LIST_CHUNK = 200  # runs listed and fingerprinted per task (local roots)
LISTED_KEPT_EVERY = 20_000  # listing rows of unchanged runs held before they are saved
PROGRESS_EVERY = 500  # runs found between two updates of the progress bar while finding them
SHARD_RUNS = 600  # at most this many runs read and graded per task (memory follows it)
SHARD_BYTES = 128 << 20  # what a task holds before it grades what it has read (see _held)
ROW_BYTES = 1 << 10  # a source row's own size, text aside, about (measured: 1.4 KB)
PREREAD_RUNS = 64  # runs of a first grade whose clauses are read before any shard's
PREREAD_WAIT = 300.0  # seconds at most a shard waits for that reading (then reads its own)


@dataclass(frozen=True)
class Shard:
    """What a grade task hands back: `stats`, {grader id: shard_stats} of the rows it staged;
    `listings`, its runs' listing rows for the next grade's rerun check (see
    ResultStore.listings); `attempts`, the names it staged its parts under (see
    ResultStore.publish), one per group of its runs (see _grade_task)."""

    stats: dict[str, dict]
    listings: list[tuple[str, str, str, bytes]]
    attempts: tuple[str, ...]


@dataclass(frozen=True)
class Job:
    """Everything a worker needs besides the runs and the graders (pickled with each task)."""

    runs_uri: str
    results_uri: str
    endpoint_url: str | None
    binding_cap: int
    validate: bool
    full: bool
    shard_bytes: int = SHARD_BYTES
    # A local file that exists while a first grade's sample is read (`_preread_task`): a
    # shard reads its runs meanwhile and waits for it to go before it reads any clause.
    preread_mark: str | None = None


_WORKER: dict = {}  # per-process state: the graders (and a judge, in-process only)
_LISTED: dict = {}  # the saved listings, while `_classified` runs (its forks inherit them)


def _init_worker(graders_blob: bytes, modules: list[tuple[str, str]], parent: int,
                 aws: dict[str, str]) -> None:
    """Load user grader modules, unpickle the graders, and die with the grading process."""
    _ignore_stop_signals()
    # The fork server kept the environment of its start; S3 settings follow this job's.
    os.environ.update(aws)
    for name, path in modules:
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, path)
            if spec and spec.loader:
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                try:
                    spec.loader.exec_module(module)
                except Exception:  # a file this job's graders do not need (moved, or broken)
                    sys.modules.pop(name, None)
    _WORKER["grader"], _WORKER["ledger_graders"] = pickle.loads(graders_blob)
    _WORKER["judge"] = None
    scratch.THREADS = 1  # one worker per core (polars likewise, see processes.py)
    scratch.connect()  # opened now, while the first shard is still being put together
    _init_watchdog(parent)
    # What the worker holds now (modules, graders) lives as long as it does: frozen, it is no
    # longer walked by every full collection, and young collections come less often (a shard
    # allocates millions of objects). Collecting took 3.2% of a worker's CPU, now 0.6%.
    gc.freeze()
    gc.set_threshold(10_000, 50, 100)


def _init_list_worker(parent: int) -> None:
    close_inherited_locks()  # (a fork of the grade, which holds the results' lock)
    _ignore_stop_signals()
    _init_watchdog(parent)


def _init_watchdog(parent: int) -> None:
    """Exit this worker as soon as the grading process is gone (even after a kill -9)."""

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if _gone(parent):
                os._exit(1)

    threading.Thread(target=watch, name="rungrade-watchdog", daemon=True).start()


def _gone(pid: int) -> bool:
    """Whether process `pid` has ended: no such process, or a zombie. Killed, the grading
    process stays a zombie until whatever started it reaps it, and one that reads its output
    to the end first (Python's `communicate`, `capture_output`) waits on the workers holding
    that output open: each waited on the other, for good."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:  # `pid (name) STATE …`
            return stat_file.read().rpartition(b")")[2].split()[:1] == [b"Z"]
    except OSError:  # (no /proc: the kill above is all there is to go by)
        return False


def _list_task(job: Job, items: list[tuple[RunRef, str | None, Listing | None]],
               saved: bool = False) -> list[tuple[str, RunRef | None, tuple | None]]:
    """List and fingerprint runs; return (status, run, listing row) for each, in order: the
    run is None when it is unchanged by its saved listing (the caller holds it already).

    A run with the listing saved when it was graded is first checked against it, one `stat`
    per path (`Bucket.unchanged`); it is listed and fingerprinted only when that fails. With
    `saved`, the listings are looked up in the index `_classified` left in `_LISTED` (this
    process's, or inherited by a fork) instead of coming with the runs. An unchanged run that
    had to be listed (graded before listings were saved, or its saved listing was lost) comes
    with its listing row, for the next grade to use.
    """
    bucket = Bucket(job.runs_uri, job.endpoint_url)
    index: ListingIndex | None = _LISTED.get("index") if saved else None
    out: list[tuple[str, RunRef | None, tuple | None]] = []
    for ref, known, listing in items:
        if index is not None:
            listing = index.take(ref.uri)
        if listing is not None and not job.full and bucket.unchanged(ref, listing):
            out.append(("unchanged", None, None))
            continue
        bucket.list_run(ref)
        status = "empty" if ref.empty else _status(ref, known)
        row = _listing_row(ref, known) if status == "unchanged" and not job.full else None
        if status in ("unchanged", "empty") and not job.full:
            ref.files = {}
        out.append((status, ref, row))
    return out


def _listing_row(ref: RunRef, fingerprint: str | None) -> tuple[str, str, str, bytes] | None:
    """(uri, fingerprint, shape, stats) of a listed local run, as ResultStore.save_listings
    keeps them (`fingerprint` is the run's, already computed); None for a run it cannot
    describe (not listed locally, not listed whole, holding links or special files such as
    named pipes, or a name that is not UTF-8)."""
    if fingerprint is None or fingerprint.endswith(RETRIED) or ref.folders is None or (
            not ref.files or ref.unlisted or any(info.link_target is not None or info.special
                                                 for info in ref.files.values())):
        return None  # (RETRIED: a run refused for a file it could not read is listed anew)
    shape, stats = pack_listing(ref.files, ref.folders)
    if shown(shape) != shape:  # a name that is not UTF-8: the run is listed on each rerun
        return None
    return ref.uri, fingerprint, shape, stats


def _status(ref: RunRef, known: str | None) -> str:
    if known is None:
        return "new"
    return "unchanged" if ref.fingerprint == known else "changed"


def batch_for(batch_id: str, grader_id: str, main_grader_id: str) -> str:
    """The batch id of one grader id's rows in a batch: ledgers graded beside OpenProse runs
    carry their own grader ids, and each grader id commits its own batch."""
    if grader_id == main_grader_id:
        return batch_id
    return f"{batch_id}-{hashlib.sha1(grader_id.encode()).hexdigest()[:6]}"


class KeptReadings:
    """Clause readings kept in the results (`ResultStore.saved_readings`) for every worker of
    a grade and for the grades after it: a clause is read once per version of the code that
    reads it, not once in each worker process that meets it. Only a cache: when it cannot be
    read or written, clauses are read as if it were not there."""

    def __init__(self, store: ResultStore):
        self.store, self.version = store, readings_version()

    def fetch(self, keys: pl.Series) -> pl.DataFrame | None:
        try:
            return self.store.saved_readings(self.version, keys)
        except Exception:  # its clauses are read again
            return None

    def save(self, readings: pl.DataFrame) -> None:
        with contextlib.suppress(Exception):
            self.store.save_readings(self.version, readings)


def _grade_task(job: Job, batch_id: str, part: int, refs: list[RunRef],
                died: str | None = None) -> Shard:
    """Read, flatten, grade and stage one shard of a batch; return what it staged.

    The runs are read in order and graded in groups: a group ends with the run that brings
    what it holds (`_held`: outputs' text and rows) to `job.shard_bytes`, and each is staged as
    a part of its own, so a shard of large runs is held a group at a time. With `died`, the
    runs are not read: each is refused as internal-error with that detail (a run whose worker
    died every time it was graded, see `_isolated`).
    """
    grader: Grader = _WORKER["grader"]
    judge = _WORKER.get("judge")
    main_id = judge.grader(grader).grader_id if judge else grader.grader_id
    store = ResultStore(job.results_uri, job.endpoint_url)

    def graded(source: dict[str, pl.DataFrame]) -> Parts:
        tables, clause_rows = grade_tables(source, grader, _WORKER["ledger_graders"], judge)
        # the grade's batch, whichever grader id's batch holds the rows: kept by compaction,
        # which renames the batch, it orders a ledger's gradings across grader ids (catalog)
        tables["runs"] = tables["runs"].with_columns(graded_in=pl.lit(batch_id, pl.String))
        if job.validate:
            from .tables import validate as validate_tables
            validate_tables(tables)
        parts = []
        for grader_id, part_tables in by_grader(tables) or [(main_id, tables)]:
            frame = clause_rows.join(part_tables["runs"], on="run_uri", how="semi")
            parts.append((grader_id, part_tables, build_reports(part_tables, frame)))
        return parts

    def staged(part_name: str, refs: list[RunRef], rows: RunRows) -> Shard:
        empty = sum(1 for ref in refs if ref.empty)
        source = _frames(rows)
        printed = dict(source["runs"].select("run_uri", "fingerprint").iter_rows())  # as read
        listings = [row for ref in refs if (row := _listing_row(ref, printed.get(ref.uri)))]
        if job.preread_mark:
            _after_preread(job.preread_mark)
        with shared_readings(KeptReadings(store)):
            try:
                parts = graded(source)
            except RUN_ERRORS as exc:
                if is_outage(exc):
                    raise
                parts = _in_halves(source, graded, exc)
        out: dict[str, dict] = {}
        attempt = new_attempt(part_name)
        for grader_id, part_tables, reports in parts:
            store.stage_part(batch_for(batch_id, grader_id, main_id), attempt, grader_id,
                             part_tables, reports)
            out[grader_id] = shard_stats(part_tables, empty if grader_id == main_id else 0)
        if main_id not in out and empty:  # only ledgers, or empty folders, in this group
            out[main_id] = {"runs": 0, "graded": 0, "refused": 0, "refusals": Counter(),
                            "verdicts": Counter(), "ledger_verdicts": Counter(),
                            "score_sum": 0.0, "scored": 0, "empty": empty, "rows": Counter()}
        return Shard(out, listings, (attempt,))

    if died is not None:
        rows, bucket = RunRows(), Bucket(job.runs_uri, job.endpoint_url)
        for ref in refs:
            bucket.list_run(ref)  # its fingerprint: refused until the run changes
            rows.extend(refused_run(ref, "internal-error", died))
        return staged(str(part), refs, rows)
    done: list[Shard] = []
    group: list[RunRef] = []
    rows, held = RunRows(), 0
    for ref, one in _read_each((job.runs_uri, job.endpoint_url, refs, job.binding_cap,
                                _WORKER["ledger_graders"])):
        group.append(ref)
        rows.extend(one)
        held += _held(one)
        del one  # its rows are `rows`' now, which `staged` lets go of once they are frames
        if held >= job.shard_bytes:
            done.append(staged(f"{part}.{len(done)}" if done else str(part), group, rows))
            group, rows, held = [], RunRows(), 0
    if group or not done:
        done.append(staged(f"{part}.{len(done)}" if done else str(part), group, rows))
    return _joined(done)


def _held(rows: RunRows) -> int:
    """About the bytes a run's rows hold: its outputs' text, and ROW_BYTES a row besides (a
    run of thousands of empty outputs or clauses holds as much in the rows themselves)."""
    return (sum(len(binding["text"]) for binding in rows.bindings)
            + ROW_BYTES * (len(rows.bindings) + len(rows.clauses) + len(rows.services)))


def _joined(shards: list[Shard]) -> Shard:
    """One task's groups as one shard result: their stats added, listings and attempts kept."""
    stats: dict[str, dict] = {}
    for shard in shards:
        for grader_id, counts in shard.stats.items():
            if grader_id in stats:
                stats[grader_id] = {key: stats[grader_id][key] + value
                                    for key, value in counts.items()}
            else:
                stats[grader_id] = counts
    return Shard(stats, [row for shard in shards for row in shard.listings],
                 tuple(attempt for shard in shards for attempt in shard.attempts))


def _preread_task(job: Job, refs: list[RunRef] | None) -> None:
    """Read the clauses of `refs` (up to PREREAD_RUNS runs, spread over the folders; None: a
    sample of the local runs root, taken here, see `Bucket.sample`) into the kept readings,
    in one reading. A corpus of no more runs is read whole here; the first batch waits for it.

    A reading costs about the same for one clause as for a hundred (it is mostly compiling
    regexes), and each worker would otherwise read each program's clauses where it first
    meets them: in a first grade, the workers then find most clauses already read. Nothing
    is graded or staged here, and nothing that fails here fails the grade.
    """
    try:
        bucket = Bucket(job.runs_uri, job.endpoint_url)
        if refs is None:
            refs = _preread_sample(bucket.sample(PREREAD_RUNS))
        # Listed here (as their reading would), to leave the ledgers unread: a ledger's
        # clauses are its grader's checks, the same in each ledger, and a large one was read
        # here and in its shard at once, twice its memory. The clauses of every ledger grader
        # are read instead, when the sample holds a ledger (each shard read them before).
        listed = list(map(bucket.list_run, refs))
        refs = [ref for ref in listed if ref.source != "ledger"]
        rows = _read_shard((job.runs_uri, job.endpoint_url, refs, job.binding_cap,
                            _WORKER["ledger_graders"]))
        if len(refs) < len(listed):
            for grader in _WORKER["ledger_graders"]:
                rows.extend(grader_rows(grader))
        tables = source_tables(rows)
        with shared_readings(KeptReadings(ResultStore(job.results_uri, job.endpoint_url))):
            clause_frame(tables["clauses"], tables["services"], tables["bindings"],
                         measured=False)
    except RUN_ERRORS:  # the shards read what this could not
        pass


def _after_preread(mark: str, limit: float = PREREAD_WAIT) -> None:
    """Wait while the file `mark` exists (`Job.preread_mark`), `limit` seconds at most: the
    sample's clauses are being read and kept, and a shard that read its clauses beside that
    reading would pay the same second of CPU again. The grading process removes the file
    when that task ends, however it ends; past the limit the shard reads what it needs."""
    deadline = time.monotonic() + limit
    while os.path.exists(mark) and time.monotonic() < deadline:
        time.sleep(0.01)


def _preread_mark(engine: Engine | _Engine) -> str | None:
    """A new file for `Job.preread_mark`, where the shards run in local worker processes,
    which see this machine's files (not in this process, not on Dask); else None, and the
    first batch's shards start once the sample's clauses are read."""
    if not isinstance(engine, _Engine) or engine.grade_inline:
        return None
    try:
        handle, path = tempfile.mkstemp(prefix="rungrade-preread-")
    except OSError:  # (no temporary folder to write in)
        return None
    os.close(handle)
    return path


def _unlink(path: str | None) -> None:
    if path:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _preread_sample(refs: Iterable[RunRef]) -> list[RunRef]:
    """The runs of `refs` whose clauses a first grade reads first: up to PREREAD_RUNS, spread
    over their folders (`spread_runs`)."""
    return spread_runs(refs, PREREAD_RUNS, PREREAD_RUNS)


def _sampled(bucket: Bucket, runs: Iterable[RunRef]
             ) -> tuple[Iterable[RunRef], list[RunRef] | None]:
    """(`runs`, all of them still to come; the sample `_preread_task` reads). A local root's
    sample is None: the task walks the root's folders itself (`Bucket.sample`), rather than
    this process before it hands out any shard. On S3, where that walk would cost listings,
    the sample comes from the runs discovery has found ahead, which span the top-level
    folders it lists side by side (copies: those runs are graded in their shards as well)."""
    if bucket.local:
        return runs, None
    ahead = iter(runs)
    head = list(itertools.islice(ahead, RUNS_QUEUED))
    return (itertools.chain(head, ahead),
            [dataclasses.replace(r) for r in _preread_sample(head)])


def _trim() -> Callable[[], object]:
    """glibc's `malloc_trim(0)`, or nothing elsewhere: it hands the heap's free pages back to
    the system. Python's freed strings otherwise stay resident, where polars' own allocator
    cannot reuse them."""
    import ctypes
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):  # (TypeError: no C library to name)
        return lambda: None
    return lambda: trim(0)


_TRIM = _trim()


def _frames(rows: RunRows) -> dict[str, pl.DataFrame]:
    """The source tables of `rows`, which are emptied: the outputs' text is then held once,
    in the frames, while it is graded (not also as the Python strings it was read into)."""
    source = source_tables(rows)
    for name in SOURCE_TABLES:
        getattr(rows, name).clear()
    _TRIM()
    return source


def _in_halves(source: dict[str, pl.DataFrame],
               graded: Callable[[dict[str, pl.DataFrame]], Parts],
               failure: BaseException) -> Parts:
    """What `graded` makes of the shard's source tables, which raised `failure` graded
    whole: graded again in halves, each half that raises halved again, until a run that
    fails `graded` by itself is refused as internal-error, with a short traceback.

    For a shard that raises: it is never dropped whole, and the runs of every group that
    passes are kept as graded, so an error that only runs graded together raise (none of
    them alone) fails no run. One bad run among n costs about 2·log2(n) gradings of
    shrinking groups, not n gradings of one run each (each pays a shard's fixed cost).
    """
    uris = source["runs"].get_column("run_uri").unique(maintain_order=True).to_list()
    if not uris:
        return []
    merged: dict[str, tuple[dict[str, list[pl.DataFrame]], dict[str, str]]] = {}

    def keep(parts: Parts) -> None:
        for grader_id, tables, reports in parts:
            frames, texts = merged.setdefault(grader_id, ({}, {}))
            for name, df in tables.items():
                frames.setdefault(name, []).append(df)
            texts.update(reports)

    # (rows without their run row belong to no run that can be reported)
    groups: list[tuple[list[str], BaseException | None]] = [(uris, failure)]
    while groups:  # depth first, the first half first: the runs keep their order
        group, raised = groups.pop()
        if raised is None:
            chosen = pl.col("run_uri").is_in(group)
            try:
                keep(graded({name: df.filter(chosen) for name, df in source.items()}))
                continue
            except RUN_ERRORS as exc:
                if is_outage(exc):
                    raise
                raised = exc
        if len(group) > 1:
            half = len(group) // 2
            groups += [(group[half:], None), (group[:half], None)]
            continue
        runs = source["runs"].filter(pl.col("run_uri") == group[0]).rows(named=True)
        detail = "".join(traceback.format_exception(raised, limit=-3))[-1500:]
        keep(graded(source_tables(RunRows(
            runs=[{**run, "status": "refused"} for run in runs],
            refusals=[{"run_id": run["run_id"], "run_uri": run["run_uri"],
                       "reason": "internal-error", "detail": detail} for run in runs]))))
    return [(grader_id, {name: pl.concat(dfs, how="vertical_relaxed")
                         for name, dfs in frames.items()}, texts)
            for grader_id, (frames, texts) in merged.items()]


class _Engine:
    """Where tasks run: listing and grading pools of `workers` processes, or this process.

    Listing only walks folders, so its pool forks this process (cheap to start, and it never
    touches polars). Grading uses polars and DuckDB, so its pool comes from a clean fork
    server, started only when there is something to grade: a no-change rerun never pays for it.
    A judge keeps one budget, cache and set of statistics per grade, so with a judge the
    grading runs in this process.
    """

    def __init__(self, workers: int, grader: Grader,
                 ledger_graders: tuple[LedgerGrader, ...], judge: Judge | None):
        self.workers = workers
        self.graders = (grader, ledger_graders)
        self.list_pool: ProcessPoolExecutor | None = None
        self.grade_pool: ProcessPoolExecutor | None = None
        self.grade_inline = workers == 1 or judge is not None
        self.generation = 0  # counts grading pools replaced after a worker died
        if self.grade_inline:
            _WORKER.update(grader=grader, ledger_graders=ledger_graders, judge=judge)

    def submit_list(self, fn, *args) -> Future:
        if self.workers > 1 and self.list_pool is None:
            start_resource_tracker()  # (before the pool's semaphores: see there)
            self.list_pool = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=multiprocessing.get_context("fork"),
                initializer=_init_list_worker, initargs=(os.getpid(),))
        if self.list_pool is None:
            return self._submit(None, fn, args)
        # A submit may fork a listing worker. Frozen, what this process holds is never
        # collected in the child, so no finalizer of an object it inherited (a socket, a
        # pool of threads that did not survive the fork) ever runs there.
        gc.freeze()
        try:
            return self._submit(self.list_pool, fn, args)
        finally:
            gc.unfreeze()

    def warm(self) -> None:
        """Start the grading workers now, so their start overlaps discovery."""
        if not self.grade_inline and self.grade_pool is None:
            for _ in range(self.workers):
                self.submit_grade(os.getpid)

    def submit_grade(self, fn, *args) -> Future:
        if not self.grade_inline and self.grade_pool is None:
            modules = [(name, mod.__file__) for name, mod in list(sys.modules.items())
                       if name.startswith("rungrade_user_grader_") and
                       getattr(mod, "__file__", None)]
            self.grade_pool = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=process_context(),
                initializer=_init_worker,
                initargs=(pickle.dumps(self.graders), modules, os.getpid(),
                          {k: v for k, v in os.environ.items() if k.startswith("AWS_")}))
        return self._submit(self.grade_pool, fn, args)

    @staticmethod
    def _submit(pool: ProcessPoolExecutor | None, fn, args) -> Future:
        future: Future = Future()
        if pool is not None:
            try:
                return pool.submit(fn, *args)
            except BrokenProcessPool as exc:  # a worker died: this task fails as the others did
                future.set_exception(exc)
                return future
        try:
            future.set_result(fn(*args))
        except Exception as exc:  # handed to whoever waits on the future, as a pool would
            future.set_exception(exc)
        return future

    def recover(self) -> None:
        """Replace a grading pool that a dead worker broke (every task in it failed too).

        Its other workers are killed first, and waited for: they ignore the SIGTERM the pool
        sends them and would go on grading shards whose tasks have already failed (what they
        stage is never published, see `ResultStore.publish`, but it takes the cores).
        """
        pool, self.grade_pool = self.grade_pool, None
        _discard(pool)
        self.generation += 1

    def recover_lists(self) -> None:
        """Drop a listing pool a dead worker broke; the next listing forks a new one. Its
        other workers are killed: they ignore the SIGTERM the pool sends them, and the pool's
        own clean-up waits for them for good (one blocked writing a result nobody reads held
        the grade, and its lock, until it was killed by hand)."""
        pool, self.list_pool = self.list_pool, None
        _discard(pool)

    def close(self, cancel: bool = False) -> None:
        for pool in (self.list_pool, self.grade_pool):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=cancel)


def _discard(pool: ProcessPoolExecutor | None) -> None:
    """Kill the workers of a broken pool, wait for them, and shut it down."""
    if pool is None:
        return
    workers = list((getattr(pool, "_processes", None) or {}).values())
    for worker in workers:
        with contextlib.suppress(OSError):
            worker.kill()
    for worker in workers:
        worker.join(timeout=60)  # (only a process stuck in the kernel outlives a kill)
    pool.shutdown(wait=False, cancel_futures=True)


def _classified(engine: _Engine, bucket: Bucket, runs: Iterable[RunRef], job: Job,
                known: dict[str, str], index: ListingIndex | None = None,
                listed: list | None = None) -> Iterator[tuple[str, RunRef]]:
    """Every run of `runs` (the bucket's) with its status, in discovery order; listings in
    parallel (by the saved listing of `index` where it has one). The listing rows of unchanged
    runs that had none are added to `listed`.

    Local listing workers are forks of this process made at the first task, so they inherit
    `index` (`_LISTED`): each task then carries only its runs, and each worker unpacks the
    saved listings of the runs it checks. Other engines get the listings with the runs.
    """
    if not bucket.local:  # S3: the listing already holds sizes and mtimes
        for ref in runs:
            status = _status(ref, known.get(ref.uri))
            if status == "unchanged" and not job.full:
                ref.files = {}
            yield status, ref
        return
    saved = index is not None and isinstance(engine, _Engine)
    if saved:
        _LISTED["index"] = index
    window: deque[tuple[list[RunRef], Future]] = deque()
    limit = 2 * engine.workers + 2
    held = False  # whether a new run holds anything: the grading workers start for it anyway
    try:
        for chunk in chunks(runs, LIST_CHUNK):
            # a run never graded is new whatever its files: the worker grading it lists it
            seen = [(r, known[r.uri], index.take(r.uri) if index and not saved else None)
                    for r in chunk if r.uri in known]
            for r in chunk:
                if r.uri in known:
                    continue
                # Until one does, an empty one (never committed, so new every night) is told
                # here: it started the grading workers of a no-change night, only for a
                # worker to find it empty
                if not held and _empty_folder(bucket, r):
                    yield "empty", r
                    continue
                held = True
                yield "new", r
            if seen:
                window.append(([r for r, _, _ in seen],
                               engine.submit_list(_list_task, job, seen, saved),
                               (job, seen, saved)))
            while len(window) >= limit:
                yield from _statuses(engine, *window.popleft(), listed)
        while window:
            yield from _statuses(engine, *window.popleft(), listed)
    finally:
        _LISTED.clear()


def _empty_folder(bucket: Bucket, ref: RunRef) -> bool:
    """Whether the local run `ref`, not yet listed, is a folder holding nothing (opened as its
    listing opens it: from the root, through no symlink)."""
    try:
        fd = bucket.open_run_folder(ref.path)
    except OSError:  # a symlink, a file, gone: its listing will say
        return False
    try:
        with os.scandir(fd) as entries:
            return next(entries, None) is None
    except OSError:
        return False
    finally:
        os.close(fd)


def _statuses(engine: Engine, refs: list[RunRef], future: Future, task: tuple,
              listed: list | None) -> Iterator[tuple[str, RunRef]]:
    """The statuses a listing task found; listed again here (`task`: its arguments) when its
    worker died (killed, out of memory), the pool it broke dropped."""
    try:
        found = future.result()
    except Exception as exc:
        if not _worker_died(exc):
            raise
        engine.recover_lists()
        found = _list_task(*task)
    for sent, (status, ref, row) in zip(refs, found, strict=True):
        if row is not None and listed is not None:
            listed.append(row)
        yield status, ref or sent


def _worker_died(exc: BaseException) -> bool:
    """True when a task failed because its worker process died (killed, out of memory): a
    broken local pool, a task Dask gave up on after its retries, or one Dask cancelled when
    the workers holding what it needed died."""
    return isinstance(exc, BrokenProcessPool) or type(exc).__name__ in (
        "KilledWorker", "FutureCancelledError")


def _result_or_nothing(future: Future) -> Shard | None:
    try:
        return future.result()
    except Exception as exc:
        if _worker_died(exc):
            return None
        raise


DIED = ("the worker process grading this run died each time (killed, or out of memory), "
        "last when it was graded alone; its files were not read again")


def _isolated(engine: Engine, job: Job, batch_id: str, refs: list[RunRef], generation: int,
              parts: Iterator[int],
              graders: tuple[Grader, tuple[LedgerGrader, ...]]) -> list[Shard]:
    """Grade again the runs of a shard whose worker died, halving the groups that die again,
    until each run that kills its worker alone is refused as internal-error (`DIED`); the
    other runs are graded as usual. Returns the shard results of the groups, in order.

    A dead worker breaks a local pool and every task in it, so the pool is replaced once per
    death (`generation` tells a new death from an old one), and the innocent shards of the
    batch come back here too: graded whole on the first try, they cost one more pass.
    """
    def after_death(generation: int) -> None:
        # (what the dead task staged is never published: its result was not taken)
        if engine.generation == generation:  # not yet recovered from this death
            engine.recover()

    after_death(generation)
    results: list[Shard] = []
    groups = [refs]
    while groups:
        group = groups.pop()
        generation = engine.generation
        try:
            results.append(engine.submit_grade(_grade_task, job, batch_id, next(parts),
                                               group).result())
            continue
        except Exception as exc:
            if not _worker_died(exc):
                raise
        after_death(generation)
        if len(group) > 1:
            half = len(group) // 2
            groups += [group[half:], group[:half]]  # the first half is graded first
            continue
        # refused here, without reading the run: in this process, with this job's graders
        # (a pool that can lose workers means grading is not inline: no judge to keep)
        _WORKER.update(grader=graders[0], ledger_graders=graders[1], judge=None)
        results.append(_grade_task(job, batch_id, next(parts), group, died=DIED))
    return results


class InterruptedAfterCommits(KeyboardInterrupt):
    """Ctrl-C after a grade committed every batch, while it wrote the catalog: its results
    are whole, and only `catalog.duckdb` lags behind them (the next grade, or `rungrade
    catalog`, writes it again)."""


class MisplacedFolder(FileNotFoundError):
    """A runs root that holds no run because it is something else (results, or a run), or a
    results folder inside a run, where it would be taken for part of that run."""


def misplaced_root(bucket: Bucket, runs_uri: str, results_uri: str) -> str | None:
    """What a runs root is instead, when no run was found in it, and what to give: results
    (other than the grade's own, kept beside the runs), or a run folder itself; else None."""
    if bucket.holds_results() and split_uri(results_uri) != split_uri(runs_uri):
        return (f"{runs_uri} holds rungrade results (_commits/) and no run folder: give the "
                "folder that holds the run folders as RUNS, and the results folder as --out")
    if bucket.looks_like_a_run():
        above = runs_uri.rstrip("/").rpartition("/")[0] or "."
        return (f"{runs_uri} is itself a run folder: runs are looked for in the folders under "
                f"RUNS, so none was found. Give the folder that holds it: {above}")
    return None


def _misplaced_local_root(runs_uri: str, results_uri: str, endpoint_url: str | None
                          ) -> str | None:
    """`misplaced_root` of a local runs root that holds no run, found before anything is
    written (arguments given the wrong way round leave no lock nor grade record in the
    runs); an S3 root is told after its grade, which lists it anyway."""
    if not runs_uri.strip() or split_uri(runs_uri)[0] != "file":
        return None
    bucket = Bucket(runs_uri, endpoint_url)
    if not os.path.isdir(bucket.root):
        return None
    problem = misplaced_root(bucket, runs_uri, results_uri)
    return problem if problem and next(bucket.sample(1), None) is None else None


def _results_in_a_run(runs_uri: str, results_uri: str) -> str | None:
    """What is wrong with results kept inside a run folder of RUNS (or in a folder named like
    a run), local or on S3: the run would count them as its files, changed at every grade (or
    they would be found as a run); None when they are not."""
    (protocol, runs), (other, results) = split_uri(runs_uri), split_uri(results_uri)
    if protocol != other or protocol not in ("file", "s3"):
        return None
    if protocol == "file":
        runs, results = os.path.realpath(runs), os.path.realpath(results)
        names = os.path.relpath(results, runs).split(os.sep)
        if os.path.commonpath([runs, results]) != runs or results == runs:
            return None
    else:  # (keys: the same bucket, the results' prefix below the runs')
        runs, results = runs.rstrip("/"), results.rstrip("/")
        if not results.startswith(runs + "/"):
            return None
        names = results[len(runs) + 1:].split("/")
    folder = runs
    for name in names:
        folder = f"{folder}/{name}"
        # (on S3 by its name only: a folder's own keys would cost a request each)
        if RUN_DIR.match(name) or (protocol == "file" and os.path.isdir(folder)
                                   and Bucket(folder).looks_like_a_run()):
            shown_folder = folder if protocol == "file" else f"s3://{folder}"
            return (f"the results folder {results_uri} lies in {shown_folder}, which is "
                    f"{'named like' if RUN_DIR.match(name) else 'itself'} a run folder: it "
                    "would be graded as part of that run (or as a run), changed at every "
                    "grade. Keep the results outside the run folders (beside RUNS, or in a "
                    "folder of RUNS named otherwise)")
    return None


def _refuse_broken_checks(grader: Grader) -> None:
    """GraderError, before anything is read or written, when a check of `grader` reads a
    column the clause frame does not have (`checks.grader.refuse_unknown_columns`), or
    cannot be computed on the clause frame's column types (a number compared with a word):
    either refused every run with a clause `internal-error`. Both are told on the frame of no
    run, so that a check is never stopped for what some outputs hold (errors that depend on a
    value, such as a list cast to text where a row has one, still refuse the runs they meet).
    The built-in checks are known to pass: the frame costs about a second (its clause
    readings' query), which a no-change rerun would spend for nothing."""
    names = [c.name for c in grader.checks]
    if len(names) == len(BUILTIN_NAMES) and set(names) == BUILTIN_NAMES:
        return
    empty = source_tables(RunRows())
    unmeasured = clause_frame(empty["clauses"], empty["services"], empty["bindings"],
                              measured=False)

    def computed(c: Check, order: int, frame: pl.DataFrame | None) -> pl.DataFrame:
        """The frame measured for `c` (when `frame` is None), then `c` computed on it."""
        try:
            frame = measure([c], unmeasured) if frame is None else frame
            # (as stored: a confidence that is text, or evidence that is a number, fails
            # only there)
            collect(finished(judged_rows(frame, c, order)))
            if c.needs:  # (read where measures are planned, on the rows after `each`)
                rows = frame.lazy() if c.each is None else frame.lazy().explode(c.each)
                collect(rows.select(e.alias(n) for n, e in c.needs.items()))
        except pl.exceptions.PolarsError as exc:
            said = str(exc).strip().split("\n")[0]
            raise GraderError(f"check {c.name!r} cannot be computed on the clause frame's "
                              f"columns: {said} (check {order + 1} of the grader)") from exc
        except Exception:  # (code of the check's own, run on no row: told where it runs)
            pass
        return frame

    try:
        frame = measure(grader.checks, unmeasured)
    except pl.exceptions.PolarsError:  # (whose: each check measured alone says)
        for order, c in enumerate(grader.checks):
            computed(c, order, None)
        raise
    refuse_unknown_columns(grader.checks, frame.columns)
    for order, c in enumerate(grader.checks):
        computed(c, order, frame)


def grade_runs(runs_uri: str, results_uri: str, grader: Grader, *, batch_size: int = 2000,
               workers: int | None = None, shard_runs: int = SHARD_RUNS,
               shard_bytes: int = SHARD_BYTES, endpoint_url: str | None = None,
               binding_cap: int = DEFAULT_BINDING_CAP, validate: bool = False,
               full: bool = False, ledger_graders: tuple[LedgerGrader, ...] | None = None,
               judge: Judge | None = None, engine: EngineFactory | None = None,
               progress: Callable[[str, int, int | None], None] | None = None,
               should_stop: Callable[[], bool] = lambda: False) -> Summary:
    """Grade the new and changed runs under `runs_uri` into `results_uri`; return a Summary.

    Runs already committed under this job's grader ids with the same fingerprint are skipped
    (all are graded when `full`). The rest are graded in batches of `batch_size` runs, each
    batch read and graded in worker processes, in shards of at most `shard_runs` runs (a
    worker's memory follows its shard; larger shards spend less CPU a run), a shard graded a
    group of runs at a time once their outputs' text and rows reach `shard_bytes`, and
    committed on its own (one commit per grader id): a crash loses at most the batches not
    yet committed, and the next run redoes them. `ledger_graders` grade moltzap ledgers
    (default: the built-in ones). With a `judge`, OpenProse rows are stamped with the judged
    grader id (see `Judge.grader`). `should_stop` is asked before a batch starts and before
    it is published: when it says yes, the batches in hand are abandoned (never
    half-published) and `summary.stopped` is set. `engine` decides where the tasks run
    (default: processes on this machine; see pipeline/engines.py for Dask).
    Refuses with FileNotFoundError when the runs root does not exist (or either root is a
    file), and with ResultsLocked when another `grade` is writing to the same results.
    """
    if shard_runs < 1:
        raise ValueError(f"shard_runs must be at least 1, not {shard_runs}")
    if shard_bytes < 1:
        raise ValueError(f"shard_bytes must be at least 1, not {shard_bytes}")
    ledger_graders = default_ledger_graders() if ledger_graders is None else ledger_graders
    main_id = judge.grader(grader).grader_id if judge else grader.grader_id
    if not runs_uri.strip():  # (an unset variable in a script: never the current folder)
        raise FileNotFoundError("the runs root is empty: give the folder or s3:// prefix "
                                "that holds the run folders")
    if misplaced := (_misplaced_local_root(runs_uri, results_uri, endpoint_url)
                     or _results_in_a_run(runs_uri, results_uri)):
        raise MisplacedFolder(misplaced)
    _refuse_broken_checks(grader)
    bucket = Bucket(runs_uri, endpoint_url)
    if not bucket.exists():
        raise FileNotFoundError(f"runs root {runs_uri} " + (
            (bucket.local and no_folder_for(bucket.root)) or "does not exist"))
    if not bucket.local and bucket.fs.isfile(bucket.root):  # (a key, not a prefix)
        raise FileNotFoundError(f"runs root {runs_uri} is an object, not a prefix of objects: "
                                "give the prefix that holds the run folders")
    store = ResultStore(results_uri, endpoint_url)
    if store.local and (why := no_folder_for(store.root)):
        raise FileNotFoundError(f"results folder {results_uri} {why}")
    # (named: runs or results? Results may be kept at the runs prefix itself on S3)
    if not store.local and (missing := store.holds_nothing("", runs=False)):
        raise FileNotFoundError(f"results {missing}")
    started = time.monotonic()
    summary = Summary(shown(runs_uri), results_uri, main_id, full=full,
                      versions=library_versions())
    workers = max(1, workers or os.cpu_count() or 1)
    job = Job(runs_uri, results_uri, endpoint_url, binding_cap, validate, full, shard_bytes)
    # discovery starts now, while the results are read (at most RUNS_QUEUED runs ahead)
    with contextlib.closing(Ahead([bucket.discover()], RUNS_QUEUED, 1)) as runs, \
            store.lock() as still_locked, GradeLog(store, summary, started) as log:
        # Independent (fingerprints read committed parts only, discarding touches none): they
        # overlap, which on S3 spares a few round trips.
        with ThreadPoolExecutor(1) as pool:
            discarded = pool.submit(store.discard_uncommitted)
            commits = store.commits()  # (and, as they commit, this grade's batches)
            ledger_ids = [g.grader_id for g in ledger_graders]
            known = store.fingerprints({main_id, *ledger_ids}, commits,
                                       ledger_graders_changed(commits, main_id, ledger_ids))
            summary.discarded = discarded.result()
        if store.replaced_left:  # what a compaction, killed, left (see pipeline/compact.py)
            tidy_compacted(store)
        index = store.listings(known) if bucket.local else None
        owners = ReportOwners(store)  # who holds each report's name, read when one publishes
        listed: list[tuple[str, str, str, bytes]] = []  # listings of unchanged runs, to keep

        def keep_listed() -> None:
            with contextlib.suppress(OSError):  # a cache: without it runs are listed anew
                store.save_listings(f"{new_batch_id()}-listed", listed)
            listed.clear()
        engine = (engine or _Engine)(workers, grader, ledger_graders, judge)
        workers = engine.workers
        if judge and progress:
            judge.on_progress = lambda done, total: progress("asking the judge", done, total)
        if judge:
            judge.should_stop = should_stop
        if (full or not known) and hasattr(engine, "warm"):
            engine.warm()  # everything will be graded: start the workers right away
        found: Iterable[RunRef] = runs
        preread = None  # held until the end: Dask forgets a task nobody holds
        read_first = False  # the first batch waits for `preread`
        mark = None  # or its shards read their runs meanwhile (`Job.preread_mark`)
        # per batch: (shard refs, pool generation, future) of each shard
        inflight: deque[tuple[str, list[tuple[list[RunRef], int, Future]]]] = deque()

        discovered = False  # every run found (the bar then has its total and a time left)

        def show_progress() -> None:
            if progress:
                done = summary.graded + summary.refused
                if discovered:
                    progress("grading", done, summary.found - summary.skipped)
                else:
                    progress(f"finding and grading runs ({summary.found:,} found)", done, None)

        # committed, or started here; a compacted batch, named after its first, sorts before
        # the batches it replaces: their ids count too (each batch's `graded_in` orders a
        # ledger's gradings across grader ids, see catalog)
        latest = max((b for c in commits for b in (c["batch_id"], *c.get("replaces", ()))),
                     default=None)

        def start(refs: list[RunRef], last: bool = False) -> None:
            nonlocal latest, read_first
            batch_id = latest = new_batch_id(after=latest)
            # The first shards wait for the sample's reading and find its clauses read,
            # rather than each reading them again beside it (about a second of CPU each,
            # whatever their number). Its failure changes nothing: the shards read.
            if read_first:
                read_first = False
                with contextlib.suppress(Exception):
                    preread.result()
            # one shard per worker, but never so large that a worker's memory follows the
            # batch; shards of even sizes (one run apart at most), so that none pays a shard's
            # fixed cost for a remainder (2,000 runs with at most 600 a shard: four of 500,
            # not 600, 600, 600 and 200)
            count = -(-len(refs) // min(-(-len(refs) // workers), shard_runs))
            if last:  # nothing follows: as many shards per worker, so none idles at the end
                count = min(-(-count // workers) * workers, len(refs))
            size, more = divmod(len(refs), count)  # the first `more` shards hold one run more
            shards = [refs[k * size + min(k, more):(k + 1) * size + min(k + 1, more)]
                      for k in range(count)]
            generation = engine.generation
            inflight.append((batch_id, [
                (shard, generation, engine.submit_grade(_grade_task, job, batch_id, k, shard))
                for k, shard in enumerate(shards)]))

        def finish() -> None:
            batch_id, tasks = inflight.popleft()
            shards: list[Shard] = []
            parts = iter(range(len(tasks), 1 << 30))  # numbers for shards graded again
            for refs, generation, future in tasks:
                try:
                    shards.append(future.result())
                except Exception as exc:
                    if not _worker_died(exc):
                        raise
                    shards += _isolated(engine, job, batch_id, refs, generation, parts,
                                        (grader, ledger_graders))
            if should_stop():
                summary.stopped = True
                abandon(batch_id, shards)
                return
            still_locked()
            ids = sorted({g for shard in shards for g in shard.stats}, key=lambda g: g != main_id)
            attempts = {a for shard in shards for a in shard.attempts}  # (and none other)
            for grader_id in ids:
                stats = [shard.stats[grader_id] for shard in shards if grader_id in shard.stats]
                counts = {"runs": sum(s["runs"] for s in stats),
                          "refused": sum(s["refused"] for s in stats),
                          "rows": dict(sum((s["rows"] for s in stats), Counter())),
                          "grade_id": summary.grade_id}  # (for the record: see store)
                if grader_id == main_id:  # (its refused ledgers were read with these)
                    counts[LEDGER_GRADERS] = sorted(g.grader_id for g in ledger_graders)
                committed = batch_for(batch_id, grader_id, main_id)
                if counts["runs"]:
                    store.publish(committed, grader_id, counts, attempts, owners)
                    summary.batches.append(committed)
                    commits.append({"batch_id": committed, "grader_id": grader_id})
                else:
                    store.discard(committed)
                for shard in stats:
                    summary.add(shard)
            with contextlib.suppress(OSError):  # a cache: without it runs are listed anew
                store.save_listings(batch_id, [row for shard in shards for row in shard.listings])
            log.committed()
            show_progress()

        def abandon(batch_id: str, shards: list[Shard | None]) -> None:
            for grader_id in {g for shard in shards if shard for g in shard.stats} | {main_id}:
                store.discard(batch_for(batch_id, grader_id, main_id))

        try:
            if (full or not known) and PREREAD_RUNS:  # a first grade: its first task reads
                found, sample = _sampled(bucket, runs)   # the clauses of a sample of the runs
                if sample is None or sample:
                    mark = _preread_mark(engine)
                    preread = engine.submit_grade(_preread_task, job, sample)
                    if mark:
                        preread.add_done_callback(lambda _: _unlink(mark))
                        job = dataclasses.replace(job, preread_mark=mark)
                    else:
                        read_first = True
            pending: list[RunRef] = []
            for status, ref in _classified(engine, bucket, found, job, known, index, listed):
                if len(listed) >= LISTED_KEPT_EVERY:
                    keep_listed()
                if status == "empty":
                    continue
                summary.see(status)
                if summary.found % PROGRESS_EVERY == 0:
                    show_progress()
                if status == "unchanged" and not full:
                    continue
                pending.append(ref)
                # a full batch starts when one more run is found: the last batch is always
                # the one started below
                if len(pending) > batch_size:
                    if should_stop():
                        summary.stopped = True
                        break
                    start(pending[:batch_size])
                    pending = pending[batch_size:]
                while len(inflight) > 1:  # one batch graded while the next is collected
                    finish()
                if summary.stopped:
                    break
            discovered = True
            show_progress()
            if pending and not summary.stopped and not should_stop():
                start(pending, last=True)
            elif pending:
                summary.stopped = True
            while inflight:
                if summary.stopped:  # the batches in hand are abandoned, never half-published
                    batch_id, tasks = inflight.popleft()
                    abandon(batch_id, [_result_or_nothing(f) for _, _, f in tasks])
                else:
                    finish()
        except BaseException:
            engine.close(cancel=True)
            _unlink(mark)
            for batch_id, _ in inflight:
                with contextlib.suppress(OSError):  # the next grade removes what is left
                    abandon(batch_id, [])
            raise
        if preread is not None:
            with contextlib.suppress(Exception):  # long done; its failure changes nothing
                preread.result()
            _unlink(mark)
        summary.unlisted = list(bucket.unlisted)  # (discovery is over)
        # every batch is in: the workers stop while the catalog is written
        closing = threading.Thread(target=engine.close, name="rungrade-engine-close")
        closing.start()
        try:
            if listed:
                keep_listed()
            if summary.graded + summary.refused:
                with contextlib.suppress(Exception):  # a cache: tidied on a later grade
                    store.tidy_readings(readings_version())
            show_progress()
            # (a grade that commits nothing mends a catalog written for other batches or
            # another folder)
            if summary.batches or catalog_stale(store, commits):
                write_catalog(store)
        except BaseException as exc:
            if interrupted(exc):
                raise InterruptedAfterCommits from exc
            raise
        finally:
            closing.join()
        if judge:
            summary.judging = judge.stats.as_dict()
        summary.uncompacted = uncompacted(commits)
    return summary
