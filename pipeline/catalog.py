"""DuckDB views over the committed results: one view per table, current rows only.

A run regraded under the same grader id (because it changed) appears in several committed
batches; the views keep, per (grader_id, run_uri), only the rows of its latest batch, so
nothing is counted twice. On top of the tables come the models of `sql/staging` and
`sql/marts` (trends and the grader-version diffs), also as views, so they always reflect the
committed batches. `RESULTS/catalog.duckdb` holds the same views for the duckdb CLI.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import tempfile
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

import polars as pl

from .scoring import model_sql
from .store import (
    CONNECT_AGAIN,
    DAMAGED_ADVICE,
    GRADES,
    ResultsDamaged,
    ResultStore,
    ResultsUnreadable,
    flush_to_disk,
)
from .tables import TABLES

if TYPE_CHECKING:
    import duckdb

T = TypeVar("T")

# In dependency order: each model reads only tables and the models before it.
VIEW_MODELS = (
    "staging/run_days", "staging/paired_runs", "staging/grader_pairs",
    "marts/trends", "marts/version_diffs", "marts/verdict_flips", "marts/run_score_deltas",
    "marts/service_score_deltas", "marts/version_summary",
)

# The columns of the `grades` view, one row per `grade`, as DuckDB types: those of its record
# in `_grades/` (RECORD_COLUMNS; the record's other keys, ledger verdicts and judge statistics,
# stay in its file), and `batches_now` (see BATCHES_NOW).
GRADE_COLUMNS = {
    "grade_id": "VARCHAR", "status": "VARCHAR", "started_at": "TIMESTAMPTZ",
    "finished_at": "TIMESTAMPTZ", "elapsed_s": "DOUBLE", "runs_uri": "VARCHAR",
    "results_uri": "VARCHAR", "grader_id": "VARCHAR", "versions": "MAP(VARCHAR, VARCHAR)",
    "full": "BOOLEAN", "found": "BIGINT",
    "new": "BIGINT", "changed": "BIGINT", "unchanged": "BIGINT", "skipped": "BIGINT",
    "graded": "BIGINT", "refused": "BIGINT", "refusals": "MAP(VARCHAR, BIGINT)",
    "verdicts": "MAP(VARCHAR, BIGINT)", "mean_overall_score": "DOUBLE", "batches": "VARCHAR[]",
    "batches_now": "VARCHAR[]", "discarded": "VARCHAR[]",
    "unlisted": "STRUCT(path VARCHAR, error VARCHAR)[]", "error": "VARCHAR",
}
RECORD_COLUMNS = {name: kind for name, kind in GRADE_COLUMNS.items() if name != "batches_now"}

# A grade's `batches` as they are now: each batch a compaction merged (listed in the compacted
# batch's `replaces`, see pipeline/compact.py) named by the compacted batch, each once, sorted
# (by time). Reads `_commits` (see `_commits_table`) and the record `g`.
BATCHES_NOW = """case when g.batches is not null then coalesce((
    select list(distinct coalesce(c.batch_id, b) order by coalesce(c.batch_id, b))
    from unnest(g.batches) as u(b)
    left join (select unnest(replaces) as replaced, batch_id from _commits) as c
        on c.replaced = u.b), []) end"""


def query_interrupted(exc: BaseException) -> bool:
    """True when `exc` is DuckDB's own error for a query a signal stopped: a signal handler's
    exception (KeyboardInterrupt, SIGTERM's) raised while DuckDB runs a query is taken by
    DuckDB, which raises this in its place, with no trace of the signal."""
    return isinstance(exc, RuntimeError) and str(exc) == "Query interrupted"


def interrupted(exc: BaseException) -> bool:
    """True when `exc` is how Ctrl-C ended what raised it: KeyboardInterrupt, or DuckDB's own
    error in its place (`query_interrupted`)."""
    return isinstance(exc, KeyboardInterrupt) or query_interrupted(exc)


def _records(files: str | list[str], whole: bool = True) -> str:
    """The grade records in the JSON files `files` (a glob, or a list of files) as a relation
    with RECORD_COLUMNS, each file read whole. A record that is not a JSON object with a
    `grade_id` (cut short by a full disk, a copy stopped midway) is left out, and a value of
    the wrong type reads as null: one such record failed every query of the whole log.
    `whole=False`: the names (`filename`) of the files left out instead."""
    struct = "{" + ", ".join(f'"{name}": "{kind}"' for name, kind in RECORD_COLUMNS.items()) + "}"
    where = (_quoted(files) if isinstance(files, str)
             else "[" + ", ".join(map(_quoted, files)) + "]")
    # (CASE evaluates its branches only where its condition holds: json_type fails on text
    # that is not JSON)
    read = f"""select filename, case when json_valid(text) then
                   case when json_type(text) = 'OBJECT'
                         and json_type(text, 'grade_id') = 'VARCHAR' then text end end as record
               from (select filename, try(decode(content)) as text from read_blob({where}))"""
    if not whole:
        return f"(select filename from ({read}) where record is null)"
    return (f"(select unnest(json_transform(record, {_quoted(struct)})) "
            f"from ({read}) where record is not null)")


@contextlib.contextmanager
def _fetched_records(store: ResultStore) -> Iterator[str | None]:
    """The files of the grade records, as a glob or a list for `_records` (None when there is
    none yet); those of remote results as a local copy: DuckDB asks S3 for each record's size
    before it reads it (three HEAD requests a record, then the GET: 100 records took 4 s
    against the loopback server, a year of nightly grades would take several times that),
    where one listing and every record's GET side by side take one round trip or two. Each
    record is copied whole, as S3 served it."""
    records = store.path(GRADES, "*.json")
    paths = store.fs.glob(records) if store.present(store.path(GRADES)) else []
    if not paths:
        yield None
        return
    if store.local:
        yield store.url(records)
        return
    blobs = store.fs.cat(paths, on_error="omit")  # a record gone meanwhile: left out
    with tempfile.TemporaryDirectory(prefix="rungrade-grades-") as copy:
        for path, blob in blobs.items():
            with open(os.path.join(copy, path.rsplit("/", 1)[-1]), "wb") as out:
                out.write(blob)
        yield os.path.join(copy, "*.json") if blobs else None


def _grades_query(records: str | None, where: str = "") -> str:
    """The `grades` view's query: the records in the files `records` (`_fetched_records`; None,
    no record), GRADE_COLUMNS, oldest first, `where` (a clause) they pass. Reads `_commits`
    (see `_commits_table`)."""
    columns = ", ".join(BATCHES_NOW + " as batches_now" if name == "batches_now"
                        else f'g."{name}"' for name in GRADE_COLUMNS)
    source = _records(records) if records else _no_records()
    return f"select {columns} from {source} as g {where} order by g.grade_id"


def _commits_table(con: duckdb.DuckDBPyConnection, commits: list[dict]) -> None:
    """`_commits` on `con`: the committed batches (`ResultStore.commits`), each with its
    grader id and, for a compacted batch, the batches it replaces."""
    con.execute("create or replace table _commits "
                "(batch_id varchar, grader_id varchar, replaces varchar[])")
    if commits:
        rows = ", ".join("({}, {}, [{}])".format(
            _quoted(c["batch_id"]), _quoted(c["grader_id"]),
            ", ".join(_quoted(b) for b in c.get("replaces", ()))) for c in commits)
        con.execute(f"insert into _commits values {rows}")


def _no_records() -> str:
    """No grade record: no row, RECORD_COLUMNS."""
    nulls = ", ".join(f"null::{kind} as \"{name}\"" for name, kind in RECORD_COLUMNS.items())
    return f"(select {nulls} limit 0)"


def flat_columns(types: dict[str, str]) -> str:
    """A select list of the columns `types` (name: DuckDB type) with each list, array, map,
    struct or union as JSON text: what a CSV can hold."""
    def quoted(name: str) -> str:
        return '"' + name.replace('"', '""') + '"'
    return ", ".join(
        f"to_json({quoted(name)})::varchar as {quoted(name)}"
        if kind.endswith("]") or kind.startswith(("MAP", "STRUCT", "UNION")) else quoted(name)
        for name, kind in types.items())


def read_grades(results: str, endpoint_url: str | None = None, flat: bool = False,
                damaged: list[str] | None = None):
    """The grade log of `results` (the `grades` view) as a polars DataFrame, oldest first;
    read without the catalog, so the grades that committed nothing are there too. `flat`:
    its lists and maps as JSON text (for CSV). Records that are not a JSON object are left out,
    and their names added to `damaged` (when given). Refuses, with FileNotFoundError, results
    that hold no grade log."""
    import duckdb

    store = ResultStore(results, endpoint_url)
    columns = flat_columns(GRADE_COLUMNS) if flat else ", ".join(f'"{c}"' for c in GRADE_COLUMNS)

    def query(damaged: list[str] | None = None) -> pl.DataFrame:
        # (a connection each: DuckDB keeps what a file held)
        with _fetched_records(store) as records:
            if records is None:
                raise FileNotFoundError(store.holds_nothing(
                    f"{results} holds no grade log ({GRADES}/): run `rungrade grade RUNS "
                    f"--out {results}` first (grades by a rungrade from before the log are "
                    "not in it)"))
            con = duckdb.connect()
            _commits_table(con, store.commits())
            log = con.sql(f"select {columns} from ({_grades_query(records)})").pl()
            if damaged is not None:
                left_out = sorted(name.rsplit("/", 1)[-1] for (name,) in
                                  con.sql(_records(records, whole=False)).fetchall())
                if log.is_empty() and left_out:
                    raise FileNotFoundError(
                        f"{results} holds only damaged grade records (not a grade's JSON "
                        f"record: cut short?): "
                        f"{', '.join(left_out[:5])}{', …' if len(left_out) > 5 else ''}; "
                        f"remove them from {GRADES}/ (or restore them)")
                damaged.extend(left_out)
            return log

    log = query(damaged if damaged is not None else [])
    # A grade killed outright leaves its record `running` until the next grade closes it.
    # Only the latest record can be (each grade closes the one before); once no process
    # holds the results lock, that grade is gone, and it reads `interrupted`, as the next
    # grade will write. The record is read again after the look at the lock: a grade that
    # finished in between has said so, and the log is then read anew.
    if log.is_empty() or log["status"][-1] != "running" or store.lock_held() is not False:
        return log
    latest = log["grade_id"][-1]
    record = store.grade_record(latest) or {}
    if record.get("status") != "running":
        return query()
    # what it committed, from the commit markers, as the next grade will close its record
    # (rewritten at most once a second, the record fell short of what a killed grade did; no
    # compaction has run since, or it would have closed it: its batches are as committed)
    closed = store.with_its_commits({**record, "grade_id": latest})
    batches = sorted(closed.get("batches") or ())
    if flat:  # (as `flat_columns` writes a list: JSON text)
        batches = json.dumps(batches, separators=(",", ":"))
    mine = pl.col("grade_id") == latest
    return log.with_columns(
        pl.when(mine).then(pl.lit("interrupted")).otherwise(pl.col("status")).alias("status"),
        *(pl.when(mine).then(pl.lit(closed.get(name), log.schema[name]))
          .otherwise(pl.col(name)).alias(name) for name in ("found", "graded", "refused")),
        *(pl.when(mine).then(pl.lit(batches, log.schema[name])).otherwise(pl.col(name))
          .alias(name) for name in ("batches", "batches_now") if name in log.columns))


def _source(store: ResultStore, table: str, parts: list[str] | None = None) -> str:
    """The Parquet parts of `table`: `parts` (URLs) when given, else every part its folder
    holds (the views keep the committed batches' rows)."""
    if parts:
        files = "[" + ", ".join(_quoted(url) for url in parts) + "]"
    else:
        files = _quoted(store.url(store.path(table, "grader=*", "batch=*", "*.parquet")))
    return f"read_parquet({files}, hive_partitioning = true, union_by_name = true)"


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def create_views(con: duckdb.DuckDBPyConnection, store: ResultStore,
                 marts: bool = True, catalog_file: str | None = None,
                 commits: list[dict] | None = None,
                 files: dict[str, list[str]] | None = None, named: bool = False) -> list[str]:
    """Create the committed-results views on `con`; return the names of the views made.
    `catalog_file`: the real path of the database file the views are written to, which they
    check they are read from (see `_read_where_written`). `commits`: the store's, if read
    already; `files`: their parts (`store.tables_files`), if listed already. `named`: the
    views of local results name their parts too, as those on S3 do (see below)."""
    commits = store.commits() if commits is None else commits
    if not commits:
        raise FileNotFoundError(store.holds_nothing(
            f"{store.uri} holds no committed results; run `rungrade grade RUNS --out "
            f"{store.uri}` first"))
    # Each view reads the footer of every part of its tables when it is bound, and so does
    # every view built on it, each time: kept once read, a part is never rewritten.
    con.execute("set parquet_metadata_cache = true")
    parts: dict[str, list[str]] = {}
    if not store.local or named:
        # the committed parts named one by one, rather than a glob each query would list
        # again, and which binds the parts of every batch there, committed or not: a
        # compaction deleting those it merged failed each question asked meanwhile. Local
        # views that outlive a question (the catalog file's, `connect`'s) keep globs: after
        # a compaction they say to connect again (see `_still_there`), not that a part of
        # theirs is gone
        parts = files if files is not None else store.tables_files(
            {c["batch_id"] for c in commits})
    if not store.local:
        # DuckDB reads them through a filesystem that knows their sizes and keeps them
        fs = store.query_filesystem()
        fs.keep([url for urls in parts.values() for url in urls])  # binding reads them all
        con.register_filesystem(fs)
    _commits_table(con, commits)
    here = _read_where_written(catalog_file)
    # Per grader id and run, its latest batch; but a ledger is refused under the contract
    # grader's id and graded under its ledger grader's, so a ledger refused, then graded once
    # mended, would show its refusal for good, and one graded, then refused, its verdicts
    # beside its refusal: a ledger's refusal is outdone by a grading of it in a later grade,
    # and a grading by a refusal (`graded_in`, the grade's batch, kept by compaction and
    # ordered whatever the machines' clocks; rows from before it have none and are left as
    # they are). v19 kept the verdicts of a ledger refused since.
    runs = _source(store, 'runs', parts.get('runs'))
    recorded = "graded_in" in con.sql(f"select * from {runs} limit 0").columns
    con.execute(f"""
        create or replace view _current as
        with latest as (
            select grader_id, run_uri, max(batch) as batch,
                   arg_max(source = 'ledger' and status = 'refused', batch) as ledger_refused,
                   arg_max(source = 'ledger' and status = 'graded', batch) as ledger_graded,
                   arg_max({'graded_in' if recorded else 'null::varchar'}, batch) as graded_in
            from {runs}
            where batch in (select batch_id from _commits {_where(_still_there(store), here)})
            group by grader_id, run_uri
        )
        select grader_id, run_uri, batch
        from latest
        qualify not coalesce(ledger_refused and graded_in < max(
            case when ledger_graded then graded_in end) over (partition by run_uri), false)
            and not coalesce(ledger_graded and graded_in < max(
            case when ledger_refused then graded_in end) over (partition by run_uri), false)
    """)
    made = []
    for table in TABLES:
        con.execute(f"""
            create or replace view {table} as
            select t.* exclude (grader, batch), t.batch as batch_id
            from {_source(store, table, parts.get(table))} as t
            semi join _current as c
                on t.grader_id = c.grader_id and t.run_uri = c.run_uri and t.batch = c.batch
        """)
        made.append(table)
    # locally a view, read anew by each query (later grades' records show too); on S3 the
    # log as the connection opened, as its other views are (see _fetched_records)
    with _fetched_records(store) as records:
        con.execute(f"create or replace {'view' if store.local else 'table'} grades as "
                    f"{_grades_query(records, _where(here))}")
    made.append("grades")
    judged = store.path("judgments", "judge=*", "*.parquet")
    if store.fs.glob(judged):  # the judge cache: one row per answer, each key once
        con.execute(f"""
            create or replace view judgments as
            select * exclude (judge)
            from read_parquet('{store.url(judged)}', hive_partitioning = true,
                              union_by_name = true)
            {_where(here)}
            qualify row_number() over (
                partition by judge_id, template_version, clause_sha256, output_sha256
                order by answered_at) = 1
        """)
        made.append("judgments")
    if marts:
        # Bound when first asked, not here: binding a model binds every view under it again,
        # which took half the time of making the views (100-150 ms for the sample runs'
        # results), paid by every grade's catalog and every connection, though most questions
        # ask none of them. The views above stay bound here: that reads every part, and a part that
        # cannot be read fails the catalog now, not the question that meets it.
        for model in VIEW_MODELS:
            name = model.rsplit("/", 1)[-1]
            con.execute(f"create or replace view {name} with (defer_binding) as "
                        f"{model_sql(model)}")
            made.append(name)
    return made


def _where(*conditions: str) -> str:
    kept = [c for c in conditions if c]
    return f"where {' and '.join(kept)}" if kept else ""


def _still_there(store: ResultStore) -> str:
    """A condition on `_commits` that stops a query whose connection outlived a compaction.

    Locally, views that outlive a question (`connect`'s, the catalog file's) find the parts
    by globs, keeping the batches committed when they were made (`_commits`); once a
    compaction removes the batches it merged, a connection opened before (a notebook's, the
    duckdb CLI's on the catalog it replaced) would show none of their rows, and say nothing.
    So every query first looks at the commit markers' names (a listing of `_commits/`, no
    file read) and fails, saying to connect again, when a batch it knows has lost its marker
    (removed right after its parts). On S3 the views name their parts, and a part removed
    fails the query that reads it (the kept parts spare even that).
    """
    if not store.local:
        return ""
    markers = _quoted(store.url(store.path("_commits", "*.json")))
    gone = _quoted(
        f"the results in {store.uri} were compacted since this connection was opened, and "
        f"batches its views show are gone: {CONNECT_AGAIN} (`rungrade sql` and "
        "`catalog.connect` make a new connection; `duckdb.connect` opens catalog.duckdb anew "
        "only once this connection, and every other to it in this process, is closed: "
        "`con.close()`; in the duckdb CLI, open catalog.duckdb again)")
    return f"""case when (
            select count(*) from glob({markers}) as m
            where parse_filename(m.file, true) in (select batch_id from _commits))
        = (select count(*) from _commits) then true else error({gone}) end"""


def _read_where_written(catalog_file: str | None) -> str:
    """A condition (on the rows of any query) that stops a query on a catalog file read from
    another place than where it was written (the results folder copied, or moved).

    Its views name the parts by the absolute path of the folder it was written in: a copy's
    catalog would show the first folder's rows (and those it gains later), and say nothing.
    DuckDB knows each attached database file by its real path (symlinks resolved), so a
    query on these views goes on only while the file written here is attached. (A folder
    moved fails before, DuckDB finding no part where the views look.)"""
    if catalog_file is None:
        return ""
    folder = os.path.dirname(catalog_file)
    elsewhere = _quoted(
        f"this catalog.duckdb was written for the results in {folder} and is read from "
        f"another place (the folder copied or moved): its views read the parts in {folder}, "
        "not the ones beside it. Write it again for the folder that holds it: "
        "`rungrade catalog FOLDER`")
    return (f"case when exists (select 1 from duckdb_databases() "
            f"where path = {_quoted(catalog_file)}) then true else error({elsewhere}) end")


def connect(results: str, endpoint_url: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with every results view defined, over committed batches
    that hold every part they committed (else ResultsDamaged, see `_open`)."""
    return _opened(ResultStore(results, endpoint_url))


def _opened(store: ResultStore, named: bool = False) -> duckdb.DuckDBPyConnection:
    """`_open`, tried again while it fails because the results changed under it (a
    compaction or a grade's cleanup removing parts as the views were made or checked), up to
    ASK_ATTEMPTS times; any other failure goes through at once."""
    import duckdb

    for attempt in range(1, ASK_ATTEMPTS + 1):
        try:
            return _open(store, named)
        except (duckdb.Error, ResultsDamaged) as exc:
            if attempt == ASK_ATTEMPTS or not _changed_under(store, exc):
                raise
    raise AssertionError("unreachable")  # (the last attempt returns or raises)


def _open(store: ResultStore, named: bool = False) -> duckdb.DuckDBPyConnection:
    """A new connection with the views of `store` (`create_views`), checked whole: every
    committed batch holds a part of each table for each part of its `runs`, and as many
    `runs` rows as its marker says. A part deleted, cut short or never copied (a results
    folder copied in part) would leave the views short of its rows without a word; a batch
    merged by a compaction since its marker was read is not damage (see `connect`, `ask`).
    `named`: see `create_views`."""
    import duckdb

    con = duckdb.connect()
    try:
        commits = store.commits()
        # listed once, for the views (on S3) and the check
        files = store.tables_files({c["batch_id"] for c in commits}) if commits else None
        create_views(con, store, commits=commits, files=files, named=named)
        check_whole(con, store, commits, files)  # (none without commits: refused above)
    except BaseException:
        con.close()
        raise
    return con


def check_whole(con: duckdb.DuckDBPyConnection, store: ResultStore, commits: list[dict],
                files: dict[str, list[str]]) -> None:
    """Raise ResultsDamaged when a committed batch lacks parts (see `_open`); `files`, the
    committed parts of each table (`store.tables_files`)."""
    import duckdb

    committed = {c["batch_id"]: c for c in commits}
    parts: dict[str, dict[str, set[str]]] = {}  # batch -> table -> part names
    for table, urls in files.items():
        for url in urls:
            folder, _, name = url.rpartition("/")
            parts.setdefault(folder.rpartition("/batch=")[2], {}).setdefault(table, set()).add(
                name)
    problems, damaged = [], set()
    for batch in committed:
        held = parts.get(batch, {})
        for table in TABLES:
            lacking = sorted(held.get("runs", set()) - held.get(table, set()))
            problems += [f"{table}/…/batch={batch}/{name}" for name in lacking]
            if lacking:
                damaged.add(batch)
    # each part's rows, from its footer (read already to make the views; a part that is no
    # Parquet is named by its table)
    held_rows: dict[tuple[str, str], int] = {}  # (batch, table) -> rows
    for table, urls in files.items():
        if not urls:
            continue
        try:
            footers = con.sql(f"select file_name, num_rows from parquet_file_metadata("
                              f"[{', '.join(_quoted(u) for u in urls)}])").fetchall()
        except duckdb.InvalidInputException as exc:
            raise unreadable_part(store, table, exc) from exc
        for name, n in footers:
            batch = name.rpartition("/batch=")[2].partition("/")[0]
            held_rows[batch, table] = held_rows.get((batch, table), 0) + n
    for batch, marker in committed.items():
        # `runs` in every marker; every table's in `rows` since v20's markers (a part cut to a
        # valid Parquet file of fewer rows was seen in `runs` only: the views answered short)
        said = {"runs": marker.get("runs"), **(marker.get("rows") or {})}
        for table, count in said.items():
            found = held_rows.get((batch, table), 0)
            if (table in TABLES and isinstance(count, int) and count != found
                    and batch not in damaged):
                problems.append(f"{table}/…/batch={batch}: {found} rows where its marker "
                                f"says {count}")
                damaged.add(batch)
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if
                                            len(problems) > 3 else "")
        raise ResultsDamaged(
            f"the results in {store.uri} lack parts of committed batches ({shown}): a part was "
            "deleted or cut short, or the folder was copied in part, and the views would show "
            f"fewer rows than were committed. {DAMAGED_ADVICE}", damaged)


# What to do about a committed part DuckDB cannot read (cut short, not Parquet).
PART_DAMAGED = f"A committed part is damaged. {DAMAGED_ADVICE}"


def unreadable_part(store: ResultStore, table: str, exc: Exception) -> ResultsDamaged:
    """What to say of a committed part of `table` DuckDB could not read (`exc`)."""
    said = str(exc).split("\n\n")[0]
    return ResultsDamaged(f"the results in {store.uri} hold a committed part of {table} that "
                          f"cannot be read: {said}. {PART_DAMAGED}", set())
# Connections `ask` makes for one question before it lets the last error through.
ASK_ATTEMPTS = 3
# A path of a batch's part, as a DuckDB error names it ("Cannot open file …/batch=ID/…").
_BATCH_IN_PATH = re.compile(r"/batch=([^/\"'*?\[]+)/")  # (not a pattern's `batch=*`)


def ask(results: str, question: Callable[[duckdb.DuckDBPyConnection], T],
        endpoint_url: str | None = None) -> T:
    """`question(con)` on a new connection with every results view (`connect`), closed after;
    asked again on another new connection when the results changed under it.

    Nobody locks the results to read them. A query lists the parts of each table, then reads
    them; a compaction that removes the batches it merged, or a grade that removes the parts
    of a batch a crash left uncommitted, may remove a part in between, and the query fails
    on that part ("Cannot open file"). It would have failed the same way while the views were
    made, which read every part's footer, or said "connect again" (see `_still_there`,
    `store.PART_GONE`) had the compaction ended between the connection and the query. A new
    connection answers from the batches committed by then, so the question is asked again,
    up to ASK_ATTEMPTS connections in all; any other error goes through at once, among them
    a part missing from a batch that is still committed. `question` must return what it
    read (a DataFrame, rows), not a relation of the connection."""
    import duckdb

    store = ResultStore(results, endpoint_url)
    for attempt in range(1, ASK_ATTEMPTS + 1):
        try:
            con = _opened(store, named=True)  # (it lives for one question)
        except duckdb.Error as exc:
            said = str(exc).split("\n\n")[0]  # (not the view's SQL DuckDB quotes after)
            if not isinstance(exc, duckdb.IOException):  # a part that is not Parquet
                raise ResultsDamaged(f"the views of the results in {results} could not be "
                                     f"made: {said}. {PART_DAMAGED}", set()) from exc
            raise ResultsUnreadable(f"the views of the results in {results} could not be "
                                    f"made: {said}") from exc
        try:
            return question(con)
        except duckdb.Error as exc:
            if attempt == ASK_ATTEMPTS or not _changed_under(store, exc):
                raise
        finally:
            con.close()
    raise AssertionError("unreachable")  # (the last attempt returns or raises)


def _changed_under(store: ResultStore, exc: Exception) -> bool:
    """Whether `exc` says the results changed under a connection (see `ask`)."""
    import duckdb

    if isinstance(exc, ResultsDamaged):  # (batches a compaction merged meanwhile are gone)
        return not exc.batches <= store.committed_batches()
    text = str(exc)
    if CONNECT_AGAIN in text:
        return True
    named = set(_BATCH_IN_PATH.findall(text))
    return (isinstance(exc, duckdb.IOException) and bool(named)
            and not named & store.committed_batches())


def tidy_compacted(store: ResultStore) -> None:
    """Write the catalog (it then names the compacted batches), then remove the batches they
    replaced: `catalog.duckdb` never names a batch whose files are gone."""
    write_catalog(store)
    store.tidy_replaced()


# The catalog's file in the results folder, and beside it what it was written for (`_stamp`),
# readable without DuckDB (see `catalog_stale`).
CATALOG_FILE = "catalog.duckdb"
CATALOG_STAMP = "_catalog.json"


def _stamp(folder: str, commits: list[dict]) -> dict:
    """The folder a catalog was written for (its real path) and a digest of the batches its
    views read."""
    batches = "\n".join(sorted({c["batch_id"] for c in commits}))
    return {"folder": folder, "commits": hashlib.sha256(batches.encode()).hexdigest()}


def write_catalog(store: ResultStore) -> str | None:
    """Write RESULTS/catalog.duckdb (local results only), then CATALOG_STAMP beside it; return
    the catalog's path."""
    import duckdb  # imported here: a grade that commits nothing rarely needs it

    if not store.local:
        return None
    path = store.path(CATALOG_FILE)
    folder = os.path.realpath(store.root)
    commits = store.commits()
    tmp = f"{path}.tmp-{secrets.token_hex(4)}"
    con = duckdb.connect(tmp)
    try:
        try:
            create_views(con, store, catalog_file=os.path.join(folder, CATALOG_FILE),
                         commits=commits)
        finally:
            con.close()
    except BaseException as exc:  # no half-written catalog left beside the results
        for leftover in (tmp, f"{tmp}.wal"):
            with contextlib.suppress(OSError):
                os.remove(leftover)
        if isinstance(exc, duckdb.Error) and not isinstance(exc, duckdb.IOException):
            # a part DuckDB cannot read (cut short, not Parquet)
            raise ResultsDamaged(f"the catalog of {store.uri} could not be written: {exc}. "
                                 f"{PART_DAMAGED}", set()) from exc
        raise
    os.replace(tmp, path)
    store._put(store.path(CATALOG_STAMP), json.dumps(_stamp(folder, commits)).encode())
    flush_to_disk(store.root)  # after a power cut, this catalog and not the one before
    return path


def catalog_stale(store: ResultStore, commits: list[dict]) -> bool:
    """Whether the catalog of local results holding `commits` is missing or was written for
    other batches or another folder: a write that failed after a commit, or the folder copied
    or moved since (CATALOG_STAMP says otherwise, or is missing). A grade that commits nothing
    writes the catalog then, so that the next grade mends it whether or not a run is new (a
    copy's views would name the first folder's parts). Costs a file read, not a DuckDB
    import."""
    if not store.local or not commits:
        return False
    try:
        with open(store.path(CATALOG_STAMP), "rb") as handle:
            written = json.loads(handle.read())
    except (OSError, ValueError):
        written = None
    return written != _stamp(os.path.realpath(store.root), commits) or not os.path.isfile(
        store.path(CATALOG_FILE))


def rewrite_catalog(results: str) -> str:
    """Write RESULTS/catalog.duckdb again for the folder `results` (as a grade does after each
    commit): after the folder was copied or moved, its catalog names the parts of the folder
    it was written in. Holds the results lock (ResultsLocked when a grade or a compaction
    writes to them); FileNotFoundError when nothing is committed there; ValueError for S3
    results, which have no catalog file. Returns the catalog's path."""
    store = ResultStore(results)
    if not store.local:
        raise ValueError(
            f"{results} is on S3, where results have no catalog file: `rungrade sql -r "
            f"{results}` and `catalog.connect` make the views on each connection")
    if not store.commits():  # (before the lock, which would make the folder)
        raise store.nothing_committed(store.holds_nothing(
            f"{results} holds no committed results"), "rungrade catalog")
    with store.lock("rungrade catalog"):
        return write_catalog(store)
