"""What each output shows, measured over the whole `binding_text` column at once.

`output_facts(frame)` adds these columns to the clause frame (null where there is no output,
or where no check needs them: see the families below):

  output_text       the output, trimmed
  n_words           maximal runs of non-whitespace (tabs, newlines and no-break spaces are
                    whitespace; an empty output has 0 words)
  n_chars, n_lines  characters of the trimmed output; non-empty lines
  n_sentences       sentence ends ([.!?…] then a space or the end) in prose and list items,
                    plus one for a block that ends without one
  n_paragraphs      blank-line separated blocks of prose (headings, lists, tables, code blocks
                    and rules are not paragraphs)
  rest_*            words, sentences and paragraphs after the first line (for a one-line
                    output: after a bold or labelled lead, else after its first sentence):
                    "a score, followed by one paragraph"
  first_line, headings (list), n_headings
  list_items (top-level items, marker removed), n_bullets, n_numbered
  n_line_items      items of a list without markers (two or more lines of one item each,
                    say a URL a line; then they are the list_items), else 0
  paragraphs, lines (the texts of the prose paragraphs and of the non-empty lines)
  item_words, paragraph_words, line_words, item_chars, paragraph_chars, line_chars,
  item_urls, paragraph_urls, line_urls  (one number per list item, paragraph or line)
  item_sentences, paragraph_sentences, line_sentences  (likewise, sentences as n_sentences
                    counts them)
  has_table, table_header (normalised cell names), table_columns (the same cells as the
                    output writes them, for evidence), n_table_rows
  has_code_block, n_code_blocks (fenced blocks), urls (distinct), n_urls, has_markdown,
  yaml_like, csv_like
  is_diff           a unified diff: at least one hunk header ("@@ -12,7 +12,8 @@") at a
                    line's start (fenced or not)
  n_citations       distinct numbered citation markers ("[1]", "[12]")
  json_kind         object | array | string | number | boolean | null, or null when the output
                    (or the single fenced block it consists of) is not valid JSON
  json_fenced, json_len (array length), json_keys (top-level keys, normalised as a clause's
                    field names are: normalise_key), json_keys_written (the same keys as the
                    output writes them, for evidence)
  json_element_keys one line per array element: '|key|key|' (normalised keys)
  json_element_keys_written  the keys of an array's object elements, each once, as the output
                    writes them (for evidence)
  json_element_kinds the kinds of an array's elements, distinct and sorted: string | integer |
                    number (not whole) | boolean | null | object | array
  json_array_lens   one line per array value, 'key<TAB>length' (normalised key): of the
                    object's keys, or of each object element's keys of an array
  element_texts     each element of a JSON array, as JSON text
  element_urls      the distinct URLs in each element of a JSON array
  field_values      one line per named value, 'key<TAB>value': JSON pairs (scalars; '[' or '{'
                    for nested values), table and CSV cells under their column, 'label: value'
                    lines and headings (with an empty value)
  json_top_values   the same lines of a JSON output's own keys (an array's: its object
                    elements' keys), parsed: a string decoded, a number as written back,
                    'null', and an array's elements after its '['; null where the output
                    holds no more than those pairs (field_values are then the same)
  json_child_values the lines of the pairs one level below those, each key written
                    'container<US>key' (US: CHILD_OF, U+001F; the container's normalised key):
                    of an object, or of the object elements of an array, its own keys hold;
                    null where json_top_values is

JSON is parsed by DuckDB's json functions (vectorized, never Python's json per row).

Measures come in families (FAMILIES below), computed together once per distinct output:
  base (always)  output_text, n_chars, first_line
  words          n_words
  prose          n_sentences, n_paragraphs, paragraphs, paragraph_words/_chars/_urls
  rest           rest_words, rest_sentences, rest_paragraphs
  lines          lines, n_lines, line_words/_chars/_urls
  csv            csv_like (after lines)
  lists          list_items, n_bullets, n_numbered, n_line_items, item_words/_chars/_urls
  headings       headings, n_headings
  table          has_table, table_header, table_columns, n_table_rows
  code           has_code_block, n_code_blocks
  diff           is_diff
  urls           urls, n_urls, n_citations
  markdown       has_markdown
  yaml           yaml_like
  json           json_kind, json_fenced, json_len, json_keys, json_keys_written,
                 json_element_keys, json_element_keys_written,
                 json_element_kinds
  json_arrays    json_array_lens (after json)
  json_items     element_texts, element_urls (after json)
  fields         field_values, json_top_values (after json, table and headings)
  json_children  json_child_values (after json)
  sentences_each item_sentences, paragraph_sentences, line_sentences (after lists, prose
                 and lines)
`output_facts(frame, demand)` measures a family only on the rows its demand selects; the
grader's `measure` derives that demand from the columns each check reads (grader.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import polars as pl
import yaml

from ..scratch import scratch
from ..tables import collect
from .clause_analysis import normalise_key

LIST_ITEM = r"(?m)^[ ]{0,3}(?:[-*+]|\d{1,3}[.)])[ \t]+\S[^\n]*"
HEADING = r"(?m)^[ ]{0,3}#{1,6}[ \t]+[^\n]*"
FENCED = r"(?ms)^[ \t]*(?:```|~~~)[^\n]*\n.*?^[ \t]*(?:```|~~~)[ \t]*$"
# A table's delimiter row: cells of one hyphen or more (GFM's `|-|:-:|`) where a pipe parts
# them, three or more in a row without one
_CELL = r"[ \t]*:?-+:?[ \t]*"
TABLE_SEPARATOR = (rf"[ \t]*(?:\|{_CELL}(?:\|{_CELL})*\|?|{_CELL}(?:\|{_CELL})+\|?"
                   r"|:?-{3,}:?)[ \t]*")
TABLE = (r"(?m)^([^\n]*\|[^\n]*)\n" + TABLE_SEPARATOR
         + r"(?:\n|$)((?:[^\n]*\|[^\n]*(?:\n|$))*)")
# (no quote mark, curly ones and "…" included: one closing a URL is no part of it)
URL = r"https?://[^\s<>()\[\]\"'`“”‘’…]+"
# DuckDB's json_type of an array element, as json_element_kinds names it
DUCKDB_KINDS = {"VARCHAR": "string", "BIGINT": "integer", "UBIGINT": "integer",
                 "DOUBLE": "number"}
# The header of a unified diff's hunk: "@@ -12,7 +12,8 @@"
HUNK = r"(?m)^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@"
# A numbered citation marker: "[3]", "[12]"
CITATION = r"\[\d{1,3}\]"
SENTENCE_END = r"[.!?…]+[\"'”’)\]*_]*(?:\s|$)"
# Of those, the ones that end no sentence: "e.g." and "i.e." (which never end one), and a mark
# followed by a word in lower case ("approx. five", "wait… then"), as no sentence starts so
NOT_SENTENCE_END = r"\b(?i:e\.g|i\.e)\.[\"'”’)\]*_]*\s|[.!?…]+[\"'”’)\]*_]*\s+\p{Ll}"
MARKDOWN = (r"(?m)^[ ]{0,3}#{1,6}[ \t]|^[ ]{0,3}(?:[-*+]|\d{1,3}[.)])[ \t]|\*\*[^*\n]+\*\*"
            r"|\[[^\]\n]+\]\([^)\n]+\)|^[ \t]*```|^[ \t]*\|.*\|[ \t]*$|(?:^|\s)_[^_\n]+_(?:\s|$)"
            r"|`[^`\n]+`|^>[ \t]")
YAML_LINE = (r"^(?:[ \t]*#.*|[ \t]*-(?:[ \t].*)?|[ \t]*[\"']?[\p{L}\p{N}_][\p{L}\p{N}_ .\-]*[\"']?"
             r"[ \t]*:(?:[ \t].*)?|[ \t]+\S.*|---|\.\.\.)$")
# A "Label: value" line (a list item, bold or not): the label (group 1, at most LABEL_CHARS
# characters: longer is prose, not a label) and the value (group 2). The label's bound is a
# filter on group 1 (see `_field_values`), not a bounded repeat in the pattern: the matches
# are the same (a match spans one line from its start, and the shortest label wins either
# way), but a repeat bounded at 40 compiles the Unicode class forty times: 12 ms instead of
# 1, paid again whenever other patterns (a clause reading's hundreds) push it out of the 32
# polars keeps compiled.
LABEL_CHARS = 41
LABEL = (r"(?m)^[ \t]*(?:[-*+][ \t]+)?(?:\*\*|__)?([\p{L}][\p{L}\p{N} _\-]*?)"
         r"(?::(?:\*\*|__)|(?:\*\*|__)?[ \t]*:)[ \t]*([^\n]*)")
JSON_PAIR = (r"\"((?:[^\"\\]|\\.)*)\"\s*:\s*(\"(?:[^\"\\]|\\.)*\"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
             r"|true|false|null|\[|\{)")
# The key of a JSON_PAIR match (a string literal), and the key with its colon (what precedes
# the value)
JSON_KEY = r'^"(?:[^"\\]|\\.)*"'
JSON_KEY_COLON = JSON_KEY + r"\s*:\s*"
# A JSON string literal JSON allows (what a pair's value is in a valid document; a stretch of
# text misread as a pair may hold another escape): its value is decoded, "x \"y\"" reads x "y"
JSON_STRING = r'^"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"$'
# An output of two or more lines that each hold one item and nothing else ("https://a.example"
# on one line, "https://b.example" on the next): a list without markers. A line that starts
# like markdown (a heading, quote, table, fence, rule or JSON bracket) is no such item.
LINE_ITEM = r"[^\s`\[\]{}#>|\-*+=_~]\S*"
# A label opening such a list, on a line of its own ("Hosts:", "**Emails:**"): no item
LABEL_LINE = r"^[ \t]*(?:\*\*|__)?[\p{L}][^\n:]*:(?:\*\*|__)?[ \t]*\r?\n"
PLAIN_LINES = r"^" + LINE_ITEM + r"(?:[ \t]*\r?\n\s*" + LINE_ITEM + r")+$"
BLOCK = "\x1e"
# A cell of a CSV line, with the comma before it: quoted ("a, b" and "" inside) or bare.
CSV_CELL = r'(?:^|,)[ \t]*(?:"(?:[^"]|"")*"|[^,]*)'


def has_fence_mark(text: pl.Expr) -> pl.Expr:
    """The texts that can hold a fenced code block: FENCED starts with no literal the regex
    engine can look for, so a text without a fence would be scanned through for nothing."""
    return text.str.contains("```", literal=True) | text.str.contains("~~~", literal=True)


# A block that is a list item (or holds one at its start)
LIST_START = r"^[ ]{0,3}(?:[-*+]|\d{1,3}[.)])[ \t]"
# What starts a block of its own at the start of a line: a list item, a heading, a table line,
# a quote
BLOCK_START = r"[ ]{0,3}(?:[-*+][ \t]|\d{1,3}[.)][ \t]|#|\||>)"


def _blocks(text: pl.Expr) -> pl.Expr:
    """Blank-line separated blocks; every list item, heading and table line starts its own."""
    text = text.str.replace_all(r"\r\n?", "\n")
    return (
        pl.when(has_fence_mark(text)).then(text.str.replace_all(FENCED, "\n\n```\n\n"))
        .otherwise(text)
        # a line's start found by the newline before it: a multi-line `^` is looked for at
        # every position of the text, four times slower here
        .str.replace_all(r"\n(" + BLOCK_START + ")", "\n\n$1")
        .str.replace(r"^(" + BLOCK_START + ")", "\n$1")
        # (blank lines part blocks; the next block's indentation is kept, to be read below)
        .str.replace_all(r"\n[ \t]*\n(?:[ \t]*\n)*", BLOCK)
        .str.strip_chars("\n").str.split(BLOCK)
        .list.eval(
            # an indented block under a list item is that item's (a paragraph of it); one
            # indented by four spaces or a tab elsewhere is code (CommonMark): neither is a
            # paragraph of the output
            pl.when(pl.element().str.contains(r"^[ \t]{2,}\S")
                    & pl.element().shift(1).str.contains(LIST_START).fill_null(False))
            .then(pl.concat_str(pl.lit("- "), pl.element().str.strip_chars()))
            .when(pl.element().str.contains(r"^(?:(?: {4}|\t)[^\n]*(?:\n|$))+$"))
            .then(pl.lit("```"))
            .otherwise(pl.element()).str.strip_chars())
        .list.eval(pl.element().filter(pl.element().str.len_chars() > 0))
    )


def _is_prose(block: pl.Expr) -> pl.Expr:
    structural = block.str.contains(
        r"^(?:#|\||```|~~~|[-*+][ \t]|\d{1,3}[.)][ \t]|(?:-{3,}|\*{3,}|_{3,})$)")
    return ~structural & block.str.contains(r"[\p{L}\p{N}]")


def _sentences_in(block: pl.Expr) -> pl.Expr:
    counted = ~block.str.contains(r"^(?:#|\||```|~~~|(?:-{3,}|\*{3,}|_{3,})$)") \
        & block.str.contains(r"[\p{L}\p{N}]")
    ends = block.str.count_matches(SENTENCE_END) - block.str.count_matches(NOT_SENTENCE_END)
    open_end = (~block.str.contains(r"[.!?…][\"'”’)\]*_]*\s*$")).cast(pl.Int64)
    return pl.when(counted).then(ends + open_end).otherwise(0)


def _rest(text: pl.Expr) -> pl.Expr:
    """What follows the lead of an output: its first line; on one line, a bold or labelled
    lead ("**Risk: 68/100** — because …") or a number set off by a dash, colon or comma
    ("85 — strong evidence."), else its first sentence."""
    after_line = text.str.splitn("\n", 2).struct.field("field_1")
    # the lead patterns only read one-line outputs (null elsewhere, so never scanned)
    single = pl.when(after_line.is_null()).then(text)
    # a labelled lead takes its value, up to a dash or the end of its sentence ("Score: 70/100.",
    # "Risk: 7.5 —"; v14 took "Score:" alone, and counted "70/100." a sentence of the rest)
    # (a number set off so is read first: "85/100: strong. Very." has two sentences after it)
    # (a number may be a time, "10:30:"; a value's mark followed by no space, as in a URL or a
    # decimal, does not end it, nor does "e.g." or "i.e.")
    after_lead = single.str.extract(r"^\s*(?:\*\*[^*\n]+\*\*|__[^_\n]+__|-?\d+(?:[.:]\d+)*"
                                    r"(?:\s*/\s*\d+|\s*%)?\s*(?:[—–:,]|\s-\s)|[^.!?:\n]{1,40}:"
                                    r"(?:\b(?i:e\.g|i\.e)\.\s|[^\n.!?—–]|[.!?][^\s.!?—–]){0,80}"
                                    r"[.!?]?)\s*[—–\-:,]?"
                                    r"\s*((?s:.+))$", 1)
    after_sentence = single.str.extract(r"^.*?[.!?…]+[\"'”’)\]*_]*\s+((?s:.*))$", 1)
    return pl.coalesce(after_line, after_lead, after_sentence, pl.lit("")).str.strip_chars()


# ---- measure families ----------------------------------------------------------------------
# Measures are computed per family, once per distinct output, and only for the outputs of the
# clauses some check needs them for (see `measure` in grader.py): a clause that bounds words
# never pays for tables, sentences or JSON. Each family adds its columns to a frame of distinct
# outputs (`_tid`, `output_text`, plus the columns of the families it comes `after`).

# A word is a maximal run of non-whitespace, counted by where each one starts: the same count
# as matching `\S+`, a fifth faster (a match of `\S+` is scanned once more, backwards, to find
# its start).
WORDS = r"(?:^|\s)\S"


def _counts_of(texts: str, prefix: str) -> list[pl.Expr]:
    """Words, characters and URLs of each text of a list column."""
    col = pl.col(texts)
    return [col.list.eval(pl.element().str.count_matches(WORDS)).alias(f"{prefix}_words"),
            col.list.eval(pl.element().str.len_chars()).alias(f"{prefix}_chars"),
            col.list.eval(pl.element().str.count_matches(URL)).alias(f"{prefix}_urls")]


def _sentences_and_paragraphs(prefix: str) -> list[pl.Expr]:
    """Sentences and paragraphs counted over the list column `_blocks`."""
    return [pl.col("_blocks").list.eval(_sentences_in(pl.element())).list.sum()
            .alias(f"{prefix}sentences"),
            pl.col("_blocks").list.eval(_is_prose(pl.element())).list.sum()
            .alias(f"{prefix}paragraphs")]


def _words(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(
        pl.col("output_text").str.count_matches(WORDS).fill_null(0).alias("n_words"))


def _prose(df: pl.DataFrame) -> pl.DataFrame:
    return (
        df.with_columns(_blocks(pl.col("output_text")).alias("_blocks"))
        .with_columns(*_sentences_and_paragraphs("n_"),
                      pl.col("_blocks").list.eval(pl.element().filter(_is_prose(pl.element())))
                      .alias("paragraphs"))
        .with_columns(*_counts_of("paragraphs", "paragraph"))
    )


def _rest_measures(df: pl.DataFrame) -> pl.DataFrame:
    return (
        df.with_columns(_rest(pl.col("output_text")).alias("_rest"))
        .with_columns(_blocks(pl.col("_rest")).alias("_blocks"),
                      pl.col("_rest").str.count_matches(WORDS).fill_null(0).alias("rest_words"))
        .with_columns(*_sentences_and_paragraphs("rest_"))
    )


def _nonempty_lines(text: pl.Expr) -> pl.Expr:
    """The lines of `text` that hold something, trimmed."""
    return text.str.split("\n").list.eval(pl.element().str.strip_chars()).list.eval(
        pl.element().filter(pl.element().str.len_chars() > 0))


def _lines(df: pl.DataFrame) -> pl.DataFrame:
    return (df.with_columns(_nonempty_lines(pl.col("output_text")).alias("lines"))
            .with_columns(pl.col("lines").list.len().alias("n_lines"),
                          *_counts_of("lines", "line")))


def _csv(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(_csv_like(pl.col("lines")).alias("csv_like"))


def _indent(item: pl.Expr) -> pl.Expr:
    return item.str.len_bytes() - item.str.strip_chars_start(" ").str.len_bytes()


# A thematic break written with spaces ("- - -", "* * *"): a rule, no list item
RULE_ITEM = r"^[ ]{0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,})$"


def unfenced(text: pl.Expr) -> pl.Expr:
    """`text` without its fenced code blocks: the list items, headings and citations of an
    example in a fence are the example's, not the output's."""
    return pl.when(has_fence_mark(text)).then(text.str.replace_all(FENCED, "")).otherwise(text)


def top_level_items(text: pl.Expr) -> pl.Expr:
    """The list items of `text` with their markers, those of least indent ("  - detail" under
    "- finding" is no item of the list), outside fenced code, rules left out."""
    return unfenced(text).str.extract_all(LIST_ITEM).list.eval(pl.element().filter(
        ~pl.element().str.contains(RULE_ITEM))).list.eval(pl.element().filter(
            _indent(pl.element()) == _indent(pl.element()).min()))


def urls_in(text: pl.Expr) -> pl.Expr:
    """The URLs of `text` as written, without the punctuation or emphasis that closes a
    sentence or a span around them ("…/x.", "**…/x**")."""
    return text.str.extract_all(URL).list.eval(pl.element().str.strip_chars_end(".,;:!?*_"))


def distinct_urls(text: pl.Expr) -> pl.Expr:
    """The URLs of `text` (`urls_in`), each once."""
    return urls_in(text).list.unique(maintain_order=True)


def _lists(df: pl.DataFrame) -> pl.DataFrame:
    raw = pl.col("_items")
    bullets = raw.list.eval(pl.element().str.contains(r"^[ ]{0,3}[-*+]")).list.sum() \
        .cast(pl.UInt32)
    text = pl.col("output_text")
    # no list marker, but one item on each line: the lines are the items (null elsewhere, so
    # only those outputs are split), after a label line ("Hosts:"); not a CSV's lines (a
    # comma on the first line but between digits: "1,200" is a number)
    # (the label replaced only where there is one: a replace copies every text it reads)
    unlisted = raw.list.len() == 0
    body = pl.coalesce(pl.when(unlisted & text.str.contains(LABEL_LINE)).then(text)
                       .str.replace(LABEL_LINE, ""), pl.when(unlisted).then(text))
    plain = pl.when(body.str.contains(PLAIN_LINES) & ~body.str.contains(r"^[^\n]*(?:\D,|,\D)")
                    ).then(body).str.extract_all(r"\S+")
    return (
        df.with_columns(top_level_items(text).alias("_items"))
        .with_columns(plain.alias("_lines"))
        .with_columns(
            pl.coalesce("_lines", raw).list.eval(
                pl.element().str.replace(r"^[ ]{0,3}(?:[-*+]|\d{1,3}[.)])[ \t]+", "")
                .str.strip_chars()).alias("list_items"),
            bullets.alias("n_bullets"),
            (raw.list.len() - bullets).alias("n_numbered"),
            pl.col("_lines").list.len().fill_null(0).cast(pl.UInt32).alias("n_line_items"))
        .drop("_items", "_lines")
        .with_columns(*_counts_of("list_items", "item"))
    )


def _sentences_each(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(
        pl.col(texts).list.eval(_sentences_in(pl.element())).alias(f"{prefix}_sentences")
        for texts, prefix in (("list_items", "item"), ("paragraphs", "paragraph"),
                              ("lines", "line")))


def _headings(df: pl.DataFrame) -> pl.DataFrame:
    return (df.with_columns(unfenced(pl.col("output_text")).str.extract_all(HEADING)
                            .list.eval(pl.element().str.strip_chars()).alias("headings"))
            .with_columns(pl.col("headings").list.len().alias("n_headings")))


def _table_parts(text: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """(a table was found, its header cells, its body rows) for the first markdown table."""
    table = text.str.extract_groups(TABLE)
    header = table.struct.field("1").str.strip_chars().str.strip_chars("|").str.split("|")
    rows = table.struct.field("2").str.strip_chars().str.split("\n").list.eval(
        pl.element().filter(pl.element().str.strip_chars().str.len_chars() > 0))
    return table.struct.field("1").is_not_null(), header, rows


def _table(df: pl.DataFrame) -> pl.DataFrame:
    found, header, rows = _table_parts(pl.col("output_text"))
    # a table has a '|': only those outputs are searched for one
    piped = df.filter(pl.col("output_text").str.contains("|", literal=True)).select(
        TEXT_ID, found.alias("has_table"),
        header.list.eval(normalise_key(pl.element())).alias("table_header"),
        header.list.eval(pl.element().str.strip_chars()).alias("table_columns"),
        rows.list.len().alias("n_table_rows"))
    return df.join(piped, on=TEXT_ID, how="left").with_columns(
        pl.col("has_table").fill_null(False))


def _urls(df: pl.DataFrame) -> pl.DataFrame:
    return (df.with_columns(distinct_urls(pl.col("output_text")).alias("urls"),
        # outside code: `rows[0]` and a fenced `a[1]` are no citations
        unfenced(pl.col("output_text")).str.replace_all(r"`[^`\n]*`", "")
        .str.extract_all(CITATION).list.n_unique().cast(pl.UInt32).alias("n_citations"))
        .with_columns(pl.col("urls").list.len().alias("n_urls")))


def _flag(name: str, test: Callable[[pl.Expr], pl.Expr]
          ) -> Callable[[pl.DataFrame], pl.DataFrame]:
    """A family of one boolean column, `test` of the output."""
    return lambda df: df.with_columns(test(pl.col("output_text")).alias(name))


JSON_SCALAR = r"^(?:-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)$"


def _json_shaped(text: pl.Expr) -> pl.Expr:
    """A trimmed text that could be one JSON value: bracketed or quoted at both ends, or one
    scalar (only those are handed to the JSON parser; a list item "1. …" or a "[link](…)" is
    not). Reads two characters of a long text, never copies it."""
    ends = pl.concat_str(text.str.head(1), text.str.tail(1))
    return ends.is_in(["{}", "[]", '""']) | (
        (text.str.len_bytes() < 40) & text.str.contains(JSON_SCALAR))
FENCED_JSON = (r"(?s)^(?:```|~~~)[ \t]*(?:json|JSON|jsonc|json5)?[ \t]*\n(.*?)\n[ \t]*"
               r"(?:```|~~~)$")


def _with_json_text(df: pl.DataFrame) -> pl.DataFrame:
    """`df` with `_fenced` (the single fenced JSON block the output consists of, or null) and
    `_json_text` (that block, else the output): the text JSON is parsed from."""
    return df.with_columns(pl.col("output_text").str.extract(FENCED_JSON, 1).alias("_fenced")
                           ).with_columns(pl.coalesce("_fenced", "output_text")
                                          .alias("_json_text"))


def _json(df: pl.DataFrame) -> pl.DataFrame:
    df = _with_json_text(df).with_columns(pl.col("_fenced").is_not_null().alias("json_fenced"))
    facts = _json_facts(df.filter(pl.col("json_fenced") | _json_shaped(pl.col("output_text")))
                        .select(TEXT_ID, "_json_text"))
    return df.join(facts.drop("_json_text"), on=TEXT_ID, how="left")


def _fields(df: pl.DataFrame) -> pl.DataFrame:
    return _field_values(_with_json_text(df))


def _json_children(df: pl.DataFrame) -> pl.DataFrame:
    """Add json_child_values: the lines of the pairs one level below a JSON output's own
    (`_top_pairs`), each key 'container<CHILD_OF>key'."""
    frame = _with_json_text(df).with_row_index("_fv")
    child = (_top_pairs(frame, below=True).lazy()
             .with_columns(pl.format("{}" + CHILD_OF + "{}", "p", "k").alias("k"))
             .group_by("_fv", maintain_order=True).agg(_joined_lines("json_child_values")))
    return collect(frame.lazy().join(child, on="_fv", how="left").sort("_fv")
                   .drop("_fv", "_json_text"))


def _json_measured(frame: pl.DataFrame, kinds: list[str], sql: str,
                   columns: dict[str, pl.DataType]) -> pl.DataFrame:
    """`frame` with `columns`, selected by `sql` (with `_tid`) in DuckDB from the table
    `candidates(_tid, t, json_kind)` of its JSON outputs of `kinds`; typed nulls where it has
    none, without starting DuckDB (most shards: no clause asks for these measures)."""
    candidates = (_with_json_text(frame).filter(pl.col("json_kind").is_in(kinds))
                  .select(TEXT_ID, pl.col("_json_text").alias("t"), "json_kind"))
    if candidates.is_empty():
        return frame.with_columns(pl.lit(None, dtype).alias(name)
                                  for name, dtype in columns.items())
    with scratch({"candidates": candidates}) as con:
        found = con.sql(sql).pl()
    return frame.join(found.with_columns(pl.col(TEXT_ID).cast(frame.schema[TEXT_ID])),
                      on=TEXT_ID, how="left")


def _json_arrays(frame: pl.DataFrame) -> pl.DataFrame:
    """json_array_lens of each JSON object or array (see the module docstring).

    A text is parsed a few times, not twice per key: for the keys of its objects (the object,
    or each object element of an array), then for the types and array lengths of their values
    in the same order (the paths `$.*` and `$[*].*`, which step into objects only).
    """
    found = _json_measured(frame, ["object", "array"], r"""
        with objects as (
            select _tid, t, json_kind,
                case when json_kind = 'object' then [json_keys(t)]
                    else list_transform(list_filter(
                        list_zip(json_keys(t, '$[*]'), json_type(t, '$[*]')),
                        lambda e: e[2] = 'OBJECT'), lambda e: e[1]) end as keys
            from candidates
        ),

        -- (object number, key, type, array length) of every value of every object
        values as (
            select _tid, len(keys) as n_objects, list_zip(
                flatten(list_transform(keys, lambda k, i: list_transform(k, lambda x: i))),
                flatten(keys),
                case when json_kind = 'object' then json_type(t, '$.*')
                    else json_type(t, '$[*].*') end,
                case when json_kind = 'object' then json_array_length(t, '$.*')
                    else json_array_length(t, '$[*].*') end) as v
            from objects
        )

        -- per object, the (key, length) of each array value
        select _tid, list_transform(range(1, n_objects + 1), lambda i: list_transform(
            list_filter(v, lambda e: e[1] = i and e[3] = 'ARRAY'),
            lambda e: {'key': e[2], 'length': e[4]})) as arrays
        from values
    """, {"arrays": pl.List(pl.List(pl.Struct({"key": pl.String, "length": pl.Int64})))})
    # each key normalised as a clause's field names are
    line = pl.concat_str(normalise_key(pl.element().struct.field("key")), pl.lit("\t"),
                         pl.element().struct.field("length"))
    return found.with_columns(pl.col("arrays").list.eval(
        pl.element().list.eval(line).list.join("\n")).list.join("\n")
        .alias("json_array_lens")).drop("arrays")


def _json_items(frame: pl.DataFrame) -> pl.DataFrame:
    """element_texts and element_urls of each JSON array (see the module docstring)."""
    return _json_measured(frame, ["array"], """
        select _tid, list_transform(json_extract(t, '$[*]'), lambda e: e::varchar)
            as element_texts
        from candidates
    """, {"element_texts": pl.List(pl.String)}).with_columns(
        pl.col("element_texts").list.eval(
            urls_in(pl.element()).list.unique().list.len().cast(pl.Int64))
        .alias("element_urls"))


@dataclass(frozen=True)
class Family:
    """Measures computed together; `after` names the families whose columns they read."""

    name: str
    columns: tuple[str, ...]
    compute: Callable[[pl.DataFrame], pl.DataFrame]
    after: tuple[str, ...] = ()


def _code_blocks(df: pl.DataFrame) -> pl.DataFrame:
    """has_code_block and n_code_blocks: the fenced blocks of each output (only a text with a
    fence is searched)."""
    t = pl.col("output_text")
    n = pl.when(has_fence_mark(t)).then(t.str.count_matches(FENCED)).otherwise(0).cast(pl.Int64)
    return df.with_columns(n.alias("n_code_blocks")).with_columns(
        (pl.col("n_code_blocks") > 0).alias("has_code_block"))


FAMILIES = (
    Family("words", ("n_words",), _words),
    Family("prose", ("n_sentences", "n_paragraphs", "paragraphs", "paragraph_words",
                     "paragraph_chars", "paragraph_urls"), _prose),
    Family("rest", ("rest_words", "rest_sentences", "rest_paragraphs"), _rest_measures),
    Family("lines", ("lines", "n_lines", "line_words", "line_chars", "line_urls"), _lines),
    Family("csv", ("csv_like",), _csv, after=("lines",)),
    Family("lists", ("list_items", "n_bullets", "n_numbered", "n_line_items", "item_words",
                     "item_chars", "item_urls"), _lists),
    Family("headings", ("headings", "n_headings"), _headings),
    Family("table", ("has_table", "table_header", "table_columns", "n_table_rows"), _table),
    Family("code", ("has_code_block", "n_code_blocks"), _code_blocks),
    Family("diff", ("is_diff",), _flag("is_diff", lambda t: t.str.contains(HUNK))),
    Family("urls", ("urls", "n_urls", "n_citations"), _urls),
    Family("markdown", ("has_markdown",), _flag("has_markdown",
                                                lambda t: t.str.contains(MARKDOWN))),
    Family("yaml", ("yaml_like",), _flag("yaml_like", lambda t: _yaml_like(t))),
    Family("json", ("json_kind", "json_fenced", "json_len", "json_keys", "json_keys_written",
                    "json_element_keys", "json_element_keys_written", "json_element_kinds"),
           _json),
    Family("json_arrays", ("json_array_lens",), _json_arrays, after=("json",)),
    Family("json_items", ("element_texts", "element_urls"), _json_items, after=("json",)),
    Family("fields", ("field_values", "json_top_values"), _fields,
           after=("json", "table", "headings")),
    Family("json_children", ("json_child_values",), _json_children, after=("json",)),
    Family("sentences_each", ("item_sentences", "paragraph_sentences", "line_sentences"),
           _sentences_each, after=("lists", "prose", "lines")),
)
FAMILY = {f.name: f for f in FAMILIES}
# Every measured row has these: the trimmed output, its length in characters, its first line.
BASE_COLUMNS = ("output_text", "n_chars", "first_line")
FACT_FAMILY = {column: f.name for f in FAMILIES for column in f.columns}
TEXT_ID = "_tid"


def families_of(columns: Iterable[str]) -> set[str]:
    """The families that provide `columns`, with the families those are computed after."""
    found = {FACT_FAMILY[c] for c in columns if c in FACT_FAMILY}
    while True:
        more = found | {d for f in found for d in FAMILY[f].after}
        if more == found:
            return found
        found = more


def output_facts(frame: pl.DataFrame,
                 demand: Mapping[str, pl.Series | bool] | None = None) -> pl.DataFrame:
    """Return `frame` with the measurement columns described in the module docstring.

    Without `demand` every family is measured on every output. With it, the families it names
    (and those they are computed after) are measured on the rows their mask selects (a boolean
    Series over the frame's rows, True for all, False for none: the columns are then added,
    typed and null) and are null on the other rows; families already in the frame are kept as
    they are. Each distinct output is measured once, however many clauses it serves.
    """
    own_ids = TEXT_ID not in frame.columns
    if own_ids:
        frame = with_text_ids(frame)
    if demand is None:
        demand = {f.name: True for f in FAMILIES}
    masks: dict[str, pl.Series | bool] = {}
    for family in reversed(FAMILIES):  # dependents first, so they pass their rows on
        if family.name in demand:
            masks[family.name] = _union(masks.get(family.name, False), demand[family.name])
        if family.name in masks:
            for dep in family.after:
                masks[dep] = _union(masks.get(dep, False), masks[family.name])
    todo = [f for f in FAMILIES if f.name in masks and f.columns[0] not in frame.columns]
    if not todo and BASE_COLUMNS[0] in frame.columns:
        return frame.drop(TEXT_ID) if own_ids else frame
    present = [c for c in frame.columns if c in FACT_FAMILY or c in BASE_COLUMNS]
    texts = (frame.select(TEXT_ID, "binding_text", *present).drop_nulls(TEXT_ID)
             .unique(TEXT_ID, keep="first"))
    if BASE_COLUMNS[0] not in texts.columns:
        texts = texts.with_columns(pl.col("binding_text").str.strip_chars().alias("output_text"))
        texts = texts.with_columns(
            pl.col("output_text").str.len_chars().alias("n_chars"),
            # copies the first line only (splitting would copy the rest of the text too)
            pl.col("output_text").str.extract(r"^([^\n]*)", 1).str.strip_chars()
            .alias("first_line"))
    # A family the ones after it read is joined to the texts at once; the others all in the
    # closing query, with the texts joined back to the frame: one step a family instead of six
    # (a shard of few runs spends more on steps than on measuring).
    read_later = {dep for family in todo for dep in family.after}
    columns = list(texts.columns)
    joined: list[pl.LazyFrame] = []
    for family in todo:
        mask = masks[family.name]
        if mask is True:
            wanted = texts
        elif mask is False:
            wanted = texts.clear()
        else:
            ids = frame[TEXT_ID].filter(mask)  # one column, not all
            wanted = texts.filter(pl.col(TEXT_ID).is_in(ids.implode()))
        measured = _measured(family, wanted)
        columns += family.columns
        if family.name in read_later:
            texts = texts.join(measured, on=TEXT_ID, how="left")
        else:
            joined.append(measured.lazy())
    query = texts.lazy()
    for measured in joined:
        query = query.join(measured, on=TEXT_ID, how="left")
    added = [c for c in columns if c not in frame.columns and c != "binding_text"]
    out = frame.lazy().join(query.select(TEXT_ID, *added), on=TEXT_ID, how="left",
                            maintain_order="left")
    return collect(out.drop(TEXT_ID) if own_ids else out)


_EMPTY: dict[tuple, pl.DataFrame] = {}  # (family, input schema) -> its typed empty measures


def _measured(family: Family, wanted: pl.DataFrame) -> pl.DataFrame:
    """(_tid, *family.columns) of the texts in `wanted`. No text: the empty frame computed
    once per input schema (most families of a shard measure nothing, and each step of a
    family costs the same on no rows as on a few)."""
    if not wanted.is_empty():
        return family.compute(wanted).select(TEXT_ID, *family.columns)
    key = (family.name, tuple(wanted.schema.items()))
    if key not in _EMPTY:
        _EMPTY[key] = family.compute(wanted).select(TEXT_ID, *family.columns)
    return _EMPTY[key]


def with_text_ids(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with `_tid`: one integer per distinct `binding_text` (null where there is none)."""
    ids = frame.select("binding_text").drop_nulls().unique().with_row_index(TEXT_ID)
    return frame.join(ids, on="binding_text", how="left", maintain_order="left")


def _union(a: pl.Series | bool, b: pl.Series | bool) -> pl.Series | bool:
    if a is True or b is True:
        return True
    if a is False:
        return b
    if b is False:
        return a
    return a | b


def _yaml_like(text: pl.Expr) -> pl.Expr:
    """Block YAML with at least one key, that a YAML parser reads (`parses_as_yaml`)."""
    lines = text.str.split("\n").list.eval(
        pl.element().filter(pl.element().str.strip_chars().str.len_chars() > 0))
    keyed = text.str.contains(r"(?m)^[ \t]*(?:-[ \t]+)?[\"']?[\p{L}\p{N}_][\p{L}\p{N}_ .\-]*"
                              r"[\"']?[ \t]*:(?:[ \t]|$)")
    shaped = (lines.list.eval(pl.element().str.contains(YAML_LINE)).list.all() & keyed
              & ~text.str.contains(r"^[\[{]"))
    # the parse only where the lines have the shape (polars has no YAML reader: this family
    # is computed only for clauses that name YAML)
    return pl.when(shaped).then(
        text.map_elements(parses_as_yaml, return_dtype=pl.Boolean, skip_nulls=True)
    ).otherwise(shaped)


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, where installed


def parses_as_yaml(text: str) -> bool:
    """Whether YAML's safe parser reads `text` (every document of it) without an error.

    Only composed into nodes, never constructed into Python objects: aliases are not
    expanded and no tag is resolved, so no content of a run can cost more than its size."""
    try:
        for _ in yaml.compose_all(text, Loader=_YAML_LOADER):
            pass
    except (yaml.YAMLError, RecursionError, ValueError):
        return False
    return True


def csv_unquoted(line: pl.Expr) -> pl.Expr:
    """A CSV line with each quoted cell blanked to "x": its commas are the ones that part
    cells (a quoted cell may hold commas)."""
    return line.str.replace_all(r"\"(?:[^\"]|\"\")*\"", "x")


def csv_commas(line: pl.Expr) -> pl.Expr:
    """The commas of a CSV line that part cells."""
    return csv_unquoted(line).str.count_matches(",")


def _csv_like(lines: pl.Expr) -> pl.Expr:
    commas = lines.list.eval(csv_commas(pl.element()))
    return (lines.list.len() >= 2) & (commas.list.n_unique() == 1) & (commas.list.min() >= 1)


# What DuckDB's parser accepts that JSON does not (RFC 8259), once strings are blanked out: a
# comma before a closing bracket ('{"a": 1,}', the commonest slip in a model's JSON) and the
# values NaN, Infinity, inf.
NON_STANDARD_JSON = r",\s*[\]}]|[:\[,]\s*[+-]?(?i:nan|inf)"
JSON_STRING = r'"(?:[^"\\]|\\.)*"'


def _json_facts(frame: pl.DataFrame) -> pl.DataFrame:
    """json_kind, json_len, json_keys, json_element_keys and json_element_kinds of each
    `_json_text`.

    Only a text that starts like JSON is handed to DuckDB's parser; rows are matched back by
    their `_tid`, so no text is hashed.
    """
    candidates = (
        frame.select(TEXT_ID, pl.col("_json_text").alias("t"))
        .filter(_json_shaped(pl.col("t").str.strip_chars()))
    )
    # what only looks lenient inside a string ('"a, ]"') is JSON: strings are blanked out, on
    # the few texts that look so at all
    suspect = candidates.filter(pl.col("t").str.contains(NON_STANDARD_JSON))
    lenient = suspect.filter(pl.col("t").str.replace_all(JSON_STRING, '""')
                             .str.contains(NON_STANDARD_JSON))[TEXT_ID]
    candidates = candidates.filter(~pl.col(TEXT_ID).is_in(lenient.implode()))
    with scratch({"candidates": candidates}) as con:
        # each element's keys and type are read with one path over the array (`$[*]`), not
        # by parsing every element again
        facts = con.sql("""
            with typed as (
                select _tid, t, lower(json_type(t)) as kind
                from candidates
                where json_valid(t)
            )

            select
                _tid,
                case kind
                    when 'varchar' then 'string'
                    when 'bigint' then 'number'
                    when 'ubigint' then 'number'
                    when 'double' then 'number'
                    else kind
                end as json_kind,
                case when kind = 'array' then json_array_length(t) end as json_len,
                case when kind = 'object' then json_keys(t) end as json_keys,
                case when kind = 'array' then json_keys(t, '$[*]') end as element_keys,
                case when kind = 'array' then json_type(t, '$[*]') end as json_element_kinds
            from typed
        """).pl()
    # keys normalised as a clause's field names are
    normalised = normalise_key(pl.element())
    # one line per element: '|key|key|' for an object, empty for anything else
    lines = (
        facts.select(TEXT_ID, "element_keys", kind=pl.col("json_element_kinds"))
        .filter(pl.col("kind").is_not_null())
        .explode("element_keys", "kind")
        .select(TEXT_ID, pl.when(pl.col("kind") == "OBJECT").then(pl.concat_str(
            pl.lit("|"), pl.col("element_keys").list.eval(normalised).list.join("|"),
            pl.lit("|"))).otherwise(pl.lit("")).alias("json_element_keys"))
        .group_by(TEXT_ID, maintain_order=True).agg(pl.col("json_element_keys").str.join("\n"))
    )
    facts = facts.join(lines, on=TEXT_ID, how="left").select(
        TEXT_ID, "json_kind", "json_len", pl.col("json_keys").list.eval(normalised),
        pl.col("json_keys").alias("json_keys_written"),
        pl.col("element_keys").list.eval(pl.element().explode().drop_nulls())
        .list.unique(maintain_order=True).alias("json_element_keys_written"),
        # (an empty array has no line)
        pl.when(pl.col("json_kind") == "array").then(pl.col("json_element_keys").fill_null("")),
        "json_element_kinds").with_columns(
        pl.col("json_len").cast(pl.Int64), pl.col(TEXT_ID).cast(frame.schema[TEXT_ID]),
        pl.col("json_element_kinds").list.eval(pl.element().replace_strict(
            DUCKDB_KINDS, default=pl.element().str.to_lowercase())).list.unique().list.sort())
    return frame.join(facts, on=TEXT_ID, how="left")


def _csv_cells(frame: pl.DataFrame) -> pl.DataFrame:
    """(_fv, k, v) of the CSV outputs of `frame` (see `_csv_like`): each cell of a data line
    under its column of the first line."""
    if frame.is_empty():  # most shards: nothing shaped like CSV
        return pl.DataFrame(schema={"_fv": pl.UInt32, "k": pl.String, "v": pl.String})
    lines = _nonempty_lines(pl.col("output_text"))
    cell = pl.element().str.strip_chars_start(",").str.strip_chars().str.strip_chars('"')
    return (
        frame.select("_fv", lines.alias("l"))
        .filter(_csv_like(pl.col("l")))
        .select("_fv", pl.col("l").list.first().str.extract_all(CSV_CELL)
                .list.eval(normalise_key(cell)).alias("h"),
                pl.col("l").list.slice(1).alias("r"))
        .explode("r")
        .with_columns(pl.col("r").str.extract_all(CSV_CELL).list.eval(cell).alias("c"))
        .with_columns(pl.int_ranges(0, pl.col("c").list.len()).alias("i"))
        .explode("c", "i")
        .select("_fv", pl.col("h").list.get(pl.col("i"), null_on_oob=True).alias("k"),
                pl.col("c").alias("v"))
        .drop_nulls("k")
    )


def _json_string(value: pl.Expr) -> pl.Expr:
    """A JSON value as text: a string literal decoded (JSON_STRING), else without its quotes.
    Only the few values with an escape are decoded (the others are null to it): a literal
    without one has no quote inside."""
    escaped = pl.when(value.str.contains("\\", literal=True)).then(value)
    decoded = pl.when(escaped.str.contains(JSON_STRING)).then(escaped).str.json_decode(pl.String)
    return pl.coalesce(decoded, value.str.strip_chars('"'))


# A JSON value as the pairs' lines hold it: a string decoded, a number as the parser writes it
# back, `null`, `{` for an object, and for an array `[` and then each of its elements that is
# neither an array nor an object (a DuckDB expression of the value `j`)
_PAIR_VALUE = """case json_type(j)
        when 'NULL' then ['null']
        when 'OBJECT' then ['{']
        when 'ARRAY' then list_concat(['['], list_transform(list_filter(
            list_zip(json_extract_string(j, '$[*]'), json_type(j, '$[*]')),
            lambda e: e[2] not in ('ARRAY', 'OBJECT', 'NULL')), lambda e: e[1]))
        else [json_extract_string(j, '$')]
    end"""
# What parts a container's key from a key inside it, in json_child_values' keys
CHILD_OF = "\x1f"


def _top_pairs(frame: pl.DataFrame, below: bool = False) -> pl.DataFrame:
    """(_fv, p, k, v) of the pairs of each JSON object output, or of each object element of an
    array output, that holds more than those pairs (`p` null); with `below`, of the pairs one
    level below them instead (`p` the key of the object, or of the array of objects, that
    holds them); parsed (see _PAIR_VALUE)."""
    # (a flat object, or an array of flat objects, has no key but its top ones: its pairs
    # are read by their pattern, numbers as written; only a bracket more sends it here)
    t = pl.col("_json_text")
    opened = t.str.count_matches("{", literal=True) + t.str.count_matches("[", literal=True)
    candidates = frame.filter(pl.col("json_kind").is_in(["object", "array"])).filter(
        opened > pl.when(pl.col("json_kind") == "object").then(1)
        .otherwise(pl.col("json_len").fill_null(0) + 1)).select(
        pl.col("_fv"), t.alias("t"), "json_kind")
    if candidates.is_empty():
        return pl.DataFrame(schema={"_fv": pl.UInt32, "p": pl.String, "k": pl.String,
                                    "v": pl.String})
    with scratch({"candidates": candidates}) as con:
        # (the paths `$.*` and `$[*].*` step into objects only, in the order of their keys)
        pairs = con.sql(f"""
            with pairs as (
                select _fv,
                    unnest(case when json_kind = 'object' then json_keys(t)
                        else flatten(json_keys(t, '$[*]')) end) as k,
                    unnest(case when json_kind = 'object' then json_extract(t, '$.*')
                        else json_extract(t, '$[*].*') end) as j
                from candidates
            ), children as (
                select _fv, k as p,
                    unnest(case json_type(j) when 'OBJECT' then json_keys(j)
                        else flatten(json_keys(j, '$[*]')) end) as k,
                    unnest(case json_type(j) when 'OBJECT' then json_extract(j, '$.*')
                        else json_extract(j, '$[*].*') end) as j
                from pairs where json_type(j) in ('OBJECT', 'ARRAY')
            )

            select _fv, {"p" if below else "null::varchar as p"}, k, {_PAIR_VALUE} as v
            from {"children" if below else "pairs"}
        """).pl()
    return pairs.explode("v").select(
        pl.col("_fv").cast(pl.UInt32), normalise_key(pl.col("p")).alias("p"),
        normalise_key(pl.col("k")).alias("k"), "v")


def _field_values(frame: pl.DataFrame) -> pl.DataFrame:
    """Add field_values: 'key<TAB>value' lines from JSON pairs (at any depth), table cells,
    labels, headings; and json_top_values: the same lines of the pairs of a JSON output's own
    keys (`_top_pairs`), where it holds more than those."""
    frame = frame.with_row_index("_fv")
    lazy = frame.lazy()  # one query: a shard's few outputs cost a plan, not thirty
    rows = _table_parts(pl.col("output_text"))[2]
    json_pairs = (
        lazy.filter(pl.col("json_kind").is_in(["object", "array"]))
        .select("_fv", pl.col("_json_text").str.extract_all(JSON_PAIR).alias("p"))
        .explode("p").drop_nulls("p")
        # a pair is its key, then its value: split by short anchored patterns (capturing the
        # groups of JSON_PAIR steps its slow engine through every character of the value)
        .select("_fv", normalise_key(_json_string(pl.col("p").str.extract(JSON_KEY, 0)))
                .alias("k"), _json_string(pl.col("p").str.replace(JSON_KEY_COLON, "")).alias("v"))
    )
    cells = (
        lazy.filter(pl.col("has_table"))
        .select("_fv", "table_header", rows.alias("r"))
        .explode("r").drop_nulls("r")
        .with_columns(pl.col("r").str.strip_chars().str.strip_chars("|").str.split("|")
                      .alias("c"))
        .with_columns(pl.int_ranges(0, pl.col("c").list.len()).alias("i"))
        .explode("c", "i")
        .select("_fv", pl.col("table_header").list.get(pl.col("i"), null_on_oob=True).alias("k"),
                pl.col("c").str.strip_chars().alias("v"))
        .drop_nulls("k")
    )
    # a CSV has a comma on its first two lines (checked before anything is split into lines)
    csv_shaped = (frame["json_kind"].is_null() & ~frame["has_table"].fill_null(False)
                  & frame["output_text"].str.contains(r"^[^\n]*,[^\n]*\n[^\n]*,"))
    csv = _csv_cells(frame.select("_fv", "output_text").filter(csv_shaped)).lazy()
    text = lazy.filter(pl.col("json_kind").is_null() & pl.col("output_text").is_not_null())
    labels = (
        text.select("_fv", pl.col("output_text").str.extract_all(LABEL).alias("p"))
        .explode("p").drop_nulls("p")
        .select("_fv", pl.col("p").str.extract_groups(LABEL).alias("g"))
        # (not a URL's scheme: "See https://…" labels nothing)
        .filter((pl.col("g").struct.field("1").str.len_chars() <= LABEL_CHARS)
                & ~pl.col("g").struct.field("2").str.starts_with("//"))
        .select("_fv", normalise_key(pl.col("g").struct.field("1")).alias("k"),
                pl.col("g").struct.field("2").str.strip_chars().str.strip_chars("*_ ")
                .alias("v"))
    )
    headings = (
        text.select("_fv", "headings").explode("headings").drop_nulls("headings")
        .select("_fv", normalise_key(pl.col("headings").str.replace(r"^#+\s*", "")).alias("k"),
                pl.lit("").alias("v"))
    )
    lines = (
        pl.concat([json_pairs, cells, csv, labels, headings])
        .filter(pl.col("k").str.len_chars() > 0)
        .group_by("_fv", maintain_order=True).agg(_joined_lines("field_values"))
    )
    top = _top_pairs(frame).lazy().group_by("_fv", maintain_order=True).agg(
        _joined_lines("json_top_values"))
    return collect(lazy.join(lines, on="_fv", how="left").join(top, on="_fv", how="left")
                   .sort("_fv").drop("_fv", "_json_text"))



def _joined_lines(name: str) -> pl.Expr:
    """The (k, v) rows of a group as one text `name`: a 'k<TAB>v' line each."""
    return (pl.format("{}\t{}", "k", pl.col("v").str.replace_all(r"[\t\n]", " "))
            .str.join("\n").alias(name))
