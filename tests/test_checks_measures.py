"""Output measures are computed only where a check reads them, and that changes no result.

`run_checks` on a clause frame without measures computes each measure family for the rows of
the checks that read it (narrowed by their `needs`); on a fully measured frame it reads what
is there. Both must give the same checks table, row for row, on varied real runs: the sample
runs of data/, a synthetic corpus, and one run per check-library case.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from check_runs import run_id, write_service_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from test_checks_library import CASES

from pipeline.checks import FAILED, PASSED, Check, GraderError, default_grader, run_checks
from pipeline.checks.frame import clause_frame
from pipeline.checks.grader import Grader, measure
from pipeline.checks.output_analysis import FACT_FAMILY, FAMILIES
from pipeline.grade import read_runs, source_tables
from pipeline.sources.bucket import Bucket, group_runs
from pipeline.synth import synthesize

DATA = Path(__file__).resolve().parent.parent / "data" / "runs"


def _frame(root: Path, measured: bool) -> pl.DataFrame:
    bucket = Bucket(str(root))
    tables = source_tables(read_runs(str(root), group_runs(bucket, bucket.walk())))
    return clause_frame(tables["clauses"], tables["services"], tables["bindings"],
                        measured=measured)


@pytest.fixture(scope="module")
def library_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("measure-library")
    for n, case in enumerate(CASES):
        item = f"- `out`: {case.clause}" + "".join(f"\n    - {d}" for d in case.details)
        write_service_run(root, run_id(n), ensures=item, outputs={case.file: case.output})
    return root


@pytest.fixture(scope="module")
def synth_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("measure-synth") / "runs"
    synthesize(str(root), 60, seed=11)
    return root


@pytest.mark.parametrize("which", ["library", "data", "synth"])
def test_measuring_on_demand_changes_no_check(which, library_root, synth_root):
    root = {"library": library_root, "data": DATA, "synth": synth_root}[which]
    grader = default_grader()
    on_demand = run_checks(grader, _frame(root, measured=False))
    everything = run_checks(grader, _frame(root, measured=True))
    assert on_demand.height > 50
    assert_frame_equal(on_demand, everything)


def test_unread_families_are_typed_nulls_and_read_ones_are_narrowed(library_root):
    words_only = Check(
        name="short", applies=pl.col("has_output"), needs={"words": pl.col("kind") == "x"},
        outcome=pl.when(pl.col("n_words") < 5).then(PASSED).otherwise(FAILED),
        detail=pl.lit("short"), evidence=pl.format("{} words", pl.col("n_words")),
        confidence=pl.lit(90))
    frame = _frame(library_root, measured=False)
    measured = measure([words_only], frame)
    every = {c for f in FAMILIES for c in f.columns}
    assert every <= set(measured.columns)  # every measure exists, with its type
    assert measured["n_words"].null_count() == measured.height  # no row of kind 'x'
    assert measured["has_table"].null_count() == measured.height  # never read
    full = _frame(library_root, measured=True)
    assert {c: full.schema[c] for c in FACT_FAMILY} == {c: measured.schema[c]
                                                         for c in FACT_FAMILY}
    wide = measure([replace(words_only, needs={})], frame)
    judged = wide.filter(pl.col("has_output"))
    assert judged["n_words"].null_count() == 0
    assert wide.filter(~pl.col("has_output"))["n_words"].null_count() == \
        wide.filter(~pl.col("has_output")).height


def test_let_columns_are_computed_once_per_judged_row(library_root):
    counted = Check(
        name="long", applies=pl.col("has_output"),
        let={"_n": pl.col("n_words"), "_long": pl.col("_n") > 3},
        outcome=pl.when(pl.col("_long")).then(FAILED).otherwise(PASSED),
        detail=pl.lit("at most 3 words"), evidence=pl.format("{} words", pl.col("_n")),
        confidence=pl.lit(90))
    out = run_checks(Grader("acme.words.grader/v1", [counted]),
                     _frame(library_root, measured=False))
    words = out["evidence"].str.extract(r"^(\d+) ", 1).cast(pl.Int64)
    assert out.height > 10
    assert ((words > 3) == (out["outcome"] == "failed")).all()


def test_a_need_for_an_unknown_family_is_refused(library_root):
    bad = Check(name="bad", applies=pl.col("has_output"), needs={"sentence": pl.lit(True)},
                outcome=PASSED, detail=pl.lit("x"), evidence=pl.col("n_words").cast(pl.String),
                confidence=pl.lit(1))
    with pytest.raises(GraderError, match="unknown measure family 'sentence'"):
        measure([bad], _frame(library_root, measured=False))


def test_needs_that_read_a_measure_are_refused(library_root):
    bad = Check(name="circular", applies=pl.col("has_output"),
                needs={"words": pl.col("n_words") > 3}, outcome=PASSED, detail=pl.lit("x"),
                evidence=pl.col("n_words").cast(pl.String), confidence=pl.lit(1))
    with pytest.raises(GraderError, match="needs of check circular read the measure"):
        measure([bad], _frame(library_root, measured=False))


WORD_CASES = [
    "", " ", "one", "  two words  ", "tabs\tand\nnew\r\nlines", "no-break\u00a0space",
    "é accents ünd 漢字 too", "... !!! ---", "a\u2003em\u2009thin\u3000ideographic spaces",
    "trailing newline\n", "\n\nleading blank lines", "x y  z   w",
]


def test_words_are_maximal_runs_of_non_whitespace():
    # n_words, and the per-line counts, agree with splitting on Unicode whitespace
    from pipeline.checks.output_analysis import output_facts

    texts = pl.DataFrame({"binding_text": WORD_CASES})
    measured = output_facts(texts)
    for text, words, lines in zip(WORD_CASES, measured["n_words"], measured["line_words"],
                                  strict=True):
        trimmed = text.strip()
        assert words == len(trimmed.split()), (text, words)
        assert list(lines) == [len(line.split()) for line in trimmed.split("\n")
                               if line.strip()], (text, lines)


JSON_CASES = [
    '{"Name": "x", "first_name": 1, " Last-Name ": null, "a\\"b": [1, 2]}',
    '[]', '{}', '[[], {}, 1, "s", null, true, 2.5]',
    '[{"id": 1, "Tags": ["a"]}, {"id": 2}, {"id": 3, "Deep": {"k": [1]}}, "loose", [[1]]]',
    '{"a\\"b": [1, [2]], "Empty List": [], "o": {"in": [1]}, "s": "[1]"}',
    '[{"a b": 1, "A_B": 2}, {}]', '{"_id": 1, "__v": [2], "*bold*": 3, "tab\\tkey ": [4]}',
    '[{"_id": "a", "Tags_": ["x", "y"]}, {"\\u00a0nb\\u00a0space\\u00a0": []}]',
    '"just a string"', '42', '[1, 2, 3]',
    '```json\n{"fenced": true, "Items": [{"x": 1}]}\n```',
]


def _key(name: str) -> str:
    # a JSON key is normalised as a clause's field name: without case, emphasis, backticks or
    # quotes around it; runs of whitespace, `_` and `-` as one '-'
    return re.sub(r"[\s_\-]+", "-", name.strip().strip("`*_\"'“”").strip().lower())


def test_json_measures_agree_with_python_json():
    from pipeline.checks.output_analysis import output_facts

    measured = output_facts(pl.DataFrame({"binding_text": JSON_CASES}))
    for text, row in zip(JSON_CASES, measured.iter_rows(named=True), strict=True):
        value = json.loads(text.removeprefix("```json\n").removesuffix("\n```"))
        kind = {dict: "object", list: "array", str: "string"}.get(type(value), "number")
        assert row["json_kind"] == kind, text
        keys = [_key(k) for k in value] if isinstance(value, dict) else None
        assert row["json_keys"] == keys, text
        objects = [value] if isinstance(value, dict) else [
            e for e in value if isinstance(e, dict)] if isinstance(value, list) else None
        assert row["json_array_lens"] == (None if objects is None else "\n".join(
            "\n".join(f"{_key(k)}\t{len(v)}" for k, v in o.items() if isinstance(v, list))
            for o in objects)), text
        if not isinstance(value, list):
            assert row["json_len"] is None and row["json_element_keys"] is None, text
            continue
        assert row["json_len"] == len(value), text
        assert row["json_element_keys"] == "\n".join(
            "|" + "|".join(_key(k) for k in e) + "|" if isinstance(e, dict) else ""
            for e in value), text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(st.from_regex(r"[a-z]{1,8}", fullmatch=True), st.text(),
                                min_size=1, max_size=6), min_size=1, max_size=12),
       st.booleans())
def test_field_values_of_json_strings_are_what_python_json_reads(objects, ascii_only):
    """Whatever a string holds (quotes, backslashes, control characters, any script), its
    value in field_values is the string Python's `json` reads (tabs and newlines as spaces)."""
    from pipeline.checks.output_analysis import output_facts

    texts = [json.dumps(o, ensure_ascii=ascii_only) for o in objects]
    measured = output_facts(pl.DataFrame({"binding_text": texts}))
    for text, obj, values in zip(texts, objects, measured["field_values"], strict=True):
        assert values.split("\n") == [
            key + "\t" + re.sub(r"[\t\n]", " ", value) for key, value in obj.items()], text


def test_field_values_split_each_json_pair_at_its_key_and_decode_its_strings():
    from pipeline.checks.output_analysis import output_facts

    pairs = {'a"b': 'x: "y" z', "Count": 12, "list": [1], "url": "https://e.example/a:b",
             "path": "C:\\dir\\", "quote": 'ends "quoted"', "café": "caf\u00e9 \u2713",
             "lines": "one\ntwo\tthree", "slash": "a/b"}
    lines = ['a"b\tx: "y" z', "count\t12", "list\t[", "url\thttps://e.example/a:b",
             "path\tC:\\dir\\", 'quote\tends "quoted"', "café\tcafé ✓", "lines\tone two three",
             "slash\ta/b"]
    # every pair by its pattern, nested ones too; the output's own keys parsed, an array's
    # elements after it (a flat object's pairs are the pattern's alone)
    texts = [json.dumps(doc).replace("a/b", "a\\/b")  # "\/" is JSON for "/" too
             for doc in (pairs, {"outer": pairs}, {"flat": 1})]
    measured = output_facts(pl.DataFrame({"binding_text": texts}))
    assert measured["field_values"][0].split("\n") == lines
    assert measured["field_values"][1].split("\n") == ["outer\t{", *lines]
    assert measured["json_top_values"][0].split("\n") == [*lines[:3], "list\t1", *lines[3:]]
    assert measured["json_top_values"].to_list()[1:] == ["outer\t{", None]
    # ... and those one level below, by the key that holds them (its array's too)
    inner = [f"outer\x1f{line}" for line in (*lines[:3], "list\t1", *lines[3:])]
    assert measured["json_child_values"][1].split("\n") == inner
    assert measured["json_child_values"].to_list()[2] is None
    nested = output_facts(pl.DataFrame({"binding_text": [json.dumps(
        {"summary": {"status": "mixed"}, "checks": [{"status": "pass"}, 3, {"status": "fail"}],
         "tags": ["x"], "deep": {"more": {"status": "no"}}})]}))
    assert nested["json_child_values"][0].split("\n") == [
        "summary\x1fstatus\tmixed", "checks\x1fstatus\tpass", "checks\x1fstatus\tfail",
        "deep\x1fmore\t{"]


def test_a_json_key_is_read_where_it_is_nearest_the_top():
    """A key among the output's own (or its object elements') keys is read there, and only
    there; one nested alone is read where it is; one the clause says is nested, below the
    top."""
    from pipeline.checks.library import _values_of
    from pipeline.checks.output_analysis import output_facts

    texts = ['{"status": "ok", "checks": [{"status": "failing", "name": "db"}]}',
             '[{"state": "open", "labels": [{"state": "active"}]}, 3, {"state": "closed"}]',
             '{"result": {"status": "ok", "tags": ["a", null, ["b"], {"c": 1}]}}',
             '{"status": null, "n": 1.50}', '{"n": 1.50, "o": {"n": 2}}']
    measured = output_facts(pl.DataFrame({"binding_text": texts}))

    def values(key: str, nested: bool | None = None) -> list[list[str]]:
        flag = None if nested is None else pl.lit(nested)
        return measured.select(_values_of(pl.lit(key), flag).alias("v"))["v"].to_list()

    assert values("status") == [["ok"], [], ["ok"], ["null"], []]
    # (a flat object tells no depth: its pairs are all there is)
    assert values("status", nested=True) == [["failing"], [], ["ok"], ["null"], []]
    assert values("state") == [[], ["open", "closed"], [], [], []]
    assert values("tags")[2] == ["["]
    # (a flat object's numbers as written, a nested one's parsed)
    assert [v for v in values("n")] == [[], [], [], ["1.50"], ["1.5"]]


def test_a_label_is_at_most_41_characters_wherever_its_line_is():
    """"Label: value" lines give a field; a label longer than 41 characters is prose, and the
    lines after it are read as before. The bound holds for bare, bulleted and bold labels."""
    from pipeline.checks.output_analysis import LABEL_CHARS, output_facts

    assert LABEL_CHARS == 41
    text = "\n".join([
        "Intro line without a colon",
        "A" * 41 + ": kept at the bound",
        "- **" + "B" * 42 + "**: one past it",
        "Word " * 8 + "end: a sentence that has a colon",
        "* __C-3 d__: y",
        "Short  : x",
        "\t+ É" + "é" * 40 + ": kept, 41 with the capital",
        "Ž" + "ž" * 41 + ": one past it again",
        "Last: z",
    ])
    measured = output_facts(pl.DataFrame({"binding_text": [text]}))
    assert measured["field_values"][0].split("\n") == [
        "a" * 41 + "\tkept at the bound", "c-3-d\ty", "short\tx",
        "é" * 41 + "\tkept, 41 with the capital", "last\tz"]
