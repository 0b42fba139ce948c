"""The grading flow: discover, read + flatten, check, score, store. Stages pass tables.

`grade_tables` is the pure part (tables in, tables out) that every engine runs; `grade_runs`
drives it over a runs root in committed batches.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import pickle
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field

import polars as pl

from .catalog import write_catalog
from .checks.frame import clause_frame
from .checks.grader import Grader, run_checks
from .checks.verdicts import clause_verdicts
from .reports import build_reports
from .scoring import run_models
from .sources.bucket import Bucket, RunRef
from .sources.prose import DEFAULT_BINDING_CAP, RunRows, read_run
from .store import ResultStore, new_batch_id
from .tables import SOURCE_TABLES, conform, frame


def source_tables(rows: RunRows) -> dict[str, pl.DataFrame]:
    return {name: frame(name, getattr(rows, name)) for name in SOURCE_TABLES}


def grade_tables(source: dict[str, pl.DataFrame], grader: Grader
                 ) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """Check, judge and score a batch. Returns (all tables stamped with grader_id, clause frame)."""
    stamp = pl.lit(grader.grader_id).alias("grader_id")
    tables = {name: source[name].with_columns(stamp) for name in SOURCE_TABLES}
    clauses = clause_frame(tables["clauses"], tables["services"], tables["bindings"])
    checks = run_checks(grader, clauses)
    tables["checks"] = checks
    tables["clause_verdicts"] = clause_verdicts(clauses, checks, grader.grader_id)
    tables.update({name: conform(name, df) for name, df in run_models(tables).items()})
    return tables, clauses


@dataclass
class Summary:
    """What a `grade` did. found = new + changed + unchanged; graded + refused = the runs read.

    Unchanged runs (same fingerprint as their committed rows under this grader id) are skipped
    unless `full`; then graded + refused + skipped = found.
    """

    runs_uri: str
    results_uri: str
    grader_id: str
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
    score_sum: float = 0.0
    scored: int = 0
    batches: list[str] = field(default_factory=list)
    discarded: list[str] = field(default_factory=list)

    @property
    def mean_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None

    def add(self, stats: dict) -> None:
        """Add the `shard_stats` of one graded shard."""
        self.graded += stats["graded"]
        self.refused += stats["refused"]
        self.refusals.update(stats["refusals"])
        self.verdicts.update(stats["verdicts"])
        self.score_sum += stats["score_sum"]
        self.scored += stats["scored"]

    def see(self, status: str) -> None:
        """Count one discovered run as new, changed or unchanged (and maybe skipped)."""
        self.found += 1
        setattr(self, status, getattr(self, status) + 1)
        if status == "unchanged" and not self.full:
            self.skipped += 1

    def as_dict(self) -> dict:
        return {
            "runs": self.runs_uri, "results": self.results_uri, "grader_id": self.grader_id,
            "found": self.found, "new": self.new, "changed": self.changed,
            "unchanged": self.unchanged, "skipped": self.skipped, "full": self.full,
            "graded": self.graded, "refused": self.refused,
            "refusals": dict(sorted(self.refusals.items())),
            "verdicts": dict(sorted(self.verdicts.items())), "mean_overall_score":
            None if self.mean_score is None else round(self.mean_score, 2),
            "batches": self.batches, "discarded": self.discarded,
        }


def shard_stats(tables: dict[str, pl.DataFrame]) -> dict:
    """The counts a shard adds to the summary (small and picklable, unlike its tables)."""
    runs = tables["runs"]
    scores = tables["run_scores"]
    valid = scores["overall_score"].drop_nulls()
    return {
        "runs": runs.height,
        "graded": runs.filter(pl.col("status") == "graded").height,
        "refused": runs.filter(pl.col("status") == "refused").height,
        "refusals": Counter(tables["refusals"]["reason"].to_list()),
        "verdicts": Counter(scores["overall_verdict"].drop_nulls().to_list()),
        "score_sum": float(valid.sum()) if len(valid) else 0.0,
        "scored": len(valid),
    }


def _read_shard(args: tuple[str, str | None, list[RunRef], int]) -> RunRows:
    runs_uri, endpoint, refs, cap = args
    bucket = Bucket(runs_uri, endpoint)
    rows = RunRows()
    for ref in refs:
        rows.extend(read_run(bucket, bucket.list_run(ref), cap))
    return rows


def read_runs(runs_uri: str, refs: list[RunRef], *, endpoint_url: str | None = None,
              binding_cap: int = DEFAULT_BINDING_CAP, workers: int = 1,
              on_progress: Callable[[int], None] | None = None) -> RunRows:
    """Read + flatten runs, in worker processes over shards when `workers` > 1."""
    shard = max(1, min(64, len(refs) // max(1, workers * 4) or 1))
    shards = [refs[i:i + shard] for i in range(0, len(refs), shard)]
    rows = RunRows()
    if workers <= 1 or len(shards) <= 1:
        for part in shards:
            rows.extend(_read_shard((runs_uri, endpoint_url, part, binding_cap)))
            if on_progress:
                on_progress(len(part))
        return rows
    with ProcessPoolExecutor(max_workers=workers, mp_context=_process_context()) as pool:
        jobs = [(runs_uri, endpoint_url, part, binding_cap) for part in shards]
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
SHARD_RUNS = 500  # at most this many runs read and graded per task


@dataclass(frozen=True)
class Job:
    """Everything a worker needs besides the runs themselves (pickled once per task)."""

    runs_uri: str
    results_uri: str
    endpoint_url: str | None
    binding_cap: int
    validate: bool
    full: bool


_WORKER: dict = {}  # per-process state: the grader, set once by _init_worker


def _process_context():
    # Fresh interpreters forked from a clean server: polars' and duckdb's thread pools are
    # never inherited mid-use (a fork of a process that has used polars can deadlock).
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["pipeline.grade"])
    return ctx


def _init_worker(grader_blob: bytes, modules: list[tuple[str, str]], parent: int,
                 aws: dict[str, str]) -> None:
    """Load user grader modules, unpickle the grader, and die with the grading process."""
    # The fork server kept the environment of its start; S3 settings follow this job's.
    os.environ.update(aws)
    for name, path in modules:
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, path)
            if spec and spec.loader:
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec.loader.exec_module(module)
    _WORKER["grader"] = pickle.loads(grader_blob)
    _init_watchdog(parent)


def _init_watchdog(parent: int) -> None:
    """Exit this worker as soon as the grading process is gone (even after a kill -9)."""
    ppid = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.5)
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                os._exit(1)
            if os.getppid() != ppid:
                os._exit(1)

    threading.Thread(target=watch, name="rungrade-watchdog", daemon=True).start()


def _list_task(job: Job, items: list[tuple[RunRef, str | None]]
               ) -> list[tuple[str, RunRef]]:
    """List and fingerprint runs; return (status, run), dropping the listing of a skip."""
    bucket = Bucket(job.runs_uri, job.endpoint_url)
    out = []
    for ref, known in items:
        bucket.list_run(ref)
        status = _status(ref, known)
        if status == "unchanged" and not job.full:
            ref.files = {}
        out.append((status, ref))
    return out


def _status(ref: RunRef, known: str | None) -> str:
    if known is None:
        return "new"
    return "unchanged" if ref.fingerprint == known else "changed"


def _grade_task(job: Job, batch_id: str, part: int, refs: list[RunRef]) -> dict:
    """Read, flatten, grade and stage one shard of a batch; return its `shard_stats`."""
    grader: Grader = _WORKER["grader"]
    rows = _read_shard((job.runs_uri, job.endpoint_url, refs, job.binding_cap))
    tables, clause_rows = grade_tables(source_tables(rows), grader)
    if job.validate:
        from .tables import validate as validate_tables
        validate_tables(tables)
    reports = build_reports(tables, clause_rows)
    ResultStore(job.results_uri, job.endpoint_url).stage_part(
        batch_id, part, grader.grader_id, tables, reports)
    return shard_stats(tables)


class _Engine:
    """Where tasks run: listing and grading pools of `workers` processes, or this process.

    Listing only walks folders, so its pool forks this process (cheap to start, and it never
    touches polars). Grading uses polars and DuckDB, so its pool comes from a clean fork
    server, started only when there is something to grade: a no-change rerun never pays for it.
    """

    def __init__(self, workers: int, grader: Grader):
        self.workers = workers
        self.grader = grader
        self.list_pool: ProcessPoolExecutor | None = None
        self.grade_pool: ProcessPoolExecutor | None = None
        if workers == 1:
            _WORKER["grader"] = grader

    def submit_list(self, fn, *args) -> Future:
        if self.workers > 1 and self.list_pool is None:
            self.list_pool = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=multiprocessing.get_context("fork"),
                initializer=_init_watchdog, initargs=(os.getpid(),))
        return self._submit(self.list_pool, fn, args)

    def submit_grade(self, fn, *args) -> Future:
        if self.workers > 1 and self.grade_pool is None:
            modules = [(name, mod.__file__) for name, mod in list(sys.modules.items())
                       if name.startswith("rungrade_user_grader_") and
                       getattr(mod, "__file__", None)]
            self.grade_pool = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=_process_context(),
                initializer=_init_worker,
                initargs=(pickle.dumps(self.grader), modules, os.getpid(),
                          {k: v for k, v in os.environ.items() if k.startswith("AWS_")}))
        return self._submit(self.grade_pool, fn, args)

    @staticmethod
    def _submit(pool: ProcessPoolExecutor | None, fn, args) -> Future:
        if pool is not None:
            return pool.submit(fn, *args)
        future: Future = Future()
        try:
            future.set_result(fn(*args))
        except Exception as exc:  # handed to whoever waits on the future, as a pool would
            future.set_exception(exc)
        return future

    def close(self, cancel: bool = False) -> None:
        for pool in (self.list_pool, self.grade_pool):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=cancel)


def _classified(engine: _Engine, bucket: Bucket, job: Job, known: dict[str, str]
                ) -> Iterator[tuple[str, RunRef]]:
    """Every run of the bucket with its status, in discovery order; listings in parallel."""
    if not bucket.local:  # S3: the listing already holds sizes and mtimes
        for ref in bucket.discover():
            status = _status(ref, known.get(ref.uri))
            if status == "unchanged" and not job.full:
                ref.files = {}
            yield status, ref
        return
    window: deque[Future] = deque()
    limit = 2 * engine.workers + 2
    for chunk in chunks(bucket.discover(), LIST_CHUNK):
        # a run never graded is new whatever its files: the worker grading it lists it
        seen = [(r, known[r.uri]) for r in chunk if r.uri in known]
        yield from (("new", r) for r in chunk if r.uri not in known)
        if seen:
            window.append(engine.submit_list(_list_task, job, seen))
        while len(window) >= limit:
            yield from window.popleft().result()
    while window:
        yield from window.popleft().result()


def grade_runs(runs_uri: str, results_uri: str, grader: Grader, *, batch_size: int = 2000,
               workers: int | None = None, endpoint_url: str | None = None,
               binding_cap: int = DEFAULT_BINDING_CAP, validate: bool = False,
               full: bool = False,
               progress: Callable[[str, int, int | None], None] | None = None) -> Summary:
    """Grade the new and changed runs under `runs_uri` into `results_uri`; return a Summary.

    Runs already committed under this grader id with the same fingerprint are skipped (all
    are graded when `full`). The rest are graded in batches of `batch_size` runs, each batch
    read and graded in worker processes, one shard per worker, and committed on its own: a
    crash loses at most the batches not yet committed, and the next run redoes them.
    Refuses with FileNotFoundError when the runs root does not exist, and with ResultsLocked
    when another `grade` is writing to the same results.
    """
    bucket = Bucket(runs_uri, endpoint_url)
    if not bucket.exists():
        raise FileNotFoundError(f"runs root {runs_uri} does not exist")
    store = ResultStore(results_uri, endpoint_url)
    summary = Summary(runs_uri, results_uri, grader.grader_id, full=full)
    workers = max(1, workers or os.cpu_count() or 1)
    job = Job(runs_uri, results_uri, endpoint_url, binding_cap, validate, full)
    with store.lock() as still_locked:
        summary.discarded = store.discard_uncommitted()
        known = store.fingerprints({grader.grader_id})
        engine = _Engine(workers, grader)
        inflight: deque[tuple[str, list[Future]]] = deque()

        def start(refs: list[RunRef]) -> None:
            batch_id = new_batch_id()
            # one shard per worker, but never so large that a worker's memory follows the batch
            size = min(-(-len(refs) // workers), SHARD_RUNS)
            shards = [refs[i:i + size] for i in range(0, len(refs), size)]
            inflight.append((batch_id, [engine.submit_grade(_grade_task, job, batch_id, k, shard)
                                        for k, shard in enumerate(shards)]))

        def finish() -> None:
            batch_id, futures = inflight.popleft()
            stats = [f.result() for f in futures]
            still_locked()
            counts = {"runs": sum(s["runs"] for s in stats),
                      "refused": sum(s["refused"] for s in stats)}
            store.publish(batch_id, grader.grader_id, counts)
            summary.batches.append(batch_id)
            for shard in stats:
                summary.add(shard)
            if progress:
                progress("grade", summary.graded + summary.refused, None)

        try:
            pending: list[RunRef] = []
            for status, ref in _classified(engine, bucket, job, known):
                summary.see(status)
                if status == "unchanged" and not full:
                    continue
                pending.append(ref)
                if len(pending) >= batch_size:
                    start(pending)
                    pending = []
                while len(inflight) > 1:  # one batch graded while the next is listed
                    finish()
            if pending:
                start(pending)
            while inflight:
                finish()
        except BaseException:
            engine.close(cancel=True)
            raise
        engine.close()
        if progress:
            progress("grade", summary.graded + summary.refused, summary.found - summary.skipped)
        if summary.batches:
            write_catalog(store)
    return summary
