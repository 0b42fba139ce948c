"""manifest.md: the wiring graph of a run (services, their sources, outputs, errors, order).

Real manifests drift from the template (ASCII arrows, annotated headings, extra sections), so
the parser reads what it recognises and ignores the rest rather than failing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .contract import normalise_name, parse_item_text

# (split at the first arrow from a run of spaces' start, as `\s*(?:→|->|=>)\s*` did without
# trying the rest of a long run from each of its spaces: quadratic)
_ARROW_RIGHT = re.compile(r"(?<!\s)\s*(?:→|->|=>)\s*")
_ARROW_LEFT = re.compile(r"(?<!\s)\s*(?:←|<-|<=)\s*")
# (the same matches as `^([A-Za-z][\w ]*?)\s*:`, whose lazy name tried every end in a long run of
# spaces: quadratic; the name cannot end with a space, `\s*` takes those)
_KEY = re.compile(r"^([A-Za-z](?:[\w ]*\w)?)\s*:\s*(.*)$")
_NAME_END = re.compile(r"(?<!\s)\s*:\s")  # "name: what it is" (from a run of spaces' start)
_ITEM = re.compile(r"^\s*[-*+]\s+(.*)$")
_ORDER = re.compile(r"^\s*(\d+)[.)]\s+([^(]*)")  # "2. critic, fact-checker (parallel)"
# the services of one step, side by side, or of a chain on one line (`a → b → c`)
_ORDER_PARTS = re.compile(r"[,∥&→]|\|\||->")
_SPACES = re.compile(r"\s*")
_HEADING_LEAD = re.compile(r"^(?:\d+[.)]\s+)?(?:service:\s*)?", re.IGNORECASE)
_NAME_STOP = re.compile(r"[`(:]")
_SOURCE_STOP = re.compile(r"[`)]")


@dataclass(frozen=True)
class Output:
    name: str
    target: str | None
    public: bool


@dataclass
class ServiceWiring:
    name: str
    heading: str
    source: str | None = None
    workspace: str | None = None
    inputs: list[tuple[str, str | None]] = field(default_factory=list)
    outputs: list[Output] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    delegates: list[str] = field(default_factory=list)


_LISTED = ("inputs", "outputs", "errors", "delegates")


@dataclass
class Manifest:
    program: str | None
    services: list[ServiceWiring]
    order: list[str]
    returns: dict[str, str | None]  # caller-facing output -> service that produces it
    requires: list[str]

    def service(self, name: str) -> ServiceWiring | None:
        return next((s for s in self.services if s.name == name), None)


def _strip_name(text: str) -> str:
    return text.strip().strip("`*").strip()


def _parse_output(text: str) -> Output:
    public = False
    body = text.strip()
    if body.lower().startswith("(public)"):
        public, body = True, body[len("(public)"):].strip()
    parts = _ARROW_RIGHT.split(body, maxsplit=1)
    target = parts[1].strip().strip("`") if len(parts) == 2 else None
    if target and target.startswith("bindings/"):
        public = True
    return Output(_strip_name(parts[0]), target, public)


def _parse_input(text: str) -> tuple[str, str | None]:
    parts = _ARROW_LEFT.split(text, maxsplit=1)
    return _strip_name(parts[0]), parts[1].strip() if len(parts) == 2 else None


def _skip_spaces(text: str, at: int) -> int:
    return _SPACES.match(text, at).end()


def _closes(value: str, at: int) -> bool:
    """`value[at:]` is `` `?)`` then nothing, or `:` and anything."""
    at += value.startswith("`)", at)
    return value.startswith(")", at) and value[at + 1:].lstrip()[:1] in ("", ":")


def returned_from(value: str) -> tuple[str, str] | None:
    r"""`name (from service): what` as (name, service), each to strip, or None.

    The same groups as ``^`?([^`(:]+?)`?\s*\(from\s+`?([^`)]+?)`?\)\s*(?::\s*(.*))?$`` on a
    line, whose lazy groups tried the rest from each space of a long run: quadratic. The
    service is what the `\s+` after `(from` leaves; when that is nothing, `\s+` gives one
    space back (`(from  )` names the service " ").
    """
    first = 1 if value.startswith("`") else 0
    stop = m.start() if (m := _NAME_STOP.search(value, first)) else len(value)
    if stop == first or stop == len(value) or value[stop] == ":":
        return None
    opening = _skip_spaces(value, stop + 1) if value[stop] == "`" else stop
    if not value.startswith("(from", opening):
        return None
    after = opening + len("(from")
    source = _skip_spaces(value, after)
    if source == after:
        return None
    name = value[first:stop]
    start = source + value.startswith("`", source)
    if start < len(value) and value[start] not in "`)":
        end = m.start() if (m := _SOURCE_STOP.search(value, start)) else len(value)
        if end < len(value) and _closes(value, end):
            return name, value[start:end]
    if source - after >= 2 and source < len(value) and _closes(value, source):
        return name, value[source - 1:source]
    return None


def _parse_service_block(heading: str, lines: list[str]) -> ServiceWiring:
    # `### researcher (patch loop)`, `### 1. researcher`, `### Service: researcher: why`
    named = _HEADING_LEAD.sub("", heading.strip())
    name = _strip_name(re.split(r"(?<!\s)(?:\s+[(\[—–]|\s+-\s|:\s)", named, maxsplit=1)[0])
    svc = ServiceWiring(name=name, heading=heading.strip())
    key = None
    for line in lines:
        m_item = _ITEM.match(line)
        if m_item and key:
            value = m_item.group(1).strip()
            if value.lower().startswith("(none"):
                continue
            if key == "inputs":
                svc.inputs.append(_parse_input(value))
            elif key == "outputs":
                svc.outputs.append(_parse_output(value))
            elif key == "errors":
                # named as a contract's item is (`` `no-results` — why ``), else up to ": "
                svc.errors.append(parse_item_text(value)[0]
                                  or _strip_name(_NAME_END.split(value, maxsplit=1)[0]))
            elif key == "delegates":
                svc.delegates.append(_strip_name(value))
            continue
        m_key = _KEY.match(line.strip())
        if m_key and not line[:1].isspace():
            key = m_key.group(1).strip().lower()
            value = m_key.group(2).strip().strip("`")
            if key == "source":
                svc.source = value or None
            elif key == "workspace":
                svc.workspace = value or None
            elif value and not value.lower().startswith("(none") and key in ("inputs", "outputs"):
                # One-line forms such as `outputs: report → bindings/x/report.md`.
                if key == "outputs":
                    svc.outputs.append(_parse_output(value))
                else:
                    svc.inputs.append(_parse_input(value))
    return svc


def _merge_repeated(services: list[ServiceWiring]) -> list[ServiceWiring]:
    """One wiring per service name: a repeated `### name` block adds to the first one.

    A service listed twice must not be graded twice, so later blocks only fill in what the
    first left empty and extend its lists with what they do not hold yet (a set of what each
    list holds keeps that linear in the number of blocks and entries).
    """
    merged: dict[str, ServiceWiring] = {}
    held: dict[str, dict[str, set]] = {}
    for svc in services:
        first = merged.setdefault(svc.name, svc)
        if first is svc:
            continue
        if svc.name not in held:  # (its sets are built at its first repeat only)
            held[svc.name] = {key: set(getattr(first, key)) for key in _LISTED}
        first.source = first.source or svc.source
        first.workspace = first.workspace or svc.workspace
        for key in _LISTED:
            have = held[svc.name][key]
            new = [entry for entry in getattr(svc, key) if entry not in have]
            getattr(first, key).extend(new)
            have.update(new)
    return list(merged.values())


_CONTRACT_PATH = re.compile(r"[\w./-]+\.md(?:#[\w-]+)?")


def _listed_service(item: str) -> ServiceWiring:
    """A service of a `## Services` list: its name, then what it is, and the path of its
    contract where the item names one (`- writer (source: services/writer.md)`)."""
    named = re.split(r"(?<!\s)(?:\s*[(\[—–:]|\s+-\s)", item.strip(), maxsplit=1)[0]
    path = _CONTRACT_PATH.search(item[len(named):])
    return ServiceWiring(name=_strip_name(named), heading=item.strip(),
                         source=path.group(0) if path else None)


def _titled_program(title: str) -> str | None:
    """The program a manifest's title names: what follows `Manifest:` (`Manifest — x`,
    `Manifest for x` too), or a title without that word whole; None for `Manifest` alone
    (v19 took "Manifest" for the program's name, over the log's)."""
    title = title.strip()
    if ":" in title:
        return title.split(":", 1)[1].strip() or None
    rest = re.sub(r"(?i)^manifest(?:\s*[—–]\s*|\s+-\s+|\s+(?:for|of)\s+|$)", "", title).strip()
    return rest or None


def parse_manifest(text: str) -> Manifest:
    """Parse manifest.md. Never raises on content; unknown sections are skipped."""
    program = None
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("# ") and program is None:
            program = _titled_program(line[2:])
            continue
        if line.startswith("## "):
            sections.append((line[3:].strip().lower(), []))
        elif sections:
            sections[-1][1].append(line)
    services: list[ServiceWiring] = []
    order: list[str] = []
    returns: dict[str, str | None] = {}
    requires: list[str] = []
    for title, lines in sections:
        if title.startswith("graph") or title.startswith("services") or title.startswith("wiring"):
            heading, block = None, []
            for line in lines:
                if line.startswith("### "):
                    if heading is not None:
                        services.append(_parse_service_block(heading, block))
                    heading, block = line[4:], []
                elif line.strip() != "---":
                    block.append(line)
            if heading is not None:
                services.append(_parse_service_block(heading, block))
            elif title.startswith("services"):  # a list: `- researcher: services/researcher.md`
                services += [_listed_service(m.group(1)) for line in lines
                             if (m := _ITEM.match(line)) and not line[:1].isspace()]
        elif title.startswith("execution"):
            for line in lines:
                m = _ORDER.match(line)
                if m:
                    order += step_names(m.group(2))
        elif title.startswith("caller"):
            key = None
            for line in lines:
                m_key = _KEY.match(line.strip())
                if m_key and not _ITEM.match(line):
                    key = m_key.group(1).lower()
                    continue
                m_item = _ITEM.match(line)
                if not m_item or key not in ("returns", "requires"):
                    continue
                value = m_item.group(1).strip()
                m_from = returned_from(value)
                head = m_from[0] if m_from else _NAME_END.split(value, maxsplit=1)[0]
                name = _strip_name(head)
                if key == "returns":
                    returns[name] = _strip_name(m_from[1]) if m_from else None
                else:
                    requires.append(name)
    services, order = in_order(_merge_repeated([s for s in services if s.name]), order)
    return Manifest(program, services, order, returns, requires)


def step_names(step: str) -> list[str]:
    """The services one step of an execution order names: the first word of each of its
    parts (`2. ∥ critic, fact-checker (parallel)` names critic and fact-checker; what follows
    a name says what the step does), its number, its notes in parentheses or brackets
    (`[parallel]`), a colon after a name (`1. researcher: gathers sources`) and a word that
    joins steps (`then writer`) left out (v18 made services of `researcher:`, `[parallel]`
    and `then`)."""
    step = re.sub(r"^\s*\d+[.)]?\s+", "", step)
    step = re.sub(r"\([^)]*\)?|\[[^\]]*\]?", " ", step)  # (notes)
    names = []
    for part in _ORDER_PARTS.split(step):
        words = [word for word in part.split() if word.lower() not in _JOINING]
        name = _strip_name((words or [""])[0]).rstrip(":;,.").strip("`*")
        if re.search(r"\w", name):
            names.append(name)
    return names


# Words that join the steps of an execution order, no service's name
_JOINING = {"then", "and", "next", "finally", "after", "afterwards", "lastly", "first"}


# The program's caller, as an execution order or a graph names it: no service
CALLER_NAMES = frozenset({"caller"})


def in_order(services: list[ServiceWiring], order: list[str]
             ) -> tuple[list[ServiceWiring], list[str]]:
    """(services, order) with the order naming each service as the graph does (names compare
    but for case, '-', '_' and spaces), a service only the order names added (it still ran),
    and the services sorted by the order they ran in (the graph's for those it does not
    name)."""
    names = {normalise_name(s.name): s.name for s in services}
    order = [names.get(normalise_name(name), name) for name in order]
    for name in order:
        if normalise_name(name) not in names and name not in CALLER_NAMES:
            services.append(ServiceWiring(name=name, heading=name))
            names[normalise_name(name)] = name
    ran = {name: rank for rank, name in reversed(list(enumerate(order)))}
    services.sort(key=lambda s: ran.get(s.name, len(ran)))
    return services, order
