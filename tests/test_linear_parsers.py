"""The parsers read a line in time linear in its length, and parse it as they always did.

A markdown line of a few hundred thousand spaces (a contract, a manifest, a vm.log.md, a
judge's reply) made patterns with a lazy group before `\\s*`, or two `\\s*` around an optional
part, try every split of the run: quadratic or cubic, minutes to hours for one line, holding
a worker and so the whole grade. Each was rewritten (possessive quantifiers, a lookbehind, or
a few lines of Python); the patterns they replaced are kept here as the reference, and each
rewrite must give the same groups on text built from the characters that matter to it.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.judging.answers import unfenced
from pipeline.sources import contract, manifest, vm_log

EXAMPLES = settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", 400)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
# \s in a str pattern is more than ASCII: these are whitespace to it and to str.strip()
SPACES = [" ", "\t", "\x0b", "\x1c", "\x85", "\xa0", "\u2003", "\u3000"]

OLD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
OLD_CONDITIONAL = re.compile(r"^if\s+(.+?)\s*:\s*(.*)$", re.IGNORECASE | re.DOTALL)
OLD_NAMES = {
    "_BACKTICK_NAME": re.compile(r"^`([^`]+)`\s*(\([^)]*\))?\s*[:—–-]\s*(.*)$", re.DOTALL),
    "_BACKTICK_ONLY": re.compile(r"^`([^`]+)`\s*(\([^)]*\))?\s*$"),
    "_PLAIN_NAME": re.compile(r"^([A-Za-z0-9_][\w.\-/]*)\s*(\([^)]*\))?\s*:\s*(.*)$", re.DOTALL),
}
OLD_VM_HEADING = re.compile(
    r"^###\s+`?([^`—–(]+?)`?\s+[—–-]+\s+([A-Za-z]+)\b\s*(?:\((.*)\))?\s*$")
OLD_ARROWS = {"_ARROW_RIGHT": re.compile(r"\s*(?:→|->|=>)\s*"),
              "_ARROW_LEFT": re.compile(r"\s*(?:←|<-|<=)\s*")}
OLD_FROM = re.compile(r"^`?([^`(:]+?)`?\s*\(from\s+`?([^`)]+?)`?\)\s*(?::\s*(.*))?$")
OLD_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def tokens(*choices: str, size: int = 14) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from([*choices, *SPACES]), max_size=size).map("".join)


def every(*slots: list[str]) -> list[str]:
    """Every line made of one choice per slot, in order: the shapes a pattern matches, each
    part missing, doubled or swapped for a near miss (a few hundred thousand at most)."""
    return ["".join(parts) for parts in itertools.product(*slots)]


def differences(lines, old, new) -> list:
    return [(line, want, got) for line in lines if (want := old(line)) != (got := new(line))]


WS = ["", " ", "  ", "\t\xa0"]
WSN = [*WS, "\n"]


def groups(pattern):
    return lambda text: (m := pattern.match(text)) and m.groups()


def first_split(pattern):
    return lambda text: pattern.split(text, maxsplit=1)


def old_heading(line):
    m = OLD_HEADING.match(line)
    return (len(m.group(1)), m.group(2)) if m else None


def old_conditional(head):
    m = OLD_CONDITIONAL.match(head)
    return (m.group(1).strip(), m.group(2).strip()) if m else None


def old_vm_heading(line):
    return m.groups() if (m := OLD_VM_HEADING.match(line)) else None


def old_returned_from(value):  # (the caller strips the name; the lazy name left its spaces)
    return (manifest._strip_name(m.group(1)), m.group(2)) if (m := OLD_FROM.match(value)) else None


def new_returned_from(value):
    got = manifest.returned_from(value)
    return (manifest._strip_name(got[0]), got[1]) if got else None


def test_headings_are_read_as_the_pattern_did():
    lines = every(["", "#", "##", "######", "#######"], [*WS, "\n "], ["", "a", "#a", "a#"], WS,
                  ["", "#", "##"], ["", " ", "\n"], ["", "b", "#"])
    assert differences(lines, old_heading, contract._heading) == []


def test_conditions_are_read_as_the_pattern_did():
    heads = {line.strip() for line in every(  # (parse_item_text strips the item first)
        ["if", "IF", "ıf", "i", ""], WSN, ["", ":", "a", "`"], WS, ["", ":", "::"],
        ["", " "], ["", "a", ":"])}
    assert differences(heads, old_conditional, contract._conditional) == []


def test_item_names_are_read_as_the_patterns_did():
    heads = every(["", "`", "a", "_", "é"], ["", "a", ".", "/", "`", " "], ["", "`"], WS,
                  ["", "("], ["", "a", " ", ")"], ["", ")"], WS, ["", ":", "—", "-"], ["", " "],
                  ["", "x", "\n"])
    for name, old in OLD_NAMES.items():
        assert differences(heads, groups(old), groups(getattr(contract, name))) == [], name


def test_vm_log_headings_are_read_as_the_pattern_did():
    lines = {line.strip() for line in every(  # (parse_vm_log strips each line first)
        ["###"], WS, ["", "`"], ["", "a", " a", "-", ")", "é"], ["", "`"], WS, ["", "—", "-–"],
        ["", " "], ["", "done", "x_", "a1"], ["", " "], ["", "(", "x"], ["", "a", ")"],
        ["", ")"])}
    assert differences(lines, old_vm_heading, vm_log._heading) == []


def test_arrows_split_as_the_patterns_did():
    lines = every(["", "a"], WS, ["", "->", "-", ">", "=>", "→", "<-", "←", "<="], WS,
                  ["", "a", "->", "<-"], WS, ["", "b"])
    for name, old in OLD_ARROWS.items():
        assert differences(lines, first_split(old), first_split(getattr(manifest, name))) == [], \
            name


def test_returned_from_lines_are_read_as_the_pattern_did():
    values = every(["", "`"], ["", "a", " ", "*"], ["", "`", ":"], WS, ["", "(from", "("], WS,
                   ["", "`"], ["", "a", " ", "`", ")"], ["", "`"], ["", ")"], ["", " "],
                   ["", ":", "a"], ["", "x"])
    assert differences(values, old_returned_from, new_returned_from) == []


def test_fenced_replies_are_unfenced_as_the_pattern_did():
    replies = every(WSN, ["", "```", "`"], ["", "json", "a"], WSN, ["", "{}", "a"],
                    WSN, ["", "```", "`"], ["", " ", "x"])
    assert differences(replies, lambda r: OLD_FENCE.sub("", r.strip()), unfenced) == []


@EXAMPLES
@given(tokens("#", "##", "###", "a", "`", "\n", "#a", "x#", "if", "IF", "ıf", "İf", ":", "(",
              ")", "—", "–", "-", "é", "1", "_", ".", "/", "done", "(from", "->", "→", "<-",
              "```", "json", "{"))
def test_any_text_is_read_as_the_patterns_did(text):
    line = text.strip()
    assert contract._heading(text) == old_heading(text)
    assert contract._conditional(line) == old_conditional(line)
    for name, old in OLD_NAMES.items():
        assert groups(getattr(contract, name))(text) == groups(old)(text)
    assert vm_log._heading(line) == old_vm_heading(line)
    for name, old in OLD_ARROWS.items():
        assert first_split(getattr(manifest, name))(text) == first_split(old)(text)
    assert new_returned_from(text) == old_returned_from(text)
    assert unfenced(text) == OLD_FENCE.sub("", text.strip())


HOSTILE = r'''
from pipeline.judging.answers import answer_from_text
from pipeline.sources.contract import parse_contract
from pipeline.sources.manifest import parse_manifest
from pipeline.sources.vm_log import parse_vm_log

blank, mixed = " " * 400_000, " \t" * 200_000
found = parse_contract(
    f"# Title{mixed}x\n\n### Ensures\n\n- `report`{blank}x\n- `summary`{blank}(a{blank}x\n"
    f"- notes{blank}(a){blank}x\n- if the api{blank}is down{blank}x\n- `done`: yes\n")
assert found.title == f"Title{mixed}x", found.title[:40]
items = found.main.items("ensures")
assert [(i.name, i.condition) for i in items] == [(None, None)] * 4 + [("done", None)], items
assert items[3].description == f"if the api{blank}is down{blank}x"
log = parse_vm_log(f"### writer{mixed}x\n### editor{mixed}— done{mixed}x\n### a —{mixed}failed\n")
assert [(s.name, s.status) for s in log.steps] == [("a", "errored")], log.steps
wiring = parse_manifest(f"# Manifest: p\n\n## Caller Interface\n\nreturns:\n"
                        f"- report (from {blank}writer{blank}x\n- brief{blank}(from x)\n"
                        f"\n## Services\n\n### writer\noutputs:\n- report{blank}x\n")
assert wiring.returns == {f"report (from {blank}writer{blank}x": None, "brief": "x"}
assert [o.target for o in wiring.services[0].outputs] == [None]
reply = answer_from_text(f'```json{blank}{{"outcome": "passed", "confidence": 90}}{blank}x')
assert (reply.outcome, reply.confidence) == ("passed", 90)
print("parsed")
'''


def test_hostile_lines_of_contracts_vm_logs_manifests_and_replies_parse_in_linear_time():
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", HOSTILE], cwd=repo, capture_output=True,
                          text=True, timeout=120)  # (about a second; the patterns before: hours)
    assert done.returncode == 0 and done.stdout.strip() == "parsed", done.stderr[-2000:]


WIDE = r'''
from pipeline.sources.contract import parse_contract
from pipeline.sources.manifest import parse_manifest

found = parse_contract("### Ensures\n- `report`: the report\n" + "  and more\n" * 2_000_000)
[item] = found.main.items("ensures")
assert item.name == "report" and item.description == "the report" + " and more" * 2_000_000
wiring = parse_manifest("# Manifest: p\n\n## Graph\n\n" + "".join(
    f"### writer\noutputs:\n- (public) o{i} → bindings/writer/o{i}.md\n" for i in range(40_000)))
[writer] = wiring.services
assert [o.name for o in writer.outputs] == [f"o{i}" for i in range(40_000)]
program = parse_contract("".join(f"## s{i}\n### Ensures\n- `o`: x\n" for i in range(30_000)))
assert all(program.component(f"S{i}").name == f"s{i}" for i in range(30_000))
print("parsed")
'''


def test_items_blocks_and_components_by_the_ten_thousand_parse_in_linear_time():
    """An item continued over millions of lines, a service's `### name` block repeated 40,000
    times and a program of 30,000 inline components: each took minutes before (the item's
    text grew by copying, each repeated block and each service's lookup scanned all before)."""
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", WIDE], cwd=repo, capture_output=True,
                          text=True, timeout=90)  # (about 6 s; before, each part 2 min or more)
    assert done.returncode == 0 and done.stdout.strip() == "parsed", done.stderr[-2000:]
