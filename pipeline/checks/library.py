"""The content checks of the built-in grader: one per requirement family of clause_analysis.

Every check is a set of polars expressions over the analysed clause frame. Deciding checks
(format, excluded_format, count, literal, enum_value, required_field, numeric_range,
no_extra_fields, field_length, field_type, item_edge, json_shape, value_type,
alternative_output)
settle both ways: `passed` or `failed`, and `undecided` only when the output offers nothing
to measure. One-sided detectors (forbidden_literal, no_secrets) give `failed` or `undecided`,
never `passed`. Deferred checks (judgment, meets_description, testable) always stay
`undecided` and carry their open question into the report.
"""

from __future__ import annotations

import re

import polars as pl

from .clause_analysis import (
    FENCE_LANGUAGES,
    JUDGMENT_ADVICE,
    OPTIONAL,
    VAGUE_WORDS,
    VERSION_MASK,
    normalise_key,
    normalise_value,
)
from .contract import (
    CUT_SHORT,
    FAILED,
    ON_AN_OUTPUT,
    PASSED,
    UNDECIDED,
    excerpt,
    part_read,
    quoted,
)
from .frame import JOINED_MARK
from .grader import SECRET_PATTERNS, Check, Lets, check
from .output_analysis import (
    CHILD_OF,
    WORDS,
    csv_commas,
    csv_unquoted,
    distinct_urls,
    has_fence_mark,
    top_level_items,
    unfenced,
)

# A clause judged on an output read whole: a primary ensures naming one, or a triggered
# conditional (an output cut at the read cap is judged by `output_read_whole`, and by the
# checks that keep the failures its start establishes: see `failed_on_part_read`).
JUDGED = ON_AN_OUTPUT & ~CUT_SHORT
ALTERNATIVE_MET = pl.col("alternative").is_not_null() & (
    pl.col("output_text") == pl.col("alternative")).fill_null(False)
# Content checks skip an output that is exactly the clause's stated alternative ("none").
CONTENT = JUDGED & ~ALTERNATIVE_MET
NAMED = CONTENT & (pl.col("output_scope") == "named")
# Measures that only grow as an output goes on: what the start of an output cut at the read
# cap holds of them, its whole holds at least (the start ends after a whole block, and
# counts only where every code fence it opens it closes, of the whole output: see `count`). A
# list's items, a table's columns or a JSON document's keys are no such measure: the start
# of a JSON array is no JSON, and a later item of less indent makes the earlier ones sub-items.
GROWING = ["words", "chars", "sentences", "paragraphs", "lines", "headings", *(
    f"h{n}" for n in range(1, 7)), "urls", "hashtags", "emojis", "exclamations", "code_blocks"]


def failed_on_part_read(established: pl.Expr) -> pl.Expr:
    """The `keep` of a check that also judges outputs cut at the read cap (only their start was
    read, `bindings.truncated`): every row of an output read whole, and of a cut one only
    where `established`, a failure its start proves of the whole output (a count already past
    an upper bound, a forbidden text found). Its start ends after a whole block
    (`frame.whole_blocks`), so nothing found in it is cut short; one that holds no white
    space (minified JSON: its last token may be cut) establishes nothing, nor do the outputs
    of a service joined (a conditional naming no output)."""
    start = pl.when(CUT_SHORT).then(pl.col("binding_text"))
    return ~CUT_SHORT | (established & (pl.col("output_scope") == "named")
                         & start.str.contains(r"\s").fill_null(False))


# Unicode-aware word boundaries (Rust regex has no lookbehind: the neighbour is consumed).
# Case cannot change the class (`(?-i:…)` inside the case-insensitive patterns that use it):
# marked so, a pattern built from a field name compiles in less than half the time.
EDGE_BEFORE = r"(?:^|(?-i:[^\p{L}\p{N}_]))"
EDGE_AFTER = r"(?:(?-i:[^\p{L}\p{N}_])|$)"
NUMBER = r"-?\d+(?:\.\d+)?"
# A number as text writes it: its thousands grouped by commas ("1,250", "120,400.50"), or not
WRITTEN_NUMBER = r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|" + NUMBER


def _number_value(text: pl.Expr) -> pl.Expr:
    """The value of a WRITTEN_NUMBER (null for other text)."""
    return text.str.replace_all(",", "", literal=True).cast(pl.Float64, strict=False)


DISTINCT = r"(?i)\b(?:distinct|unique|different)\b"
# Heading marks, quotes, emphasis and spaces before a text's first word
LEADING_MARKDOWN = r"^[#>*_\s\"“]+"
FORMAT_NAMES = {
    "json": "valid JSON", "yaml": "YAML", "csv": "CSV", "table": "a markdown table",
    "numbered_list": "a numbered list", "bulleted_list": "a bulleted list",
    "markdown_list": "a markdown list", "list": "a list",
    "code_block": "a fenced code block", "markdown": "markdown", "diff": "a unified diff",
    "checklist": "a markdown checklist (- [ ] items)",
}
LISTS = ["numbered_list", "bulleted_list", "markdown_list", "list"]
CHECKBOX = r"^\[[ xX]\](?:\s|$)"
# The first fence line of an output
FENCE_LINE = r"(?m)^([ \t]*(?:```|~~~)[^\n]*)$"
# A fence opening a line, tagged with one of a language's names (its info string's first word)
FENCE_TAG_PATTERNS = {
    name: r"(?mi)^([ \t]*(?:```|~~~)[ \t]*(?:" + "|".join(re.escape(t) for t in tags)
    + r")(?:[^\w+\-#.\n][^\n]*)?)$"
    for name, tags in FENCE_LANGUAGES.items()}
MARKDOWN_SAMPLE = (r"(?m)^#{1,6} [^\n]*|\*\*[^*\n]+\*\*|\[[^\]\n]+\]\([^)\n]+\)|^[-*+] [^\n]*"
                   r"|`[^`\n]+`")
MEASURE_NAMES = {
    "words": "words", "chars": "characters", "sentences": "sentences",
    "paragraphs": "paragraphs", "lines": "non-empty lines", "headings": "headings",
    "urls": "distinct URLs", "sources": "sources", "items": "items",
    "columns": "table columns", "keys": "top-level keys", "hashtags": "hashtags",
    "emojis": "emojis", "duplicates": "repeated items", "code_blocks": "fenced code blocks",
    "exclamations": "exclamation marks",
    **{f"h{n}": f"H{n} headings ({'#' * n})" for n in range(1, 7)},
}
LEVELS = [f"h{n}" for n in range(1, 7)]
# Units that name a list's items as such ("5 items", "3 bullet points"), not one kind of them
GENERIC_ITEM_UNITS = ["item", "entry", "entrie", "element", "bullet", "point", "row",
                      "record", "value", "string", "object", "number"]
# A hashtag: "#" then a letter or "_", not inside a word, a URL or an entity ("C#", "page#x",
# "&#39;"); a heading's "# " is none
HASHTAG = r"(?:^|[^\p{L}\p{N}_&#/])#[\p{L}_][\p{L}\p{N}_]*"
# An emoji, counted once with its modifiers and joined parts (a flag is two regional
# indicators; "👨‍👩‍👧" is one); text symbols such as © and ™ are none
EMOJI = (r"\p{Regional_Indicator}{2}|(?:\p{Emoji_Presentation}|\p{Extended_Pictographic}\x{FE0F})"
         r"(?:\p{Emoji_Modifier}|\x{FE0F}|\x{200D}(?:\p{Emoji_Presentation}"
         r"|\p{Extended_Pictographic}\x{FE0F}?))*")


def _number_of(n: pl.Expr, what: pl.Expr) -> pl.Expr:
    """`what` (a plural: "sentences", "distinct URLs") in the singular when `n` is 1."""
    return pl.when(n == 1).then(what.str.replace(r"s$", "")).otherwise(what)


def _level_count(measure: pl.Expr) -> pl.Expr:
    """The headings of the level `measure` names ("h2": "## …"), on the rows that count them."""
    marks = (pl.when(measure.is_in(LEVELS)).then(pl.col("headings"))
             .list.eval(pl.element().str.extract(r"^(#+)", 1).str.len_chars()))
    found = pl.lit(None, pl.Int64)
    for n in range(1, 7):  # one pass per level: list.eval reads no other column
        found = pl.when(measure == f"h{n}").then(
            marks.list.eval(pl.element() == n).list.sum()).otherwise(found)
    return found


def _repeats(measure: pl.Expr) -> pl.Expr:
    """How many list items (lines, without a list) repeat an earlier one, on the rows that ask."""
    listed = pl.col("list_items").list.len() > 0
    texts = (pl.when(measure == "duplicates").then(
        pl.when(listed).then(pl.col("list_items")).otherwise(pl.col("lines")))
        .list.eval(pl.element().str.to_lowercase().str.strip_chars(" .;,"))
        .list.eval(pl.element().filter(pl.element().str.contains(r"[\p{L}\p{N}]"))))
    return texts.list.len() - texts.list.n_unique()


def label() -> pl.Expr:
    """How evidence names what was read: `output`, or the outputs of a service."""
    return (pl.when(pl.col("output_scope") == "named")
            .then(pl.format("`{}`", pl.col("target_output")))
            .otherwise(pl.format("the outputs of `{}`", pl.col("service"))))


def around(text: pl.Expr, pattern: pl.Expr, width: int = 80, *, literal: bool = False
           ) -> pl.Expr:
    """The first match of `pattern` (a regex, or a literal text) in `text`, with up to `width`
    characters either side, as it stands (trimmed: evidence quotes the output exactly); null
    where there is no match.

    Only the window is copied: the match is located (a byte offset, turned into characters
    by measuring the text before it) and the window sliced out.
    """
    def located(t: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
        """(characters before the match, the match, where its window starts) in `t`."""
        at = t.str.find(pattern, literal=literal)
        before = t.cast(pl.Binary).bin.head(at).cast(pl.String).str.len_chars().cast(pl.Int64)
        match = pattern if literal else t.str.extract(pattern, 0)
        return before, match, (before - width).clip(lower_bound=0)

    before, match, start = located(text)
    window = text.str.slice(start, before - start + match.str.len_chars() + width)
    # (within the output the match is in, of several joined: OUTPUTS_JOINED, only ever in a
    # text of a service's outputs; located again on those rows alone)
    joined = pl.when(pl.col("output_scope") == "service").then(text)
    before, match, start = located(joined)
    within = pl.concat_str(
        joined.str.slice(start, before - start).str.extract("([^" + JOINED_MARK + "]*)$", 1),
        match, joined.str.slice(before + match.str.len_chars(), width)
        .str.extract("^([^" + JOINED_MARK + "]*)", 1))
    return quoted(pl.coalesce(within, window).str.strip_chars())


def _as_written(name: pl.Expr, joiner: str = r"[\s_\-]") -> pl.Expr:
    """A regex of a normalised name (a field's, a key's) as an output may write it: escaped,
    each `-` any of `joiner` (names compare with `_`, `-` and spaces alike)."""
    return _escaped(name).str.replace_all(r"\\-|-", joiner)


def _escaped(expr: pl.Expr) -> pl.Expr:
    return expr.str.escape_regex()


def _key_line(key: pl.Expr) -> pl.Expr:
    """Regex for the field_values lines of a (normalised) key."""
    return pl.format("(?m)^{}\t[^\n]*", _escaped(key))


def _array_lengths(key: pl.Expr) -> pl.Expr:
    """The lengths of the JSON arrays a (normalised) key holds, wherever it is in the output."""
    return (pl.col("json_array_lens").fill_null("").str.extract_all(_key_line(key))
            .list.eval(pl.element().str.replace(r"^[^\t]*\t", "").cast(pl.Int64)))


def _values_of(key: pl.Expr, nested: pl.Expr | None = None, parent: pl.Expr | None = None
               ) -> pl.Expr:
    """The values of a (normalised) key: a JSON output's where the key is nearest the top,
    among its own keys (an array's elements too) where it is one of them, else at any depth
    (`{"status": "ok", "checks": [{"status": "failing"}]}` has one `status`, "ok"; v21 read
    both); where `nested` holds (a field inside another, "`checks`: … each with `status`"),
    those inside the field `parent` where the output has it at its top (v22 read every one
    below the top, a `summary`'s `status` too), else those below the top (v22 as first
    written read the output's own)."""
    def lines(column: str, of: pl.Expr = key) -> pl.Expr:
        return pl.col(column).fill_null("").str.extract_all(_key_line(of)).list.eval(
            pl.element().str.replace(r"^[^\t]*\t", ""))

    every, top = lines("field_values"), lines("json_top_values")
    nearest = pl.when(top.list.len() > 0).then(top).otherwise(every)
    if nested is None:
        return nearest
    below = every.list.set_difference(top)
    if parent is not None:
        inside = lines("json_child_values", pl.concat_str(parent, pl.lit(CHILD_OF), key))
        below = pl.when(inside.list.len() > 0).then(inside).otherwise(below)
    return pl.when(nested).then(below).otherwise(nearest)


# ---- format -------------------------------------------------------------------------------

# A `.csv` output of one column: no comma parts its cells (v22 read no CSV in
# "name\nalpha\nbeta", and counted its header line as a row); its first line a header (no
# sentence, no JSON, markdown or HTML), a row below it, and no table's bar: an error message,
# a markdown table or JSON in a `.csv` file is none. (Its text searched only where the file is
# a CSV: a search of every output's text would cost a pass over each.)
CSV_FILE = pl.col("binding_extension") == "csv"
ONE_COLUMN = r"^[^\s{\[#|<>](?:[^\n|]{0,78}[^\s|.!?:;])?[ \t]*\r?\n[^|]*\S[^|]*$"
_CSV_TEXT = pl.when(CSV_FILE).then(pl.col("output_text"))
ONE_COLUMN_CSV = (_CSV_TEXT.str.contains(ONE_COLUMN)
                  & ~csv_unquoted(_CSV_TEXT).str.contains(",", literal=True)).fill_null(False)
# A CSV: lines of as many cells each (`csv_like`), or one column of a `.csv` file
IS_CSV = pl.col("csv_like").fill_null(False) | ONE_COLUMN_CSV
# A CSV the clause says has no header row: its first line is a row, and names no column
HEADERLESS = pl.col("csv_headerless").fill_null(False)

# An output that is a JSON array and no list of markers or lines: a list, its elements the items
JSON_LIST = ((pl.col("n_bullets") + pl.col("n_numbered") + pl.col("n_line_items") == 0)
             & (pl.col("json_kind") == "array")).fill_null(False)


def _format_found(fmt: pl.Expr, *, lenient: bool) -> pl.Expr:
    """Whether the output is in (or holds) the format named by `fmt`. `lenient` (a format
    required): any text is markdown but JSON, and a JSON object or array is YAML. Not
    lenient (a format ruled out): markdown means markdown syntax, YAML a YAML that is not
    JSON ("JSON, not YAML"); a list is one with markers or, when lenient, lines of one item
    each."""
    lists = pl.col("n_bullets") + pl.col("n_numbered")
    lines = pl.col("n_line_items") if lenient else pl.lit(0)
    structured = pl.col("json_kind").is_in(["object", "array"]).fill_null(False)
    markdown = ~structured if lenient else pl.col("has_markdown")
    yaml = (pl.col("yaml_like") | structured) if lenient else (pl.col("yaml_like") & ~structured)
    return (
        pl.when(fmt == "json").then(pl.col("json_kind").is_not_null())
        .when(fmt == "yaml").then(yaml)
        .when(fmt == "csv").then(IS_CSV)
        .when(fmt == "table").then(pl.col("has_table"))
        .when(fmt == "numbered_list").then(pl.col("n_numbered") > 0)
        .when(fmt == "bulleted_list").then(pl.col("n_bullets") > 0)
        .when(fmt == "markdown_list").then(lists > 0)
        # (a JSON array is a list, its elements the items, empty or not)
        .when(fmt == "list").then((lists + lines > 0) | (
            (pl.col("json_kind") == "array").fill_null(False) if lenient else pl.lit(False)))
        .when(fmt == "code_block").then(pl.col("has_code_block"))
        # every list item a checkbox, "[ ]" or "[x]"
        .when(fmt == "checklist").then((lists > 0) & pl.col("list_items").list.eval(
            pl.element().str.contains(CHECKBOX)).list.all())
        .when(fmt == "markdown").then(markdown)
        .when(fmt == "diff").then(pl.col("is_diff"))
        .otherwise(None)
    )


def _format_needs(fmt: pl.Expr) -> dict[str, pl.Expr]:
    """The measure families `_format_found` and `_format_shown` read, per format."""
    # (a list may be a JSON array: measured so only where the output opens like one)
    may_be_json = (fmt == "list") & pl.col("output_text").str.contains(r"^\s*(?:\[|```)")
    return {"json": fmt.is_in(["json", "yaml", "markdown"]) | may_be_json, "yaml": fmt == "yaml",
            "csv": fmt == "csv", "table": fmt == "table",
            "lists": fmt.is_in([*LISTS, "checklist"]),
            "code": fmt == "code_block", "markdown": fmt == "markdown", "diff": fmt == "diff"}


def _format_shown(fmt: pl.Expr, let: Lets) -> pl.Expr:
    """Evidence of the format found in the output: the JSON's start, the table header, the
    list's items, the fence, the markdown syntax."""
    first_item = let("_first_item", quoted(excerpt(
        pl.col("list_items").list.first().fill_null(""), 120)))
    start = let("_start", quoted(excerpt(pl.col("output_text"), 160)))
    return (
        pl.when(fmt == "json").then(pl.format(
            "valid JSON {}{}: {}", pl.col("json_kind"),
            pl.when(pl.col("json_fenced")).then(pl.lit(" (inside one fenced block)"))
            .otherwise(pl.lit("")), start))
        .when(fmt == "table").then(pl.format("table header {}", quoted(
            pl.when(fmt == "table").then(pl.col("output_text"))
            .str.extract(r"(?m)^([^\n]*\|[^\n]*)$", 1).str.strip_chars())))
        .when((fmt == "list") & JSON_LIST)
        .then(pl.format("a JSON array of {} {}: {}", pl.col("json_len"),
                        _number_of(pl.col("json_len"), pl.lit("elements")), start))
        .when((fmt == "list") & (pl.col("n_line_items") > 0)).then(pl.format(
            "{} lines of one item each, no list markers; first: {}", pl.col("n_line_items"),
            first_item))
        .when(fmt == "checklist").then(pl.format(
            "{} {}; first: {}", pl.col("list_items").list.len(),
            _number_of(pl.col("list_items").list.len(), pl.lit("checklist items")), first_item))
        .when(fmt.is_in(LISTS))
        .then(pl.format("{} numbered and {} bulleted items; first: {}", pl.col("n_numbered"),
                        pl.col("n_bullets"), first_item))
        .when(fmt == "code_block").then(pl.format("fenced block {}", quoted(
            pl.when(fmt == "code_block").then(pl.col("output_text"))
            .str.extract(FENCE_LINE, 1))))
        .when(fmt == "diff").then(pl.format("unified diff hunk {}", quoted(
            pl.when(fmt == "diff").then(pl.col("output_text")).str.extract(
                r"(?m)^(@@ [^\n]*)$", 1).str.strip_chars())))
        .when((fmt == "markdown") & pl.col("has_markdown")).then(pl.format(
            "markdown syntax: {}", around(pl.when(fmt == "markdown").then(pl.col("output_text")),
                                          pl.lit(MARKDOWN_SAMPLE), 30)))
        .when(fmt == "markdown").then(pl.format(
            "plain text with no markdown syntax (valid markdown): {}", start))
        .otherwise(quoted(excerpt(pl.col("output_text"), 200)))
    )


def _no_format(fmt: pl.Expr, where: pl.Expr, start: pl.Expr) -> pl.Expr:
    """'no bulleted list in `out`; it begins “…”'."""
    name = fmt.replace_strict(FORMAT_NAMES, default=fmt).str.replace(r"^an? ", "")
    return pl.format("no {} in {}; it begins {}", name, where, start)


def _format_confidence(fmt: pl.Expr) -> pl.Expr:
    return (pl.when(fmt == "yaml").then(70).when(fmt == "csv").then(75)
            .when((fmt == "json") & pl.col("json_fenced")).then(75))


@check("format")
def output_format() -> Check:
    """The output is in the named format (JSON, YAML, CSV, table, list, code block, markdown)."""
    fmt = pl.col("formats")
    # named once, read by several branches (see Check.let)
    let = Lets()
    # "inside a ```diff code block": a fence tagged with the language (only rows that name
    # one search for it)
    lang = pl.when(fmt == "code_block").then(pl.col("fence_lang"))
    tags = lang.replace_strict(FENCE_TAG_PATTERNS, default=None, return_dtype=pl.String)
    tagged = let("_tagged", pl.when(lang.is_not_null()).then(pl.col("output_text"))
                 .str.extract(tags, 1))
    ok = let("_ok", _format_found(fmt, lenient=True) & (lang.is_null() | tagged.is_not_null()))
    where = let("_label", label())
    shown = pl.when(tagged.is_not_null()).then(pl.format("fenced block {}", quoted(tagged))) \
        .otherwise(_format_shown(fmt, let))
    first_item, start = pl.col("_first_item"), pl.col("_start")
    missing = (
        pl.when(fmt == "json").then(pl.format("not valid JSON: {}", start))
        .when(fmt == "table").then(pl.format(
            "no markdown table (a header row, then a |---| separator) in {}; it begins {}",
            where, quoted(excerpt(pl.col("output_text"), 120))))
        .when((fmt == "numbered_list") & (pl.col("n_bullets") > 0)).then(pl.format(
            "a bulleted list, not a numbered one; first item: {}", first_item))
        .when((fmt == "bulleted_list") & (pl.col("n_numbered") > 0)).then(pl.format(
            "a numbered list, not a bulleted one; first item: {}", first_item))
        .when(fmt == "markdown").then(pl.format("JSON, not markdown: {}", start))
        .when(lang.is_not_null() & pl.col("has_code_block")).then(pl.format(
            "no fenced block in {} is tagged {}; its first fence: {}", where, lang, quoted(
                pl.when(lang.is_not_null()).then(pl.col("output_text"))
                .str.extract(FENCE_LINE, 1))))
        .otherwise(_no_format(fmt, where, start))
    )
    confidence = (
        _format_confidence(fmt)
        .when((fmt == "markdown") & ok & ~pl.col("has_markdown")).then(60)
        .when((fmt == "list") & ok & (pl.col("n_line_items") > 0)).then(80)
        .when(fmt == "markdown").then(85)
        .otherwise(95)
    )
    return Check(
        applies=NAMED, each="formats", let=let, needs=_format_needs(fmt),
        outcome=pl.when(ok).then(PASSED).otherwise(FAILED),
        detail=pl.format("{} is {}", where, pl.when(lang.is_not_null())
                         .then(pl.format("a fenced code block tagged {}", lang))
                         .otherwise(fmt.replace_strict(FORMAT_NAMES, default=fmt))),
        evidence=pl.when(ok).then(shown).otherwise(missing),
        confidence=confidence,
    )


@check("excluded_format")
def excluded_format() -> Check:
    """A format the clause rules out ("plain text, not JSON", "no bullet points", "prose
    rather than a table") is not what the output is in, or holds: for markdown, no markdown
    syntax."""
    fmt = pl.col("excluded_formats")
    let = Lets()
    found, where = let("_found", _format_found(fmt, lenient=False)), let("_label", label())
    shown = _format_shown(fmt, let)
    return Check(
        applies=NAMED, each="excluded_formats", let=let, needs=_format_needs(fmt),
        outcome=pl.when(found).then(FAILED).otherwise(PASSED),
        detail=pl.format("{} is not {}", where, fmt.replace_strict(FORMAT_NAMES, default=fmt)),
        evidence=pl.when(found).then(shown).otherwise(_no_format(fmt, where, pl.col("_start"))),
        confidence=_format_confidence(fmt).when(fmt == "markdown").then(85).otherwise(95),
    )


# The kinds of JSON array element each element type of a clause admits.
ELEMENT_KINDS = {"string": ["string"], "number": ["integer", "number"], "integer": ["integer"],
                 "object": ["object"], "array": ["array"], "boolean": ["boolean"]}


@check("json_shape")
def json_shape() -> Check:
    """A "JSON object" is an object and a "JSON array" an array; "a JSON array of strings"
    holds strings only (numbers: integers or decimals; an empty array holds none)."""
    elements, kinds = pl.col("json_elements"), pl.col("json_element_kinds")
    admitted = elements.replace_strict(ELEMENT_KINDS, default=None,
                                       return_dtype=pl.List(pl.String))
    ok = (pl.col("json_kind") == pl.col("json_shape")) & (
        elements.is_null() | (kinds.list.set_difference(admitted).list.len() == 0)).fill_null(False)
    return Check(
        applies=NAMED & pl.col("json_shape").is_not_null() & pl.col("json_kind").is_not_null(),
        outcome=pl.when(ok).then(PASSED).otherwise(FAILED),
        detail=pl.format("{} is a JSON {}{}", label(), pl.col("json_shape"),
                         pl.when(elements.is_not_null()).then(pl.format(" of {}s", elements))
                         .otherwise(pl.lit(""))),
        evidence=pl.format("a JSON {}{}: {}", pl.col("json_kind"),
                           pl.when(pl.col("json_kind") == "array")
                           .then(pl.format(" of {} elements{}", pl.col("json_len"),
                                           pl.when(kinds.list.len() > 0)
                                           .then(pl.format(" ({})", kinds.list.join(", ")))
                                           .otherwise(pl.lit(""))))
                           .otherwise(pl.lit("")),
                           quoted(excerpt(pl.col("output_text"), 120))),
        confidence=pl.lit(95),
    )


MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
ISO_DATE = r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
ISO_DATETIME = (ISO_DATE + r"[Tt ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:[.,]\d+)?)?"
                r"(?:[Zz]|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?")
EMAIL_ADDRESS = r"[^@\s<>\"]+@[^@\s<>\"]+\.[^@\s<>\".]+"
# A date and time as mail headers write it (RFC 2822: "Tue, 17 Mar 2026 14:35:22 +0000"), its
# zone left out once a zone name after it is dropped (`_zone_dropped`)
RFC_2822 = (r"(?i:(?:(?:mon|tue|wed|thu|fri|sat|sun),?\s+)?(?:0?[1-9]|[12]\d|3[01])\s+" + MONTH
            + r"\s+\d{4}\s+(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?:\s*(?:[+-]\d{4}|z|utc|gmt))?)")
# A date as written without its time: ISO 8601, "30 Nov 2026", "Nov 30, 2026", "11/30/2026"
CALENDAR_DATE = (ISO_DATE + r"|\d{1,2}\s+" + MONTH + r",?\s+\d{4}|" + MONTH
                 + r"\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}|\d{1,2}/\d{1,2}/\d{2,4}")
VALUE_PATTERNS = {
    "integer": r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)$",
    "number": r"^[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?$",
    "boolean": r"(?i)^(?:true|false)$",
    "url": r"(?i)^https?://[^\s<>\"]+$",
    "iso_date": "^" + ISO_DATE + "$",
    "iso_datetime": "^" + ISO_DATETIME + "$",
    # an ISO 8601 date and time (a space for the T too), or Unix seconds or milliseconds
    "datetime": "^(?:" + ISO_DATETIME + "|" + RFC_2822 + r"|\d{9,10}|\d{12,13})$",
    "uuid": r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
    # an address, alone or after a display name of a few words, or quoted ("Ann Lee
    # <ann@example.com>"; v22: no address; not a sentence before it; the value's opening
    # quote is trimmed, see `_trimmed_value`)
    "email": ("^(?:" + EMAIL_ADDRESS + r"|(?:\"?[^\"<>\n]{1,80}\"|[\p{L}\p{M}'.\-]+(?:[ \t]+"
              r"[\p{L}\p{M}'.\-]+){0,3})?[ \t]*<" + EMAIL_ADDRESS + ">)$"),
    # "45%", "12.5 %", "30 percent", or the number alone (a JSON field's 45 or 0.45)
    "percentage": r"(?i)^[+-]?(?:\d+(?:\.\d+)?|\.\d+)(?:\s?%|\s+percent)?$",
    # (a date and time too: "2026-12-05T10:00:00Z" is a date with its time; v22: no date) ...
    "date": ("(?i)^(?:" + ISO_DATETIME + r"(?:\s+(?:UTC|GMT))?|" + RFC_2822 + "|" + CALENDAR_DATE
             + ")$"),
    # ... but not where the clause says it goes without its time (clause_analysis.DATE_ONLY)
    "date_only": "(?i)^(?:" + CALENDAR_DATE + ")$",
    # a timestamp said to be Unix time (UNIX_SAID): seconds, with decimals or not, or
    # milliseconds
    "unix_time": r"^(?:\d{9,10}(?:\.\d{1,6})?|\d{12,13})$",
    # an address said to go without a display name (BARE_SAID)
    "bare_email": "^" + EMAIL_ADDRESS + "$",
}
# What may follow a value that opens a longer output
VALUE_LEAD_END = r"(?:$|[`\"'*_]*(?:\s|[,;:—–]|\.(?:\s|$)))"
VALUE_NAMES = {"integer": "an integer", "number": "a number", "boolean": "a boolean (true or "
               "false)", "url": "a URL", "iso_date": "an ISO 8601 date (YYYY-MM-DD)",
               "date": "a date", "date_only": "a date without its time",
               "iso_datetime": "an ISO 8601 date and time "
               "(YYYY-MM-DDTHH:MM…)", "datetime": "a timestamp (an ISO 8601 or RFC 2822 date "
               "and time, or Unix seconds)", "uuid": "a UUID", "email": "an email address",
               "unix_time": "a Unix timestamp (seconds or milliseconds since 1970)",
               "bare_email": "an email address without a display name",
               "percentage": "a percentage",
               "emoji": "an emoji"}


@check("csv_header")
def csv_header() -> Check:
    """A CSV the clause asks a header row of ("a CSV with a header row") opens with one: no
    cell of its first line is a number (all of them numbers: a data row, not a header; some
    of them, "id,2025,2026": undecided)."""
    # the first line's cells, a quoted cell whole (its commas are no separators)
    cells = csv_unquoted(pl.col("first_line")).str.split(",").list.eval(
        pl.element().str.strip_chars())
    let = Lets()
    n = let("_cells", cells.list.len())
    numbers = let("_numbers", cells.list.eval(
        pl.element().str.contains(r"^[+-]?(?:\d+(?:[.,]\d+)*|\.\d+)%?$")).list.sum())
    empty = let("_empty", cells.list.eval(pl.element() == "").list.sum())
    is_csv = let("_is_csv", IS_CSV)
    outcome = let("_outcome", pl.when(~is_csv).then(UNDECIDED)
                  .when((numbers == 0) & (empty == 0)).then(PASSED)
                  .when(numbers == n).then(FAILED).otherwise(UNDECIDED))
    first = quoted(excerpt(pl.col("first_line"), 160))
    return Check(
        applies=NAMED & pl.col("csv_header").fill_null(False), let=let,
        needs={"csv": pl.lit(True)},
        outcome=outcome,
        detail=pl.format("{} opens with a header row", label()),
        evidence=pl.when(~is_csv).then(pl.format("no CSV in {} to find a header row in", label()))
        .when(outcome == PASSED).then(pl.format(
            "first line, {} named column{}: {}", n,
            pl.when(n == 1).then(pl.lit("")).otherwise(pl.lit("s")), first))
        .when(outcome == FAILED).then(pl.format("the first line is data, every cell a number: {}",
                                               first))
        .otherwise(pl.format("{} of the {} cells of the first line are numbers or empty: {}",
                             numbers + empty, n, first)),
        confidence=pl.when(outcome == UNDECIDED).then(0).when(outcome == PASSED).then(80)
        .otherwise(85),
    )


@check("blank_line")
def blank_line() -> Check:
    """The first line is followed by a blank line and more text ("a subject line, a blank
    line, then a body")."""
    let = Lets()
    # (the output's own text is trimmed: a final blank line is no separator)
    lines = let("_lines", pl.col("output_text").str.split("\n"))
    second = let("_second", lines.list.get(1, null_on_oob=True))
    ok = let("_ok", second.str.strip_chars().eq("") & (lines.list.len() >= 3))
    first = quoted(excerpt(lines.list.first(), 120))
    return Check(
        applies=NAMED & pl.col("blank_after_first").fill_null(False), let=let,
        outcome=pl.when(ok).then(PASSED).otherwise(FAILED),
        detail=pl.format("{}: a blank line after the first line", label()),
        evidence=pl.when(ok).then(pl.format("a blank line follows the first line, {}", first))
        .when(second.is_null()).then(pl.format("{} is one line, {}: nothing follows it",
                                               label(), first))
        .otherwise(pl.format("the first line, {}, is followed by {}, not a blank line", first,
                             quoted(excerpt(second, 120)))),
        confidence=pl.lit(90),
    )


# A markdown link and nothing else ("[PR #3](https://github.com/acme/app/pull/3)", a URL of
# its own in angle brackets, "<https://…>"): groups 1 and 2 are where it leads (one is empty)
LINK_ONLY = (r"^(?:\[[^\]\n]*\]\(\s*<?(\S+?)>?(?:\s+\"[^\"\n]*\")?\s*\)|<(https?://[^\s<>]+)>)$")


def _trimmed_value(text: pl.Expr) -> pl.Expr:
    """A value without surrounding whitespace, quotes, backticks, emphasis or a final period."""
    return text.str.strip_chars().str.strip_chars("`\"'*_").str.strip_chars().str.replace(
        r"\.$", "")


def _mask_pattern(mask: pl.Expr) -> pl.Expr:
    """The regex of a date or time mask ("DD/MM/YYYY", "HH:MM"): MM is the month beside a day
    or a year, else minutes."""
    dated = mask.str.contains("DD|YY")
    p = mask.str.replace_all(".", "\\.", literal=True)
    for part, digits in (("YYYY", r"\d{4}"), ("YY", r"\d{2}"), ("DD", r"(?:0[1-9]|[12]\d|3[01])"),
                         ("HH", r"(?:[01]\d|2[0-3])"), ("hh", r"(?:[01]\d|2[0-3])"),
                         ("mm", r"[0-5]\d"), ("ss", r"[0-5]\d")):
        p = p.str.replace_all(part, digits, literal=True)
    p = (pl.when(dated).then(p.str.replace_all("MM", "(?:0[1-9]|1[0-2])", literal=True))
         .otherwise(p.str.replace_all("MM", r"[0-5]\d", literal=True)))
    return (pl.when(mask.str.contains("^(?:" + VERSION_MASK + ")$"))
            .then(_version_mask_pattern(mask))
            .when(mask.str.contains("[Xx#]")).then(_number_mask_pattern(mask))
            .otherwise(pl.concat_str(pl.lit("^"), p, pl.lit("$"))))


def _version_mask_pattern(mask: pl.Expr) -> pl.Expr:
    """The regex of a version's mask ("X.Y.Z", "vX.Y", "MAJOR.MINOR.PATCH"): so many numbers
    parted by dots, "v" before them where the mask has it (and allowed where it has not), a
    pre-release or build after them ("1.4.0-rc.1", "2.0.1+build.7")."""
    v = pl.when(mask.str.starts_with("v")).then(pl.lit("v")).otherwise(pl.lit("v?"))
    dots = mask.str.count_matches(".", literal=True).cast(pl.String)
    return pl.concat_str(pl.lit("^"), v, pl.lit(r"\d+(?:\.\d+){"), dots,
                         pl.lit(r"}(?:[\-+][0-9A-Za-z.\-+]+)?$"))


def _number_mask_pattern(mask: pl.Expr) -> pl.Expr:
    """The regex of a number's mask ("$X.XX", "X,XXX", "XX.X%"): its marks as they are, any
    number of whole digits (grouped by commas where the mask groups them), as many decimals
    as the mask has; a minus sign may lead."""
    before = mask.str.extract(r"^([^Xx#]*)", 1).str.escape_regex()
    whole = mask.str.extract(r"([Xx#][Xx#,]*)", 1)
    decimals = mask.str.extract(r"\.([Xx#]+)", 1).str.len_chars()
    after = mask.str.extract(r"[Xx#]([^Xx#]*)$", 1).str.escape_regex()
    digits = (pl.when(whole.str.contains(",", literal=True)).then(pl.lit(r"\d{1,3}(?:,\d{3})*"))
              .otherwise(pl.lit(r"\d+")))
    fraction = (pl.when(decimals.is_not_null())
                .then(pl.concat_str(pl.lit(r"\.\d{"), decimals.cast(pl.String), pl.lit("}")))
                .otherwise(pl.lit("")))
    return pl.concat_str(pl.lit("^-?"), before, digits, fraction, after, pl.lit("$"))


@check("value_type")
def value_type() -> Check:
    """The output is one value of the type the clause is ("an integer", "a URL", "an ISO 8601
    date"): the whole output, trimmed of surrounding quotes, backticks, emphasis and a final
    period; or, where the output goes on ("an integer followed by a one-line note"), its
    first word."""
    kind = pl.col("value_type")
    # one search per row, with the pattern of its type (or of its mask)
    n_digits = pl.col("value_mask").str.len_chars()
    pattern = (pl.when(kind == "masked").then(_mask_pattern(pl.col("value_mask")))
               # "a 6-digit code": six digits, in groups set apart by a space or a dash
               .when(kind == "digits").then(pl.concat_str(
                   pl.lit(r"^\d(?:[ \-]?\d){"), (n_digits - 1).cast(pl.String), pl.lit("}$")))
               .otherwise(kind.replace_strict(VALUE_PATTERNS, default=None,
                                              return_dtype=pl.String)))
    # "an integer followed by a one-line note": the value is the output's first word, set off
    # by a space, a comma, colon, semicolon or dash, or a period that ends a sentence
    lead = pl.col("value_lead").fill_null(False)
    pattern = pl.when(lead).then(pattern.str.replace(r"\$$", VALUE_LEAD_END)).otherwise(pattern)
    text = pl.col("output_text")
    let = Lets()
    # (a URL's: where a link that is the whole output leads; v22 read the link, no URL)
    value = let("_value", pl.when(lead).then(text.str.strip_chars().str.strip_chars_start(
        "`\"'*_")).when(kind == "url").then(_trimmed_value(text).str.replace(LINK_ONLY, "${1}${2}"))
        .otherwise(_trimmed_value(text)))
    typed = pl.when(kind.is_in(["datetime", "iso_datetime"]) & ~lead).then(
        _zone_dropped(value)).otherwise(value)
    ok = let("_ok", typed.str.contains(pattern).fill_null(False))
    within = pl.col("value_within")
    # (null where the value is not of its type: it is not said to be outside)
    judged = ok & within.is_not_null()
    inside = let("_inside", pl.when(judged).then(_within_facts(pl.when(judged).then(value))
                                                 .str.contains(_within_mark(within), literal=True)))
    typed_name = (pl.when((kind == "masked") & lead)
                  .then(pl.format("a value written as {}", pl.col("value_mask")))
                  .when(kind == "masked").then(pl.format("written as {}", pl.col("value_mask")))
                  .when(kind == "digits").then(pl.format("{} digits", n_digits))
                  .otherwise(kind.replace_strict(VALUE_NAMES, default=kind)))
    named = (pl.when(within.is_not_null()).then(pl.format("{} {}", typed_name, within))
             .otherwise(typed_name))
    verb = pl.when(lead).then(pl.lit("opens with")).otherwise(pl.lit("is"))
    negated = pl.when(lead).then(pl.lit("does not open with")).otherwise(pl.lit("is not"))
    shown = quoted(excerpt(pl.col("output_text"), 120))
    return Check(
        applies=NAMED & kind.is_not_null(), let=let,
        outcome=pl.when(ok & inside.fill_null(True)).then(PASSED).otherwise(FAILED),
        detail=pl.format("{} {} {}", label(), verb, named),
        # (a value not of its type is said so; one of its type outside what it must be
        # within, so: "`out` is a URL, not on github.com")
        evidence=pl.when(inside.not_()).then(pl.format(
            "{} {} {}, not {}: {}", label(), verb, typed_name, within, shown))
        .when(ok).then(pl.format("{} {} {}: {}", label(), verb, named, shown))
        .otherwise(pl.format("{} {} {}: {}", label(), negated, typed_name, shown)),
        confidence=pl.lit(95),
    )


def _zone_dropped(value: pl.Expr) -> pl.Expr:
    """A timestamp without the zone named after it ("2026-03-17 14:35:22 UTC"): what the
    timestamp patterns read (v21: no timestamp)."""
    return value.str.replace(r"\s+(?:UTC|GMT)$", "")


def _within_facts(value: pl.Expr) -> pl.Expr:
    """What a value of its type is within, as ".UTC|.2026|.api.github.com|" (a field's values
    are read in `list.eval`, where no other column is): "UTC" for a timestamp in UTC or GMT
    ("Z", an offset of 0, the zone named after it, or Unix seconds), then the year (a Unix
    time's, else its first four-digit number), then a URL's host or an email address's
    domain; "-" for what it has not. `_within_mark` of a zone is in them where it is in it."""
    # (Unix seconds may have decimals: "1764928800.25")
    epoch = value.str.extract(r"^(\d{9,13})(?:\.\d{1,6})?$", 1).cast(pl.Int64, strict=False)
    year = pl.coalesce(
        pl.from_epoch(pl.when(epoch < 10**11).then(epoch).otherwise(epoch // 1000),
                      time_unit="s").dt.year().cast(pl.String),
        value.str.extract(r"(?:^|\D)(\d{4})(?:\D|$)", 1))
    host = pl.coalesce(
        value.str.extract(r"(?i)^https?://(?:[^@/\s]*@)?([^/:?#\s]+)", 1),
        # (an address's, after a display name too: "Ann <ann@acme.com>")
        value.str.extract(r"@([^@\s<>]+)>?$", 1)).str.to_lowercase().str.strip_chars(".")
    utc = value.str.contains(r"(?:[Zz]|[+-]00:?00|\s(?:UTC|GMT))$") | epoch.is_not_null()
    return pl.concat_str(pl.lit("."), pl.when(utc).then(pl.lit("UTC")).otherwise(pl.lit("-")),
                         pl.lit("|."), year.fill_null("-"), pl.lit("|."), host.fill_null("-"),
                         pl.lit("|"))


def _within_mark(within: pl.Expr) -> pl.Expr:
    """What `_within_facts` holds for a value within `within` ("in UTC", "on github.com"): a
    domain's subdomains are on it too (".api.github.com|" ends with ".github.com|")."""
    zone = within.str.extract(r"(\S+)$", 1).replace("GMT", "UTC")
    return pl.concat_str(pl.lit("."), zone, pl.lit("|"))


# ---- counts and lengths -------------------------------------------------------------------

def _csv_counted() -> pl.Expr:
    """A CSV the clause names, whose lines below the header are its items."""
    return pl.col("formats").list.contains("csv") & IS_CSV


def _some(count: pl.Expr) -> pl.Expr:
    """`count`, or null where it is 0: no such structure to count in."""
    return pl.when(count > 0).then(count)


def _item_count() -> tuple[pl.Expr, pl.Expr]:
    """(number of items, what was counted): the named format first, else what the output has."""
    fmts = pl.col("formats")
    lists = pl.col("n_bullets") + pl.col("n_numbered")
    # "a comma-separated list of 3 to 5 keywords": the values of a one-line output
    one_line = pl.when(pl.col("inline_list").is_not_null()).then(pl.col("output_text"))
    inline = ~one_line.str.contains("\n", literal=True).fill_null(True)
    csv = _csv_counted()
    n = (
        pl.when(inline).then(one_line.str.split(pl.col("inline_list"))
                             .list.eval(pl.element().str.strip_chars())
                             .list.eval(pl.element().filter(pl.element().str.len_chars() > 0))
                             .list.len())
        # a structure the clause names that the output does not have holds no count: the
        # count is undecided, not 0 (v14 passed "a numbered list, at most 12 entries" on prose)
        .when(fmts.list.contains("table")).then(
            pl.when(pl.col("has_table")).then(pl.col("n_table_rows")))
        # "a CSV with at least 3 data rows": its lines below the header; every line where the
        # clause says it has no header (v23 took the first for one)
        .when(csv).then(pl.col("n_lines") - 1 + HEADERLESS)
        .when(fmts.list.contains("numbered_list")).then(_some(pl.col("n_numbered")))
        .when(fmts.list.contains("bulleted_list")).then(_some(pl.col("n_bullets")))
        .when(fmts.list.contains("markdown_list")).then(_some(lists))
        # a list that is a JSON array: its elements (v20 found no list to count)
        .when(fmts.list.contains("list") & JSON_LIST).then(pl.col("json_len"))
        .when(fmts.list.contains("list")).then(_some(lists + pl.col("n_line_items")))
        .when(pl.col("json_kind") == "array").then(pl.col("json_len"))
        .when(pl.col("has_table")).then(pl.col("n_table_rows"))
        .when(lists > 0).then(lists)
        # lines of one item each ("at least 3 email addresses, one per line"; v21: no list)
        .when(pl.col("n_line_items") > 0).then(pl.col("n_line_items"))
    )
    what = (
        pl.when(inline).then(pl.format("values separated by “{}”", pl.col("inline_list")))
        .when(fmts.list.contains("table")).then(pl.lit("table rows"))
        .when(csv).then(pl.when(HEADERLESS).then(pl.lit("CSV rows (no header)"))
                        .otherwise(pl.lit("CSV data rows")))
        .when(fmts.list.contains("numbered_list")).then(pl.lit("numbered items"))
        .when(fmts.list.contains("bulleted_list")).then(pl.lit("bulleted items"))
        .when(fmts.list.contains("list") & JSON_LIST).then(pl.lit("JSON array elements"))
        .when(fmts.list.contains("list") & (pl.col("n_line_items") > 0)).then(pl.lit("lines"))
        .when(fmts.list.set_intersection(pl.lit(["list", "markdown_list"])).list.len() > 0)
        .then(pl.lit("list items"))
        .when(pl.col("json_kind") == "array").then(pl.lit("JSON array elements"))
        .when(pl.col("has_table")).then(pl.lit("table rows"))
        .when(lists > 0).then(pl.lit("list items"))
        .when(pl.col("n_line_items") > 0).then(pl.lit("lines"))
    )
    return n.cast(pl.Int64), what


@check("count")
def count() -> Check:
    """A stated count or length holds: words, characters, sentences, paragraphs, items, URLs."""
    q = pl.col("quantities")
    # what needs reads before any `let` column exists
    raw_measure, raw_scope = q.struct.field("measure"), q.struct.field("scope")
    let = Lets()
    measure, scope = let("_measure", raw_measure), let("_scope", raw_scope)
    lo, hi = let("_lo", q.struct.field("min")), let("_hi", q.struct.field("max"))
    items, items_what = (let(n, e) for n, e in zip(("_items", "_items_what"), _item_count(),
                                                     strict=True))

    def pick(prefix: str) -> pl.Expr:
        return (
            pl.when(measure == "words").then(pl.col(f"{prefix}words"))
            .when(measure == "sentences").then(pl.col(f"{prefix}sentences"))
            .when(measure == "paragraphs").then(pl.col(f"{prefix}paragraphs"))
        )

    # only the rows that count exclamation marks scan their output
    bangs = pl.when(measure == "exclamations").then(pl.col("output_text"))
    # a report's sections are its headings but a lone level-1 title above them
    sections = q.struct.field("unit").str.starts_with("section")
    headings = pl.col("headings")
    titled = ((headings.list.first().str.starts_with("# "))
              & (headings.list.eval(pl.element().str.starts_with("# ")).list.sum() == 1)
              & (pl.col("n_headings") > 1))
    below_title = (measure == "headings") & sections & titled
    whole = (
        pl.when(measure.is_in(["words", "sentences", "paragraphs"])).then(pick("n_"))
        .when(measure == "chars").then(pl.col("n_chars"))
        .when(measure == "lines").then(pl.col("n_lines"))
        .when(below_title).then(pl.col("n_headings") - 1)
        .when(measure == "headings").then(pl.col("n_headings"))
        .when(measure.is_in(LEVELS)).then(_level_count(measure))
        .when(measure == "urls").then(pl.col("n_urls"))
        .when(measure == "code_blocks").then(pl.col("n_code_blocks"))
        # only the rows that count them scan their output
        .when(measure == "hashtags").then(
            pl.when(measure == "hashtags").then(pl.col("output_text")).str.count_matches(HASHTAG))
        .when(measure == "emojis").then(
            pl.when(measure == "emojis").then(pl.col("output_text")).str.count_matches(EMOJI))
        # every "!" but the one of "!=" (code's "not equal")
        .when(measure == "exclamations").then(
            bangs.str.count_matches("!", literal=True)
            - bangs.str.count_matches("!=", literal=True))
        # "no duplicates": the items (else the lines) beyond the first of each, compared
        # without case or a final period
        .when(measure == "duplicates").then(_repeats(measure))
        .when(measure == "sources").then(pl.coalesce(
            items, pl.max_horizontal("n_urls", "n_citations")))
        .when(measure == "items").then(items)
        # a markdown table's header cells, else a CSV's first line's (quoted commas apart)
        .when(measure == "columns").then(
            pl.when(pl.col("has_table")).then(pl.col("table_header").list.len())
            .when(IS_CSV).then(csv_commas(pl.col("first_line")) + 1))
        .when(measure == "keys").then(  # of a JSON object, else a table's columns
            pl.when(pl.col("json_kind") == "object").then(pl.col("json_keys").list.len())
            .when(pl.col("has_table")).then(pl.col("table_header").list.len()))
    ).cast(pl.Int64)
    # "at least 3 unique tags": a list's items, each counted once (without case or a final
    # period); only where the count reads every list item, and has a least number ("at most 5
    # unique tags" counts every item, and the clause rules out repeats besides)
    listed = pl.col("list_items").list.len()
    distinct = let("_distinct", measure.is_in(["items", "sources"]) & (items == listed)
                   & (listed > 0) & q.struct.field("phrase").str.contains(DISTINCT)
                   & ((measure == "sources") | q.struct.field("min").is_not_null()))
    what = let("_what", (
        pl.when(distinct).then(pl.concat_str(pl.lit("distinct "), items_what))
        .when((measure == "items") & items.is_not_null()).then(items_what)
        .when((measure == "sources") & items.is_not_null()).then(items_what)
        .when((measure == "sources") & (pl.col("n_citations") > pl.col("n_urls")))
        .then(pl.lit("distinct numbered citations ([n])"))
        .when(measure == "sources").then(pl.lit("distinct URLs"))
        .when(below_title).then(pl.lit("sections (headings below its # title)"))
        .when((measure == "keys") & (pl.col("json_kind") != "object").fill_null(True))
        .then(pl.lit("table columns"))
        .when((measure == "columns") & ~pl.col("has_table") & IS_CSV)
        .then(pl.lit("CSV columns"))
        .otherwise(measure.replace_strict(MEASURE_NAMES, default=measure))
    ).fill_null(q.struct.field("unit")))
    rest_ok = measure.is_in(["words", "sentences", "paragraphs"])
    # "whose first line is at most 50 characters": its words or characters (else undecided)
    # (a title's heading marks are no words of it)
    first = pl.when(scope == "first").then(pl.col("first_line")).str.replace(LEADING_MARKDOWN, "")
    # 'a "Risks" section with at least 3 bullet points': the text under that heading, up to
    # the next heading of its level or above (null without the heading)
    in_section = scope == "section"
    heading = pl.concat_str(pl.lit(r"^[ \t]{0,3}(#{1,6})[ \t]*(?:\d+[.)][ \t]*)?"),
                            _escaped(pl.col("section_name")), pl.lit(r"[ \t]*:?[ \t]*#*[ \t]*$"))
    scanned = pl.when(in_section).then(pl.col("output_text"))
    # Found by byte offsets (`str.extract` with a row's own pattern compiles it on every row,
    # ~10 µs; `str.find` keeps it): where the heading starts, its line, and the next heading
    # of its level or above
    start = scanned.str.find(pl.concat_str(pl.lit("(?im)"), heading))
    from_heading = scanned.cast(pl.Binary).bin.slice(start)
    line = from_heading.cast(pl.String).str.extract(r"^[^\n]*", 0)
    level = line.str.extract("#+", 0).str.len_chars()
    after = from_heading.bin.slice(line.str.len_bytes())
    rest = after.cast(pl.String)
    end = rest.str.find(pl.concat_str(pl.lit(r"(?m)^[ \t]{0,3}#{1,"), level.cast(pl.String),
                                      pl.lit(r"}[ \t]")))
    section = let("_section", after.bin.slice(0, end).cast(pl.String))
    # (a section with no list has no items to count: undecided, as for the whole output)
    in_section_items = top_level_items(section).list.len()
    in_section_items = pl.when(in_section_items > 0).then(in_section_items)
    value = let("_value", pl.when((scope == "rest") & rest_ok)
                  .then(pick("rest_").cast(pl.Int64))
                  .when((scope == "first") & (measure == "chars"))
                  .then(first.str.len_chars().cast(pl.Int64))
                  .when((scope == "first") & (measure == "words"))
                  .then(first.str.count_matches(WORDS).cast(pl.Int64))
                  .when(scope == "first").then(None)
                  .when(in_section & (measure == "items")).then(in_section_items.cast(pl.Int64))
                  .when(in_section & measure.is_in(["urls", "sources"]))
                  .then(distinct_urls(section).list.len().cast(pl.Int64))
                  .when(in_section & (measure == "words"))
                  .then(section.str.count_matches(WORDS).cast(pl.Int64))
                  .when(in_section).then(None)
                  .when(distinct).then(pl.when(distinct).then(pl.col("list_items")).list.eval(
                      pl.element().str.to_lowercase().str.strip_chars(" .;,"))
                      .list.n_unique().cast(pl.Int64))
                  .otherwise(whole))

    # "each ..." applies the bound to every paragraph, line or list item
    noun = q.struct.field("scope_text").fill_null("").str.to_lowercase()
    # a bare "each" ("at least 2 paragraphs, each under 50 words") is each of the parts the
    # clause counts as a whole
    bare = noun.str.contains(r"^\s*(?:each|every)\s*$")
    kind = let("_kind", pl.when(noun.str.contains("paragraph")).then(pl.lit("paragraph"))
                 .when(noun.str.contains("line")).then(pl.lit("line"))
                 .when(bare & (pl.col("each_of") == "paragraphs")).then(pl.lit("paragraph"))
                 .when(bare & (pl.col("each_of") == "lines")).then(pl.lit("line"))
                 # "a JSON array of findings, each with at least 2 sources": each element
                 .when(pl.col("json_kind") == "array").then(pl.lit("element"))
                 .when(pl.col("list_items").list.len() > 0).then(pl.lit("item"))
                 .otherwise(pl.lit("line")))
    unit = let("_unit", pl.when(measure == "words").then(pl.lit("words"))
                 .when(measure == "chars").then(pl.lit("chars"))
                 .when(measure == "sentences").then(pl.lit("sentences"))
                 .when(measure.is_in(["urls", "sources"])).then(pl.lit("urls")))

    def per_kind(of: str) -> pl.Expr:
        return (pl.when(unit == "words").then(pl.col(f"{of}_words"))
                .when(unit == "chars").then(pl.col(f"{of}_chars"))
                .when(unit == "sentences").then(pl.col(f"{of}_sentences"))
                .otherwise(pl.col(f"{of}_urls")))

    per = let("_per", pl.when(unit.is_null()).then(None)
                # only the URLs of a JSON array's elements are counted
                .when(kind == "element").then(
                    pl.when(unit == "urls").then(pl.col("element_urls")))
                .when(kind == "paragraph").then(per_kind("paragraph"))
                .when(kind == "item").then(per_kind("item"))
                .otherwise(per_kind("line")))
    texts = let("_texts", pl.when(kind == "element").then(pl.col("element_texts"))
                  .when(kind == "paragraph").then(pl.col("paragraphs"))
                  .when(kind == "item").then(pl.col("list_items"))
                  .otherwise(pl.col("lines")))
    worst_high, worst_low = per.list.arg_max(), per.list.arg_min()
    too_long = let("_too_long", hi.is_not_null() & (per.list.max() > hi))
    too_short = lo.is_not_null() & (per.list.min() < lo)
    worst = let("_worst", pl.when(too_long).then(worst_high).otherwise(worst_low))
    each_ok = let("_each_ok", (per.list.len() > 0) & ~too_long.fill_null(False)
                    & ~too_short.fill_null(False))
    is_each = scope == "each"

    in_bounds = (lo.is_null() | (value >= lo)) & (hi.is_null() | (value <= hi))
    # "at least 2 pros and at least 2 cons": one kind among others is not told apart
    one_kind = let("_one_kind", (measure == "items") & (scope == "whole")
                   & (pl.col("item_kinds") >= 2)
                   & ~q.struct.field("unit").str.to_lowercase().str.replace(r"s$", "")
                   .is_in(GENERIC_ITEM_UNITS))
    outcome = let("_outcome", pl.when(one_kind).then(UNDECIDED)
                    .when(is_each & (per.is_null() | (per.list.len() == 0)))
                    .then(UNDECIDED)
                    .when(is_each).then(pl.when(each_ok).then(PASSED).otherwise(FAILED))
                    .when(value.is_null()).then(UNDECIDED)
                    .when(in_bounds).then(PASSED).otherwise(FAILED))
    # a JSON array's elements: their URLs are what was counted
    each_what = pl.when((kind == "element") & (unit == "urls")).then(
        pl.lit("distinct URLs")).otherwise(what)
    each_evidence = (
        pl.when(per.is_null() | (per.list.len() == 0)).then(pl.format(
            "{} cannot be counted per {} of {}", what, kind, label()))
        .when(each_ok).then(pl.format(
            "all {} {}s within bounds; the longest has {} {}: {}", per.list.len(), kind,
            per.list.max(), _number_of(per.list.max(), each_what),
            quoted(excerpt(texts.list.get(worst_high, null_on_oob=True).fill_null(""), 160))))
        .otherwise(pl.format(
            "{} {} of {} has {} {}: {}", kind, worst + 1, per.list.len(),
            per.list.get(worst, null_on_oob=True),
            _number_of(per.list.get(worst, null_on_oob=True), each_what),
            quoted(excerpt(texts.list.get(worst, null_on_oob=True).fill_null(""), 200))))
    )
    evidence = (
        pl.when(one_kind).then(pl.format(
            "{} has {} {} in all; how many are {} is not told apart from the other kinds the "
            "clause counts", label(), value, _number_of(value, what), q.struct.field("unit")))
        .when(is_each).then(each_evidence)
        .when(value.is_null() & (scope == "first")).then(pl.format(
            "only words and characters are counted in the first line of {}", label()))
        .when(value.is_null() & in_section & section.is_null()).then(pl.format(
            "no {} heading in {} whose section to count", quoted(pl.col("section_name")),
            label()))
        .when(value.is_null() & in_section & (measure == "items")).then(pl.format(
            "no list in the {} section of {} in which to count {}",
            quoted(pl.col("section_name")), label(), q.struct.field("unit")))
        .when(value.is_null() & in_section).then(pl.format(
            "only list items, URLs and words are counted in the {} section of {}",
            quoted(pl.col("section_name")), label()))
        .when(in_section).then(pl.format(
            "the {} section of {} has {} {}: {}", quoted(pl.col("section_name")), label(),
            value, _number_of(value, pl.when(measure == "items").then(pl.lit("list items"))
                              .when(measure.is_in(["urls", "sources"]))
                              .then(pl.lit("distinct URLs")).otherwise(pl.lit("words"))),
            quoted(excerpt(section.str.strip_chars(), 160))))
        .when(value.is_null() & (measure == "columns")).then(pl.format(
            "no markdown table or CSV in {} whose columns to count", label()))
        .when(value.is_null() & (measure == "keys")).then(pl.format(
            "no JSON object or table in {} whose keys to count", label()))
        .when(value.is_null()).then(pl.format(
            "no list, table or JSON array in {} in which to count {}", label(),
            q.struct.field("unit")))
        .when(measure.is_in(["items", "sources"]) & items.is_not_null() & ~_csv_counted()
              & (pl.col("list_items").list.len() > 0)).then(pl.format(
            "{} has {} {}; first: {}; last: {}", label(), value, _number_of(value, what),
            quoted(excerpt(pl.col("list_items").list.first(), 100)),
            quoted(excerpt(pl.col("list_items").list.last(), 100))))
        .when(scope == "first").then(pl.format(
            "the first line of {} has {} {}: {}", label(), value, _number_of(value, what),
            quoted(excerpt(pl.col("first_line"), 160))))
        .otherwise(pl.format("{} has {} {}{}: {}", label(), value, _number_of(value, what),
                             pl.when(scope == "rest").then(pl.lit(" after its first line"))
                             .otherwise(pl.lit("")),
                             quoted(excerpt(pl.col("output_text"), 160))))
    )
    confidence = (
        pl.when(outcome == "undecided").then(0)
        .when(measure == "sentences").then(80)
        .when(measure == "paragraphs").then(85)
        .when(scope == "rest").then(80)
        .when(measure == "sources").then(pl.when(items.is_not_null()).then(80).otherwise(70))
        .when(measure.is_in(["items", "headings", "urls", "columns", "keys"]) | is_each)
        .then(90)
        .otherwise(95)
    )
    items_or_sources = raw_measure.is_in(["items", "sources"])
    csv_items = items_or_sources & pl.col("formats").list.contains("csv")
    raw_each = raw_scope == "each"
    # On an output cut at the read cap, a count past its upper bound stands for the whole
    # output (see `failed_on_part_read`) where it counts the whole output (what follows a
    # first line is no such measure when the start is that line alone) ...
    over = ((outcome == "failed") & (scope == "whole") & measure.is_in(GROWING)
            & (value > hi).fill_null(False))
    # ... and no code fence the start opens stays open: what follows one is the fence's, which
    # the count of the start took as the output's (a fence line left once the closed blocks
    # are out). Looked for only where the rest holds and the start has a fence: taking out
    # its closed blocks costs a pass of 64 KiB a row, whether it holds one or not.
    start = pl.when(CUT_SHORT & over).then(pl.col("output_text"))
    unclosed = (unfenced(pl.when(has_fence_mark(start)).then(start))
                .str.contains(r"(?m)^[ \t]*(?:```|~~~)").fill_null(False))
    past_bound = over & ~unclosed
    return Check(
        applies=ON_AN_OUTPUT & ~ALTERNATIVE_MET & (pl.col("output_scope") == "named"),
        keep=failed_on_part_read(past_bound), each="quantities", let=let,
        needs={"words": raw_measure == "words",
               "rest": (raw_scope == "rest")
               & raw_measure.is_in(["words", "sentences", "paragraphs"]),
               "prose": raw_measure.is_in(["sentences", "paragraphs"]) | raw_each,
               "lines": raw_measure.is_in(["lines", "duplicates", "columns"]) | raw_each
               | csv_items,
               "csv": csv_items | (raw_measure == "columns"),
               "headings": raw_measure.is_in(["headings", *LEVELS]),
               "code": raw_measure == "code_blocks",
               "urls": raw_measure.is_in(["urls", "sources"]),
               "lists": items_or_sources | raw_each | (raw_measure == "duplicates"),
               "table": items_or_sources | raw_measure.is_in(["columns", "keys"]),
               "json": items_or_sources | (raw_measure == "keys") | raw_each,
               "json_items": raw_each & raw_measure.is_in(["urls", "sources"]),
               "sentences_each": raw_each & (raw_measure == "sentences")},
        outcome=outcome,
        detail=pl.when(in_section).then(pl.format(
            "{}: {} in its {} section", label(), q.struct.field("phrase"),
            quoted(pl.col("section_name"))))
        .otherwise(pl.format("{}: {}", label(), q.struct.field("phrase"))),
        evidence=part_read(evidence),
        confidence=confidence,
    )


# ---- exact phrases ------------------------------------------------------------------------

def _bare_heading(text: pl.Expr, title: pl.Expr) -> pl.Expr:
    """Whether `text` holds a heading of `title` (a regex), numbered or not, with nothing
    under it: only blank lines, then a heading of its level or above, or the end of the text.
    Such a section is there in name only ("## Findings" straight before "## Sources")."""
    levels = [pl.concat_str(pl.lit(f"#{{{n}}}[ \\t]+(?:\\d+[.)][ \\t]*)?(?:\\*\\*|__)?"), title,
                            pl.lit(f"(?:\\*\\*|__)?[ \\t]*:?[ \\t]*#*[ \\t]*"
                                   f"(?:$|\\n\\s*(?:#{{1,{n}}}[ \\t]|$))"))
              for n in range(1, 7)]
    return text.str.contains(pl.concat_str(
        pl.lit("(?i)(?:^|\\n)[ \\t]{0,3}(?:"), pl.concat_str(levels, separator="|"), pl.lit(")"))
    ).fill_null(False)


def _section_title(heading: pl.Expr) -> pl.Expr:
    """A section's title as written in a heading or named in a clause, without the heading's
    marks, a number, emphasis or a closing colon: `## 3. **Sources:**` is `Sources`."""
    return (heading.str.replace(r"^#+\s*", "").str.replace(r"^\d+[.)]\s*", "")
            .str.strip_chars(" *_:").str.strip_chars())


@check("literal")
def literal() -> Check:
    """An exact phrase is where the clause says: contained (as often as it says), first, last,
    first line, or all; or an element of a named tag is there, opened and closed."""
    lit = pl.col("literals").struct.field("text")
    mode = pl.col("literals").struct.field("mode")
    times = pl.col("literals").struct.field("times")
    # each whole-text operation reads only the outputs of the rows whose mode needs it
    text = pl.when(mode == "contains").then(pl.col("binding_text"))
    out = pl.col("output_text")
    # leading markdown (heading marks, emphasis, quotes) does not hide how a text begins
    bare_start = pl.when(mode == "starts").then(out).str.replace(LEADING_MARKDOWN, "")
    bare_end = pl.when(mode == "ends").then(out).str.replace(r"[*_\s\"”]+$", "")
    let = Lets()
    # the last line that holds something, as a text's start is read (leading markdown aside)
    last_line = let("_last_line", pl.when(mode.is_in(["last_line", "last_line_starts"]))
                    .then(out).str.extract(r"([^\n]*\S[^\n]*)\s*$", 1).str.strip_chars())
    # "wrapped in <answer></answer> tags": an element of that tag, opened and closed (the
    # tag's name holds no regex metacharacter, see TAG_NAME)
    tagged = pl.when(mode == "tagged").then(out)
    opening = pl.concat_str(pl.lit("<"), lit, pl.lit(r"(?:\s[^>]*)?>"))
    element = pl.concat_str(opening, pl.lit(r"(?s:.*?)</"), lit, pl.lit(r"\s*>"))
    heading = lit.str.starts_with("#")
    last_heading = pl.col("headings").list.last().str.strip_chars()
    # 'ends with a "Next steps" section': the last heading's text, whatever its level or case
    last_title = last_heading.str.replace(r"^#+\s*", "").str.to_lowercase()
    # 'a `Sources` section': a heading of that title, whatever its level or case, or a label on
    # a line of its own ("Sources:", "**Sources**"), as a section is written without a heading
    title = _section_title(lit)
    in_section = mode == "section"
    titled = let("_titled", pl.when(in_section).then(pl.col("headings").list.eval(
        _section_title(pl.element()).str.to_lowercase()).list.contains(title.str.to_lowercase())))
    # the line it is written on, quoted as evidence (a heading's marks, a number, emphasis and
    # a colon around its title are no part of it: "## 3. **Sources:**")
    line = pl.when(titled).then(pl.lit(r"(?im)^([ \t]{0,3}#{1,6}[ \t]+(?:\d+[.)][ \t]*)?"))\
        .otherwise(pl.lit(r"(?im)^([ \t]*"))
    # (a label in fenced code is the code's: `Sources:` in a YAML block is no section)
    labelled = let("_labelled", pl.when(in_section).then(unfenced(out).str.extract(pl.concat_str(
        line, pl.lit(r"(?:\*\*|__)?"), _escaped(title),
        pl.when(titled).then(pl.lit(r"(?:\*\*|__)?:?(?:\*\*|__)?[ \t]*#*)[ \t]*$"))
        .otherwise(pl.lit(r"(?::(?:\*\*|__)?|(?:\*\*|__)?:?))[ \t]*$"))), 1)))
    # (a heading of that title with nothing under it is no section: see `_bare_heading`)
    bare = let("_bare", _bare_heading(pl.when(titled).then(out), _escaped(title)))
    exact_case = let("_exact_case", text.str.contains(lit, literal=True))
    # lowercased as "" on the other rows: polars lowercases the text a null row hides too
    lowered = text.fill_null("").str.to_lowercase()
    any_case = pl.when(mode == "contains").then(
        lowered.str.contains(lit.str.to_lowercase(), literal=True))
    # 'mentions "climate" at least twice': occurrences counted without case
    counted = let("_counted", pl.when(times.is_not_null()).then(
        lowered.str.count_matches(lit.str.to_lowercase(), literal=True)))
    ok = let("_ok", (
        pl.when(times.is_not_null()).then(counted >= times)
        .when(mode == "contains").then(any_case)
        .when(mode == "starts").then(out.str.starts_with(lit) | bare_start.str.starts_with(lit))
        .when((mode == "ends") & heading).then(last_heading == lit.str.strip_chars())
        .when(mode == "last_section").then(
            last_title == lit.str.replace(r"^#+\s*", "").str.strip_chars().str.to_lowercase())
        .when(in_section).then((titled | labelled.is_not_null()) & ~bare)
        .when(mode == "ends").then(out.str.ends_with(lit) | bare_end.str.ends_with(lit))
        .when(mode == "first_line").then(pl.col("first_line") == lit.str.strip_chars())
        .when(mode == "last_line").then(last_line == lit.str.strip_chars())
        .when(mode == "last_line_starts").then(
            last_line.str.starts_with(lit)
            | last_line.str.replace(LEADING_MARKDOWN, "").str.starts_with(lit))
        .when(mode == "exact").then(out == lit)
        .when(mode == "tagged").then(tagged.str.contains(element))
    ))
    where = let("_label", label())
    detail = (
        pl.when(times.is_not_null()).then(pl.format("{} contains {} at least {} times", where,
                                                    quoted(lit), times))
        .when(mode == "contains").then(pl.format("{} contains {}", where, quoted(lit)))
        .when(mode == "starts").then(pl.format("{} begins with {}", where, quoted(lit)))
        .when(((mode == "ends") & heading) | (mode == "last_section")).then(pl.format(
            "the last section of {} is {}", where, quoted(lit)))
        .when(in_section).then(pl.format("{} has a section {} (a heading or label)", where,
                                         quoted(title)))
        .when(mode == "ends").then(pl.format("{} ends with {}", where, quoted(lit)))
        .when(mode == "last_line").then(pl.format("the last line of {} is exactly {}", where,
                                                  quoted(lit)))
        .when(mode == "last_line_starts").then(pl.format("the last line of {} begins with {}",
                                                         where, quoted(lit)))
        .when(mode == "first_line").then(pl.format("the first line of {} is exactly {}",
                                                   where, quoted(lit)))
        .when(mode == "tagged").then(pl.format("{} holds the element <{}>…</{}>", where, lit,
                                               lit))
        .otherwise(pl.format("{} is exactly {} (trimmed, case-sensitive)", where,
                             quoted(lit)))
    )
    found = (
        pl.when(exact_case).then(around(text, lit, literal=True))
        .otherwise(pl.format("{} (ignoring case)",
                             around(text, pl.concat_str(pl.lit("(?i)"), _escaped(lit)))))
    )
    start = quoted(excerpt(pl.col("first_line"), 160))
    ending = pl.when(mode == "ends").then(out)
    end = quoted(pl.when(ending.str.len_chars() > 160)
                 .then(pl.concat_str(pl.lit("…"), ending.str.slice(-160)))
                 .otherwise(ending).str.strip_chars())
    evidence = (
        pl.when(times.is_not_null()).then(pl.format(
            "{} {} time(s) in {}{}", quoted(lit), counted, where,
            pl.when(counted > 0).then(pl.concat_str(pl.lit("; first: "), found))
            .otherwise(pl.lit(""))))
        .when(mode == "contains").then(pl.when(ok).then(found).otherwise(
            pl.format("no {} in {}", quoted(lit), where)))
        .when(mode.is_in(["starts", "first_line"])).then(pl.format("first line: {}", start))
        .when(mode.is_in(["last_line", "last_line_starts"])).then(pl.format(
            "last line: {}", quoted(excerpt(last_line.fill_null(""), 160))))
        .when(((mode == "ends") & heading) | (mode == "last_section")).then(pl.format(
            "last heading: {}", pl.when(last_heading.is_null()).then(pl.lit("none"))
            .otherwise(quoted(last_heading))))
        .when(in_section).then(
            pl.when(bare).then(pl.format("{} has nothing under it before the next heading or "
                                         "the end", pl.when(labelled.is_not_null())
                                         .then(quoted(labelled)).otherwise(quoted(title))))
            .when(labelled.is_not_null()).then(pl.format(
                "{} {}", pl.when(titled).then(pl.lit("heading")).otherwise(pl.lit("label")),
                quoted(labelled)))
            .when(titled).then(pl.format("a heading {}", quoted(title)))
            .otherwise(pl.format("no heading or label {} in {}; headings: {}", quoted(title),
                                 where, pl.when(pl.col("headings").list.len() > 0).then(
                                     pl.col("headings").list.eval(quoted(pl.element()))
                                     .list.join(", ")).otherwise(pl.lit("none")))))
        .when(mode == "ends").then(pl.format("ends: {}", end))
        .when((mode == "tagged") & ok).then(around(tagged, element, 40))
        .when((mode == "tagged") & tagged.str.contains(opening)).then(pl.format(
            "<{}> is opened but never closed by </{}>: {}", lit, lit, around(tagged, opening, 40)))
        .when(mode == "tagged").then(pl.format("no <{}> tag in {}: {}", lit, where,
                                               quoted(excerpt(out, 160))))
        .otherwise(pl.format("the output is {}", quoted(excerpt(out, 300))))
    )
    confidence = (
        pl.when(times.is_not_null()).then(90)
        .when((mode == "contains") & ok & ~exact_case).then(70)
        .when((mode == "contains") & ~ok).then(90)
        .otherwise(95)
    )
    return Check(
        applies=CONTENT & (mode != "absent"), each="literals", let=let,
        outcome=pl.when(ok).then(PASSED).otherwise(FAILED),
        detail=detail, evidence=evidence, confidence=confidence,
    )


@check("alternative_output")
def alternative_output() -> Check:
    """An output that is exactly the clause's stated alternative ("or the single line "none"")
    satisfies it; the other requirements are then not held against it."""
    return Check(
        applies=JUDGED & ALTERNATIVE_MET,
        outcome=PASSED,
        detail=pl.format("{} is exactly the stated alternative {}", label(),
                         quoted(pl.col("alternative"))),
        evidence=pl.format("the output is {}", quoted(pl.col("output_text"))),
        confidence=pl.lit(95),
    )


@check("forbidden_literal")
def forbidden_literal() -> Check:
    """One-sided: a forbidden phrase found as a whole word fails; not finding it settles nothing.

    Boundaries are Unicode-aware: `hunter2` is found in "the password is hunter2" but not in
    "éhunter2é" or "hunter20". Case is ignored.
    """
    lit = pl.col("literals").struct.field("text")
    pattern = pl.concat_str(pl.lit("(?i)" + EDGE_BEFORE + "(?:"), _escaped(lit),
                            pl.lit(")" + EDGE_AFTER))
    found = pl.col("binding_text").str.contains(pattern)
    return Check(
        applies=ON_AN_OUTPUT & (pl.col("literals").struct.field("mode") == "absent"),
        keep=failed_on_part_read(found), each="literals",
        outcome=pl.when(found).then(FAILED).otherwise(UNDECIDED),
        detail=pl.format("{} never contains {} (a detector: it can find a violation, "
                         "never prove an absence)", label(), quoted(lit)),
        evidence=pl.when(found).then(part_read(around(
            pl.col("binding_text"), pl.concat_str(pl.lit("(?i)"), _escaped(lit)), 80)))
        .otherwise(pl.format("{} not found in {} as a whole word; finding nothing "
                             "establishes nothing", quoted(lit), label())),
        confidence=pl.when(found).then(95).otherwise(0),
    )


@check("no_secrets")
def no_secrets() -> Check:
    """One-sided: text shaped like a key, token or password fails a clause that forbids them.

    The evidence masks all but the first four characters of what was found.
    """
    hit = pl.col("binding_text").str.extract("(" + SECRET_PATTERNS + ")", 1)
    return Check(
        applies=ON_AN_OUTPUT & pl.col("forbids_secrets"),
        keep=failed_on_part_read(hit.is_not_null()),
        outcome=pl.when(hit.is_not_null()).then(FAILED).otherwise(UNDECIDED),
        detail=pl.format("{} holds no secret (key, token, password) — a detector: it can find "
                         "a leak, never prove there is none", label()),
        evidence=pl.when(hit.is_not_null()).then(part_read(pl.format(
            "secret-shaped text in {}: {}… ({} characters, the rest masked)", label(),
            quoted(hit.str.slice(0, 4)), hit.str.len_chars())))
        .otherwise(pl.format("no key, token or password pattern found in {}; finding nothing "
                             "establishes nothing", label())),
        confidence=pl.when(hit.is_not_null()).then(85).otherwise(0),
    )


# ---- values, fields and numbers ------------------------------------------------------------

# A clause saying its values may be null
MAY_BE_NULL = r"(?i)\b(?:null|nullable|nil)\b"
# ... or, after a field's name and before another's, that the field may be absent or empty
# ("a `resolution` field ("fixed" or "wontfix"), or nothing if the check was skipped", "…,
# if known", "…, empty for open tickets")
MAY_BE_ABSENT = (r"(?:" + OPTIONAL.removeprefix("(?i)") + r"|\b(?:may|can)\s+be\s+(?:empty|blank)"
                 r"|\bleft\s+(?:blank|empty|out)|\b(?:empty|blank)\s+(?:for|when|while|if|until)\b"
                 r"|\bor\s+(?:none|nothing|empty)\b|\bn/a\b)")


def _nullable(key: pl.Expr, name: pl.Expr) -> pl.Expr:
    """Whether a field's JSON null is no value (its normalised `key`, its `name` as the clause
    writes it): a sub-item that may be absent ("(optional)", "if resolved") or says null
    (`nullable_fields`), a clause that says its values may be null, or one that says so of
    the field after its name (v22 as first written: any field not required, or any "if" or
    "when" of the clause)."""
    after_name = pl.concat_str(pl.lit("(?i)`"), name.str.escape_regex(),
                               pl.lit("`[^`]*?" + MAY_BE_ABSENT))
    described = pl.col("description").fill_null("")
    return (pl.col("nullable_fields").list.contains(key) | described.str.contains(MAY_BE_NULL)
            | described.str.contains(after_name).fill_null(False))


@check("enum_value")
def enum_value() -> Check:
    """A value the clause enumerates is one of the allowed values (per field, or the output)."""
    e = pl.col("enums")
    field, allowed, key = e.struct.field("field"), e.struct.field("values"), e.struct.field("key")
    let = Lets()
    # the values as written (shown), and as compared: a JSON array's are its elements; a
    # JSON null is a value of a field that must be there (v21 passed `"status": null` as no
    # value found), none of one that may be absent or null
    values = let("_values", _values_of(key, e.struct.field("nested"), e.struct.field("parent")))
    raw = let("_raw", pl.when(_nullable(key, field)).then(values.list.eval(
        pl.element().filter(~normalise_value(pl.element()).is_in(["null"]))))
        .otherwise(values).list.eval(pl.element().filter(
            (normalise_value(pl.element()).str.len_chars() > 0)
            & ~normalise_value(pl.element()).is_in(["[", "{"]))))
    observed = let("_observed", raw.list.eval(normalise_value(pl.element())))
    bad = let("_bad", observed.list.set_difference(allowed))
    whole = normalise_value(pl.col("output_text"))
    whole_ok = allowed.list.contains(whole)
    allowed_text = allowed.list.eval(pl.concat_str(pl.lit("“"), pl.element(), pl.lit("”"))) \
        .list.join(", ")
    outcome = let("_outcome", (
        pl.when(field.is_null()).then(pl.when(whole_ok).then(PASSED).otherwise(FAILED))
        .when(observed.list.len() == 0).then(UNDECIDED)
        .when(bad.list.len() == 0).then(PASSED).otherwise(FAILED)
    ))
    evidence = (
        pl.when(field.is_null()).then(pl.format("the output is {}",
                                                quoted(excerpt(pl.col("output_text"), 200))))
        .when(observed.list.len() == 0).then(pl.format("no value of `{}` found in {}", field,
                                                       label()))
        .when(bad.list.len() == 0).then(pl.format("`{}` values: {}", field,
                                                  raw.list.unique(maintain_order=True)
                                                  .list.join(", ")))
        .otherwise(pl.format("{} is not one of {} (`{}` values: {})",
                             quoted(bad.list.first()), allowed_text, field,
                             raw.list.join(", ")))
    )
    source_conf = pl.when(pl.col("json_kind").is_not_null() | pl.col("has_table")).then(95) \
        .otherwise(75)
    return Check(
        applies=NAMED, each="enums", let=let,
        needs={"fields": field.is_not_null(), "json": field.is_not_null(),
               "json_children": e.struct.field("parent").is_not_null(),
               "table": field.is_not_null()},
        outcome=outcome,
        detail=pl.when(field.is_null()).then(pl.format("{} is one of {}", label(), allowed_text))
        .otherwise(pl.format("every `{}` in {} is one of {}", field, label(), allowed_text)),
        evidence=evidence,
        confidence=pl.when(outcome == "undecided").then(0)
        .when(field.is_null()).then(pl.when(whole_ok).then(90).otherwise(85))
        .otherwise(source_conf),
    )


def holding_key(key: pl.Expr) -> pl.Expr:
    """How many objects of a JSON output hold `key` (a normalised name): the object itself (0
    or 1), or the object elements of an array; null for any other output."""
    return (pl.when(pl.col("json_kind") == "object")
            .then(pl.col("json_keys").list.contains(key).cast(pl.UInt32))
            .when(pl.col("json_kind") == "array")
            .then(pl.col("json_element_keys").fill_null("").str.count_matches(
                pl.format("|{}|", key), literal=True)))


@check("required_field")
def required_field() -> Check:
    """A required field is there: a JSON key (in every element of an array), a table column,
    or a labelled line or heading of a text output."""
    f = pl.col("fields")
    name, nested = f.struct.field("key"), f.struct.field("nested")
    shown = f.struct.field("name")
    kind = pl.col("json_kind")
    per_element = (kind == "array") & ~nested
    having = holding_key(name).cast(pl.Int64)
    missing = pl.col("json_len") - having
    let = Lets()
    in_values = let("_in_values", pl.col("field_values").fill_null("").str.contains(
        pl.format("(?m)^{}\t", _escaped(name))))
    is_json = let("_is_json", kind.is_in(["object", "array"]).fill_null(False))
    has_table = pl.col("has_table").fill_null(False)
    # a CSV said to have no header row names none of its columns (v23 read its first line)
    headerless = let("_headerless", HEADERLESS & ~is_json & IS_CSV)
    header = normalise_key(pl.when(CSV_FILE).then(pl.col("first_line")))  # (a one-column CSV's)
    written = _as_written(name)
    mention = pl.concat_str(pl.lit("(?i)" + EDGE_BEFORE), written, pl.lit(EDGE_AFTER))
    # each text search reads only the outputs of the rows whose branch it serves
    text = pl.col("output_text")
    json_text = pl.when(is_json & in_values & ~per_element & ~((kind == "object") & ~nested)
                        ).then(text)
    label_text = pl.when(~is_json & ~has_table & in_values).then(text)
    plain_text = pl.when(~is_json & ~has_table & ~in_values).then(text)
    mentioned = plain_text.str.contains(mention).fill_null(False)
    # a heading so named with nothing under it ("## Findings" straight before "## Sources"
    # met "sections Summary, Findings and Sources")
    empty = let("_empty", _bare_heading(  # (only outputs with a heading are searched)
        pl.when(pl.col("n_headings") > 0).then(label_text), written))
    outcome = let("_outcome", (
        pl.when(per_element).then(pl.when(missing == 0).then(PASSED).otherwise(FAILED))
        .when((kind == "object") & ~nested).then(
            pl.when(pl.col("json_keys").list.contains(name)).then(PASSED).otherwise(FAILED))
        .when(is_json).then(pl.when(in_values).then(PASSED).otherwise(FAILED))
        .when(headerless).then(UNDECIDED)
        .when(pl.col("has_table")).then(
            pl.when(pl.col("table_header").list.contains(name) | in_values).then(PASSED)
            .otherwise(FAILED))
        .when(ONE_COLUMN_CSV).then(pl.when(header == name).then(PASSED).otherwise(FAILED))
        .when(empty).then(FAILED)
        .when(in_values).then(PASSED)
        .when(mentioned).then(UNDECIDED)
        .otherwise(FAILED)
    ))
    evidence = (
        pl.when(per_element).then(pl.format(
            "key `{}` in {} of {} array elements", shown, having, pl.col("json_len")))
        # a key found, or the absence stated with what is there (v20 gave the keys alone)
        .when((kind == "object") & ~nested & (outcome == PASSED)).then(pl.format(
            "top-level keys: {}", pl.col("json_keys_written").list.join(", ")))
        .when((kind == "object") & ~nested).then(pl.format(
            "no key `{}` among the top-level keys: {}", shown,
            pl.col("json_keys_written").list.join(", ")))
        .when(is_json & in_values).then(around(json_text, pl.format(
            r"\x22{}\x22\s*:", name.str.replace_all("-", "[_ -]")), 40))
        .when(is_json).then(pl.format("no key `{}` anywhere in {}", shown, label()))
        .when(headerless).then(pl.format(
            "{} is a CSV said to have no header row: no line names its column `{}`", label(),
            shown))
        .when(pl.col("has_table") & (outcome == PASSED)).then(pl.format(
            "table columns: {}", pl.col("table_columns").list.join(", ")))
        .when(pl.col("has_table")).then(pl.format(
            "no column `{}` among the table columns: {}", shown,
            pl.col("table_columns").list.join(", ")))
        .when(ONE_COLUMN_CSV).then(pl.format(
            "{} is a CSV of one column, headed {}", label(), quoted(pl.col("first_line"))))
        .when(empty).then(pl.format(
            "the heading `{}` of {} has nothing under it before the next heading or the end",
            shown, label()))
        .when(in_values).then(around(label_text, pl.format("(?i){}", written), 60))
        .when(mentioned).then(pl.format(
            "`{}` is mentioned but not as a labelled field or heading: {}", shown,
            around(plain_text, mention, 60)))
        # (with the labels and headings there are, as compared: v21 named none)
        .otherwise(pl.format("no `{}` field, label or heading in {}; {}", shown, label(),
                             pl.when((outcome == FAILED) & ~is_json & ~has_table)
                             .then(pl.col("field_values")).fill_null("")
                             .str.extract_all(r"(?m)^[^\t\n]+")
                             .list.unique(maintain_order=True).list.head(12).list.join(", ")
                             .pipe(lambda keys: pl.when(keys == "")
                                   .then(pl.lit("it has none"))
                                   .otherwise(pl.concat_str(pl.lit("it has: "), keys)))))
    )
    return Check(
        applies=NAMED, each="fields", let=let,
        outcome=outcome,
        detail=pl.format("{} has field `{}`{}", label(), shown,
                         pl.when(per_element).then(pl.lit(" in every element"))
                         .otherwise(pl.lit(""))),
        evidence=evidence,
        confidence=pl.when(outcome == "undecided").then(0)
        .when(is_json | pl.col("has_table")).then(95)
        .when(outcome == "passed").then(80).otherwise(75),
    )


@check("no_extra_fields")
def no_extra_fields() -> Check:
    """The output has no field beside the ones the clause names, when it says so ("exactly the
    keys `a` and `b`", "only these fields:"): the top-level keys of a JSON object, the keys of
    every element of a JSON array, or the columns of a table."""
    top = pl.col("fields").list.eval(pl.element().filter(~pl.element().struct.field("nested")))
    named = top.list.eval(pl.element().struct.field("key"))
    kind = pl.col("json_kind")
    element_keys = (pl.col("json_element_keys").fill_null("").str.extract_all(r"[^|\n]+")
                    .list.unique(maintain_order=True))
    let = Lets()
    table = pl.col("has_table").fill_null(False)
    found = let("_found", pl.when(kind == "object").then(pl.col("json_keys"))
                .when(kind == "array").then(element_keys)
                .when(table).then(pl.col("table_header")))
    extra = let("_extra", found.list.set_difference(named))
    # the evidence quotes them as the output writes them
    written = let("_written", pl.when(kind == "object").then(pl.col("json_keys_written"))
                  .when(kind == "array").then(pl.col("json_element_keys_written"))
                  .when(table).then(pl.col("table_columns")))
    what = (pl.when(kind == "object").then(pl.lit("top-level keys"))
            .when(kind == "array").then(pl.lit("keys of its elements"))
            .otherwise(pl.lit("table columns")))
    outcome = let("_outcome", pl.when(found.is_null()).then(UNDECIDED)
                  .when(extra.list.len() == 0).then(PASSED).otherwise(FAILED))
    return Check(
        applies=NAMED & pl.col("only_fields") & (named.list.len() > 0), let=let,
        needs={"json": pl.lit(True), "table": pl.lit(True)},
        outcome=outcome,
        detail=pl.format("{} has no field but {}", label(), top.list.eval(
            pl.format("`{}`", pl.element().struct.field("name"))).list.join(", ")),
        evidence=pl.when(outcome == UNDECIDED)
        .then(pl.format("no JSON object, array or table in {} whose fields to list", label()))
        .when(outcome == PASSED).then(pl.format("{}: {}", what, _names(written)))
        .otherwise(pl.format("{} beside the named ones: {} (all: {})", what,
                             _names(_written_among(written, extra)), _names(written))),
        confidence=pl.when(outcome == UNDECIDED).then(0).otherwise(90),
    )


def _names(names: pl.Expr) -> pl.Expr:
    """A list of names for evidence, joined by commas; an empty one shown as `""`."""
    return names.list.eval(pl.when(pl.element() == "").then(pl.lit('""'))
                           .otherwise(pl.element())).list.join(", ")


def _written_among(written: pl.Expr, keys: pl.Expr) -> pl.Expr:
    """The names of `written` (as an output writes them) whose normalised form is one of
    `keys`: each name is set between an opening and a closing mark in one text, searched for
    the forms of the keys (a list's elements cannot be compared with another column's). Two
    marks, so that an empty name (a table's blank index column) matches itself alone, never
    the space between two names (v20 as first written listed ", , " for it)."""
    opening, closing = "\x1e", "\x1f"
    text = pl.concat_str(pl.lit(opening), written.list.join(closing + opening),
                         pl.lit(closing))
    forms = keys.list.eval(_as_written(pl.element(), r"[\s_\-]+")).list.join("|")
    pattern = pl.format("(?i){}[`*_\"'“”\\s]*(?:{})[`*_\"'“”\\s]*{}", pl.lit(opening), forms,
                        pl.lit(closing))
    return text.str.extract_all(pattern).list.eval(
        pl.element().str.strip_chars(opening + closing))


@check("numeric_range")
def numeric_range() -> Check:
    """A number the clause bounds ("a score from 0-100", "`sla_hours`: from 1-72", "a positive
    number", "`delay` (under 30)") is in range; a bound said with "above", "below", "greater
    than", "positive", … excludes its own number."""
    r = pl.col("ranges")
    field, lo, hi = r.struct.field("field"), r.struct.field("lo"), r.struct.field("hi")
    key = r.struct.field("key")
    let = Lets()
    # "each between 0 and 1" of a JSON array (the field "[]"): its elements that are numbers
    elements = field == "[]"
    named = field.is_not_null() & ~elements
    said = let("_said", pl.when(elements).then(
        pl.col("element_texts").list.eval(pl.element().filter(
            pl.element().str.contains("^" + NUMBER + "$"))))
        .otherwise(_values_of(key, r.struct.field("nested"), r.struct.field("parent")).list.eval(
            pl.element().str.extract("(" + WRITTEN_NUMBER + ")", 1)).list.drop_nulls()))
    # a one-sided whole bound without a unit on a field that holds JSON arrays ("`tags` (at
    # least 2)", "whose `items` is at most 5") counts their elements (v12: undecided); a range
    # ("`scores` (0-100)") bounds numbers, each element's (v21: undecided), as does a bound
    # of each ("`counts` (at least 1 each)", "a `counts` list, each at least 1")
    bound = pl.coalesce(lo, hi)
    countable = (named & (lo.is_null() != hi.is_null()) & (bound == bound.floor())
                 & ~r.struct.field("phrase").str.contains(r"(?i)\beach\b"))
    arrays = let("_arrays", pl.when(countable).then(_array_lengths(key)))
    counted = let("_counted", arrays.list.len() > 0)
    field_texts = let("_field_texts", pl.when(counted).then(
        arrays.cast(pl.List(pl.String))).otherwise(said))
    field_numbers = let("_field_numbers",
                        field_texts.list.eval(_number_value(pl.element())))
    out = pl.col("output_text")
    whole = pl.when(field.is_null()).then(out)  # the output's own number: unscoped ranges only
    over = whole.str.extract("(" + WRITTEN_NUMBER + r")\s*(?:/|out\s+of)\s*\d", 1)
    labelled = whole.str.extract(r"(?i)(?:score|confidence|rating|risk|grade|value)\W{0,20}?("
                                 + WRITTEN_NUMBER + ")", 1)
    first = whole.str.extract("(" + WRITTEN_NUMBER + ")", 1)
    found = let("_found", pl.coalesce(over, labelled, first))
    alone = whole.str.contains(r"^\s*(?:" + WRITTEN_NUMBER + r")\s*%?\s*$")  # the number alone
    # the output opens with the number, set apart: "85\n\nThe evidence…", "85 — strong"
    lead = whole.str.contains(r"^\s*[*_`\"']*(?:" + WRITTEN_NUMBER + r")\s*%?[*_`\"']*"
                              r"(?:[ \t]*\n|\s+[—–-]\s|\s*[,;:]\s)")
    how = let("_how", pl.when(over.is_not_null() | alone).then(90)
              .when(labelled.is_not_null() | lead).then(85).otherwise(60))
    number = _number_value(found)
    low = lo.fill_null(float("-inf"))
    high = hi.fill_null(float("inf"))
    above, below = r.struct.field("lo_exclusive"), r.struct.field("hi_exclusive")

    def within(least: pl.Expr, most: pl.Expr) -> pl.Expr:
        return (pl.when(above).then(least > low).otherwise(least >= low)
                & pl.when(below).then(most < high).otherwise(most <= high))

    fields_ok = within(field_numbers.list.min(), field_numbers.list.max())
    outcome = let("_outcome", (
        pl.when(field.is_not_null()).then(
            pl.when(field_numbers.list.len() == 0).then(UNDECIDED)
            .when(fields_ok).then(PASSED).otherwise(FAILED))
        .when(number.is_null()).then(FAILED)
        .when(within(number, number)).then(PASSED)
        # only the output's first number, in prose: out of range, it may be another number
        # than the one the clause bounds ("a survey of 1,200 operators" in a score's text)
        .when(how == 60).then(UNDECIDED).otherwise(FAILED)
    ))
    evidence = (
        pl.when(elements).then(
            pl.when(field_numbers.list.len() == 0)
            .then(pl.format("no JSON array of numbers in {}", label()))
            .otherwise(pl.format("elements of {}: {}", label(), field_texts.list.join(", "))))
        .when(counted).then(pl.format("lengths of the JSON arrays under `{}`: {}", field,
                                      field_texts.list.join(", ")))
        .when(field.is_not_null()).then(
            pl.when(field_numbers.list.len() == 0)
            .then(pl.format("no number under `{}` in {}", field, label()))
            .otherwise(pl.format("`{}` values: {}", field, field_texts.list.join(", "))))
        .when(number.is_null()).then(pl.format("no number in {}: {}", label(),
                                               quoted(excerpt(whole, 160))))
        .otherwise(around(whole, found, 60, literal=True))
    )
    return Check(
        applies=NAMED, each="ranges", let=let,
        needs={"fields": named, "json_arrays": named, "json_items": elements,
               "json_children": r.struct.field("parent").is_not_null()},
        outcome=outcome,
        detail=pl.when(elements)
        .then(pl.format("the elements of {}: {}", label(), r.struct.field("phrase")))
        .when(counted)
        .then(pl.format("the JSON arrays of `{}` in {}: {}", field, label(),
                        r.struct.field("phrase")))
        .when(field.is_not_null())
        .then(pl.format("`{}` in {}: {}", field, label(), r.struct.field("phrase")))
        .otherwise(pl.format("the number in {}: {}", label(), r.struct.field("phrase"))),
        evidence=evidence,
        confidence=pl.when(outcome == "undecided").then(0)
        .when(field.is_not_null()).then(90)
        .when(number.is_null()).then(80).otherwise(how),
    )


def _scalar_values_of(key: pl.Expr) -> pl.Expr:
    """The values of a field that can be measured: not empty (a heading's), not nested."""
    return _values_of(key).list.eval(pl.element().filter(
        (pl.element().str.strip_chars().str.len_chars() > 0) & ~pl.element().is_in(["[", "{"])))


@check("field_type")
def field_type() -> Check:
    """Every value of a field is of the type its sub-item names ("`sla_hours`: an integer from
    1-72", "`retrieved`: the date it was read, as YYYY-MM-DD"); see value_type. A JSON object
    is of no such type: `{"score": {"score": 3}}` has a `score` that is no integer (v15 read
    only the nested 3). An array's elements are its values (`"dates": ["2026-01-02"]` as
    YYYY-MM-DD; v21 read none). A value within a zone, year or domain ("`released_on`: a date
    in 2026") is within it too (v21: never read)."""
    f = pl.col("field_types")
    field, kind = f.struct.field("field"), f.struct.field("type")
    within = f.struct.field("within")
    let = Lets()
    # (a JSON null is none of a field that may be absent or null: see enum_value)
    read = let("_read", _values_of(f.struct.field("key"), f.struct.field("nested"),
                                   f.struct.field("parent")))
    values = let("_values", pl.when(_nullable(f.struct.field("key"), field)).then(
        read.list.eval(pl.element().filter(pl.element() != "null"))).otherwise(read)
        .list.eval(pl.element().filter(
            (pl.element().str.strip_chars().str.len_chars() > 0) & (pl.element() != "["))
        .replace({"{": "{…} (an object)"})))
    # ("… 14:35:22 UTC" is a timestamp, as value_type reads it)
    timestamps = pl.when(kind.is_in(["datetime", "iso_datetime"])).then(values)
    typed = let("_typed", pl.coalesce(timestamps.list.eval(
        _zone_dropped(_trimmed_value(pl.element()))), values))
    fits = pl.lit(None, pl.List(pl.Boolean))
    # a pattern per type: list.eval cannot read a pattern from the row
    for name, pattern in VALUE_PATTERNS.items():
        fits = pl.when(kind == name).then(typed.list.eval(
            _trimmed_value(pl.element()).str.contains(pattern))).otherwise(fits)
    # ... and within what the clause says: each value's facts hold the zone's mark
    facts = pl.when(within.is_not_null()).then(values).list.eval(
        _within_facts(_trimmed_value(pl.element()))).list.join("")
    outside = let("_outside", pl.when(within.is_not_null() & fits.list.all()).then(
        values.list.len() - facts.str.count_matches(_within_mark(within), literal=True)))
    fits = let("_fits", fits)
    bad = let("_bad", fits.list.eval(pl.element().not_()).list.arg_max())
    # in JSON, a number or a boolean written as a string ("line": "88") is a string (v18
    # read the text within the quotes)
    in_json = pl.col("json_kind").is_in(["object", "array"]).fill_null(False)
    string = let("_string", pl.when(kind.is_in(["integer", "number", "boolean"]) & in_json)
                 .then(pl.col("output_text")).str.extract(pl.concat_str(
                     pl.lit(r'(?i)"'), _as_written(f.struct.field("key"), "[_ -]"),
                     pl.lit(r'"\s*:\s*("[^"\n]{0,60}"?)')), 1))
    outcome = let("_outcome", pl.when(values.list.len() == 0).then(UNDECIDED)
                  .when(fits.list.all() & string.is_null() & (outside.fill_null(0) == 0))
                  .then(PASSED).otherwise(FAILED))
    named = kind.replace_strict(VALUE_NAMES, default=kind)
    named = pl.when(within.is_not_null()).then(pl.format("{} {}", named, within)).otherwise(named)
    return Check(
        applies=NAMED, each="field_types", let=let,
        needs={"fields": pl.lit(True), "json_children": f.struct.field("parent").is_not_null()},
        outcome=outcome,
        detail=pl.format("every `{}` in {} is {}", field, label(), named),
        evidence=pl.when(outcome == UNDECIDED)
        .then(pl.format("no value of `{}` to read in {}", field, label()))
        .when(outside > 0).then(pl.format(
            "{} of {} value(s) of `{}` not {}; the values: {}", outside, values.list.len(),
            field, within,
            values.list.eval(pl.concat_str(pl.lit("“"), pl.element(), pl.lit("”")))
            .list.head(5).list.join(", ")))
        .when(outcome == PASSED).then(pl.format(
            "{} value(s) of `{}`, each {}; first: {}", values.list.len(), field, named,
            quoted(excerpt(values.list.first(), 80))))
        .when(fits.list.all()).then(pl.format(  # (its text would be, but for the quotes)
            "`{}` is a JSON string, not {}: {}", field, named, string))
        .otherwise(pl.format("{} is not {} (`{}`, value {} of {})",
                             quoted(excerpt(values.list.get(bad, null_on_oob=True), 120)),
                             named, field, bad + 1, values.list.len())),
        confidence=pl.when(outcome == UNDECIDED).then(0).otherwise(90),
    )


# The start of an item of each type: the type's value, then no letter or digit
START_PATTERNS = {name: pattern[:-1] + r"(?:[^\p{L}\p{N}]|$)"
                  for name, pattern in VALUE_PATTERNS.items()}
START_PATTERNS["emoji"] = "^(?:" + EMOJI + ")"
# An item wrapped whole, a final mark of punctuation outside allowed
WRAP_PATTERNS = {"bold": r"^(?:\*\*[^*].*\*\*|__[^_].*__)[.,;:]?$",
                 "quotes": r"^(?:\".+\"|“.+”|'.+')[.,;:]?$", "backticks": r"^`[^`]+`[.,;:]?$"}
WRAP_NAMES = {"bold": "bold (**…**)", "quotes": "quotes", "backticks": "backticks"}
SEPARATOR = "\x1f"
MARK = "\x02"


@check("item_edge")
def item_edge() -> Check:
    """Every list item (every line of an output without a list) begins or ends as the clause
    says: with a quoted text ('each line starts with "TODO:"', case-sensitive), a value of a
    type ("each item begins with a date"), an emoji, or a mark ("each ending with a period");
    spaces and bold marks around an item are not read there. Or it is wrapped whole in bold,
    quotes or backticks ("each bullet in bold"), a final period or comma outside allowed."""
    s = pl.col("item_edges")
    text, kind, side = s.struct.field("text"), s.struct.field("type"), s.struct.field("side")
    let = Lets()
    listed = pl.col("list_items").list.len() > 0
    written = pl.when(listed).then(pl.col("list_items")).otherwise(pl.col("lines"))
    items = let("_items", written
                .list.eval(pl.element().str.replace(r"^\s*(?:\*\*|__)?", "")
                           .str.replace(r"(?:\*\*|__)?\s*$", "")))
    what = let("_what", pl.when(listed).then(pl.lit("list item")).otherwise(pl.lit("line")))
    # a text: each item is joined between separators, and those that begin (end) with it are
    # marked (a split on the row's own text, joined again: polars replaces no pattern read
    # from a row)
    joined = pl.concat_str(pl.lit(SEPARATOR), items.list.join(SEPARATOR), pl.lit(SEPARATOR))

    def marked(begins: bool) -> pl.Expr:
        """Per item, whether it begins (else ends) with the text: the joined items are split
        on the text beside a separator and joined again with MARK in its place."""
        sep = pl.lit(SEPARATOR)
        needle = pl.concat_str(sep, text) if begins else pl.concat_str(text, sep)
        mark = SEPARATOR + MARK if begins else MARK + SEPARATOR
        found = pl.element().str.starts_with(MARK) if begins else pl.element().str.ends_with(MARK)
        return (joined.str.split(needle).list.join(mark).str.split(SEPARATOR)
                .list.slice(1, items.list.len()).list.eval(found))

    fits = pl.lit(None, pl.List(pl.Boolean))
    for name, pattern in START_PATTERNS.items():  # a pattern per type, as in field_type
        fits = pl.when(kind == name).then(items.list.eval(
            pl.element().str.contains(pattern))).otherwise(fits)
    # wrapped whole ("each bullet in bold"): the item as written, bold marks and all
    raw = pl.when(side == "wrap").then(written)
    for name, pattern in WRAP_PATTERNS.items():
        fits = pl.when((side == "wrap") & (kind == name)).then(raw.list.eval(
            pl.element().str.strip_chars().str.contains(pattern))).otherwise(fits)
    fits = let("_fits", pl.when(text.is_not_null() & (side == "end")).then(marked(False))
               .when(text.is_not_null()).then(marked(True)).otherwise(fits))
    bad = let("_bad", fits.list.eval(pl.element().not_()).list.arg_max())
    outcome = let("_outcome", pl.when(items.list.len() == 0).then(UNDECIDED)
                  .when(fits.list.all()).then(PASSED).otherwise(FAILED))
    edge = pl.when(text.is_not_null()).then(quoted(text)).when(side == "wrap").then(
        kind.replace_strict(WRAP_NAMES, default=kind)).otherwise(
        kind.replace_strict(VALUE_NAMES, default=kind))
    # "every item … begins with X", "… is wrapped in bold"
    fails = let("_fails", pl.when(side == "end").then(pl.lit("does not end with"))
                .when(side == "wrap").then(pl.lit("is not wrapped in"))
                .otherwise(pl.lit("does not begin with")))
    says = (pl.when(side == "end").then(pl.lit("ends with"))
            .when(side == "wrap").then(pl.lit("is wrapped in")).otherwise(pl.lit("begins with")))
    shown = pl.when(side == "wrap").then(written).otherwise(items)
    return Check(
        applies=CONTENT, each="item_edges", let=let,
        outcome=outcome,
        detail=pl.format("every item (or line) of {} {} {}", label(), says, edge),
        evidence=pl.when(outcome == UNDECIDED).then(pl.format("no item or line in {}", label()))
        .when(outcome == PASSED).then(pl.format(
            "all {} {}(s) {} {}; first: {}", items.list.len(), what,
            pl.when(side == "end").then(pl.lit("end with")).when(side == "wrap")
            .then(pl.lit("are wrapped in")).otherwise(pl.lit("begin with")), edge,
            quoted(excerpt(shown.list.first(), 120))))
        .otherwise(pl.format("{} {} of {} {} {}: {}", what, bad + 1,
                             items.list.len(), fails, edge,
                             quoted(excerpt(shown.list.get(bad, null_on_oob=True), 120)))),
        confidence=pl.when(outcome == UNDECIDED).then(0).otherwise(90),
    )


@check("letter_case")
def letter_case() -> Check:
    """Every letter of the output is lowercase (uppercase) as the clause says ("all lowercase",
    "ALL CAPS"); letters without case (digits, CJK) never fail it."""
    case = pl.col("letter_case")
    out = pl.when(case.is_not_null()).then(pl.col("output_text"))
    lower = case == "lower"
    ok = pl.when(lower).then(out == out.str.to_lowercase()).otherwise(out == out.str.to_uppercase())
    wrong = pl.when(lower).then(pl.lit(r"\p{Lu}")).otherwise(pl.lit(r"\p{Ll}"))
    named = pl.when(lower).then(pl.lit("lowercase")).otherwise(pl.lit("uppercase"))
    return Check(
        applies=CONTENT & case.is_not_null(),
        outcome=pl.when(ok).then(PASSED).otherwise(FAILED),
        detail=pl.format("every letter of {} is {}", label(), named),
        evidence=pl.when(ok).then(pl.format("all {}: {}", named, quoted(excerpt(out, 120))))
        .otherwise(pl.format("{} letter “{}” in {}", pl.when(lower).then(pl.lit("an uppercase"))
                             .otherwise(pl.lit("a lowercase")), out.str.extract(
                                 pl.concat_str(pl.lit("("), wrong, pl.lit(")")), 1),
                             around(out, wrong, 40))),
        confidence=pl.lit(95),
    )


@check("order")
def order() -> Check:
    """The output's items, or a field's values in the order they appear, keep the order the
    clause states ("sorted alphabetically", "sorted by `score`, highest first"): numbers as
    numbers, ISO dates as dates, and text without case, only where the clause says
    alphabetically. Without a field the list items are ordered (else a table's first column),
    or, "in chronological order", the ISO date each item (else each line) holds.
    Values of another kind ("high", "medium", "low") leave the order a question."""
    o = pl.col("orders")
    by, direction, alpha, chrono = (o.struct.field(n) for n in (
        "by", "direction", "alphabetical", "chronological"))
    let = Lets()
    listed = pl.col("list_items").list.len() > 0
    table = pl.col("has_table").fill_null(False)
    # a JSON array of strings or numbers: its elements, in order
    scalars = ((pl.col("json_kind") == "array") & (pl.col("json_len") > 0)
               & (pl.col("json_element_kinds").list.set_difference(
                   pl.lit(["string", "integer", "number"])).list.len() == 0)).fill_null(False)
    json_values = pl.when(scalars).then(pl.col("output_text")).str.extract_all(
        r"\"(?:[^\"\\]|\\.)*\"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
    values = (
        pl.when(by.is_not_null()).then(_values_of(by))
        .when(listed).then(pl.col("list_items"))
        .when(table).then(_values_of(pl.col("table_header").list.first()))
        .when(scalars).then(json_values)
        .when(chrono).then(pl.col("lines"))
    ).list.eval(pl.element().str.replace_all(r"[*`\"“”]", "").str.strip_chars(" \t.;,"))
    # "in chronological order": the ISO date each item holds (null where one holds none)
    values = let("_values", pl.when(chrono).then(values.list.eval(
        pl.element().str.extract(r"(\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?)", 1)))
        .otherwise(values))
    where = let("_where", pl.when(by.is_not_null()).then(pl.format("the values of `{}`", by))
                .when(chrono & listed).then(pl.lit("the dates of the list items"))
                .when(chrono & ~table).then(pl.lit("the dates of the lines"))
                .when(listed).then(pl.lit("the list items"))
                .when(table).then(pl.lit("the first column's cells"))
                .when(scalars).then(pl.lit("the JSON array's elements"))
                .otherwise(pl.lit("the items")))
    numbers = values.list.eval(pl.element().str.replace_all(r"[,$€£%\s]", "")
                               .cast(pl.Float64, strict=False))
    is_number = numbers.list.eval(pl.element().is_not_null()).list.all()
    is_date = values.list.eval(pl.element().str.contains(r"^\d{4}-\d{2}-\d{2}")
                               .fill_null(False)).list.all()
    # each step from one value to the next: 1 up, -1 down, 0 equal
    e = pl.element()
    text_steps = values.list.eval(
        pl.when(e.str.to_lowercase() > e.str.to_lowercase().shift(1)).then(1)
        .when(e.str.to_lowercase() < e.str.to_lowercase().shift(1)).then(-1)
        .when(e.is_not_null() & e.shift(1).is_not_null()).then(0).drop_nulls())
    steps = let("_steps", pl.when(is_number).then(
        numbers.list.eval(pl.element().diff().sign().drop_nulls().cast(pl.Int32)))
        .when(is_date | alpha).then(text_steps.cast(pl.List(pl.Int32))))
    up, down = steps.list.min() >= 0, steps.list.max() <= 0
    # "any" direction: the one the first change of value takes
    first_move = steps.list.eval(pl.element().filter(pl.element() != 0)).list.first()
    rising = let("_rising", pl.when(direction == "asc").then(True)
                 .when(direction == "desc").then(False).otherwise(first_move.fill_null(1) > 0))
    ok = pl.when(rising).then(up).otherwise(down)
    bad = let("_bad", pl.when(rising).then(steps.list.eval(pl.element() < 0).list.arg_max())
              .otherwise(steps.list.eval(pl.element() > 0).list.arg_max()))
    outcome = let("_outcome", pl.when(values.list.len().fill_null(0) < 2).then(UNDECIDED)
                  .when(steps.is_null()).then(UNDECIDED)
                  .when(ok).then(PASSED).otherwise(FAILED))
    kind = pl.when(is_number).then(pl.lit("numbers")).when(is_date).then(pl.lit("dates")) \
        .otherwise(pl.lit("text, without case"))
    order_name = pl.when(rising).then(pl.lit("ascending")).otherwise(pl.lit("descending"))
    return Check(
        applies=CONTENT, each="orders", let=let,
        outcome=outcome,
        detail=pl.format("{} keeps the order stated: {}", label(), o.struct.field("phrase")),
        evidence=(
            pl.when(by.is_not_null() & (values.list.len() == 0)).then(pl.format(
                "no values of `{}` in {} to order", by, label()))
            .when(values.is_null()).then(pl.format(
                "no list, table or JSON array in {} whose items to order", label()))
            .when(values.list.len() < 2).then(pl.format(
                "{} in {}: {} value(s), nothing to order", where, label(), values.list.len()))
            .when((outcome == UNDECIDED) & chrono).then(pl.format(
                "{} in {}: not every one is an ISO date (YYYY-MM-DD), so their order is a "
                "question", where, label()))
            .when(outcome == UNDECIDED).then(pl.format(
                "{} are neither numbers nor dates (first: {}): whether they are in order is a "
                "question", where, quoted(excerpt(values.list.first(), 60))))
            .when(outcome == PASSED).then(pl.format(
                "{} are in {} order ({} values, compared as {}): first {}, last {}", where,
                order_name, values.list.len(), kind, quoted(excerpt(values.list.first(), 60)),
                quoted(excerpt(values.list.last(), 60))))
            .otherwise(pl.format(
                "{} are not in {} order (compared as {}): {} (value {}) comes after {}",
                where, order_name, kind,
                quoted(excerpt(values.list.get(bad + 1, null_on_oob=True), 60)), bad + 2,
                quoted(excerpt(values.list.get(bad, null_on_oob=True), 60))))),
        confidence=pl.when(outcome == UNDECIDED).then(0)
        .when(is_number | is_date).then(90).otherwise(85),
        needs={"lists": by.is_null(), "table": by.is_null(), "json": by.is_null(),
               "lines": chrono, "fields": by.is_not_null()},
    )


@check("field_length")
def field_length() -> Check:
    """Every value of a field is as long as its sub-item says ("`summary`: at most 50 words",
    "`title`: under 80 characters"). Values are those of field_values (JSON scalars, table and
    CSV cells, `label: value` lines); a nested or empty value (a heading's) tells nothing."""
    f = pl.col("field_lengths")
    field, measure = f.struct.field("field"), f.struct.field("measure")
    let = Lets()
    key = f.struct.field("key")
    items = measure == "items"
    # a count of items: the lengths of the field's JSON arrays
    lens = pl.when(items).then(_array_lengths(key))
    values = let("_values", pl.when(items).then(lens.cast(pl.List(pl.String)))
                 .otherwise(_scalar_values_of(key)))
    sizes = let("_sizes", pl.when(items).then(lens)
                .when(measure == "words")
                .then(values.list.eval(pl.element().str.count_matches(WORDS)))
                .otherwise(values.list.eval(pl.element().str.strip_chars().str.len_chars())))
    low = f.struct.field("min").fill_null(0)
    high = f.struct.field("max").fill_null(1 << 40)
    too_long, too_short = sizes.list.max() > high, sizes.list.min() < low
    # the field where the JSON output has it (the object, or each element of the array) holds
    # a value that is no array ("`late`: an array of …": "t1")
    holders = holding_key(key)
    listed = f.struct.field("phrase").str.contains(r"(?i)\b(?:array|list)\b")
    held = let("_held", (items & listed & (holders.fill_null(0) > sizes.list.len()))
               .fill_null(False))
    outcome = let("_outcome", pl.when(held).then(FAILED)
                  .when(sizes.list.len() == 0).then(UNDECIDED)
                  .when(too_long | too_short).then(FAILED).otherwise(PASSED))
    # the value that settles it: the longest, or the shortest when only a minimum fails
    at = pl.when(too_short & ~too_long).then(sizes.list.arg_min()).otherwise(
        sizes.list.arg_max())
    unit = pl.when(measure == "words").then(pl.lit("words")).otherwise(pl.lit("characters"))
    raw = pl.col("field_lengths").struct.field("measure")
    return Check(
        applies=NAMED, each="field_lengths", let=let,
        needs={"fields": raw != "items", "json_arrays": raw == "items"},
        outcome=outcome,
        detail=pl.format("`{}` in {}: {}", field, label(), f.struct.field("phrase")),
        evidence=pl.when(held)
        .then(pl.format("`{}` in {} holds a value that is no JSON array", field, label()))
        .when((outcome == UNDECIDED) & items)
        .then(pl.format("no JSON array under `{}` in {}", field, label()))
        .when(outcome == UNDECIDED)
        .then(pl.format("no value of `{}` to measure in {}", field, label()))
        .when(items).then(pl.format(
            "{} array(s) under `{}`; {} has {} {}", sizes.list.len(), field,
            pl.when(outcome == FAILED).then(pl.lit("one"))
            .when(too_short).then(pl.lit("the shortest")).otherwise(pl.lit("the longest")),
            sizes.list.get(at, null_on_oob=True),
            _number_of(sizes.list.get(at, null_on_oob=True), pl.lit("elements"))))
        .otherwise(pl.format("{} value(s) of `{}`; {} has {} {}: {}", values.list.len(), field,
                             pl.when(outcome == FAILED).then(pl.lit("one"))
                             .when(too_short).then(pl.lit("the shortest"))
                             .otherwise(pl.lit("the longest")),
                             sizes.list.get(at, null_on_oob=True),
                             _number_of(sizes.list.get(at, null_on_oob=True), unit),
                             quoted(excerpt(values.list.get(at, null_on_oob=True), 160)))),
        confidence=pl.when(outcome == UNDECIDED).then(0).otherwise(90),
    )


# ---- what text cannot settle --------------------------------------------------------------

@check("judgment")
def judgment() -> Check:
    """Deferred: a quality word ("critically evaluated", "concise") needs a judge, not a regex."""
    word = pl.col("judgments")
    return Check(
        judgeable=True,
        applies=CONTENT, each="judgments",
        outcome=UNDECIDED,
        detail=pl.format("requires judgment: {}, said of {}", quoted(word), label()),
        evidence=quoted(excerpt(pl.col("output_text"), 240)),
        confidence=pl.lit(0),
        recommendation=pl.format(
            "replace {} with a property text can settle: {}", quoted(word),
            word.str.replace(r"^`[^`]*`: ", "").replace_strict(JUDGMENT_ADVICE, default=pl.lit(
                "a format, a count (\"at least 5 items\"), a length (\"at most 200 words\"), "
                "required fields or an exact phrase"), return_dtype=pl.String)),
    )


@check("testable")
def testable() -> Check:
    """A clause whose only adjectives are vague ("a good report") states nothing to check."""
    words = pl.col("vague_words").list.eval(
        pl.concat_str(pl.lit("“"), pl.element(), pl.lit("”"))).list.join(", ")
    core = (pl.col("description").fill_null("").str.replace_all(VAGUE_WORDS + r",?\s*", "")
            .str.replace_all(r"\s+", " ").str.strip_chars().str.strip_chars(" ,;")
            # what the vague words leave: an article before another sound, a clause cut short
            .str.replace(r"(?i)(?:\s+(?:that|which|who))?\s+(?:is|are|be|and|or)$", "")
            .str.replace_all(r"(?i)\b(an?|the) (?:and|or),? ", "$1 ")
            .str.replace_all(r"\b([Aa])n? ([aeiouAEIOU])", "${1}n $2")
            .str.replace_all(r"\b([Aa])n ([b-df-hj-np-tv-zB-DF-HJ-NP-TV-Z])", "$1 $2"))
    name = pl.coalesce(pl.col("target_output"), pl.lit("output"))
    return Check(
        applies=JUDGED & (pl.col("vague_words").list.len() > 0) & ~pl.col("decidable"),
        outcome=UNDECIDED,
        detail=pl.format("too vague to check: {} names no property of {} that its text could "
                         "establish", words, label()),
        evidence=quoted(excerpt(pl.col("output_text"), 240)),
        confidence=pl.lit(0),
        recommendation=pl.format(
            "rewrite as a testable clause, e.g. \"- `{}`: {}, as a bulleted list of at least 3 "
            "points, each under 30 words\"; say what makes it {} in terms of a format, a count, "
            "a length, required fields or an exact phrase", name, core, words),
    )


@check("meets_description")
def meets_description() -> Check:
    """Deferred: what a clause says beyond its recognised requirements needs judgment (words
    that only repeat the output's name say nothing more)."""
    name_words = (pl.col("target_output").fill_null("").str.to_lowercase()
                  .str.extract_all(r"\p{L}{3,}").list.eval(pl.element().str.replace(r"s$", "")))
    says_more = pl.col("unchecked_words").list.set_difference(name_words).list.len() > 0
    # A conditional naming no output is judged on all its service published, which no check
    # of one output's content reads (NAMED): what it asks is asked whole. Asked only what no
    # reader took, "returns an empty list and a note" asked nothing once "empty list" was
    # read as a count, and the clause was met by any output.
    joined = pl.col("output_scope") == "service"
    asked = pl.when(joined).then(pl.col("description")).otherwise(pl.col("unchecked_text"))
    return Check(
        judgeable=True,
        applies=CONTENT & ~((pl.col("vague_words").list.len() > 0) & ~pl.col("decidable"))
        & ((joined & pl.col("description").str.contains(r"\p{L}{3,}").fill_null(False))
           | (pl.col("unchecked_text").is_not_null() & says_more)),
        outcome=UNDECIDED,
        detail=pl.format("requires judgment: does {} meet {}?", label(), quoted(asked)),
        evidence=quoted(excerpt(pl.col("output_text"), 240)),
        confidence=pl.lit(0),
        recommendation=pl.format(
            "state {} as a property of {} that can be checked: a format (JSON, list, table), a "
            "count (\"at least 5 items\"), a length (\"at most 200 words\"), required fields "
            "or an exact phrase", quoted(asked), label()),
    )


def content_checks() -> list[Check]:
    """The content checks in the order the built-in grader runs them."""
    return [
        alternative_output(), testable(), output_format(), excluded_format(), json_shape(),
        csv_header(), value_type(), count(), literal(), forbidden_literal(), no_secrets(),
        enum_value(), required_field(), no_extra_fields(), numeric_range(), field_length(),
        field_type(), item_edge(), blank_line(), order(), letter_case(), judgment(),
        meets_description(),
    ]
