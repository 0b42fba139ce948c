"""The results dataset: Hive-partitioned Parquet, published one committed batch at a time.

Layout (RESULTS may be a local folder or s3://bucket/prefix):
    {table}/grader={grader_slug}/batch={batch_id}/part-{k}[.n].parquet  a part per group of runs
    reports/grader={grader_slug}/{run_id}.json   one per graded run; grader ids never overwrite
    reports/{run_id}.json          a copy of the run's most recent report, whatever its grader
    _commits/{batch_id}.json      written last: a batch without it does not exist
    _grades/{grade_id}.json        one record per `grade`: what it found, graded, committed
    _staging/{batch_id}/...        parts being written; removed when a batch is published
    _lock (local) / _lock.json (S3)   held by the one `grade` writing here

A batch is written to `_staging`, moved into place, and only then committed. Readers (the
catalog, `rungrade sql`, the CLI) see committed batches only; a crash before the commit marker
leaves a batch that the next `grade` removes and redoes. Committed files are never rewritten.

Reports are moved into place only after the commit marker; a batch committed but not yet
done moving its reports is finished by the next `grade` (see `discard_uncommitted`).

Locally, what a commit rests on is flushed to disk before the step that relies on it (see
`flush_to_disk`): a batch's parts (and its staged reports) before its marker, its reports
in place before its staging folder goes. A machine that loses power therefore keeps every
committed batch whole, as a killed process does.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import glob
import io
import json
import os
import secrets
import shutil
import socket
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import NamedTuple

import polars as pl
from fsspec.implementations.memory import MemoryFile

from .names import (
    NAME_BYTES,
    NOT_IN_NAMES,
    REFUSED_MARK,
    first_few,
    report_stem,
    shown,
    shown_in,
    uri_tag,
)
from .sources.bucket import RESULTS_MARK, FileInfo, Listing, filesystem, split_uri
from .sources.outage import is_outage, no_credentials
from .tables import TABLES, conform

LOCAL_LOCK_NAME = "_lock"
GRADES = "_grades"
S3_LOCK_NAME = "_lock.json"
S3_LOCK_STALE_SECONDS = 600.0
LEFTOVER_AGE = 60.0  # seconds: a `*.tmp-*` file older than this is a killed writer's


class ResultsLocked(RuntimeError):
    """Another `rungrade grade` holds the results lock; the message names it."""


# What to do about damaged results (a part or marker cut short or overwritten).
DAMAGED_ADVICE = ("Restore what is damaged from a whole copy (a backup, or the copy the results "
                  "came from), or grade the runs into fresh results")


class ResultsUnreadable(Exception):
    """Committed results could not be read: a part damaged (cut short, not Parquet) or
    unreadable. A store's failure, not the question's."""


class ResultsDamaged(ResultsUnreadable):
    """Committed batches (`batches`; empty when not known) lack parts they committed, or hold
    a part that is not Parquet (see `catalog._open`, `ResultStore.committed_runs`)."""

    def __init__(self, message: str, batches: set[str]):
        super().__init__(message)
        self.batches = batches


def _precondition_failed(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc} {getattr(exc, '__cause__', '')}"
    return "PreconditionFailed" in text or "412" in text or "Precondition" in text


def _parquet(path: str) -> bool:
    """Whether the local file `path` has a Parquet footer polars can read."""
    try:
        pl.read_parquet_schema(path)
    except pl.exceptions.ComputeError:
        return False
    return True


def _what_it_is_instead(uri: str, folder: str) -> str | None:
    """What a local folder given as results, holding no committed batch, is instead, and what
    to give: a folder inside results (`results/runs`, a table's), or runs (a run folder, or a
    folder of them: the advice to grade into it would have mixed results into the runs);
    None when it is neither (a first grade is still to run)."""
    from .sources.bucket import Bucket

    above = os.path.dirname(os.path.abspath(folder))
    for _ in range(4):  # (a table's part folder is three below the results)
        if os.path.isdir(os.path.join(above, RESULTS_MARK)):
            return (f"{uri} lies inside the results in {above}: give that folder, which "
                    "`rungrade grade --out` wrote")
        above, up = os.path.dirname(above), above
        if above == up:
            break
    bucket = Bucket(folder)
    if bucket.looks_like_a_run():
        return (f"{uri} is a run folder, not results: grade the folder that holds the runs with "
                "`rungrade grade RUNS --out RESULTS`, then give RESULTS here")
    if next(bucket.sample(1), None) is not None:
        return (f"{uri} holds runs, not results: grade them with `rungrade grade {uri} --out "
                "RESULTS`, then give RESULTS here")
    return None


def _holds_runs(page: dict, prefix: str) -> bool:
    """Whether a page of an S3 listing (the first thousand keys under `prefix`, which ends
    with `/` or is empty) holds a run: a key in a folder named like one (`DATE-TIME-SUFFIX`)
    below the prefix, as discovery finds runs. Results hold none (their folders are named by
    table, batch and grader)."""
    from .sources.bucket import RUN_DIR

    return any(RUN_DIR.match(name) for item in page.get("Contents") or ()
               for name in item["Key"].removeprefix(prefix).split("/")[:-1])


def _json_or_none(data: bytes) -> dict | None:
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _process_alive(pid: object) -> bool:
    """Whether process `pid` of this machine lives (a zombie, killed but not yet waited for,
    does not: it holds no lock)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # (another user's process)
        return True
    try:  # Linux: the state follows the command name, which may hold spaces or parentheses
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rpartition(b")")[2].split()[:1] != [b"Z"]
    except OSError:
        return True


@functools.cache
def _machine() -> str | None:
    """What tells this machine's processes from those of another with the same host name:
    its boot id and pid namespace (a container on the same host has a namespace of its own).
    None where /proc cannot say."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            boot = handle.read().strip()
        return f"{boot} {os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return None


def _dead_here(holder: dict | None) -> bool:
    """Whether the lock `holder` names a process of this machine (host name, boot and pid
    namespace all this one's) that no longer runs: its lock is left over, whatever its age.
    False whenever that cannot be known."""
    return bool(holder and _machine() and holder.get("machine") == _machine()
                and holder.get("host") == socket.gethostname()
                and not _process_alive(holder.get("pid")))


# A compacted batch is named `{first batch id}!{token}` (see pipeline/compact.py): `!` sorts
# before every character of a batch id (also before the `-` of a ledger grader's
# `{batch}-{hash}`), and S3 counts it among the characters safe in a key.
COMPACTED = "!"


def _a_marker(path: str, marker) -> bool:
    """Whether `marker`, read from `path`, is a batch's commit marker: its batch id is its
    file's name, and only a compacted batch (`!` in its id) replaces others. A marker naming
    another batch, or replacing batches it is not compacted from, was edited: trusted, it
    made a grade discard a committed batch as never committed (v19)."""
    batch = (marker or {}).get("batch_id")
    if not isinstance(batch, str) or path.rsplit("/", 1)[-1] != f"{batch}.json":
        return False
    replaces = marker.get("replaces")
    return replaces is None or (COMPACTED in batch and isinstance(replaces, list)
                                and all(isinstance(b, str) for b in replaces))


def _replaced(markers: dict[str, dict]) -> set[str]:
    """The batch ids the compacted batches among `markers` replace."""
    return {batch for marker in markers.values() for batch in marker.get("replaces", ())}


def _read_json_fd(fd: int) -> dict | None:
    return _json_or_none(os.pread(fd, 4096, 0))


def flush_to_disk(path: str) -> None:
    """Write to disk everything written so far to the filesystem that holds `path`, the files'
    bytes and the renames alike (Linux: `syncfs`, this filesystem only; elsewhere `sync`).

    Without it, a power cut or a machine crash can lose what the page cache held: a commit
    marker on disk naming parts whose bytes never got there. One call took 20-120 ms on the
    bench machine for a batch's 2,000 reports and parts (flushing each file: 0.4 s). An error the
    disk reported (EIO, ENOSPC) is raised as OSError: nothing that rests on it is written.
    """
    syncfs = _syncfs()
    if syncfs is None:
        os.sync()
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        code = syncfs(fd)
    finally:
        os.close(fd)
    if code in (0, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        if code:  # a filesystem without syncfs
            os.sync()
        return
    raise OSError(code, f"flushing results to disk failed: {os.strerror(code)}", path)


@functools.cache
def _syncfs() -> Callable[[int], int] | None:
    """libc's syncfs(2) as a function of a folder's descriptor that returns 0, or the errno it
    failed with; None where there is none (not Linux)."""
    import ctypes  # only a grade that publishes needs it

    try:
        call = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None

    def syncfs(fd: int) -> int:
        return 0 if call(fd) == 0 else ctypes.get_errno() or errno.EIO
    return syncfs


def grader_slug(grader_id: str) -> str:
    # Grader ids hold exactly one '/', in '.grader/v', so this mapping is one-to-one.
    return grader_id.replace("/", "-")


BATCH_TIME = "%Y%m%dT%H%M%S%fZ"  # a batch id's first 22 characters: they order the batches


# The descriptors of the local results locks this process holds. A process forked from it
# shares each lock (an flock belongs to the open file, not to a process) until it closes its
# copy: a forked worker closes them at once (`close_inherited_locks`), or a grade killed
# outright would leave its lock held by its workers until they noticed, and a grade started
# again at once would be told that the dead one still writes.
LOCK_FDS: set[int] = set()


def close_inherited_locks() -> None:
    """In a process forked from a lock's holder: close its copies of the locks' descriptors
    (never unlocking them: that would release the holder's lock)."""
    for fd in list(LOCK_FDS):
        with contextlib.suppress(OSError):
            os.close(fd)
    LOCK_FDS.clear()


def no_folder_for(path: str) -> str | None:
    """Why a folder cannot be at local `path` (something else is there, or a file stands
    where a folder of its path should be), else None."""
    if os.path.lexists(path):
        return None if os.path.isdir(path) else (
            "is a file, not a folder" if os.path.isfile(path) else
            "is a symlink to nothing" if not os.path.exists(path) else
            "is not a folder (a device, a pipe or a socket)")
    above = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(above):
        above = os.path.dirname(above)
    return None if os.path.isdir(above) else f"lies under {above}, which is not a folder"


def new_batch_id(after: str | None = None) -> str:
    """`{UTC time to the microsecond}Z-{6 hex digits}`. With `after` (the latest batch id
    committed), an id later than it even when this machine's clock is behind that batch's:
    the catalog shows each run's rows of its latest batch, so a regrade stamped earlier than
    a batch a machine whose clock ran ahead committed would stay hidden behind it, and the run
    would be regraded every night."""
    now = datetime.now(UTC)
    if after is not None:
        try:
            last = datetime.strptime(after[:22], BATCH_TIME).replace(tzinfo=UTC)
        except ValueError:  # (not an id of ours)
            last = now
        now = max(now, last + timedelta(microseconds=1))
    return now.strftime(BATCH_TIME) + "-" + secrets.token_hex(3)


# A staged part's row groups hold about this much data each: the Parquet writer holds a row
# group's values whole before it compresses them, which for the outputs of a run of thousands
# of large outputs was as much again as their text (a table of small rows keeps one group).
ROW_GROUP_BYTES = 16 << 20


def _group_rows(df: pl.DataFrame) -> int:
    return max(1, ROW_GROUP_BYTES * df.height // max(1, df.estimated_size()))


def new_attempt(part: int | str) -> str:
    """The name one attempt at staging part `part` stages under, `{part}-{token}`: drawn
    where the shard is graded, so a task run twice (a worker presumed dead, a retry) stages
    its copies apart, and only the attempt the grade takes is published (`publish`)."""
    return f"{part}-{secrets.token_hex(4)}"


# Parts a query filesystem keeps in memory once read (see `_listed_parts_fs`): each at most
# PART_KEPT_BYTES, all together at most PARTS_KEPT_BYTES (the least recently read go first).
PART_KEPT_BYTES = 16 << 20
PARTS_KEPT_BYTES = 256 << 20


# The commit marker's key for the ids of the ledger graders a grade read its ledgers with.
LEDGER_GRADERS = "ledger_graders"


def ledger_graders_changed(commits: list[dict], grader_id: str,
                           ledger_grader_ids: Collection[str]) -> set[str]:
    """The batches of `grader_id` (the contract grader's: refused ledgers are committed under
    it) whose ledgers were read with other ledger graders than `ledger_grader_ids`, or with
    graders no marker recorded (batches written before markers did).

    A ledger refused in such a batch may be graded now (its scenario has a grader since, or a
    new version of its grader expects what it holds), so a grade reads it again."""
    wanted = sorted(ledger_grader_ids)
    return {c["batch_id"] for c in commits
            if c["grader_id"] == grader_id and c.get(LEDGER_GRADERS) != wanted}


# Times the commit markers are listed and read before a reader gives up on their vanishing
# under it (see `ResultStore._markers`): each time means a compaction finished meanwhile.
MARKER_READS = 5

# What every error of a connection that outlived the batches it shows says (see also
# `catalog._still_there`); `catalog.ask` asks again on a new connection when it reads it.
CONNECT_AGAIN = "connect again"
# The error of a query that needs a part its connection listed, gone since (see
# `_listed_parts_fs`).
PART_GONE = ("a part of these results was removed since this connection was opened (a "
             f"compaction merged its batch): {CONNECT_AGAIN} (`rungrade sql` and "
             "`catalog.connect` make a new connection)")


def _listed_parts_fs(fs, listed: dict[str, dict]):
    """A new filesystem like `fs` that answers `info` and `exists` for the paths in `listed`
    (a mapping kept up to date by its owner) from it, without a request, and keeps the bytes
    of those it reads whole (one GET each) for the next time they are opened.

    DuckDB opens a part anew each time a view is bound or queried (a mart binds the views
    under it again), reading its footer and columns with a few range requests each time,
    in turn: 211 GETs to open the views of three small batches. A part is never rewritten."""
    base = type(fs)
    kept: OrderedDict[str, bytes] = OrderedDict()
    lock = threading.Lock()
    room = [PARTS_KEPT_BYTES]

    def remember(name: str, data: bytes) -> None:
        with lock:
            if name not in kept:
                kept[name] = data
                room[0] -= len(data)
                while room[0] < 0 and len(kept) > 1:
                    room[0] += len(kept.popitem(last=False)[1])

    def keepable(name: str) -> bool:
        size = listed.get(name, {}).get("size")
        return size is not None and size <= PART_KEPT_BYTES

    class ListedParts(base):
        def keep(self, paths: list[str]) -> None:
            """Read the listed parts `paths` now, side by side, as many as are kept: a view is
            bound by reading the footer of every part of its tables, one part after another."""
            wanted, total = [], 0
            for name in map(self._strip_protocol, paths):
                if keepable(name) and name not in kept:
                    total += listed[name]["size"]
                    if total > room[0]:
                        break
                    wanted.append(name)
            if wanted:  # a part that cannot be read now is read when it is opened
                for name, data in self.cat(wanted, on_error="omit").items():
                    remember(name, data)

        async def _info(self, path, *args, **kwargs):
            known = listed.get(self._strip_protocol(path))
            if known is not None:
                return dict(known)
            return await super()._info(path, *args, **kwargs)

        async def _exists(self, path, *args, **kwargs):
            if self._strip_protocol(path) in listed:
                return True
            return await super()._exists(path, *args, **kwargs)

        def _open(self, path, mode="rb", *args, **kwargs):
            name = self._strip_protocol(path)
            if mode != "rb" or name not in listed:
                return super()._open(path, mode, *args, **kwargs)
            if not keepable(name):  # read in ranges, each of which may find the part gone
                return _PartInRanges(super()._open(path, mode, *args, **kwargs), path)
            with lock:
                data = kept.get(name)
                if data is not None:
                    kept.move_to_end(name)
            if data is None:
                with _gone_since_listed(path):
                    data = self.cat_file(name)
                remember(name, data)
            return MemoryFile(None, name, data)

    return ListedParts(**fs.storage_options, skip_instance_cache=True)


@contextmanager
def _gone_since_listed(path: str) -> Iterator[None]:
    """A listed part found gone (removed by a compaction only) fails with PART_GONE."""
    try:
        yield
    except FileNotFoundError as exc:
        raise FileNotFoundError(errno.ENOENT, PART_GONE, path) from exc


class _PartInRanges:
    """A listed part too large to keep, read in ranges (DuckDB seeks and reads): a read that
    finds it gone says why, as a kept part's first read does (PART_GONE)."""

    def __init__(self, file, path: str):
        self._file, self._path = file, path

    def read(self, *args):
        with _gone_since_listed(self._path):
            return self._file.read(*args)

    def __getattr__(self, name: str):
        return getattr(self._file, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._file.close()


# Characters the file system layer (fsspec) and DuckDB read as a pattern wherever a path is
# handed to them (listing, reading, the views' globs, a database file's name): results under a
# folder named with one would be looked for as a pattern, and found nowhere or elsewhere.
# A backslash too: DuckDB's globs read it as an escape (or, on some systems, a separator).
PATTERN_CHARACTERS = "[]*?\\"


class StagedReport(NamedTuple):
    """A report staged by a worker: its path, its path below the batch's staged reports
    (`{attempt}/{uri tag}.{name}`), the tag (None in an older version's layout), the name
    it takes unless another run holds it, `{run_id}.json`, and whether it stands for a
    refused run (staged empty as `{attempt}/{uri tag}.{name}{REFUSED_MARK}`): publishing
    then removes the report of that name instead of putting one there."""

    src: str
    rel: str
    tag: str | None
    name: str
    refused: bool = False

    @property
    def tagged(self) -> str:
        """The name it takes where another run holds `{run_id}.json`."""
        return f"{self.name.removesuffix('.json')}~{self.tag}.json"


class ReportOwners:
    """Which run holds each report name of `RESULTS/reports/`: `{run_id}.json` belongs to the
    first run graded with that run id (oldest batch first, under any grader id); a run with
    the same id under another prefix, graded in that batch or any later one, gets
    `{run_id}~{uri tag}.json`. So no run's report ever replaces another run's. A refused run
    takes no name (it has no report); one that holds a name keeps it.

    The committed runs are read when the first batch of the grade publishes (a grade that
    grades nothing reads nothing), then the names each batch takes are kept. A compaction
    keeps each run's latest rows only, in no set order, so where several runs of one id are
    committed, the reports say which of them does not hold the name: a run whose
    `{run_id}~{uri tag}.json` exists. Without a store, no committed run holds a name: the
    first run of a batch graded with that id takes it.
    """

    def __init__(self, store: ResultStore | None):
        self._store = store
        # each run_id, run_uri and whether it was ever graded, first committed first
        self._history: pl.DataFrame | None = None
        self._held: dict[str, str] = {}  # report name: its run's uri tag, as batches publish

    def names(self, staged: list[StagedReport]) -> dict[str, str]:
        """{rel: name} of the `staged` reports whose run does not hold `{run_id}.json`; the
        others' runs hold it from now on, where a graded run's report takes a name nobody
        holds."""
        self._held.update(self._holders(
            {r.name for r in staged if r.tag and r.name not in self._held}))
        renamed = {}
        for report in staged:
            if report.tag is None:
                continue
            holder = self._held.get(report.name)
            if holder is None and not report.refused:
                holder = self._held[report.name] = report.tag
            if holder != report.tag:
                renamed[report.rel] = report.tagged
        return renamed

    def _holders(self, names: set[str]) -> dict[str, str]:
        """{name: uri tag} of the committed runs that hold `names` (a name none holds is
        left out)."""
        if not names or self._store is None:
            return {}
        if self._history is None:
            runs = self._store.committed_runs(
                {"run_id": pl.String, "run_uri": pl.String, "status": pl.String},
                with_batch=True)
            self._history = runs.group_by("run_id", "run_uri", maintain_order=True).agg(
                graded=(pl.col("status") == "graded").any(), part=pl.col("part").min())
        ids = {name.removesuffix(".json") for name in names}
        named = pl.col("run_id")  # (and the ids whose names are not the id: see report_stem)
        found = self._history.filter(named.is_in(ids) | (named.str.len_bytes() > NAME_BYTES)
                                     | pl.any_horizontal(named.str.contains(c, literal=True)
                                                         for c in NOT_IN_NAMES))
        runs: dict[str, list[tuple[str, str, bool]]] = {}
        for run_id, run_uri, graded, part in found.iter_rows():
            runs.setdefault(f"{report_stem(run_id)}.json", []).append(
                (part, uri_tag(run_uri), graded))
        # first committed first, and in one part by uri tag: the order a batch hands out the
        # names of the reports it staged (`names`, over `_staged_reports`); row order within
        # a part made a run refused since and graded again take another run's name
        holders = {name: self._holder(name, [(tag, graded) for _, tag, graded
                                             in sorted(runs[name])])
                   for name in names if name in runs}
        return {name: tag for name, tag in holders.items() if tag is not None}

    def _holder(self, name: str, runs: list[tuple[str, bool]]) -> str | None:
        """Of the committed runs named `name` (uri tag, whether ever graded; first committed
        first), the tag of the one that holds it: the first graded one without a tagged
        report of its own. Where every graded one has its tagged report, the first never
        graded holds it (results of versions that let a refused run hold a name), or none
        of them ("": each keeps its tagged name). None when the only one was never graded."""
        if len(runs) == 1:
            tag, graded = runs[0]
            return tag if graded else None
        stem = name.removesuffix(".json")
        return next((tag for tag, graded in runs
                     if graded and not self._store.has_report(f"{stem}~{tag}.json")),
                    next((tag for tag, graded in runs if not graded), ""))


class ResultStore:
    def __init__(self, uri: str, endpoint_url: str | None = None):
        if not uri.strip():  # (an unset variable in a script: never the current folder)
            raise FileNotFoundError("the results location is empty: give a results folder or "
                                    "s3:// prefix")
        self.uri = uri
        self.protocol, self.root = split_uri(uri)
        if held := sorted(set(PATTERN_CHARACTERS) & set(self.root)):
            # FileNotFoundError: every command reports it as a path to check (exit code 2)
            raise FileNotFoundError(
                f"results location {uri} holds {' '.join(held)}: a results path cannot hold "
                f"any of {' '.join(PATTERN_CHARACTERS)}, which DuckDB and the file system "
                "layer read as patterns (the results could not be found again); give a "
                "folder whose path has none of them")
        if shown(uri) != uri:
            raise FileNotFoundError(
                f"results location {shown(uri)} is not valid UTF-8 (shown with \\x escapes): "
                "DuckDB, which the catalog and every query use, takes UTF-8 paths only; give a "
                "folder whose path is UTF-8")
        self.fs = filesystem(uri, endpoint_url)
        self.local = self.protocol == "file"
        # batches a compacted batch replaced whose parts or markers are still here, as the
        # last `discard_uncommitted` found them (see `tidy_replaced`)
        self.replaced_left: set[str] = set()
        # remote: what the listings of `_parts` said of each part file (see `query_filesystem`)
        self._listed_parts: dict[str, dict] = {}
        self._query_fs = None
        # while `lock` holds the results lock: its check (see there), which `publish` calls
        self._still_locked: Callable[..., None] | None = None

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def url(self, path: str) -> str:
        return path if self.local else f"{self.protocol}://{path}"

    def holds_nothing(self, otherwise: str, runs: bool = True) -> str:
        """Why the results hold no committed batch (or no grade log), as a message: on S3, that
        their bucket does not exist at this endpoint, when it does not, or (with `runs`) that
        the prefix holds runs; else `otherwise` (a first grade is still to run). One or two
        requests, asked only once nothing was found. Missing credentials and an endpoint that
        does not answer are raised as they are (the client's `exists` takes them for a
        missing bucket)."""
        if not self.local:
            bucket, _, prefix = self.root.partition("/")
            try:
                self.fs.call_s3("list_objects_v2", Bucket=bucket, MaxKeys=1)
                below = f"{prefix.rstrip('/')}/" if prefix.strip("/") else ""
                if runs and _holds_runs(self.fs.call_s3(
                        "list_objects_v2", Bucket=bucket, MaxKeys=1000, Prefix=below), below):
                    return (f"{self.uri} holds runs, not results: grade them with `rungrade "
                            f"grade {self.uri} --out RESULTS`, then give RESULTS here")
            except FileNotFoundError:
                return (f"{self.uri}: bucket {bucket} does not exist (or the endpoint is "
                        "no S3 service): check the bucket's name and --endpoint-url")
            except Exception as exc:
                if is_outage(exc) or no_credentials(exc):
                    raise
                # (a store that cannot say: the usual advice)
        elif why := no_folder_for(self.root):
            return (f"{self.uri} is not a results folder: it {why}; give the folder a "
                    "`rungrade grade --out` wrote")
        elif os.path.isdir(self.root):
            return _what_it_is_instead(self.uri, self.root) or otherwise
        return otherwise

    # -- commits ---------------------------------------------------------------------------
    def commits(self) -> list[dict]:
        """Committed batches, oldest first. A batch a compacted batch replaces (its marker's
        `replaces`, see pipeline/compact.py) is not, even while its files are still there."""
        markers = self._markers()
        replaced = _replaced(markers)
        return sorted((c for c in markers.values() if c["batch_id"] not in replaced),
                      key=lambda c: c["batch_id"])

    def present(self, path: str) -> bool:
        """Whether `path` exists. A local path that cannot be looked at (a folder on its way
        this user may not search) raises PermissionError (exit 4, saying so): read as absent,
        another user's results were "no committed results; run `rungrade grade` first"."""
        if not self.local:
            return self.fs.exists(path)
        try:
            os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True

    def _markers(self) -> dict[str, dict]:
        """Every commit marker, by path.

        A reader may list the markers while a compaction removes those of the batches it
        merged (writers hold the lock, readers do not): a marker gone between the listing and
        its read means the compacted batch's marker was written since, perhaps after the
        listing, so the markers are listed again rather than read without it."""
        folder = self.path("_commits")
        for _ in range(MARKER_READS):
            if not self.present(folder):
                return {}
            paths = [p for p in self.fs.ls(folder, detail=False) if p.endswith(".json")]
            # fetched concurrently on S3
            blobs = self.fs.cat(paths, on_error="omit") if paths else {}
            if len(blobs) == len(paths):
                markers = {path: _json_or_none(blob) for path, blob in blobs.items()}
                damaged = sorted(p for p, m in markers.items() if not _a_marker(p, m))
                if damaged:
                    names = first_few([p.rsplit("/", 1)[-1] for p in damaged])
                    raise ResultsDamaged(
                        f"the results in {self.uri} hold commit markers that are not a "
                        f"batch's JSON record (_commits/{names}): cut short, overwritten or "
                        f"edited, so whether their batches committed is unknown. "
                        f"{DAMAGED_ADVICE}", set())
                return markers
        gone = sorted(set(paths) - set(blobs))
        raise FileNotFoundError(f"commit markers in {self.url(folder)} went on vanishing while "
                                f"they were read ({', '.join(gone[:3])}): rerun the command")

    def committed_batches(self) -> set[str]:
        return {c["batch_id"] for c in self.commits()}

    def discard_uncommitted(self) -> list[str]:
        """Remove parts of batches that never committed (a crash or kill mid-publish); return
        their ids. The batches a compacted batch replaced (see `commits`) are left for
        `tidy_replaced`, and named in `replaced_left` while any of their files is here.

        A committed batch whose reports were still staged has them moved into place now.
        """
        markers = self._markers()
        replaced = _replaced(markers)
        commits = {c["batch_id"]: c for c in markers.values() if c["batch_id"] not in replaced}
        removed = []
        staging = self.path("_staging")
        if self.fs.exists(staging):
            for path in self.fs.ls(staging, detail=False):
                batch = path.rstrip("/").rsplit("/", 1)[-1]
                if batch in commits:  # roll its reports forward, under the names it chose
                    commit = commits[batch]
                    attempts = commit.get("attempts")  # absent from older versions' markers
                    staged = self._staged_reports(
                        batch, None if attempts is None else set(attempts))
                    renamed = commit.get("renamed_reports")
                    self._publish_reports(batch, commit["grader_id"], staged, ReportOwners(
                        None).names(staged) if renamed is None else renamed)
                else:
                    removed.append(batch)
                    self.fs.rm(path, recursive=True)
        self.replaced_left = {m["batch_id"] for m in markers.values()} & replaced
        for batch, batch_dir in self._every_batch_dir():
            if batch in replaced:
                self.replaced_left.add(batch)
            elif batch not in commits:
                self.fs.rm(batch_dir, recursive=True)
                removed.append(batch)
        self._remove_leftovers()
        return sorted(set(removed) - replaced)

    def _remove_leftovers(self) -> None:
        """Remove what a process killed while it wrote a file whole left beside it (`*.tmp-*`:
        a record, a marker, a listing, a report, catalog.duckdb's next copy and its WAL), at
        least LEFTOVER_AGE seconds old (not a file this grade has begun): a kill never reaches
        the cleanup of an `except` or `finally`. Local results only: S3 writes an object
        whole. Call with the results lock held."""
        if not self.local:
            return
        root = self.root
        folders = [root, *(os.path.join(root, name) for name in (
            GRADES, "_commits", self.LISTINGS, "reports")),
            *glob.glob(os.path.join(glob.escape(root), "_readings", "*")),
            *glob.glob(os.path.join(glob.escape(root), "reports", "grader=*"))]
        before = datetime.now(UTC).timestamp() - LEFTOVER_AGE
        for folder in folders:
            with contextlib.suppress(OSError), os.scandir(folder) as entries:
                for entry in entries:
                    if (".tmp-" in entry.name and entry.is_file(follow_symlinks=False)
                            and entry.stat(follow_symlinks=False).st_mtime < before):
                        with contextlib.suppress(OSError):
                            os.remove(entry.path)

    def tidy_replaced(self) -> None:
        """Remove the parts, then the markers, of the batches compacted batches replaced.
        Call it once no catalog names them (`catalog.tidy_compacted`): a view over a batch
        whose files are gone would lose its rows."""
        markers = self._markers()
        replaced = _replaced(markers)
        for batch, batch_dir in self._every_batch_dir():
            if batch in replaced:
                self.fs.rm(batch_dir, recursive=True)
        for path, marker in markers.items():
            if marker["batch_id"] in replaced:
                self.fs.rm(path)
        self.replaced_left = set()

    def _parts(self, table: str) -> list[str]:
        """Every Parquet part of a table (`{table}/grader=*/batch=*/*.parquet`), committed or
        not, sorted. On S3 from one flat listing of the table (a glob lists each grader and
        each batch folder in turn, a round trip each)."""
        base = self.path(table)
        if self.local:
            return sorted(glob.glob(os.path.join(base, "grader=*", "batch=*", "*.parquet")))
        found = {p: info for p, info in self.fs.find(base, detail=True).items()
                 if p.endswith(".parquet") and p[len(base) + 1:].count("/") == 2
                 and "/batch=" in p}
        self._listed_parts.update(found)
        return sorted(found)

    def query_filesystem(self):
        """The filesystem DuckDB reads these results through (None: locally, its own).

        On S3, the store's, except that it takes what this store's listings said of each part
        file for the file's size and existence, and keeps the parts it reads (see
        `_listed_parts_fs`): DuckDB asked for the size of every part a query read, each time
        it read it (a HEAD request per part per query). Anything else is asked as before.
        """
        if self.local:
            return None
        if self._query_fs is None:
            self._query_fs = _listed_parts_fs(self.fs, self._listed_parts)
        return self._query_fs

    def _per_table(self, listing: Callable[[str], list[str]]) -> dict[str, list[str]]:
        """`listing(table)` of every table; on S3 the tables side by side (the listings
        overlap), locally one after another."""
        if self.local:
            return {table: listing(table) for table in TABLES}
        with ThreadPoolExecutor(len(TABLES)) as pool:
            return dict(zip(TABLES, pool.map(listing, TABLES), strict=True))

    def _every_batch_dir(self) -> list[tuple[str, str]]:
        """(batch id, folder) of every batch folder of every table, committed or not."""
        listed = self._per_table(self._batch_dirs).values()
        return [(folder.rsplit("batch=", 1)[-1], folder) for dirs in listed for folder in dirs]

    def _batch_dirs(self, table: str) -> list[str]:
        """Every batch folder of a table, committed or not, sorted (object stores keep no
        empty folders, so on S3 those of its parts)."""
        if self.local:
            return sorted(glob.glob(os.path.join(self.path(table), "grader=*", "batch=*")))
        return sorted({p.rsplit("/", 1)[0] for p in self._parts(table)})

    def discard(self, batch_id: str) -> None:
        """Drop the staged parts of a batch that will not be published (a stop, a failure)."""
        self._remove(self.path("_staging", batch_id))

    def _files(self, folder: str) -> list[str]:
        """Every file below `folder`, sorted (none if it does not exist)."""
        if self.local:  # os.walk: fsspec's local find stats every entry twice
            return sorted(os.path.join(d, f) for d, _, names in os.walk(folder) for f in names)
        return sorted(self.fs.find(folder)) if self.fs.exists(folder) else []

    def _remove(self, folder: str) -> None:
        if self.local:
            if os.path.isdir(folder):
                shutil.rmtree(folder)
        elif self.fs.exists(folder):
            self.fs.rm(folder, recursive=True)

    def stage_part(self, batch_id: str, attempt: str, grader_id: str,
                   tables: dict[str, pl.DataFrame], reports: dict[str, str]) -> None:
        """Write one shard of a batch under `_staging/{batch_id}/`; nobody reads it there.

        Worker processes stage their shards side by side, each attempt at a shard under a
        name of its own (`new_attempt`); its reports go to `reports/{attempt}/`. `publish`
        later moves the accepted attempts into place.
        """
        staging = self.path("_staging", batch_id)
        files: dict[str, bytes] = {}  # remote: sent at the end, in one concurrent batch of PUTs

        def put(path: str, data: bytes) -> None:
            if self.local:
                self._put(path, data, fresh=True)  # written as made: no shard held twice
            else:
                files[path] = data

        for table in TABLES:
            df = conform(table, tables[table]) if table in tables else None
            if df is None:
                continue
            df = df.with_columns(pl.lit(grader_id).alias("grader_id")) if (
                "grader_id" not in df.columns) else df
            buf = io.BytesIO()
            df.write_parquet(buf, compression="zstd", compression_level=1, statistics=True,
                             row_group_size=_group_rows(df))
            put(f"{staging}/{table}/part-{attempt}.parquet", buf.getvalue())
        for name, text in reports.items():
            put(f"{staging}/reports/{attempt}/{name}", text.encode())
        if files:  # not one round trip per report
            self.fs.pipe(files)

    def publish(self, batch_id: str, grader_id: str, summary: dict,
                attempts: set[str], owners: ReportOwners | None = None) -> None:
        """`_publish`, under the results lock when this store holds it: S3 results ask the
        lock object whether it is still this process's just before the commit marker, and
        again when publishing fails. A process paused past the lock's expiry (a suspended
        machine) may resume before its heartbeat has noticed that another grade took the lock
        and discarded this batch's staged shards, or rolled its reports forward: it stops with
        `ResultsLocked` instead of committing parts that are gone, or failing on a staged copy
        that was moved."""
        try:
            self._publish(batch_id, grader_id, summary, attempts, owners)
        except Exception:
            if self._still_locked is not None:
                try:
                    self._still_locked(f"while it committed batch {batch_id}")
                except ResultsLocked:
                    raise
                except Exception:  # (S3 out of reach: the first error says so)
                    pass
            raise

    def _publish(self, batch_id: str, grader_id: str, summary: dict,
                 attempts: set[str], owners: ReportOwners | None) -> None:
        """Move the staged parts of `attempts` into place, write the batch's commit marker
        (the batch now exists), then move the same attempts' reports into place.

        An attempt is `{part}-{token}` (`new_attempt`). Only the attempts whose results the
        grade took are published, each as `part-{part}.parquet`, and the marker names them: a
        task that died, or a worker presumed dead that finishes its shard after the shard was
        given to another, leaves files nobody publishes (they go with the staging folder).

        Each report is named `{run_id}.json`, or `{run_id}~{uri tag}.json` where another run
        holds that name (`owners`; without them, a run earlier in the batch). The marker
        keeps the names that are not `{run_id}.json`, so a batch whose reports a crash left
        staged is finished under the same names.
        """
        slug = grader_slug(grader_id)
        staging = self.path("_staging", batch_id)
        staged = self._files(staging)
        names = {f"part-{attempt}.parquet": f"part-{attempt.split('-', 1)[0]}.parquet"
                 for attempt in attempts}
        moves = []
        for path in staged:
            table, _, name = path[len(staging) + 1:].partition("/")
            if table in TABLES and name in names:
                moves.append((path, self.path(table, f"grader={slug}", f"batch={batch_id}",
                                              names[name])))
        if self.local:
            for src, dst in moves:
                self._move(src, dst)
            flush_to_disk(self.root)  # the parts on disk before a marker names them
        elif moves:  # server-side copies, many at a time; staging goes with the folder later
            self.fs.copy([m[0] for m in moves], [m[1] for m in moves])
        staged = self._staged_reports(batch_id, attempts)
        renamed = (owners or ReportOwners(None)).names(staged)
        marker = {"batch_id": batch_id, "grader_id": grader_id,
                  "committed_at": datetime.now(UTC).isoformat(timespec="seconds"), **summary,
                  "attempts": sorted(attempts), "renamed_reports": renamed}
        if self._still_locked is not None:
            self._still_locked(f"before it committed batch {batch_id}")
        self._put(self.path("_commits", f"{batch_id}.json"),
                  json.dumps(marker, indent=1).encode(), durable=True)
        self._publish_reports(batch_id, grader_id, staged, renamed)

    def has_report(self, name: str) -> bool:
        """Whether `reports/{name}` exists (the copy every grader id's report has)."""
        return self.fs.exists(self.path("reports", name))

    def _staged_reports(self, batch_id: str, attempts: set[str] | None) -> list[StagedReport]:
        """The staged reports of a batch's `attempts` (all when None), in path order."""
        folder = f"{self.path('_staging', batch_id)}/reports"
        staged = []
        for src in self._files(folder):
            # staged as `{attempt}/{uri tag}.{name}` (see build_reports)
            rel = src[len(folder) + 1:]
            attempt, base = rel.rpartition("/")[::2]
            if attempts is not None and attempt not in attempts:
                continue
            tag, name = (base[:8], base[9:]) if attempt else (None, base)
            refused = name.endswith(REFUSED_MARK)
            staged.append(StagedReport(src, rel, tag, name.removesuffix(REFUSED_MARK), refused))
        return staged

    def _publish_reports(self, batch_id: str, grader_id: str, staged: list[StagedReport],
                         renamed: dict[str, str]) -> None:
        """Put a committed batch's `staged` reports in place, each under its name (`renamed`
        where that is not `{run_id}.json`), and remove both copies of the reports its refused
        runs held; then drop its staging folder.

        Runs after the commit marker, so a report never describes an uncommitted batch. Each
        report's top-level copy is made before its per-grader copy is moved out of staging,
        and the staging folder goes last, so a crash part way leaves every unfinished report
        (and removal) staged, and `discard_uncommitted` rolls it forward.
        """
        slug = grader_slug(grader_id)
        staging = self.path("_staging", batch_id)
        pairs = [(report.src, renamed.get(report.rel, report.name)) for report in staged
                 if not report.refused]
        gone = [self.path("reports", *folder, renamed.get(report.rel, report.name))
                for report in staged if report.refused for folder in ((), (f"grader={slug}",))]
        if self.local:
            if pairs:
                os.makedirs(self.path("reports", f"grader={slug}"), exist_ok=True)
            for src, name in pairs:
                self._copy(src, self.path("reports", name))
                self._move(src, self.path("reports", f"grader={slug}", name))
            for path in gone:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)
            if pairs or gone:
                flush_to_disk(self.root)  # the reports in place before their staged copies go
        else:
            if pairs:
                self.fs.copy([s for s, _ in pairs], [self.path("reports", n) for _, n in pairs])
                self.fs.copy([s for s, _ in pairs],
                             [self.path("reports", f"grader={slug}", n) for _, n in pairs])
            if gone:
                self._delete_keys(gone)
        self._remove(staging)

    def _delete_keys(self, paths: list[str]) -> None:
        """Delete the S3 objects `paths` (`bucket/key`), each by its very key: `fs.rm` reads
        `*`, `?` and `[` as a pattern, and a run id may hold them. A key not there is no
        error."""
        bucket = self.root.partition("/")[0]
        keys = [path.partition("/")[2] for path in paths]
        for start in range(0, len(keys), 1000):  # (at most 1,000 keys a request)
            answer = self.fs.call_s3("delete_objects", Bucket=bucket, Delete={
                "Objects": [{"Key": key} for key in keys[start:start + 1000]], "Quiet": True})
            if answer.get("Errors"):
                error = answer["Errors"][0]
                raise OSError(errno.EIO, f"S3 did not delete {error.get('Key')}: "
                                         f"{error.get('Code')} {error.get('Message')}")

    def fingerprints(self, grader_ids: set[str], commits: list[dict] | None = None,
                     reread_refused_ledgers: Collection[str] = ()) -> dict[str, str]:
        """{run_uri: fingerprint} of every run committed under one of `grader_ids` (in
        `commits`, the committed batches, when the caller has read them).

        A run stored in several batches keeps the fingerprint of its latest grading: by the
        grade's batch it was graded in (`graded_in`, which compaction keeps), not by the batch
        that holds it. A compacted batch is named after the first batch it merged, so its id
        would put a ledger's refusal merged there (under the contract grader's id) before a
        later grading under its ledger grader's. Rows from before `graded_in` (null) are older
        than every row that has one, and kept in their batches' order. A run whose latest row
        is a ledger refused in one of the batches `reread_refused_ledgers` is left out (see
        `ledger_graders_changed`). Reads three columns of the committed `runs` parts (five,
        and the parts' paths, with such batches).
        """
        columns = {"run_uri": pl.String, "fingerprint": pl.String, "graded_in": pl.String}
        if not reread_refused_ledgers:
            found = self.committed_runs(columns, commits, grader_ids)
        else:
            found = self.committed_runs(
                {**columns, "source": pl.String, "status": pl.String}, commits, grader_ids,
                with_batch=True,
            ).with_columns(pl.when(
                (pl.col("source") == "ledger") & (pl.col("status") == "refused")
                & pl.col("batch_id").is_in(list(reread_refused_ledgers))
            ).then(None).otherwise(pl.col("fingerprint")).alias("fingerprint"))
        found = found.sort("graded_in", nulls_last=False, maintain_order=True)
        latest = dict(zip(found["run_uri"].to_list(), found["fingerprint"].to_list(),
                          strict=True))
        return {uri: fingerprint for uri, fingerprint in latest.items() if fingerprint}

    def committed_runs(self, columns: dict[str, pl.DataType], commits: list[dict] | None = None,
                       grader_ids: set[str] | None = None, with_batch: bool = False
                       ) -> pl.DataFrame:
        """`columns` of the committed `runs` parts of `grader_ids` (default: every grader id's),
        oldest batch first (`commits`: the committed batches, when the caller has read them),
        and with `with_batch` the `batch_id` and `part` (`batch=…/part-N.parquet`, in the
        order the parts are read) of each row.
        Locally in one scan (polars reads the parts side by side and keeps their order), from
        S3 fetched whole, many at a time (a part is a few tens of KB)."""
        commits = self.commits() if commits is None else commits
        batches = {c["batch_id"] for c in commits
                   if grader_ids is None or c["grader_id"] in grader_ids}
        parts = self.table_files("runs", batches)
        if grader_ids is not None:
            slugs = {f"grader={grader_slug(g)}" for g in grader_ids}
            parts = [p for p in parts if p.split("/")[-3] in slugs]
        paths = [url if self.local else url.split("://", 1)[1]
                 for url in sorted(parts, key=lambda p: p.split("batch=", 1)[-1])]
        # the batch of a row's part, and the part's place ("batch=…/part-3.parquet": the
        # parts' order here, that of the reports each part staged)
        batch = [pl.col("_part").str.extract(r"/batch=([^/]+)/", 1).alias("batch_id"),
                 pl.col("_part").str.extract(r"(batch=[^/]+/[^/]+)$", 1).alias("part")]
        if not paths:
            return pl.DataFrame(schema={**columns, **({"batch_id": pl.String, "part": pl.String}
                                                      if with_batch else {})})
        # parts written by other versions may hold other columns: only these are read
        if self.local:
            found = pl.scan_parquet(paths, schema=columns, extra_columns="ignore",
                                    missing_columns="insert", hive_partitioning=False,
                                    include_file_paths="_part" if with_batch else None)
            try:
                return (found.with_columns(batch).drop("_part") if with_batch
                        else found).collect()
            except pl.exceptions.ComputeError as exc:
                raise self._damaged_parts([p for p in paths if not _parquet(p)]) from exc
        frames = []
        for chunk in range(0, len(paths), self.FETCHED_TOGETHER):
            some = paths[chunk:chunk + self.FETCHED_TOGETHER]
            blobs = self.fs.cat(some)
            for path in some:
                try:
                    frame = pl.scan_parquet(
                        io.BytesIO(blobs[path]), schema=columns, extra_columns="ignore",
                        missing_columns="insert", hive_partitioning=False).collect()
                except pl.exceptions.ComputeError as exc:
                    raise self._damaged_parts([path]) from exc
                frames.append(frame.with_columns(pl.lit(path).alias("_part")).with_columns(
                    batch).drop("_part") if with_batch else frame)
        return pl.concat(frames, how="vertical_relaxed")

    def _damaged_parts(self, paths: list[str]) -> ResultsDamaged:
        """What to say of committed `runs` parts (`paths`; none when the footers read and a
        page did not) that polars cannot read."""
        names = [p.split("/batch=", 1)[-1] for p in paths]
        shown = first_few([f"runs/…/batch={n}" for n in names])
        return ResultsDamaged(
            f"the results in {self.uri} hold committed parts that cannot be read "
            f"({shown or 'a part of runs/'}): cut short or overwritten. {DAMAGED_ADVICE}",
            {n.split("/", 1)[0] for n in names})

    FETCHED_TOGETHER = 256  # committed `runs` parts read at once by `fingerprints`

    # -- listings: what a rerun needs to check a local run without listing its folders ----
    LISTINGS = "_listings"
    LISTING_FILES_KEPT = 16  # more files than this are merged into one when read

    def save_listings(self, batch_id: str, rows: list[tuple[str, str, str, bytes]]) -> None:
        """Keep (run_uri, fingerprint, shape, stats) of a committed batch's local runs: see
        `pack_listing`.

        Only a cache: a rerun uses a row only when its fingerprint is the run's committed one
        (see `listings`), so a row written for a batch that never committed, or left by a
        crash, is harmless; a missing one only means the run is listed as before.
        """
        if not rows:
            return
        frame = pl.DataFrame(rows, schema={"run_uri": pl.String, "fingerprint": pl.String,
                                           "shape": pl.String, "stats": pl.Binary},
                             orient="row")
        self._put_frame(self.path(self.LISTINGS, f"{batch_id}.parquet"), frame)

    def listings(self, known: dict[str, str]) -> ListingIndex:
        """The saved listings of the runs in `known` ({run_uri: committed fingerprint}) whose
        fingerprint is still the committed one. Merges the listing files into one when there
        are many (the merged file is written before the others are removed)."""
        paths = self._cache_files(self.path(self.LISTINGS)) if known else []
        frames = self._cache_frames(paths)
        if not frames:
            return ListingIndex()
        committed = pl.DataFrame({"run_uri": list(known), "fingerprint": list(known.values())},
                                 schema={"run_uri": pl.String, "fingerprint": pl.String})
        valid = (pl.concat(frames, how="vertical_relaxed")
                 .join(committed, on=["run_uri", "fingerprint"], how="semi")
                 .unique("run_uri", keep="last", maintain_order=True))
        if len(paths) > self.LISTING_FILES_KEPT:
            with contextlib.suppress(OSError):
                self._merge(paths, self.path(self.LISTINGS,
                                             f"merged-{new_batch_id()}.parquet"), valid)
        return ListingIndex(valid)

    # -- caches: folders of Parquet files, each written whole, any of them may be lost ----
    def _cache_files(self, folder: str) -> list[str]:
        """The Parquet files of a cache folder, sorted (none if it does not exist)."""
        if not self.fs.exists(folder):
            return []
        return sorted(p for p in self.fs.ls(folder, detail=False) if p.endswith(".parquet"))

    def _cache_frames(self, paths: list[str]) -> list[pl.DataFrame]:
        """The frames of cache files, fetched concurrently on S3; a file that cannot be read
        is left out (a cache is never fatal)."""
        blobs = {} if self.local or not paths else self.fs.cat(paths)
        frames = []
        for path in paths:
            try:
                frames.append(pl.read_parquet(path if self.local else io.BytesIO(blobs[path])))
            except Exception:  # unreadable: its entries are made again
                continue
        return frames

    def _put_frame(self, path: str, frame: pl.DataFrame) -> None:
        buf = io.BytesIO()
        frame.write_parquet(buf, compression="zstd")
        self._put(path, buf.getvalue())

    def _merge(self, paths: list[str], merged: str, frame: pl.DataFrame | None) -> None:
        """Replace the cache files `paths` with one file `merged` holding `frame` (written
        before they are removed; with no frame they are only removed)."""
        if frame is not None:
            self._put_frame(merged, frame)
        for path in paths:
            self.fs.rm(path)

    # -- clause readings: what each distinct clause requires, read once per code version --
    READINGS = "_readings"
    READING_FILES_KEPT = 16  # more files than this are merged into one by `tidy_readings`

    def saved_readings(self, version: str, keys: pl.Series) -> pl.DataFrame | None:
        """The clause readings kept under `version` (see `clause_analysis.readings_version`)
        of the clauses `keys` names (their `_akey`), one row each; None when none is kept.

        Only a cache: a file that cannot be read, or whose columns do not line up with the
        others, is passed over (its clauses are read again)."""
        wanted = keys.unique().to_frame("_akey")
        found = None
        for frame in self._cache_frames(self._cache_files(self.path(self.READINGS, version))):
            try:
                frame = frame.join(wanted, on="_akey", how="semi")
                found = frame if found is None else pl.concat([found, frame],
                                                              how="vertical_relaxed")
            except pl.exceptions.PolarsError:
                continue
        if found is None or found.is_empty():
            return None
        return found.unique("_akey", keep="first", maintain_order=True)

    def save_readings(self, version: str, readings: pl.DataFrame) -> None:
        """Keep clause readings (one row per clause, keyed by `_akey`) under `version`, in a
        file of their own: workers save side by side, never into one file."""
        if not readings.is_empty():
            self._put_frame(self.path(self.READINGS, version, f"{new_batch_id()}.parquet"),
                            readings)

    def tidy_readings(self, version: str) -> None:
        """Remove the readings of other versions (made by other code), and merge this
        version's files into one when there are more than READING_FILES_KEPT (the merged
        file is written before the others are removed). Run while no worker saves any."""
        folder = self.path(self.READINGS)
        if not self.fs.exists(folder):
            return
        for other in self.fs.ls(folder, detail=False):
            if other.rstrip("/").rsplit("/", 1)[-1] != version:
                self._remove(other)
        paths = self._cache_files(self.path(self.READINGS, version))
        if len(paths) <= self.READING_FILES_KEPT:
            return
        frames = self._cache_frames(paths)
        try:
            merged = pl.concat(frames, how="vertical_relaxed").unique(
                "_akey", keep="first", maintain_order=True) if frames else None
        except pl.exceptions.PolarsError:  # files that do not line up: start afresh
            merged = None
        if merged is not None and merged.is_empty():
            merged = None
        self._merge(paths, self.path(self.READINGS, version, f"{new_batch_id()}.parquet"),
                    merged)

    # -- the grade log: one record per grade (the `grades` view) ---------------------------
    def log_grade(self, record: dict) -> None:
        """Write (or rewrite, whole) the record of one grade: `_grades/{grade_id}.json`."""
        # (a path that is not UTF-8, in the runs root or an error, as `shown` writes it: JSON
        # escapes its lone surrogates, which DuckDB refuses to read)
        self._put(self.path(GRADES, f"{record['grade_id']}.json"),
                  json.dumps(shown_in(record), indent=1).encode() + b"\n")

    def close_interrupted_grade(self) -> None:
        """Mark the latest grade record `interrupted` while it still says `running`. Call with
        the lock held: the grade that wrote it is gone (killed, or its machine lost), and
        grades hold the lock one at a time, so only the latest can be."""
        try:
            names = sorted(p for p in self.fs.ls(self.path(GRADES), detail=False)
                           if p.endswith(".json"))
        except FileNotFoundError:
            return
        latest = names[-1].rsplit("/", 1)[-1].removesuffix(".json") if names else None
        record = self.grade_record(latest) if latest else None
        if record is not None and record.get("status") == "running":
            record.update(grade_id=latest, status="interrupted")
            self.log_grade(self.with_its_commits(record))

    def with_its_commits(self, record: dict) -> dict:
        """A grade's record that ended abnormally, with the batches it committed and their
        runs graded and refused, read from the commit markers: the record is rewritten at most
        once a second, so a grade killed outright (or stopped between a commit and its
        record) left it short of what it committed. Its runs found are then at least those
        it skipped, graded and refused (discovery ran ahead of the record too). Markers
        written before they named their grade leave the record as it is."""
        with contextlib.suppress(Exception):  # (a log: without the markers, as it was)
            mine = [c for c in self.commits() if c.get("grade_id") == record["grade_id"]]
            if {c["batch_id"] for c in mine} - set(record.get("batches") or ()):
                refused = sum(c["refused"] for c in mine)
                graded = sum(c["runs"] for c in mine) - refused
                found = max(record.get("found") or 0,
                            (record.get("skipped") or 0) + graded + refused)
                record = {**record, "batches": sorted(c["batch_id"] for c in mine),
                          "graded": graded, "refused": refused, "found": found}
        return record

    def amend_grade(self, grade_id: str, **fields) -> None:
        """Rewrite the record of `grade_id` with `fields` changed (nothing when it has none)."""
        if record := self.grade_record(grade_id):
            self.log_grade({**record, **fields})

    def grade_record(self, grade_id: str) -> dict | None:
        """The record of `grade_id` as it is now (None: no such record, or not one)."""
        try:
            return _json_or_none(self.fs.cat_file(self.path(GRADES, f"{grade_id}.json")))
        except FileNotFoundError:
            return None

    # -- the lock: one `grade` at a time per results root ---------------------------------
    @contextmanager
    def lock(self, command: str = "rungrade grade",
             stale_after: float = S3_LOCK_STALE_SECONDS) -> Iterator[Callable[..., None]]:
        """Hold the results lock for the duration of a `with` block.

        Yields a function that raises `ResultsLocked` if the lock was lost meanwhile (call it
        before each commit; told what this process is doing, it also asks an S3 lock object
        whose it is, and the message says what stopped). Refuses at once, with
        `ResultsLocked`, when another process holds the lock. Local results use an advisory
        `flock` on `_lock`, which the kernel releases when its holder dies, even by `kill -9`.
        S3 results use a `_lock.json` object created only if absent (conditional write); its
        holder rewrites it every `stale_after / 4` seconds, and a lock not rewritten for
        `stale_after` seconds is stale and may be taken, as is at once one whose holder was a
        process of this machine that has died.
        """
        owner = {"pid": os.getpid(), "host": socket.gethostname(), "machine": _machine(),
                 "command": command, "since": datetime.now(UTC).isoformat(timespec="seconds")}
        with (self._local_lock(owner) if self.local else self._s3_lock(owner, stale_after)
              ) as check:
            self._still_locked = check
            try:
                yield check
            finally:
                self._still_locked = None

    def lock_held(self, stale_after: float = S3_LOCK_STALE_SECONDS) -> bool | None:
        """Whether some process holds the results lock, found without taking it (a look
        never makes a grade starting at that moment refuse): True, False, or None when this
        process cannot tell (local results whose lock names a process of another machine, or
        a lock it may not read).

        Locally the lock file names its holder while the lock is held; a holder killed
        outright leaves its name there, but the kernel has released its `flock`: the lock is
        held while the named process lives (a process since given the same pid reads as
        holding it, the safe side). On S3 it is held while the lock object's heartbeat is
        younger than `stale_after` and its holder is not a dead process of this machine, as
        for a grade wanting to take it.
        """
        try:
            if not self.local:
                return self._s3_lock_state(stale_after)[0]
            with open(self.path(LOCAL_LOCK_NAME), "rb") as handle:
                holder = _json_or_none(handle.read())
        except FileNotFoundError:
            return False
        except OSError:  # (not allowed to look, say)
            return None
        if not holder:  # emptied by a holder that let go (or one writing its name just now)
            return False
        if holder.get("host") != socket.gethostname():
            return None
        return _process_alive(holder.get("pid"))

    def nothing_committed(self, message: str, command: str) -> Exception:
        """What `command` (compact, catalog) raises on results with no commit: ResultsLocked
        while a process holds the lock (the first grade into them, not done with its first
        batch: its results are on their way), else FileNotFoundError(`message`)."""
        if not self.lock_held():
            return FileNotFoundError(message)
        holder = None
        with contextlib.suppress(Exception):  # (its name is for the message only)
            holder = (self._s3_lock_state(S3_LOCK_STALE_SECONDS)[1] if not self.local
                      else _json_or_none(self.fs.cat_file(self.path(LOCAL_LOCK_NAME))))
        return ResultsLocked(self._locked_message(holder, taker={"command": command}))

    def _locked_message(self, holder: dict | None, stale_after: float | None = None,
                        taker: dict | None = None) -> str:
        who = (f"pid {holder.get('pid')} on {holder.get('host')}, running since "
               f"{holder.get('since')}" if holder else "another process")
        command = (holder or {}).get("command") or "rungrade grade"
        # (only a grade has an --out to give; compact and catalog work on these results)
        instead = ("or give --out a different results folder"
                   if (taker or {}).get("command", "rungrade grade") == "rungrade grade"
                   else "then run this command again")
        text = (f"{self.uri} is being written by another `{command}` ({who}). Wait for it "
                f"to finish, {instead}.")
        if stale_after is not None:
            text += (f" If that process is gone, its lock expires {int(stale_after)} s after "
                     f"its last heartbeat ({self.path(S3_LOCK_NAME)}); at once for a grade on "
                     "the machine it ran on.")
        return text

    @contextmanager
    def _local_lock(self, owner: dict) -> Iterator[Callable[..., None]]:
        os.makedirs(self.root, exist_ok=True)
        fd = os.open(self.path(LOCAL_LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
        LOCK_FDS.add(fd)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ResultsLocked(self._locked_message(_read_json_fd(fd), taker=owner)) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(owner).encode(), 0)
            try:
                yield lambda doing=None: None  # (the kernel keeps a flock while its holder lives)
            finally:
                os.ftruncate(fd, 0)
        finally:
            LOCK_FDS.discard(fd)
            os.close(fd)  # closing the descriptor releases the flock

    def _s3_lock_state(self, stale_after: float) -> tuple[bool, dict | None, str]:
        """(whether the S3 lock object is held, its holder, its ETag). It is held while it was
        written less than `stale_after` seconds ago and its holder is not a dead process of
        this machine. Its age is timed by the server's clock (the response's Date), never this
        machine's: a clock ten minutes ahead read every lock as stale and took over the lock
        of a grade still writing."""
        bucket, _, key = self.path(S3_LOCK_NAME).partition("/")
        head = self.fs.call_s3("head_object", Bucket=bucket, Key=key)
        date = head.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
        now = parsedate_to_datetime(date) if date else datetime.now(UTC)
        holder = _json_or_none(self.fs.cat_file(self.path(S3_LOCK_NAME)))
        fresh = (now - head["LastModified"]).total_seconds() < stale_after
        return fresh and not _dead_here(holder), holder, head["ETag"]

    @contextmanager
    def _s3_lock(self, owner: dict, stale_after: float) -> Iterator[Callable[..., None]]:
        bucket, _, key = self.path(S3_LOCK_NAME).partition("/")
        body = json.dumps(owner).encode()
        state = {"etag": None, "lost": False}
        try:
            state["etag"] = self.fs.call_s3("put_object", Bucket=bucket, Key=key, Body=body,
                                            IfNoneMatch="*")["ETag"]
        except Exception as exc:
            if not _precondition_failed(exc):
                raise
            held, holder, etag = self._s3_lock_state(stale_after)
            if held:
                raise ResultsLocked(self._locked_message(holder, stale_after, owner)) from None
            try:  # stale or left over: take it over, unless someone else just did
                state["etag"] = self.fs.call_s3("put_object", Bucket=bucket, Key=key,
                                                Body=body, IfMatch=etag)["ETag"]
            except Exception as exc2:
                if not _precondition_failed(exc2):
                    raise
                raise ResultsLocked(self._locked_message(holder, stale_after, owner)) from None
        stop = threading.Event()

        def heartbeat() -> None:
            while not stop.wait(stale_after / 4):
                try:
                    state["etag"] = self.fs.call_s3("put_object", Bucket=bucket, Key=key,
                                                    Body=body, IfMatch=state["etag"])["ETag"]
                except Exception as exc:
                    if _precondition_failed(exc):
                        state["lost"] = True
                        return

        def check(doing: str | None = None) -> None:
            taker = None
            if doing is not None or state["lost"]:  # ask the server (whose is it now?)
                try:
                    found = self.fs.cat_file(self.path(S3_LOCK_NAME))
                except FileNotFoundError:
                    found = None
                if found == body and not state["lost"]:
                    return
                taker = _json_or_none(found) if found else None
                state["lost"] = True
            if state["lost"]:
                who = (f"pid {taker.get('pid')} on {taker.get('host')}" if taker
                       else "another process")
                raise ResultsLocked(
                    f"the lock on {self.uri} was taken over by {who} after this process "
                    f"missed its heartbeats for {int(stale_after)} s (paused, or cut off from "
                    f"S3); it stopped {doing or 'before its next commit'}. The batches it "
                    "committed stand; grade again once that process is done, and the runs left "
                    "are graded then")

        beat = threading.Thread(target=heartbeat, name="rungrade-lock", daemon=True)
        beat.start()
        try:
            yield check
        finally:
            stop.set()
            beat.join()
            if not state["lost"]:
                try:
                    self.fs.call_s3("delete_object", Bucket=bucket, Key=key,
                                    IfMatch=state["etag"])
                except Exception as exc:
                    if not _precondition_failed(exc):
                        raise

    def _put(self, path: str, data: bytes, fresh: bool = False, durable: bool = False) -> None:
        """Write a file whole. `fresh` paths (staging) are private: no rename dance needed.
        `durable`: its bytes are on disk before its name is (a power cut leaves the file whole
        or absent, never empty)."""
        parent = path.rsplit("/", 1)[0]
        if self.local:
            tmp = path if fresh else f"{path}.tmp-{secrets.token_hex(4)}"
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
            try:  # the folder usually exists (a shard stages hundreds of reports in one)
                fd = os.open(tmp, flags, 0o666)
            except FileNotFoundError:
                os.makedirs(parent, exist_ok=True)
                fd = os.open(tmp, flags, 0o666)
            try:
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
                    if durable:
                        os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError:
                if not fresh:  # (a full disk left it cut short: nobody would remove it)
                    with contextlib.suppress(OSError):
                        os.remove(tmp)
                raise
            if not fresh:
                os.replace(tmp, path)  # rename: readers see the whole file or none of it
        else:
            self.fs.pipe_file(path, data)

    def _move(self, src: str, dst: str) -> None:
        if self.local:
            parent = dst.rsplit("/", 1)[0]
            try:
                os.replace(src, dst)
            except FileNotFoundError:
                os.makedirs(parent, exist_ok=True)
                os.replace(src, dst)
        else:
            self.fs.mv(src, dst)

    def _copy(self, src: str, dst: str) -> None:
        if self.local:  # a hard link; over an old copy, under a temporary name then renamed
            try:
                os.link(src, dst)
                return
            except FileExistsError:
                pass
            except OSError:
                shutil.copyfile(src, dst)
                return
            tmp = f"{dst}.tmp-{secrets.token_hex(4)}"
            os.link(src, tmp)
            os.replace(tmp, dst)
        else:
            self.fs.copy(src, dst)

    # -- reading ---------------------------------------------------------------------------
    def table_files(self, table: str, batches: set[str] | None = None) -> list[str]:
        """Committed part files of a table (all grader ids), as URLs readers can open."""
        batches = self.committed_batches() if batches is None else batches
        return [self.url(p) for p in self._parts(table)
                if p.split("batch=", 1)[-1].split("/", 1)[0] in batches]

    def tables_files(self, batches: set[str]) -> dict[str, list[str]]:
        """`table_files` of every table, for `batches` (see `_per_table`)."""
        return self._per_table(lambda table: self.table_files(table, batches))


class ListingIndex:
    """Saved listings by run uri: `take(uri)` gives the run's `Listing`, or None. Runs of one
    program share a shape (their file and folder names), held once; each run adds its uri and
    its packed sizes and mtimes."""

    def __init__(self, frame: pl.DataFrame | None = None):
        self._shapes: list[tuple[list[str], list[str]]] = []
        self._runs: dict[str, tuple[int, bytes]] = {}
        if frame is None or frame.is_empty():
            return
        shapes = frame.select("shape").unique(maintain_order=True).with_row_index("_sid")
        self._shapes = [unpack_shape(shape) for shape in shapes["shape"]]
        runs = frame.join(shapes, on="shape")  # columns as lists, not rows(): about half as long
        self._runs = dict(zip(runs["run_uri"].to_list(),
                              zip(runs["_sid"].to_list(), runs["stats"].to_list(), strict=True),
                              strict=True))

    def __len__(self) -> int:
        return len(self._runs)

    def take(self, uri: str) -> Listing | None:
        """The run's listing, once: it is dropped from the index (a grade looks each run up
        once, so the index shrinks as discovery goes)."""
        found = self._runs.pop(uri, None)
        if found is None:
            return None
        files, folders = self._shapes[found[0]]
        n, m = len(files), len(folders)
        packed = found[1]
        sizes = array("q", packed[:8 * n]).tolist()
        mtimes = array("d", packed[8 * n:16 * n]).tolist()
        folder_mtimes = array("q", packed[16 * n:16 * n + 8 * m]).tolist()
        return Listing(files, sizes, mtimes, folders, folder_mtimes)


def pack_listing(files: dict[str, FileInfo], folders: dict[str, int]) -> tuple[str, bytes]:
    """(shape, packed stats) of a listed run: file names, then folder names, NUL-separated
    (names never hold NUL); file sizes (int64), file mtimes (float64), folder mtimes (int64)."""
    names, dirs = sorted(files), sorted(folders)
    shape = f"{len(names)}\0" + "\0".join([*names, *dirs])
    stats = (array("q", [files[n].size for n in names]).tobytes()
             + array("d", [files[n].mtime for n in names]).tobytes()
             + array("q", [folders[d] for d in dirs]).tobytes())
    return shape, stats


def unpack_shape(shape: str) -> tuple[list[str], list[str]]:
    count, _, rest = shape.partition("\0")
    names = rest.split("\0")
    return names[:int(count)], names[int(count):]
