"""Property tests: the run parsers take any bytes or text and never raise.

Inputs mix arbitrary text with lines built from the syntax the parsers look for (front matter
fences, section headings, items, arrows, log marks), so the generated files reach deep into
each parser instead of being rejected on the first line.
"""

from __future__ import annotations

import codecs
import os
import re
import tempfile

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pipeline.sources.bucket import Bucket
from pipeline.sources.contract import Contract, parse_contract
from pipeline.sources.manifest import Manifest, parse_manifest
from pipeline.sources.prose import decode
from pipeline.sources.state_log import StateLog, parse_error_file, parse_state_log

# HYPOTHESIS_EXAMPLES raises the budget for a long local hunt; the suite stays fast.
FAST = settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", 200)), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

CONTRACT_LINES = [
    "---", "...", "# Title", "## inline-service", "## `svc` (helper)", "### Ensures",
    "### ENSURES", "### Errors", "### Requires", "#### free text", "ensures:", "requires:",
    "errors:", "Ensures :", "- `report`: a markdown report", "- report: text",
    "- `a` (optional): maybe", "- if the api is down: cached data", "- if : nothing",
    "- `", "- ``: empty name", "   - sub item", "    - deeper", "\t- tabbed", "  continued",
    "```", "~~~", "```json", "name: x", "kind: program", "services: [a, b]", "shape:",
    "  self: [a]", "!!python/object/apply:os.system ['true']", "{", "[[[[", "&a [*a]",
    "'unclosed", '"', ": :", "- - -", "*", "+ item", "-", "- (none — nothing)",
]
MANIFEST_LINES = [
    "# Manifest: prog", "# ", "## Caller Interface", "## Graph", "## graph", "## Services",
    "## Execution Order", "## Warnings", "### svc", "### ", "### `svc` (patch loop)", "###",
    "source: services/svc.md", "source:", "source: ../../outside.md", "workspace: w/",
    "inputs:", "outputs:", "errors:", "delegates:", "returns:", "requires:",
    "- q ← bindings/caller/q.md", "- q <- x", "- (public) out → bindings/svc/out.md",
    "- out -> workspace/x", "- (public)", "- →", "- ←", "- (none)", "- report (from svc): x",
    "- (from )", "- x (from", "1. svc (depends on: caller)", "2) other", "3. `", "0. caller",
    "---", "outputs: a → bindings/a/a.md", "inputs: b <- c", "  indented: key",
]
STATE_LINES = [
    "# run:20260317-143052-a7b3c9 prog", "# run:", "program: p", "program:", "1→ svc ✓",
    "2-> svc ✗ no-results (after 3 tries)", "3→ ∥start a,b", "3a→ a ok", "3b→ b ⊘",
    "4→ [input] q ✓", "5→ [vm-action] x", "6→ [eval] e ✗", "7→ ✓", "8→", "9→ (note) ✗",
    "---error 2026-01-01T00:00:00Z boom", "---error", "---resume", "---end 2026-03-17T14:35:22Z",
    "---end ", "---end", "→", "->", "1a2→ x", "# Error: no-results", "#Error:", "# error : `x`",
]

CONTRACT_HEADERS = ["---", "---\nname: n\nkind: service", "### Ensures", "ensures:", "## inline",
                    "### Errors", "errors:", "# Title", "```"]
MANIFEST_HEADERS = ["## Graph", "## Execution Order", "## Caller Interface", "### svc",
                    "### other", "### svc (again)", "---", "# Manifest: p"]
STATE_HEADERS = ["# run:20260317-143052-a7b3c9 prog", "1→ svc ✓", "---end 2026-01-01T00:00:00Z"]


def syntax_text(lines: list[str]) -> st.SearchStrategy[str]:
    """Text made of parser syntax, arbitrary fragments and odd whitespace."""
    line = st.one_of(
        st.sampled_from(lines),
        st.text(max_size=30),
        st.builds(lambda a, b: a + b, st.sampled_from(lines), st.text(max_size=10)),
        st.builds(lambda n, s: " " * n + s, st.integers(0, 9), st.sampled_from(lines)),
    )
    sep = st.sampled_from(["\n", "\r\n", "\r", "\n\n", "\x0b", "\u2028"])
    return st.lists(st.tuples(line, sep), max_size=40).map(
        lambda parts: "".join(a + b for a, b in parts))


def document(headers: list[str], lines: list[str]) -> st.SearchStrategy[str]:
    """Text shaped like the file: headed blocks whose bodies are syntax lines."""
    body = st.lists(st.one_of(st.sampled_from(lines), st.text(max_size=15)), max_size=8)
    block = st.tuples(st.sampled_from(headers), body).map(lambda b: "\n".join([b[0], *b[1]]))
    return st.lists(block, max_size=8).map("\n".join)


def deeply_nested() -> st.SearchStrategy[str]:
    """Front matter or lists nested thousands deep (recursion limits, not content)."""
    return st.integers(1, 1200).flatmap(lambda n: st.sampled_from([
        "---\n" + "[" * n + "\n---\n", "---\nname: " + "{a: " * n + "\n---\n",
        "### Ensures\n" + "".join(" " * i + "- `x`: y\n" for i in range(min(n, 400))),
    ]))


def any_text(lines: list[str], headers: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.text(), syntax_text(lines), document(headers, lines),
                     st.binary().map(lambda b: decode(b)[0]), deeply_nested())


@FAST
@given(any_text(CONTRACT_LINES, CONTRACT_HEADERS), st.text(max_size=10),
       st.sampled_from(["service", "program"]))
def test_contract_parser_never_raises(text, name, kind):
    c = parse_contract(text, name, kind)
    assert isinstance(c, Contract) and isinstance(c.front_matter, dict)
    for comp in [c.main, *c.inline]:
        for items in comp.sections.values():
            # positions are contiguous and a sub-item always points at an earlier item
            assert [i.position for i in items] == list(range(len(items)))
            for item in items:
                assert item.parent_position is None or 0 <= item.parent_position < item.position
                assert isinstance(item.text, str)


@FAST
@given(any_text(MANIFEST_LINES, MANIFEST_HEADERS))
def test_manifest_parser_never_raises(text):
    m = parse_manifest(text)
    assert isinstance(m, Manifest)
    assert all(s.name for s in m.services)
    assert len({s.name for s in m.services}) == len(m.services), "a service is listed once"


@FAST
@given(any_text(STATE_LINES, STATE_HEADERS))
def test_state_log_parser_never_raises(text):
    log = parse_state_log(text)
    assert isinstance(log, StateLog)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    assert log.completed == bool(lines and lines[-1].startswith("---end "))
    assert all(s.name for s in log.steps)
    err = parse_error_file(text)
    assert err.name is None or isinstance(err.name, str)


@FAST
@given(st.binary(max_size=2048))
def test_decode_never_raises_and_flags_bad_bytes(data):
    text, bad = decode(data)
    assert isinstance(text, str)
    # UTF-8, or UTF-32/UTF-16 where their byte-order mark opens the bytes (UTF-32's first:
    # UTF-16's little-endian mark opens it); the text without a mark, its lines ended by \n
    codec = next((name for mark, name in (
        (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
        if data.startswith(mark)), "utf-8")
    try:
        plain = data.decode(codec)
    except UnicodeDecodeError:
        assert bad and "\ufffd" in text
        return
    assert not bad
    assert text == re.sub(r"\r+\n", "\n", plain.removeprefix("\ufeff")).replace("\r", "\n")


@FAST
@given(st.text(max_size=512), st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32"]))
def test_a_text_decodes_alike_in_each_unicode_encoding_with_its_mark(text, codec):
    # (UTF-16's little-endian mark and a first character U+0000 are the bytes of UTF-32's
    # mark, FF FE 00 00: such a text is read as UTF-32, as no reader could tell otherwise)
    assume(not (codec == "utf-16" and text.startswith("\x00")))
    assert decode(text.encode(codec)) == decode(text.encode("utf-8"))


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=4096), st.integers(0, 5000))
def test_read_is_capped_and_flags_truncation(data, cap):
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "blob.md")
        with open(path, "wb") as handle:
            handle.write(data)
        got, truncated = Bucket(root).read(path, cap)
        assert got == data[:cap]
        assert truncated == (len(data) > cap)
