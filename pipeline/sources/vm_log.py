"""vm.log.md: the era-B execution log, read into the same `StateLog` as state.md.

Two shapes exist: the state.md step format (`3→ researcher ✓`, `---end TIMESTAMP`) and a
markdown narrative with YAML front matter (`status:`, `ended_at:`) and one `### service —
status` heading per service. Both are read; the step format wins where they overlap.
"""

from __future__ import annotations

import re

from .contract import split_front_matter
from .state_log import StateLog, Step, parse_state_log

_DONE = {"completed", "complete", "succeeded", "success", "done", "ok"}
_FAILED = {"failed", "error", "errored"}
_HEADING = re.compile(r"^###\s+`?([^`—–(]+?)`?\s+[—–-]+\s+([A-Za-z]+)\b\s*(?:\((.*)\))?\s*$")
_STATUS = {"completed": "completed", "complete": "completed", "succeeded": "completed",
           "ok": "completed", "done": "completed", "failed": "errored", "errored": "errored",
           "error": "errored", "skipped": "terminated", "terminated": "terminated",
           "deferred": "terminated", "started": "started", "running": "started"}


def _timestamp(value) -> str | None:
    # YAML turns an unquoted ISO time into a datetime; keep the log's own spelling
    if value is None or value == "":
        return None
    if hasattr(value, "isoformat"):
        return value.isoformat().replace("+00:00", "Z")
    return str(value)


def parse_vm_log(text: str) -> StateLog:
    """Parse vm.log.md. Never raises on content; a run is complete when the step format ends
    with `---end` or the front matter says it finished (status completed/succeeded, or
    failed with an `ended_at`)."""
    front, body, _ = split_front_matter(text)
    log = parse_state_log(body)
    status = str(front.get("status") or "").strip().lower()
    ended = front.get("ended_at") or front.get("endedAt")
    # a run that ended in failure ended too, like `---error` then `---end` in state.md
    if not log.completed and (status in _DONE or (status in _FAILED and ended)):
        log.completed = True
        log.ended_at = _timestamp(ended)
        if status in _FAILED:
            log.errors.append(str(front.get("error") or status))
    if log.run_id is None and front.get("run_id"):
        log.run_id = str(front["run_id"])
    if log.program is None:
        program = front.get("system") or front.get("program")
        log.program = str(program) if program else None
    known = {s.name for s in log.steps}
    for line in body.splitlines():
        m = _HEADING.match(line.strip())
        if not m or m.group(1).strip() in known:
            continue
        state = _STATUS.get(m.group(2).lower())
        if state is None:
            continue
        note = (m.group(3) or "").strip() or None
        log.steps.append(Step(str(len(log.steps) + 1), m.group(1).strip(), None, state,
                              note if state == "errored" else None, note))
    return log
