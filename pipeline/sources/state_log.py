"""state.md: the append-only execution log of a run.

A run is complete only when its last non-empty line starts with `---end `. Each service's
status is the last mark the log gives it: `completed` (✓ or ok), `errored` (✗ name),
`terminated` (⊘), or `started` when a step line carries no mark yet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_STEP = re.compile(r"^\s*(\d+[a-z]*)\s*(?:→|->)\s*(.*)$")
_TAG = re.compile(r"^\[([\w-]+)\]\s*(.*)$")
# (?<!\s): a match starts where a run of whitespace does. The same matches, in linear time:
# searched from every space of a long run, `\s+` took the run again each time (a state log
# line of 400,000 spaces took minutes, and held its worker that long)
_MARK = re.compile(r"(?<!\s)\s+(✓|✗|⊘|ok\b|OK\b)\s*(.*)$")
_HEADER = re.compile(r"^#\s*run:\s*(\S+)\s*(.*)$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?\s*")


@dataclass
class Step:
    step: str
    name: str
    tag: str | None
    status: str
    error_name: str | None
    note: str | None


@dataclass
class StateLog:
    run_id: str | None = None
    program: str | None = None
    steps: list[Step] = field(default_factory=list)
    completed: bool = False
    ended_at: str | None = None
    errors: list[str] = field(default_factory=list)
    resumed: int = 0
    last_line: str = ""  # its last non-empty line, stripped (complete: '---end TIMESTAMP')
    unended: str | None = None  # a narrative vm.log.md: why it does not show the run ended

    def service_status(self) -> dict[str, Step]:
        """The last step seen for each service (input and vm-action lines excluded)."""
        latest: dict[str, Step] = {}
        for step in self.steps:
            if step.tag is None or step.tag == "eval":
                latest[step.name] = step
        return latest


def _parse_step(number: str, rest: str) -> Step | None:
    rest = rest.strip()
    if rest.startswith("∥") or rest.startswith("||"):
        return None  # parallel fan-out markers name no single service
    tag = None
    m_tag = _TAG.match(rest)
    if m_tag:
        tag, rest = m_tag.group(1).lower(), m_tag.group(2)
    m_mark = _MARK.search(rest)
    status, error_name, note = "started", None, None
    if m_mark:
        mark, tail = m_mark.group(1), m_mark.group(2).strip()
        rest = rest[: m_mark.start()]
        if mark == "✗":
            status = "errored"
            error_name, note = error_and_note(tail)
        else:
            status = "terminated" if mark == "⊘" else "completed"
            note = tail or None
    name = rest.strip().strip("`")
    name = re.split(r"(?<!\s)\s+\(", name, maxsplit=1)[0].strip()
    if not name:
        return None
    return Step(number, name, tag, status, error_name, note)


# Where an error's name ends and a note on it begins: a parenthesis, a dash set apart by
# spaces, or a colon ("no-results (0 hits)", "no-results — search returned 0 hits"). Tried
# only where a run of spaces starts (the look-behind): linear in a long run of them.
_ERROR_NOTE = re.compile(r"(?<!\s)(?:\s*\(|\s+[—–-]+\s|\s*:\s)")


def error_and_note(text: str) -> tuple[str | None, str | None]:
    """(the error's name, the note after it) of a log's words on an error: v18 took
    "no-results — search returned 0 hits" whole for the name, which no declared error then
    matched (the service's clauses held against it)."""
    head = _ERROR_NOTE.split(text, maxsplit=1)[0]
    return head.strip() or None, text[len(head):].strip().lstrip("—–-:").strip() or None


def parse_state_log(text: str) -> StateLog:
    """Parse state.md. Never raises on content; unknown lines are skipped."""
    log = StateLog()
    last = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        last = stripped
        header = _HEADER.match(stripped)
        if header and log.run_id is None:
            log.run_id = header.group(1)
            log.program = header.group(2).strip() or None
            continue
        if stripped.startswith("program:") and log.program is None:
            log.program = stripped.split(":", 1)[1].strip() or None
            continue
        if stripped.startswith("---error"):
            # `---error TIMESTAMP msg`: the message alone (its time's digits name nothing)
            log.errors.append(_TIMESTAMP.sub("", stripped[len("---error"):].strip(), count=1))
            continue
        if stripped.startswith("---resume"):
            log.resumed += 1
            continue
        m = _STEP.match(stripped)
        if m:
            step = _parse_step(m.group(1), m.group(2))
            if step:
                log.steps.append(step)
    log.last_line = last
    if last.startswith("---end "):
        log.completed = True
        log.ended_at = last[len("---end"):].strip() or None
    return log


@dataclass
class ErrorFile:
    name: str | None
    detail: str


def parse_error_file(text: str) -> ErrorFile:
    """Parse workspace/{service}/__error.md: `# Error: name` and a free-text detail."""
    name = None
    detail_lines = []
    for line in text.splitlines():
        # (what `^#\s*Error\s*:\s*(.+?)\s*$` matched, in linear time: its lazy group tried
        # every end in a long run of spaces)
        m = re.match(r"^#\s*Error\s*:(.*)$", line, re.IGNORECASE)
        if m and m.group(1) and name is None:  # (all blank: the old group was its last char)
            name = (m.group(1).strip() or m.group(1)[-1]).strip("` ")
        else:
            detail_lines.append(line)
    return ErrorFile(name, "\n".join(detail_lines).strip())
