import pytest

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


def test_execution_order_names_services_as_the_graph_does():
    # names compared as names are (case, '-', '_'), a step of several services read as
    # several, and the services in the order they ran: "1. Researcher" made a second
    # service, "2. critic, fact-checker" one named "critic,"
    m = parse_manifest(
        "# Manifest: p\n\n## Graph\n\n### writer\nsource: services/writer.md\n\n"
        "### 1. researcher\nsource: services/researcher.md\n\n### critic: reviews claims\n"
        "source: services/critic.md\n\n### Service: Fact_Checker\n\n## Execution Order\n"
        "1. Researcher (depends on: caller)\n2. ∥ critic, fact-checker (parallel)\n"
        "3. writer\n")
    assert [s.name for s in m.services] == ["researcher", "critic", "Fact_Checker", "writer"]
    assert m.order == ["researcher", "critic", "Fact_Checker", "writer"]


def test_a_services_list_names_each_service_and_its_contract():
    # a `## Services` list, not `### name` blocks: every run of such a manifest was refused
    # "no service or program declares an ensures clause"
    m = parse_manifest("# Manifest: p\n\n## Services\n- researcher: services/researcher.md\n"
                       "- `writer` (source: services/writer.md): drafts the report\n"
                       "- critic — reviews\n")
    assert [(s.name, s.source) for s in m.services] == [
        ("researcher", "services/researcher.md"), ("writer", "services/writer.md"),
        ("critic", None)]


def test_an_error_item_parted_by_a_dash_declares_its_name():
    m = parse_manifest("# Manifest: p\n\n## Graph\n\n### fc\nerrors:\n"
                       "- `no-results` — nothing was found\n- rate-limited: too many calls\n")
    assert m.services[0].errors == ["no-results", "rate-limited"]


def test_an_execution_orders_annotations_name_no_service():
    # v18 made services of `researcher:`, `[parallel]` and `then`, each with a missing
    # contract, and of a forme graph's caller node
    import json

    from pipeline.sources.forme import parse_forme_manifest

    m = parse_manifest(
        "# Manifest: p\n\n## Graph\n\n### researcher\nsource: services/researcher.md\n\n"
        "### fact-checker\n\n### writer\n\n## Execution Order\n"
        "1. researcher: gathers sources (depends on: caller)\n"
        "2. [parallel] fact-checker, writer\n3. then writer: the final pass\n")
    assert [s.name for s in m.services] == ["researcher", "fact-checker", "writer"]
    assert m.order == ["researcher", "fact-checker", "writer", "writer"]
    forme = parse_forme_manifest(json.dumps({"program": "p", "graph": {"nodes": [
        {"id": "caller", "type": "input"}, {"id": "researcher"}, {"id": "writer"}]},
        "execution_order": ["researcher", "writer"]}))
    assert [s.name for s in forme.services] == ["researcher", "writer"]


@pytest.mark.parametrize("title, program", [
    ("Manifest: deep-research", "deep-research"),
    ("Manifest — deep-research", "deep-research"),
    ("Manifest for deep-research", "deep-research"),
    ("deep-research", "deep-research"),
    ("Manifest-builder", "Manifest-builder"),
    # the word alone names no program: the log's name is taken (v19 named it "Manifest")
    ("Manifest", None),
    ("Manifest:", None),
])
def test_the_title_names_the_program_after_the_word_manifest(title, program):
    assert parse_manifest(f"# {title}\n\n## Execution Order\n1. a\n").program == program
