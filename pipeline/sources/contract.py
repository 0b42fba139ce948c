"""Contract markdown (program.md, services/*.md): front matter, components, sections, items.

The parser is tolerant by design: anything it does not recognise is kept as free text and
never raises. Two section syntaxes exist in the wild, `### Ensures` headings and older
lowercase `ensures:` colon blocks; when a component has both for one section, the heading wins.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field

import yaml

SECTIONS = (
    "description", "services", "requires", "ensures", "errors", "invariants", "strategies",
    "environment", "runtime", "memory", "shape", "wiring", "execution", "fixtures", "expects",
    "expects not", "slots", "config", "delegation",
)
# Colon blocks only ever existed for the list-like sections.
COLON_SECTIONS = ("requires", "ensures", "errors", "invariants", "strategies")

_FENCE = re.compile(r"^\s*(```|~~~)")
_COLON_BLOCK = re.compile(r"^(" + "|".join(COLON_SECTIONS) + r")\s*:\s*$", re.IGNORECASE)
# Any other block of that form (`notes:`, `examples:` on a line of their own) ends a colon
# block: its items are not the section's.
_OTHER_BLOCK = re.compile(r"^[A-Za-z][\w -]*:$")
# A list item, bulleted or numbered (`1.`, `1)`): a contract's ensures may be an ordered list
_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
# What interrupts a paragraph, so never continues a list item on an unindented line: a
# heading, a block quote, a table row, an HTML block, a rule
_INTERRUPTS = re.compile(r"^(?:#|>|\||<|(?:-\s*){3,}$|(?:\*\s*){3,}$|(?:_\s*){3,}$)")

_IF = re.compile(r"if\s", re.IGNORECASE)
# Possessive `*+` and `++` never give back what they took, so a long run of spaces before a
# missing `:` is not tried again split by split between the two `\s*` (quadratic before). Each
# takes characters the next part cannot start with, so they match exactly as the plain forms.
_BACKTICK_NAME = re.compile(r"^`([^`]++)`\s*+(\([^)]*+\))?\s*+[:—–-]\s*(.*)$", re.DOTALL)
_BACKTICK_ONLY = re.compile(r"^`([^`]++)`\s*+(\([^)]*+\))?\s*+$")
_PLAIN_NAME = re.compile(r"^([A-Za-z0-9_][\w.\-/]*+)\s*+(\([^)]*+\))?\s*+:\s*(.*)$", re.DOTALL)
# An item marked optional after its name's colon ("- `notes`: (optional) a list"), as it may be
# before it: the mark is the item's annotation, no part of what the output must hold
_LEADING_OPTIONAL = re.compile(r"^\(([^)]*\boptional\b[^)]*+)\)\s*(.*)$",
                               re.DOTALL | re.IGNORECASE)


@dataclass
class Item:
    """One list item of a section. Sub-items point at their parent by position."""

    position: int
    text: str
    name: str | None = None
    description: str = ""
    condition: str | None = None
    annotation: str | None = None
    parent_position: int | None = None
    depth: int = 0

    @property
    def optional(self) -> bool:
        return bool(self.annotation and "optional" in self.annotation.lower())


@dataclass
class Component:
    """A program, a service, or an inline `## name` component of a program file."""

    name: str
    kind: str
    sections: dict[str, list[Item]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)

    def items(self, section: str) -> list[Item]:
        return self.sections.get(section, [])


@dataclass
class Contract:
    front_matter: dict
    title: str | None
    main: Component
    inline: list[Component]
    front_matter_error: str | None = None

    def component(self, name: str) -> Component | None:
        """The first inline component of this name (compared as `normalise_name` does)."""
        return self._by_name.get(normalise_name(name))

    @functools.cached_property
    def _by_name(self) -> dict[str, Component]:
        # (one lookup per service of a run: a scan each would be quadratic in wide programs)
        index: dict[str, Component] = {}
        for comp in self.inline:
            index.setdefault(normalise_name(comp.name), comp)
        return index


@functools.lru_cache(maxsize=1 << 16)  # runs of one program repeat the same few names
def normalise_name(name: str) -> str:
    """Compare names the way authors mean them: case, `-`, `_` and spaces are equivalent, and
    so are a name's composed and decomposed accents (NFC: a folder written on macOS spells
    `café` as `e` and a combining accent)."""
    return re.sub(r"[\s_\-]+", "-", unicodedata.normalize("NFC", name.strip().strip("`").lower()))


# The extension of a binding's file, which an item may name its output with (`report.md`)
OUTPUT_EXTENSION = r"(?i)\.(?:md|markdown|json|txt|ya?ml|csv)\s*$"


def output_name_key(name: str) -> str:
    """The key of an output an item or a manifest names: `normalise_name` of it without the
    extension of a binding's file (the binding's name is its file's stem)."""
    return normalise_name(re.sub(OUTPUT_EXTENSION, "", name.strip().strip("`")))


# The most front matter read as YAML: a contract's or a log's is a few lines, and PyYAML's
# pure-Python reading of 16 MB of it took 146 s and 3.5 GB in a process
FRONT_MATTER_CAP = 64 << 10


def split_front_matter(text: str) -> tuple[dict, str, str | None]:
    """Return (front matter, body, error). Only YAML's safe loader ever sees run content."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text, None
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            raw = "\n".join(lines[1:end])
            body = "\n".join(lines[end + 1:])
            if len(raw) > FRONT_MATTER_CAP:
                return {}, body, (f"front matter is larger than {FRONT_MATTER_CAP >> 10} KiB; "
                                  "it is not read")
            try:
                data = yaml.safe_load(raw) if raw.strip() else {}
            except RecursionError:  # thousands of nested brackets exhaust the YAML composer
                return {}, body, "front matter is nested too deeply to read"
            except yaml.YAMLError as exc:
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                return {}, body, f"front matter is not valid YAML: {first}"
            if not isinstance(data, dict):
                return {}, body, "front matter is not a mapping"
            return data, body, None
    return {}, text, "front matter has no closing '---'"


def _heading(line: str) -> tuple[int, str] | None:
    r"""A markdown heading line as (level, text), or None.

    The same as `^(#{1,6})\s+(.*?)\s*#*\s*$` (the text lazy, closing `#`s and spaces dropped),
    whose lazy text tried every split of a long run of spaces against the closing part: cubic
    in the run's length, minutes for one line. This reads each character a bounded number
    of times.
    """
    level = len(line) - len(line.lstrip("#"))
    if not 1 <= level <= 6 or not line[level:level + 1].isspace():
        return None
    text = line[level:].strip().rstrip("#").rstrip()
    return None if "\n" in text else (level, text)  # (`.` stops at a line break)


def _conditional(head: str) -> tuple[str, str] | None:
    r"""`if CONDITION: WHAT` as (condition, what), both stripped, or None.

    The same as `^if\s+(.+?)\s*:\s*(.*)$` (ignoring case, `.` taking line breaks too), whose
    lazy condition tried the `\s*:` after it from each space of a long run: quadratic.
    """
    if not _IF.match(head):
        return None
    rest = head[2:]
    body = rest.lstrip()
    colon = body.find(":", 1)  # the condition takes one character at least
    if colon > 0:
        return body[:colon].strip(), body[colon + 1:].strip()
    if body[:1] == ":" and len(rest) - len(body) > 1:  # a condition of spaces only: "if  : x"
        return "", body[1:].strip()
    return None


def parse_item_text(text: str) -> tuple[str | None, str, str | None, str | None]:
    """Split an item's first line into (name, description, condition, annotation)."""
    head = text.strip()
    cond = _conditional(head)
    if cond:
        return None, cond[1], cond[0], None
    for pattern in (_BACKTICK_NAME, _PLAIN_NAME):
        m = pattern.match(head)
        if m:
            annotation = m.group(2)[1:-1].strip() if m.group(2) else None
            description = m.group(3).strip()
            if annotation is None and (lead := _LEADING_OPTIONAL.match(description)):
                annotation, description = lead.group(1).strip(), lead.group(2).strip()
            return m.group(1).strip(), description, None, annotation
    m = _BACKTICK_ONLY.match(head)
    if m:
        return m.group(1).strip(), "", None, (m.group(2) or "")[1:-1].strip() or None
    return None, head, None, None


def _without_comments(text: str) -> str:
    """`text` without its HTML comments (`<!-- … -->`, one left open running to the end),
    which are not rendered and say nothing of the output; the text around each is parted by
    one space. A `<!--` in inline code or a fenced block is the code's. (Found with
    `str.find`: a pattern starting with spaces is quadratic on a long run of them.)"""
    if "<!--" not in text:
        return text
    code = [m.span() for m in _CODE.finditer(text)]  # (in order: read once, front to back)
    kept, start, at, k = [], 0, 0, 0
    while (opened := text.find("<!--", at)) != -1:
        while k < len(code) and code[k][1] <= opened:
            k += 1
        if k < len(code) and code[k][0] <= opened:  # (in code: go on after it)
            at = code[k][1]
            continue
        kept.append(text[start:opened])
        closed = text.find("-->", opened + 4)
        start = at = len(text) if closed == -1 else closed + 3
    kept.append(text[start:])
    return " ".join(piece.strip() for piece in kept if piece.strip())


# Inline code, or a fenced block an item holds (its lines joined with "\n", see _parse_items)
_CODE = re.compile(r"`[^`\n]*`|\n(```|~~~).*?(?:\n\1|\Z)", re.DOTALL)


def _comment_left_open(line: str) -> int | None:
    """Where an HTML comment that `line` does not close opens (outside inline code), or
    None: the lines up to its `-->` are the comment's (a contract's way to switch an item
    off: "<!-- dropped in v3:" then the item, then "-->")."""
    at = 0
    while (opened := line.find("<!--", at)) != -1:
        if line.count("`", 0, opened) % 2:  # (in inline code: go on after it)
            at = opened + 4
            continue
        closed = line.find("-->", opened + 4)
        if closed == -1:
            return opened
        at = closed + 3
    return None


def _parse_items(lines: list[str]) -> list[Item]:
    """Items with indentation-based nesting; continuation lines join the item above."""
    items: list[Item] = []
    texts: list[list[str]] = []  # each item's text in parts, joined once at the end (linear)
    stack: list[tuple[int, Item]] = []  # (indent, item) of open ancestors
    in_fence = in_comment = False
    after_blank = True  # (the line before was blank, or there was none)
    for line in lines:
        if in_comment:  # (an HTML comment over several lines: what it holds is no item)
            closed = line.find("-->")
            if closed == -1:
                continue
            in_comment, line = False, line[closed + 3:]
            if not line.strip():
                continue
        elif not in_fence and (opened := _comment_left_open(line)) is not None:
            in_comment, line = True, line[:opened]
            if not line.strip():
                continue
        blank, after_blank = after_blank, not line.strip()
        if _FENCE.match(line):
            in_fence = not in_fence
            after_blank = True  # (a fence ends a paragraph: the next line continues none)
            if items:
                texts[-1] += ("\n", line.strip())
            continue
        if in_fence:
            if items:
                texts[-1] += ("\n", line)
            continue
        m = _ITEM.match(line.expandtabs(4))
        if m:
            indent = len(m.group(1))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            parent = stack[-1][1] if stack else None
            item = Item(
                position=len(items),
                text="",
                parent_position=parent.position if parent else None,
                depth=len(stack),
            )
            items.append(item)
            texts.append([m.group(2).strip()])
            stack.append((indent, item))
        elif line.strip() and stack and (
                line[:1].isspace()
                or (not blank and not _INTERRUPTS.match(line))):  # (a lazy continuation)
            texts[-1] += (" ", line.strip())
        elif line.strip():
            # An unindented line of prose after a blank one ends the list, and is no item's:
            # later items start a new one.
            stack.clear()
    for item, parts in zip(items, texts, strict=True):
        item.text = _without_comments("".join(parts))
        item.name, item.description, item.condition, item.annotation = parse_item_text(item.text)
    return items


def _section_key(heading: str) -> str | None:
    """The section a `###` heading opens: its name, but for case, marks, a colon and a
    parenthesis after it ("Ensures (outputs)": v18 read no section, and left the service's
    clauses out without a word)."""
    key = re.sub(r"[`*_:]", "", heading).strip().lower()
    key = re.sub(r"\s+", " ", re.sub(r"\s*\([^()]*\)$", "", key))
    return key if key in SECTIONS else None


def _parse_component(name: str, kind: str, lines: list[str]) -> Component:
    comp = Component(name=name, kind=kind)
    heading_blocks: dict[str, list[str]] = {}
    colon_blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        if not in_fence:
            h = _heading(line)
            if h:
                key = _section_key(h[1]) if h[0] == 3 else None
                if h[0] == 3:
                    current = heading_blocks.setdefault(key, []) if key else None
                    continue
                if current is not None:
                    current.append(line)  # '####' and deeper are free text of the section
                continue
            c = _COLON_BLOCK.match(line.strip()) if not line[:1].isspace() else None
            if c:
                current = colon_blocks.setdefault(c.group(1).lower(), [])
                continue
            if (current is not None and not line[:1].isspace()
                    and _OTHER_BLOCK.match(line.strip())
                    and not any(current is block for block in heading_blocks.values())):
                current = None
                continue
        if current is not None:
            current.append(line)
    for key, block in {**colon_blocks, **heading_blocks}.items():
        comp.sections[key] = _parse_items(block)
        comp.texts[key] = "\n".join(block).strip()
    return comp


def front_matter_text(front: dict, key: str) -> str | None:
    """A scalar front matter field as text; lists, mappings and aliases of them are ignored."""
    return scalar_text(front.get(key))


def scalar_text(value) -> str | None:
    """A YAML scalar (text or a number) as text, None for anything else: str() of a nested
    alias graph can expand exponentially, so only scalars are rendered."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value).strip() or None
    return None


def parse_contract(text: str, default_name: str = "", default_kind: str = "service") -> Contract:
    """Parse contract markdown. Never raises on content; problems are reported as fields."""
    front, body, fm_error = split_front_matter(text)
    name = front_matter_text(front, "name") or default_name
    kind = front_matter_text(front, "kind") or default_kind
    title = None
    chunks: list[tuple[str, list[str]]] = [("", [])]
    in_fence = False
    for line in body.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        h = None if in_fence else _heading(line)
        if h and h[0] == 1 and title is None:
            title = h[1]
            continue
        if h and h[0] == 2:
            chunks.append((h[1].strip(), []))
            continue
        chunks[-1][1].append(line)
    main = _parse_component(name, kind, chunks[0][1])
    inline = []
    for heading, lines in chunks[1:]:
        comp_name = re.split(r"(?<!\s)\s+[(\[—–-]", heading.strip("` "), maxsplit=1)[0].strip("` ")
        inline.append(_parse_component(comp_name, "service", lines))
    return Contract(front, title, main, inline, fm_error)
