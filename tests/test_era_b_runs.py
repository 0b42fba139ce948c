"""Era-B runs (root.prose.md, forme.manifest.json, sources/*.prose.md, vm.log.md) as their
agents write them: a graph object of nodes, an execution order written as prose, returns given
as a binding's path, a narrative log. Each is graded as the plain era-B run is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from check_runs import grade_folder

PROGRAM = """---
kind: program
services: [collector, editor]
---

# Daily digest

### Ensures
- `digest`: a markdown digest with one section per item
"""
COLLECTOR = """---
name: collector
kind: service
---

### Ensures
- `items`: a JSON array of items
"""
EDITOR = """---
name: editor
kind: service
---

### Ensures
- `headline`: one line of at most 12 words
"""
SERVICES = [
    {"name": "collector", "source": "sources/collector.prose.md",
     "outputs": {"items": "bindings/collector/items.json"}},
    {"name": "editor", "source": "sources/editor.prose.md",
     "outputs": {"digest": "bindings/editor/digest.md",
                 "headline": "bindings/editor/headline.md"}},
]
FORME = {"program": "daily-digest", "callerInterface": {"returns": {"digest": {"from": "editor"}}},
         "services": SERVICES, "executionOrder": ["collector", "editor"]}
LOG = "# run:x daily-digest\n1→ collector ✓\n2→ editor ✓\n---end 2026-11-15T07:09:41Z\n"
OUTPUTS = {"bindings/collector/items.json": '[{"title": "Budget vote"}]',
           "bindings/editor/digest.md": "# Digest\n\n## Budget vote\n\nThe council voted.\n",
           "bindings/editor/headline.md": "Council passes the budget\n"}


def write(root: Path, forme: dict | None = None, log: str = LOG, drop: tuple[str, ...] = (),
          **files: str) -> Path:
    run = root / "20261115-070000-digest"
    content = {"root.prose.md": PROGRAM, "sources/collector.prose.md": COLLECTOR,
               "sources/editor.prose.md": EDITOR, "vm.log.md": log,
               "forme.manifest.json": json.dumps(forme or FORME), **OUTPUTS, **files}
    for rel, text in content.items():
        if rel not in drop:
            (run / rel).parent.mkdir(parents=True, exist_ok=True)
            (run / rel).write_text(text)
    return run


def graded(root: Path) -> tuple[list, list, list]:
    """(services with their log status, clause verdicts by service and text, the run's
    score and verdict): what must not change with how the run's files are written."""
    tables, _ = grade_folder(root)
    assert tables["refusals"].is_empty(), tables["refusals"].to_dicts()
    services = tables["services"].sort("position").select("service", "log_status").rows()
    verdicts = (tables["clause_verdicts"]
                .join(tables["clauses"].select("clause_id", "text"), on="clause_id")
                .sort("service", "text").select("service", "text", "verdict").rows())
    scores = tables["run_scores"].select("program", "overall_score", "overall_verdict").rows()
    return services, verdicts, scores


@pytest.fixture
def plain(tmp_path) -> tuple:
    write(tmp_path / "plain")
    found = graded(tmp_path / "plain")
    assert found[0] == [("daily-digest", "completed"), ("collector", "completed"),
                        ("editor", "completed")]
    assert found[2] == [("daily-digest", 100.0, "satisfied")]
    return found


@pytest.mark.parametrize("forme", [
    # the services as the nodes of a graph object (v14 made services of `nodes` and `edges`,
    # and graded neither real one: the run stayed satisfied)
    {**{k: v for k, v in FORME.items() if k not in ("services", "executionOrder")},
     "graph": {"nodes": SERVICES, "edges": [["collector", "editor"]]}},
    # the execution order written as manifest.md writes it, or in another case (v14 made a
    # service of each spelling: "Collector" took the program's digest, scored 80)
    {**FORME, "executionOrder": ["Collector", "Editor"]},
    {**FORME, "executionOrder": ["1. collector", "2. editor"]},
    {**FORME, "executionOrder": ["collector (depends on: caller)", "editor (depends on: x)"]},
    {**FORME, "executionOrder": ["collector ∥ editor"]},
    {**FORME, "executionOrder": ["1 collector", "editor (depends on: caller, collector)"]},
    # returns given as the binding's path (v14 looked for bindings/bindings/editor/…)
    {**FORME, "callerInterface": {"returns": {"digest": "bindings/editor/digest.md"}}},
    # the entry file's path as the program's name (v14 named the program
    # "daily-digest.prose.md")
    {**{k: v for k, v in FORME.items() if k != "program"}, "root": "daily-digest.prose.md"},
], ids=["graph-nodes", "order-case", "order-numbered", "order-notes", "order-parallel",
        "order-note-list", "returns-path", "root-path"])
def test_a_forme_manifest_as_agents_write_it_grades_as_the_plain_one(tmp_path, plain, forme):
    write(tmp_path / "written", forme)
    assert graded(tmp_path / "written") == plain


def test_a_logs_step_lines_win_over_its_headings_whatever_their_case(tmp_path, plain):
    # (v14 took "### Collector — failed" over "1→ collector ✓": errored, scored 40)
    write(tmp_path / "both", log=LOG.replace("---end", "### Collector — failed (portal-down)\n"
                                             "---end"))
    assert graded(tmp_path / "both") == plain


def test_an_unfinished_narrative_log_says_what_its_front_matter_says(tmp_path):
    write(tmp_path, log="---\nstatus: running\n---\n\n### collector — completed\n")
    tables, _ = grade_folder(tmp_path)
    (refusal,) = tables["refusals"].select("reason", "detail").rows()
    # (v14: "does not end with a '---end' line", advice for the other shape)
    assert refusal == ("incomplete-run", "vm.log.md does not show the run ended: its front "
                       "matter says status 'running' (a finished run's says status: "
                       "completed, or failed with an ended_at; or its last line is "
                       "'---end TIMESTAMP')")


def test_snapshots_alone_make_a_folder_era_b(tmp_path):
    write(tmp_path, drop=("root.prose.md", "vm.log.md", "forme.manifest.json"))
    tables, _ = grade_folder(tmp_path)
    assert tables["runs"]["layout"].to_list() == ["prose-b"]
    # (v14 read it as era A: "no program.md")
    assert tables["refusals"].select("reason", "detail").rows() == [
        ("missing-program", "no root.prose.md in the run folder")]
