"""The grading flow: discover, read + flatten, check, score, store. Stages pass tables.

`grade_tables` is the pure part (tables in, tables out) that every engine runs; `grade_runs`
drives it over a runs root in committed batches.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import polars as pl

from .catalog import write_catalog
from .checks.frame import clause_frame
from .checks.grader import Grader, run_checks
from .checks.verdicts import clause_verdicts
from .reports import build_reports
from .scoring import run_models
from .sources.bucket import Bucket, RunRef, group_runs
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
    runs_uri: str
    results_uri: str
    grader_id: str
    found: int = 0
    graded: int = 0
    refused: int = 0
    refusals: Counter = field(default_factory=Counter)
    verdicts: Counter = field(default_factory=Counter)
    score_sum: float = 0.0
    scored: int = 0
    batches: list[str] = field(default_factory=list)
    discarded: list[str] = field(default_factory=list)
    stopped: bool = False  # a stop was requested; runs of later batches were not graded

    @property
    def mean_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None

    def add(self, tables: dict[str, pl.DataFrame]) -> None:
        runs = tables["runs"]
        self.graded += runs.filter(pl.col("status") == "graded").height
        self.refused += runs.filter(pl.col("status") == "refused").height
        self.refusals.update(tables["refusals"]["reason"].to_list())
        scores = tables["run_scores"]
        self.verdicts.update(scores["overall_verdict"].to_list())
        valid = scores["overall_score"].drop_nulls()
        self.score_sum += float(valid.sum()) if len(valid) else 0.0
        self.scored += len(valid)

    def as_dict(self) -> dict:
        return {
            "runs": self.runs_uri, "results": self.results_uri, "grader_id": self.grader_id,
            "found": self.found, "graded": self.graded, "refused": self.refused,
            "refusals": dict(sorted(self.refusals.items())),
            "verdicts": dict(sorted(self.verdicts.items())), "mean_overall_score":
            None if self.mean_score is None else round(self.mean_score, 2),
            "batches": self.batches, "stopped": self.stopped,
        }


def _ignore_stop_signals() -> None:
    # Workers finish their shard; only the parent decides what a stop abandons.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _read_shard(args: tuple[str, str | None, list[RunRef], int]) -> RunRows:
    runs_uri, endpoint, refs, cap = args
    bucket = Bucket(runs_uri, endpoint)
    rows = RunRows()
    for ref in refs:
        rows.extend(read_run(bucket, ref, cap))
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
    with ProcessPoolExecutor(max_workers=workers, initializer=_ignore_stop_signals) as pool:
        jobs = [(runs_uri, endpoint_url, part, binding_cap) for part in shards]
        for part, result in zip(shards, pool.map(_read_shard, jobs), strict=True):
            rows.extend(result)
            if on_progress:
                on_progress(len(part))
    return rows


def chunks(items: list, size: int) -> Iterable[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def grade_runs(runs_uri: str, results_uri: str, grader: Grader, *, batch_size: int = 2000,
               workers: int | None = None, endpoint_url: str | None = None,
               binding_cap: int = DEFAULT_BINDING_CAP, validate: bool = False,
               progress: Callable[[str, int, int], None] | None = None,
               should_stop: Callable[[], bool] = lambda: False) -> Summary:
    """Grade every run under `runs_uri` into `results_uri`, one committed batch per chunk.

    `should_stop` is asked before a batch is read and before it is published: when it says
    yes, the batch in hand is abandoned (never half-published) and `summary.stopped` is set.
    """
    bucket = Bucket(runs_uri, endpoint_url)
    if not bucket.exists():
        raise FileNotFoundError(f"runs root {runs_uri} does not exist")
    store = ResultStore(results_uri, endpoint_url)
    summary = Summary(runs_uri, results_uri, grader.grader_id)
    summary.discarded = store.discard_uncommitted()
    refs = group_runs(bucket, bucket.walk())
    summary.found = len(refs)
    workers = workers or os.cpu_count() or 1
    done = 0
    for chunk in chunks(refs, batch_size):
        if should_stop():
            summary.stopped = True
            break

        def tick(n: int) -> None:
            nonlocal done
            done += n
            if progress:
                progress("read", done, summary.found)

        rows = read_runs(runs_uri, chunk, endpoint_url=endpoint_url, binding_cap=binding_cap,
                         workers=workers, on_progress=tick)
        tables, clause_rows = grade_tables(source_tables(rows), grader)
        if validate:
            from .tables import validate as validate_tables
            validate_tables(tables)
        reports = build_reports(tables, clause_rows)
        if should_stop():
            summary.stopped = True
            break
        batch_id = new_batch_id()
        counts = {"runs": tables["runs"].height, "refused": tables["refusals"].height}
        store.write_batch(batch_id, grader.grader_id, tables, reports, counts)
        summary.batches.append(batch_id)
        summary.add(tables)
    if summary.batches:
        write_catalog(store)
    return summary
