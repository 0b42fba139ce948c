"""Compaction: the batches each grader id committed since its last compaction (or all of
them) rewritten as one batch.

Every night adds batches, and every batch adds a Parquet part per table and shard: after
months, thousands of small files, and every query (and the catalog, rewritten after each
grade) binds and opens all of them. `compact` rewrites, per grader id, the rows the views
show of those batches (each run's latest) as one batch, one part per table, then drops the
batches it replaces. The views show the same rows before and after, `batch_id` aside.

Crash-safe as a grade is: the new batch is staged, moved into place and committed like any
batch; its marker names the batches it replaces (`replaces`), which from then on count as not
committed (`ResultStore.commits`), so readers never see a run twice; their files are removed
after the marker, and what a kill leaves of them is removed by the next `grade` or `compact`.
The compacted batch's id is its grader id's first batch id with a suffix (COMPACTED): it sorts
right after that batch and before any batch graded later, so grader ids keep their order of
first appearance.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .catalog import check_whole, tidy_compacted, unreadable_part
from .store import (
    COMPACTED,
    LEDGER_GRADERS,
    ResultStore,
    grader_slug,
    new_attempt,
)
from .tables import TABLES

ROWS_PER_GROUP = 100_000  # rows per Parquet row group of a compacted part


@dataclass
class Compaction:
    """What `compact` did: per grader id, the batches merged and the part files before and
    after."""

    results_uri: str
    merged: dict[str, int] = field(default_factory=dict)  # grader id -> batches merged
    files_before: int = 0
    files_after: int = 0
    batches: list[str] = field(default_factory=list)  # the compacted batches' ids
    elapsed_s: float = 0.0


def compact(results_uri: str, endpoint_url: str | None = None, everything: bool = False,
            progress: Callable[[str, int, int], None] | None = None) -> Compaction:
    """Rewrite, per grader id of `results_uri`, the committed batches graded since its last
    compacted batch as one batch (`everything`: all its batches, compacted ones too), where
    there are two or more. Holds the results lock (ResultsLocked when a grade runs);
    FileNotFoundError when there is nothing committed.

    Compacting only what came since the last compaction rewrites only new rows: a weekly
    compaction costs a week's rows, and leaves one batch per compaction (the rows of a run
    graded since supersede its rows in the earlier compacted batches, which sort before).
    `progress(what, done, total)` is told of each table written.
    """
    import duckdb

    started = time.monotonic()
    store = ResultStore(results_uri, endpoint_url)
    done = Compaction(results_uri)
    if not store.commits():  # (before the lock, which would make the folder)
        raise store.nothing_committed(store.holds_nothing(
            f"{results_uri} holds no committed results"), "rungrade compact")
    with store.lock("rungrade compact") as still_locked:
        store.close_interrupted_grade()  # (a grade still `running` cannot be: this holds the lock)
        store.discard_uncommitted()
        if store.replaced_left:  # what an earlier compaction, killed, left
            tidy_compacted(store)
        by_grader: dict[str, list[str]] = {}
        earlier: dict[str, list[str]] = {}  # a compacted batch -> the batches it replaces
        markers: dict[str, dict] = {}
        for commit in store.commits():
            by_grader.setdefault(commit["grader_id"], []).append(commit["batch_id"])
            earlier[commit["batch_id"]] = commit.get("replaces", [])
            markers[commit["batch_id"]] = commit
        con = duckdb.connect()
        try:
            if not store.local:
                con.register_filesystem(store.query_filesystem())
            todo = {}  # grader id -> the batches to merge
            for grader_id, batches in by_grader.items():
                merged = batches if everything else _since_compacted(batches)
                if len(merged) > 1:
                    todo[grader_id] = merged
            steps = _Steps(progress, len(todo) * len(TABLES))
            merging = {batch for merged in todo.values() for batch in merged}
            files = store.tables_files(merging) if merging else {}
            if merging:
                # a batch lacking a part, or holding one short or no Parquet, would be merged
                # short, and its loss hidden for good (v19 compacted it, and the views
                # answered short without a word from then on): refused before any is merged
                check_whole(con, store, [markers[batch] for batch in sorted(merging)], files)
            for grader_id, merged in todo.items():
                _compact(con, store, grader_id, merged, files, earlier, done, still_locked,
                         steps, markers)
        finally:
            con.close()
        if done.batches:
            tidy_compacted(store)
    done.elapsed_s = time.monotonic() - started
    return done


class _Steps:
    """Tells `progress` of each table written, out of `total`."""

    def __init__(self, progress: Callable[[str, int, int], None] | None, total: int):
        self.progress, self.total, self.done = progress, total, 0

    def step(self, what: str) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(what, self.done, self.total)


def _compact(con, store: ResultStore, grader_id: str, batches: list[str],
             listed: dict[str, list[str]], earlier: dict[str, list[str]], done: Compaction,
             still_locked: Callable[[], None], steps: _Steps, markers: dict[str, dict]) -> None:
    """Stage, publish and commit the rows of `batches` (one grader id's; their parts among
    `listed`) as one batch. Its marker's `replaces` names `batches` and the batches those
    among them that are compacted replace (`earlier`): every batch whose rows it holds, so
    that a grade log's batches are found in it (the `grades` view's `batches_now`) however
    often they were compacted."""
    import duckdb

    slug = f"/grader={grader_slug(grader_id)}/"
    files = {table: [url for url in urls if slug in url] for table, urls in listed.items()}
    batch_id = f"{min(batches).partition(COMPACTED)[0]}{COMPACTED}{secrets.token_hex(4)}"
    attempt = new_attempt(0)
    counts = {}
    try:
        for table, parts in files.items():
            try:
                if parts:
                    counts[table] = _stage(con, store, batch_id, attempt, table, parts,
                                           files["runs"])
            except duckdb.InvalidInputException as exc:  # (a page its footer did not show)
                raise unreadable_part(store, table, exc) from exc
            steps.step(f"compacting {grader_id}: {table}")
    except BaseException:  # (nothing of it is left: a rerun would clear it, not a reader)
        with contextlib.suppress(OSError):
            store.fs.rm(store.path("_staging", batch_id), recursive=True)
        raise
    still_locked()
    # the ledger graders its refused ledgers were read with, where the batches agree (see
    # `ledger_graders_changed`)
    ledger_sets = {None if (ids := markers[batch].get(LEDGER_GRADERS)) is None else tuple(ids)
                   for batch in batches}  # (None: a marker that does not say)
    same = ledger_sets.pop() if len(ledger_sets) == 1 else None
    kept = {} if same is None else {LEDGER_GRADERS: list(same)}
    store.publish(batch_id, grader_id, {
        "runs": counts.get("runs", 0), "refused": counts.get("refusals", 0), "rows": counts,
        "replaces": sorted({*batches, *(b for batch in batches for b in earlier.get(batch, ()))}),
        **kept,
    }, {attempt})
    done.merged[grader_id] = len(batches)
    done.batches.append(batch_id)
    done.files_before += sum(len(parts) for parts in files.values())
    done.files_after += len(counts)


COMPACT_AFTER = 100  # batches since a grader id's last compaction that make a grade suggest it


def uncompacted(commits: list[dict]) -> int:
    """How many of `commits` (committed batches) a `compact` would merge: those after their
    grader id's last compacted batch, where there are two or more."""
    by_grader: dict[str, list[str]] = {}
    for commit in commits:
        by_grader.setdefault(commit["grader_id"], []).append(commit["batch_id"])
    since = (len(_since_compacted(sorted(batches))) for batches in by_grader.values())
    return sum(n for n in since if n > 1)


def _since_compacted(batches: list[str]) -> list[str]:
    """The batches (one grader id's, oldest first) after its last compacted one: a range
    whose compacted batch, named after its first, sorts after every batch before it."""
    last = max((i for i, batch in enumerate(batches) if COMPACTED in batch), default=-1)
    return batches[last + 1:]


def _parquet_source(files: list[str]) -> str:
    """DuckDB's reading of the committed parts `files` (their grader and batch from their
    paths)."""
    listed = ", ".join("'{}'".format(f.replace("'", "''")) for f in files)
    return f"read_parquet([{listed}], hive_partitioning = true, union_by_name = true)"


def _stage(con, store: ResultStore, batch_id: str, attempt: str, table: str,
           parts: list[str], runs: list[str]) -> int:
    """Write the rows of `parts` that the views show (each run's latest batch among them) as
    one staged part of `table`; return how many. Streamed: DuckDB reads and joins, pyarrow
    writes row group by row group."""
    import pyarrow.parquet as pq

    reader = con.sql(f"""
        select t.* exclude (grader, batch)
        from {_parquet_source(parts)} as t
        semi join (select run_uri, max(batch) as batch from {_parquet_source(runs)}
                   group by run_uri) as c
            on t.run_uri = c.run_uri and t.batch = c.batch
    """).to_arrow_reader(ROWS_PER_GROUP)
    path = store.path("_staging", batch_id, table, f"part-{attempt}.parquet")
    store.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    rows = 0
    with store.fs.open(path, "wb") as handle, pq.ParquetWriter(
            handle, reader.schema, compression="zstd") as writer:
        for batch in reader:
            writer.write_batch(batch)
            rows += batch.num_rows
    return rows
