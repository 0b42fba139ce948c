"""What each output shows, measured over the whole `binding_text` column at once.

`output_facts(frame)` adds these columns to the clause frame (null where there is no output):

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
  paragraphs, lines (the texts of the prose paragraphs and of the non-empty lines)
  item_words, paragraph_words, line_words, item_chars, paragraph_chars, line_chars,
  item_urls, paragraph_urls, line_urls  (one number per list item, paragraph or line)
  has_table, table_header (normalised cell names), n_table_rows
  has_code_block, urls (distinct), n_urls, has_markdown, yaml_like, csv_like
  json_kind         object | array | string | number | boolean | null, or null when the output
                    (or the single fenced block it consists of) is not valid JSON
  json_fenced, json_len (array length), json_keys (top-level keys, normalised)
  json_element_keys one line per array element: '|key|key|' (normalised keys)
  field_values      one line per named value, 'key<TAB>value': JSON pairs (scalars; '[' or '{'
                    for nested values), table cells under their column, 'label: value' lines
                    and headings (with an empty value)

JSON is parsed by DuckDB's json functions (vectorized, never Python's json per row).
"""

from __future__ import annotations

import duckdb
import polars as pl

from .clause_analysis import normalise_key

LIST_ITEM = r"(?m)^[ ]{0,3}(?:[-*+]|\d{1,3}[.)])[ \t]+\S[^\n]*"
BULLET = r"(?m)^[ ]{0,3}[-*+][ \t]+\S"
NUMBERED = r"(?m)^[ ]{0,3}\d{1,3}[.)][ \t]+\S"
HEADING = r"(?m)^[ ]{0,3}#{1,6}[ \t]+[^\n]*"
FENCED = r"(?ms)^[ \t]*(?:```|~~~)[^\n]*\n.*?^[ \t]*(?:```|~~~)[ \t]*$"
TABLE_SEPARATOR = r"[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*"
TABLE = r"(?m)^([^\n]*\|[^\n]*)\n" + TABLE_SEPARATOR + r"\n?((?:[^\n]*\|[^\n]*(?:\n|$))*)"
URL = r"https?://[^\s<>()\[\]\"'`]+"
SENTENCE_END = r"[.!?…]+[\"'”’)\]*_]*(?:\s|$)"
MARKDOWN = (r"(?m)^[ ]{0,3}#{1,6}[ \t]|^[ ]{0,3}(?:[-*+]|\d{1,3}[.)])[ \t]|\*\*[^*\n]+\*\*"
            r"|\[[^\]\n]+\]\([^)\n]+\)|^[ \t]*```|^[ \t]*\|.*\|[ \t]*$|(?:^|\s)_[^_\n]+_(?:\s|$)"
            r"|`[^`\n]+`|^>[ \t]")
YAML_LINE = (r"^(?:[ \t]*#.*|[ \t]*-(?:[ \t].*)?|[ \t]*[\"']?[\p{L}\p{N}_][\p{L}\p{N}_ .\-]*[\"']?"
             r"[ \t]*:(?:[ \t].*)?|[ \t]+\S.*|---|\.\.\.)$")
LABEL = (r"(?m)^[ \t]*(?:[-*+][ \t]+)?(?:\*\*|__)?([\p{L}][\p{L}\p{N} _\-]{0,40}?)"
         r"(?::(?:\*\*|__)|(?:\*\*|__)?[ \t]*:)[ \t]*([^\n]*)")
JSON_PAIR = (r"\"((?:[^\"\\]|\\.)*)\"\s*:\s*(\"(?:[^\"\\]|\\.)*\"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
             r"|true|false|null|\[|\{)")
BLOCK = "\x1e"


def _blocks(text: pl.Expr) -> pl.Expr:
    """Blank-line separated blocks; every list item, heading and table line starts its own."""
    return (
        text.str.replace_all(r"\r\n?", "\n")
        .str.replace_all(FENCED, "\n\n```\n\n")
        .str.replace_all(r"(?m)^([ ]{0,3}(?:[-*+][ \t]|\d{1,3}[.)][ \t]|#|\||>))", "\n$1")
        .str.replace_all(r"\n[ \t]*\n\s*", BLOCK)
        .str.strip_chars().str.split(BLOCK)
        .list.eval(pl.element().str.strip_chars())
        .list.eval(pl.element().filter(pl.element().str.len_chars() > 0))
    )


def _is_prose(block: pl.Expr) -> pl.Expr:
    structural = block.str.contains(
        r"^(?:#|\||```|~~~|[-*+][ \t]|\d{1,3}[.)][ \t]|(?:-{3,}|\*{3,}|_{3,})$)")
    return ~structural & block.str.contains(r"[\p{L}\p{N}]")


def _sentences_in(block: pl.Expr) -> pl.Expr:
    counted = ~block.str.contains(r"^(?:#|\||```|~~~|(?:-{3,}|\*{3,}|_{3,})$)") \
        & block.str.contains(r"[\p{L}\p{N}]")
    ends = block.str.count_matches(SENTENCE_END)
    open_end = (~block.str.contains(r"[.!?…][\"'”’)\]*_]*\s*$")).cast(pl.Int64)
    return pl.when(counted).then(ends + open_end).otherwise(0)


def _prose_measures(text: pl.Expr, prefix: str) -> list[pl.Expr]:
    blocks = _blocks(text)
    return [
        text.str.count_matches(r"\S+").fill_null(0).alias(f"{prefix}words"),
        blocks.list.eval(_sentences_in(pl.element())).list.sum().alias(f"{prefix}sentences"),
        blocks.list.eval(_is_prose(pl.element())).list.sum().alias(f"{prefix}paragraphs"),
    ]


def _rest(text: pl.Expr) -> pl.Expr:
    """What follows the lead of an output: its first line; on one line, a bold or labelled
    lead ("**Risk: 68/100** — because …"), else its first sentence."""
    after_line = text.str.extract(r"^[^\n]*\n((?s:.*))$", 1)
    after_lead = text.str.extract(r"^\s*(?:\*\*[^*\n]+\*\*|__[^_\n]+__|[^.!?:\n]{1,40}:[^\s.!?]*)"
                                  r"\s*[—–\-:,]?\s*((?s:.+))$", 1)
    after_sentence = text.str.extract(r"^.*?[.!?…]+[\"'”’)\]*_]*\s+((?s:.*))$", 1)
    return pl.coalesce(after_line, after_lead, after_sentence, pl.lit("")).str.strip_chars()


def output_facts(frame: pl.DataFrame) -> pl.DataFrame:
    """Return `frame` with the measurement columns described in the module docstring."""
    # one output can serve several clauses (a program's ensures, a conditional): measure once
    texts = frame.select("binding_text").unique().drop_nulls()
    facts = _facts(texts)
    return frame.join(facts, on="binding_text", how="left", maintain_order="left")


def _facts(frame: pl.DataFrame) -> pl.DataFrame:
    text = pl.col("binding_text").str.strip_chars()
    items = pl.col("output_text").str.extract_all(LIST_ITEM).list.eval(
        pl.element().str.replace(r"^[ ]{0,3}(?:[-*+]|\d{1,3}[.)])[ \t]+", "").str.strip_chars())
    table = pl.col("output_text").str.extract_groups(TABLE)
    header = table.struct.field("1").str.strip_chars().str.strip_chars("|").str.split("|")
    rows = table.struct.field("2").str.strip_chars().str.split("\n").list.eval(
        pl.element().filter(pl.element().str.strip_chars().str.len_chars() > 0))
    blocks = _blocks(pl.col("output_text"))
    lines = pl.col("output_text").str.split("\n").list.eval(
        pl.element().str.strip_chars()).list.eval(
        pl.element().filter(pl.element().str.len_chars() > 0))
    paragraphs = blocks.list.eval(pl.element().filter(_is_prose(pl.element())))
    fenced = pl.col("output_text").str.extract(
        r"(?s)^(?:```|~~~)[ \t]*(?:json|JSON|jsonc|json5)?[ \t]*\n(.*?)\n[ \t]*(?:```|~~~)$", 1)
    frame = frame.with_columns(text.alias("output_text")).with_columns(
        pl.col("output_text").str.len_chars().alias("n_chars"),
        pl.col("output_text").str.count_matches(r"(?m)^[^\S\n]*\S").alias("n_lines"),
        *_prose_measures(pl.col("output_text"), "n_"),
        *_prose_measures(_rest(pl.col("output_text")), "rest_"),
        pl.col("output_text").str.extract(r"^([^\n]*)", 1).str.strip_chars().alias("first_line"),
        pl.col("output_text").str.extract_all(HEADING).list.eval(pl.element().str.strip_chars())
        .alias("headings"),
        items.alias("list_items"),
        pl.col("output_text").str.count_matches(BULLET).alias("n_bullets"),
        pl.col("output_text").str.count_matches(NUMBERED).alias("n_numbered"),
        items.list.eval(pl.element().str.count_matches(r"\S+")).alias("item_words"),
        items.list.eval(pl.element().str.len_chars()).alias("item_chars"),
        items.list.eval(pl.element().str.count_matches(URL)).alias("item_urls"),
        paragraphs.alias("paragraphs"),
        lines.alias("lines"),
        paragraphs.list.eval(pl.element().str.count_matches(r"\S+")).alias("paragraph_words"),
        paragraphs.list.eval(pl.element().str.len_chars()).alias("paragraph_chars"),
        lines.list.eval(pl.element().str.count_matches(r"\S+")).alias("line_words"),
        lines.list.eval(pl.element().str.len_chars()).alias("line_chars"),
        lines.list.eval(pl.element().str.count_matches(URL)).alias("line_urls"),
        paragraphs.list.eval(pl.element().str.count_matches(URL)).alias("paragraph_urls"),
        table.struct.field("1").is_not_null().alias("has_table"),
        header.list.eval(normalise_key(pl.element())).alias("table_header"),
        rows.list.len().alias("n_table_rows"),
        pl.col("output_text").str.contains(FENCED).alias("has_code_block"),
        pl.col("output_text").str.extract_all(URL).list.eval(
            pl.element().str.strip_chars_end(".,;:!?")).list.unique(maintain_order=True)
        .alias("urls"),
        pl.col("output_text").str.contains(MARKDOWN).alias("has_markdown"),
        _yaml_like(pl.col("output_text")).alias("yaml_like"),
        _csv_like(lines).alias("csv_like"),
        fenced.is_not_null().alias("json_fenced"),
        pl.coalesce(fenced, pl.col("output_text")).alias("_json_text"),
    ).with_columns(
        pl.col("headings").list.len().alias("n_headings"),
        pl.col("urls").list.len().alias("n_urls"),
    )
    frame = _json_facts(frame)
    return _field_values(frame, rows)


def _yaml_like(text: pl.Expr) -> pl.Expr:
    lines = text.str.split("\n").list.eval(
        pl.element().filter(pl.element().str.strip_chars().str.len_chars() > 0))
    keyed = text.str.contains(r"(?m)^[ \t]*(?:-[ \t]+)?[\"']?[\p{L}\p{N}_][\p{L}\p{N}_ .\-]*"
                              r"[\"']?[ \t]*:(?:[ \t]|$)")
    return (lines.list.eval(pl.element().str.contains(YAML_LINE)).list.all() & keyed
            & ~text.str.contains(r"^[\[{]"))


def _csv_like(lines: pl.Expr) -> pl.Expr:
    commas = lines.list.eval(
        pl.element().str.replace_all(r"\"(?:[^\"]|\"\")*\"", "x").str.count_matches(","))
    return (lines.list.len() >= 2) & (commas.list.n_unique() == 1) & (commas.list.min() >= 1)


def _json_facts(frame: pl.DataFrame) -> pl.DataFrame:
    """json_kind, json_len, json_keys and json_element_keys, parsed once per distinct text."""
    candidates = (
        frame.select(pl.col("_json_text").alias("t"))
        .filter(pl.col("t").str.contains(r"^(?:[\[{\"]|-?\d|true$|false$|null$)"))
        .unique()
    )
    con = duckdb.connect()
    try:
        con.register("candidates", candidates.to_arrow())
        facts = con.sql("""
            with valid as (
                select t from candidates where json_valid(t)
            ),

            typed as (
                select t, lower(json_type(t)) as kind from valid
            )

            select
                t,
                case kind
                    when 'varchar' then 'string'
                    when 'bigint' then 'number'
                    when 'ubigint' then 'number'
                    when 'double' then 'number'
                    else kind
                end as json_kind,
                case when kind = 'array' then json_array_length(t) end as json_len,
                case when kind = 'object'
                    then list_transform(json_keys(t),
                         lambda k: regexp_replace(lower(trim(k)), '[\\s_\\-]+', '-', 'g'))
                end as json_keys,
                case when kind = 'array' then array_to_string(list_transform(
                    json_extract(t, '$[*]'),
                    lambda e: case when json_type(e) = 'OBJECT'
                        then '|' || array_to_string(list_transform(json_keys(e),
                             lambda k: regexp_replace(lower(trim(k)), '[\\s_\\-]+', '-', 'g')),
                             '|') || '|'
                        else '' end), chr(10))
                end as json_element_keys
            from typed
        """).pl()
    finally:
        con.close()
    facts = facts.with_columns(pl.col("json_len").cast(pl.Int64))
    return frame.join(facts.rename({"t": "_json_text"}), on="_json_text", how="left",
                      nulls_equal=False)


def _field_values(frame: pl.DataFrame, rows: pl.Expr) -> pl.DataFrame:
    """Add field_values: 'key<TAB>value' lines from JSON pairs, table cells, labels, headings."""
    frame = frame.with_row_index("_fv")
    json_pairs = (
        frame.filter(pl.col("json_kind").is_in(["object", "array"]))
        .select("_fv", pl.col("_json_text").str.extract_all(JSON_PAIR).alias("p"))
        .explode("p").drop_nulls("p")
        .select("_fv",
                normalise_key(pl.col("p").str.extract(JSON_PAIR, 1)).alias("k"),
                pl.col("p").str.extract(JSON_PAIR, 2).str.strip_chars('"').alias("v"))
    )
    cells = (
        frame.filter(pl.col("has_table"))
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
    text = frame.filter(pl.col("json_kind").is_null() & pl.col("output_text").is_not_null())
    labels = (
        text.select("_fv", pl.col("output_text").str.extract_all(LABEL).alias("p"))
        .explode("p").drop_nulls("p")
        .select("_fv", normalise_key(pl.col("p").str.extract(LABEL, 1)).alias("k"),
                pl.col("p").str.extract(LABEL, 2).str.strip_chars().str.strip_chars("*_ ")
                .alias("v"))
    )
    headings = (
        text.select("_fv", "headings").explode("headings").drop_nulls("headings")
        .select("_fv", normalise_key(pl.col("headings").str.replace(r"^#+\s*", "")).alias("k"),
                pl.lit("").alias("v"))
    )
    lines = (
        pl.concat([json_pairs, cells, labels, headings])
        .filter(pl.col("k").str.len_chars() > 0)
        .group_by("_fv", maintain_order=True)
        .agg(pl.format("{}\t{}", "k", pl.col("v").str.replace_all(r"[\t\n]", " "))
             .str.join("\n").alias("field_values"))
    )
    return (frame.join(lines, on="_fv", how="left").sort("_fv")
            .drop("_fv", "_json_text"))
