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
from typing import TYPE_CHECKING

import polars as pl

from .catalog import write_catalog
from .checks.frame import clause_frame
from .checks.grader import Grader, run_checks
from .checks.ledger import (
    LEDGER_CLAUSE_KIND,
    LedgerGrader,
    ledger_grader_ids,
    ledger_grader_set,
    run_ledger_checks,
)
from .checks.moltzap import builtin_ledger_graders
from .checks.verdicts import clause_verdicts
from .reports import build_reports
from .scoring import run_models
from .sources.bucket import Bucket, RunRef, group_runs
from .sources.ledger import read_ledger
from .sources.prose import DEFAULT_BINDING_CAP, RunRows, read_run
from .store import ResultStore, new_batch_id
from .tables import SOURCE_TABLES, conform, frame

if TYPE_CHECKING:
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
        df = df.drop("grader_id", strict=False).join(ids, on="run_uri", how="left",
                                                      maintain_order="left")
        return df.with_columns(pl.col("grader_id").fill_null(grader.grader_id))

    tables = {name: stamp(source[name]) for name in SOURCE_TABLES}
    clauses = clause_frame(tables["clauses"], tables["services"], tables["bindings"])
    prose = clauses.filter(pl.col("kind") != LEDGER_CLAUSE_KIND)
    checks = pl.concat([
        run_checks(grader, prose),
        run_ledger_checks(ledger_graders, tables["clauses"], tables["bindings"],
                          tables["services"]),
    ])
    if judge:
        checks = judge.settle(checks, clauses, tables["runs"])
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
    runs_uri: str
    results_uri: str
    grader_id: str
    found: int = 0
    graded: int = 0
    refused: int = 0
    refusals: Counter = field(default_factory=Counter)
    verdicts: Counter = field(default_factory=Counter)
    ledger_verdicts: Counter = field(default_factory=Counter)  # GradeReport verdicts
    score_sum: float = 0.0
    scored: int = 0
    batches: list[str] = field(default_factory=list)
    discarded: list[str] = field(default_factory=list)
    judging: dict | None = None  # JudgeStats of the judge, when one was used
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
        ledgers = scores.join(runs.filter(pl.col("source") == "ledger"), on="run_uri",
                              how="semi")
        self.ledger_verdicts.update(ledgers["outcome_verdict"].to_list())
        valid = scores["overall_score"].drop_nulls()
        self.score_sum += float(valid.sum()) if len(valid) else 0.0
        self.scored += len(valid)

    def as_dict(self) -> dict:
        return {
            "runs": self.runs_uri, "results": self.results_uri, "grader_id": self.grader_id,
            "found": self.found, "graded": self.graded, "refused": self.refused,
            "refusals": dict(sorted(self.refusals.items())),
            "verdicts": dict(sorted(self.verdicts.items())),
            "ledger_verdicts": dict(sorted(self.ledger_verdicts.items())), "mean_overall_score":
            None if self.mean_score is None else round(self.mean_score, 2),
            "batches": self.batches, "stopped": self.stopped,
            **({"judge": self.judging} if self.judging else {}),
        }


def _ignore_stop_signals() -> None:
    # Workers finish their shard; only the parent decides what a stop abandons.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _read_shard(args: tuple[str, str | None, list[RunRef], int, tuple[LedgerGrader, ...]]
                ) -> RunRows:
    runs_uri, endpoint, refs, cap, ledger_graders = args
    bucket = Bucket(runs_uri, endpoint)
    rows = RunRows()
    for ref in refs:
        rows.extend(read_ledger(bucket, ref, ledger_graders) if ref.source == "ledger"
                    else read_run(bucket, ref, cap))
    return rows


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
    with ProcessPoolExecutor(max_workers=workers, initializer=_ignore_stop_signals) as pool:
        jobs = [(runs_uri, endpoint_url, part, binding_cap, ledger_graders) for part in shards]
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
               ledger_graders: tuple[LedgerGrader, ...] | None = None,
               judge: Judge | None = None,
               progress: Callable[[str, int, int], None] | None = None,
               should_stop: Callable[[], bool] = lambda: False) -> Summary:
    """Grade every run under `runs_uri` into `results_uri`, one committed batch per chunk.

    `ledger_graders` grade moltzap ledgers (default: the built-in ones). With a `judge`,
    OpenProse rows are stamped with the judged grader id (see `Judge.grader`).
    `should_stop` is asked before a batch is read and before it is published: when it says
    yes, the batch in hand is abandoned (never half-published) and `summary.stopped` is set.
    """
    grader = judge.grader(grader) if judge else grader
    ledger_graders = default_ledger_graders() if ledger_graders is None else ledger_graders
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
                         workers=workers, ledger_graders=ledger_graders, on_progress=tick)
        tables, clause_rows = grade_tables(source_tables(rows), grader, ledger_graders, judge)
        if validate:
            from .tables import validate as validate_tables
            validate_tables(tables)
        if should_stop():
            summary.stopped = True
            break
        for grader_id, part in by_grader(tables):  # one committed batch per grader id
            frame = clause_rows.join(part["runs"], on="run_uri", how="semi")
            reports = build_reports(part, frame)
            batch_id = new_batch_id()
            counts = {"runs": part["runs"].height, "refused": part["refusals"].height}
            store.write_batch(batch_id, grader_id, part, reports, counts)
            summary.batches.append(batch_id)
        summary.add(tables)
    if summary.batches:
        write_catalog(store)
    if judge:
        summary.judging = judge.stats.as_dict()
    return summary
