"""Tiny, real OpenProse run folders with one service, for the check-library tests.

Each run is written to disk in the era-A layout and graded through the real pipeline
(discover → read → clause frame → checks → verdicts → scores), so a test states a clause and
an output and reads back what the grader concluded.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipeline.checks import default_grader
from pipeline.grade import grade_tables, read_runs, source_tables
from pipeline.sources.bucket import Bucket, group_runs

SERVICE = "svc"


def write_service_run(root: Path, run_id: str, *, ensures: str, outputs: dict[str, str],
                      errors: str = "- `failed-hard`: the service gave up",
                      error: tuple[str, str] | None = None,
                      program_ensures: str = "", log: str = "", mark: str = "") -> Path:
    """Write a one-service run. `ensures`/`errors` are markdown list items of the service;
    `outputs` maps binding file names (`out.md`, `data.json`) to their text; `error` is
    (name, detail) of a `__error.md` the service left; `log` adds state.md lines after the
    service's step; `mark` is the step's mark and note (`⊘ (deferred: …)`), else ✓ or
    `✗ error`."""
    run = root / run_id
    program = "---\nname: demo\nkind: program\nservices: [svc]\n---\n\n# Demo\n"
    if program_ensures:
        program += f"\n### Ensures\n\n{program_ensures}\n\n### Errors\n\n{errors}\n"
    outs = "\n".join(f"- (public) {name.rsplit('.', 1)[0]} → bindings/{SERVICE}/{name}"
                     for name in outputs)
    manifest = (f"# Manifest: demo\n\n## Graph\n\n### {SERVICE}\nsource: services/{SERVICE}.md\n"
                f"workspace: workspace/{SERVICE}/\noutputs:\n{outs}\n\n## Execution Order\n"
                f"1. {SERVICE} (depends on: caller)\n")
    service = (f"---\nname: {SERVICE}\nkind: service\n---\n\n### Ensures\n\n{ensures}\n\n"
               f"### Errors\n\n{errors}\n")
    mark = mark or (f"✗ {error[0]}" if error else "✓")
    state = (f"# run:{run_id} demo\nprogram: demo\n1→ {SERVICE} {mark}\n{log}"
             "---end 2026-11-12T03:20:11Z\n")
    files = {"program.md": program, "manifest.md": manifest,
             f"services/{SERVICE}.md": service, "state.md": state,
             **{f"bindings/{SERVICE}/{name}": text for name, text in outputs.items()}}
    if error:
        files[f"workspace/{SERVICE}/__error.md"] = f"# Error: {error[0]}\n\n{error[1]}\n"
    for rel, text in files.items():
        path = run / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return run


def grade_folder(root: Path, grader=None) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """Grade every run under `root` as one batch. Returns (tables, clause frame)."""
    bucket = Bucket(str(root))
    refs = group_runs(bucket, bucket.walk())
    rows = read_runs(str(root), refs)
    return grade_tables(source_tables(rows), grader or default_grader())


def run_id(n: int) -> str:
    return f"20261112-{n:06d}-case"
