"""What a judge answers, and how an answer is read: strictly, never trusted as code.

An answer is one JSON object: `outcome` (passed | failed | undecided), `confidence` (0–100),
`evidence` (text quoted from the output) and `rationale`. Anything else (not JSON, another
outcome, a confidence out of range) is malformed: the request stays undecided with that reason.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from ..checks.grader import EVIDENCE_CAP

OUTCOMES = ("passed", "failed", "undecided")
RATIONALE_CAP = 1000


@dataclass(frozen=True)
class Answer:
    outcome: str
    confidence: int
    evidence: str
    rationale: str


@dataclass(frozen=True)
class Failure:
    """A request the judge did not answer; `retryable` failures are asked again."""

    reason: str
    retryable: bool = True


class MalformedAnswer(ValueError):
    """An answer that is not the agreed JSON object."""


def answer_from(obj: object) -> Answer:
    """The Answer in a decoded JSON object; raises MalformedAnswer saying what is wrong."""
    if not isinstance(obj, dict):
        raise MalformedAnswer(f"expected a JSON object, got {type(obj).__name__}")
    outcome = obj.get("outcome")
    if not isinstance(outcome, str) or outcome.strip().lower() not in OUTCOMES:
        raise MalformedAnswer(f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}")
    confidence = obj.get("confidence")
    if (isinstance(confidence, bool) or not isinstance(confidence, int | float)
            or (isinstance(confidence, float) and math.isnan(confidence))
            or not 0 <= confidence <= 100):
        raise MalformedAnswer(f"confidence must be a number from 0 to 100, got {confidence!r}")
    texts = {}
    for name in ("evidence", "rationale"):
        value = obj.get(name, "")
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise MalformedAnswer(f"{name} must be a string, got {type(value).__name__}")
        texts[name] = value.strip()
    return Answer(outcome.strip().lower(), round(confidence), texts["evidence"][:EVIDENCE_CAP],
                  texts["rationale"][:RATIONALE_CAP])


def _snippet(text: str, size: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= size else text[:size] + "…"


def answers_from_lines(text: str, ids: set[str]) -> tuple[dict[str, Answer | Failure], list[str]]:
    """Answers keyed by request id from JSON Lines output, and notes on lines not understood.

    A line naming a known id but malformed becomes a Failure for that id; an id answered
    again with the same outcome keeps its first answer, and with another outcome becomes a
    Failure (the judge contradicted itself: which to keep would depend on the lines' order);
    lines with no known id are only noted.
    """
    found: dict[str, Answer | Failure] = {}
    notes: list[str] = []
    # (lines end at "\n" alone: JSON written with ensure_ascii off holds U+2028 and U+0085
    # raw, at which `splitlines` cut a valid answer in two)
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            notes.append(f"not JSON: {_snippet(line)!r}")
            continue
        rid = obj.get("id") if isinstance(obj, dict) else None
        if not isinstance(rid, str) or rid not in ids:
            notes.append(f"no known request id: {_snippet(line)!r}")
            continue
        try:
            answer: Answer | Failure = answer_from(obj)
        except MalformedAnswer as exc:
            answer = Failure(f"judge answer malformed: {exc}")
        first = found.setdefault(rid, answer)
        if (first is not answer and isinstance(first, Answer) and isinstance(answer, Answer)
                and first.outcome != answer.outcome):
            found[rid] = Failure(f"judge answered this request twice, differently: "
                                 f"{first.outcome}, then {answer.outcome}")
    return found, notes


OPENING_FENCE = re.compile(r"```[a-zA-Z]*\s*")


def unfenced(reply: str) -> str:
    r"""A reply without the code fence around it: an opening ```` ```lang ```` and a closing
    ```` ``` ````, with the spaces next to them (what `^```[a-zA-Z]*\s*|\s*```$` removed from
    the stripped reply, without trying that closing part from each space of a long run)."""
    text = reply.strip()
    if opening := OPENING_FENCE.match(text):
        text = text[opening.end():]
    return text[:-3].rstrip() if text.endswith("```") else text


def answer_from_text(content: str) -> Answer:
    """The Answer in a model's reply: the first JSON object in it, code fences allowed."""
    text = unfenced(content)
    start = text.find("{")
    if start < 0:
        raise MalformedAnswer(f"no JSON object in the reply: {_snippet(content)!r}")
    try:
        obj, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError as exc:
        raise MalformedAnswer(f"reply is not valid JSON ({exc.msg}): "
                              f"{_snippet(content)!r}") from exc
    return answer_from(obj)
