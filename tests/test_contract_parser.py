from pipeline.sources.contract import parse_contract


def ensures(text: str, component: str | None = None):
    contract = parse_contract(text, "svc")
    comp = contract.component(component) if component else contract.main
    return comp.items("ensures")


def test_front_matter_and_heading_sections():
    c = parse_contract("---\nname: researcher\nkind: service\nmodel: opus\nshape:\n  self: [a]\n"
                       "---\n# Researcher\n\n### Ensures\n- `findings`: a list\n\n### Errors\n"
                       "- `no-results`: none found\n")
    assert c.front_matter["name"] == "researcher"
    assert c.front_matter["shape"] == {"self": ["a"]}
    assert c.title == "Researcher"
    assert [i.name for i in c.main.items("ensures")] == ["findings"]
    assert [i.name for i in c.main.items("errors")] == ["no-results"]


def test_lowercase_colon_blocks():
    items = ensures("requires:\n- topic: what\n\nensures:\n- summary: 2-3 paragraphs\n"
                    "- tldr: one sentence\n\nerrors:\n- failed: it failed\n")
    assert [(i.name, i.description) for i in items] == [
        ("summary", "2-3 paragraphs"), ("tldr", "one sentence")]


def test_heading_section_wins_over_colon_block():
    items = ensures("ensures:\n- old: from the colon block\n\n"
                    "### Ensures\n- `new`: from the heading\n")
    assert [i.name for i in items] == ["new"]


def test_a_colon_block_ends_at_another_block():
    # `notes:` and `examples:` on a line of their own start blocks of their own: their items
    # are not ensures (v13 made clauses of them, each violated for want of an output)
    items = ensures("ensures:\n- summary: exactly 2 paragraphs\n\nnotes:\n- tone: friendly\n"
                    "- audience: managers\n\nExample output:\n- input: climate\n\n"
                    "requires:\n- topic: a subject\n")
    assert [(i.name, i.description) for i in items] == [("summary", "exactly 2 paragraphs")]
    # an `### Ensures` section keeps its items whatever lines stand among them
    items = ensures("### Ensures\n- `a`: one\nnotes:\n- `b`: two\n")
    assert [i.name for i in items] == ["a", "b"]


def test_sections_match_case_insensitively():
    items = ensures("### ENSURES\n- `a`: x\n")
    assert [i.name for i in items] == ["a"]


def test_backticked_and_plain_names_and_annotations():
    items = ensures("### Ensures\n- `report` (optional): a report\n- plain_name: text here\n"
                    "- a clause with no name at all\n")
    assert [i.name for i in items] == ["report", "plain_name", None]
    assert items[0].optional
    assert items[2].description == "a clause with no name at all"


def test_sub_items_belong_to_their_parent_with_3_or_4_spaces():
    items = ensures("### Ensures\n- `ticket`: a JSON object with fields:\n    - `id`: the id\n"
                    "    - `priority`: one of \"low\", \"high\"\n- `note`: text\n"
                    "   - `author`: who\n")
    tops = [i for i in items if i.parent_position is None]
    assert [i.name for i in tops] == ["ticket", "note"]
    assert [(i.name, i.parent_position) for i in items if i.parent_position is not None] == [
        ("id", 0), ("priority", 0), ("author", 3)]


def test_conditional_ensures_names_no_output():
    items = ensures("### Ensures\n- `data`: fresh data\n"
                    "- if api is unavailable: cached data flagged as stale\n"
                    "- If accepting: reasoning for the acceptance\n")
    assert items[1].name is None and items[1].condition == "api is unavailable"
    assert items[1].description == "cached data flagged as stale"
    assert items[2].condition == "accepting"


def test_inline_components_are_parsed_separately():
    text = ("---\nname: p\nkind: program\n---\n# P\n\n### Ensures\n- `out`: final\n\n"
            "## drafter\n\n### Ensures\n- `draft`: a draft\n\n## reviewer (checks drafts)\n\n"
            "ensures:\n- verdict: approve or reject\n")
    c = parse_contract(text)
    assert [i.name for i in c.main.items("ensures")] == ["out"]
    assert [i.name for i in c.component("drafter").items("ensures")] == ["draft"]
    assert [i.name for i in c.component("reviewer").items("ensures")] == ["verdict"]


def test_unicode_and_fenced_code_blocks():
    items = ensures("### Ensures\n- `summary`: a “concise” summary — 3 bullets → caller\n"
                    "- `example`: output shaped like\n"
                    "  ```json\n  {\"- not\": \"an item\"}\n  ```\n"
                    "- `last`: after the fence\n")
    assert [i.name for i in items] == ["summary", "example", "last"]
    assert "“concise”" in items[0].description and "→" in items[0].description
    assert '"- not"' in items[1].text


def test_deeper_headings_are_free_text_and_do_not_end_sections():
    items = ensures("### Ensures\n#### Notes\n- `a`: x\n")
    assert [i.name for i in items] == ["a"]


def test_malformed_yaml_front_matter_is_reported_not_raised():
    c = parse_contract("---\nname: [unclosed\n---\n### Ensures\n- `a`: x\n")
    assert c.front_matter == {}
    assert "not valid YAML" in c.front_matter_error
    assert [i.name for i in c.main.items("ensures")] == ["a"]


def test_yaml_is_loaded_safely():
    c = parse_contract("---\nname: !!python/object/apply:os.system ['echo pwned']\n---\n")
    assert c.front_matter == {}
    assert c.front_matter_error


def test_items_an_html_comment_holds_over_several_lines_are_not_read():
    # how a team switches a clause off; v18 graded them (a false violation every night)
    items = ensures("### Ensures\n- `report`: a brief\n<!-- dropped in v3:\n"
                    "- `summary`: exactly 5 sentences\n-->\n- `notes`: a list <!-- keep\n"
                    "  - `x`: nested, off too\n  --> with its tail\n"
                    "- `code`: quotes `<!--` as code\n- `last`: one line\n<!-- left open\n"
                    "- `never`: read\n")
    assert [(i.name, i.description) for i in items] == [
        ("report", "a brief"), ("notes", "a list with its tail"),
        ("code", "quotes `<!--` as code"), ("last", "one line")]


def test_a_section_heading_may_say_more_in_a_parenthesis():
    # v18 read no section under "### Ensures (outputs)": the service's clauses left out
    items = ensures("### Ensures (outputs)\n- `summary`: exactly 2 sentences\n\n"
                    "### Errors (declared)\n- `failed`: it failed\n")
    assert [i.name for i in items] == ["summary"]
    assert [i.name for i in parse_contract("### Errors (declared)\n- `failed`: x\n",
                                           "svc").main.items("errors")] == ["failed"]
