"""The results dataset: Hive-partitioned Parquet, published one committed batch at a time.

Layout (RESULTS may be a local folder or s3://bucket/prefix):
    {table}/grader={grader_slug}/batch={batch_id}/part-0.parquet
    reports/grader={grader_slug}/{run_id}.json   one per graded run; grader ids never overwrite
    reports/{run_id}.json          a copy of the run's most recent report, whatever its grader
    _commits/{batch_id}.json      written last: a batch without it does not exist
    _staging/{batch_id}/...        parts being written; removed when a batch is published

Reports are moved into place only after the commit marker; a batch committed but not yet
done moving its reports is finished by the next `grade` (see `discard_uncommitted`).

A batch is written to `_staging`, moved into place, and only then committed. Readers (the
catalog, `rungrade sql`, the CLI) see committed batches only; a crash before the commit marker
leaves a batch that the next `grade` removes and redoes.
"""

from __future__ import annotations

import io
import json
import secrets
from datetime import UTC, datetime

import polars as pl

from .sources.bucket import filesystem, split_uri
from .tables import TABLES, conform


def grader_slug(grader_id: str) -> str:
    # Grader ids hold exactly one '/', in '.grader/v', so this mapping is one-to-one.
    return grader_id.replace("/", "-")


def new_batch_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(3)


class ResultStore:
    def __init__(self, uri: str, endpoint_url: str | None = None):
        self.uri = uri
        self.protocol, self.root = split_uri(uri)
        self.fs = filesystem(uri, endpoint_url)
        self.local = self.protocol == "file"

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def url(self, path: str) -> str:
        return path if self.local else f"{self.protocol}://{path}"

    # -- commits ---------------------------------------------------------------------------
    def commits(self) -> list[dict]:
        """Committed batches, oldest first."""
        folder = self.path("_commits")
        if not self.fs.exists(folder):
            return []
        out = []
        for path in sorted(self.fs.ls(folder, detail=False)):
            if path.endswith(".json"):
                out.append(json.loads(self.fs.cat_file(path)))
        return sorted(out, key=lambda c: c["batch_id"])

    def committed_batches(self) -> set[str]:
        return {c["batch_id"] for c in self.commits()}

    def discard_uncommitted(self) -> list[str]:
        """Remove parts of batches that never committed (a crash or kill mid-publish)."""
        committed = self.committed_batches()
        removed = []
        staging = self.path("_staging")
        if self.fs.exists(staging):
            for path in self.fs.ls(staging, detail=False):
                batch = path.rstrip("/").rsplit("/", 1)[-1]
                if batch in committed:
                    self._publish_reports(batch)  # committed: roll its reports forward
                else:
                    removed.append(batch)
                    self.fs.rm(path, recursive=True)
        for table in TABLES:
            base = self.path(table)
            if not self.fs.exists(base):
                continue
            for grader_dir in self.fs.ls(base, detail=False):
                for batch_dir in self.fs.ls(grader_dir, detail=False):
                    batch = batch_dir.rsplit("batch=", 1)[-1]
                    if batch not in committed:
                        self.fs.rm(batch_dir, recursive=True)
                        removed.append(batch)
        return sorted(set(removed))

    def write_batch(self, batch_id: str, grader_id: str, tables: dict[str, pl.DataFrame],
                    reports: dict[str, str], summary: dict) -> None:
        """Stage every part, move the parts into place, then write the commit marker."""
        slug = grader_slug(grader_id)
        staging = self.path("_staging", batch_id)
        moves = []
        for table in TABLES:
            df = conform(table, tables[table]) if table in tables else None
            if df is None:
                continue
            df = df.with_columns(pl.lit(grader_id).alias("grader_id")) if (
                "grader_id" not in df.columns) else df
            buf = io.BytesIO()
            df.write_parquet(buf, compression="zstd", statistics=True)
            tmp = f"{staging}/{table}.parquet"
            self._put(tmp, buf.getvalue())
            moves.append((tmp, self.path(table, f"grader={slug}", f"batch={batch_id}",
                                         "part-0.parquet")))
        for name, text in reports.items():
            self._put(f"{staging}/reports/grader={slug}/{name}", text.encode())
            self._put(f"{staging}/reports/{name}", text.encode())
        for src, dst in moves:
            self._move(src, dst)
        marker = {"batch_id": batch_id, "grader_id": grader_id,
                  "committed_at": datetime.now(UTC).isoformat(timespec="seconds"), **summary}
        self._put(self.path("_commits", f"{batch_id}.json"),
                  json.dumps(marker, indent=1).encode())
        self._publish_reports(batch_id)

    def _publish_reports(self, batch_id: str) -> None:
        """Move a committed batch's staged reports into place, then drop its staging folder.

        Runs after the commit marker, so a report never describes an uncommitted batch; a crash
        before it finishes is rolled forward by `discard_uncommitted`.
        """
        staging = self.path("_staging", batch_id)
        staged = f"{staging}/reports"
        if self.fs.exists(staged):
            files = sorted(self.fs.find(staged))
            # per-grader copies first, the top-level latest copies last
            for src in sorted(files, key=lambda p: "/grader=" not in p):
                self._move(src, self.path("reports", src[len(staged) + 1:]))
        if self.fs.exists(staging):
            self.fs.rm(staging, recursive=True)

    def _put(self, path: str, data: bytes) -> None:
        parent = path.rsplit("/", 1)[0]
        if self.local:
            self.fs.makedirs(parent, exist_ok=True)
            tmp = f"{path}.tmp-{secrets.token_hex(4)}"
            with open(tmp, "wb") as handle:
                handle.write(data)
                handle.flush()
            self.fs.mv(tmp, path)  # rename: readers see the whole file or none of it
        else:
            self.fs.pipe_file(path, data)

    def _move(self, src: str, dst: str) -> None:
        if self.local:
            self.fs.makedirs(dst.rsplit("/", 1)[0], exist_ok=True)
        self.fs.mv(src, dst)

    # -- reading ---------------------------------------------------------------------------
    def table_files(self, table: str, batches: set[str] | None = None) -> list[str]:
        """Committed part files of a table (all grader ids), as URLs readers can open."""
        batches = self.committed_batches() if batches is None else batches
        pattern = self.path(table, "grader=*", "batch=*", "*.parquet")
        return [self.url(p) for p in sorted(self.fs.glob(pattern))
                if p.split("batch=", 1)[-1].split("/", 1)[0] in batches]
