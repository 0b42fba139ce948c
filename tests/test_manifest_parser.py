from pipeline.sources.manifest import parse_manifest

MANIFEST = """# Manifest: deep-research

## Caller Interface
requires:
- question: the question
returns:
- report (from writer): the final report
- `sources` (from researcher): the sources

---

## Graph

### researcher
source: services/researcher.md
workspace: workspace/researcher/
inputs:
- question ← bindings/caller/question.md
- depth: 3
outputs:
- (public) findings → bindings/researcher/findings.md
- notes → workspace/researcher/notes.md
errors:
- no-results: nothing found

### prime (patch loop)
source: services/prime.md
inputs:
- findings <- bindings/researcher/findings.md
outputs:
- patch -> bindings/prime/patch.md
errors:
- (none)

---

## Execution Order
1. researcher (depends on: caller)
2. prime (depends on: researcher)

## Warnings
- something odd
"""


def test_services_sources_and_outputs():
    m = parse_manifest(MANIFEST)
    assert m.program == "deep-research"
    assert [s.name for s in m.services] == ["researcher", "prime"]
    r = m.service("researcher")
    assert r.source == "services/researcher.md" and r.workspace == "workspace/researcher/"
    assert [(o.name, o.public, o.target) for o in r.outputs] == [
        ("findings", True, "bindings/researcher/findings.md"),
        ("notes", False, "workspace/researcher/notes.md")]
    assert r.errors == ["no-results"]
    assert r.inputs[0] == ("question", "bindings/caller/question.md")
    assert r.inputs[1][0] == "depth: 3" or r.inputs[1][0].startswith("depth")


def test_ascii_arrows_annotated_headings_and_none_lists():
    p = parse_manifest(MANIFEST).service("prime")
    assert p.heading == "prime (patch loop)"
    assert p.inputs == [("findings", "bindings/researcher/findings.md")]
    assert [(o.name, o.public) for o in p.outputs] == [("patch", True)]
    assert p.errors == []


def test_caller_interface_and_execution_order():
    m = parse_manifest(MANIFEST)
    assert m.returns == {"report": "writer", "sources": "researcher"}
    assert m.requires == ["question"]
    assert m.order == ["researcher", "prime"]


def test_services_only_in_execution_order_are_kept():
    m = parse_manifest("# Manifest: x\n\n## Execution Order\n1. a (depends on: caller)\n2. `b`\n")
    assert [s.name for s in m.services] == ["a", "b"]


def test_garbage_does_not_raise():
    m = parse_manifest("\x00\x01 not a manifest\n## Graph\n### \n->\n")
    assert m.program is None and m.services == []
