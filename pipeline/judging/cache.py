"""Answers already paid for, kept beside the results as Parquet and looked up by content.

Layout: `RESULTS/judgments/judge={judge_id}/part-{stamp}.parquet`. A part holds the answers
of one flush; it is written whole and then renamed into place (one PUT on S3), so a crash
never leaves half a part. A judgment's key is (judge_id, template_version, clause_sha256,
output_sha256): the same judge asked with the same prompt about the same clause and the same
output text is never asked again, whichever run or night it comes from. Failed requests are
not stored, so the next grade asks them again.
"""

from __future__ import annotations

import io

import polars as pl

from ..store import ResultStore, new_batch_id

Str, Int = pl.String, pl.Int64
COLUMNS = {
    "judge_id": Str, "template_version": Str, "clause_sha256": Str, "output_sha256": Str,
    "outcome": Str, "confidence": Int, "evidence": Str, "rationale": Str, "answered_at": Str,
}
KEY = ["judge_id", "template_version", "clause_sha256", "output_sha256"]
# More parts than this are merged into one when a judge's cache is first read.
MAX_PARTS = 64


class JudgmentCache:
    """The judgments folder of a results location (local folder or s3:// prefix)."""

    def __init__(self, results_uri: str, endpoint_url: str | None = None):
        self.store = ResultStore(results_uri, endpoint_url)
        self._known: dict[str, pl.DataFrame] = {}

    def folder(self, judge_id: str) -> str:
        return self.store.path("judgments", f"judge={judge_id}")

    def parts(self, judge_id: str) -> list[str]:
        folder = self.folder(judge_id)
        if not self.store.fs.exists(folder):
            return []
        return sorted(self.store.fs.glob(f"{folder}/*.parquet"))

    def known(self, judge_id: str) -> pl.DataFrame:
        """Every stored answer of `judge_id` (all template versions), one row per key."""
        if judge_id not in self._known:
            parts = self.parts(judge_id)
            frames = [pl.read_parquet(io.BytesIO(self.store.fs.cat_file(p))) for p in parts]
            df = pl.concat([conform(f) for f in frames]) if frames else empty()
            df = df.unique(KEY, keep="first", maintain_order=True)
            if len(parts) > MAX_PARTS:
                self._write(judge_id, df)
                for path in parts:
                    self.store.fs.rm(path)
            self._known[judge_id] = df
        return self._known[judge_id]

    def save(self, judge_id: str, answers: pl.DataFrame) -> None:
        """Store new answers of `judge_id` as one more part (nothing is written for none)."""
        answers = conform(answers)
        if answers.is_empty():
            return
        self._write(judge_id, answers)
        self._known[judge_id] = pl.concat([self.known(judge_id), answers]).unique(
            KEY, keep="first", maintain_order=True)

    def _write(self, judge_id: str, df: pl.DataFrame) -> None:
        buf = io.BytesIO()
        df.write_parquet(buf, compression="zstd")
        # the store's put: a temporary file renamed into place, or one PUT on S3
        self.store._put(f"{self.folder(judge_id)}/part-{new_batch_id()}.parquet",
                        buf.getvalue())


def empty() -> pl.DataFrame:
    return pl.DataFrame(schema=COLUMNS)


def conform(df: pl.DataFrame) -> pl.DataFrame:
    return df.select([(pl.col(c) if c in df.columns else pl.lit(None)).cast(t).alias(c)
                      for c, t in COLUMNS.items()])
