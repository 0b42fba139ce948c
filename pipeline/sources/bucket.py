"""Where runs live: a local folder or an `s3://bucket/prefix`, listed as a stream, read with caps.

A run is an OpenProse run folder (named `{YYYYMMDD}-{HHMMSS}-{suffix}`) or a moltzap ledger
folder (any name; it directly holds `records.ndjson` or `completion.json`): the outermost such
folder above a file. `Bucket.discover()` yields runs one at a time, so memory does not grow
with the size of the bucket. Locally it stops descending at each run (the worker that reads a
run lists it with `list_run`, in parallel); on S3 it pages through the flat listing of each
top-level folder, several at once (of ranges of consecutive folders when they are many or
mostly runs), sorted by key, and groups the keys of each run as they pass. The fingerprint of
a run (sizes and mtimes of its files) comes from that listing.
Symlinks are never followed: the local walker records them with their resolved target so the
reader can refuse runs whose links leave the root.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import itertools
import os
import queue
import re
import stat
import sys
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

import fsspec

from ..names import shown

# A run folder's name: the suffix may hold any character a name may (a line break too)
RUN_DIR = re.compile(r"\d{8}-\d{6}-.+\Z", re.DOTALL)
# `manifest.json` alone is too common a name to mark a ledger; these two are ledger-specific.
LEDGER_MARKERS = frozenset({"records.ndjson", "completion.json"})
# Files only a run folder holds directly: an OpenProse run's program and state log (eras A
# and B), a ledger's markers
RUN_FILES = ("program.md", "root.prose.md", "state.md", "vm.log.md", *sorted(LEDGER_MARKERS))
# A folder holding this folder holds rungrade's results (its commit markers, written before
# any report): its `reports/` (named after runs) and its own `_…` folders are never searched
# for runs. Its table folders hold only `grader=…/batch=…/part-k.parquet`, never named like a
# run, so runs kept beside results (`--out` the runs folder itself) are still found.
RESULTS_MARK = "_commits"
# Connections an S3 client keeps open: a prefetch window asks for hundreds of files at once.
POOL_CONNECTIONS = 64
# Top-level folders of an S3 runs root listed at once, and runs found ahead of the consumer.
LISTED_AT_ONCE = 8
RUNS_QUEUED = 256
# Folders listed side by side one listing each, at most; more, or folders mostly named like
# runs, are listed in ranges of consecutive folders (at least FOLDERS_PER_RANGE in each, at
# most RANGES_AT_MOST ranges).
SIDE_BY_SIDE = 64
FOLDERS_PER_RANGE = 64
RANGES_AT_MOST = 8
PAGE_KEYS = 1000  # keys a page of a listing holds at most (S3's own limit)
PAGE_KEYS_LEAST = 100  # keys a range asks for at least


class Listing(NamedTuple):
    """A run's files and folders as listed when it was graded (see `Bucket.unchanged`)."""

    files: list[str]
    sizes: list[int]
    mtimes: list[float]
    folders: list[str]
    folder_mtimes: list[int]


class FileInfo(NamedTuple):
    # A tuple: millions are listed, pickled to workers and back, and tuples are cheapest.
    size: int
    mtime: float
    link_target: str | None = None  # resolved target of a symlink, never followed
    # what a path that is neither a file, a folder nor a symlink is ("a named pipe", ...): it
    # is never opened (a named pipe's `open` waits for a writer), and a run that needs it is
    # refused
    special: str | None = None


_SPECIAL = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
            (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def file_info(st: os.stat_result) -> FileInfo:
    """The FileInfo of a path that `lstat` says is neither a folder nor a symlink: a file, or
    a special file (`special` says which)."""
    if stat.S_ISREG(st.st_mode):
        return FileInfo(st.st_size, st.st_mtime)
    kind = next((name for test, name in _SPECIAL if test(st.st_mode)), "not a regular file")
    return FileInfo(st.st_size, st.st_mtime, special=kind)


def a_folder(ref: RunRef, *names: str) -> str:
    """What a refusal for a missing file adds where a folder of the run has its name:
    ` ({name} is a folder, not a file)`; nothing otherwise."""
    folders = ref.folders or {}
    return "".join(f" ({name} is a folder, not a file)" for name in names if name in folders)


def runs_held(ref: RunRef) -> list[str]:
    """The folders named like runs that the run folder `ref` holds, at any depth: a walk
    looks for no run below a folder named like one (the outermost wins), so a refusal of
    `ref` says what it hides."""
    return sorted({part for rel in ref.files for part in rel.split("/")[:-1]
                   if RUN_DIR.match(part)})


def not_a_file(rel: str, info: FileInfo) -> str:
    """Why the special file `rel` of a run is not read, as a refusal's detail says it."""
    return f"{rel} is {info.special}, not a file: it is never opened"


@dataclass
class RunRef:
    """One run folder found under the root, with every file below it (relative paths).

    `source` says which reader reads it: `prose` (an OpenProse run directory, any era) or
    `ledger` (a moltzap ledger folder). `run_id` and `uri` name the run in the results (a
    name that is not UTF-8 as `shown` writes it); `path` is where it is read.
    """

    run_id: str
    uri: str
    path: str
    files: dict[str, FileInfo] = field(default_factory=dict)
    source: str = "prose"
    listed: bool = True  # False until `Bucket.list_run` has filled `files` (local discovery)
    # Local runs: every folder of the run ("" is the run folder) with its mtime in ns, read
    # just before the folder was listed. An entry added, removed or renamed in a folder
    # changes that folder's mtime, so a rerun can check files by these paths (`unchanged`).
    folders: dict[str, int] | None = None
    # Local runs: the paths of the run ("" is the run folder) that could not be listed, with
    # why (permissions, a disk error, a folder swapped for a symlink while it was listed):
    # the run cannot be read whole, so it is refused rather than graded on part of its files.
    unlisted: dict[str, str] | None = None
    # S3 runs: the key (relative to the run) of each file whose key holds an empty folder name
    # (`RUN//program.md`, `bindings//writer/x.md`), by the path the run knows it by
    keys: dict[str, str] | None = None

    def key(self, rel: str) -> str:
        """The run's file `rel` as the store names it (relative to the run)."""
        return self.keys.get(rel, rel) if self.keys else rel

    @property
    def empty(self) -> bool:
        """Nothing found in the run folder (not a run yet; object stores have no empty
        folders), and nothing that could not be listed."""
        return not self.files and not self.unlisted

    @property
    def fingerprint(self) -> str:
        files = self.files
        text = "".join(
            f"{rel}\0{files[rel].size}\0{files[rel].mtime:.6f}\0"
            f"{files[rel].link_target or files[rel].special or ''}\n"  # (a target is absolute)
            for rel in sorted(files))
        if self.unlisted:  # (only then: the fingerprints of runs listed whole are unchanged)
            text += "".join(f"{rel}/\0unlisted\0{reason}\n" for rel, reason in sorted(
                self.unlisted.items()))
        # (the bytes of a name that is not UTF-8 as they are: the same digest for any other)
        return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def split_uri(uri: str) -> tuple[str, str]:
    """Return (protocol, path) for a local path or a URL such as s3://bucket/prefix."""
    if "://" in uri:
        protocol, path = uri.split("://", 1)
        return protocol, path.rstrip("/")
    return "file", os.path.abspath(uri)


def filesystem(uri: str, endpoint_url: str | None = None) -> fsspec.AbstractFileSystem:
    """The file system of `uri`: local, or S3. Refuses any other (FileNotFoundError: every
    command reports it as a path to check, exit code 2), and an S3 URL without a bucket."""
    protocol, path = split_uri(uri)
    if protocol not in ("file", "s3"):
        raise FileNotFoundError(f"{uri}: rungrade reads and writes local folders and "
                                f"s3://BUCKET/PREFIX only, not {protocol}://")
    if protocol == "s3" and not path.partition("/")[0]:
        raise FileNotFoundError(f"{uri} names no bucket: give s3://BUCKET or "
                                "s3://BUCKET/PREFIX")
    if protocol == "s3":
        # max_concurrency 1: s3fs otherwise asks for an object's size (a HEAD request, one
        # round trip more) before each whole-object read, to split large objects into
        # concurrent range reads; what rungrade reads whole is small (commit markers, grade
        # records, `runs` parts, caches), and run files are read with ranges
        options: dict = {"use_listings_cache": False, "max_concurrency": 1,
                         "config_kwargs": {"max_pool_connections": POOL_CONNECTIONS}}
        endpoint = endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get(
            "AWS_ENDPOINT_URL"
        )
        if endpoint:
            options["endpoint_url"] = endpoint
        return fsspec.filesystem("s3", session=_s3_session(), **options)
    return fsspec.filesystem(protocol)


@functools.cache
def _s3_session():
    """The aiobotocore session of this process's S3 filesystems, reading answers fast.

    A listing page of 1,000 keys is read in the grading process, under the GIL, so what it
    costs bounds how fast one process lists, however many listings run side by side. botocore
    reads every timestamp with dateutil (half of a page's 66-70 ms before; `_timestamp` reads
    S3's ISO times with the standard library) and every element through generic lookups
    (`s3_xml`): 17 ms of a page's reading, then 10.
    """
    import aiobotocore.session

    session = aiobotocore.session.AioSession()
    try:  # (names botocore keeps to itself: without them, botocore's reader reads)
        from .s3_xml import QuickParserFactory, share_body_reading
    except ImportError:
        factory = session.get_component("response_parser_factory")
    else:
        share_body_reading(session)
        factory = QuickParserFactory()
        session.register_component("response_parser_factory", factory)
    factory.set_parser_defaults(timestamp_parser=_timestamp)
    return session


def _timestamp(value):
    """A timestamp of an S3 response as botocore reads it: listings give ISO 8601 times
    (`2026-11-12T03:15:02.000Z`), which `datetime.fromisoformat` reads; anything else (the
    RFC 1123 dates of headers, epoch seconds) is read by botocore's own parser."""
    if isinstance(value, str):
        try:  # (not contextlib.suppress: read 1,000 times a page, it cost 2.5 times as much)
            parsed = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if parsed.tzinfo is not None:
                return parsed
    from botocore.utils import parse_timestamp
    return parse_timestamp(value)


class Bucket:
    """A runs root. `walk()` lists every file once; `read()` returns at most `cap` bytes."""

    def __init__(self, uri: str, endpoint_url: str | None = None):
        self.uri = uri
        self.protocol, self.root = split_uri(uri)
        self.fs = filesystem(uri, endpoint_url)
        self.local = self.protocol == "file"
        self._fetched: dict[str, tuple[int, bytes]] = {}  # path -> (cap, data), see prefetch
        # (path + "/", its descriptor, or the error opening it met), see run_folder
        self._folder: tuple[str, int | OSError] | None = None
        self._root_fd: int | None = None  # the root, opened on first use (`open_run_folder`)
        # (path, why) of each folder under the root that `discover` could not list (the
        # runs in it are not found), but for folders gone or no longer folders (`_VANISHED`)
        self.unlisted: list[tuple[str, str]] = []

    def to_uri(self, path: str) -> str:
        return path if self.local else f"{self.protocol}://{path}"

    def exists(self) -> bool:
        """Whether the root is there (a local one a folder). A local root this user may not
        look at raises PermissionError (exit 4, saying so), not "does not exist"."""
        if not self.local:
            return self.fs.exists(self.root)
        try:
            return stat.S_ISDIR(os.stat(self.root).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def walk(self) -> list[tuple[str, FileInfo]]:
        """Every file (and symlink) under the root as (absolute path, info)."""
        if self.local:
            return list(_walk_local(self.root))
        found = self.fs.find(self.root, detail=True)
        out = []
        for path, info in found.items():
            if info.get("type") == "directory" or path.endswith("/"):  # (a folder marker)
                continue
            mtime = info.get("LastModified") or info.get("mtime") or 0
            mtime = mtime.timestamp() if hasattr(mtime, "timestamp") else float(mtime or 0)
            out.append((path, FileInfo(int(info.get("size") or 0), mtime)))
        return out

    def read(self, path: str, cap: int) -> tuple[bytes, bool]:
        """Read at most `cap` bytes; return (data, truncated)."""
        if self.local:
            folder = self._folder
            if folder is not None and path.startswith(folder[0]):
                if isinstance(folder[1], OSError):
                    raise OSError(folder[1].errno, folder[1].strerror, path)
                return _read_local(path[len(folder[0]):], cap, folder[1])
            return _read_local(path, cap)
        data = self._take(path, cap)
        if data is None:
            data = self.fs.cat_file(path, start=0, end=cap + 1)
        return data[:cap], len(data) > cap

    def read_many(self, paths: list[str], cap: int) -> dict[str, tuple[bytes, bool]]:
        """Read several files; remote stores fetch them concurrently in one call."""
        if self.local or not paths:
            return {p: self.read(p, cap) for p in paths}
        blobs = {p: data for p in paths if (data := self._take(p, cap)) is not None}
        missing = [p for p in paths if p not in blobs]
        if missing:  # (by their very names: `fs.cat` reads `*`, `?` and `[` as patterns)
            blobs.update(zip(missing, self.fs.cat_ranges(missing, 0, cap + 1, on_error="raise"),
                             strict=True))
        return {p: (blobs[p][:cap], len(blobs[p]) > cap) for p in paths}

    def prefetch(self, wanted: Iterable[tuple[str, int]]) -> None:
        """Fetch files of a remote store concurrently, ahead of reading them: a later `read` of
        one of these paths, with the same cap or a smaller one, takes its bytes from memory
        (once). Whatever an earlier call fetched and nobody read is forgotten. A file that
        fails here is left to `read`, which fetches it again and raises what it meets. Does
        nothing for a local root, whose reads cost no round trip.

        One run's files read one by one cost a round trip each; fetched together for a window
        of runs they cost one round trip in all, on as many connections as the client keeps.
        """
        self._fetched = {}
        if self.local:
            return
        wanted = list(wanted)
        if not wanted:
            return
        paths = [p for p, _ in wanted]
        try:
            blobs = self.fs.cat_ranges(paths, [0] * len(paths),
                                       [cap + 1 for _, cap in wanted], on_error="return")
        except Exception:  # only ahead of time: each read fetches its file and reports
            return
        self._fetched = {path: (cap, blob) for (path, cap), blob in zip(wanted, blobs, strict=True)
                         if isinstance(blob, bytes)}

    def _take(self, path: str, cap: int) -> bytes | None:
        fetched = self._fetched.pop(path, None)
        return fetched[1] if fetched is not None and cap <= fetched[0] else None

    @contextlib.contextmanager
    def run_folder(self, path: str) -> Iterator[None]:
        """While inside, local reads of files below the folder `path` look each file up from
        the folder, opened once, and never through a symlink: if the folder cannot be opened
        as a folder (gone, or replaced by a symlink since it was listed), each read below it
        fails with that error rather than follow the path, and a folder inside it swapped for
        a symlink fails the reads through it (`_openat2`). A listing checks every link of a
        run, but a run can change between its listing and its reading."""
        if not self.local or self._folder is not None:
            yield
            return
        try:
            self._folder = (path + "/", self.open_run_folder(path))
        except OSError as exc:
            self._folder = (path + "/", exc)
        try:
            yield
        finally:
            opened, self._folder = self._folder[1], None
            if isinstance(opened, int):
                os.close(opened)

    def open_run_folder(self, path: str) -> int:
        """A descriptor of the local folder `path` (a run folder below the root), opened with
        no symlink between the root and it (`_openat2`), nor the folder itself a symlink: a
        folder above the run swapped for a link after the run was found is not followed.
        Raises OSError when it cannot be opened so."""
        root = self.root.rstrip("/") + "/"
        if not path.startswith(root):
            return os.open(path, _FOLDER_FLAGS)
        if self._root_fd is None:  # the root itself may be a symlink: it is the user's
            self._root_fd = os.open(self.root, _ROOT_FLAGS)
            weakref.finalize(self, os.close, self._root_fd)
        return _open_beneath(self._root_fd, path[len(root):], folder=True)

    def holds_results(self) -> bool:
        """Whether the root holds rungrade's results (`_commits/`, see RESULTS_MARK)."""
        return self.fs.isdir(f"{self.root.rstrip('/')}/{RESULTS_MARK}")

    def looks_like_a_run(self) -> bool:
        """Whether the root is itself a run folder: it directly holds a program's entry copy,
        a state log or a ledger marker (`RUN_FILES`), whatever its name (a dated folder named
        like a run may hold runs, or nothing yet). Runs are found in the folders below the
        root, so such a root holds none. Asks S3 once for each name."""
        root = self.root.rstrip("/")
        return any(self.fs.isfile(f"{root}/{name}") for name in RUN_FILES)

    def not_listed(self, path: str, exc: OSError) -> None:
        """Note a folder `discover` could not list (see `unlisted`)."""
        if exc.errno not in _VANISHED:
            self.unlisted.append((shown(path), why(exc)))

    def inside(self, target: str) -> bool:
        root = os.path.realpath(self.root)
        return os.path.commonpath([root, os.path.realpath(target)]) == root


    def discover(self) -> Iterator[RunRef]:
        """Yield every run folder under the root, one at a time.

        Local runs come sorted by path and unlisted (`listed=False`): `list_run` fills their
        files where they are read. S3 runs come with their files from the listing of the
        prefix; each top-level folder is listed on its own, several at once, so runs of one
        top-level folder come in path order but those of different folders interleave.
        """
        if self.local:
            yield from self._discover_local()
        else:
            yield from self._discover_s3()

    def sample(self, per_folder: int = 3) -> Iterator[RunRef]:
        """A few runs of each folder that holds runs, spread over it (its first, last and
        evenly between, by name: runs of one program, over time), folders in path order.
        Local roots only (an S3 root yields none): finding them costs one `scandir` per
        folder above the runs, and none inside a run.
        """
        if self.local:
            yield from self._discover_local(per_folder)

    def _discover_local(self, per_folder: int | None = None) -> Iterator[RunRef]:
        try:  # a descriptor of its own: a walk moves its folder's read position
            fd = os.open(self.root, _ROOT_FLAGS)
        except OSError as exc:
            self.not_listed(self.root, exc)
            return
        try:
            yield from _runs_below(self, self.root, fd, top=True, per_folder=per_folder)
        finally:
            os.close(fd)

    def _discover_s3(self) -> Iterator[RunRef]:
        # No run spans two top-level folders, and whether a folder is a ledger is told by
        # keys inside it: each top-level folder is grouped on its own, from its own listing.
        # A root holding a single folder (`runs/`, then the programs) is looked into, down
        # to where the folders to list side by side are, while that folder is neither a run
        # nor a ledger. Many folders, or folders mostly named like runs (a root at a
        # program's `.prose/runs/`), are listed in ranges of consecutive folders instead:
        # one listing each would cost a request per run (`_folder_ranges`).
        current, above, files, folders = self._s3_level()
        names = [f.rstrip("/").rsplit("/", 1)[-1] for f in folders]
        skip: tuple[str, ...] = ()  # the results' own folders, when results are kept here
        if RESULTS_MARK in names:  # (a range of folders may still list them: passed over)
            here = current[len(self._s3_prefix()):]
            skip = (here + "reports/", here + "_")
            folders = [f for f, name in zip(folders, names, strict=True)
                       if not _of_results(name)]
        yield from iter_runs(self, files)  # files named like runs, outside any folder listed
        if len(folders) > SIDE_BY_SIDE or 2 * sum(map(_run_named, folders)) > len(folders):
            sources = self._folder_ranges(current, folders, above, skip)
        else:
            sources = [self._or_noted(self._runs_of(self._iter_s3_files(folder), above, skip),
                                      folder) for folder in folders]
        del files, folders  # not needed from here on (a level of a million runs: ~50 MB)
        with contextlib.closing(Ahead(sources, RUNS_QUEUED, LISTED_AT_ONCE)) as runs:
            yield from runs

    def _s3_level(self) -> tuple[str, list[str], list[tuple[str, FileInfo]], list[str]]:
        """The level whose folders are listed: the root or, while the level holds a single
        folder that is neither a run nor a ledger, the level inside it. Returns its prefix, the
        folders looked into (relative to the root: known to be neither), the files outside its
        folders (those of the folders looked into and its own, sorted) and its folders."""
        root = current = self._s3_prefix()
        files, folders = self._s3_top(root)
        above: list[str] = []
        while len(folders) == 1 and not _run_named(folders[0]):
            inner_files, inner = self._s3_top(folders[0])
            if _holds_marker(path.rsplit("/", 1)[-1] for path, _ in inner_files):
                break
            above.append(folders[0][len(root):].rstrip("/"))
            current, files, folders = folders[0], sorted(files + inner_files), inner
        return current, above, files, folders

    def _folder_ranges(self, prefix: str, folders: list[str], above: list[str],
                       skip: tuple[str, ...] = ()) -> list[Iterator[RunRef]]:
        """The runs of `folders` (all the folders directly under `prefix`, sorted), listed as
        ranges of consecutive folders: at least FOLDERS_PER_RANGE in each, RANGES_AT_MOST
        ranges. Each asks for about as many keys as its folders hold (`_PageSizer`), so little
        of a page goes to the next range."""
        size = max(FOLDERS_PER_RANGE, -(-len(folders) // RANGES_AT_MOST))
        starts = folders[::size]
        sizer = _PageSizer()
        return [self._or_noted(self._runs_of(self._iter_s3_range(prefix, start, end, count,
                                                                 sizer), above, skip),
                               start, count - 1)
                for start, end, count in zip(starts, [*starts[1:], None],
                                             [len(folders[i:i + size])
                                              for i in range(0, len(folders), size)],
                                             strict=True)]

    def _or_noted(self, runs: Iterator[RunRef], folder: str, after: int = 0
                  ) -> Iterator[RunRef]:
        """`runs` (those of one folder, or of a range of `after` more folders listed with it)
        until S3 refuses to list them (AccessDenied: a bucket policy denying the prefix): the
        folder is then noted in `unlisted`, as a local folder that cannot be listed is, and
        the other folders are listed on. The runs yielded before are whole (a run is yielded
        once the listing has moved past it); the run being grouped is dropped with the rest.
        Other failures (credentials, the endpoint) are every folder's: they end the grade."""
        try:
            yield from runs
        except PermissionError as exc:
            detail = f"; so were the {after} folders listed with it" if after else ""
            bucket = self.root.partition("/")[0]  # (`folder` is a key prefix)
            self.unlisted.append((self.to_uri(f"{bucket}/{folder}"), why(exc) + detail))

    def _runs_of(self, keys: Iterable[tuple[str, FileInfo]], above: list[str],
                 skip: tuple[str, ...] = ()) -> Iterator[RunRef]:
        """The runs of `keys` (one listing, sorted): a key is grouped once the folders above
        it are known to be ledgers or not (their markers may sort after it: see `_Ledgers`);
        `above` are known not to be. Keys under the prefixes `skip` are passed over."""
        ledgers = _Ledgers(self, not_ledgers=above)
        yield from iter_runs(self, ledgers.decided(keys), ledgers.found, skip)

    def _iter_s3_range(self, prefix: str, start: str, end: str | None, count: int,
                       sizer: _PageSizer) -> Iterator[tuple[str, FileInfo]]:
        """The keys in the `count` folders under `prefix` from the folder `start` on and before
        the folder `end`, in byte order; each request asks for what `sizer` says."""
        skip, inside = len(self.root.partition("/")[0]) + 1, len(prefix)
        left, keys, folder = count, 0, None  # folders not entered yet, keys listed, current
        pages = self._s3_listing(lambda: sizer.page(left), Prefix=prefix, StartAfter=start[:-1])
        try:
            for page in pages:
                for path, info in self._s3_files(page):
                    key = path[skip:]
                    if key < start:  # sorts between `start[:-1]` and `start`
                        continue
                    if end is not None and key >= end:
                        return
                    name, slash, _ = key[inside:].partition("/")
                    if not slash:
                        continue  # a file directly under `prefix`: not in a folder
                    if name != folder:
                        folder, left = name, left - 1
                    keys += 1
                    yield path, info
        finally:
            pages.close()
            sizer.learn(keys, count - left)

    def list_run(self, ref: RunRef) -> RunRef:
        """Fill `ref.files` from the run folder (local), never following a symlink."""
        if ref.listed:
            return ref
        unlisted: dict[str, str] = {}
        try:
            st = os.lstat(ref.path)
        except OSError as exc:
            st = None
            if exc.errno not in _VANISHED:
                unlisted[""] = why(exc)
        if st is None:
            files = {}
        elif stat.S_ISLNK(st.st_mode):
            files = {".": FileInfo(0, 0.0, link_target=os.path.realpath(ref.path))}
        elif not stat.S_ISDIR(st.st_mode):
            files = {".": FileInfo(st.st_size, st.st_mtime)}
        else:
            try:
                top = self.open_run_folder(ref.path)
            except OSError as exc:  # gone, or no longer below the root without a symlink
                files, ref.folders = {}, {"": st.st_mtime_ns}
                if exc.errno not in _VANISHED:  # (a discovery begun now would not find it)
                    unlisted[""] = why(exc)
            else:
                files, ref.folders, unlisted = _list_local(ref.path, st.st_mtime_ns, top)
            if _holds_marker(files):  # a ledger wins over the name
                ref.source = "ledger"
        ref.files, ref.unlisted, ref.listed = files, unlisted or None, True
        return ref

    def unchanged(self, ref: RunRef, listing: Listing) -> bool:
        """True when the run's files are still those of `listing` (a listing taken when the
        run was last graded), checked with one `stat` per file and no folder listing: no
        folder's mtime moved (nothing added, removed or renamed in it) and every file has its
        size and mtime. False when anything differs or cannot be read: the run must then be
        listed.

        Each folder is opened from its parent's descriptor, one name at a time, never through
        a symlink (`_PEEK_FLAGS`: a descriptor only good for looking, the cheapest to open),
        and its files are looked up from it: a folder swapped for a symlink at any moment of
        the check fails to open, or was opened before the swap, so no path is ever followed
        out of the run. The kernel then resolves one name a file; the whole check costs about
        20% more than looking every path up from the run folder did, which followed a folder
        swapped for a symlink between its check and the files below it.
        """
        if not self.local:
            return False
        try:
            fd = self.open_run_folder(ref.path)
        except OSError:
            return False
        folders = {"": fd}
        try:
            for rel, mtime in zip(listing.folders, listing.folder_mtimes, strict=True):
                if rel:
                    parent, _, name = rel.rpartition("/")
                    if name in ("", ".", "..") or rel in folders:  # (not a listing of ours)
                        return False
                    folders[rel] = os.open(name, _PEEK_FLAGS, dir_fd=folders[parent])
                if os.fstat(folders[rel]).st_mtime_ns != mtime:
                    return False
            for rel, size, mtime in zip(listing.files, listing.sizes, listing.mtimes,
                                        strict=True):
                folder, _, name = rel.rpartition("/")
                st = os.stat(name, dir_fd=folders[folder], follow_symlinks=False)
                if st.st_size != size or st.st_mtime != mtime or not stat.S_ISREG(st.st_mode):
                    return False
        except (OSError, ValueError, KeyError):  # (KeyError: a folder not in the listing)
            return False
        finally:
            for opened in folders.values():
                os.close(opened)
        return True

    def _s3_listing(self, page_keys: Callable[[], int] | None = None, **kwargs
                    ) -> Iterator[dict]:
        """Each page of a listing of the root's bucket: 1,000 entries a page, or as many as
        `page_keys()` says before each request."""
        kwargs["Bucket"] = self.root.partition("/")[0]
        while True:
            if page_keys is not None:
                kwargs["MaxKeys"] = page_keys()
            page = self.fs.call_s3("list_objects_v2", **kwargs)
            yield page
            if not page.get("IsTruncated"):
                return
            kwargs.pop("StartAfter", None)  # the token says where the next page starts
            kwargs["ContinuationToken"] = page["NextContinuationToken"]

    def _s3_prefix(self) -> str:
        key = self.root.partition("/")[2]
        return f"{key.rstrip('/')}/" if key else ""

    def _s3_top(self, prefix: str) -> tuple[list[tuple[str, FileInfo]], list[str]]:
        """(files directly under `prefix`, its folders' prefixes), both sorted."""
        files, folders = [], []
        for page in self._s3_listing(Prefix=prefix, Delimiter="/"):
            files += self._s3_files(page)
            folders += [item["Prefix"] for item in page.get("CommonPrefixes", [])]
        return files, folders

    def _iter_s3_files(self, prefix: str | None = None) -> Iterator[tuple[str, FileInfo]]:
        """Every key under `prefix` (default: the root), in byte order, as S3 lists them."""
        for page in self._s3_listing(Prefix=self._s3_prefix() if prefix is None else prefix):
            yield from self._s3_files(page)

    def _s3_files(self, page: dict) -> list[tuple[str, FileInfo]]:
        bucket, out = self.root.partition("/")[0], []
        for item in page.get("Contents", []):
            if item["Key"].endswith("/"):  # a folder marker (the S3 console, sync tools and
                continue                   # Hadoop write them), never a file of a run
            mtime = item.get("LastModified")
            mtime = mtime.timestamp() if hasattr(mtime, "timestamp") else 0.0
            out.append((f"{bucket}/{item['Key']}", FileInfo(int(item.get("Size") or 0), mtime)))
        return out


class _PageSizer:
    """How many keys the next page of a range of folders asks for: the keys its folders not
    listed yet hold, by the keys per folder of the ranges listed so far (a first guess before
    any), with a quarter more. S3 returns as many keys as asked for whatever the range: a page
    that runs past a range's end is keys listed, sent and parsed for nothing."""

    FIRST_GUESS = 32  # keys per folder before any range has been listed (a run holds ~20)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys = self._folders = 0

    def page(self, folders_left: int) -> int:
        with self._lock:
            per = self._keys / self._folders if self._folders else self.FIRST_GUESS
        wanted = int(per * (folders_left + 1) * 1.25) + 10  # (+1: the folder being listed)
        return min(PAGE_KEYS, max(PAGE_KEYS_LEAST, wanted))

    def learn(self, keys: int, folders: int) -> None:
        with self._lock:
            self._keys += keys
            self._folders += folders


class Ahead:
    """The items of several iterables, drawn by threads of their own from the moment it is made
    (at most `threads` iterables at once), at most `size` items waiting for the reader. One
    iterable's items keep their order; different iterables' interleave. An error raised by one
    is raised to the reader; `close()`, or leaving the iteration, stops the threads (each one
    after the item in hand) and closes the iterables they were drawing from."""

    _DONE = object()

    def __init__(self, sources: list[Iterable], size: int, threads: int):
        self._items: queue.Queue = queue.Queue(maxsize=size)
        self._stop = threading.Event()
        self._pending = len(sources)
        self._sources = iter(sources)
        self._lock = threading.Lock()
        # daemon threads: one blocked in a request to a store that stopped answering never
        # holds up the process's exit
        for k in range(min(threads, len(sources))):
            threading.Thread(target=self._work, name=f"rungrade-ahead-{k}", daemon=True).start()

    def _work(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                source = next(self._sources, None)
            if source is None:
                return
            self._draw(source)

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            with contextlib.suppress(queue.Full):
                self._items.put(item, timeout=0.1)
                return True
        return False

    def _draw(self, source: Iterable) -> None:
        items = iter(source)
        try:
            for item in items:
                if not self._put(item):
                    return
            self._put(self._DONE)
        except BaseException as exc:  # handed to the reader, which raises it
            self._put(exc)
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    def __iter__(self) -> Iterator:
        try:
            while self._pending:
                item = self._items.get()
                if item is self._DONE:
                    self._pending -= 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
        finally:
            self.close()

    def close(self) -> None:
        self._stop.set()


class _Ledgers:
    """Which folders of an S3 runs root are ledger folders, decided while the one listing that
    groups keys into runs goes by (`decided`).

    A folder `F` is a ledger when the key `F/completion.json` or `F/records.ndjson` exists.
    Grouping a key needs that answer for each folder above it down to the first one named like
    a run (a folder named like a run is a run whatever it holds; whether it is a ledger run is
    read from its own files when it closes, see `iter_runs`). Both markers sort at or before
    `F/records.ndjson`, so once the listing has passed that key the answer is known. Keys wait
    for it in order, in a queue: a ledger's own files and small folders are decided by the
    listing itself. A folder holding more than `HELD_KEYS` keys before its markers' place (a
    program's runs, sorted under `.prose/` before `records.ndjson`) is asked about directly:
    one HEAD per marker, once per folder. Memory stays bounded by the queue.
    """

    HELD_KEYS = 4000  # keys held back at most while the listing decides their folders
    LAST_MARKER = "/" + max(LEDGER_MARKERS)

    def __init__(self, bucket: Bucket, not_ledgers: Iterable[str] = ()):
        self.fs = bucket.fs
        self.root = bucket.root.rstrip("/")
        self.found: set[str] = set()  # ledger folders, relative to the root (iter_runs' set)
        # folders asked about directly, ledger or not; `not_ledgers` are known to be none
        self.asked: dict[str, bool] = dict.fromkeys(not_ledgers, False)
        self.probes = 0  # HEAD requests made
        self._listed = ""  # the listing has passed every key up to this one
        self._done = False

    def decided(self, files: Iterable[tuple[str, FileInfo]]) -> Iterator[tuple[str, FileInfo]]:
        """`files` (the listing, sorted) in the same order, each key once the ledger status of
        the folders it needs is in `found`."""
        held: deque[tuple[str, FileInfo]] = deque()
        ready_folder = None  # keys of one folder come together, and a decision never changes
        for path, info in files:
            folder, _, name = path.rpartition("/")
            if name in LEDGER_MARKERS and len(folder) > len(self.root):
                self.found.add(folder[len(self.root) + 1:])
            self._listed = path
            held.append((path, info))
            while held:
                head = held[0][0].rpartition("/")[0]
                if head != ready_folder:
                    if not self._ready(head, ask=len(held) > self.HELD_KEYS):
                        break
                    ready_folder = head
                yield held.popleft()
        self._done = True
        yield from held

    def _ready(self, folder: str, ask: bool) -> bool:
        """True when the status of every folder `folder`'s keys need is known; with `ask`,
        the store is asked about the ones the listing has not decided."""
        rel = folder[len(self.root) + 1:] if len(folder) > len(self.root) else ""
        parts = rel.split("/") if rel else []
        for i, part in enumerate(parts):
            if RUN_DIR.match(part):
                return True  # the outermost run is here, or above if a folder above is a ledger
            above = "/".join(parts[:i + 1])
            if above in self.found:
                return True
            if above in self.asked or self._done or \
                    self._listed >= f"{self.root}/{above}{self.LAST_MARKER}":
                continue
            if not ask:
                return False
            self.asked[above] = self._has_marker(f"{self.root}/{above}")
            if self.asked[above]:
                self.found.add(above)
                return True
        return True

    def _has_marker(self, folder: str) -> bool:
        bucket, _, prefix = folder.partition("/")
        for name in sorted(LEDGER_MARKERS):
            self.probes += 1
            try:
                self.fs.call_s3("head_object", Bucket=bucket, Key=f"{prefix}/{name}")
            except FileNotFoundError:
                continue
            return True
        return False


# A folder gone, or no longer a folder (now a file, or a symlink, or below one), since the
# folder above it was listed: a walk begun now would not list it either.
_VANISHED = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP})


def why(exc: OSError) -> str:
    """An OSError as a refusal or a summary tells it (without the path, given beside)."""
    return f"[Errno {exc.errno}] {exc.strerror}" if exc.errno is not None else str(exc)


# A file is opened without following a final symlink: one put in place after the run was
# listed (whose links were checked then) fails to open instead of being read. Nor does it
# wait: a named pipe put in place of a file after the run was listed opens at once (without
# O_NONBLOCK, `open` waits for a writer, for ever) and reads as empty; a file's reads are the
# same either way.
_NO_WAIT = getattr(os, "O_NONBLOCK", 0)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0) | _NO_WAIT


# A run folder is opened as a folder, never through a symlink; the runs root may be one (it
# is the user's).
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
# a folder opened only to look at it and at its entries' metadata (Linux's O_PATH: no read
# access is checked or set up; elsewhere, opened for reading)
_PEEK_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SYS_OPENAT2 = 437  # the same number on every Linux architecture (added after they were unified)
_RESOLVE_NO_SYMLINKS, _RESOLVE_BENEATH = 0x04, 0x08


@functools.cache
def _openat2() -> Callable[..., int] | None:
    """Linux's openat2(2) as a function of (folder descriptor, relative path, folder=False)
    that opens the file (or folder) for reading with no symlink in any part of the path
    (RESOLVE_NO_SYMLINKS: a folder of the run swapped for a link after the run was listed
    fails with ELOOP) and never above the folder (RESOLVE_BENEATH); None where there is none
    (not Linux, a kernel before 5.6, a sandbox that forbids it): `_open_beneath` then opens a
    path one name at a time, as safely, with a call for each name."""
    if not sys.platform.startswith("linux"):  # (elsewhere the number means something else)
        return None
    import ctypes  # only a grade that reads local runs needs it

    class OpenHow(ctypes.Structure):
        _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                    ("resolve", ctypes.c_uint64)]

    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    # typed once: ctypes converting each argument by itself cost what the shorter lookup saves
    syscall.restype = ctypes.c_long
    syscall.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
                        ctypes.c_size_t]
    resolve = _RESOLVE_NO_SYMLINKS | _RESOLVE_BENEATH
    hows = (OpenHow(os.O_RDONLY | os.O_CLOEXEC | _NO_WAIT, 0, resolve),  # a file
            OpenHow(os.O_RDONLY | os.O_CLOEXEC | os.O_DIRECTORY, 0, resolve))  # a folder
    at, size, encode = [ctypes.addressof(h) for h in hows], ctypes.sizeof(OpenHow), os.fsencode

    def openat2(dir_fd: int, path: str, folder: bool = False) -> int:
        fd = syscall(_SYS_OPENAT2, dir_fd, encode(path), at[folder], size)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), path)
        return fd

    openat2.hows = hows  # the structures live as long as the function (`at` holds addresses)
    try:
        os.close(openat2(-100, "."))  # AT_FDCWD: does this system have it?
    except OSError:
        return None
    return openat2


def _open_beneath(dir_fd: int, path: str, folder: bool = False) -> int:
    """Open `path`, relative to the folder `dir_fd`, for reading, with no symlink in any part
    of the path and nothing above the folder: in one call with `_openat2` where the system has
    it, else one name at a time, each folder opened from the one before with `O_NOFOLLOW`
    (one call a name). Raises OSError (ELOOP or ENOTDIR for a symlink, EXDEV for `..`)."""
    beneath = _openat2()
    if beneath is not None:
        return beneath(dir_fd, path, folder)
    *folders, last = path.split("/")
    if ".." in folders or last == "..":
        raise OSError(errno.EXDEV, "a path may not climb out of its folder", path)
    at = dir_fd
    try:
        for name in folders:
            if name not in ("", "."):
                inner = os.open(name, _FOLDER_FLAGS, dir_fd=at)
                if at != dir_fd:
                    os.close(at)
                at = inner
        return os.open(last or ".", _FOLDER_FLAGS if folder else _OPEN_FLAGS, dir_fd=at)
    finally:
        if at != dir_fd:
            os.close(at)


def _read_local(path: str, cap: int, dir_fd: int | None = None) -> tuple[bytes, bool]:
    # Read in modest chunks: asking for `cap` bytes at once allocates `cap` bytes per file.
    # Plain descriptors: a file object costs more than the read of a small file.
    # (`path` relative to the folder `dir_fd`, if given: see `_open_beneath`)
    fd = os.open(path, _OPEN_FLAGS) if dir_fd is None else _open_beneath(dir_fd, path)
    try:
        chunk = min(cap + 1, 1 << 16)
        data = os.read(fd, chunk)
        if len(data) == chunk and chunk <= cap:
            parts = [data]
            total = len(data)
            while total <= cap:
                more = os.read(fd, min(cap + 1 - total, 1 << 20))
                if not more:
                    break
                parts.append(more)
                total += len(more)
            data = b"".join(parts)
    finally:
        os.close(fd)
    return data[:cap], len(data) > cap


def _walk_local(root: str):
    stack = [root]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    yield entry.path, FileInfo(0, 0.0, link_target=target)
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    yield entry.path, file_info(entry.stat(follow_symlinks=False))
            except OSError:
                continue


def _list_local(folder: str, mtime_ns: int, top: int
                ) -> tuple[dict[str, FileInfo], dict[str, int], dict[str, str]]:
    # The walk of `_walk_local`, specialised for one run folder (`top`, its descriptor, which
    # this closes): relative paths, no generator. Returns (files, folders, unlisted): each
    # folder's mtime is read before the folder is listed. Each folder is opened from the run
    # folder as files are read (`_open_beneath`: never through a symlink, so a folder swapped
    # for one after its parent was listed is not listed), and its entries are looked up from
    # it. A path that cannot be listed (such a folder among them) for another reason than
    # being gone is in `unlisted`, with why.
    files: dict[str, FileInfo] = {}
    folders: dict[str, int] = {"": mtime_ns}
    unlisted: dict[str, str] = {}

    def note(rel: str, exc: OSError) -> None:
        if exc.errno != errno.ENOENT:  # (gone since its folder was listed: not an error)
            unlisted[rel] = why(exc)

    stack = [""]
    try:
        while stack:
            prefix = stack.pop()
            try:
                fd = _open_beneath(top, prefix[:-1], folder=True) if prefix else top
            except OSError as exc:
                note(prefix[:-1], exc)
                continue
            try:
                with os.scandir(fd) as it:
                    for entry in it:
                        rel = prefix + entry.name
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                folders[rel] = entry.stat(follow_symlinks=False).st_mtime_ns
                                stack.append(rel + "/")
                            elif entry.is_symlink():
                                files[rel] = FileInfo(0, 0.0, link_target=os.path.realpath(
                                    os.path.join(folder, rel)))
                            else:
                                files[rel] = file_info(entry.stat(follow_symlinks=False))
                        except OSError as exc:
                            note(rel, exc)
            except OSError as exc:
                note(prefix[:-1], exc)
            finally:
                if fd != top:
                    os.close(fd)
    finally:
        os.close(top)
    return files, folders, unlisted


# Why a symlink above the runs to a folder outside the root is among the folders not listed
OUTSIDE_LINK = ("a symlink to a folder outside the runs root, never followed: no run behind it "
                "is found; grade its target as a runs root of its own, or move it inside")


def _runs_below(bucket: Bucket, folder: str, fd: int, top: bool = False,
               per_folder: int | None = None) -> Iterator[RunRef]:
    # Descend until a folder (or symlink, or file) is named like a run, or a folder holds a
    # ledger marker; never below one. With `per_folder`, only that many of a folder's runs,
    # spread over them (see `Bucket.sample`). `folder` is listed by its descriptor `fd` (the
    # caller's to close), and each folder below it is opened from it, never through a
    # symlink: a folder swapped for one while the walk is above it is not walked through.
    try:
        with os.scandir(fd) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        bucket.not_listed(folder, exc)
        return
    if any(e.name == RESULTS_MARK and _is_dir(e) for e in entries):  # results kept here
        entries = [e for e in entries if not _of_results(e.name)]
    if not top and any(e.name in LEDGER_MARKERS and not _is_dir(e) for e in entries):
        name = os.path.basename(folder)
        yield RunRef(shown(name), shown(bucket.to_uri(folder)), folder, source="ledger",
                     listed=False)
        return
    kept = None if per_folder is None else _spread(
        [e.name for e in entries if RUN_DIR.match(e.name)], per_folder)
    above = folder if folder.endswith("/") else folder + "/"
    for entry in entries:
        path = above + entry.name
        if RUN_DIR.match(entry.name):
            if kept is None or entry.name in kept:
                yield RunRef(shown(entry.name), shown(bucket.to_uri(path)), path, listed=False)
        elif entry.is_symlink():
            # never followed: a link to a folder outside the root (a program's `.prose/runs`
            # moved to a bigger disk) hides whatever runs it leads to, so it is named as a
            # folder not listed; one to a folder inside is walked by its own path
            if os.path.isdir(path) and not bucket.inside(path):
                bucket.unlisted.append((shown(path), OUTSIDE_LINK))
        elif _is_dir(entry):
            try:
                inner = _open_beneath(fd, entry.name, folder=True)
            except OSError as exc:
                bucket.not_listed(path, exc)
                continue
            try:
                yield from _runs_below(bucket, path, inner, per_folder=per_folder)
            finally:
                os.close(inner)


def spread_runs(refs: Iterable[RunRef], per_folder: int = 3,
                limit: int | None = None) -> list[RunRef]:
    """A few of `refs` from each folder holding some, as `Bucket.sample` takes them from a
    local root (runs by name), at most `limit` in all: each folder's first before any
    folder's second, and so on; when even one a folder is too many, one from each of `limit`
    folders spread over them (the first and the last among them). Folders in the order they
    come."""
    folders: dict[str, dict[str, RunRef]] = {}
    for ref in refs:
        folders.setdefault(ref.uri.rsplit("/", 1)[0], {})[ref.run_id] = ref
    picks = [[runs[name] for name in sorted(_spread(sorted(runs), per_folder))]
             for runs in folders.values()]
    if limit is not None and len(picks) > limit:
        picks = [picks[i][:1] for i in sorted(_spread(list(range(len(picks))), limit))]
    taken = [ref for turn in itertools.zip_longest(*picks) for ref in turn if ref is not None]
    return taken if limit is None else taken[:limit]


def _spread(names: list, count: int) -> set:
    """`count` of `names`, from the first to the last and evenly between."""
    if not names or count < 1:
        return set()
    if count == 1:
        return {names[0]}
    last = len(names) - 1
    return {names[i * last // (count - 1)] for i in range(count)}


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def iter_runs(bucket: Bucket, files: Iterable[tuple[str, FileInfo]],
              ledger_dirs: set[str] | None = None, skip: tuple[str, ...] = ()
              ) -> Iterator[RunRef]:
    """Group a listing sorted by path into runs: the outermost run or ledger folder of a file.

    A run folder is named like a run (`{YYYYMMDD}-{HHMMSS}-{suffix}`); a ledger folder, whatever
    its name, directly holds `records.ndjson` or `completion.json` (`ledger_dirs`, relative to
    the root; the other ledger files are then checked by the ledger reader). At one level a
    ledger folder wins over the name: a folder named like a run that holds a marker is a ledger
    run whether or not `ledger_dirs` names it yet (its marker is among its own files, which it
    holds when it closes). Yields each run as soon as the listing has moved past it, so only
    the runs of the current page are held. A symlink named like a run folder is itself a run
    (so it can be refused, not lost). The reports of rungrade results kept under the root
    are passed over (see RESULTS_MARK): a folder's `_commits/` keys sort before its
    `reports/`; so are the keys under the prefixes (relative to the root) `skip`.
    """
    ledger_dirs = set() if ledger_dirs is None else ledger_dirs  # may still be growing
    open_runs: dict[str, RunRef] = {}
    root = bucket.root.rstrip("/")
    last, last_ref = "\0", None  # the folder (with its '/') and run of the last key grouped
    for path, info in files:
        # Most keys are in the run of the key before (a run's keys are one range of the
        # listing, and it is the only one open then): they go there as the loop below would
        # put them, unless an empty folder name needs their own key kept.
        if path.startswith(last):
            inner = path[len(last):]
            if inner and "//" not in inner and inner[0] != "/" and inner[-1] != "/":
                if last_ref.keys:
                    last_ref.keys.pop(inner, None)
                last_ref.files[inner] = info
                continue
        if open_runs:
            done = [p for p in open_runs if path > p + "/" and not path.startswith(p + "/")]
            for p in done:
                yield _closed(open_runs.pop(p))
        # (one '/' off: a key with '//' keeps its empty folder name, so the run is read back
        # under its own key, as `_Ledgers` has it)
        rel = path[len(root) + 1:] if path.startswith(root + "/") else path
        if skip and rel.startswith(skip):  # the results' own folders (see RESULTS_MARK)
            continue
        parts = rel.split("/")
        for i, part in enumerate(parts):
            if part == RESULTS_MARK and i < len(parts) - 1:
                above = "/".join(parts[:i]) + "/" if i else ""
                skip += (above + "reports/", above + "_")
                break
            folder = "/".join(parts[: i + 1])
            source = "ledger" if i < len(parts) - 1 and folder in ledger_dirs else (
                "prose" if RUN_DIR.match(part) else None)
            if source is None:
                continue
            run_path = f"{root}/{folder}"
            ref = open_runs.get(run_path)
            if ref is None:
                ref = open_runs[run_path] = RunRef(part, bucket.to_uri(run_path), run_path,
                                                   source=source)
            below = parts[i + 1:]
            inner = "/".join(p for p in below if p) or "."
            if "" in below:  # an empty folder name inside the run (`//`): read by its own key,
                if inner in ref.files:  # unless the key without it names a file too
                    break
                ref.keys = {**(ref.keys or {}), inner: "/".join(below)}
            elif ref.keys:
                ref.keys.pop(inner, None)
            ref.files[inner] = info
            last, last_ref = run_path + "/", ref
            break
    yield from (_closed(ref) for ref in sorted(open_runs.values(), key=lambda r: r.path))


def _run_named(prefix: str) -> bool:
    """Whether the folder `prefix` (a key prefix ending in '/') is named like a run."""
    return bool(RUN_DIR.match(prefix.rstrip("/").rsplit("/", 1)[-1]))


def _of_results(name: str) -> bool:
    """Whether the entry `name` of a folder holding RESULTS_MARK is the results' own."""
    return name == "reports" or name.startswith("_")


def _holds_marker(names: Iterable[str]) -> bool:
    """Whether a folder whose entries are `names` (relative to it) directly holds a ledger
    marker, which makes it a ledger."""
    return not LEDGER_MARKERS.isdisjoint(names)


def _closed(ref: RunRef) -> RunRef:
    if ref.source == "prose" and _holds_marker(ref.files):
        ref.source = "ledger"  # a folder named like a run that holds a marker (see list_run)
    return ref


def group_runs(bucket: Bucket, files: list[tuple[str, FileInfo]]) -> list[RunRef]:
    """Every run of a complete listing (any order), sorted by uri (see `iter_runs`)."""
    root = bucket.root.rstrip("/")
    ledgers = set()
    for path, _ in files:
        rel = path[len(root) + 1:] if path.startswith(root + "/") else path
        if "/" in rel and rel.rsplit("/", 1)[-1] in LEDGER_MARKERS:
            ledgers.add(rel.rsplit("/", 1)[0])
    return sorted(iter_runs(bucket, sorted(files, key=lambda f: f[0]), ledgers),
                  key=lambda r: r.uri)
