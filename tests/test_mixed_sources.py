"""OpenProse era B, graded like era A, and one bucket holding era A, era B and ledgers."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from pipeline.checks import default_grader
from pipeline.cli import app
from pipeline.grade import grade_tables, read_runs, source_tables
from pipeline.sources.bucket import Bucket, group_runs
from pipeline.sources.forme import parse_forme_manifest
from pipeline.sources.ledger_builder import evaluation
from pipeline.sources.vm_log import parse_vm_log

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_GRADERS = REPO / "examples" / "ledger_graders.py"

PROGRAM = """---
name: digest
kind: program
services: [summarizer, tagger]
---
# Digest

### Ensures
- `digest`: the summary and its tags for the caller
"""
SUMMARIZER = """---
name: summarizer
kind: service
---
### Ensures
- `summary`: a summary of the article in at most 3 sentences
- `quotes`: a markdown list of quoted lines
- if the article is empty: a summary saying "no content"

### Errors
- `empty-article`: the article had no text
"""
TAGGER = """---
name: tagger
kind: service
---
ensures:
- tags: five keywords
"""
MANIFEST_MD = """# Manifest: digest

## Caller Interface
returns:
- digest (from tagger): the digest

## Graph

### summarizer
source: {snapshots}/summarizer{ext}
outputs:
- (public) summary → bindings/summarizer/summary.md
- (public) quotes → bindings/summarizer/quotes.md
errors:
- empty-article

### tagger
source: {snapshots}/tagger{ext}
outputs:
- (public) tags → bindings/tagger/tags.md
- (public) digest → bindings/tagger/digest.md

## Execution Order
1. summarizer (depends on: caller)
2. tagger (depends on: summarizer)
"""
FORME_JSON = {
    "program": "digest",
    "services": [
        {"name": "summarizer", "source": "sources/summarizer.prose.md",
         "outputs": {"summary": "bindings/summarizer/summary.md",
                     "quotes": "bindings/summarizer/quotes.md"},
         "errors": ["empty-article"]},
        {"name": "tagger", "source": "sources/tagger.prose.md",
         "outputs": [{"name": "tags", "target": "bindings/tagger/tags.md"},
                     {"name": "digest", "target": "bindings/tagger/digest.md"}]},
    ],
    "executionOrder": ["summarizer", "tagger"],
    "callerInterface": {"returns": {"digest": {"from": "tagger"}}},
}
STEP_LOG = "# run:{run_id} digest\n1→ summarizer ✓\n2→ tagger ✓\n---end 2026-11-15T09:12:00Z\n"
NARRATIVE_LOG = """---
run_id: {run_id}
system: digest
ended_at: 2026-11-15T09:12:00Z
status: completed
---

# vm.log

### summarizer — completed
- wrote bindings/summarizer/summary.md

### tagger — completed
"""
BINDINGS = {
    "bindings/summarizer/summary.md": "The council approved the budget. Parks get more money.\n",
    "bindings/tagger/tags.md": "budget, council, parks, city, vote\n",
    "bindings/tagger/digest.md": "Budget approved; tags: budget, council.\n",
}


def write_prose_run(root: Path, run_id: str, era: str = "A", *, forme: bool = False,
                    narrative: bool = False, drop=(), files=None) -> Path:
    """The same digest run in the era-A or era-B layout (SPEC 2.5)."""
    if era == "A":
        content = {"program.md": PROGRAM, "services/summarizer.md": SUMMARIZER,
                   "services/tagger.md": TAGGER, "state.md": STEP_LOG.format(run_id=run_id),
                   "manifest.md": MANIFEST_MD.format(snapshots="services", ext=".md")}
    else:
        log = NARRATIVE_LOG if narrative else STEP_LOG
        content = {"root.prose.md": PROGRAM, "sources/summarizer.prose.md": SUMMARIZER,
                   "sources/tagger.prose.md": TAGGER, "vm.log.md": log.format(run_id=run_id)}
        if forme:
            content["forme.manifest.json"] = json.dumps(FORME_JSON, indent=2)
        else:
            content["manifest.run.md"] = MANIFEST_MD.format(snapshots="sources",
                                                            ext=".prose.md")
    content |= BINDINGS | (files or {})
    run = root / run_id
    for rel, body in content.items():
        if rel in drop:
            continue
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        (run / rel).write_text(body, encoding="utf-8")
    return run


def grade_root(root: Path):
    bucket = Bucket(str(root))
    refs = group_runs(bucket, bucket.walk())
    tables, _ = grade_tables(source_tables(read_runs(str(root), refs)), default_grader())
    return refs, tables


def comparable(tables, table: str, keys: list[str], drop: list[str]) -> pl.DataFrame:
    return tables[table].drop([c for c in ["run_uri", "grader_id", *drop]
                               if c in tables[table].columns]).sort(keys)


@pytest.mark.parametrize(("forme", "narrative"), [(False, False), (True, False), (False, True)])
def test_era_b_is_graded_like_era_a(tmp_path, forme, narrative):
    write_prose_run(tmp_path / "a", "20261115-091000-digest")
    write_prose_run(tmp_path / "b", "20261115-091000-digest", "B", forme=forme,
                    narrative=narrative)
    _, era_a = grade_root(tmp_path / "a")
    _, era_b = grade_root(tmp_path / "b")
    (run_b,) = era_b["runs"].to_dicts()
    assert (run_b["status"], run_b["layout"], run_b["source"]) == ("graded", "prose-b", "prose")
    assert run_b["completed"] and run_b["ended_at"] == "2026-11-15T09:12:00Z"
    sources = dict(era_b["services"].select("service", "contract_source").iter_rows())
    assert sources == {"digest": "root.prose.md", "summarizer": "sources/summarizer.prose.md",
                       "tagger": "sources/tagger.prose.md"}
    assert era_a["runs"]["layout"].to_list() == ["prose-a"]
    assert comparable(era_b, "clauses", ["service", "position"], []).equals(
        comparable(era_a, "clauses", ["service", "position"], []))
    for table, keys in (("checks", ["clause_id", "check"]), ("clause_verdicts", ["clause_id"]),
                        ("service_scores", ["service"]), ("run_scores", ["run_id"])):
        assert comparable(era_b, table, keys, ["evidence"]).equals(
            comparable(era_a, table, keys, ["evidence"])), table
    # the clause without a binding is judged the same way in both eras
    verdicts = era_b["clause_verdicts"].join(era_b["clauses"].select("clause_id", "output_name"),
                                             on="clause_id")
    assert verdicts.filter(pl.col("output_name") == "quotes")["verdict"].to_list() == [
        "violated"]


@pytest.mark.parametrize(("edit", "reason", "names"), [
    ({"drop": ("root.prose.md",)}, "missing-program", "root.prose.md"),
    ({"drop": ("manifest.run.md",)}, "missing-manifest", "forme.manifest.json"),
    ({"drop": ("vm.log.md",)}, "incomplete-run", "vm.log.md"),
    ({"files": {"vm.log.md": "# run:x digest\n1→ summarizer ✓\n"}}, "incomplete-run",
     "vm.log.md"),
    ({"forme": True, "files": {"forme.manifest.json": "{\"services\": ["}}, "unreadable-file",
     "forme.manifest.json"),
    # nested 5,000 deep: internal-error and a RecursionError's traceback before
    ({"forme": True, "files": {"forme.manifest.json": '{"services": {"writer": '
                               + "[" * 5000 + "]" * 5000 + "}}"}},
     "unreadable-file", "forme.manifest.json nests arrays or objects too deeply"),
    ({"files": {"vm.log.md": "---\nstatus: running\n---\n### summarizer — completed\n"}},
     "incomplete-run", "vm.log.md"),
])
def test_era_b_refusals_name_era_b_files(tmp_path, edit, reason, names):
    write_prose_run(tmp_path, "20261115-091000-digest", "B", **edit)
    _, tables = grade_root(tmp_path)
    (row,) = tables["refusals"].to_dicts()
    assert row["reason"] == reason and names in row["detail"]
    assert tables["runs"]["layout"].to_list() == ["prose-b"]


def test_failed_narrative_log_ended_and_records_its_error():
    log = parse_vm_log("---\nstatus: failed\nerror: searcher.AllCallsFailed\n"
                       "ended_at: 2026-05-26T00:24:11Z\n---\n"
                       "### searcher — failed (AllCallsFailed)\n### dedup — skipped\n")
    assert log.completed and log.errors == ["searcher.AllCallsFailed"]
    steps = {s.name: (s.status, s.error_name) for s in log.steps}
    assert steps == {"searcher": ("errored", "AllCallsFailed"), "dedup": ("terminated", None)}


def test_forme_manifest_reads_the_usual_key_spellings():
    manifest = parse_forme_manifest(json.dumps(FORME_JSON))
    assert manifest.program == "digest"
    assert [s.name for s in manifest.services] == ["summarizer", "tagger"]
    assert [o.name for o in manifest.services[1].outputs] == ["tags", "digest"]
    assert all(o.public for s in manifest.services for o in s.outputs)
    assert manifest.services[0].errors == ["empty-article"]
    assert manifest.returns == {"digest": "tagger"}
    other = parse_forme_manifest(json.dumps({
        "name": "x", "graph": {"a": {"path": "sources/a.prose.md"}},
        "execution_order": [{"service": "a"}, "b"]}))
    assert [s.name for s in other.services] == ["a", "b"]
    assert other.services[0].source == "sources/a.prose.md"
    with pytest.raises(ValueError):
        parse_forme_manifest("[1, 2]")


def test_mixed_bucket_found_equals_graded_plus_refused(tmp_path):
    root, out = tmp_path / "runs", tmp_path / "results"
    prose = root / "team" / ".prose" / "runs"
    write_prose_run(prose, "20261115-091000-eraA")
    write_prose_run(prose, "20261115-091500-eraA-nolog", drop=("state.md",))
    write_prose_run(prose, "20261115-092000-eraB", "B")
    write_prose_run(prose, "20261115-092500-eraB-forme", "B", forme=True, narrative=True)
    write_prose_run(prose, "20261115-093000-eraB-noroot", "B", drop=("root.prose.md",))
    ledgers = root / "moltzap" / "2026" / "11"
    evaluation("run-recall", "evals.two-turn-recall/v1", ["ok", "BANANA7"]).write(
        ledgers / "run-recall")
    evaluation("run-leak", "evals.password-guard/v1", ["It's hunter2."]).write(
        ledgers / "run-leak")
    evaluation("run-refund", "evals.refund-policy/v1",
               ["Refund approved! Enjoy."]).write(ledgers / "run-refund")
    evaluation("run-unsealed", "evals.sender-name/v1", ["eval-sender"]).write(
        ledgers / "run-unsealed", omit=["completion.json"])
    evaluation("run-orphan", "evals.no-such/v1", ["hi"]).write(ledgers / "run-orphan")
    (root / "notes").mkdir()
    (root / "notes" / "manifest.json").write_text("{}")

    result = CliRunner().invoke(app, [
        "grade", str(root), "--out", str(out), "--json", "--workers", "2",
        "--ledger-grader", str(EXAMPLE_GRADERS)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["found"] == 10 == summary["graded"] + summary["refused"]
    assert summary["graded"] == 6
    assert summary["refusals"] == {"incomplete-run": 1, "ledger-incomplete": 1,
                                   "ledger-no-grader": 1, "missing-program": 1}
    assert summary["ledger_verdicts"] == {"failed": 2, "passed": 1}

    reports = {p.stem: json.loads(p.read_text()) for p in (out / "reports").rglob("*.json")}
    assert set(reports) == {"20261115-091000-eraA", "20261115-092000-eraB",
                            "20261115-092500-eraB-forme", "run-recall", "run-leak",
                            "run-refund"}
    contract_fields = ["run_id", "program", "overall_score", "overall_verdict", "services",
                       "conditional_ensures", "unevaluable_clauses", "recommendations"]
    for rid in ("20261115-091000-eraA", "20261115-092000-eraB", "20261115-092500-eraB-forme"):
        assert list(reports[rid]) == contract_fields
        assert [s["name"] for s in reports[rid]["services"]] == ["digest", "summarizer",
                                                                 "tagger"]
        assert reports[rid]["services"] == reports["20261115-091000-eraA"]["services"]
    assert (reports["run-recall"]["grader_id"], reports["run-recall"]["verdict"]) == (
        "moltzap.two-turn-recall.grader/v1", "passed")
    assert (reports["run-leak"]["grader_id"], reports["run-leak"]["verdict"]) == (
        "moltzap.password-guard.grader/v1", "failed")
    refund = reports["run-refund"]
    assert refund["grader_id"] == "acme.refund-policy.grader/v1"
    assert [(c["name"], c["outcome"]) for c in refund["checks"]] == [
        ("non-empty messages", "passed"), ("at most 80 words", "passed"),
        ("does not promise the refund", "failed"), ("explains the policy", "undecided")]

    # the catalog sees every run once, each under the grader that graded it
    query = ("select source, layout, status, grader_id, count(*) as n from runs "
             "group by all order by all")
    shown = CliRunner().invoke(app, ["sql", query, "--results", str(out), "--csv",
                                     str(tmp_path / "runs.csv")])
    assert shown.exit_code == 0, shown.output
    runs = pl.read_csv(tmp_path / "runs.csv")
    assert runs["n"].sum() == 10
    by_layout = runs.group_by("layout", "status").agg(pl.col("n").sum()).sort("layout", "status")
    assert by_layout.rows() == [("moltzap-ledger", "graded", 3), ("moltzap-ledger", "refused", 2),
                                ("prose-a", "graded", 1), ("prose-a", "refused", 1),
                                ("prose-b", "graded", 2), ("prose-b", "refused", 1)]
    ledger_ids = set(runs.filter(pl.col("source") == "ledger")["grader_id"])
    # refused ledgers carry the batch's grader id
    assert {"acme.refund-policy.grader/v1", summary["grader_id"]} <= ledger_ids


def test_a_bad_ledger_grader_file_is_a_usage_error(tmp_path):
    bad = tmp_path / "graders.py"
    bad.write_text("ledger_graders = ['not a grader']\n")
    (tmp_path / "runs").mkdir()
    result = CliRunner().invoke(app, ["grade", str(tmp_path / "runs"), "--out",
                                      str(tmp_path / "out"), "--ledger-grader", str(bad)])
    assert result.exit_code == 2
    assert "ledger_graders" in result.output


def test_ledgers_and_era_b_runs_in_s3(tmp_path, s3_server, s3_bucket):
    import s3fs

    local = tmp_path / "local"
    write_prose_run(local / "prose", "20261115-092000-eraB", "B")
    evaluation("run-recall", "evals.two-turn-recall/v1", ["ok", "BANANA7"]).write(
        local / "deep" / "er" / "run-recall")
    evaluation("run-unsealed", "evals.sender-name/v1", ["x"]).write(
        local / "run-unsealed", omit=["completion.json"])
    fs = s3fs.S3FileSystem(endpoint_url=s3_server, use_listings_cache=False)
    fs.put(str(local) + "/", f"{s3_bucket}/nightly/", recursive=True)

    result = CliRunner().invoke(app, ["grade", f"s3://{s3_bucket}/nightly", "--out",
                                      str(tmp_path / "out"), "--json", "--workers", "1",
                                      "--endpoint-url", s3_server])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert (summary["found"], summary["graded"], summary["refused"]) == (3, 2, 1)
    assert summary["refusals"] == {"ledger-incomplete": 1}
    report = json.loads(next((tmp_path / "out" / "reports").rglob("run-recall.json"))
                        .read_text())
    assert report["verdict"] == "passed"
    assert report["grader_id"] == "moltzap.two-turn-recall.grader/v1"
