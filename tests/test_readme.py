"""The README's contents list and its links to its own sections stay true to its headings."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _headings(text: str) -> list[tuple[int, str]]:
    """(level, title) of every heading outside fenced code blocks, in order."""
    found, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"(#{1,6}) (.+)", line)):
            found.append((len(match[1]), match[2].strip()))
    return found


def _anchor(title: str) -> str:
    """The anchor a Markdown renderer (GitHub's rule) gives a heading: lowercase, punctuation
    but hyphens and underscores dropped, spaces made hyphens."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def test_every_link_to_a_section_names_a_heading():
    text = README.read_text(encoding="utf-8")
    anchors = {_anchor(title) for _, title in _headings(text)}
    links = re.findall(r"\]\(#([^)]+)\)", text)
    assert len(links) > 10
    assert sorted(set(links) - anchors) == []


def test_the_contents_list_names_every_section_in_order():
    text = README.read_text(encoding="utf-8")
    listed = re.findall(r"^( *)- \[(.+)\]\(#([^)]+)\)$",
                        text.split("Contents:", 1)[1].split("\n## ", 1)[0], re.MULTILINE)
    sections = [(level, title) for level, title in _headings(text) if level in (2, 3)]
    assert [(2 + len(indent) // 2, title) for indent, title, _ in listed] == sections
    assert [anchor for *_, anchor in listed] == [_anchor(title) for _, title in sections]
