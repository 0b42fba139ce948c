"""vm.log.md: the era-B execution log, read into the same `StateLog` as state.md.

Two shapes exist: the state.md step format (`3→ researcher ✓`, `---end TIMESTAMP`) and a
markdown narrative with YAML front matter (`status:`, `ended_at:`) and one `### service —
status` heading per service. Both are read; the step format wins where they overlap.
"""

from __future__ import annotations

import re

from .contract import front_matter_text, normalise_name, scalar_text, split_front_matter
from .state_log import StateLog, Step, error_and_note, parse_state_log

_DONE = {"completed", "complete", "succeeded", "success", "done", "ok"}
_FAILED = {"failed", "error", "errored"}
_SPACES = re.compile(r"\s*")
_DASHES = re.compile(r"[—–-]*")
_LETTERS = re.compile(r"[A-Za-z]*")
_NAME_STOP = re.compile(r"[`—–(]")
_NAME_END = re.compile(r"\s+|`")  # where a name may end: before spaces, or at a backtick
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
    return scalar_text(value)  # (a list or a mapping is no time)


def _skip(pattern: re.Pattern, text: str, at: int) -> int:
    return pattern.match(text, at).end()


def _status_at(line: str, at: int) -> tuple[str, str | None] | None:
    r"""(status word, note or None) when `line[at:]` is `` `?\s+[—–-]+\s+WORD`` and then nothing
    or `(note)`: what follows the name in `### name — status (note)`."""
    at += line.startswith("`", at)
    dashes = _skip(_SPACES, line, at)
    spaces = _skip(_DASHES, line, dashes)
    word = _skip(_SPACES, line, spaces)
    end = _skip(_LETTERS, line, word)
    if at == dashes or dashes == spaces or spaces == word or word == end:
        return None
    note = _skip(_SPACES, line, end)  # (only spaces, `(` or the end may follow: `\b` holds)
    if note == len(line):
        return line[word:end], None
    if line[note] != "(" or not line.endswith(")") or note == len(line) - 1:
        return None
    return line[word:end], line[note + 1:-1]


def _heading(line: str) -> tuple[str, str, str | None] | None:
    r"""`### name — status (note)` in a stripped line as (name, status, note), or None.

    The same as ``^###\s+`?([^`—–(]+?)`?\s+[—–-]+\s+([A-Za-z]+)\b\s*(?:\((.*)\))?\s*$``, whose
    lazy name tried the rest from each character, and the rest's `\s+` every split of a run of
    spaces: cubic in a long run's length. Here the rest is tried once per run of spaces.
    """
    if not line.startswith("###"):
        return None
    start = _skip(_SPACES, line, 3)
    if start == 3:
        return None
    # The name starts after the spaces (and a backtick), as far as it can go without a stop.
    first = start + line.startswith("`", start)
    if first < len(line) and not _NAME_STOP.match(line, first):
        stop = m.start() if (m := _NAME_STOP.search(line, first)) else len(line)
        for end in _NAME_END.finditer(line, first + 1):
            if end.start() > stop:
                break
            if found := _status_at(line, end.start()):
                return line[first:end.start()], *found
    # Else `\s+` gives back spaces: a name of one space, then the rest at `start` (a backtick
    # there) or from inside the spaces (`###   - done` is a service named " ").
    if start - 3 >= 2 and (found := _status_at(line, start)):
        return line[start - 1:start], *found
    if start - 3 >= 3 and (found := _status_at(line, start - 1)):
        return line[start - 2:start - 1], *found
    return None


def parse_vm_log(text: str) -> StateLog:
    """Parse vm.log.md. Never raises on content; a run is complete when the step format ends
    with `---end` or the front matter says it finished (status completed/succeeded, or
    failed with an `ended_at`)."""
    front, body, _ = split_front_matter(text)
    log = parse_state_log(body)
    # (scalars only, as `front_matter_text` reads them: str() of a few hundred bytes of YAML
    # aliases nested in lists expands to gigabytes)
    status = (front_matter_text(front, "status") or "").lower()
    ended = _timestamp(front.get("ended_at")) or _timestamp(front.get("endedAt"))
    # a run that ended in failure ended too, like `---error` then `---end` in state.md
    if not log.completed and (status in _DONE or (status in _FAILED and ended)):
        log.completed = True
        log.ended_at = ended
        if status in _FAILED:
            log.errors.append(front_matter_text(front, "error") or status)
    if log.run_id is None:
        log.run_id = front_matter_text(front, "run_id")
    if log.program is None:
        log.program = front_matter_text(front, "system") or front_matter_text(front, "program")
    known = {normalise_name(s.name) for s in log.steps}  # (names compare as names do)
    narrative = False  # (a `### service — status` heading read)
    for line in body.splitlines():
        m = _heading(line.strip())
        if not m or normalise_name(m[0].strip()) in known:
            continue
        state = _STATUS.get(m[1].lower())
        if state is None:
            continue
        note = (m[2] or "").strip() or None
        log.steps.append(Step(str(len(log.steps) + 1), m[0].strip(), None, state,
                              error_and_note(note)[0] if state == "errored" and note
                              else None, note))
        narrative = True
    if not log.completed and (front or narrative):
        # why a narrative log does not show the run ended: what its front matter says
        log.unended = (f"its front matter says status '{status}'" if status else
                       "its front matter gives no status") + (
            ", and no ended_at" if status in _FAILED and not ended else "")
    return log
