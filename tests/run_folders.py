"""Write small, real OpenProse run folders for tests (era A layout)."""

from __future__ import annotations

from pathlib import Path

PROGRAM = """---
name: brief
kind: program
services: [researcher, writer]
---

# Brief

### Description
Research a question and write a short brief.

### Ensures
- `report`: a markdown brief for the caller
"""

RESEARCHER = """---
name: researcher
kind: service
---

### Requires
- `question`: what to research

### Ensures
- `findings`: a markdown list of at least 3 findings, each with a source
- if no sources are found: a findings file stating "no results"

### Errors
- `no-results`: nothing relevant was found
"""

WRITER = """---
name: writer
kind: service
---

requires:
- findings: the researcher's findings

ensures:
- summary: a summary of the findings in 2-3 paragraphs
- tldr: one sentence
"""

MANIFEST = """# Manifest: brief

## Caller Interface
requires:
- question: what to research
returns:
- report (from writer): the brief

---

## Graph

### researcher
source: services/researcher.md
workspace: workspace/researcher/
inputs:
- question ← bindings/caller/question.md
outputs:
- (public) findings → bindings/researcher/findings.md
errors:
- no-results

### writer
source: services/writer.md
inputs:
- findings ← bindings/researcher/findings.md
outputs:
- (public) summary → bindings/writer/summary.md
- (public) tldr → bindings/writer/tldr.md
- (public) report → bindings/writer/report.md

---

## Execution Order
1. researcher (depends on: caller)
2. writer (depends on: researcher)
"""

STATE = """# run:{run_id} brief
program: brief
1→ [input] question ✓
2→ researcher ✓
3→ writer ✓
---end 2026-11-12T03:20:11Z
"""

BINDINGS = {
    "bindings/caller/question.md": "kind: input\nsource: caller\n---\nWhy is the sky blue?\n",
    "bindings/researcher/findings.md": "- Rayleigh scattering (src: a)\n- Ozone (src: b)\n"
                                       "- Dust (src: c)\n",
    "bindings/writer/summary.md": "First paragraph.\n\nSecond paragraph.\n",
    "bindings/writer/tldr.md": "Short light scatters more.\n",
    "bindings/writer/report.md": "# Brief\n\nThe sky is blue because of scattering.\n",
}


def write_run(root: Path, run_id: str = "20261112-031502-abc123", *, drop: tuple[str, ...] = (),
              files: dict[str, str] | None = None) -> Path:
    """Write a complete run folder under `root`; `drop` removes paths, `files` adds/overrides."""
    run = root / run_id
    content = {
        "program.md": PROGRAM, "manifest.md": MANIFEST, "services/researcher.md": RESEARCHER,
        "services/writer.md": WRITER, "state.md": STATE.format(run_id=run_id), **BINDINGS,
        **(files or {}),
    }
    for rel, text in content.items():
        if any(rel == d or rel.startswith(d.rstrip("/") + "/") for d in drop):
            continue
        path = run / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return run
