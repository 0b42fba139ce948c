"""Where runs live: a local folder or an `s3://bucket/prefix`, listed once and read with caps.

Listing walks the whole root a single time and groups files by run folder (OpenProse run
directories and moltzap ledger folders alike), so the reader never lists again and the
fingerprint (sizes and mtimes) comes for free. Symlinks are never followed:
the local walker records them with their resolved target so the reader can refuse runs whose
links leave the root.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field

import fsspec

RUN_DIR = re.compile(r"^\d{8}-\d{6}-.+$")
LEDGER_FILES = frozenset({"manifest.json", "records.ndjson", "completion.json"})
# `manifest.json` alone is too common a name to mark a ledger; these two are ledger-specific.
LEDGER_MARKERS = frozenset({"records.ndjson", "completion.json"})


@dataclass(frozen=True)
class FileInfo:
    size: int
    mtime: float
    link_target: str | None = None  # resolved target of a symlink, never followed


@dataclass
class RunRef:
    """One run folder found under the root, with every file below it (relative paths).

    `source` says which reader reads it: `prose` (an OpenProse run directory, any era) or
    `ledger` (a moltzap ledger folder).
    """

    run_id: str
    uri: str
    path: str
    files: dict[str, FileInfo] = field(default_factory=dict)
    source: str = "prose"

    @property
    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for rel in sorted(self.files):
            info = self.files[rel]
            h.update(f"{rel}\0{info.size}\0{info.mtime:.6f}\0{info.link_target or ''}\n".encode())
        return h.hexdigest()[:32]


def split_uri(uri: str) -> tuple[str, str]:
    """Return (protocol, path) for a local path or a URL such as s3://bucket/prefix."""
    if "://" in uri:
        protocol, path = uri.split("://", 1)
        return protocol, path.rstrip("/")
    return "file", os.path.abspath(uri)


def filesystem(uri: str, endpoint_url: str | None = None) -> fsspec.AbstractFileSystem:
    protocol, _ = split_uri(uri)
    if protocol == "s3":
        options: dict = {"use_listings_cache": False}
        endpoint = endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get(
            "AWS_ENDPOINT_URL"
        )
        if endpoint:
            options["endpoint_url"] = endpoint
        return fsspec.filesystem("s3", **options)
    return fsspec.filesystem(protocol)


class Bucket:
    """A runs root. `walk()` lists every file once; `read()` returns at most `cap` bytes."""

    def __init__(self, uri: str, endpoint_url: str | None = None):
        self.uri = uri
        self.protocol, self.root = split_uri(uri)
        self.fs = filesystem(uri, endpoint_url)
        self.local = self.protocol == "file"

    def to_uri(self, path: str) -> str:
        return path if self.local else f"{self.protocol}://{path}"

    def exists(self) -> bool:
        return os.path.isdir(self.root) if self.local else self.fs.exists(self.root)

    def walk(self) -> list[tuple[str, FileInfo]]:
        """Every file (and symlink) under the root as (absolute path, info)."""
        if self.local:
            return list(_walk_local(self.root))
        found = self.fs.find(self.root, detail=True)
        out = []
        for path, info in found.items():
            if info.get("type") == "directory":
                continue
            mtime = info.get("LastModified") or info.get("mtime") or 0
            mtime = mtime.timestamp() if hasattr(mtime, "timestamp") else float(mtime or 0)
            out.append((path, FileInfo(int(info.get("size") or 0), mtime)))
        return out

    def read(self, path: str, cap: int) -> tuple[bytes, bool]:
        """Read at most `cap` bytes; return (data, truncated)."""
        if self.local:
            with open(path, "rb") as handle:
                data = handle.read(cap + 1)
        else:
            data = self.fs.cat_file(path, start=0, end=cap + 1)
        return data[:cap], len(data) > cap

    def read_many(self, paths: list[str], cap: int) -> dict[str, tuple[bytes, bool]]:
        """Read several files; remote stores fetch them concurrently in one call."""
        if self.local or not paths:
            return {p: self.read(p, cap) for p in paths}
        blobs = self.fs.cat(paths, start=0, end=cap + 1, on_error="raise")
        return {p: (blobs[p][:cap], len(blobs[p]) > cap) for p in paths}

    def inside(self, target: str) -> bool:
        root = os.path.realpath(self.root)
        return os.path.commonpath([root, os.path.realpath(target)]) == root


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
                elif entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    yield entry.path, FileInfo(st.st_size, st.st_mtime)
            except OSError:
                continue


def group_runs(bucket: Bucket, files: list[tuple[str, FileInfo]]) -> list[RunRef]:
    """Group listed files into runs: the outermost run folder or ledger folder above each file.

    A run folder is named like a run (`{YYYYMMDD}-{HHMMSS}-{suffix}`); a ledger folder, whatever
    its name, directly holds `records.ndjson` or `completion.json` (the other ledger files are
    then checked by the ledger reader). At one level a ledger folder wins over the name.
    A symlink named like a run folder is itself a run (so it can be refused, not lost).
    """
    runs: dict[str, RunRef] = {}
    root = bucket.root.rstrip("/")
    listed = []
    ledger_dirs = set()
    for path, info in files:
        rel = path[len(root):].lstrip("/") if path.startswith(root) else path
        parts = rel.split("/")
        listed.append((parts, info))
        if parts[-1] in LEDGER_MARKERS and len(parts) > 1:
            ledger_dirs.add("/".join(parts[:-1]))
    for parts, info in listed:
        for i, part in enumerate(parts):
            folder = "/".join(parts[: i + 1])
            source = "ledger" if i < len(parts) - 1 and folder in ledger_dirs else (
                "prose" if RUN_DIR.match(part) else None)
            if source is None:
                continue
            run_path = f"{root}/{folder}"
            ref = runs.get(run_path)
            if ref is None:
                ref = runs[run_path] = RunRef(part, bucket.to_uri(run_path), run_path,
                                              source=source)
            inner = "/".join(parts[i + 1:]) or "."
            ref.files[inner] = info
            break
    return sorted(runs.values(), key=lambda r: r.uri)
