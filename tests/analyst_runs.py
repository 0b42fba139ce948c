"""Small, realistic OpenProse run folders for the analyst tests (results, SQL, notebook).

Two programs over three days, outputs of very different lengths (so a word-count rule flips
some clauses and not others), one errored service on its degraded path, and two runs that
must be refused (no manifest; no '---end' line).
"""

from __future__ import annotations

from pathlib import Path

TRIAGE_PROGRAM = """\
---
name: ticket-triage
kind: program
services: [classifier, responder]
---

# Ticket Triage

### Ensures

- `reply`: a reply to the customer of at least 40 words that names the ticket id

### Errors

- `no-macro`: no reply macro fits the ticket
"""

CLASSIFIER = """\
---
name: classifier
kind: service
---

# Classifier

### Ensures

- `label`: one of billing, outage, account
- `rationale`: two or three sentences explaining the label

### Errors

- `unreadable-ticket`: the ticket text could not be parsed
"""

RESPONDER = """\
---
name: responder
kind: service
---

# Responder

### Ensures

- `reply`: a polite reply of at least 40 words
- `macro`: the macro name used
- if no macro fits: a handoff note for a human agent

### Errors

- `no-macro`: no reply macro fits the ticket
"""

TRIAGE_MANIFEST = """\
# Manifest: ticket-triage

---

## Caller Interface

requires:
- ticket-text (from caller): the raw customer email

returns:
- reply (from responder): the customer-facing reply

---

## Graph

### classifier

source: services/classifier.md
workspace: workspace/classifier/

inputs:
- ticket-text ← bindings/caller/ticket-text.md

outputs:
- (public) label → bindings/classifier/label.md
- (public) rationale → bindings/classifier/rationale.md

errors:
- unreadable-ticket

---

### responder

source: services/responder.md
workspace: workspace/responder/

inputs:
- label ← bindings/classifier/label.md
- ticket-text ← bindings/caller/ticket-text.md

outputs:
- (public) reply → bindings/responder/reply.md
- (public) macro → bindings/responder/macro.md
- (public) handoff → bindings/responder/handoff.md

errors:
- no-macro

---

## Execution Order

1. classifier (depends on: caller)
2. responder (depends on: classifier)
"""

RESEARCH_PROGRAM = """\
---
name: brief-writer
kind: program
services: [researcher, writer]
---

# Brief Writer

### Ensures

- `brief`: a markdown brief of 120 to 300 words that answers the question first
"""

RESEARCHER = """\
---
name: researcher
kind: service
---

### Ensures

- `findings`: at least 3 numbered findings, each with its source
- `sources`: a JSON list of the sources consulted

### Errors

- `no-results`: nothing usable was found
"""

WRITER = """\
---
name: writer
kind: service
---

### Ensures

- `brief`: a markdown brief of 120 to 300 words that answers the question first
- `tldr`: exactly 3 bullet points
"""

RESEARCH_MANIFEST = """\
# Manifest: brief-writer

---

## Caller Interface

requires:
- question (from caller): the research question

returns:
- brief (from writer): the brief

---

## Graph

### researcher

source: services/researcher.md
workspace: workspace/researcher/

inputs:
- question ← bindings/caller/question.md

outputs:
- (public) findings → bindings/researcher/findings.md
- (public) sources → bindings/researcher/sources.json

errors:
- no-results

---

### writer

source: services/writer.md
workspace: workspace/writer/

inputs:
- findings ← bindings/researcher/findings.md

outputs:
- (public) brief → bindings/writer/brief.md
- (public) tldr → bindings/writer/tldr.md

---

## Execution Order

1. researcher (depends on: caller)
2. writer (depends on: researcher)
"""

LONG_REPLY = (
    "Hello Dana, thank you for writing to us about ticket ZD-{n}. We looked at your account "
    "and found that the duplicate charge from last week came from a retry in our payment "
    "system. We have refunded it in full; the money should be back on your card within five "
    "working days. Nothing else on the account needs your attention. Kind regards, Support."
)
RATIONALE = ("The customer reports a second charge for the same invoice. Duplicate charges are "
             "billing problems. Nothing in the text points to an outage or a locked account.")
FINDINGS = "\n".join(
    f"{i}. Finding {i}: four-day weeks kept output flat in trial {i} (source: report {i})."
    for i in range(1, 4))
BRIEF = " ".join(["Four-day weeks kept output flat in most published trials."] * 16)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _state(run_id: str, program: str, steps: list[str], ended: str | None) -> str:
    lines = [f"# run:{run_id} {program}", f"program: demo/{program}"]
    lines += [f"{i}→ {step}" for i, step in enumerate(steps, 1)]
    if ended:
        lines.append(f"---end {ended}")
    return "\n".join(lines) + "\n"


def triage_run(root: Path, run_id: str, *, reply: str, label: str = "billing",
               macro: str = "refund-duplicate", errored: bool = False,
               manifest: bool = True, ended: bool = True) -> None:
    day = f"{run_id[:4]}-{run_id[4:6]}-{run_id[6:8]}"
    files = {
        "program.md": TRIAGE_PROGRAM,
        "services/classifier.md": CLASSIFIER,
        "services/responder.md": RESPONDER,
        "bindings/caller/ticket-text.md": "kind: input\nsource: caller\n---\nI was charged twice.",
        "bindings/classifier/label.md": label,
        "bindings/classifier/rationale.md": RATIONALE,
    }
    if manifest:
        files["manifest.md"] = TRIAGE_MANIFEST
    if errored:
        files["workspace/responder/__error.md"] = "# Error: no-macro\n\nNo macro matched.\n"
        files["bindings/responder/handoff.md"] = "Needs a human: refund policy exception."
        steps = ["[input] ticket-text ✓", "classifier ✓", "responder ✗ no-macro"]
    else:
        files["bindings/responder/reply.md"] = reply
        files["bindings/responder/macro.md"] = macro
        steps = ["[input] ticket-text ✓", "classifier ✓", "responder ✓"]
    files["state.md"] = _state(run_id, "ticket-triage", steps,
                               f"{day}T10:00:00Z" if ended else None)
    _write(root / run_id, files)


def research_run(root: Path, run_id: str, *, tldr: str, sources: str = '["report 1"]') -> None:
    day = f"{run_id[:4]}-{run_id[4:6]}-{run_id[6:8]}"
    _write(root / run_id, {
        "program.md": RESEARCH_PROGRAM,
        "manifest.md": RESEARCH_MANIFEST,
        "services/researcher.md": RESEARCHER,
        "services/writer.md": WRITER,
        "bindings/caller/question.md": "kind: input\nsource: caller\n---\nDo four-day weeks work?",
        "bindings/researcher/findings.md": FINDINGS,
        "bindings/researcher/sources.json": sources,
        "bindings/writer/brief.md": BRIEF,
        "bindings/writer/tldr.md": tldr,
        "state.md": _state(run_id, "brief-writer", ["[input] question ✓", "researcher ✓",
                                                    "writer ✓"], f"{day}T12:00:00Z"),
    })


def write_sample_runs(root: Path) -> Path:
    """Write 11 run folders under `root`: 9 gradable, 2 to refuse. Returns `root`."""
    long = LONG_REPLY.format
    triage_run(root, "20261102-090000-aa1", reply=long(n=1))
    # every output of this run is long enough for the stricter rule: nothing of it may move
    triage_run(root, "20261102-093000-Bb_2", reply=long(n=2), label="billing (duplicate charge "
               "on the March invoice, refund due)", macro="refund-duplicate: the standard "
               "refund for a card charged twice")
    triage_run(root, "20261103-101500-c3", reply="Thanks, we are on it.")
    triage_run(root, "20261103-111500-dd4", reply=long(n=4), errored=True)
    triage_run(root, "20261104-080000-e5", reply=long(n=5), macro="")
    triage_run(root, "20261104-081500-ff6", reply=long(n=6), ended=False)
    triage_run(root, "20261104-083000-g7", reply=long(n=7), manifest=False)
    five_words = "- kept output\n- cut costs\n- raised morale"
    research_run(root, "20261103-120000-r1", tldr=five_words)
    research_run(root, "20261103-130000-r2", tldr="- Output stayed flat across every trial "
                 "we read\n- Costs fell slightly\n- Staff were happier", sources="[]")
    research_run(root, "20261104-120000-r3", tldr=five_words)
    research_run(root, "20261104-140000-r4", tldr="- flat")
    return root


MIN_WORDS = 8

# A user grader built with the public API: the built-in checks with ONE rule changed, the
# `output_published` check replaced by a stricter one that also wants at least MIN_WORDS words.
STRICT_GRADER = """\
import polars as pl

from pipeline.checks import Check, Grader, builtin_checks, check

MIN_WORDS = {min_words}


@check("output_substantial")
def output_substantial() -> Check:
    words = pl.col("binding_text").fill_null("").str.count_matches(r"\\S+")
    published = {{c.name: c for c in builtin_checks()}}["output_published"]
    return Check(
        precondition=True,
        applies=published.applies,
        outcome=pl.when(pl.col("has_output") & (words >= MIN_WORDS)).then(pl.lit("passed"))
        .otherwise(pl.lit("failed")),
        detail=pl.format("output `{{}}` is published with at least {{}} words",
                         pl.col("output_name"), pl.lit(MIN_WORDS)),
        evidence=pl.format("{{}} words", words),
        confidence=pl.lit(90),
    )


grader = Grader({grader_id!r}, [output_substantial() if c.name == "output_published" else c
                                for c in builtin_checks()])
"""


def write_strict_grader(path: Path, grader_id: str) -> Path:
    path.write_text(STRICT_GRADER.format(grader_id=grader_id, min_words=MIN_WORDS))
    return path


BASE_ID = "analyst.contract.grader/v1"
HEAD_ID = "analyst.contract.grader/v2"


def grade(runs: Path, results: Path, *args: str):
    """`rungrade grade RUNS --out RESULTS ARGS…` through the real command line, in process;
    the CLI result (its output: the `--json` summary)."""
    from typer.testing import CliRunner

    from pipeline.cli import app

    result = CliRunner().invoke(app, ["grade", str(runs), "--out", str(results),
                                      "--workers", "1", "--json", *args])
    assert result.exit_code == 0, result.output
    return result


def grade_two_versions(tmp: Path) -> dict[str, Path]:
    """Grade the sample runs under BASE_ID (built-in checks) and then under HEAD_ID (the
    strict grader). Returns the runs, results and grader-file paths."""
    runs = write_sample_runs(tmp / "runs")
    results = tmp / "results"
    grade(runs, results, "--grader-id", BASE_ID)
    strict = write_strict_grader(tmp / "strict_grader.py", HEAD_ID)
    grade(runs, results, "--grader", str(strict))
    return {"runs": runs, "results": results, "grader": strict}
