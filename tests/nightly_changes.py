"""Nights of changes to a runs folder, and the graded state of results to compare: what the
tests of incremental grading hold against one fresh grade."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from pipeline.catalog import connect


def change_night(runs: Path, spare: list[Path], rnd) -> None:
    """One night's changes to `runs`: outputs appended to, files deleted (a run's program
    too: it is refused), state logs cut short, outputs added, new runs, and copies of runs
    under another prefix (one run id, two runs)."""
    folders = sorted(p for p in runs.rglob("2026*") if p.is_dir() and p.parent.name == "runs")
    for folder in rnd.sample(folders, 6):
        files = sorted(p for p in folder.rglob("*") if p.is_file())
        change = rnd.choice(["append", "delete", "state", "output", "new run", "copy"])
        if change == "append":
            path = rnd.choice(files)
            path.write_text(path.read_text(errors="replace") + f"\nOne more line {rnd.random()}.\n")
        elif change == "delete":
            rnd.choice(files).unlink()
        elif change == "state" and (folder / "state.md").exists():
            text = (folder / "state.md").read_text()
            (folder / "state.md").write_text(text[:len(text) // 2])
        elif change == "output" and (folder / "bindings").is_dir():
            service = rnd.choice(sorted((folder / "bindings").iterdir()))
            if service.is_dir():
                (service / "extra.md").write_text("An output nobody asked for.\n")
        elif change == "new run" and spare:
            run = spare.pop()
            shutil.copytree(run, runs / "added" / run.name)
        elif change == "copy" and not (runs / "copies" / folder.name).exists():
            shutil.copytree(folder, runs / "copies" / folder.name)


def graded_state(results: Path) -> tuple[dict[str, list], dict[str, bytes | None]]:
    """The views' rows (no batch or time columns), and each run's report by its uri (None
    for a refused run): `{run_id}~{uri tag}.json` where it has one, else `{run_id}.json`."""
    con = connect(str(results))
    rows = {table: sorted(map(repr, con.sql(query).fetchall())) for table, query in (
        ("runs", "select run_uri, status, fingerprint from runs"),
        ("refusals", "select run_uri, reason, detail from refusals"),
        ("checks", 'select run_uri, service, clause_id, "check", outcome, detail from checks'),
        ("clause_verdicts", "select run_uri, service, clause_id, verdict, evidence, confidence "
                            "from clause_verdicts"),
        ("run_scores", "select run_uri, overall_score, overall_verdict from run_scores"))}
    reports = {}
    for run_id, uri, status in con.sql("select run_id, run_uri, status from runs").fetchall():
        tag = hashlib.sha1(uri.encode()).hexdigest()[:8]
        path = results / "reports" / f"{run_id}~{tag}.json"
        path = path if path.exists() else results / "reports" / f"{run_id}.json"
        reports[uri] = path.read_bytes() if status == "graded" else None
    # one report a graded run, none for a refused one (an earlier grade's report is gone)
    graded = sum(report is not None for report in reports.values())
    assert len(list((results / "reports").glob("*.json"))) == graded
    return rows, reports
