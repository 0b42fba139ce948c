"""What each clause requires, read from its text with polars string expressions.

`clause_requirements(frame)` adds one column per requirement family to the clause frame,
for all clauses at once (regexes over whole columns, never a Python loop per clause):

  formats        list[str]  json | yaml | csv | table | numbered_list | bulleted_list |
                            markdown_list | list | code_block | markdown | diff (a unified
                            diff; "a markdown table"
                            -> table; "a list" is also met by lines of one item each, "a
                            markdown list" only by list markers)
  excluded_formats list[str] formats the clause rules out ("plain text, not JSON", "no
                            bullet points", "prose rather than a table")
  csv_header     bool       the clause asks a CSV for a header row ("a CSV with a header row",
                            "with column headers")
  csv_headerless bool       the clause says its CSV has none ("with no header row"): its first
                            line is a row
  blank_after_first bool    a blank line follows the first line ("a subject line, a blank
                            line, then a body")
  inline_list    str        "," or ";": the clause asks for one line of values so separated
                            ("a comma-separated list of tags", "separated by semicolons")
  json_shape     str        object | array, when the clause says "JSON object/array"
  json_elements  str        string | number | integer | object | array | boolean: what a JSON
                            array's elements are ("a JSON array of strings")
  fence_lang     str        the language a fenced code block is tagged with ("inside a ```diff
                            code block", "a Python code block"): FENCE_LANGUAGES' name
  value_type     str        integer | number | percentage | boolean | url | date | date_only |
                            iso_date | datetime | iso_datetime | unix_time | uuid | email |
                            bare_email | masked | digits, when the clause is one such value
                            ("an integer", "an ISO 8601 date", "an email address", "a date
                            only, without the time", "a Unix timestamp", "a bare email address",
                            "a date in the format DD/MM/YYYY", "a 6-digit code")
  value_mask     str        the mask of a masked value: "DD/MM/YYYY", "HH:MM", a number's
                            "$X.XX" ("a price in the format $X.XX"); of digits, one '#' per
                            digit ("######")
  section_name   str        the section a count is scoped to ('a "Risks" section with at least 3
                            bullet points', 'at least 5 URLs under the "Sources" heading')
  value_lead     bool       the value opens the output, which goes on ("an integer followed by
                            a one-line note"): the value_type check reads its first word
  value_within   str        a time zone, year or domain the value is in, with its preposition
                            ("in UTC", "in 2026", "on github.com"): the clause's whole rest
                            after a timestamp's, a date's, a URL's or an email address's type
  quantities     list[struct{min, max, unit, scope, scope_text, phrase, measure}]
                            counts and lengths: "at least 5 sources", "3+ items", "2-3
                            paragraphs", "exactly one sentence", "top 10", "under 500
                            characters", "each under 25 words" (scope 'each'), "followed by
                            one paragraph" (scope 'rest'), "whose first line is at most 50
                            characters" (scope 'first'), 'a "Risks" section with at least 3
                            bullet points' (scope 'section', see section_name); measure is
                            words | chars |
                            sentences | paragraphs | lines | headings | urls | sources |
                            columns (of a markdown table) | items
                            (a length of one part of an output of several parts is not
                            read: "a title and a summary of 2 sentences", see PART_LENGTH)
  literals       list[struct{text, mode, phrase, times}]  exact phrases in quotes or backticks,
                            with mode contains | starts | ends | first_line | last_line |
                            last_line_starts | last_section | section | exact | absent |
                            tagged (section: 'a `Sources` section', a heading or label so named);
                            times: how often a contained phrase must occur at least ('mentions
                            "climate" at least twice'), null for once; "ending with a question
                            mark" ends with the literal "?"; tagged: text is the name of a tag
                            whose element the output holds ("wrapped in <answer> tags")
  item_edges     list[struct{unit, side, text, type, phrase}]  how every list item (else
                            every line) begins (side start: a quoted text, 'each line starts
                            with "TODO:"', or a value type as value_type, "each item begins
                            with a date") or ends (side end: a quoted text or a mark, "each
                            ending with a period"), or what wraps it whole (side wrap, type
                            bold | quotes | backticks: "each bullet in bold")
  item_kinds     int        how many kinds of items the clause counts ("at least 2 pros and
                            at least 2 cons": 2); a list is not told apart by kind, so a count
                            of one kind among others is asked (GENERIC_ITEM_UNITS aside)
  each_of        str        paragraphs | lines: what the clause counts as a whole, which a bare
                            "each" bounds ("at least 2 paragraphs, each under 50 words")
  letter_case    str        lower | upper: every letter of the output is ("all lowercase",
                            "ALL CAPS", "no uppercase letters"); null when the clause says none
  orders         list[struct{by, direction, alphabetical, chronological, phrase}]  an order
                            the list items (by null) or a field's values (by: its normalised
                            name) keep: direction asc | desc | any; alphabetical: text may be
                            compared ("sorted alphabetically"), else only numbers and ISO dates
                            are; chronological: by the ISO date each item holds ("in
                            chronological order", "newest first")
  alternative    str        "..., or the single line "none"": an output equal to it is enough
  enums          list[struct{field, values, phrase, nested, key, parent}]  '"low", "medium"
                            or "high"'; field null means the whole output must be one of the
                            values; nested: the field is inside another the clause names,
                            parent that field's key
  fields         list[struct{name, key, nested, phrase}]  from sub-items and from "with fields
                            `a`, `b`", "containing: a, b and c", "each has: x, y"
  ranges         list[struct{field, lo, hi, phrase, lo_exclusive, hi_exclusive, key}]  numeric
                            ranges ("a score from 0-100"), unitless bounds ("`checked`: at
                            least 3") and signs ("a positive number"); lo_exclusive and
                            hi_exclusive: the bound excludes its number ("above 0.5",
                            "positive", "less than 1"); the field "[]" is each element of
                            the output's JSON array ("a JSON array of numbers, each between
                            0 and 1", "a JSON array of positive integers")
  field_lengths  list[struct{field, key, min, max, measure, phrase}]  a sub-item's length in
                            words or characters ("`summary`: at most 50 words"), or in items
                            for a field of a JSON output ("`tags`: 2-5 strings"); its other
                            counts ("`Summary`: 2-3 sentences") join unchecked_text
  field_types    list[struct{field, key, type, within}]  a sub-item's value type, as
                            value_type, and what it is within, as value_within
                            ("`sla_hours`: an integer from 1-72", "`retrieved`: as YYYY-MM-DD")
  (`key` is the field name normalised by `normalise_key`, as outputs' keys are)
  judgments      list[str]  quality words that need judgment ("critically evaluated")
  vague_words    list[str]  words that state no property ("a good report")
  forbids_secrets bool      the clause forbids secrets, keys, passwords or tokens
  nullable_fields list[str]  the (normalised) fields whose JSON null is no value: sub-items
                            that may be absent ("(optional)", "if known") or say "null"
  only_fields    bool       the output has the named fields and no other ("exactly the keys
                            `a` and `b`", "only these fields:", "no other columns")
  unchecked_text str        what is left of the clause once every recognised requirement is
                            taken out, when it still says something (judged by a deferred check)
  unchecked_words list[str] its content words (lowercase, plural 's' dropped)
  decidable      bool       the clause states at least one requirement a deciding check settles

Sub-items (the frame's `details`) contribute their field name, and the enumerations, ranges
and nested fields they state, scoped to that field; their quality words join `judgments` as
"`field`: word".
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

import polars as pl

# ---- building blocks --------------------------------------------------------------------

# Regexes here compile once per process for each batch of new clauses, and compiling is most
# of the cost of reading them. Classes that case cannot change (letters, "anything but a
# quote") are marked (?-i:...) where a pattern is case-insensitive, which spares the compiler
# from case-folding them (the same matches, compiled faster).


def _between(mark: str, end: str, most: str = "+") -> str:
    """A literal between quote marks, on one line."""
    return mark + "(?-i:[^" + end + r"\n]" + most + ")" + end


# A quoted or backticked literal; its text is recovered by `_unquote`. Apostrophes also join
# contractions ("don't ... users' data"): a text between two of them counts only when it is
# at most 200 characters long (a bound on the other marks would cost more to compile than it
# is worth: a bounded repeat compiles to one copy of its class per character).
_MARKS = (_between(r"\"", r"\""), _between("“", "”"), _between("‘", "’"), _between("«", "»"),
          _between("`", "`"))
_APOSTROPHES = _between("'", "'", "{1,200}")
QUOTED = "(?:" + "|".join(_MARKS) + "|" + _APOSTROPHES + r"(?:[\s.,;:!?)]|$))"
QUOTED_ONLY = "|".join(_MARKS) + r"|(?:^|\s)" + _APOSTROPHES
QUOTED_LIST = QUOTED + r"(?:\s*(?:,|/|\|)?\s*(?:(?:or|and)\s+)?" + QUOTED + r")*"
# '"a", "b" or "c"': quoted texts, the last after "or"
QUOTED_OR = QUOTED + r"(?:\s*,\s*" + QUOTED + r")*\s*,?\s*or\s+" + QUOTED
# A boundary that does not consume a letter, digit, '_' or '-' (Rust regex has no lookbehind).
START = r"(?:^|(?-i:[^\p{L}\p{N}_\-]))"
# A run of letters and hyphens; a name (letter or '_' first); a backticked name.
LETTERS = r"(?-i:[\p{L}\-])+"
IDENT = r"(?-i:[\p{L}_][\w\-]*)"
TICKED = r"`(?-i:[^`\n]+)`"
NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100, "a single": 1, "single": 1,
    "a dozen": 12, "a": 1, "an": 1,
}
# A count: digits (thousands may be grouped with commas: "2,000") or a number word.
NUM = (r"(\d{1,3}(?:,\d{3})+|\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
       r"|fifteen|twenty|thirty|forty|fifty|hundred|a single|single|a dozen)")
ADJ = (r"(?:(?:distinct|unique|different|separate|specific|short|brief|full|complete|relevant"
       r"|independent|credible|reputable|primary|key|main|concrete|numbered|bulleted|bullet"
       r"|markdown|json|top-level|non-empty|additional|new|valid|actionable|total|consecutive"
       r"|plain|prose|more|cited|named|source)\s+)?")
# A unit, and a container noun after it that the phrase keeps ("3 comment objects").
# The unit ends a word: "2 H2 sections" counts no "H".
UNIT = (r"((?-i:[\p{L}][\p{L}\-]*))(?-u:\b)(?:\s+(?:objects?|items?|entries|entry|elements?|rows?"
        r"|records?|lines?|bullets?|points?))?")
# "each item under 20 words", "followed by at most 100 words", "whose first line is at most 50
# characters" (a commit message's subject line), "whose title is at most 8 words", "a subject
# of at most 50 characters, a blank line, then a body", "a headline of at most 10 words and a
# 2-sentence lede" (its first line; v11 counted the whole output for the last two)
# A count tied to a named section is marked (SECTION_MARK) before the readers run.
SECTION_MARK = "\ue00a"
SCOPE = (r"((?:each|every)\s+(?:" + LETTERS + r"\s+){0,2}?|followed\s+by\s+(?:" + LETTERS
         + r"\s+)??|(?:first\s+line|title(?:\s+line)?|subject(?:\s+line)?|summary\s+line|headline)"
         r"\s+(?:(?:is|must\s+be|should\s+be|stays|has"
         r"|of|with)\s+)?"
         + r"|" + SECTION_MARK + r"\s*)?")

# Units that do not count parts of an output ("within 2 days", "3 decimals", "a 0-100 score").
NOT_UNITS = [
    "of", "in", "to", "and", "or", "per", "the", "a", "an", "times", "more", "less", "fewer",
    "percent", "decimal", "decimals", "digit", "digits", "day", "days", "hour", "hours",
    "minute", "minutes", "second", "seconds", "week", "weeks", "month", "months", "year",
    "years", "score", "scores", "rating", "ratings", "version", "versions", "is", "are", "was",
    "be", "that", "which", "with", "for", "by", "from", "on", "at", "as", "if", "it", "its",
    "ms", "kb", "mb", "gb", "am", "pm", "scale", "stars", "star", "out", "decimal-places",
    "fenced", "code", "format", "formats", "standard",
    # nested items are not the list's items ("at least one sub-bullet"): asked
    "sub-bullet", "sub-bullets", "sub-item", "sub-items", "sub-point", "sub-points", "subitem",
    "subitems", "sub-list", "sub-lists", "sublist", "sublists", "sub-task", "sub-tasks",
]
LEVEL_WORDS = ("one", "two", "three", "four", "five", "six")  # heading levels, spelled
# What "no duplicates" / "no repeated items" may name (its items, not "repetitions" in prose)
REPEATED_NOUNS = r"items?|entries|lines|values|bullets|tags|keywords|urls|links"
MEASURES = {
    "word": "words", "character": "chars", "char": "chars", "letter": "chars",
    "sentence": "sentences", "paragraph": "paragraphs", "line": "lines",
    "section": "headings", "heading": "headings", "header": "headings",
    "url": "urls", "link": "urls", "hyperlink": "urls",
    "source": "sources", "reference": "sources", "citation": "sources",
    "column": "columns", "key": "keys", "field": "keys", "property": "keys",
    "hashtag": "hashtags", "emoji": "emojis", "duplicate": "duplicates",
    "codeblock": "code_blocks",
    "exclamation-mark": "exclamations",
    "duplicated": "duplicates",
    **{f"repeated {noun}": "duplicates" for noun in (
        "item", "entrie", "line", "value", "bullet", "tag", "keyword", "url", "link")},
    **{f"level-{word}-{noun}": f"h{n}" for n, word in enumerate(LEVEL_WORDS, 1)
       for noun in ("section", "heading", "header")},
}

# A negation and the verb it may take before a bound ("is not", "never has", "does not",
# "never uses": v22 as first written read "never uses more than 2 …" as more than 2).
NEGATION = (r"(?:(?:(?:does|do|did|must|should|shall|will|would|can|may|is|are|was)\s*)?"
            r"(?:not|n't)|never|cannot|won't|without)\s+(?:(?:be|is|are|has|have|contain|"
            r"contains|include|includes|use|uses|run|runs|go|goes|get|gets)\s+)?")
# (kind, pattern): group 1 = scope, 2 = first number, 3 = second number, 4 = unit.
QUANTITY_FORMS = [
    ("range", START + SCOPE + r"(?:between\s+)?" + NUM
     + r"\s*(?:-|–|—|\s+to\s+|\s+and\s+|\s+or\s+)\s*" + NUM + r"\s+" + ADJ + UNIT),
    ("min", START + SCOPE + r"(?:at\s+least|no\s+fewer\s+than|no\s+less\s+than|not\s+fewer\s+"
     r"than|not\s+less\s+than|a\s+minimum\s+of|minimum\s+of|min\.?)\s+" + NUM + r"()\s+" + ADJ
     + UNIT),
    ("min", START + SCOPE + r"(\d+)\s*\+()\s*" + ADJ + UNIT),
    ("min", START + SCOPE + NUM + r"\s+or\s+more()\s+" + ADJ + UNIT),
    ("max", START + SCOPE + r"(?:at\s+most|no\s+more\s+than|not\s+more\s+than|up\s+to|a\s+"
     r"maximum\s+of|maximum\s+of|max\.?|not\s+exceeding|no\s+longer\s+than|within)\s+" + NUM
     + r"()\s+" + ADJ + UNIT),
    ("max", START + SCOPE + NUM + r"\s+or\s+(?:fewer|less)()\s+" + ADJ + UNIT),
    # "280 characters or fewer", "5 sources or more" (an "exactly" before it is overruled)
    ("max", START + SCOPE + r"(?:exactly\s+)?" + NUM + r"()\s+" + ADJ + UNIT
     + r"\s+or\s+(?:fewer|less)\b"),
    ("min", START + SCOPE + r"(?:exactly\s+)?" + NUM + r"()\s+" + ADJ + UNIT
     + r"\s+or\s+more\b"),
    # a negated bound is the other bound: "not longer than 50 words", "never has more than 5
    # items", "does not exceed 100 words" cap; "not shorter than 3 lines" sets a minimum
    ("max", START + SCOPE + NEGATION + r"(?:more\s+than|over|above|longer\s+than|greater\s+than|"
     r"exceed(?:s|ing)?)\s+" + NUM + r"()\s+" + ADJ + UNIT),
    ("min", START + SCOPE + NEGATION + r"(?:under|fewer\s+than|less\s+than|below|shorter\s+than)"
     r"\s+" + NUM + r"()\s+" + ADJ + UNIT),
    ("over", START + SCOPE + r"(?:more\s+than|over|above|longer\s+than|greater\s+than)\s+" + NUM
     + r"()\s+" + ADJ + UNIT),
    ("under", START + SCOPE + r"(?:under|fewer\s+than|less\s+than|below|shorter\s+than)\s+"
     + NUM + r"()\s+" + ADJ + UNIT),
    ("exact", START + SCOPE + r"(?:exactly|precisely|just|only)\s+" + NUM + r"()\s+" + ADJ
     + UNIT),
    ("exact", START + SCOPE + r"top\s+(\d+)()\s+" + ADJ + UNIT),
    ("hyphen", START + SCOPE + NUM + r"()-" + UNIT),
    # "no URLs", "without any links", "does not include any hyperlinks": none at all
    ("none", START + SCOPE + r"(?:no|zero|without(?:\s+any)?|(?:does\s+not|doesn't|do\s+not|"
     r"don't|must\s+not|never)\s+(?:include|includes|contain|contains|have|has|use|uses)"
     r"(?:\s+any)?)\s+()()(urls?|links?|hyperlinks?|hashtags?|emojis?|emoji|headings?|"
     r"exclamation-marks?|duplicates?|"
     r"duplicated|repeated\s+(?:" + REPEATED_NOUNS + r"))\b(?:\s+(?:" + REPEATED_NOUNS + "))?"),
    # "an empty list", "an empty `results` list", "an empty JSON array": no item at all (v20
    # read nothing of "empty", and a list with items met it)
    ("none", START + SCOPE + r"empty\s+()()(?:" + TICKED + r"\s+)?(?:(?:json|markdown|bulleted"
     r"|numbered)\s+)?(list|array)\b"),
    # "each with a source URL": every item carries at least one
    ("one", START + r"(each\s+(?:" + LETTERS + r"\s+){0,2}?)(?:with|has|having|including|citing|"
     r"giving|naming|linking)\s+(?:a|an|one|its)\s+()()(?:source\s+|reference\s+)?(url|link)\b"),
    # "a link to the PR", "with a source link": at least one URL
    ("one", START + r"()(?:a|an)\s+()()(?:source\s+|reference\s+|working\s+|valid\s+|markdown\s+)?"
     r"(link|hyperlink)(?:[^\-\p{L}\p{N}]|$)"),
    ("exact", START + SCOPE + NUM + r"()\s+" + ADJ + UNIT),
]
# "no item longer than 10 words", "no line over 80 characters": a bound on each (read as
# "each item at most 10 words"); "no sentence longer than 25 words" is hidden (NEGATED): no
# check counts words per sentence
NO_PART_LONGER = (r"(?i)\bno\s+(item|bullet|line|paragraph|entry|point|step|row)s?\s+(?:(?:is|may"
                  r"\s+be|should\s+be|can\s+be)\s+)?(?:longer\s+than|more\s+than|over|above|exceeds?|"
                  r"exceeding)\s+")
# "without line breaks", "no newlines": the output is one line (read as "at most one line")
NO_LINE_BREAKS = (r"(?i)\b(?:without(?:\s+any)?|with\s+no|no|zero)\s+(?:line[\s\-]?breaks?"
                  r"|newlines?|new\s+lines)(?:\s*$|\s*[,;.)])")  # not "no line breaks in cells"
# "a bash one-liner": at most one line (v11 counted "liner" items)
ONE_LINER = r"(?i)\bone[\s\-]liners?\b"
# A length stated of one part of an output of several ("a title and a summary of 2 sentences",
# "a one-line verdict followed by a list", "a report with an executive summary of at most 100
# words") is no length of the whole output, the only one a count measures: in such a clause
# every length is hidden like a negation (`_hide`) and left to the judgment question. A
# clause has several parts when it joins a new noun phrase ("and a", "then the", "followed
# by an", ", a") or gives a part its own length ("with a summary of 2 sentences", "with a
# one-line summary"); lists, links and sources are still counted (one part holds them all).
LENGTH_UNIT = (r"(?:words?|characters?|chars?|letters?|sentences?|paragraphs?|lines?|sections?"
               r"|headings?|headers?)\b")


# Words that make "an empty list" one answer among others, or one allowed, not the one asked
EMPTY_AT_TIMES = (r"(?i)\b(?:if|when|whenever|unless|otherwise|else|or|may|might|can|could"
                  r"|allowed|possibly)\b")


def _counted(unit: str) -> str:
    """Every count form of QUANTITY_FORMS with a unit, of `unit` and without a scope.

    Written with what the forms share said once, as the same pattern: every form starts with
    START (`(?:^|X)(?:A|B)` matches as `(?:^|X)A|(?:^|X)B` does, as no form starts with a
    character X matches), and neighbouring forms that end alike (`\\s+`, ADJ, the unit) end
    with it together (`(?:A|B)C` is `AC|BC`, in the same order). Every copy of the adjectives
    and the numbers is compiled, and six patterns of the fields' lengths hold this twice: said
    in full they were 20,000 characters, 26-48 ms each to compile; now 13,000, 17-21 ms."""
    ending = r"\s+" + ADJ + unit
    runs: list[tuple[list[str], bool]] = []  # (neighbouring forms' starts, whether they end so)
    for _, pattern in QUANTITY_FORMS:
        if UNIT not in pattern:
            continue
        form = pattern.replace(SCOPE, "").replace(UNIT, unit).removeprefix(START)
        ends = form.endswith(ending)
        form = form.removesuffix(ending) if ends else form
        if ends and runs and runs[-1][1]:
            runs[-1][0].append(form)
        else:
            runs.append(([form], ends))
    return "(?i:" + START + "(?:" + "|".join(
        (f"(?:{'|'.join(starts)})" + ending if ends else starts[0]) for starts, ends in runs
    ) + "))"


PART_LENGTH = _counted(LENGTH_UNIT)
PARTS_JOINED = (r"(?i)(?:(?:\band|\bplus|[,;])\s+(?:a|an)|(?:\bthen|\bfollowed\s+by)\s+"
                r"(?:a|an|the)|\bthen\s+(?:up\s+to|at\s+(?:least|most)|no\s+more\s+than|exactly"
                r"|\d+))\s+(?-i:[\p{L}\p{N}])")
PART_WITH_LENGTH = (r"(?i)\bwith\s+(?:a|an)(?:\s+" + LETTERS + r"){0,3}?(?:\s+of|\s+)?"
                    + PART_LENGTH)
# ... but "with a maximum of 100 words" states the length of the whole
WHOLE_LENGTH_WORDS = r"(?i)\b(?:maximum|minimum|total|length|limit|overall)\b"
# ... but a length said of the first line ("a subject of at most 50 characters, a blank line,
# then a body", "whose first line is at most 50 characters, then a body") is its own part's:
# it is kept from that hiding (v11 asked it)
FIRST_LINE_LENGTH = (r"(?i)\b(?:first\s+line|title(?:\s+line)?|subject(?:\s+line)?|summary\s+line"
                     r"|headline)(?:\s+(?:is|must\s+be|should\s+be|stays|has|of|with))?(?:"
                     + PART_LENGTH + ")")
SHELTERED = "\ue00d"
LIST_BOUND = (r"(?i),\s*((?:at\s+most|at\s+least|no\s+more\s+than|no\s+fewer\s+than|up\s+to)"
              r"\s+\d+)\s*([.;]|$)")
# "one line each", "under 20 words each": read as "each one line", "each under 20 words".
EACH_AFTER = (r"(?i)\b((?:(?:at\s+most|at\s+least|no\s+more\s+than|up\s+to|under|over|exactly)"
              r"\s+)?(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|a\s+single|single)"
              r"[\s\-]+(?:words?|lines?|sentences?|characters?|chars?|paragraphs?))(?:\s+long)?"
              r"\s+each\b")
# "at most 3 sentences per item", "under 20 words for each bullet": read as "each item at
# most 3 sentences" (a count of every part, see EACH_AFTER)
# ("a list with one summary of at most 3 sentences per item": "one summary of" is no count of
# items; it is marked with OF_EACH, and NOT_COUNTS takes it)
OF_EACH = "\ue00b"
PER_PART = (r"(?i)\b(?:((?:one|an?|a\s+single|single)\s+[\p{L}\-]+\s+of)\s+)?"
            r"((?:(?:at\s+most|at\s+least|no\s+more\s+than|up\s+to|under|over|exactly"
            r"|fewer\s+than|more\s+than)\s+)?(?:\d+|one|two|three|four|five|six|seven|eight|nine"
            r"|ten|a\s+single|single)[\s\-]+(?:words?|sentences?|characters?|chars?|urls?|links?"
            r"|sources?))\s+(?:per|for\s+each|for\s+every|in\s+each)\s+(item|bullet|point|entry"
            r"|paragraph|line|step)\b")
# Phrases that look like counts but are not ("one row per table", "to 2 decimals").
NOT_COUNTS = (
    r"(?i)" + START + r"(?:one|a|an|\d+)\s+" + LETTERS + r"\s+(?:per|for\s+each|for\s+every)"
    r"(?:\s+(?-i:[\p{L}\p{N}\-]+)){1,2}"
    r"|(?i)(?:to\s+)?\d+\s+decimal(?:s|\s+places?)?|(?i)\b\d{4}-\d{2}-\d{2}\b"
    r"|(?i)\b(?:one|an?|a\s+single|single)\s+[\p{L}\-]+\s+of" + OF_EACH
    # "3 out of 5 items marked done": a share, not a count of the output's items (v10 counted 5)
    + r"|(?i)\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+out\s+of\s+(?:\d+|two"
    r"|three|four|five|six|seven|eight|nine|ten)(?:\s+" + LETTERS + r")?"
)
# A standard's number ("ISO 8601", "ISO-3166-1") is no count: joined to its name by "_" (no
# count's number follows a word character) and so left in the text, for the judgment question
# where no reader took it; `_restore` writes it back with a space.
STANDARD_NUMBER = r"(?i)\b(ISO)[\s\-]?(\d+(?:-\d+)?)\b"
EXAMPLES = (r"(?i)(?:such\s+as|e\.g\.,?|for\s+example,?|for\s+instance,?|like|i\.e\.,?)\s+"
            + QUOTED_LIST)
# Examples of what a clause forbids are forbidden ("does not mention competitors such as
# Zendesk or Freshdesk", "avoids jargon (e.g. "synergy")": v20 dropped them as examples, and
# asked "does not mention competitors"). Groups: 1 the negated verb, 2 what it names, 3 the
# examples, quoted or capitalised names (4 in parentheses).
NAME = r"(?-i:\p{Lu}[\p{L}\p{N}\-]*(?:\.[\p{L}\p{N}]+)*)"
_EXAMPLE_NAMES = (QUOTED_LIST + "|" + NAME + r"(?:\s*,\s*" + NAME + r")*(?:\s*,?\s*(?:or|and)\s+"
                  + NAME + r")?")
_EXAMPLES_SAID = r"(?:such\s+as|like|e\.g\.,?|for\s+example,?|including)\s+"
NEGATED_EXAMPLES = (
    r"(?i)\b((?:never|must\s+not|should\s+not|does\s+not|doesn't|do\s+not|don't|not)\s+"
    r"(?:mention|include|contain|use|name|say)\w*|avoid(?:s|ing)?)\s+((?:any\s+)?"
    r"(?-i:[\p{Ll}\-]+)(?:\s+(?-i:[\p{Ll}\-]+)){0,2})(?:\s*,?\s+" + _EXAMPLES_SAID + "("
    + _EXAMPLE_NAMES + r")|\s*\(\s*" + _EXAMPLES_SAID + "(" + _EXAMPLE_NAMES + r")\s*\))")
# The noun that may follow a field's name ("a `status` key", "the severity field"): the name
# is the field's, not the noun (v20 read "a `status` key ("ok" or "error")" as a field `key`)
NAMED_FIELD_NOUN = r"(?:\s+(?:field|key|property|attribute|column|entry))"
# What sets a named field to one of a few unquoted words ("set to", "that is either")
FIELD_WORDS_VERB = (r"(?:(?:that|which)\s+)?(?:(?:is|are|must\s+be|should\s+be)\s+)?(?:set\s+to"
                    r"|either|one\s+of)\s+")
FIELD_PREFIX = (r"(?:(?:where|whose|with|and|its)\s+)?(?:(" + TICKED + "|" + IDENT + r")"
                + NAMED_FIELD_NOUN + r"?\s*(?:\(\s*|(?:(?:that|which)\s+)?(?:is|are|must\s+be"
                r"|should\s+be|can\s+be|will\s+be|in|=|(?:is\s+)?set\s+to|equals|(?:is\s+)?equal"
                r"\s+to)\s+|:\s*))?")
WORD = r"(?-i:[\p{L}\p{N}_\-])+"
# Unquoted words, the last after "or": "low, medium or high"
WORD_OR = WORD + r"(?:\s*,\s*" + WORD + r")*\s*,?\s+or\s+" + WORD
# Nouns whose value is one word of a few ("a priority of P1, P2 or P3"); the second group
# only after another noun ("a risk level of", not "a level of detail or depth")
VALUE_NOUNS = (r"priority|severity|rating|grade|status|label|verdict|decision|category"
               r"|classification|tier|risk|sentiment|stance|outcome|recommendation|answer|tag"
               r"|urgency|impact|likelihood|complexity|confidence|" + IDENT
               + r"\s+(?:level|type|kind|class|mode|state|phase|stage|tone|effort)")
# "a decision: "yes" or "no"": the noun a clause opens with names the output, not a field of
# it; its colon is held as COLON while the readers run, so no reader takes it for a label.
COLON = "\ue004"
# Group 1 is the field an enumeration constrains; a closing parenthesis is taken with it.
# (kind, pattern): the kind says where the values start (`_enums`).
ENUM_FORMS = [
    # 'a table whose `Status` column holds only "pass" or "fail"': the field's values
    ("field_holds", r"(?i)(" + TICKED + r")\s+(?:column|field|key|value|cell)s?\s+(?:only\s+)?"
     r"(?:holds?|contains?|has|have|is|are|takes?|must\s+be|can\s+only\s+be)\s+(?:only\s+)?"
     r"(?:(?:exactly\s+)?one\s+of\s+|either\s+)?:?\s*" + QUOTED_OR),
    # "each finding with a severity of "low", "medium" or "high"", "each check has a `status`
    # of …": the field is named
    ("with_of", r"(?i)\b(?:with|has|have|having)\s+(?:a|an|the)\s+(" + TICKED + "|" + IDENT
     + r")\s+of\s+"
     r"(?:(?:exactly\s+)?one\s+of\s+|either\s+)?:?\s*" + QUOTED_OR),
    ("one_of", r"(?i)" + FIELD_PREFIX + r"(?:(?:exactly\s+)?one\s+of|any\s+of|either)\s*:?\s*"
     r"\(?\s*" + QUOTED_LIST + r"(?:\s*\))?"),
    ("quoted_or", r"(?i)" + FIELD_PREFIX + QUOTED_OR + r"(?:\s*\))?"),
    # "whose `status` is "ok"": one value for a named field
    ("one_value", r"(?i)\b(?:whose|where|with)\s+(" + TICKED + r")\s+(?:is|equals|=|must\s+be|"
     r"set\s+to)\s+" + QUOTED),
    # "yes or no", "yes/no", "true or false": the two answers, unquoted
    ("yes_no", r"(?i)" + FIELD_PREFIX + r"\b(?:yes\s*(?:/|\s+or\s+)\s*no|true\s*(?:/|\s+or\s+)"
     r"\s*false)\b"),
    # unquoted: "one of approve, reject or escalate", "one of billing, outage, account"
    ("unquoted", r"(?i)" + FIELD_PREFIX + r"one\s+of\s*:?\s*" + WORD + r"(?:(?:\s*,\s*" + WORD
     + r")+(?:\s*,?\s*(?:or|and)\s+" + WORD + r")?|\s*,?\s*or\s+" + WORD + r")(?:\s*\))?"),
    # ... or after "from:" or "among:", closing the part ("a category from: billing, technical,
    # account"; v11 dropped it unread); words joined by "and" are no choice ("data from: Jan,
    # Feb and Mar")
    ("from_list", r"(?i)" + FIELD_PREFIX + r"(?:(?:chosen|picked|taken)\s+)?(?:from|among)\s*(?::|"
     + COLON + r")\s*" + WORD + r"(?:\s*,\s*" + WORD + r")+(?:\s*,?\s*or\s+" + WORD
     + r")?\s*(?:[.;)]|$)"),
    # unquoted words joined by "or" that are all a part says after its opening noun ("a
    # severity: low, medium or high"; a sub-item "`tier`: gold, silver or bronze")...
    ("bare_or", r"(?i)(?:^|" + COLON + r")\s*" + WORD_OR + r"\s*(?:[.;,)]|$)"),
    # ... or after a value's noun and "of" ("a priority of P1, P2 or P3", "with a risk of low
    # or high": the field is named)
    ("scalar_of", r"(?i)(?:\bwith\s+(?:a|an|the)\s+"
     r"(" + TICKED + r"|(?:" + IDENT + r"\s+)?(?:" + VALUE_NOUNS + r"))|^\s*(?:a|an|the)\s+(?:"
     + IDENT + r"\s+)?(?:" + VALUE_NOUNS + r"))\s+of\s+" + WORD_OR + r"\s*(?:[.;,)]|$)"),
    # ... or in parentheses after it ("a sentiment label (positive, negative or neutral)", "a
    # severity (low, medium or high)"; v11 asked it, or judged "neutral" as a quality)
    ("scalar_paren", r"(?i)(?:\bwith\s+(?:a|an|the)\s+(" + TICKED + r"|(?:" + IDENT
     + r"\s+)?(?:" + VALUE_NOUNS + r"))|^\s*(?:a|an|the)\s+(?:" + IDENT + r"\s+)?(?:"
     + VALUE_NOUNS + r"))\s*\(\s*" + WORD_OR + r"\s*\)"),
    # ... or after a named field, in parentheses, after a colon, or set to them ("a `severity`
    # field (low, medium or high)", "a `priority` field set to P1, P2 or P3"; v20 asked them)
    ("field_words", r"(?i)(" + TICKED + r")" + NAMED_FIELD_NOUN + r"?\s*(?:\(\s*" + WORD_OR
     + r"\s*\)|(?::|" + COLON + r")\s*" + WORD_OR + r"\s*(?:[.;,)]|$)|" + FIELD_WORDS_VERB
     + WORD_OR + r"\s*(?:[.;,)]|$))"),
]
# Words that end no enumeration ("3 or more", "high or higher"): such a phrase is no choice.
NOT_VALUES = ["more", "less", "fewer", "higher", "lower", "above", "below", "greater", "both",
              "all", "neither", "other", "others", "similar", "equivalent", "so", "not", "never",
              "better", "worse", "longer", "shorter", "a", "an", "the",
              # formats and types are read as such ("markdown or JSON")
              "json", "yaml", "yml", "csv", "markdown", "table", "list", "html", "xml", "text",
              "prose", "number", "integer", "string", "url", "date"]
# Fields whose values name a kind: a format's or a type's name among them is a value
KIND_FIELDS = ["format", "type", "kind", "syntax", "language", "lang", "mode", "style",
               "media-type", "content-type", "mime-type", "output-format", "file-type"]
# Words that say whether a field is there, not what it holds ("`notes` (optional or null)")
PRESENCE_WORDS = ["optional", "required", "mandatory", "null", "nullable", "omitted", "absent",
                  "present", "missing", "empty", "blank"]
# Words before "is one of" that name no field: the whole output is meant.
NOT_FIELDS = ["one", "either", "any", "exactly", "is", "a", "an", "the", "of", "be", "that",
              "which", "it", "value", "values", "word", "answer", "output", "result", "text",
              "reply", "response", "file", "line", "only", "and", "where", "whose", "with",
              "its"]
LIT_FILLER = (r"(?:(?:a|an|the|exact|exactly|phrase|text|word|words|string|line|heading|title"
              r"|label|sign-off|signoff|signature|greeting|section|note|value|literal|name"
              r"|[\p{L}\-]+['’]s)\s+){0,4}")
# Verbs that say how an output begins or ends ("starts with", "ending with").
STARTS = "begin|begins|beginning|start|starts|starting|open|opens|opening"
ENDS = "end|ends|ending|close|closes|closing|finish|finishes|finishing"
# How often a contained phrase must occur ('mentions "climate" at least twice', '"TODO" 3 or
# more times'): read as a least number of occurrences ("3 times" alone is at least 3 too).
TIMES = (r"(?:\s+(?:at\s+least\s+|no\s+fewer\s+than\s+|a\s+minimum\s+of\s+)?(?:twice|thrice"
         r"|more\s+than\s+once|once|(?:\d+|two|three|four|five|six|seven|eight|nine|ten)"
         r"(?:\s+or\s+more|\+)?\s+times))?")
TIMES_WORDS = {"twice": 2, "thrice": 3, "more than once": 2, "two": 2, "three": 3, "four": 4,
               "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
# An output that ends with a mark, named rather than quoted ("ending with a question mark").
END_MARKS = {"question": "?", "period": ".", "full": ".", "exclamation": "!"}
# ... and "ends with a question" where the part closes there ("a reply that ends with a
# question", not "ends with a question and answer section")
MARK_NAME = (r"(?:question\s+mark|question(?:\s*$|\s*[,;.)])|period|full\s+stop|exclamation\s+"
             r"(?:mark|point))")
END_MARK = r"(?i)(?:" + ENDS + r")\s+(?:with|in)\s+(?:a\s+|an\s+)?" + MARK_NAME
# A file name's extension (".csv"), and an output that ends with one
FILE_EXTENSION = r"\.[\p{L}\p{N}]{1,10}\b"
EXTENSION = (r"(?i)(?:" + ENDS + r")\s+(?:with|in)\s+(" + FILE_EXTENSION + r")|\b(?:a|an|the)\s+("
             + FILE_EXTENSION + r")\s+extension\b")
# The words before an alternative output's text ("or just the line "none"")
ALTERNATIVE_TEXT = (r"(?:just\s+|only\s+|simply\s+)?(?:the\s+)?(?:(?:single\s+|exact\s+)?"
                    r"(?:line|word|text|string|value|phrase)\s+)?" + QUOTED)
# The words that forbid what follows them ("must not", "never", "doesn't")
FORBIDDING = (r"(?:never|must\s+not|mustn't|should\s+not|shouldn't|does\s+not|doesn't|do\s+not"
              r"|don't|cannot|can't|may\s+not|not|no)")
# (mode, cue): a literal right after its cue is a requirement; other quotes are not. After a
# cue of absence a quoted list ('never mentions "a" or "b"') forbids each of its phrases.
LITERAL_FORMS = [
    ("first_line", r"(?i)first\s+line\s+(?:is|reads|must\s+be|should\s+be|says|=)?\s*"
     r"(?:exactly\s+)?" + LIT_FILLER + QUOTED),
    # "whose last line begins with "Answer:"", "the final answer on the last line, prefixed
    # with "Answer:"", "ending with a line that starts with "Final answer:""
    ("last_line_starts", r"(?i)(?:(?:last|final)\s+line|(?:ending|ends|end)\s+with\s+a\s+line)\b"
     r"(?-i:[^\"“‘`'\n]){0,40}?(?:" + STARTS + r"|prefixed|leads|leading)\s+(?:with|by)\s+"
     + LIT_FILLER + QUOTED),
    ("last_line", r"(?i)(?:last|final)\s+line\s+(?:is|reads|must\s+be|should\s+be|says|=)\s*"
     r"(?:exactly\s+)?" + LIT_FILLER + QUOTED),
    # "or the single line "none"", "or just "none"", ', or "none" if nothing was found' (a
    # quoted list after "or" is an enumeration, read before)
    # '(write "none" if there are none)': an alternative too (v22 as first written: asked)
    ("alternative", r"(?i)\b(?:write|say|return|output|print|answer)\s+" + ALTERNATIVE_TEXT
     + r"\s+(?:if|when)\b"),
    ("alternative", r"(?i)\bor\s+" + ALTERNATIVE_TEXT),
    ("absent", r"(?i)" + FORBIDDING + r"\s+(?:" + LETTERS + r"\s+){0,2}?(?:contain|"
     r"include|mention|say|use|name|reveal|leak|print|output|show|state|repeat|echo|quote|expose|"
     r"disclose)\w*\s+(?:(?:the|a|an|any)\s+)?(?:(?:word|phrase|string|text|literal|value|"
     r"password|secret|token|key|name)\s+)?" + QUOTED_LIST),
    ("absent", r"(?i)(?:without|no\s+mention\s+of|free\s+of|excluding|never|avoid(?:s|ing)?)"
     r"\s+(?:the\s+)?(?:(?:word|phrase|string|text|literal|value)s?\s+)?" + QUOTED_LIST),
    ("starts", r"(?i)(?:" + STARTS + r"|lead|leads|leading|prefixed)\s+(?:with|by)\s+"
     + LIT_FILLER + QUOTED),
    # 'ends with a "Next steps" section': the last heading, not the last words
    ("last_section", r"(?i)(?:" + ENDS + r")\s+with\s+(?:a|an|the)\s+" + QUOTED
     + r"\s+(?:section|heading)\b"),
    # 'a `Sources` section', 'the "Risks" heading': a heading (or a label on a line of its
    # own) so named, not the word anywhere (v14 read it as a phrase the output contains)
    ("section", r"(?i)(?:a|an|the)\s+" + QUOTED + r"\s+(?:section|heading|header)\b"),
    ("ends", r"(?i)(?:" + ENDS + r")\s+with\s+" + LIT_FILLER + QUOTED),
    # 'a reply signed "— Support"', 'signed off with "Cheers"': its last words (v11 asked)
    ("ends", r"(?i)\bsigned(?:\s+off)?(?:\s+(?:with|as|by))?\s+" + QUOTED),
    ("ends", END_MARK),
    # "a file name ending in .csv", "with a .md extension"
    ("ends", EXTENSION),
    ("exact", r"(?i)(?:exactly|nothing\s+but|solely|precisely|verbatim|only\s+the\s+(?:text|"
     r"string|word|phrase|value))\s+(?:the\s+(?:text|string|word|phrase|value|line)\s+)?"
     + QUOTED),
    ("contains", r"(?i)(?:contain|contains|containing|include|includes|included|including|"
     r"state|states|stating|say|says|saying|read|reads|reading|mention|mentions|mentioning|"
     r"mark|marks|marked|label|labelled|labeled|flag|flags|flagged|titled|headed|tagged|"
     r"quote|quotes|quoting)(?:\s+as)?\s+" + LIT_FILLER + QUOTED + TIMES),
    ("contains", r"(?i)(?:a|an|the)\s+" + QUOTED + r"\s+(?:line|label|marker|tag|footer|"
     r"banner|sign-off|signature|title|row|entry)"),
    ("contains", r"(?i)(?:the\s+)?exact\s+(?:phrase|text|words?|string|sentence)\s+(?:\"|“)?"
     r"[^\s\"“‘`'][^,;.\n\"”]*"),
]
# 'mentions "Q3" and "Q4"', 'includes both "a" and "b"', 'contains "a", "b" and "c"': each
# phrase, read as 'mentions "Q3" and mentions "Q4"' (v11 read the first and dropped the rest);
# a list after a negation is read whole before (forbidden)
ALL_OF_VERB = (r"(?i)\b(contains?|containing|includes?|including|mentions?|mentioning|states?"
               r"|stating)\s+(?:both\s+|all\s+of\s+|each\s+of\s+)?(")
QUOTED_AND_LIST = QUOTED + r"(?:\s*,\s*" + QUOTED + r")*\s*,?\s*and\s+" + QUOTED
ALL_OF_HEAD = ALL_OF_VERB + QUOTED + r")\s*,\s*(" + QUOTED_AND_LIST + ")"
ALL_OF_PAIR = ALL_OF_VERB + QUOTED + r")\s*,?\s*and\s+(" + QUOTED + ")"
# (the head peeled three times: up to five phrases)
ALL_OF_REWRITES = (*((ALL_OF_HEAD, "${1} ${2} and ${1} ${3}"),) * 3,
                   (ALL_OF_PAIR, "${1} ${2} and ${1} ${3}"))
FORMAT_FORMS = [
    # ".json", ".csv": a file name's extension names no format of the output (see
    # _format_names)
    ("json", r"(?i)\.?\bjson\b"),
    ("yaml", r"(?i)\.?\bya?ml\b"),
    ("csv", r"(?i)\.?\bcsv\b|comma[\s\-]separated\s+values?\b"),
    # "a table", "a markdown table", and a table named by what it holds ("a comparison table",
    # "a markdown summary table"); not any noun before it ("the DDL for a new table")
    ("table", r"(?i)\b(?:a|an|markdown|ascii|pipe)\s+(?:(?:markdown|comparison|summary|"
     r"results?|scoring|score|status|feature|decision|risk|pricing|ranking|overview|trade-?offs?"
     r"|side-by-side|(?:two|three|four|five|\d+)-column)\s+)?table\b(?:\s+(?:of\s+contents|names?"
     r"|of\s+names))?"),
    ("numbered_list", r"(?i)\b(?:numbered|ordered|enumerated)\s+(?:list|steps|items|entries|"
     r"points|lines)\b|\b(?:list|steps|items|entries|points)\b[^.;:\n]{0,60}?,\s*(?:each\s+)?"
     r"(?:numbered|enumerated)\b"),
    ("bulleted_list", r"(?i)\bbullet(?:ed)?[\s\-]*(?:list|points?)\b|\bbullets\b|\bbulleted\b"),
    ("markdown_list", r"(?i)\bmarkdown\s+list\b"),
    # "a markdown checklist", "as checkboxes", "- [ ] items" (a bare "checklist" or "task list"
    # is a list of things to check or do, in any form)
    ("checklist", r"(?i)\b(?:markdown|github)\s+(?:check[\s\-]?list|task[\s\-]list)\b"
     r"|\bcheck[\s\-]?box(?:es)?\b|-\s*\[\s?\]"),
    ("list", r"(?i)\blist\b"),
    ("code_block", r"(?i)\bcode[\s\-]*blocks?\b|\bfenced\b|\b(?:code|markdown)\s+fences?\b"),
    ("markdown", r"(?i)\bmarkdown\b"),
    # "a unified diff", "the patch as a diff", "in diff format"; not "a summary of the diff"
    ("diff", r"(?i)\b(?:unified|git)\s+(?:diff|patch)\b|(?:\bof\s+)?\b(?:a|an|the)\s+diff\b"
     r"|\bdiff\s+format\b"),
]
# A clause that is one value of a type ("an integer", "a number between 1 and 10", "a URL",
# "an ISO 8601 date", "the answer as a single integer"): group 1 is what comes before the
# type's phrase, 2 "ISO 8601", 3 the type.
TYPE_WORDS = (r"whole\s+number|integer|number|decimal|percentage|boolean|url|timestamp"
              r"|date[\s\-]?time|date"
              r"|uuid|e-?mail\s+address")
# The standard a value is written in: ISO 8601, or RFC 3339 (its profile for the internet)
TYPE_STANDARD = r"iso[\s\-]?8601|rfc[\s\-]?3339"
# The words that say a timestamp counts from the Unix epoch (UNIX_SAID reads them)
UNIX_WORDS = r"unix|epoch|posix"
# A type as written, with its standard: group 1 says ISO 8601, group 2 is the type
WRITTEN_TYPE = (r"(?:(" + TYPE_STANDARD + r")\s+|(?:" + UNIX_WORDS + r"|bare)\s+)?("
                + TYPE_WORDS + ")")
VALUE_TYPE = (r"(?i)^(\s*(?:the\s+[^,;:\n]{0,60}?,?\s+as\s+)?)(?:(?:a|an|one)\s+)?"
              r"(?:(?:single|valid|bare|plain)\s+)?"
              r"(?:(" + TYPE_STANDARD + r")\s+|(?:" + UNIX_WORDS + r")\s+)?"
              r"(" + TYPE_WORDS + r")\b")
# "at most 3 lowercase tags": read as "at most 3 tags, all lowercase" (a count, and a case);
# group 1 is the number with its space (2 the number), 3 the case, 4 the unit
CASED_COUNT = (r"(?i)\b(" + NUM + r"\s+)(lowercase|uppercase)\s+(\p{L}[\p{L}\-]*)")
# A type that is a stretch of its own, between commas ("seconds to wait, an integer, only
# when …"): group 1 says ISO 8601, 2 is the type
TYPE_APART = r"(?i),\s*(?:a|an)\s+" + WRITTEN_TYPE + r"\s*(?:,|;|\.?$)"
# "a top-10 list": ten items
TOP_N_LIST = r"(?i)\btop[\s\-](\d+)\s+(list|ranking)\b"
# "no more than a paragraph", "at most a sentence": one; not "at least a few", "up to a dozen"
BOUND_WORDS = (r"(at\s+most|no\s+more\s+than|not\s+more\s+than|up\s+to|at\s+least"
               r"|no\s+fewer\s+than|no\s+less\s+than)")
BOUND_A = r"(?i)\b" + BOUND_WORDS + r"\s+an?\s+(\p{L}[\p{L}\-]*)"
BOUND_A_KEPT = (r"(?i)\b" + BOUND_WORDS + r"\s+one\s+(few|couple|handful|dozen|single|minimum"
                r"|maximum|total|bit|lot|little|number|score|rating|value|range)\b")
# The words of a one-sided bound, by kind: lo (≥), hi (≤), above (>) and below (<); the
# bounds that include their number are tried first ("no more than 5" is no "more than 5")
VALUE_BOUNDS = {
    "lo": r"at\s+least|(?:no|not)\s+(?:less|fewer|lower|smaller)\s+than|(?:greater|more)\s+than"
          r"\s+or\s+equal\s+to|a\s+minimum\s+of|minimum\s+of|>=|≥",
    "hi": r"at\s+most|(?:no|not)\s+(?:more|greater|higher|larger)\s+than|less\s+than\s+or\s+"
          r"equal\s+to|up\s+to|a\s+maximum\s+of|maximum\s+of|<=|≤",
    "above": r"greater\s+than|more\s+than|higher\s+than|larger\s+than|above|over|exceeding|>",
    "below": r"less\s+than|lower\s+than|smaller\s+than|below|under|<",
}
VALUE_BOUND = "|".join(VALUE_BOUNDS.values())
# ... or in parentheses closing the clause ("a duration in minutes (an integer)")
TYPE_CLOSING = r"(?i)\(\s*(?:a|an)\s+" + WRITTEN_TYPE + r"\s*\)\s*\.?\s*$"


def _sign_rewrites(types: str, integers: str, mark: str = "") -> tuple[tuple[str, str], ...]:
    """"a non-negative integer" (≥ 0), "a positive integer" (≥ 1), "a non-positive number"
    (≤ 0), "a positive number" (> 0), "a negative integer" (< 0), read as the type and its
    bound set apart ("integer, ≥ 0"), `mark` before the bound. `types` and `integers` are the
    type words (group 1), all of them and the whole-number ones."""
    return (
        (r"(?i)\bnon[\s\-]?negative\s+" + types, "${1}, " + mark + "≥ 0"),
        (r"(?i)\bnon[\s\-]?positive\s+" + types, "${1}, " + mark + "≤ 0"),
        (r"(?i)\b(?:strictly\s+)?positive\s+" + integers, "${1}, " + mark + "≥ 1"),
        (r"(?i)\b(?:strictly\s+)?positive\s+" + types, "${1}, " + mark + "> 0"),
        (r"(?i)\b(?:strictly\s+)?negative\s+" + types, "${1}, " + mark + "< 0"),
    )


SIGNED_TYPES = _sign_rewrites(r"(integer|whole\s+number|number|decimal)\b",
                              r"(integer|whole\s+number)\b")
# "a title, then 2-3 paragraphs", "a heading and then exactly 2 paragraphs": read as "followed
# by …", a length of the rest (v10 counted the title as a paragraph)
THEN_LENGTH = (r"(?i)(?:\s*[,;]\s*|\s+and\s+|\s+)then\s+((?:(?:at\s+(?:most|least)|up\s+to|no"
               r"\s+more\s+than|exactly|between)\s+)?(?:\d+|one|two|three|four|five|six|seven|eight"
               r"|nine|ten)(?:\s*(?:-|–|—|to|and)\s*(?:\d+|two|three|four|five|six|seven|eight|nine"
               r"|ten))?\s+(?:short\s+)?(?:paragraphs?|sentences?|words?|lines?)\b)")
# A length said as a count of its unit ("the word count is between 100 and 200", "a
# character count under 280", "keep the word count below 500"): read as "between 100 and 200
# words" (v10 read a bound without a unit as a range of the output's first number). Group 1
# is the unit, 2 the bound.
COUNT_BOUND = (r"(?:(?:between\s+)?\d[\d,]*\s*(?:-|–|—|to|and)\s*\d[\d,]*|(?:(?:at\s+(?:most"
               r"|least)|under|over|below|above|no\s+(?:more|fewer|less)\s+than|(?:fewer|less"
               r"|more)\s+than|up\s+to|exactly|within|not\s+exceeding|a\s+(?:maximum|minimum)"
               r"\s+of)\s+)?\d[\d,]*)")
UNIT_COUNT = (r"(?i)\b(word|character|char|sentence|paragraph|line)[\s\-]count\s+(?:is\s+|must"
              r"\s+be\s+|should\s+be\s+|stays\s+|of\s+|:\s*)?(" + COUNT_BOUND
              + r")(?:\s+(?:words?|characters?|chars?|sentences?|paragraphs?|lines?)\b)?")
# ... or as a length with its unit after "whose length is" ("a summary whose length is
# between 50 and 100 words"): read as "of between 50 and 100 words" (v10 read `length` as a
# field holding a number). Without a unit it stays a question.
LENGTH_IS = (r"(?i)\b(?:whose|its|the)\s+(?:total\s+|overall\s+)?(?:length|size)\s+(?:is\s+|must"
             r"\s+be\s+|should\s+be\s+|stays\s+)?(" + COUNT_BOUND + r"\s+(?:words?|characters?"
             r"|chars?|sentences?|paragraphs?|lines?)\b)")
# ... unless the type names something inside the output ("a number of findings", "an integer
# `count` field", "a URL per source"), is one of several ("a URL or a file path", "a date and
# time"; an alternative output such as 'or "none"' is read apart) or a format holds it
VALUE_IN_SOMETHING = (r"(?i)^\s*of\b|^\s*range\b|^\s*(?:,\s*)?or\s+[^\s\"“'`]|^\s*(?:and|&|/|-)"
                      r"\s*times?\b|`|\b(?:fields?|keys?|columns?|lists?|arrays?|tables?|objects?"
                      r"|json|yaml|csv|per|each|for\s+every)\b")
# What a value is within, the whole rest of a clause after its type: a time zone, a year, a
# domain ("an ISO 8601 timestamp in UTC", "a date in 2026", "a URL on github.com", "an email
# address at the acme.com domain"); group 1 is the preposition, 2 the zone, year or domain
WITHIN = (r"(?i)^\s*(in|on|at|from)\s+(?:the\s+)?((?-i:UTC|GMT)|\d{4}|[\p{L}\d\-]+(?:\.[\p{L}"
          r"\d\-]+)*\.\p{L}{2,})(?:\s+(?:time(?:\s*zone)?|domain|website|site))?\s*\.?\s*$")
WITHIN_KINDS = {"UTC": ["datetime", "iso_datetime", "unix_time"],
                "year": ["date", "date_only", "iso_date", "datetime", "iso_datetime",
                         "unix_time"],
                "domain": ["url", "email", "bare_email"]}
# A date or time written as a mask ("DD/MM/YYYY", "HH:MM", "DD.MM.YY HH:mm"); group 1 (a
# colon after the opening noun, "a time in HH:MM", is held as COLON then)
MASK = (r"(?-i:\b((?:YYYY|YY|MM|DD|HH|hh|mm|ss)(?:[/.:\- " + COLON + r"](?:YYYY|YY|MM|DD|HH|hh"
        r"|mm|ss)){1,5})\b)")
# "a price in the format $X.XX", "a share formatted as XX.X%": a number written so, X, x or #
# for each digit (v12 asked it). Group 1 is the mask, which needs a mark besides its digits ("$",
# ".", ",", "%"); group 2 what ends it.
MASK_WRITTEN = (r"(?:in\s+the\s+(?:format|form)(?:\s+of)?|in\s+(?:a\s+)?format|formatted\s+as"
                r"|written\s+as|as|like)")
NUMBER_MASK = (r"(?i)\b" + MASK_WRITTEN + r"\s+(?-i:((?:[$€£¥]\s?)?[Xx#][Xx#,]*(?:\.[Xx#]+)?"
               r"(?:\s?%)?))(?:\s+format)?(\s*$|\s*[,;.:)](?:\s|$)|\s+(?:and|or|but)\b)")
# A version's numbers as a mask ("X.Y.Z", "vX.Y", "N.N.N", "MAJOR.MINOR.PATCH"; "X.X" is a
# number's), read only where the output is that version: the clause names it, then how it is
# written, and nothing else ("the version number, as X.Y.Z", "the release tag, formatted as
# vX.Y"; not "a changelog with headings like vX.Y"). Group 1 is the mask. v19 read nothing in
# such a clause, and satisfied it with any text.
VERSION_MASK = r"v?X\.Y(?:\.Z)?|v?N(?:\.N){1,3}|MAJOR\.MINOR(?:\.PATCH)?"
VERSION_WRITTEN = (r"(?i)^\s*(?:(?:the|a|an|its|their)\s+)?(?:[\p{L}\-]+\s+){0,2}?(?:version|"
                   r"release|tag|semver)(?:\s+(?:number|string|tag|name|identifier))?\s*,?\s*"
                   r"\(?\s*" + MASK_WRITTEN + r"\s+(?-i:(" + VERSION_MASK + r"))(?:\s+format)?\s*"
                   r"\)?\s*\.?\s*$")
# A sub-item's value written so ("as X.Y.Z", "formatted as $X.XX", "like N.N.N.N")
SUB_ITEM_MASK = (r"(?i)\b" + MASK_WRITTEN + r"\s+(?-i:(?:" + VERSION_MASK + r")\b|[$€£¥]?[Xx#]"
                 r"[Xx#,]*[.,][Xx#]+(?:\s?%)?|[A-Z#](?:[.:\-][A-Z#]){2,}\b)")
# A mask of single capitals (or `#`) joined by dots, colons or dashes, "N.N.N.N", "X.Y.Z" where
# no reader read it: a word of the question
UNREAD_MASK = r"(?-i:\b[A-Z#](?:[.:\-][A-Z#]){2,}\b)"
# "a CSV with a header row", "a CSV file with column headers", "CSV data, including a header
# line": its first line names the columns (v12 asked it); "without a header row" stays asked
CSV_HEADER = (r"(?i)(?:,\s*)?\b(?:with|including|includes|has|having|and|plus)\s+"
              r"(?:a\s+|one\s+|the\s+)?(?:column\s+)?(?:header(?:\s+row|\s+line)?|headers"
              r"|column\s+names)\b")
NO_CSV_HEADER = (r"(?i)\b(?:without|no|not?\s+include|omit(?:s|ting)?)\s+(?:a\s+|any\s+|the\s+)?"
                 r"(?:column\s+)?headers?\b")
# "a subject line of at most 50 characters, a blank line, then a body", "a title, an empty
# line, then the text": a blank line after the first (v12 dropped it unread). Group 1 is what
# the clause keeps (the first part and its length, read later).
BLANK_AFTER_FIRST = (r"(?i)\b((?:subject|title|headline|heading|first\s+line|summary\s+line)"
                     r"(?:\s+line)?(?:\s+(?:of|with|under|below|at\s+most|no\s+more\s+than|up\s+to)"
                     r"\s+[^,;.\n]{0,50}?)?)(?:\s*,\s*|\s+)(?:then\s+|followed\s+by\s+|and\s+)?"
                     r"(?:(?:a|an|one)\s+)?(?:blank|empty)\s+line\b")
# A clause that opens with a time ("a time in HH:MM format", "the meeting time, as HH:MM")
TIME_VALUE = r"(?i)^\s*(?:a|an|the)\s+(?:[\p{L}\-]+\s+)?time\b"
# An output named by a date or time noun, then how it is written ("the release date in ISO 8601
# format", "the timestamp as ISO-8601", "a deadline date formatted as YYYY-MM-DD"): group 1 is
# what comes before the noun, 2 the noun, 3 the standard or its mask.
ISO_WRITTEN = (r"(?i)^(\s*(?:the|a|an|one)\s+(?:[\p{L}\-]+\s+){0,3}?)"
               r"(date|timestamp|date[\s\-]?time|time)"
               # "the date of the last deploy, as YYYY-MM-DD": of one thing (not "each", …)
               r"(?:\s+(?:of|for)\s+(?:the|a|an|this|that|its|their|our|your)\s+"
               r"(?:(?-i:[\p{L}\-]+)\s+){0,3}?(?-i:[\p{L}\-]+))?\s*,?\s+"
               r"(?:(?:is|must\s+be|should\s+be|will\s+be)\s+)?"
               r"(?:in|as|formatted\s+(?:as|in)|written\s+(?:as|in)|using|following)\s+"
               r"(?:the\s+|an?\s+)?(iso[\s\-]?8601|(?-i:YYYY-MM-DD)(?:[T ]HH[:" + COLON
               + r"]MM(?:[:" + COLON + r"]SS)?(?:Z|[+\-]HH:?MM)?)?)"
               r"(?:\s+(?:format|standard|form|notation))?(?:$|[\s.,;:])")
# ... unless something else is named before the noun ("the report with its date in ISO 8601
# format" is a report)
NOT_THE_DATE = r"(?i)\b(?:with|of|its|their|and|or|for|containing|including|each|every|per|in)\b"
# A value of so many digits ("a 6-digit verification code", "a 4-digit PIN", "a 5-digit ZIP
# code"): group 1 is what comes before the count, 2 the count, 3 the words before the noun. A
# phone number's digits come with a plus and parentheses: not read.
DIGIT_VALUE = (r"(?i)^(\s*(?:a|an|the|one)\s+)(\d{1,2}|two|three|four|five|six|seven|eight|nine"
               r"|ten|eleven|twelve)-digit\s+((?:[\p{L}\-]+\s+){0,2}?)(?:codes?|pins?|otps?"
               r"|passcodes?|numbers?|years?|ids?|identifiers?|zip(?:\s+codes?)?"
               r"|post(?:al\s+)?codes?)\b")
VALUE_TYPES = {"whole number": "integer", "integer": "integer", "number": "number",
               "decimal": "number", "boolean": "boolean", "url": "url", "date": "date",
               "timestamp": "datetime", "datetime": "datetime", "date-time": "datetime",
               "date time": "datetime",
               "uuid": "uuid", "email address": "email", "e-mail address": "email",
               "percentage": "percentage"}
ONE_PER_LINE = (r"(?i)\b(?:one|each)\s+(?:" + LETTERS + r"\s+)?(?:per|on\s+(?:a|its\s+own|a\s+"
                r"separate|a\s+new))\s+line\b|\bnewline[\s\-](?:separated|delimited)\b"
                r"|\bline\s+by\s+line\b")
# "exactly the keys `a` and `b`", "only these fields:", "no other columns": the named fields
# and nothing else
ONLY_FIELDS = (r"(?i)\b(?:exactly|only)\s+(?:the\s+|these\s+|those\s+)?(?:fields?|keys?|columns?"
               r"|properties)\b|\bno\s+other\s+(?:fields?|keys?|columns?|properties)\b")
# A precision no check reads ("rounded to 2 decimals"): left to judgment, never dropped or
# miscounted.
DECIMALS = (r"(?i)(?:\b(?:(?:rounded\s+)?to|with|of|in|has|having)\s+)?(?:(?:exactly|at\s+most"
            r"|at\s+least|up\s+to|no\s+more\s+than|not\s+more\s+than)\s+)?\b(?:\d+|one|two"
            r"|three|four)\s+decimal(?:s|\s+places?|\s+digits?)?\b")
# "mentions at least one of "low", "medium" or "high"": a mention, no value of the output
AT_LEAST_ONE_OF = r"(?i)\bat\s+least\s+one\s+of\s*:?\s*" + QUOTED_LIST
# Headings of one level ("at least 3 H2 sections", "exactly one H1 heading"): the level is
# spelled into the unit ("level-two-sections", see LEVEL_WORDS) so the count forms read it
# as one word
LEVELED_HEADINGS = r"(?i)\bH([1-6])\s+(sections?|headings?|headers?)\b"
# Fenced blocks counted ("exactly 2 code blocks", "at most one fenced code snippet"): one word,
# "codeblock(s)", for the count patterns ("code" and "fenced" are no units alone); `_restore`
# writes it back as "code block(s)"
CODE_BLOCK_WORDS = (r"\b(?:fenced\s+)?(?:code[\s\-]+(?:block|snippet|fence|listing|example|sample)"
                    r"|fenced\s+block)(s?)\b")
CODE_BLOCKS = r"(?i)" + CODE_BLOCK_WORDS
COUNTED_CODE_BLOCKS = (r"(?i)\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|single)\s+"
                       + CODE_BLOCK_WORDS)
# "no more than 2 exclamation marks": one word for the count patterns
EXCLAMATION_MARKS = r"(?i)\bexclamation[\s\-]+(?:mark|point)(s?)\b"
# ... with an upper bound only: the output may have none ("at most one code block"), so no
# fenced block is required where the clause names them only there
AT_MOST_CODE_BLOCKS = (r"(?i)\b(?:at\s+most|no\s+more\s+than|not\s+more\s+than|up\s+to|"
                       r"a\s+maximum\s+of|maximum\s+of|max\.?)\s+(?:\d+|one|two|three|four|five"
                       r"|a\s+single|single)\s+" + CODE_BLOCK_WORDS)
# Languages a fenced block is tagged with, by the name the clause gives them: the tags an
# output's fence may carry for each (its info string's first word, without case)
FENCE_LANGUAGES = {
    "python": ("python", "py", "python3"), "sql": ("sql", "postgresql", "mysql", "sqlite"),
    "bash": ("bash", "sh", "shell", "zsh", "console"), "json": ("json", "jsonc", "json5"),
    "yaml": ("yaml", "yml"), "diff": ("diff", "patch"), "javascript": ("javascript", "js"),
    "typescript": ("typescript", "ts"), "go": ("go", "golang"), "rust": ("rust", "rs"),
    "java": ("java",), "ruby": ("ruby", "rb"), "html": ("html",), "css": ("css",),
    "toml": ("toml",), "xml": ("xml",), "csv": ("csv",), "markdown": ("markdown", "md"),
    "kotlin": ("kotlin", "kt"), "swift": ("swift",), "php": ("php",), "dockerfile":
    ("dockerfile", "docker"), "hcl": ("hcl", "terraform", "tf"), "graphql": ("graphql", "gql"),
}
FENCE_ALIASES = {tag: name for name, tags in FENCE_LANGUAGES.items() for tag in tags}
# "inside a ```diff code block", "a ```python fenced block": a fence with its tag, inline (a
# fence opening a line of the clause starts an example, taken out before anything is read)
INLINE_FENCE_TAG = r"(?:```|~~~)[ \t]*([A-Za-z][\w+\-.#]*)"
# "a Python code block", "a fenced SQL block", "a bash code snippet": a language's name before
# what names a fenced block
NAMED_FENCE = (r"(?i)\b(" + "|".join(sorted(FENCE_ALIASES, key=len, reverse=True))
               + r")\s+(?:(?:fenced\s+)?code[\s\-]+(?:blocks?|snippets?|fences?)"
               r"|fenced\s+blocks?)\b")
EACH_INSIDE = r"(?i)\beach\s+(?:with|has|having|containing|including)\b|\barray\s+of\s+objects\b"
# The output goes on after what the clause opens with ("…, followed by one sentence", ", then
# the answer", "approve or reject, with a one-sentence reason").
CONTINUES = (r"(?i)\bfollowed\s+by\b|,\s*then\b|,\s*(?:with|plus|and)\s+(?:a|an|the|its|one)"
             r"\b")
INLINE_LIST = (r"(?i)\b(?:comma|semicolon)[\s\-](?:separated|delimited)\s+"
               r"(?:list|string|line|set)\b|\b(?:separated|delimited)\s+by\s+(?:commas|semicolons)\b")
# What a backticked name before it is ("a `status` key"), and a section's capitalised title.
FIELD_NOUN = r"(?:fields?|keys?|columns?|properties|property|attributes?|arrays?|lists?|objects?)\b"
# "a ## Summary section": group 1 is the heading as written
# A count tied to one named section of the output: 'a "Risks" section with at least 3 bullet
# points', 'a `## Sources` section listing 5+ distinct URLs' (SECTION_AFTER: the name is one of
# groups 1-4, quoted, backticked or capitalised, the count in the stretch of group 5), 'at
# least 3 items under the "Risks" heading' (SECTION_BEFORE: the stretch is group 1, the name
# one of groups 2-5). A stretch ends at a comma, a semicolon or a sentence's end.
SECTION_NAME = (r"(?:\"([^\"\n]{1,60})\"|“([^”\n]{1,60})”|`(?:#{1,6}\s*)?([^`\n]{1,60})`"
                r"|(?-i:(\p{Lu}[\p{L}\-]*(?:\s+\p{Lu}[\p{L}\-]*){0,2})))\s+(?:section|heading)s?\b")
SECTION_AFTER = (r"(?i)" + SECTION_NAME + r"\s+(?:that\s+|which\s+)?(?:with|listing|lists?|of"
                 r"|containing|contains|has|having|holding|holds|citing|cites|giving|gives|naming"
                 r"|names)\s+([^,;\n]{1,80}?)(?:[,;\n]|\.(?:\s|$)|$)")
SECTION_BEFORE = (r"(?i)(?:^|[,;:]\s*)([^,;:\n]{1,80}?)\s+(?:under|in|within|below)\s+(?:a|an"
                  r"|the|its|their)\s+" + SECTION_NAME)
HASHED_SECTION = (r"(?i)\b(?:a|an|the)\s+(#{1,6}\s+\p{L}[\p{L}\p{N} \-]{0,40}?)\s+"
                  r"(?:section|heading|header)\b")
TITLE = r"(?-i:\p{Lu}[\w\-]*(?:\s+\p{Lu}[\w\-]*)*)"
# ... or in sentence case ("Next steps", "Open questions"), where a comma, "and" or a closing
# mark ends it (shortest first: "Details and Next steps" is two names)
TITLE_CASED = r"(?-i:\p{Lu}[\w\-]*(?:\s+[\w\-]+){0,3}?)"
# An invisible separator put before a word to shield it from a pattern that would take it
# (Rust regex has no lookahead to exclude the word); the counts take it out of the text.
SHIELD = "\u2063"
# "and" before a bound ("columns a, b and at least 4 rows"): the bound is shielded (SHIELD
# after the "and") from the list of bare names, which would end on its first word
AND_A_BOUND = (r"(?i)(\b(?:columns?|fields?|keys?)\s[^.;:\n]*?\s(?:and|&)\s+)((?:at\s+(?:least|"
               r"most)|(?:no|not)\s+(?:more|fewer|less)|(?:more|fewer|less)\s+than|exactly|"
               r"between|up\s+to|over|under|only)\b)")
# A name and up to two more words ("evidence url").
NAME_PHRASE = IDENT + r"(?:\s+(?-i:[\w\-]+)){0,2}"
# A key's name in backticks: a word ("id", "_id", "$schema", "@type", "meta.version")
KEY_TICKED = r"`(?-i:[\p{L}_$@][\w\-.$@]*)`"
# "with fields `a`, `b`", "columns `claim`, `problem`, `severity`"
FIELD_LIST = (r"\b(?:fields?|keys?|columns?|properties|attributes|headers?|sections?|headings?)\s*"
              r"(?::|named|called)?\s*" + TICKED + r"(?:\s*(?:,|and|&|or)?\s*(?:and\s+)?" + TICKED
              + ")*")
# (kind, pattern): how the names are taken out of the match (see `_fields`)
FIELD_FORMS = [
    ("ticked", r"(?i)" + FIELD_LIST),
    # 'sections "Features", "Fixes" and "Known issues"': quoted names of sections or headings;
    # 'with keys "name" and "age"': of keys, fields or columns
    ("quoted", r"(?i)\b(?:sections?|headings?|headers?|keys?|fields?|columns?|properties)\s*"
     r"(?::|named|called|titled)?\s*"
     + QUOTED + r"(?:\s*,?\s*(?:(?:and|&)\s*)?" + QUOTED + ")*"),
    # '"Added", "Changed" and "Fixed" headings': two quoted names or more, then the noun
    ("quoted", r"(?i)" + QUOTED + r"(?:\s*,?\s*(?:(?:and|&)\s*)?" + QUOTED + r")+\s*"
     r"(?:sections?|headings?|headers?|keys?|fields?|columns?|properties)\b"),
    # "each with `claim`, `status` and `evidence_url`"
    ("ticked", r"(?i)\b(?:containing|contains|with|has|having|including|includes)\s*:?\s*"
     + TICKED + r"(?:\s*,\s*" + TICKED + r")*\s*,?\s*(?:and|&)\s*" + TICKED),
    # "the columns Name, Role and Email", "with columns date and amount"
    ("bare", r"(?i)\b(?:columns?|fields?|keys?)\s+(?:named\s+|called\s+)?" + IDENT
     + r"(?:\s*,\s*" + IDENT + r")*\s*,?\s*(?:and|&)\s+" + IDENT + r"\b"),
    # "with columns region, revenue, units and at least 4 rows": the names before the bound
    # "and" goes on to (shielded, see `_fields`; v18 read a column `at`, and "4 rows")
    ("bare", r"(?i)\b(?:columns?|fields?|keys?)\s+(?:named\s+|called\s+)?" + IDENT
     + r"(?:\s*,\s*" + IDENT + r")*\s*,?\s*(?:and|&)\s+" + SHIELD),
    # "with columns id, name, email" (three names or more, the part's last words)
    ("bare", r"(?i)\b(?:columns?|fields?|keys?|headers?)\s+(?:named\s+|called\s+)?" + IDENT
     + r"(?:\s*,\s*" + IDENT + r"){2,}\s*(?:[.;)]\s*)?$"),
    # "containing: a, b and c", "each has: x, y"
    ("after_colon", r"(?i)\b(?:containing|contains|with|has|having|including|includes|fields"
     r"|columns|keys)\s*:\s*" + NAME_PHRASE + r"(?:\s*,\s*" + NAME_PHRASE + r")*"
     r"(?:\s*,?\s*(?:and|&)\s+" + NAME_PHRASE + ")?"),
    # "valid JSON with a `status` key", "with an `id` field and a `title` field", "containing
    # the `claims` and `sources` keys"
    ("ticked", r"(?i)\b(?:with|has|have|having|includes?|including|contains?|containing)\s+"
     r"(?:(?:a|an|the)\s+)?(?:top[\s\-]level\s+)?" + TICKED
     + r"(?:\s*(?:,|and|&)\s*(?:and\s+)?(?:(?:a|an|the)\s+)?"
     + TICKED + r")*\s+" + FIELD_NOUN + r"(?:\s*,?\s*(?:and|&)\s+(?:a|an|the)\s+" + TICKED
     + r"\s+" + FIELD_NOUN + r")*"),
    # "a report with sections Summary, Findings and Known Issues": capitalised names
    # ("Next steps" in sentence case where a mark closes it, "sections Summary and Next steps,
    # in that order", or closing the clause with a plural word, "… and Next steps"; v11 read a
    # section "Next")
    ("bare", r"(?i)\b(?:sections?|headings?|headers?)\s+(?:named\s+|called\s+|titled\s+)?"
     + TITLE_CASED + r"(?:\s*,\s*" + TITLE_CASED + r")*\s*,?\s*(?:and|&)\s+(?:" + TITLE_CASED
     + r"\s*[,.;)]|" + TITLE + r"(?:\s+(?-i:\p{Ll}[\w\-]{2,}s))?\s*$|" + TITLE + ")"),
    # ... three or more, parted by commas only, closing the clause or its sentence ("a
    # changelog with sections Added, Changed, Fixed")
    ("bare", r"(?i)\b(?:sections?|headings?|headers?)\s+(?:named\s+|called\s+|titled\s+)?"
     + TITLE_CASED + r"(?:\s*,\s*" + TITLE_CASED + r"){2,}\s*(?:$|[.;])"),
    # 'in JSON format with a "result" key', 'with a "status" field'
    ("quoted", r"(?i)\b(?:with|has|have|having|includes?|including|contains?|containing)\s+"
     r"(?:(?:a|an|the)\s+)?" + QUOTED + r"\s+" + FIELD_NOUN),
    # "a markdown report with a ## Summary section": the heading, whatever its level
    ("hashed", HASHED_SECTION),
    # "a JSON object with a `name`", "each with an `id` and a `title`": in a clause about JSON
    # only, names of keys after "with" and nothing said of them but that they are there (one
    # followed by another word, "with a `data` array", is read above; "with a `main` function"
    # is no key)
    ("ticked_json", r"(?i)\b(?:with|has|have|having|includes?|including|contains?|containing)"
     r"\s+(?:(?:a|an|the)\s+)?" + KEY_TICKED + r"(?:\s*(?:,|and|&)\s*(?:and\s+)?(?:(?:a|an|the)"
     r"\s+)?" + KEY_TICKED + r")*(?:\s*$|\s*[,;.)]|\s+(?:and|or)\b)"),
]
# A backticked field with its range in parentheses ("objects with `name` and `score` (0-100)"):
# read before the field lists take the name, which stays in the text for them.
# ... or a bare name after "where" or "whose" ("where score is between 0 and 100"); one
# pattern, so the groups are the same either way
BARE_RANGE_FIELD = (r"\b(?:where|whose)\s+(?:the\s+|each\s+|every\s+)?" + IDENT
                    + r"(?:\s+(?:column|field|value|key))?(?:\s+(?:is|are|lies|falls))?\s+")
RANGE_AFTER_FIELD = (r"\s*(?:\(\s*(?:from\s+|between\s+)?|(?:(?:is|must\s+be|of)\s+)?"
                     r"(?:between|from)\s+)"
                     r"(-?\d+(?:\.\d+)?)\s*(?:-|–|—|to|and)\s*(-?\d+(?:\.\d+)?)(?:\s*\))?")
FIELD_RANGE = r"(?i)(" + TICKED + "|" + BARE_RANGE_FIELD + ")" + RANGE_AFTER_FIELD
# the bare form leaves nothing behind (a ticked name stays for the field lists)
BARE_FIELD_RANGE = r"(?i)" + BARE_RANGE_FIELD + RANGE_AFTER_FIELD
# A backticked field with its type in parentheses ("`total` (a number)", "`at` (an ISO 8601
# date)"): group 2 says ISO 8601, 3 is the type.
FIELD_TYPE = r"(?i)(" + TICKED + r")\s*\(\s*(?:(?:a|an)\s+)?" + WRITTEN_TYPE + r"\s*\)"
# ... also written "an integer `count`", "a boolean `done` field", "`count` as an integer":
# rewritten to the form above before it is read
TYPE_BEFORE_FIELD = (r"(?i)\b(?:a|an)\s+((?:iso[\s\-]?8601\s+)?(?:" + TYPE_WORDS + r"))\s+("
                     + TICKED + r")")
# ... and "`confidence` (a number between 0 and 1)", "`score` (integer 1-5)", "`score` (an
# integer, 1 to 5)": the type and the range of the field, rewritten as "`score` (1-5), `score`
# (an integer)" (v10 bounded the output's first number, or asked)
TYPED_RANGE_FIELD = (r"(?i)(" + TICKED + r")\s*\(\s*(?:(?:a|an)\s+)?(" + TYPE_WORDS
                     + r")(?:\s*,)?\s+(?:from\s+|between\s+)?(-?\d+(?:\.\d+)?)\s*(?:-|–|—|to"
                     r"|and)\s*(-?\d+(?:\.\d+)?)\s*\)")
# ... and one-sided: "`count` (a positive integer)" (read "`count` (an integer ≥ 1)" by then),
# "`confidence` (a number above 0.5)", rewritten as "`count` (≥ 1), `count` (an integer)"; then
# FIELD_BOUND reads "`count` (≥ 1)", "`delay` (under 30)": group 2 is the bound's words, 3 its
# number (v11 bounded the output's first number)
TYPED_BOUND_FIELD = (r"(?i)(" + TICKED + r")\s*\(\s*(?:(?:a|an)\s+)?(" + TYPE_WORDS
                     + r")(?:\s*,)?\s*(" + VALUE_BOUND + r")\s*(-?\d+(?:\.\d+)?)\s*\)")
FIELD_BOUND = (r"(?i)(" + TICKED + r")\s*\(\s*(" + VALUE_BOUND + r")\s*(-?\d+(?:\.\d+)?)"
               r"(?:\s+each)?\s*\)")  # ("`counts` (at least 1 each)": of each element)
# A field's noun before its parentheses ("a `count` field (a positive integer)", "a `score` key
# (0-100)") is moved after them, so the forms above read the field (v11 read the output's first
# number, or dropped the type and the range unread)
NOUN_BEFORE_ASIDE = (r"(?i)(" + TICKED + r")\s+(field|key|column|property)\s*(\(\s*(?:(?:a|an)\s+)?"
                     r"(?:(?:iso[\s\-]?8601\s+)?(?:" + TYPE_WORDS + r")|" + VALUE_BOUND
                     + r"|(?:from\s+|between\s+)?-?\d)[^()\n]*\))")
TYPE_AFTER_FIELD = (r"(?i)(" + TICKED + r")\s+(?:as|is|must\s+be|should\s+be)\s+(?:a|an)\s+("
                    r"(?:iso[\s\-]?8601\s+)?(?:" + TYPE_WORDS + r"))\b")
# How every item or line of an output begins: 'each line starts with "TODO:"', "every item
# begins with a date", "with each bullet starting with an ISO 8601 date"; group 1 is the unit,
# 2 says ISO 8601, 3 a type (a quoted text otherwise). ITEM_END: how each ends ("3 items, each
# ending with a period", 'every line ends with ";"'); group 1 is the unit.
ITEM_START = (r"(?i)\b(?:each|every|all)\s+(?:of\s+the\s+)?(item|line|bullet|entry|entries|point"
              r"|step|finding|task|row)s?\s+(?:must\s+|should\s+|will\s+)?(?:starts?|starting"
              r"|begins?|beginning|opens?|opening|leads?|leading|(?:is\s+|are\s+)?prefixed)\s+"
              r"(?:with|by)\s+(?:" + LIT_FILLER + QUOTED + r"|(?:a|an)\s+(?:(iso[\s\-]?8601)\s+)?("
              + TYPE_WORDS + r"|emoji)\b)")
ITEM_END = (r"(?i)\b(?:each|every|all)\s+(?:of\s+the\s+)?(?:(item|line|bullet|entry|entries|point"
            r"|step|finding|task|row|sentence)s?\s+)?(?:must\s+|should\s+|will\s+)?(?:ends?|ending"
            r"|closes?|closing|finish|finishes|finishing)\s+(?:with|in)\s+(?:" + LIT_FILLER + QUOTED
            + r"|(?:a|an)\s+" + MARK_NAME + ")")
# What may follow a bare bound: the end, a mark, or a joining word (consumed: Rust regex has no
# lookahead)
BOUND_END = r"(?:\s*$|\s*[,;.:()\]]|\s+(?:and|or|but|if|when|inclusive)\b)"
RANGE_FORMS = [
    ("both", r"(?i)(?:from|between|range(?:\s+of)?|scale(?:\s+of)?|in\s+the\s+range(?:\s+of)?|"
     r"on\s+a\s+scale(?:\s+of)?|(?:score|rating|grade)\s+of)\s+(-?\d+(?:\.\d+)?)\s*(?:-|–|—|to"
     r"|and)\s*(-?\d+(?:\.\d+)?)"),
    ("both", r"(?i)" + START + r"(-?\d+(?:\.\d+)?)\s*(?:-|–|—|to)\s*(-?\d+(?:\.\d+)?)\s*"
     r"(?:score|rating|scale|range|%|percent)"),
    # "a confidence score (0-100)": the range in parentheses after what it bounds
    ("both", r"(?i)\b(?:score|rating|confidence|probability|likelihood|percentage|grade)\b"
     r"[^()\n.;:]{0,20}?\(\s*(?:from\s+)?(-?\d+(?:\.\d+)?)\s*(?:-|–|—|to)\s*(-?\d+(?:\.\d+)?)"
     r"\s*\)"),
    # "a score out of 10", "a rating out of 5": from 0 to that number
    ("zero_to", r"(?i)\b(?:score|rating|grade|mark)s?\s+(?:\p{L}+\s+)?out\s+of\s+(\d+(?:\.\d+)?)()"
     + BOUND_END),
    # a bare bound ("`checked`: at least 3", "an integer ≥ 0", "a confidence above 0.5"), not
    # one of a thing no count reads ("at least 2 code examples", "at least 3 days of data")
    *((kind, r"(?i)(?:" + VALUE_BOUNDS[kind] + r")\s*(-?\d+(?:\.\d+)?)()" + BOUND_END)
      for kind in VALUE_BOUNDS),
]
# Words after which "addresses" is the verb (a quality word), not the noun ("email addresses")
VERB_BEFORE = r"(?:that|which|it|and|must|should|also|fully|directly|clearly)"
JUDGMENT_WORDS = (
    r"(?i)\b(?:critically\s+(?:evaluated|examined|assessed|reviewed|analy[sz]ed)"
    r"|well[\s\-](?:sourced|written|structured|reasoned|organi[sz]ed|argued|researched|"
    r"supported)|concise(?:ly)?|clear(?:ly)?|accurate(?:ly)?|comprehensive(?:ly)?|"
    r"thorough(?:ly)?|insightful|balanced|objective(?:ly)?|rigorous(?:ly)?|persuasive|coherent"
    r"|readable|engaging|professional|polished|detailed|in[\s\-]depth|nuanced|relevant|"
    r"actionable|specific|credible|reliable|trustworthy|faithful(?:ly)?|high[\s\-]quality|"
    r"preserv(?:e|es|ing)\s+(?:the\s+|all\s+)?key\s+\w+|key\s+(?:claims|points|findings)|"
    r"summari[sz](?:e|es|ing|ed)|explain(?:s|ing|ed)?|justif(?:y|ies|ying|ied|ication)|"
    r"answer(?:s|ing)?\s+the\s+question|correct(?:ly)?|consistent|grounded|"
    # "addresses" the verb, after the clause's start or a word a verb follows, not the noun
    # ("3 email addresses, one per line", "PII such as email addresses": v20 judged them)
    r"(?:^\s*|\b" + VERB_BEFORE + r"\s+)address(?:es|ing)?\b|"
    r"evidence[\s\-]based|plausible|friendly|polite|empathetic|customer[\s\-]facing|neutral|"
    r"unbiased|fair|short|simple|informative|complete|ready\s+to\s+send|appropriate(?:ly)?"
    r"|useful|helpful"
    # the language of a text: "the translated text, in French", "written in plain English"
    r"|in\s+(?:plain\s+|simple\s+|formal\s+|informal\s+|british\s+|american\s+)?(?:english|"
    r"french|german|spanish|italian|portuguese|dutch|polish|swedish|danish|norwegian|finnish"
    r"|greek|czech|ukrainian|russian|turkish|arabic|hebrew|hindi|japanese|chinese|mandarin"
    r"|korean|vietnamese|thai|indonesian))\b"
)
# An element the output must hold, named by its tag: "wrapped in <answer></answer> tags",
# "enclosed in `<final>` tags", "between <answer> and </answer>", "inside <answer>...</answer>".
# Group 1 is the tag's name (letters, digits, "_" and "-": never a regex metacharacter).
TAG_NAME = r"<([A-Za-z][A-Za-z0-9_\-]*)>"
_TAG_OPEN = (r"(?:\s+(?:in|by|with|inside|within|between))?\s+(?:(?:an?|the|a\s+pair\s+of|xml|html)"
             r"\s+)*[`\"“']?" + TAG_NAME + r"[`\"”']?")
_TAG_CLOSE = r"\s*(?:\.{3}|…|and)?\s*[`\"“']?</[A-Za-z][A-Za-z0-9_\-]*>[`\"”']?"
_TAG_WORD = r"\s+(?:xml\s+|html\s+)?(?:tags?|elements?|blocks?)"
# "wrapped in <answer>" says tags by itself; "in <name>" only with its closing tag or the word
# "tags" ("in <type>: <subject> form" holds a placeholder, no element)
TAGGED_BODY = (r"(?:(?:wrapped|enclosed|surrounded|delimited|between)" + _TAG_OPEN + "(?:"
               + _TAG_CLOSE + ")?(?:" + _TAG_WORD + ")?|(?:inside|within|in|placed|put)"
               + _TAG_OPEN + "(?:" + _TAG_CLOSE + "(?:" + _TAG_WORD + ")?|" + _TAG_WORD + "))")
TAGGED = r"(?i)\b" + TAGGED_BODY
# An order the output's items or values keep: "sorted alphabetically", "in alphabetical
# order", "sorted by `score`, highest first", "ranked by score descending", "in descending
# order of score". `orders` holds the field (normalised, null for the items themselves), the
# direction (asc, desc, or any when none is said) and whether text may be compared
# alphabetically (only when the clause says so: "sorted by severity" orders high, medium,
# low, which no comparison of the words reads).
ORDER_ASC = (r"ascending|increasing|lowest\s+first|smallest\s+first|oldest\s+first|earliest"
             r"\s+first|(?:from\s+)?low(?:est)?\s+to\s+high(?:est)?|(?:from\s+)?a\s+to\s+z|a-z")
ORDER_DESC = (r"descending|decreasing|highest\s+first|largest\s+first|biggest\s+first|newest"
              r"\s+first|most\s+recent\s+first|latest\s+first|(?:from\s+)?high(?:est)?\s+to\s+"
              r"low(?:est)?|(?:from\s+)?z\s+to\s+a|z-a|reverse\s+alphabetical(?:ly)?")
ALPHABETICAL = r"alphabetical(?:ly)?|in\s+alphabetical\s+order"
ORDER_FIELD = (r"(?:the\s+|their\s+|its\s+)?(" + TICKED + r"|[\"“][^\"”\n]{1,40}[\"”]|" + IDENT
               + r")(?:\s+(?:column|field|key|values?))?")
ORDER_DIRECTION = (r"(?:\s*,?\s*(?:in\s+|and\s+)?(?:" + ORDER_ASC + "|" + ORDER_DESC + "|"
                   + ALPHABETICAL + r")(?:\s+order)?)?")
ORDER = (r"(?i)\b(?:(?:sorted|ordered|ranked|arranged)\s+(?:"
         # "sorted by score, highest first"; "sorted alphabetically by name"
         r"(?:(?:" + ALPHABETICAL + "|" + ORDER_ASC + "|" + ORDER_DESC + r")\s+)?by\s+"
         + ORDER_FIELD + ORDER_DIRECTION
         # "sorted alphabetically", "ordered from A to Z"
         + r"|(?:" + ALPHABETICAL + "|" + ORDER_ASC + "|" + ORDER_DESC + r")(?:\s+order)?)"
         # "in descending order of score", "in alphabetical order"
         + r"|in\s+(?:" + ORDER_ASC + "|" + ORDER_DESC + r"|(?:reverse\s+)?alphabetical)\s+order"
         r"(?:\s+(?:of|by)\s+" + ORDER_FIELD + ")?"
         # "an alphabetical list", "alphabetically sorted"
         + r"|alphabetical(?:ly\s+(?:sorted|ordered)|\s+list)\b"
         # by date: "in chronological order", "reverse chronologically", "newest first"
         + r"|in\s+(?:reverse\s+)?chronological\s+order|(?:reverse[\s\-]+)?chronologically"
         + r"|(?:newest|oldest|most\s+recent|earliest)\s+first)")
# The case of every letter of the output: "all lowercase", "in uppercase", "ALL CAPS",
# "lowercase only", "no uppercase letters" (of the whole output: a sub-item's is asked).
LETTER_CASE = (r"(?i)(?:\b(?:(?:all|entirely|only|written|in|using|use|uses)\s+(?:in\s+)?"
               r"(?:(?:lower|upper)[\s\-]?case|caps|capitals|capital\s+letters)(?:\s+(?:letters"
               r"|only))?|(?:lower|upper)[\s\-]?case\s+only|all[\s\-]caps|no\s+(?:upper|lower)"
               r"[\s\-]?case(?:\s+letters)?|no\s+capital\s+letters)\b"
               # ... or the word alone closing the clause ('"yes" or "no", lowercase'; v10
               # dropped it unread)
               r"|\b(?:lower|upper)[\s\-]?case\s*[.;]?\s*$)")
# Words naming something inside an output, whose case a clause may state ("keys in
# lowercase"): the case is then not the whole output's
CASE_OF_PARTS = (r"(?i)\b(?:names?|keys?|headings?|headers?|titles?|fields?|columns?|labels?|ids?"
                 r"|identifiers?|tags?|values?|words?|letters?|acronyms?|sections?|items?|entries"
                 r"|codes?|initials?|abbreviations?)\b")
# Judgment words a sub-item uses to say what its field holds, not how good it is.
SUB_ITEM_NOT_JUDGED = (r"^(?:summari[sz]|explain|justif|answer|address|preserv|key\s|complete$"
                       r")")
# How a field's values begin or end ("every `url` starts with "https://"", "whose `id` begins
# with "T-""): no check reads it per field, so it is asked (v10 held the whole output to it)
FIELD_EDGE = (r"(?i)" + TICKED + r"(?:\s+(?:field|key|value|column|property|entry)s?)?\s+(?:(?:must"
              r"|should|will|always|all)\s+)*(?:" + STARTS + "|" + ENDS + r"|lead|leads|leading"
              r"|(?:is\s+|are\s+)?prefixed|(?:is\s+|are\s+)?suffixed)\s+(?:with|by|in)\s+"
              + LIT_FILLER + QUOTED)
# How a line of the output begins ("the final answer on its own line, prefixed with
# "Answer:"", "on a separate line starting with "Total""): no check reads which line, so it is
# asked (v10 held the output's start to it)
OWN_LINE_EDGE = (r"(?i)\bon\s+(?:its|their|a|one)\s+(?:own|separate|single)\s+line\b"
                 r"(?-i:[^\"“‘`'\n]){0,30}?(?:" + STARTS + r"|prefixed|leads|leading)\s+(?:with|by)"
                 r"\s+" + LIT_FILLER + QUOTED)
# A requirement stated in the negative that no check reads ('does not start with "Untitled"',
# 'must not be "failed" or "error"', 'not one of "a", "b"'): hidden from the readers of
# literals and enumerations, which would read the opposite, and left to the judgment question.
NEGATED = (r"(?i)(?:\bnot|\bnever|n't)\s+(?:(?:be|is|are|start|begin|end|open|close|finish|"
           r"lead|equal|match|read)\w*\s+)?(?:(?:with|by|as|to|one\s+of|any\s+of|either|"
           r"exactly)\s+)?" + LIT_FILLER + QUOTED_LIST
           # "without the field `debug`", "no columns `a`, `b`": not fields to require
           + r"|(?i)(?:\bwithout|\bnot|\bnever|n't|\bno)\s+(?:(?:a|an|the|any)\s+)?" + FIELD_LIST
           # "not ending with a period", "doesn't end in .tmp": no mark or extension to require
           + r"|(?i)(?:\bnot|\bnever|n't|\bwithout)\s+(?:" + ENDS + r")\s+(?:with|in)\s+(?:(?:a\s+|"
           r"an\s+)?" + MARK_NAME + "|" + FILE_EXTENSION + ")"
           # "not wrapped in <answer> tags": no element to require
           + r"|(?i)(?:\bnot|\bnever|n't)\s+(?:be\s+)?" + TAGGED_BODY
           # "no sentence longer than 25 words": no check counts words per sentence
           + r"|(?i)\bno\s+sentences?\s+(?:(?:is|may\s+be|should\s+be)\s+)?(?:longer\s+than|more"
           r"\s+than|over|above|exceeds?|exceeding)\s+\d+\s+\p{L}+"
           # "not a link": no URL to require
           + r"|(?i)(?:\bnot|\bnever|n't)\s+(?:be\s+)?(?:a|an)\s+(?:link|hyperlink)\b"
           # "not all caps", "never in uppercase": no case to require
           + r"|(?i)(?:\bnot|\bnever|n't)\s+(?:(?:be|written|in|all|entirely|only|use|using)\s+)"
           r"{0,3}(?:(?:lower|upper)[\s\-]?case|caps|capitals|capital\s+letters)\b")
# A choice of phrases to begin or end with ('begins with either "Yes" or "No"', 'starts with
# "Hi" or "Hello"'): no check reads
# it (a literal holds one phrase), and the enumeration reader would hold the whole output to
# the phrases; left to judgment like a negation.
PHRASE_CHOICE = (r"(?i)\b(?:" + STARTS + "|" + ENDS + r")\s+with\s+(?:(?:either|(?:exactly\s+)?"
                 r"one\s+of|any\s+of)\s*:?\s*" + QUOTED_LIST + "|" + LIT_FILLER + QUOTED_OR + ")")
# ... and a choice of phrases to mention ('mentions either "Monday" or "Tuesday"', 'includes
# one of "a", "b"'): a literal check holds one phrase, the enum reader the whole output
MENTION_CHOICE = (r"(?i)\b(?:mentions?|mentioning|contains?|containing|includes?|including"
                  r"|cites?|citing|names?|naming|uses?|using|refers?\s+to|referring\s+to)\s+"
                  r"(?:(?:either|(?:exactly\s+)?one\s+of|any\s+of)\s*:?\s*" + QUOTED_LIST + "|"
                  + LIT_FILLER + QUOTED_OR + ")")
# A format the clause rules out ("plain text, not JSON", "no bullet points", "without a
# table", "prose rather than a table"): taken before the format reader runs, an excluded
# format (checked by `excluded_format`), not a format to require.
NEGATED_FORMAT = (r"(?i)(?:\bnot|\bnever|n't|\bno|\bwithout|\brather\s+than|\binstead\s+of)\s+"
                  r"(?:[\p{L}\-]+\s+){0,3}?(?:"
                  + "|".join(f"(?:{pattern})" for _, pattern in FORMAT_FORMS) + ")")
BOUND_NOT = r"(?i)\b(no|not)\s+(more|fewer|less|longer|shorter|over|under)\b"
JOIN = "\ue005"
# What stands in for a hidden phrase while the readers run (`_hide`, `_restore`); for one
# that looks like a count but is none, while the count readers run (NOT_COUNTS).
HIDDEN = "\ue001"
NOT_COUNTED = "\ue009"
# ... for what no reader reads but looks like what they do, from the start: a format whose
# name holds one they read ("JSON Lines", "an HTML table"), where a list's numbers start, the
# order of two named sections
# A bound of each of several numbers: "each between 0 and 1", "every value at least 0". Group
# 1 is the bound, group 2 what ends it.
EACH_BOUND = (r"(?i)\b(?:each|every|all)(?:\s+(?:one|value|number|element|item|entry|score)s?)?"
              r"\s+(?:(?:is|are|must\s+be|should\s+be|lies|lie|falls?)\s+)?((?:between|from)"
              r"\s+-?\d+(?:\.\d+)?\s*(?:-|–|—|to|and)\s*-?\d+(?:\.\d+)?|(?:" + VALUE_BOUND
              + r")\s*-?\d+(?:\.\d+)?)(\s*$|\s*[,;.:()\]]|\s+(?:inclusive|and|or|but)\b)")
# ... of a named field's elements: "a `scores` array, each between 0 and 1", "whose `scores`
# are each at least 0", "a `weights` list of numbers between 0 and 1": read as "`scores`
# between 0 and 1" and "`scores` (at least 0 each)", a range or bound of the field's values,
# its array's elements, not of its length (v22 asked the first two, and bounded the output's
# first number by the third)
FIELD_NUMBERS = (r"\s+of\s+(?:numbers|integers|whole\s+numbers|decimals|floats|scores|values"
                 r"|ratings|probabilities|weights)\b")
# (what may stand between a named field and what is said of each of its elements: "`scores`
# array of numbers, with", "`counts` are")
ARRAY_NOUN = r"(?:\s+(?:array|list|field))?"
ARRAY_OF = r"(?:\s+of\s+[\p{L}\-]+)?"
EACH_LINK = r"\s*,?\s*(?:(?:with|where|and|are|must\s+be|should\s+be)\s+)?"
FIELD_EACH = (r"(?i)(" + TICKED + ")" + ARRAY_NOUN + "(?:" + FIELD_NUMBERS + ")?" + EACH_LINK
              + r"(?:each|every|all)(?:\s+(?:one|value|number|element|item|entry|score)s?)?\s+"
              r"(?:(?:is|are|must\s+be|should\s+be|lies|lie|falls?)\s+)?")
FIELD_OF_NUMBERS = r"(?i)(" + TICKED + r")\s+(?:array|list)" + FIELD_NUMBERS + r"\s+"
BETWEEN_NUMBERS = (r"(?:between|from)\s+(-?\d+(?:\.\d+)?)\s*(?:-|–|—|to|and)\s*"
                   r"(-?\d+(?:\.\d+)?)")
ONE_BOUND = r"((?:" + VALUE_BOUND + r")\s*-?\d+(?:\.\d+)?)(\s*$|\s*[,;.:()\]]|\s+(?:and|or|but)\b)"
# ... and a sign of its elements' type ("a `counts` array of positive integers": "`counts`
# (≥ 1 each) array"; v22 asked it)
_NUMBERS = r"(?:numbers|decimals|floats)\b"
_INTEGERS = r"(?:integers|whole\s+numbers)\b"
FIELD_SIGNS = ((r"non[\s\-]?negative\s+(?:" + _INTEGERS + "|" + _NUMBERS + ")", "≥ 0"),
               (r"non[\s\-]?positive\s+(?:" + _INTEGERS + "|" + _NUMBERS + ")", "≤ 0"),
               (r"(?:strictly\s+)?positive\s+" + _INTEGERS, "≥ 1"),
               (r"(?:strictly\s+)?positive\s+" + _NUMBERS, "> 0"),
               (r"(?:strictly\s+)?negative\s+(?:" + _INTEGERS + "|" + _NUMBERS + ")", "< 0"))
# ... and "none above 3", "none below 0" ("a `retries` list of integers, none above 3": "`retries`
# (at most 3 each)"; v22 bounded the output's first number)
FIELD_NONE = (r"(?i)(" + TICKED + ")" + ARRAY_NOUN + ARRAY_OF + r"\s*,?\s*"
              r"(?:with\s+|and\s+)?none\s+(?:of\s+them\s+)?(?:is\s+|are\s+)?")
NONE_BOUNDS = ((r"(?:above|over|greater\s+than|more\s+than|higher\s+than|exceeding)", "at most"),
               (r"(?:below|under|less\s+than|lower\s+than|smaller\s+than)", "at least"))
FIELD_ELEMENT_REWRITES = (
    *((start + bound, replacement) for start in (FIELD_EACH, FIELD_OF_NUMBERS)
      for bound, replacement in ((BETWEEN_NUMBERS, "${1} between ${2} and ${3}"),
                                 (ONE_BOUND, "${1} (${2} each)${3}"))),
    *((r"(?i)(" + TICKED + r")\s+(array|list)\s+of\s+" + sign, "${1} (" + bound + " each) ${2}")
      for sign, bound in FIELD_SIGNS),
    *((FIELD_NONE + words + r"\s*(-?\d+(?:\.\d+)?)(\s*$|\s*[,;.:()\]]|\s+(?:and|or|but)\b)",
       "${1} (" + bound + " ${2} each)${3}") for words, bound in NONE_BOUNDS))
# In a clause about a JSON array, such a bound, or a sign said of its elements' type ("a JSON
# array of at most 3 positive integers"), bounds each element: the bound is marked with
# ELEMENTS, which the range readers take with it (a range of the field "[]", each element of
# the output's array; v12 asked the first, and read "positive" as the unit of the count)
ELEMENTS = "\ue010"
JSON_ARRAY = r"(?i)\bjson\s+(?:array|list)\b"
ELEMENT_REWRITES = (
    (EACH_BOUND, ELEMENTS + "${1}${2}"),
    *_sign_rewrites(r"(integers|whole\s+numbers|numbers|decimals)\b",
                    r"(integers|whole\s+numbers)\b", ELEMENTS),
)
UNREAD = "\ue00c"
# A phrase that forbids, up to the exception it makes or the part it is about: 'never
# mentions "Northwind" unless the ticket does', "does not name other customers, such as
# Contoso, except …", 'never names "Acme" in its first sentence', "whose subject line does
# not mention competitors (e.g. Zendesk)": asked whole, the output searched through by no
# detector
EXCEPTION = (r"\b(?:unless|except|excepting|other\s+than|apart\s+from|save\s+for)\b"
             r"|\b(?:in|within)\s+(?:its|the)\s+(?:first|last|opening|closing|final)\b")
SCOPED_NEGATION = (r"\bwhose\s+(?:[\p{L}\-`_]+\s+){1,3}?(?:does\s+not|doesn't|do\s+not|never"
                   r"|must\s+not|should\s+not)\b")
EXCEPTED = (r"(?i)\b(?:" + FORBIDDING + r"|avoids?|avoiding)\s+[^.;\n]*?(?:" + EXCEPTION
            + r")[^.;\n]*|(?i)" + SCOPED_NEGATION + r"[^.;\n]*")
UNREAD_PHRASES = (r"(?i)\b(?:json[\s\-]?lines|jsonl|ndjson|newline[\s\-]delimited\s+json|html"
                  r"\s+tables?)\b(?:\s+(?:file|document|output|stream|format))?(?:\s*\([^()\n]*\))?"
                  r"|(?i)\b(?:starting|beginning|numbered)\s+(?:at|from|with)\s+\d+\b"
                  # the order of two sections ('an "Impact" section before the "Timeline" one')
                  r"|(?i)(?:an?\s+|the\s+)?" + QUOTED + r"\s*(?:section|heading)s?\s+(?:comes?\s+)?"
                  r"(?:before|after|above|below|followed\s+by)\s+(?:an?\s+|the\s+)?" + QUOTED
                  + r"(?:\s*(?:section|heading|one)s?)?"
                  # ... or of the sections the clause names ("sections A, B and C, in that
                  # order"; v11 dropped it unread)
                  r"|(?i)\bin\s+(?:that|this|the\s+same|the\s+given|the\s+listed|the\s+above)"
                  r"\s+order\b"
                  # ... or when a date or time falls ("a date in the future"; v11 dropped it)
                  r"|(?i)\b(?:in\s+the\s+(?:future|past)|(?:before|after)\s+today)\b"
                  # ... or a range of each of several numbers but a JSON array's ("a list of
                  # scores, each between 0 and 1"; v11 bounded the first number only)
                  r"|" + EACH_BOUND
                  # ... or what is forbidden save where an exception holds (v21 forbade it
                  # everywhere, and asked the exception alone)
                  + r"|" + EXCEPTED)
# Marks a restored phrase: what no reader could read always reaches the judgment question,
# whole (its commas are held as COMMA while the rest of the clause is cut into stretches).
KEPT = "\ue002"
COMMA = "\ue003"
# A parenthesised aside no reader took ("a severity (low, medium, high)") stays with the words
# before it in the judgment question: its parentheses are held as these, its commas and colons
# as COMMA and COLON.
OPEN, CLOSE = "\ue006", "\ue007"
# The period of "e.g." and "i.e." ends no sentence: held as this while stretches are cut.
ABBREVIATION_DOT = "\ue008"
OPENING_NOUN = r"(?i)^(\s*(?:a|an|the)\s+(?:" + IDENT + r"\s+){0,2}" + IDENT + r")\s*:"
# ... unless its last word opens a list of fields ("a citation containing: title, year").
LIST_CUES = ["containing", "contains", "with", "has", "having", "including", "includes",
             "field", "fields", "key", "keys", "column", "columns", "properties", "attributes",
             "header", "headers", "section", "sections", "heading", "headings"]
VAGUE_WORDS = (
    r"(?i)\b(?:good|nice|great|proper(?:ly)?|adequate(?:ly)?|reasonable|decent|solid|fine|"
    r"suitable|satisfactory|sufficient|quality|better|best|excellent|meaningful|sensible|"
    r"appropriate|useful|helpful|high[\s\-]quality|acceptable|nice-looking|perfect|"
    r"awesome|amazing)\b"
)
SECRETS = (
    r"(?i)(?:never|not|no|without|must\s+not|mustn't|doesn't|does\s+not|don't|do\s+not|free\s+"
    r"of)\b[^.;\n]{0,40}\b(?:secrets?|api[\s\-]?keys?|passwords?|credentials?|(?:access\s+|"
    r"auth(?:entication)?\s+|bearer\s+)?tokens?|private\s+keys?|access\s+keys?)\b"
)
FENCES = r"(?ms)^[ \t]*(?:```|~~~).*?(?:^[ \t]*(?:```|~~~)[^\n]*|\z)"
# A clause of one or two words after its article ("a haiku", "the final report"); group 1.
BARE_NOUN = r"(?i)^\s*(?:(?:a|an|the|one)\s+)?((?:\p{L}[\p{L}\-]*\s+)?\p{L}[\p{L}\-]*)\s*\.?\s*$"
# Nouns that name no kind of output beyond "some output" ("`out`: the result")
GENERIC_NOUNS = ["output", "result", "text", "answer", "response", "reply", "content", "value",
                 "data", "file", "document", "doc", "message", "string", "body", "artifact",
                 "artefact", "thing", "information", "info"]
# "and nothing else", "nothing else in the file": asked, but where a value is the whole output
NOTHING_ELSE = (r"(?i)\b(?:and\s+)?nothing\s+else(?:\s+(?:in|on)\s+(?:the|its)\s+(?:file|output"
                r"|response|reply|line|binding))?\b")
# Words that carry no testable property of their own once the requirements are taken out.
FILLER = (
    r"(?i)\b(?:a|an|the|of|with|and|or|in|on|at|to|for|by|from|as|is|are|be|that|which|who|"
    r"whose|where|when|it|its|their|each|every|all|any|per|one|this|these|those|has|have|"
    r"having|than|into|about|after|before|then|also|both|either|only|must|should|will|shall|"
    r"can|may|object|objects|array|arrays|elements?|list|lists|file|files|document|output|"
    r"outputs|string|"
    r"strings|value|values|item|items|entry|entries|field|fields|column|columns|row|rows|key|"
    r"keys|text|block|format|formatted|json|markdown|yaml|csv|table|tables|section|sections|"
    r"fenced|code|numbered|bulleted|bullet|points?|paragraphs?|sentences?|words?|lines?|"
    r"characters?|"
    r"phrase|exact|exactly|least|most|under|over|up|no|not|more|less|fewer|containing|contains|"
    r"contain|including|includes|include|marked|stating|states|named|called|like|e\.g|i\.e|"
    r"such|there|here|first|last|followed|beginning|begins|starting|ending|ends|optional|"
    r"single|only|string|number|numbers|integer|unified|diff)\b"
)
# Suggested rewrites per quality word (default for the rest).
JUDGMENT_ADVICE = {
    "concise": "a length, e.g. \"at most 150 words\"",
    "short": "a length, e.g. \"at most 150 words\"",
    "brief": "a length, e.g. \"at most 150 words\"",
    "well-sourced": "a count of sources, e.g. \"at least 3 distinct URLs\"",
    "critically evaluated": "what the evaluation must name, e.g. \"at least one weakness per "
                            "finding, as a bulleted list\"",
    "clear": "a structure, e.g. \"a numbered list of steps\"",
    "detailed": "a count, e.g. \"at least 5 items\"",
    "comprehensive": "required fields or sections, e.g. \"with sections `Summary`, `Risks`\"",
    "answers the question": "where the answer must appear, e.g. \"beginning with \\\"Answer:\\\"\"",
}


def _words_to_int(expr: pl.Expr) -> pl.Expr:
    low = expr.str.to_lowercase().str.strip_chars().str.replace_all(",", "", literal=True)
    return low.replace_strict(NUMBER_WORDS, default=low, return_dtype=pl.String).cast(
        pl.Int64, strict=False)


def _unquote(expr: pl.Expr) -> pl.Expr:
    """The text of a quoted literal, without its quotes or backticks."""
    return (expr.str.strip_chars().str.replace(r"^(?:\"|“|‘|«|`|')\s*", "")
            .str.replace(r"\s*(?:\"|”|’|»|`|')[\s.,;:!?)]?$", ""))


def _first_literal(expr: pl.Expr) -> pl.Expr:
    return _unquote(expr.str.extract(r"(" + QUOTED_ONLY + r")", 1))


def normalise_key(expr: pl.Expr) -> pl.Expr:
    """Field names compare without case, markdown emphasis or backticks; `_`, `-`, ` ` alike."""
    return (expr.str.strip_chars().str.strip_chars("`*_\"'“”").str.strip_chars()
            .str.to_lowercase().str.replace_all(r"[\s_\-]+", "-"))


def normalise_value(expr: pl.Expr) -> pl.Expr:
    """Enumerated values compare without case, emphasis, quotes or a trailing period, with
    `-`, `_` and spaces alike ("request changes" is "request-changes"), and a whole number
    written with zero decimals as it is without them (JSON's 2.0 is one of 1, 2 or 3)."""
    return (expr.str.strip_chars().str.strip_chars("`*_\"'“”‘’.").str.strip_chars()
            .str.to_lowercase().str.replace_all(r"[\s_\-]+", "-")
            .str.replace(r"^(-?\d+)\.0+$", "${1}"))


# ---- extraction, one family at a time over a long frame of clause parts ------------------

# What a recognised requirement leaves behind in the text: a mark that splits what is left.
GAP = " ¦ "


def _take(df: pl.DataFrame, name: str, pattern: str, keep: str = GAP,
          where: pl.Expr | None = None) -> pl.DataFrame:
    """Add the matches of `pattern` as list column `name` and blank them out of `t` (only on
    the rows `where` holds, if given: elsewhere `name` is empty and `t` untouched)."""
    found, taken = pl.col("t").str.extract_all(pattern), pl.col("t").str.replace_all(pattern, keep)
    if where is not None:
        found = pl.when(where).then(found).otherwise(pl.lit([], pl.List(pl.String)))
        taken = pl.when(where).then(taken).otherwise(pl.col("t"))
    return df.with_columns(found.alias(name), taken.alias("t"))


# A number followed by a word that is no unit ("0-100 for", "3 of them", "a 6-digit code") is
# shielded from the count patterns by SHIELD.
# Words that join a number to its unit in a count ("5 or more", "2 to 4"): shielded only
# before the bare "N unit" form.
JOINERS = ("or", "and", "to", "more", "less", "fewer")


def _number_followed_by(words) -> str:
    return (r"(?i)(\d|\bone|\btwo|\bthree|\bfour|\bfive|\bsix|\bseven|\beight|\bnine|\bten"
            r"|\bsingle)(\s+|-)((?:" + "|".join(re.escape(w) for w in words) + r")\b)")


NOT_UNIT_AFTER_NUMBER = _number_followed_by(w for w in NOT_UNITS if w not in JOINERS)
NOT_ANY_UNIT_AFTER_NUMBER = _number_followed_by(NOT_UNITS)
# Two bounds of one count: "at least 3 and at most 5 bullet points" is read "3-5 bullet points"
BOTH_BOUNDS = (r"(?i)\b(?:at\s+least|(?:no|not)\s+(?:fewer|less)\s+than|a\s+minimum\s+of)\s+(\d+)"
               r"\s*,?\s+(?:and|but)\s+(?:at\s+most|(?:no|not)\s+more\s+than|up\s+to|a\s+maximum"
               r"\s+of)\s+(\d+)(\s+\p{L})")
# ... and "and" or "or" that join a bound to another ("at least 3 and at most 5", "3 or
# higher"): no count's unit (v11 took "at least 3 and" for a count of "and", and lost it)
BOUND_JOINED = (r"(?i)(\d)(\s+)((?:and|or|but)\s+(?:" + VALUE_BOUND
                + r"|higher|lower|greater|smaller|larger|exactly)\b)")


def _spelled_out(text: pl.Expr) -> pl.Expr:
    """`text` with the one-word units the count patterns read ("codeblock",
    "exclamation-mark", see COUNTED_CODE_BLOCKS) written back as words."""
    return (text.str.replace_all("codeblock", "code block", literal=True)
            .str.replace_all("exclamation-mark", "exclamation mark", literal=True))


def _quantities(df: pl.DataFrame) -> pl.DataFrame:
    t = pl.col("t")
    for n, word in enumerate(LEVEL_WORDS, 1):  # "3 H2 sections": "3 level-two-sections"
        t = t.str.replace_all(LEVELED_HEADINGS.replace("([1-6])", f"({n})"), f"level-{word}-$2")
    t = t.str.replace_all(COUNTED_CODE_BLOCKS, "${1} codeblock${2}")
    t = t.str.replace_all(EXCLAMATION_MARKS, "exclamation-mark${1}")
    t = t.str.replace_all(NO_LINE_BREAKS, "at most one line")
    t = t.str.replace_all(ONE_LINER, "at most one line")
    t = t.str.replace_all(NO_PART_LONGER, "each $1 at most ")
    # "an empty list if nothing matched", "(may be an empty list)": empty only at times, so
    # no count (v21 as first written failed every list with items)
    t = pl.when(t.str.contains(EMPTY_AT_TIMES)).then(
        t.str.replace_all(r"(?i)\bempty(\s)", "empty" + SHIELD + "${1}")).otherwise(t)
    df = df.with_columns(t.str.replace_all(BOTH_BOUNDS, "${1}-${2}${3}")
                         .str.replace_all(EACH_AFTER, "each ${1}")
                         .str.replace_all(NOT_UNIT_AFTER_NUMBER, "${1}${2}" + SHIELD + "${3}")
                         .str.replace_all(BOUND_JOINED, "${1}" + SHIELD + "${2}${3}"))
    parts = []
    for i, (kind, pattern) in enumerate(QUANTITY_FORMS):
        pattern = "(?i)" + pattern
        if i == len(QUANTITY_FORMS) - 1:
            df = df.with_columns(pl.col("t").str.replace_all(NOT_ANY_UNIT_AFTER_NUMBER,
                                                             "${1}${2}" + SHIELD + "${3}"))
        df = _take(df, f"_q{i}", pattern)
        e = pl.element()
        scope = e.str.extract(pattern, 1)
        scope = pl.when(scope != "").then(scope)  # an empty group: no scope
        a = _words_to_int(e.str.extract(pattern, 2))
        b = _words_to_int(e.str.extract(pattern, 3))
        unit = e.str.extract(pattern, 4).str.to_lowercase()
        bounds = {
            "range": (a, b), "min": (a, None), "over": (a + 1, None), "max": (None, a),
            "under": (None, a - 1), "exact": (a, a), "one": (pl.lit(1), None),
            "none": (pl.lit(0), pl.lit(0)),
        }
        if kind == "hyphen":  # "a 200-word abstract" caps the length; "one-sentence" is exact
            is_length = unit.is_in(["word", "words", "character", "characters", "char", "chars"])
            lo, hi = pl.when(is_length).then(None).otherwise(a), a
        else:
            lo, hi = bounds[kind]
        lo = pl.lit(None, pl.Int64) if lo is None else lo
        hi = pl.lit(None, pl.Int64) if hi is None else hi
        phrase = e.str.replace(r"^[^\p{L}\p{N}]+", "").str.strip_chars()
        for n, word in enumerate(LEVEL_WORDS, 1):
            phrase = phrase.str.replace(f"level-{word}-", f"H{n} ", literal=True)
        phrase = _spelled_out(phrase)
        # read while the pattern is among the last ones compiled (polars keeps 32 of them)
        parts.append(f"_q{i}")
        df = df.with_columns(pl.col(f"_q{i}").list.eval(pl.struct(
            lo.cast(pl.Int64).alias("min"), hi.cast(pl.Int64).alias("max"),
            unit.alias("unit"),
            pl.when(scope.str.contains(r"(?i)^(?:each|every)\b")).then(pl.lit("each"))
            .when(scope.str.contains(r"(?i)^(?:first|title|subject|summary|headline)\s"))
            .then(pl.lit("first"))
            .when(scope.str.contains(SECTION_MARK, literal=True)).then(pl.lit("section"))
            .when(scope.is_not_null()).then(pl.lit("rest")).otherwise(pl.lit("whole"))
            .alias("scope"),
            # (a section's name is the clause's section_name)
            pl.when(~scope.str.contains(SECTION_MARK, literal=True))
            .then(scope.str.strip_chars()).alias("scope_text"),
            phrase.alias("phrase"),
        )))
    singular = pl.element().struct.field("unit").str.replace(r"s$", "")
    measure = singular.replace_strict(MEASURES, default="items", return_dtype=pl.String)
    valid = (
        ~pl.element().struct.field("unit").is_in(NOT_UNITS)
        & (pl.element().struct.field("min").is_not_null()
           | pl.element().struct.field("max").is_not_null())
        & (pl.element().struct.field("min").fill_null(0)
           <= pl.element().struct.field("max").fill_null(1 << 40))
        & (pl.element().struct.field("max").fill_null(0) >= 0)
    )
    df = df.with_columns(
        pl.concat_list(parts).list.eval(
            pl.element().struct.with_fields(measure.alias("measure")).filter(valid))
        .alias("quantities"),
        pl.col("t").str.replace_all(SHIELD, "", literal=True)
        .str.replace_all(SECTION_MARK, "", literal=True),
    ).drop([f"_q{i}" for i in range(len(QUANTITY_FORMS))])
    # "at most 5 unique tags": at most 5 items, none repeated (v11 counted each once, so 7 tags
    # of which 5 differ passed, and so did "a, a, b")
    e = pl.element()
    unique_cap = ((e.struct.field("measure") == "items") & e.struct.field("min").is_null()
                  & e.struct.field("phrase").str.contains(r"(?i)\b(?:distinct|unique)\b"))
    df = df.with_columns(pl.concat_list(
        "quantities", pl.col("quantities").list.eval(e.filter(unique_cap).struct.with_fields(
            pl.lit(0, pl.Int64).alias("min"), pl.lit(0, pl.Int64).alias("max"),
            pl.lit("duplicates").alias("unit"), pl.lit("duplicates").alias("measure"),
            pl.lit("no repeated items").alias("phrase")))))
    # "at least 2 pros and at least 2 cons": the kinds of items the clause counts; "at least 2
    # paragraphs, each under 50 words": the parts a bare "each" is each of
    whole = e.struct.field("scope") == "whole"
    return df.with_columns(
        pl.col("quantities").list.eval(
            e.filter((e.struct.field("measure") == "items") & whole)
            .struct.field("unit").str.to_lowercase().str.replace(r"s$", "")).list.n_unique()
        .cast(pl.Int32).alias("item_kinds"),
        pl.col("quantities").list.eval(
            e.filter(whole & e.struct.field("measure").is_in(["paragraphs", "lines"]))
            .struct.field("measure")).list.first().alias("each_of"))


def _forbidden(df: pl.DataFrame) -> pl.DataFrame:
    """Take the phrases a clause forbids before enumerations are read: 'never mentions "a"
    or "b"' forbids both, it offers no choice between them (`_literals` reads them)."""
    for i, (mode, pattern) in enumerate(LITERAL_FORMS):
        if mode == "absent":
            df = _take(df, f"_l{i}", pattern)
    return df


def _hide(df: pl.DataFrame, pattern: str, where: pl.Expr | None = None,
          more: str = "") -> pl.DataFrame:
    """Take the matches of `pattern` out of the text, each replaced by HIDDEN, so that no
    reader sees them; `_restore` puts them back. Where `where` holds, matches of `more` too
    (the wider pattern is compiled only when a row asks for it)."""
    if where is None or not df.select(where.any()).item():
        return _take(df, "_hidden", pattern, keep=HIDDEN)
    t, wider = pl.col("t"), pattern + "|" + more
    return df.with_columns(
        pl.when(where).then(t.str.extract_all(wider)).otherwise(t.str.extract_all(pattern))
        .alias("_hidden"),
        pl.when(where).then(t.str.replace_all(wider, HIDDEN))
        .otherwise(t.str.replace_all(pattern, HIDDEN)).alias("t"))


def _several_parts(text: pl.Expr) -> pl.Expr:
    """True where the clause describes an output of several parts (see PART_LENGTH)."""
    with_part = text.str.extract(PART_WITH_LENGTH, 0)
    return (text.str.contains(PARTS_JOINED)
            | (with_part.is_not_null() & ~with_part.str.contains(WHOLE_LENGTH_WORDS)))


def _section_counts(df: pl.DataFrame) -> pl.DataFrame:
    """Read `section_name` (SECTION_AFTER, SECTION_BEFORE) in a clause, and mark the stretch
    that holds its count with SECTION_MARK, so that the count patterns read it as scoped to
    that section (scope 'section')."""
    t = pl.col("t")
    after, before = t.str.extract_groups(SECTION_AFTER), t.str.extract_groups(SECTION_BEFORE)
    name = pl.coalesce(*[after.struct.field(str(g)) for g in range(1, 5)],
                       *[before.struct.field(str(g)) for g in range(2, 6)])
    stretch = pl.coalesce(pl.when(name.is_not_null()).then(after.struct.field("5")),
                          before.struct.field("1")).str.strip_chars()
    counted = (pl.col("_part") == 0) & name.is_not_null() & stretch.str.contains(r"\d|" + NUM)
    around = t.str.split(stretch)  # (no pattern of a row's own in str.replace)
    return df.with_columns(
        pl.when(counted).then(name.str.strip_chars()).alias("section_name"),
        pl.when(counted).then(pl.concat_str(
            around.list.first(), pl.lit(SECTION_MARK + " "), stretch,
            around.list.slice(1).list.join(stretch))).otherwise(t).alias("t"))


def _hold_opening_colon(df: pl.DataFrame) -> pl.DataFrame:
    """Hold the colon after the noun a clause opens with as COLON (see OPENING_NOUN);
    `_restore` puts it back."""
    last_word = pl.col("t").str.extract(OPENING_NOUN, 1).str.extract(r"(\S+)\s*$", 1)
    names_output = (pl.col("_part") == 0) & ~last_word.str.to_lowercase().is_in(
        LIST_CUES).fill_null(True)
    return df.with_columns(pl.when(names_output)
                           .then(pl.col("t").str.replace(OPENING_NOUN, "${1}" + COLON))
                           .otherwise(pl.col("t")))


def _put_back(df: pl.DataFrame, t: pl.Expr, column: str, marker: str,
              shown: Callable[[pl.Expr], pl.Expr] = lambda phrase: phrase) -> pl.Expr:
    """`t` with each `marker` replaced, in order, by the phrase of list `column` in its place
    (as `shown` writes it); a marker with no phrase left stays."""
    for k in range(df[column].list.len().max() or 0):
        phrase = shown(pl.col(column).list.get(k, null_on_oob=True))
        t = t.str.replace(marker, phrase.fill_null(marker), literal=True)
    return t


def _kept(phrase: pl.Expr) -> pl.Expr:
    """A hidden phrase as the judgment question keeps it: marked KEPT, its commas held."""
    phrase = phrase.str.replace_all(",", COMMA, literal=True)
    # a mark before the phrase's first word: "(2 sentences" keeps its words whole
    lead = phrase.str.extract(r"^([^\p{L}\p{N}]*)", 1)
    return pl.concat_str(lead, pl.lit(KEPT), phrase.str.slice(lead.str.len_chars()))


def _restore(df: pl.DataFrame) -> pl.DataFrame:
    """Put every hidden phrase back in place, marked KEPT, and the opening noun's colon, for
    the judgment question."""
    t = pl.col("t")
    for column, marker in (("_hidden", HIDDEN), ("_not_counted", NOT_COUNTED),
                           ("_unread", UNREAD)):
        t = _put_back(df, t, column, marker, _kept)
    return df.with_columns(t.str.replace(COLON, ":", literal=True)
                           .str.replace_all(OF_EACH, "", literal=True)
                           .str.replace_all(r"\b(ISO)_(\d)", "$1 $2")
                           .pipe(_spelled_out).alias("t")
                           ).drop("_hidden", "_not_counted", "_unread")


def _times(phrase: pl.Expr) -> pl.Expr:
    """The least number of occurrences a phrase asks (TIMES), null for once."""
    said = phrase.str.extract(r"(?i)(twice|thrice|more\s+than\s+once|\w+)(?:\s+or\s+more|\+)?"
                              r"\s+times$|(twice|thrice|more\s+than\s+once)$", 0)
    word = said.str.extract(r"(?i)^(\w+(?:\s+than\s+once)?)", 1).str.to_lowercase() \
        .str.replace_all(r"\s+", " ")
    return pl.coalesce(word.cast(pl.Int64, strict=False),
                       word.replace_strict(TIMES_WORDS, default=None, return_dtype=pl.Int64))


def _end_mark(phrase: pl.Expr) -> pl.Expr:
    """The mark a phrase ending in its name asks for ("ending with a question mark": "?")."""
    return (phrase.str.extract(r"(?i)\b(question|period|full|exclamation)(?:\s+\w+)?[\s,;.)]*$", 1)
            .str.to_lowercase().replace_strict(END_MARKS, default=None))


def _literals(df: pl.DataFrame) -> pl.DataFrame:
    parts = []
    once = pl.lit(None, pl.Int64).alias("times")
    for i, (mode, pattern) in enumerate(LITERAL_FORMS):
        e = pl.element()
        if mode == "absent":  # taken by `_forbidden`; one literal per quoted phrase
            quoted = e.str.extract_all(QUOTED_ONLY)
            parts.append(pl.col(f"_l{i}").list.eval(pl.struct(
                _unquote(quoted.explode()).alias("text"), pl.lit(mode).alias("mode"),
                e.str.strip_chars().repeat_by(quoted.list.len()).explode().alias("phrase"),
                once)))
            continue
        df = _take(df, f"_l{i}", pattern)
        times = once
        if i == len(LITERAL_FORMS) - 1:  # "the exact phrase Final answer", maybe unquoted
            text = _unquote(e.str.replace(r"(?i)^(?:the\s+)?exact\s+(?:phrase|text|words?|"
                                          r"string|sentence)\s+", "").str.strip_chars())
        elif pattern == EXTENSION:
            text = e.str.extract("(" + FILE_EXTENSION + ")", 1)
        elif pattern == END_MARK:  # "ending with a question mark": the mark itself
            text = _end_mark(e)
        else:
            text = _first_literal(e)
            if pattern.endswith(TIMES):
                times = _times(e.str.strip_chars()).alias("times")
        # a section named with its heading marks ("## Sources") is that exact last heading
        kind = (pl.when(text.str.starts_with("#")).then(pl.lit("ends")).otherwise(pl.lit(mode))
                if mode == "last_section" else pl.lit(mode))
        parts.append(pl.col(f"_l{i}").list.eval(pl.struct(
            text.alias("text"), kind.alias("mode"),
            e.str.strip_chars().alias("phrase"), times)))
    e = pl.element()
    parts.append(pl.col("_tagged").list.eval(pl.struct(
        e.str.extract(TAG_NAME, 1).alias("text"), pl.lit("tagged").alias("mode"),
        e.str.strip_chars().alias("phrase"), once)))
    literals = pl.concat_list(parts).list.eval(pl.element().filter(
        pl.element().struct.field("text").str.len_chars() > 0))
    return df.with_columns(
        literals.list.eval(pl.element().filter(
            pl.element().struct.field("mode") != "alternative")).alias("literals"),
        literals.list.eval(pl.element().filter(
            pl.element().struct.field("mode") == "alternative")
            .struct.field("text")).list.first().alias("alternative"),
    ).drop([f"_l{i}" for i in range(len(LITERAL_FORMS))] + ["_tagged"])


def _orders(df: pl.DataFrame) -> pl.DataFrame:
    """Read `orders` (see ORDER) in the clause, before any reader of field names: "sorted by
    `score`" names the field to order by, not one to require. A sub-item's order is asked
    (`_sub_said`, see `_sub_item_counts`)."""
    clause = pl.col("_part") == 0
    found = pl.col("t").str.extract_all(ORDER)
    df = df.with_columns(
        pl.when(clause).then(found).otherwise(pl.lit([], pl.List(pl.String))).alias("_orders"),
        pl.when(clause).then(pl.lit([], pl.List(pl.String))).otherwise(found).alias("_sub_said"),
        pl.when(clause).then(pl.col("t").str.replace_all(ORDER, GAP)).otherwise(pl.col("t")))
    e = pl.element()
    lowered = e.str.to_lowercase()
    by = pl.coalesce(e.str.extract(r"(?i)\bby\s+" + ORDER_FIELD, 1),
                     e.str.extract(r"(?i)\border\s+of\s+" + ORDER_FIELD, 1))
    return df.with_columns(pl.col("_orders").list.eval(pl.struct(
        normalise_key(by).alias("by"),
        pl.when(lowered.str.contains("(?:" + ORDER_DESC + r"|reverse[\s\-]+chronolog)"))
        .then(pl.lit("desc"))
        .when(lowered.str.contains("(?:" + ORDER_ASC + "|alphabetical|chronolog)"))
        .then(pl.lit("asc"))
        .otherwise(pl.lit("any")).alias("direction"),
        lowered.str.contains("alphabetical|a-z|z-a|a to z|z to a").alias("alphabetical"),
        # by the date each item holds (without a field to order by)
        (by.is_null() & lowered.str.contains(r"chronolog|newest|oldest|most\s+recent|earliest"))
        .alias("chronological"),
        e.str.strip_chars().alias("phrase"))).alias("orders")).drop("_orders")


def _letter_case(df: pl.DataFrame) -> pl.DataFrame:
    """Read `letter_case` (see LETTER_CASE) in the clause; a sub-item's is asked
    (`_sub_said`), and the case of something inside the output stays in the judgment question
    ("with keys in lowercase", "section names in uppercase": CASE_OF_PARTS before it)."""
    before = pl.col("t").str.extract("(?is)^(.*?)" + LETTER_CASE.removeprefix("(?i)"), 1)
    whole = (pl.col("_part") == 0) & ~before.str.contains(CASE_OF_PARTS).fill_null(True)
    found = pl.when(whole).then(pl.col("t").str.extract(
        "(" + LETTER_CASE + ")", 1).str.to_lowercase())
    sub = pl.col("_part") > 0
    return df.with_columns(
        pl.when(sub).then(pl.concat_list("_sub_said", pl.col("t").str.extract_all(LETTER_CASE)))
        .otherwise(pl.col("_sub_said")).alias("_sub_said"),
        pl.when(found.str.contains(r"no\s+upper|no\s+capital")).then(pl.lit("lower"))
        .when(found.str.contains(r"no\s+lower")).then(pl.lit("upper"))
        .when(found.str.contains("lower")).then(pl.lit("lower"))
        .when(found.is_not_null()).then(pl.lit("upper")).alias("letter_case"),
        pl.when(found.is_not_null() | sub).then(pl.col("t").str.replace_all(LETTER_CASE, GAP))
        # the case of something inside the output is always asked ("tags, all lowercase")
        .otherwise(pl.col("t").str.replace_all(LETTER_CASE, KEPT + "${0}")))


# What wraps every item or line whole ("each bullet in bold", "every item wrapped in quotes",
# "each line in backticks"): group 1 is the unit, 2 the wrapping's words
ITEM_WRAP = (r"(?i)\b(?:each|every|all)\s+(?:of\s+the\s+)?(item|line|bullet|entry|entries|point"
             r"|step|row)s?\s+(?:(?:must|should|will)\s+be\s+|is\s+|are\s+)?((?:wrapped|written|set|"
             r"enclosed)\s+in\s+(?:double\s+)?(?:quotes|quotation\s+marks|backticks|bold|\*\*)"
             r"|in\s+(?:double\s+)?(?:quotes|quotation\s+marks|backticks|bold)|bold(?:ed)?|quoted)\b")
WRAPS = {"bold": "bold", "bolded": "bold", "**": "bold", "quotes": "quotes",
         "quotation": "quotes", "quoted": "quotes", "backticks": "backticks"}


def _item_edges(df: pl.DataFrame) -> pl.DataFrame:
    """Read `item_edges` (see ITEM_START) in the clause, not its sub-items (theirs stay for
    the judgment question); taken before literals, so "begins with" is not read as the start
    of the whole output."""
    clause = pl.col("_part") == 0
    e = pl.element()
    found = []
    for side, pattern in (("start", ITEM_START), ("end", ITEM_END), ("wrap", ITEM_WRAP)):
        df = df.with_columns(
            pl.when(clause).then(pl.col("t").str.extract_all(pattern))
            .otherwise(pl.lit([], pl.List(pl.String))).alias(f"_{side}"),
            pl.when(clause).then(pl.col("t").str.replace_all(pattern, GAP))
            .otherwise(pl.col("t")))
        unit = e.str.extract(pattern, 1).str.to_lowercase()
        if side == "start":
            text = _first_literal(e)
            word = e.str.extract(pattern, 3)
            kind = pl.when(word.str.to_lowercase() == "emoji").then(pl.lit("emoji")).otherwise(
                _type_of(word, e.str.extract(pattern, 2).is_not_null()))
        elif side == "end":  # a quoted text, or a named mark ("a period": ".")
            text = pl.coalesce(_first_literal(e), _end_mark(e))
            kind = pl.lit(None, pl.String)
        else:  # what wraps the item: bold, quotes or backticks
            text = pl.lit(None, pl.String)
            kind = e.str.extract(pattern, 2).str.to_lowercase().str.extract(
                r"(bold(?:ed)?|\*\*|quot(?:es|ation|ed)|backticks)", 1).replace_strict(
                WRAPS, default=None, return_dtype=pl.String)
        found.append(pl.col(f"_{side}").list.eval(pl.struct(
            pl.when(unit.is_in(["line", "row"])).then(pl.lit("line")).otherwise(pl.lit("item"))
            .alias("unit"),
            pl.lit(side).alias("side"), text.alias("text"), kind.alias("type"),
            e.str.strip_chars().alias("phrase"))))
    return df.with_columns(pl.concat_list(found).alias("item_edges")).drop("_start", "_end",
                                                                          "_wrap")


def _unquoted_values(phrase: pl.Expr, kind: str) -> pl.Expr:
    """The words of an unquoted enumeration, after what introduces it."""
    start = {"unquoted": r"(?i)^.*?one\s+of\s*:?\s*", "bare_or": r"^.*" + COLON,
             "scalar_of": r"(?is)^.*?\sof\s", "scalar_paren": r"^[^(]*\(",
             "from_list": r"(?i)^.*?(?:from|among)\s*(?::|" + COLON + r")\s*",
             "field_words": r"(?i)^\s*" + TICKED + NAMED_FIELD_NOUN + r"?\s*(?:\(|:|" + COLON + "|"
             + FIELD_WORDS_VERB + r")\s*"}[kind]
    return (phrase.str.replace(start, "").str.extract_all(WORD)
            .list.eval(pl.element().filter(~pl.element().str.to_lowercase().is_in(["or", "and"]))))


def _enums(df: pl.DataFrame) -> pl.DataFrame:
    # 'a verdict of "approve" or "reject", followed by one sentence of reasoning': the output
    # goes on after the value, so it is not one of the values; the clause's values are asked
    continues = pl.col("_continues")
    parts = []
    for i, (kind, pattern) in enumerate(ENUM_FORMS):
        # (the unquoted forms are taken only where no word says they are no choice)
        if kind in ("bare_or", "scalar_of", "scalar_paren", "from_list", "field_words"):
            said = pl.col("t").str.extract(pattern, 0)
            words = _unquoted_values(said, kind).list.eval(pl.element().str.to_lowercase())
            # nor where the words are qualities ("concise or brief": judged, not matched)
            # (options named in parentheses after a value's noun are values, whatever they
            # say: "(positive, negative or neutral)")
            not_values = words.list.eval(pl.element().is_in(NOT_VALUES)).list.any()
            if kind == "field_words":  # a field naming a kind holds formats' and types' names
                # as values (``a `format` field (markdown or html)``; v21: asked)
                kinds = normalise_key(said.str.extract(pattern, 1).str.strip_chars("` ")
                                      ).is_in(KIND_FIELDS)
                not_values = not_values & ~(kinds & ~words.list.eval(pl.element().is_in(
                    NOT_VALUES[:NOT_VALUES.index("json")])).list.any()).fill_null(False)
            choice = (said.is_not_null() & ~not_values
                      & (pl.lit(kind == "scalar_paren") | ~said.str.contains(JUDGMENT_WORDS))
                      & ~said.str.contains(VAGUE_WORDS))
            if kind == "bare_or":  # "a list: bugs, fixes or features" names the list's items
                choice = choice & (pl.col("formats").list.len() == 0)
            if kind == "field_words":  # "a `notes` field (optional or null)" says whether it
                # is there, not what it holds; "a `text` field: …" names no field of its own
                named_field = normalise_key(said.str.extract(pattern, 1).str.strip_chars("` "))
                choice = (choice & ~named_field.is_in(NOT_FIELDS).fill_null(True)
                          & ~words.list.eval(pl.element().is_in(PRESENCE_WORDS)).list.any())
            df = df.with_columns(
                pl.when(choice).then(pl.concat_list(said)).otherwise(pl.lit([], pl.List(
                    pl.String))).alias(f"_e{i}"),
                pl.when(choice).then(pl.col("t").str.replace(pattern, " ${1} "))
                .otherwise(pl.col("t")))
        else:
            df = _take(df, f"_e{i}", pattern, keep=" ${1} ")  # the field stays for field lists
        e = pl.element()
        field = e.str.extract(pattern, 1)
        # (a word NOT_FIELDS holds names a field where a field's noun follows it: "the
        # response field set to yes or no")
        named = e.str.contains(r"(?i)^\s*(?:(?:where|whose|with|and|its)\s+)?\S+"
                               + NAMED_FIELD_NOUN + r"\b")
        field = (pl.when(normalise_key(field).is_in(NOT_FIELDS) & ~named).then(None)
                 .otherwise(field))
        if kind == "with_of":
            values = e.str.replace(r"(?is)^.*?\sof\s", "").str.extract_all(QUOTED_ONLY)
        elif kind == "one_of":
            values = e.str.replace(r"(?is)^.*?(?:one\s+of|any\s+of|either)", "").str.extract_all(
                QUOTED_ONLY)
        elif kind == "quoted_or":
            values = e.str.replace(r"(?i)^" + FIELD_PREFIX, "").str.extract_all(QUOTED_ONLY)
        elif kind in ("one_value", "field_holds"):
            values = e.str.replace(r"^[^`]*`[^`]*`", "").str.extract_all(QUOTED_ONLY)
        elif kind == "yes_no":
            values = e.str.replace(r"(?i)^" + FIELD_PREFIX, "").str.extract_all(
                r"(?i)\b(?:yes|no|true|false)\b")
        else:  # unquoted: "one of approve, reject or escalate", "low, medium or high"
            values = _unquoted_values(e, kind)
        parts.append(pl.col(f"_e{i}").list.eval(pl.struct(
            field.str.strip_chars("` ").alias("field"), values.alias("values"),
            e.str.replace(r"^\s*" + COLON, "").str.replace_all(COLON, ":", literal=True)
            .str.strip_chars().alias("phrase"))))
    unquote_all = pl.element().struct.with_fields(
        pl.field("values").list.eval(normalise_value(_unquote(pl.element()))).list.unique(
            maintain_order=True))
    enums = pl.concat_list(parts).list.eval(unquote_all)
    whole = pl.element().struct.field("field").is_null()
    return df.with_columns(
        pl.when(continues).then(enums.list.eval(pl.element().filter(~whole)))
        .otherwise(enums).alias("enums"),
        pl.when(continues).then(enums.list.eval(pl.element().filter(whole).struct.field("phrase")
                                                .str.replace_all(COLON, " ", literal=True)
                                                .str.strip_chars(" ,;")))
        .alias("_asked"),
    ).drop([f"_e{i}" for i in range(len(ENUM_FORMS))] + ["_continues"])


def _fields(df: pl.DataFrame) -> pl.DataFrame:
    # "a JSON object with a `findings` array of objects, each with `id` and `title`": the
    # fields of "each" are inside the object's array, not its own keys
    df = df.with_columns(((pl.col("_part") == 0) & (pl.col("json_shape") == "object")
                          & pl.col("t").str.contains(EACH_INSIDE)).fill_null(False)
                         .alias("_each_nested"))
    about_json = ((pl.col("json_shape").is_not_null() | pl.col("formats").list.contains("json"))
                  .fill_null(False))
    # (the counts, read later, take the shield out; looked for only in the parts that name
    # columns, fields or keys, the others' text passed over by a search of plain words)
    named = pl.when(pl.col("t").str.contains(r"(?i)column|field|key")).then(pl.col("t"))
    df = df.with_columns(pl.coalesce(
        named.str.replace_all(AND_A_BOUND, "${1}" + SHIELD + "${2}"), pl.col("t")).alias("t"))
    parts = []
    for i, (kind, pattern) in enumerate(FIELD_FORMS):
        json_only = kind == "ticked_json"  # read, and taken out, only in a clause about JSON
        df = _take(df, f"_f{i}", pattern, where=about_json if json_only else None)
        e = pl.element()
        if kind == "quoted":  # "## Summary" names the heading "Summary"
            names = e.str.extract_all(QUOTED_ONLY).list.eval(
                _unquote(pl.element()).str.replace(r"^#+\s*", ""))
        elif kind in ("ticked", "ticked_json"):
            names = e.str.extract_all(TICKED)
        elif kind == "hashed":
            names = pl.concat_list(e.str.extract(HASHED_SECTION, 1).str.replace(r"^#+\s*", "")
                                   .str.strip_chars())
        elif kind == "bare":  # names after "columns" or "sections"
            names = (e.str.replace(r"(?i)^\s*(?:columns?|fields?|keys?|sections?|headings?|"
                                   r"headers?)\s+(?:named\s+|called\s+|titled\s+)?", "")
                     .str.replace(r"(?i)\s*,?\s*(?:and|&)\s+" + SHIELD + "$", "")
                     .str.replace(r"\s*[.,;)]?\s*$", "")
                     .str.replace_all(r"\s+(?:and|&)\s+", ",").str.split(","))
        else:
            names = (e.str.replace(r"^[^:]*:\s*", "").str.replace_all(r"\s+(?:and|&)\s+", ",")
                     .str.split(","))
        # (the word or mark a json_only match ends on is no part of its phrase)
        phrase = (e.str.replace(r"(?i)(?:\s*[,;.)]|\s+(?:and|or))\s*$", "") if json_only
                  else e).str.strip_chars()
        parts.append(pl.col(f"_f{i}").list.eval(
            pl.struct(names.alias("names"), phrase.alias("phrase"))))
    lists = pl.concat_list(parts)
    return df.with_columns(
        lists.alias("_field_lists"),
        # "no other columns" is read (only_fields) where the part names its fields
        pl.when(pl.col("only_fields") & (lists.list.len() > 0))
        .then(pl.col("t").str.replace_all(ONLY_FIELDS, GAP)).otherwise(pl.col("t")),
    ).drop([f"_f{i}" for i in range(len(FIELD_FORMS))])


def _ranges(df: pl.DataFrame) -> pl.DataFrame:
    no = pl.lit(False)

    def bounds(field: pl.Expr, lo, hi, phrase: pl.Expr, lo_exclusive=no, hi_exclusive=no
               ) -> pl.Expr:
        return pl.struct(field.alias("field"),
                         (pl.lit(None, pl.Float64) if lo is None else lo).alias("lo"),
                         (pl.lit(None, pl.Float64) if hi is None else hi).alias("hi"),
                         phrase.str.strip_chars().alias("phrase"),
                         lo_exclusive.alias("lo_exclusive"), hi_exclusive.alias("hi_exclusive"))

    parts = []
    e = pl.element()
    unscoped = pl.lit(None, pl.String)
    for i, (kind, pattern) in enumerate(RANGE_FORMS):
        pattern = "(?:" + ELEMENTS + ")?" + pattern  # with the mark of an element's bound
        df = _take(df, f"_r{i}", pattern)
        a = e.str.extract(pattern, 1).cast(pl.Float64, strict=False)
        b = e.str.extract(pattern, 2).cast(pl.Float64, strict=False)
        lo, hi = {"both": (a, b), "lo": (a, None), "hi": (None, a), "zero_to": (pl.lit(0.0), a),
                  "above": (a, None), "below": (None, a)}[kind]
        # (the mark or joining word a bound ends on is no part of its phrase)
        phrase = e.str.replace(r"(?i)(?:\s*[,;.:]|\s+(?:and|or|but|if|when))+\s*$", "").str.replace(
            r"^([^(\[]*)[)\]]\s*$", "${1}").str.replace(ELEMENTS, "each ", literal=True)
        scope = pl.when(e.str.starts_with(ELEMENTS)).then(pl.lit("[]")).otherwise(unscoped)
        parts.append(pl.col(f"_r{i}").list.eval(bounds(
            scope, lo, hi, phrase, pl.lit(kind == "above"), pl.lit(kind == "below"))))
    parts.append(pl.col("_field_ranges").list.eval(bounds(
        e.str.extract(FIELD_RANGE, 1).str.strip_chars("` ")
        .str.replace(r"(?i)^(?:where|whose)\s+(?:the\s+|each\s+|every\s+)?", "")
        .str.replace(r"(?i)(?:\s+(?:column|field|value|key))?(?:\s+(?:is|are|lies|falls))?$", ""),
        e.str.extract(FIELD_RANGE, 2).cast(pl.Float64, strict=False),
        e.str.extract(FIELD_RANGE, 3).cast(pl.Float64, strict=False), e)))
    # "`count` (≥ 1)": the kind of the bound by its words
    words = e.str.extract(FIELD_BOUND, 2)
    number = e.str.extract(FIELD_BOUND, 3).cast(pl.Float64, strict=False)
    kind = {k: words.str.contains(r"(?i)^(?:" + VALUE_BOUNDS[k] + r")$") for k in VALUE_BOUNDS}
    parts.append(pl.col("_field_bounds").list.eval(bounds(
        e.str.extract(FIELD_BOUND, 1).str.strip_chars("` "),
        pl.when(kind["lo"] | kind["above"]).then(number),
        pl.when(kind["hi"] | kind["below"]).then(number), e, kind["above"], kind["below"])))
    valid = (pl.element().struct.field("lo").fill_null(-1e300)
             <= pl.element().struct.field("hi").fill_null(1e300))
    return df.with_columns(
        pl.concat_list(parts).list.eval(pl.element().filter(valid)).alias("ranges")
    ).drop([f"_r{i}" for i in range(len(RANGE_FORMS))], "_field_ranges", "_field_bounds")


# A format name dropped where a name beside it says more: "a markdown table" names a table,
# not markdown; "a numbered list" a numbered list, not a list of lines as well; "a bulleted
# markdown list" a bulleted list.
NAMED_MORE_SPECIFICALLY = (
    ("markdown", ["table", "numbered_list", "bulleted_list", "markdown_list", "list",
                  "code_block", "checklist"]),
    ("list", ["numbered_list", "bulleted_list", "markdown_list", "json"]),
    ("markdown_list", ["numbered_list", "bulleted_list"]),
)


def _format_names(text: pl.Expr) -> pl.Expr:
    """The formats `text` names ("a markdown table" names a table, not markdown)."""
    found = []
    for name, pattern in FORMAT_FORMS:
        hits = text.str.extract_all(pattern)
        if name == "table":  # "table names", "table of contents" name no table
            hits = hits.list.eval(pl.element().filter(
                ~pl.element().str.contains(r"(?i)\s(?:of|names?)")))
        elif name in ("json", "yaml", "csv"):  # "a file name ending in .csv"
            hits = hits.list.eval(pl.element().filter(~pl.element().str.starts_with(".")))
        elif name == "diff":  # "a summary of the diff" asks for no diff
            hits = hits.list.eval(pl.element().filter(
                ~pl.element().str.contains(r"(?i)^of\s")))
        found.append(pl.when(hits.list.len() > 0).then(pl.lit(name)))
    formats = pl.concat_list(found).list.drop_nulls()
    # a name is dropped where a more specific one is found: each rule reads the list once
    for name, specific in NAMED_MORE_SPECIFICALLY:
        formats = formats.list.eval(pl.element().filter(
            (pl.element() != name) | ~pl.element().is_in(specific).any()))
    return formats


def _excluded_formats(df: pl.DataFrame) -> pl.DataFrame:
    # "no more than three bullet points" bounds a count: it rules no format out (the words
    # after "no" are held together while the negated formats are read)
    df = df.with_columns(pl.col("t").str.replace_all(BOUND_NOT, "${1}" + JOIN + "${2}"))
    df = _take(df, "_excluded", NEGATED_FORMAT)
    return df.with_columns(
        _format_names(pl.col("_excluded").list.join(" ¦ ")).alias("excluded_formats"),
        pl.col("t").str.replace_all(JOIN, " ", literal=True),
    ).drop("_excluded")


# A named field's values, which name no format of the output: ``a `format` field (markdown
# or html)``, ``a `syntax` key set to json or yaml`` (v21 required markdown of the output);
# and a field written in a format (``a `body` in markdown``, ``whose `description` is written
# in markdown``: v22 as first written required the JSON output to be markdown)
FIELD_VALUES_SAID = (r"(?i)" + TICKED + NAMED_FIELD_NOUN + r"?\s+(?:(?:is|must\s+be|should"
                     r"\s+be)\s+)?(?:(?:written|formatted)\s+)?(?:in|as)\s+(?:markdown|html|json|yaml|csv"
                     r"|plain\s+text)\b|(?i)" + TICKED + r"(?:" + NAMED_FIELD_NOUN
                     + r"\s*\([^()\n]*\)|\s*\([^()\n]*"
                     r"\bor\b[^()\n]*\)|" + NAMED_FIELD_NOUN + r"?(?:\s*:\s*|\s+" + FIELD_WORDS_VERB
                     + r")[\p{L}\p{N}_\-]+(?:\s*,\s*[\p{L}\p{N}_\-]+)*\s*,?\s+or\s+"
                     r"[\p{L}\p{N}_\-]+)")


def _formats(df: pl.DataFrame) -> pl.DataFrame:
    df = df.with_columns(_format_names(pl.col("t").str.replace_all(FIELD_VALUES_SAID, GAP))
                         .alias("_named"))
    formats = pl.col("_named")
    # "a list of URLs, one per line": a list of lines, not a markdown list (unless it says
    # so: "markdown_list"); "a comma-separated list of tags": one line of values, neither a
    # markdown list nor a CSV table
    # "a comma-separated list of 3 to 5 keywords", "a list of keywords, comma-separated": one
    # line of values, neither a markdown list nor a CSV table
    t = pl.col("t")
    inline = (t.str.contains(INLINE_LIST) | (t.str.contains(r"(?i)\b(?:comma|semicolon)[\s\-]"
              r"(?:separated|delimited)\b") & ~t.str.contains(r"(?i)\bseparated\s+values?\b")))
    formats = (pl.when(inline)
               .then(formats.list.set_difference(pl.lit(["list", "csv"])))
               .when(pl.col("t").str.contains(ONE_PER_LINE))
               .then(formats.list.set_difference(pl.lit(["list"]))).otherwise(formats))
    at_most = ((t.str.count_matches(CODE_BLOCKS) == 1)
               & t.str.contains(AT_MOST_CODE_BLOCKS))
    formats = (pl.when(at_most).then(formats.list.set_difference(pl.lit(["code_block"])))
               .otherwise(formats))
    shape = pl.col("t").str.extract(
        r"(?i)\bjson\s+(array|list|object|map|dict(?:ionary)?)\b", 1).str.to_lowercase()
    # "a JSON array of strings", "a JSON list of at least 3 URL strings": what its elements
    # are (not "of findings with their numbers": the words between describe the elements)
    elements_of = (r"(?i)\bjson\s+(?:array|list)\s+of\s+((?:[\w\-]+\s+){0,4}?)(strings|numbers"
                   r"|integers|whole\s+numbers|objects|arrays|lists|booleans)\b")
    between = pl.col("t").str.extract(elements_of, 1)
    elements = (pl.when(~between.str.contains(r"(?i)\b(?:with|and|or|for|per|whose|where|that"
                                              r"|which|their|its|containing|of)\b"))
                .then(pl.col("t").str.extract(elements_of, 2).str.to_lowercase()))
    df = df.with_columns(
        formats.alias("formats"),
        pl.when(inline).then(pl.when(t.str.contains(r"(?i)semicolon")).then(pl.lit(";"))
                             .otherwise(pl.lit(","))).alias("inline_list"),
        shape.replace({"list": "array", "map": "object", "dict": "object",
                       "dictionary": "object"}).alias("json_shape"),
        elements.str.replace(r"^whole\s+numbers$", "integers").str.replace(r"s$", "")
        .replace({"list": "array"}).alias("json_elements"),
    )
    # the tag a fenced block carries, in the clause only (a sub-item's stays for the question)
    tag = pl.coalesce(t.str.extract(INLINE_FENCE_TAG, 1), t.str.extract(NAMED_FENCE, 1))
    fence_lang = pl.when((pl.col("_part") == 0) & pl.col("formats").list.contains("code_block"))
    df = df.with_columns(fence_lang.then(tag.str.to_lowercase().replace_strict(
        FENCE_ALIASES, default=None, return_dtype=pl.String)).alias("fence_lang"))
    return df.with_columns(pl.when(pl.col("fence_lang").is_not_null())
                           .then(t.str.replace_all(INLINE_FENCE_TAG, " ")
                                 .str.replace_all(NAMED_FENCE, " code block "))
                           .otherwise(t).alias("t")).drop("_named")


def _flagged(df: pl.DataFrame, column: str, asked: pl.Expr, pattern: str,
             keep: str = GAP) -> pl.DataFrame:
    """Set the flag `column` where `asked` holds, and there replace `pattern`'s match in the
    text with `keep`."""
    t = pl.col("t")
    return df.with_columns(asked.alias(column)).with_columns(
        pl.when(pl.col(column)).then(t.str.replace(pattern, keep)).otherwise(t).alias("t"))


def _csv_header(df: pl.DataFrame) -> pl.DataFrame:
    """Read `csv_header` (the clause asks a CSV for a header row) and take its phrase, and
    `csv_headerless` (it says the CSV has none; the phrase stays asked)."""
    t = pl.col("t")
    csv = (pl.col("_part") == 0) & pl.col("formats").list.contains("csv")
    df = df.with_columns((csv & t.str.contains(NO_CSV_HEADER)).alias("csv_headerless"))
    return _flagged(df, "csv_header", csv & t.str.contains(CSV_HEADER)
                    & ~pl.col("csv_headerless"), CSV_HEADER)


def _blank_after_first(df: pl.DataFrame) -> pl.DataFrame:
    """Read `blank_after_first` (a blank line follows the first line) and take its phrase."""
    return _flagged(df, "blank_after_first", (pl.col("_part") == 0)
                    & pl.col("t").str.contains(BLANK_AFTER_FIRST), BLANK_AFTER_FIRST,
                    "${1}" + GAP)


def _type_of(word: pl.Expr, iso: pl.Expr) -> pl.Expr:
    """The value type a type's phrase names (VALUE_TYPES), ISO 8601 where `iso` says so."""
    kind = word.str.to_lowercase().str.replace_all(r"\s+", " ").replace_strict(
        VALUE_TYPES, default=None, return_dtype=pl.String)
    return (pl.when((kind == "date") & iso).then(pl.lit("iso_date"))
            .when((kind == "datetime") & iso).then(pl.lit("iso_datetime")).otherwise(kind))


# A clause saying its value is written as ISO 8601 has it: "ISO 8601", "in ISO format",
# "YYYY-MM-DD" (v23 as first written took "in ISO format" for any timestamp, RFC 2822's too)
ISO_SAID = r"(?i)\bISO[\s\-]?8601\b|\bISO[\s\-]+format|YYYY-MM-DD"
# What says a date goes without its time: "a date only", "(no time)", "not a timestamp" (v23
# as first written took a date with its time for a date there too)
DATE_ONLY = (r"(?i)\bdate[\s\-]only\b|\bonly\s+(?:the\s+)?date\b|\b(?:no|without\s+(?:a|the|any)?)"
             r"\s*time\b|\bnot\s+(?:a\s+)?(?:timestamp|date[\s\-]?time)\b")


# A timestamp said to be Unix time: "a Unix timestamp", "a timestamp (Unix seconds)", "epoch
# seconds", "seconds since the epoch" (v23 took any timestamp, ISO 8601's too) ...
UNIX_SAID = (r"(?i)\b(?:" + UNIX_WORDS + r")\s+(?:timestamp|date[\s\-]?time|time|seconds"
             r"|milliseconds)\b|\bseconds\s+since\s+(?:the\s+)?(?:unix\s+)?epoch\b")
# ... and an address said to go without a display name: "a bare email address", "no display
# name", "just the address" (v23 took "Ann Lee <ann@acme.com>" for one)
BARE_SAID = (r"(?i)\bbare\s+(?:e-?mail\s+)?address|\b(?:without|no)\s+(?:a\s+|any\s+)?display"
             r"[\s\-]+names?\b|\b(?:just|only)\s+the\s+(?:e-?mail\s+)?address\b"
             r"|\baddress\s+only\b")
# ... not where the clause says it is not one ("not a Unix timestamp")
NOT_SAID = r"(?i)\b(?:not|never|rather\s+than|instead\s+of)\s+(?:an?\s+)?(?:unix|epoch|bare)\b"


def _said_kind(kind: pl.Expr, words: pl.Expr) -> pl.Expr:
    """`kind`, made the narrower type `words` say it is: a date without its time, a Unix
    timestamp, an email address without a display name (DATE_ONLY, UNIX_SAID, BARE_SAID)."""
    said = ~words.str.contains(NOT_SAID)
    return (pl.when((kind == "date") & words.str.contains(DATE_ONLY)).then(pl.lit("date_only"))
            .when((kind == "datetime") & words.str.contains(UNIX_SAID) & said)
            .then(pl.lit("unix_time"))
            .when((kind == "email") & words.str.contains(BARE_SAID) & said)
            .then(pl.lit("bare_email"))
            .otherwise(kind))


def _value_type(df: pl.DataFrame) -> pl.DataFrame:
    """Read `value_type` (integer | number | percentage | boolean | url | date | date_only |
    iso_date | datetime | iso_datetime | unix_time | uuid | email | bare_email | masked |
    digits) and `value_mask`, and take their phrases out of the text; only where no format
    was read.

    Each phrase is read into a column of its own first: the readings below name them several
    times, and an expression that names another twice evaluates it twice (with polars'
    eager queries, each regex of it compiled anew once more than 32 patterns are in use).
    """
    t = pl.col("t")
    whole = (pl.col("_part") == 0) & (pl.col("formats").list.len() == 0)
    # "the release date in ISO 8601 format": the output is that date, written so
    noun, standard = t.str.extract(ISO_WRITTEN, 2), t.str.extract(ISO_WRITTEN, 3)
    # a time is an ISO date and time only where its mask says so ("YYYY-MM-DDTHH:MM:SSZ")
    written = (noun.is_not_null() & whole
               & ((noun.str.to_lowercase() != "time") | standard.str.contains("(?i)HH"))
               & ~t.str.extract(ISO_WRITTEN, 1).str.contains(NOT_THE_DATE)
               & ~t.str.replace(ISO_WRITTEN, "").str.contains(VALUE_IN_SOMETHING))
    df = df.with_columns(
        pl.when(t.str.extract(VALUE_TYPE, 3).is_null() | (pl.col("formats").list.len() > 0)
                | t.str.replace(VALUE_TYPE, "").str.contains(VALUE_IN_SOMETHING)).then(None)
        .otherwise(_type_of(t.str.extract(VALUE_TYPE, 3),
                            t.str.extract(VALUE_TYPE, 2).is_not_null()
                            | t.str.contains(ISO_SAID)))
        .alias("_said"),
        written.alias("_written"),
        pl.when(noun.str.to_lowercase() == "date").then(~standard.str.contains("(?i)HH"))
        .alias("_written_date"),
        # "a duration in minutes (an integer)", "the total cost (a number)": the whole
        # output's type, in parentheses closing the clause (a field's, "`total` (a number)",
        # is read apart)
        pl.when(whole & ~t.str.contains("`")).then(_type_of(
            t.str.extract(TYPE_CLOSING, 2), t.str.extract(TYPE_CLOSING, 1).is_not_null()))
        .alias("_closing"),
        # a sub-item's type said apart from the words before it ("`retry_after`: seconds to
        # wait, an integer, only when status is "error"")
        pl.when(pl.col("_part") > 0).then(_type_of(
            t.str.extract(TYPE_APART, 2), t.str.extract(TYPE_APART, 1).is_not_null()))
        .alias("_apart"),
        # a sub-item's value "as YYYY-MM-DD" (a field's format, never the whole output's)
        pl.when((pl.col("_part") > 0) & t.str.contains(
            r"\bYYYY-MM-DD\b|(?i)\bISO[\s\-]?8601\s+dates?\b")).then(pl.lit("iso_date"))
        .alias("_as_iso"),
        # "a date in the format DD/MM/YYYY", "a time in HH:MM format": the whole output is a
        # date or time written so (YYYY-MM-DD is an ISO date, read above)
        t.str.extract(MASK, 1).alias("_mask"),
        t.str.contains(TIME_VALUE).alias("_time"),
        t.str.extract(NUMBER_MASK, 1).alias("_number_mask"),
        pl.when(whole).then(t.str.extract(VERSION_WRITTEN, 1)).alias("_version_mask"),
        # "a 6-digit code": so many digits (its mask is one '#' per digit)
        _words_to_int(t.str.extract(DIGIT_VALUE, 2)).alias("_n_digits"),
        (~t.str.extract(DIGIT_VALUE, 3).str.contains(r"(?i)\b(?:phone|mobile|fax)\b")
         & ~t.str.replace(DIGIT_VALUE, "").str.contains(VALUE_IN_SOMETHING)).alias("_digit_ok"),
    )
    # each reading fills what the ones before left open
    kind = pl.coalesce(
        "_said",
        pl.when(pl.col("_written")).then(
            pl.when(pl.col("_written_date")).then(pl.lit("iso_date"))
            .otherwise(pl.lit("iso_datetime"))),
        "_closing", "_apart", "_as_iso")
    # (a date said to go without its time, "a date only", "(no time)", is none with one; a
    # Unix timestamp no ISO one; a bare address none after a display name)
    df = df.with_columns(_said_kind(kind, t).alias("_kind"))
    kind, mask, n_digits = pl.col("_kind"), pl.col("_mask"), pl.col("_n_digits")
    # "… in UTC", "… in 2026", "… on github.com": the rest of a clause whose type was said
    rest = pl.when(pl.col("_said").is_not_null()).then(t.str.replace(VALUE_TYPE, ""))
    zone = rest.str.extract(WITHIN, 2)
    fits = (pl.when(zone.str.contains("^(?:UTC|GMT)$")).then(kind.is_in(WITHIN_KINDS["UTC"]))
            .when(zone.str.contains(r"^\d{4}$")).then(kind.is_in(WITHIN_KINDS["year"]))
            .otherwise(kind.is_in(WITHIN_KINDS["domain"])))
    df = df.with_columns(pl.when(fits).then(pl.format(
        "{} {}", rest.str.extract(WITHIN, 1).str.to_lowercase(),
        pl.when(zone.str.contains(r"^(?:UTC|GMT|\d{4})$")).then(zone)
        .otherwise(zone.str.to_lowercase()))).alias("_within"))
    date_masked = (mask.is_not_null() & (mask != "YYYY-MM-DD") & whole
                   & (kind.is_in(["date", "date_only", "datetime"]) | pl.col("_time"))
                   & ~pl.col("_written"))
    number_mask = pl.col("_number_mask")
    version_mask = pl.col("_version_mask")
    number_masked = (version_mask.is_null() & number_mask.str.contains(r"[.,$€£¥%]") & whole
                     & ~date_masked
                     & (kind.is_null() | kind.is_in(["number", "integer", "percentage"]))
                     ).fill_null(False)
    masked = date_masked | number_masked | version_mask.is_not_null()
    digits = (kind.is_null() & ~masked & n_digits.is_between(1, 40) & whole
              & pl.col("_digit_ok"))
    df = df.with_columns(masked.alias("_masked"), digits.alias("_digits"),
                         number_masked.alias("_number_masked"))
    masked, digits = pl.col("_masked"), pl.col("_digits")
    return df.with_columns(
        pl.when(masked).then(pl.lit("masked")).when(digits).then(pl.lit("digits"))
        .otherwise(kind).alias("value_type"),
        pl.when(pl.col("_number_masked")).then(number_mask)
        .when(version_mask.is_not_null()).then(version_mask)
        .when(masked).then(mask.str.replace_all(COLON, ":", literal=True))
        .when(digits).then(pl.lit("#").repeat_by(n_digits).list.join(""))
        .alias("value_mask"),
        # "an integer followed by a one-line note": the value is the output's lead
        (pl.col("_continues") & (masked | digits | kind.is_not_null())).alias("value_lead"),
        pl.when(~masked & ~digits).then(pl.col("_within")).alias("value_within"),
    ).with_columns(
        pl.when(pl.col("value_type") == "digits")
        .then(t.str.replace(DIGIT_VALUE, "${1}${3}" + GAP))
        .when(pl.col("_number_masked")).then(t.str.replace(NUMBER_MASK, GAP + "${2}"))
        .when(pl.col("_version_mask").is_not_null()).then(pl.lit(GAP))
        .when(pl.col("value_mask").is_not_null()).then(t.str.replace_all(MASK, GAP))
        .otherwise(t).alias("t")
    ).with_columns(
        pl.when(pl.col("value_type") == "digits").then(t)
        .when(pl.col("value_type").is_not_null() & written)
        .then(t.str.replace(ISO_WRITTEN, "${1}" + GAP))
        .when(pl.col("value_type").is_not_null() & (pl.col("_part") > 0)
              & ~t.str.contains(VALUE_TYPE))
        .then(t.str.replace(TYPE_APART, GAP))
        .when(pl.col("value_type").is_not_null() & ~t.str.contains(VALUE_TYPE))
        .then(t.str.replace(TYPE_CLOSING, GAP))
        # (what the value is within, the clause's whole rest, taken out with it)
        .when(pl.col("value_within").is_not_null())
        .then(pl.concat_str(t.str.extract(VALUE_TYPE, 1), pl.lit(GAP)))
        .when(pl.col("value_type").is_not_null())
        .then(t.str.replace(VALUE_TYPE, "${1}" + GAP)).otherwise(t).alias("t")
    ).drop("_said", "_written", "_written_date", "_closing", "_apart", "_as_iso", "_mask",
           "_time", "_n_digits", "_digit_ok", "_kind", "_masked", "_digits", "_number_mask",
           "_number_masked", "_version_mask", "_within")


# A field's length said in the clause, read as the sub-item "`summary`: at most 50 words"
# would be, not as the length of the whole output. Group 1 is what the clause keeps, group 2
# the field's backticked name, group 3 the length:
# - in parentheses: "`summary` (at most 50 words)";
INLINE_FIELD_LENGTH = (r"(?i)((`[^`\n]+`))\s*\(\s*([^()\n]*?\b(?:words?|characters?|chars?)\b"
                       r"[^()\n]*?)\s*\)")
# - after words that make the name a part of the output: "whose `summary` is at most 50
#   words", "where `title` is under 80 characters" (kept as "with `summary`": the field is
#   required too), "each with `name` of at most 40 characters", "with a `reason` of one
#   sentence";
# - after the name and a noun that makes it a field: "a `name` field of at most 40
#   characters", "a `tags` array of 2-5 strings", "`title` key: under 80 characters";
# - in a clause about JSON, after the name and a verb: "…; `title` must be at most 80
#   characters". Elsewhere a name said alone ("`report` has at most 500 words") may be the
#   output's own: its length is the output's.
ITEM_LENGTH = _counted(r"(?:items?|elements?|entries|entry|strings?|values?|objects?|tags?|urls?"
                       r"|links?)\b")
# a field's length: in words, characters, sentences, … or in items
FIELD_COUNT = PART_LENGTH + "|" + ITEM_LENGTH
_FIELD_NOUN = (r"(?:field|key|value|property|attribute|column|string|text|array|list|entry)"
               r"(?-u:\b)")
_LINK_WORDS = (r"that|which|is|are|of|with|has|have|having|holds?|holding|contains?|containing"
               r"|must|should|be|being|each")
# (the length's first character is no letter: a space, or the "(" of "field (at most 3 words)",
# whose ")" goes with it)
_LINKED_LENGTH = (r"(?:\s*[:—–]|\s)?(?:\s+(?:" + _LINK_WORDS + r")){0,3}(" + FIELD_COUNT
                  + r")\)?")
FIELD_WHOSE_LENGTH = (r"(?i)\b(?:whose|where|its)\s+((" + TICKED + r")(?:\s+" + _FIELD_NOUN
                      + ")?)" + _LINKED_LENGTH)
FIELD_NOUN_LENGTH = r"(?i)((" + TICKED + r")\s+" + _FIELD_NOUN + ")" + _LINKED_LENGTH
FIELD_PART_LENGTH = (r"(?i)(\b(?:with|has|having|containing|including)(?:\s+(?:a|an|the|its))?"
                     r"\s+(" + TICKED + "))" + _LINKED_LENGTH)
# - said of each of a named field's elements: "a `summaries` array, each under 50 words",
#   "`titles`, each at most 80 characters" (read as "`summaries` (under 50 words)": the
#   length of each of the field's values, in a clause about JSON; v22 measured the output's
#   lines); (the length's pattern takes the space before it)
FIELD_EACH_LENGTH = (r"(?i)(?P<f>" + TICKED + ")" + ARRAY_NOUN + ARRAY_OF + EACH_LINK
                     + r"(?:each|every\s+one)(?:\s+(?:one|value|element|item|entry|string|summary"
                     r"|title|tag|name))?(?:\s+(?:is|are|must\s+be|should\s+be|of))?(?P<len>"
                     + PART_LENGTH + ")")
# - a count in parentheses after the name: "`reason` (one sentence)", "`tags` (2-5 strings)";
FIELD_PAREN_LENGTH = r"(?i)((" + TICKED + r"))\s*(" + FIELD_COUNT + r")\s*\)"
# - or an array's count: "`items` (an array of at most 3 objects)";
FIELD_PAREN_LIST_LENGTH = (r"(?i)((" + TICKED + r"))\s*\(\s*((?:an?\s+)?(?:json\s+)?(?:array|list)"
                           r"\s+of(?:" + FIELD_COUNT + r"))\s*\)")
FIELD_VERB_LENGTH = (r"(?i)((" + TICKED + r"))(?:\s+(?:" + _LINK_WORDS + r")){1,3}("
                     + FIELD_COUNT + ")")
# A field's one-sided bound said in the clause, after the lengths took theirs: "whose `count`
# is at least 1", "where `score` > 0.5", and in a clause about JSON after the name and a verb,
# "`count` must be greater than 0" (v11 bounded the output's first number)
_BOUND_VALUE = r"(?:" + VALUE_BOUND + r")\s*-?\d+(?:\.\d+)?"
FIELD_WHOSE_BOUND = (r"(?i)\b(?:whose|where)\s+((" + TICKED + r")(?:\s+" + _FIELD_NOUN
                     + r")?)(?:\s+(?:" + _LINK_WORDS + r")){0,3}\s*(" + _BOUND_VALUE + ")")
FIELD_VERB_BOUND = (r"(?i)((" + TICKED + r"))(?:\s+(?:" + _LINK_WORDS + r")){0,3}\s*("
                    + _BOUND_VALUE + ")")
# "Non-empty" said of an array or a list is a count of at least one item ("never an empty
# list" too): "a non-empty JSON array", "a non-empty `items` array", "`items` (a non-empty
# array)", "whose `tags` list is non-empty" are read "… array of at least one item" before
# anything else (v11: asked)
NON_EMPTY = ((r"(?i)(" + TICKED + r"\s+(?:array|list))\s*,?\s*(?:never|not)\s+(?:an?\s+)?empty"
              r"(?:\s+(?:json\s+)?(?:array|list))?\b", "${1} of at least one item"),
             # ("a `tags` array, never an empty list", before the list's own, next)
             (r"(?i)(?:\b(?:must|should|can|will|is|are|may)\s*)?(?:\bnever|\bnot|n't|\bcannot)"
              r"\s+(?:be\s+)?(?:an?\s+)?empty\s+((?:json\s+)?(?:array|list))\b",
              "with at least one item"),  # "never an empty list" (v21: a list ruled out)
             # "never an empty `results` list", "must not have an empty `results` array" (v22
             # as first written: none)
             (r"(?i)(?:\b(?:that|which)\s+)?(?:\b(?:must|should|can|will|is|are|may)\s*)?"
              r"(?:\bnever|\bnot|n't|\bcannot|\bwithout)\s+(?:(?:have|has|be|return|returns|give"
              r"|gives|contain|contains|include|includes|output|outputs|produce|produces)\s+)?"
              r"(?:an?\s+)?empty\s+(" + TICKED + r"\s+(?:array|list))\b",
              "with a ${1} of at least one item"),
             (r"(?i)\b(?:(?:a|an)\s+)?non[\s\-]?empty\s+((?:json\s+)?(?:array|list)|" + TICKED
              + r"\s+(?:array|list))\b", "${1} of at least one item"),
             # (and "whose `results` list is never empty")
             (r"(?i)(" + TICKED + r"\s+(?:array|list))\s+(?:is|must\s+be|should\s+be)\s+(?:never\s+"
              r"|not\s+|non[\s\-]?)empty\b", "${1} of at least one item"))


# "A JSON object with an empty `results` list", "whose `errors` list is empty", "with
# `results` as an empty list": a field's count of no item, in a clause about JSON (v21
# counted the output's own items, and found none in a JSON object; elsewhere ``an empty
# `results` list`` may be the output itself); not where it is empty only at times
# (EMPTY_AT_TIMES)
EMPTY_FIELD = ((r"(?i)\b(?:an\s+)?empty\s+(" + TICKED + r"\s+(?:array|list))\b", "${1} of 0 items"),
               (r"(?i)(" + TICKED + r"\s+(?:array|list))\s+(?:is|must\s+be|should\s+be)\s+empty\b",
                "${1} of 0 items"),
               (r"(?i)(" + TICKED + r")\s+as\s+an\s+empty\s+(?:json\s+)?(array|list)\b",
                "${1} ${2} of 0 items"))


def _emptiness(text: pl.Expr) -> pl.Expr:
    """`text` with what it says is empty, or never empty, said as a count (NON_EMPTY,
    EMPTY_FIELD)."""
    text = _rewritten(text, NON_EMPTY)
    return pl.when(text.str.contains(r"(?i)\b(?:json|object)\b")
                   & ~text.str.contains(EMPTY_AT_TIMES)).then(
        _rewritten(text, EMPTY_FIELD)).otherwise(text)


def _rewritten(text: pl.Expr, rewrites: Iterable[tuple[str, str]]) -> pl.Expr:
    """`text` with each (pattern, replacement) of `rewrites` applied in turn."""
    for pattern, replacement in rewrites:
        text = text.str.replace_all(pattern, replacement)
    return text


# What every part is read as before the readers run, in this order (pattern, replacement)
CLAUSE_REWRITES = (
    (UNIT_COUNT, "${2} ${1}s"), (THEN_LENGTH, " followed by ${1}"), (LENGTH_IS, "of ${1}"),
    # "a non-negative integer", "a positive number": the type, and a bound set apart (so a type
    # said apart is still read)
    *SIGNED_TYPES,
    (NOUN_BEFORE_ASIDE, "${1} ${3} ${2}"),
    (TYPED_RANGE_FIELD, "${1} (${3}-${4}), ${1} (a ${2})"),
    (TYPED_BOUND_FIELD, "${1} (${3} ${4}), ${1} (a ${2})"),
    (CASED_COUNT, "${1}${4}, all ${3}"), (TOP_N_LIST, "${2} of the top ${1} items"),
    # "no more than a paragraph": one
    (BOUND_A, "${1} one ${2}"), (BOUND_A_KEPT, "${1} a ${2}"),
)
# (pattern, what the clause keeps of a match, whether only in a clause naming JSON)
INLINE_FIELD_LENGTHS = ((INLINE_FIELD_LENGTH, "${1}", False),
                        (FIELD_PAREN_LENGTH, "${1}", False),
                        (FIELD_PAREN_LIST_LENGTH, "${1}", False),
                        (FIELD_WHOSE_LENGTH, "with ${1}", False),
                        (FIELD_NOUN_LENGTH, "${1}", False),
                        (FIELD_PART_LENGTH, "${1}", False),
                        (FIELD_VERB_LENGTH, "${1}", True),
                        (FIELD_WHOSE_BOUND, "with ${1}", False),
                        (FIELD_VERB_BOUND, "${1}", True))


def _parts(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per clause (part 0) and per sub-item (part 1..), with the text to read; a
    field's length said in the clause is one more sub-item (INLINE_FIELD_LENGTHS).

    Each step's text is a column the next step reads: as one expression, each step named the
    one before two or three times over (1.5 MB of expression for the lengths said)."""
    text = pl.col("_text")
    steps = frame.select("_row", "details",
                         _emptiness(pl.col("description").fill_null("")).alias("_text"))
    steps = steps.with_columns(text.str.contains(r"(?i)\bjson\b").alias("_json"))
    said = []
    # every one names a field in backticks: with no backtick in any clause, none can match,
    # and their patterns (six of about 20,000 characters) are not compiled
    ticked = steps.select(text.str.contains("`", literal=True).any()).item()
    if ticked:  # (in a clause about JSON: "a bulleted list of `commands`, each under 10 words"
        # counts the list's items)
        steps = steps.with_columns(pl.when("_json").then(
            text.str.replace_all(FIELD_EACH_LENGTH, "${f} (${len} )")).otherwise(text))
    for i, (pattern, keep, json_only) in enumerate(INLINE_FIELD_LENGTHS if ticked else ()):
        # each reads what the ones before left
        e = pl.element()
        bound = e.str.extract(pattern, 3).str.strip_chars()
        if pattern in (FIELD_WHOSE_BOUND, FIELD_VERB_BOUND):
            # "whose `counts` are each at least 1": a bound of each element (the sub-item's
            # "each at least 1"; v22 bounded the array's length)
            bound = pl.when(e.str.contains(r"(?i)\beach\b")).then(
                pl.concat_str(pl.lit("each "), bound)).otherwise(bound)
        found = text.str.extract_all(pattern).list.eval(pl.struct(
            e.str.extract(pattern, 2).str.strip_chars("`").alias("_field"), bound.alias("t")))
        kept = text.str.replace_all(pattern, keep)
        if json_only:
            found = pl.when("_json").then(found).otherwise(found.list.head(0))
            kept = pl.when("_json").then(kept).otherwise(text)
        said.append(f"_said{i}")
        steps = steps.with_columns(found.alias(said[-1]), kept.alias("_text"))
    clause = steps.select(
        "_row", pl.lit(0).alias("_part"), pl.lit(None, pl.String).alias("_field"),
        text.alias("t"))
    sub = (
        frame.select("_row", "details").with_columns(
            pl.int_ranges(1, pl.col("details").list.len() + 1).alias("_part"))
        .explode("details", "_part").drop_nulls("details")
        .with_columns(pl.col("details").str.extract_groups(
            r"(?s)^\s*(?:`(?P<a>[^`]+)`\s*(?:(?:\([^)]*\))?\s*[:—–])?|(?P<b>[\p{L}_][\w.\-]*)"
            r"\s*(?:\([^)]*\))?\s*[:—–])\s*(?P<rest>.*)$").alias("_g"))
        .select("_row", "_part",
                pl.coalesce(pl.col("_g").struct.field("a"), pl.col("_g").struct.field("b"))
                .str.strip_chars().alias("_field"),
                _emptiness(pl.coalesce(pl.col("_g").struct.field("rest"), pl.col("details")))
                .alias("t"))
        .cast({"_part": pl.Int32})
    )
    if not said:
        return pl.concat([clause, sub], how="vertical_relaxed")
    inline = (
        steps.select("_row", pl.concat_list(said).alias("_inline"),
                     (pl.col("details").list.len().fill_null(0) + 1).alias("_first"))
        .with_columns(pl.int_ranges(pl.col("_first"),
                                    pl.col("_first") + pl.col("_inline").list.len())
                      .alias("_part"))
        .explode("_inline", "_part").drop_nulls("_inline").unnest("_inline")
        .select("_row", "_part", "_field", "t")
    )
    return pl.concat([clause, sub, inline.cast({"_part": pl.Int32})], how="vertical_relaxed")


def _negated_examples(df: pl.DataFrame) -> pl.DataFrame:
    """'does not mention competitors such as Zendesk or Freshdesk' read as 'does not mention
    "Zendesk" or "Freshdesk"; does not mention competitors': the examples forbidden each (a
    detector finds them), what they are examples of asked."""
    # (not where the clause makes an exception: EXCEPTED, asked whole)
    t = pl.when(~pl.col("t").str.contains("(?i)" + EXCEPTION + "|" + SCOPED_NEGATION)).then(
        pl.col("t"))
    found = t.str.extract_groups(NEGATED_EXAMPLES)
    verb, noun = found.struct.field("1"), found.struct.field("2")
    names = pl.coalesce(found.struct.field("3"), found.struct.field("4"))  # (in parentheses)
    quoted = (pl.when(names.str.contains(r"^" + QUOTED)).then(names)
              .otherwise(names.str.replace_all(NAME, '"${0}"')))
    whole = t.str.extract(NEGATED_EXAMPLES, 0)
    around = t.str.split(whole)  # (no pattern of a row's own in str.replace)
    return df.with_columns(pl.when(whole.is_not_null()).then(pl.concat_str(
        around.list.first(), verb, pl.lit(" "), quoted, pl.lit("; "), verb, pl.lit(" "), noun,
        around.list.slice(1).list.join(whole))).otherwise(pl.col("t")).alias("t"))


def _analyse_parts(parts: pl.DataFrame) -> pl.DataFrame:
    df = parts.with_columns(
        pl.col("t").str.contains(SECRETS).alias("forbids_secrets"),
        pl.col("t").str.contains(ONLY_FIELDS).alias("only_fields"),
        # read before any reader takes or hides the words that say it
        ((pl.col("_part") == 0) & pl.col("t").str.contains(CONTINUES)).alias("_continues"),
        pl.col("t").str.replace_all(FENCES, " ").alias("t"),
    )
    df = _negated_examples(df)
    # "without any markdown headings" rules out headings, not markdown: read as "without any
    # headings" (a count of none)
    df = df.with_columns(pl.col("t").str.replace_all(EXAMPLES, " ").str.replace_all(
        r"(?i)\b(no|without(?:\s+any)?)\s+markdown\s+(headings?)\b", "$1 $2"))
    df = df.with_columns(_several_parts(pl.col("t")).alias("_parts_joined"))
    df = df.with_columns(_rewritten(pl.col("t"), FIELD_ELEMENT_REWRITES))
    # (a sub-item's: each element of its field's array, "`scores`: numbers, each between 0 and
    # 1"; v22 read nothing)
    df = df.with_columns(pl.when(((pl.col("_part") == 0) & pl.col("t").str.contains(JSON_ARRAY))
                                 | (pl.col("_part") > 0))
                         .then(_rewritten(pl.col("t"), ELEMENT_REWRITES)).otherwise(pl.col("t")))
    df = _take(df, "_unread", UNREAD_PHRASES, keep=UNREAD)
    df = df.with_columns(_rewritten(pl.col("t"), CLAUSE_REWRITES))
    df = _section_counts(df)
    df = _hold_opening_colon(df)
    df = _excluded_formats(df)
    df = _formats(df)
    df = _csv_header(df)
    df = _blank_after_first(df)
    df = _value_type(df)
    df = _forbidden(df)
    df = _take(df, "_sheltered", FIRST_LINE_LENGTH, keep=SHELTERED)
    df = _hide(df, "|".join([NEGATED, PHRASE_CHOICE, MENTION_CHOICE, DECIMALS,
                             AT_LEAST_ONE_OF, FIELD_EDGE, OWN_LINE_EDGE]),
               pl.col("_parts_joined"), PART_LENGTH).drop("_parts_joined")
    df = df.with_columns(_put_back(df, pl.col("t"), "_sheltered", SHELTERED).alias("t")
                         ).drop("_sheltered")
    # "`score` (0-100)": the range is taken (`_ranges` reads it), the name left to `_fields`;
    # so is "`total` (a number)", the field's type
    df = df.with_columns(pl.col("t").str.replace_all(TYPE_BEFORE_FIELD, "${2} (a ${1})")
                         .str.replace_all(TYPE_AFTER_FIELD, "${1} (a ${2})"))
    df = df.with_columns(pl.col("t").str.extract_all(FIELD_RANGE).alias("_field_ranges"),
                         pl.col("t").str.extract_all(FIELD_BOUND).alias("_field_bounds"),
                         pl.col("t").str.extract_all(FIELD_TYPE).alias("_field_types"),
                         pl.col("t").str.replace_all(BARE_FIELD_RANGE, GAP)
                         .str.replace_all(FIELD_RANGE, "${1}")
                         .str.replace_all(FIELD_BOUND, "${1}")
                         .str.replace_all(FIELD_TYPE, "${1}"))
    df = _take(df, "_tagged", TAGGED)
    df = _orders(df)
    df = _letter_case(df)
    df = _item_edges(df)
    df = _enums(df)
    # "one of "approve" or "reject", the single word only, nothing else in the file": a
    # value that is the whole output says it already
    whole = ((pl.col("enums").list.eval(pl.element().struct.field("field").is_null())
              .list.any()) | pl.col("value_type").is_not_null())
    df = df.with_columns(pl.when(whole).then(pl.col("t").str.replace_all(NOTHING_ELSE, GAP))
                         .otherwise(pl.col("t")))
    df = _fields(df)
    df = df.with_columns(_rewritten(pl.col("t"), ALL_OF_REWRITES))
    df = _literals(df)
    df = df.with_columns(pl.col("t").str.replace_all(SECRETS, GAP))
    # what looks like a count but is none ("one row per service") is held from the count
    # readers, then asked
    df = df.with_columns(pl.col("t").str.replace_all(PER_PART,
                                                     "${1}" + OF_EACH + " each ${3} ${2}"))
    df = _take(df, "_not_counted", NOT_COUNTS, keep=NOT_COUNTED)
    df = df.with_columns(pl.col("t").str.replace_all(STANDARD_NUMBER, "${1}_${2}"))
    # "a plan with numbered steps, at most 7": a bare bound closing a list's clause counts its
    # items (read as a bound on the output's first number, it passed or failed by chance)
    df = df.with_columns(pl.when(pl.col("formats").list.set_intersection(
        pl.lit(["list", "markdown_list", "numbered_list", "bulleted_list", "table"]))
        .list.len() > 0)
        .then(pl.col("t").str.replace(LIST_BOUND, ", ${1} items${2}")).otherwise(pl.col("t")))
    df = _quantities(df)
    df = _ranges(df)
    df = _restore(df)
    # a clause that is nothing but a noun ("a haiku", "a phone number"): see `_requirements`
    df = df.with_columns(pl.col("t").str.extract(BARE_NOUN, 1).alias("_bare"))
    # quoted words are values, not descriptions: no judgment or vagueness is read in them
    words = pl.col("t").str.replace_all(QUOTED_ONLY, GAP)
    df = df.with_columns(
        # (the word before "addresses" that says it is the verb is not part of the quality)
        words.str.extract_all(JUDGMENT_WORDS).list.eval(pl.element().str.replace(
            r"(?i)^\s*(?:" + VERB_BEFORE + r"\s+)?(address)", "${1}")).alias("judgments"),
        words.str.extract_all(VAGUE_WORDS).alias("vague_words"),
        pl.col("t").str.replace_all(JUDGMENT_WORDS, GAP).str.replace_all(VAGUE_WORDS, GAP),
    )
    return df.with_columns(
        pl.concat_list(
            pl.col("judgments").list.eval(
                pl.element().str.to_lowercase().str.replace_all(r"\s+", " ")
                .str.replace(r"^well\s", "well-")),
            # how a sub-item's value is written, where no reader reads it ("`version`: the
            # new version, as X.Y.Z"): asked (v19 dropped it, and any value passed)
            pl.when(pl.col("_part") > 0).then(pl.col("t").str.extract_all(SUB_ITEM_MASK))
            .otherwise(pl.lit([], dtype=pl.List(pl.String))),
        ).list.unique(maintain_order=True).alias("judgments"),
        pl.col("vague_words").list.eval(pl.element().str.to_lowercase()).list.unique(
            maintain_order=True),
        _residual(pl.col("t"))[0].alias("unchecked_text"),
        _residual(pl.col("t"))[1].alias("unchecked_words"),
    )


def _content_words(text: pl.Expr) -> pl.Expr:
    """Lowercase words of three letters or more that say something (no filler, no `names`),
    with a plural 's' dropped."""
    return (text.str.replace_all(r"`[^`]*`", " ").str.replace_all(FILLER, " ")
            .str.to_lowercase().str.extract_all(r"\p{L}{3,}")
            .list.eval(pl.element().str.replace(r"s$", "")))


def _trim_quotes(text: pl.Expr) -> pl.Expr:
    """`text` without the spaces, dots, dashes and apostrophes at its ends, nor the quote
    marks there that close or open nothing in it ('"WIP"' keeps both, 'WIP"' loses one)."""
    text = text.str.strip_chars(" .-'")
    text = (pl.when(text.str.count_matches('"', literal=True) % 2 == 1)
            .then(text.str.strip_chars('"')).otherwise(text))
    text = (pl.when(text.str.count_matches("“", literal=True)
                    != text.str.count_matches("”", literal=True))
            .then(text.str.strip_chars("“”")).otherwise(text))
    return text.str.strip_chars(" .-'")


# A name in backticks that a stretch says something of, by a word before it ("no `debug`
# field", "a string `id`") or after it ("`id` as a string"); "with `score`" says nothing more
# (a reader took what followed it, or the name is a field read elsewhere).
TICKED_SAID = (r"(?i)\b(?:no|not|without|never|string|strings|array|arrays|list"
               r"|lists|empty|non-empty|unique|nullable|null|optional|lowercase|uppercase)\s+"
               r"`[^`\s][^`]*`|`[^`\s][^`]*`\s+(?:as|is|are|must|should|set|equals?|contains?"
               r"|holds?|lists?)\b"
               # "a markdown list, each item with a `url`": what "with" names, outside JSON
               r"|\bwith\s+(?:(?:a|an|the)\s+)?`[^`\s][^`]*`")


# A qualifier whose one word names what the output must be in or on: a time zone, a year, a
# domain ("an ISO 8601 timestamp in UTC", "a date in 2026", "a URL on github.com", "an email
# address at the acme.com domain"): asked with its preposition (v20 dropped it, and the clause
# was satisfied at 95 by any timestamp, date, URL or address).
# (a word after a domain only: "in ISO format" is a format a value type reads, asked by none)
QUALIFIER = (r"(?i)^(?:in|on|at|from|since|before|after|under)\s+(?:the\s+)?(?-i:\p{Lu}{2,5}"
             r"|\d{4}|[\p{L}\d\-]+(?:\.[\p{L}\d\-]+)*\.\p{L}{2,}(?:\s+\p{L}+)?)$")


def _residual(text: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(unchecked_text, unchecked_words): the stretches of a clause no requirement covered
    that still say something, joined by ' … ', and their content words."""
    text = text.str.replace_all(r"(?i)\b(e\.g|i\.e)\.", "${1}" + ABBREVIATION_DOT)
    # An aside keeps its commas and colons ("(`file:line`)"), and so does a quoted phrase
    # ('starts with "https://"', “a, b”: a straight quote opens after a space or a bracket and
    # closes before one, a mark or the end); up to five of each in one
    for _ in range(4):
        for mark, placeholder in ((",", COMMA), (":", COLON)):
            for opening, inside, closing in ((r"\(", "()", r"\)"),
                                             (r'(?:^|[\s(\[])"', '"', r'"(?:$|[\s,;.:)\]])'),
                                             ("“", "”", "”")):
                text = text.str.replace_all(
                    "(" + opening + "[^" + inside + "¦\n" + mark + "]*)" + mark + "([^" + inside
                    + "¦\n]*" + closing + ")", "${1}" + placeholder + "${2}")
    text = text.str.replace_all(r"\(([^()¦\n]*\p{L}[^()¦\n]*)\)", OPEN + "${1}" + CLOSE)
    stretch = _trim_quotes(pl.element().str.replace_all(r"\s+", " "))
    segments = (
        text.str.replace_all(r"[¦,;:()\[\]\n]|\s[—–-]\s|[—–]|\.(?:\s|$)", "\x1f")
        .str.split("\x1f")
        .list.eval(pl.when(stretch.str.contains(QUALIFIER)).then(stretch)  # (as it stands)
                   .otherwise(stretch
                   .str.replace(r"(?i)^(?:(?:a|an|the|and|or|that|which|with|of|in|is|are|to)"
                                r"\s+)+", "")
                   .str.replace(r"(?i)(?:\s+(?:a|an|the|and|or|that|which|whose|with|of|in|is|"
                                r"are|to|for|by|on|at|as))+$", "")))
        # a stretch says something when it holds two content words, or one in a phrase
        # ("each with a source"), or a name in backticks said something of ("no `debug`
        # field", "a string `id`"); a bare noun ("a markdown note") names the output's kind;
        # a requirement no reader could read (KEPT) always does
        .list.eval(pl.element().filter(
            (_content_words(pl.element()).list.len() >= 2)
            | ((_content_words(pl.element()).list.len() == 1)
               & (pl.element().str.count_matches(r"\S+") >= 3))
            | pl.element().str.contains(TICKED_SAID)
            # a participle alone ("a slug, hyphenated", "the report, anonymized") says what
            # the output is (v11 dropped it)
            | ((_content_words(pl.element()).list.len() == 1)
               & pl.element().str.contains(r"(?i)^\p{L}[\p{L}\-]{3,}ed$"))
            | pl.element().str.contains(KEPT, literal=True)
            | pl.element().str.contains(QUALIFIER)
            # a mask no reader read ("as N.N.N.N"): how the output is written (v20 as first
            # written dropped it, having no word)
            | pl.element().str.contains(UNREAD_MASK)))
    )
    # a kept phrase says something even in words that are filler elsewhere ("not JSON")
    kept = (segments.list.eval(pl.element().filter(pl.element().str.contains(KEPT, literal=True)))
            .list.join(" ").str.to_lowercase().str.extract_all(r"\p{L}{3,}"))
    joined = (segments.list.join(" … ").str.replace_all(KEPT, "", literal=True)
              .str.replace_all(COMMA, ",", literal=True).str.replace_all(OPEN, "(", literal=True)
              .str.replace_all(CLOSE, ")", literal=True)
              .str.replace_all(ABBREVIATION_DOT, ".", literal=True)
              .str.replace_all(COLON, ":", literal=True))
    # a name in backticks said something of is a word of the question
    ticked = joined.str.extract_all(TICKED_SAID).list.eval(
        pl.element().str.extract(r"`([^`]+)`", 1).str.to_lowercase())
    return (pl.when(segments.list.len() > 0).then(joined),
            pl.concat_list(_content_words(joined), kept, ticked.fill_null(NO_TEXTS),
                           joined.str.extract_all(UNREAD_MASK).fill_null(NO_TEXTS),
                           # (a year has no word of letters: the qualifier is one)
                           segments.list.eval(pl.element().filter(
                               pl.element().str.contains(QUALIFIER)).str.to_lowercase()))
            .list.unique(maintain_order=True))


# Clauses already read by this process, by text: a worker grades shard after shard of the
# same few programs, so most shards find every clause here. Bounded: when full, only the
# clauses of the frame at hand are kept.
_READ: dict[str, pl.DataFrame] = {}
READ_CACHE_CLAUSES = 20_000


class SharedReadings(Protocol):
    """Readings kept beyond one process (the grade's workers keep them in the results, see
    `ResultStore.saved_readings`): asked before a clause is read, given each new reading.
    Both may fail quietly: they only spare work."""

    def fetch(self, keys: pl.Series) -> pl.DataFrame | None:
        """The kept readings of the clauses `keys` names (any of them; None for none)."""

    def save(self, readings: pl.DataFrame) -> None:
        """Keep `readings` (one row per clause, keyed by `_akey`)."""


_SHARED: dict[str, SharedReadings] = {}


@contextlib.contextmanager
def shared_readings(shared: SharedReadings) -> Iterator[None]:
    """Look clauses up in `shared`, and save new readings there, within the block."""
    before = _SHARED.get("readings")
    _SHARED["readings"] = shared
    try:
        yield
    finally:
        if before is None:
            _SHARED.pop("readings", None)
        else:
            _SHARED["readings"] = before


@functools.cache
def readings_version() -> str:
    """What kept readings are filed under: a digest of this module's source and of polars'
    version. Code that reads clauses differently never finds another's readings."""
    with open(__file__, "rb") as handle:
        source = handle.read()
    return hashlib.sha256(source + pl.__version__.encode()).hexdigest()[:16]


def clause_requirements(frame: pl.DataFrame) -> pl.DataFrame:
    """Return `frame` with the requirement columns described in the module docstring."""
    # Runs of one program repeat its contract: each distinct clause text is read once.
    key = pl.concat_str(pl.col("description").fill_null(""),
                        pl.col("details").list.join("\x1f"), separator="\x1e").alias("_akey")
    frame = frame.with_columns(key)
    distinct = frame.select("_akey", "description", "details").unique("_akey")
    known = _READ.get("rows")
    new = distinct if known is None else distinct.join(known.select("_akey"), on="_akey",
                                                       how="anti")
    if new.height or known is None:
        read = _read(new)
        if known is not None:
            if known.height + read.height > READ_CACHE_CLAUSES:
                known = known.join(distinct.select("_akey"), on="_akey", how="semi")
            try:
                read = pl.concat([known, read], how="vertical_relaxed")
            except pl.exceptions.PolarsError:  # types that do not line up: start afresh
                read = _requirements(distinct.with_row_index("_row")).drop("description",
                                                                           "details")
        _READ["rows"] = known = read
    return frame.join(known, on="_akey", how="left", maintain_order="left").drop("_akey")


def _read(new: pl.DataFrame) -> pl.DataFrame:
    """The readings of the clauses of `new`: those kept elsewhere (`shared_readings`) as kept,
    the others read now (and kept there)."""
    shared = _SHARED.get("readings")
    found = shared.fetch(new.get_column("_akey")) if shared is not None and new.height else None
    rest = new if found is None else new.join(found.select("_akey"), on="_akey", how="anti")
    read = (_requirements(rest.with_row_index("_row")).drop("description", "details")
            if rest.height or found is None else None)
    if read is not None and rest.height and shared is not None:
        shared.save(read)
    if found is None:
        return read
    if read is None:
        return found
    try:
        return pl.concat([found, read], how="vertical_relaxed")
    except pl.exceptions.PolarsError:  # kept readings that do not line up: read them too
        return _requirements(new.with_row_index("_row")).drop("description", "details")


# What puts the fields said after it inside another field: "`checks` …, each with", "`checks`
# each have", "each check in `checks` has", "every item has", "a `results` array of objects
# with". Group 1 or 2 is that field, where named ("each check in `checks`": 2), or 3.
CONTAINS = (r"(?i)(?:(" + TICKED + r")[^`.;\n]*?)?\b(?:each|every)\b(?:\s+[\p{L}\-]+){0,2}?"
            r"(?:\s+(?:in|of)\s+(" + TICKED + r"))?\s+(?:with|has|have|having|containing"
            r"|including|holding|carrying)\b|(" + TICKED + r")\s+(?:arrays?|lists?)\s+of\s+"
            r"(?:objects|items|entries|records|maps|dicts)\s*,?\s+(?:each\s+)?(?:with|having"
            r"|containing|including)\b")


# A sub-item whose field may be absent: "`code`: optional, an integer", "`retry_after`: an
# integer, only when status is "error"" (v11 required the field: an output without it failed)
# Words saying a value may be null ("`reason`: null when it passed", "nullable")
NULL_SAID = r"(?i)\b(?:null|nullable|nil)\b"
OPTIONAL = (r"(?i)\b(?:optional(?:ly)?|only\s+(?:when|if)|if\s+(?:any|present|applicable|available"
            r"|known|needed|resolved|assigned|set|relevant|provided|given|found)|when\s+(?:present"
            r"|applicable|available|known|set)|where\s+known|or\s+nothing|(?:may|can)\s+be\s+"
            r"(?:omitted|absent|missing|null|left\s+out)|nullable|omitted\s+(?:when|if|otherwise)"
            r")\b")


def _requirements(frame: pl.DataFrame) -> pl.DataFrame:
    parts = _analyse_parts(_parts(frame))
    optional = (frame.select("_row", "details").with_columns(
        pl.int_ranges(1, pl.col("details").list.len() + 1).alias("_part"))
        .explode("details", "_part").drop_nulls("details")
        .filter(pl.col("details").str.contains(OPTIONAL)))
    # ... and when it must be there is asked ("`code`: only when status is "error"")
    conditions = optional.select(
        "_row", "_part", pl.col("details").str.extract(r"^\s*`([^`]+)`", 1).alias("_field"),
        pl.col("details").str.extract(r"(?i)\b(only\s+(?:when|if)\b[^;\n]*)", 1)
        .str.strip_chars(" .,;").alias("phrase")).drop_nulls("phrase")
    # the fields whose JSON null is no value: a sub-item that may be absent, or says null
    nullable = (optional.select("_row", "details")
                .vstack(frame.select("_row", "details").explode("details").drop_nulls("details")
                        .filter(pl.col("details").str.contains(NULL_SAID)))
                .select("_row", normalise_key(pl.col("details").str.extract(r"^\s*`([^`]+)`", 1))
                        .alias("_k")).drop_nulls("_k")
                .group_by("_row", maintain_order=True)
                .agg(pl.col("_k").unique(maintain_order=True).alias("nullable_fields")))
    optional = optional.select("_row", "_part")
    clause = parts.filter(pl.col("_part") == 0).drop("_part", "_field", "t", "_each_nested",
                                                     "_sub_said")
    sub = parts.filter(pl.col("_part") > 0)
    fields = pl.concat([
        # a sub-item names a field of the output (one it must have, unless it may be absent)
        sub.join(optional, on=["_row", "_part"], how="anti").select("_row", "_part", pl.struct(
            pl.col("_field").alias("name"), normalise_key(pl.col("_field")).alias("key"),
            pl.lit(False).alias("nested"),
            pl.lit("sub-item").alias("phrase")).alias("field")),
        parts.select("_row", "_part", "_field_lists", "_each_nested",
                     pl.col("_field").alias("_parent"))
        .explode("_field_lists").drop_nulls("_field_lists")
        .with_columns(pl.col("_field_lists").struct.field("names"),
                      pl.col("_field_lists").struct.field("phrase"))
        .explode("names").drop_nulls("names")
        .select("_row", "_part", pl.struct(
            pl.col("names").str.strip_chars("` ").alias("name"),
            normalise_key(pl.col("names")).alias("key"),
            # ("with a `findings` array of objects, each with `id`": `findings` holds them)
            ((pl.col("_part") > 0) | (pl.col("_each_nested") & ~pl.col("phrase").str.contains(
                r"(?i)\b(?:arrays?|lists?|objects?)\s*$"))).alias("nested"),
            pl.col("phrase")).alias("field")),
        # a field the clause gives a type ("`count` as an integer") is one it has
        parts.select("_row", "_part", "_field_types", "_each_nested")
        .explode("_field_types").drop_nulls("_field_types")
        .select("_row", "_part", pl.struct(
            pl.col("_field_types").str.extract(FIELD_TYPE, 1).str.strip_chars("`")
            .alias("name"),
            normalise_key(pl.col("_field_types").str.extract(FIELD_TYPE, 1)).alias("key"),
            ((pl.col("_part") > 0) | pl.col("_each_nested")).alias("nested"),
            pl.col("_field_types").alias("phrase")).alias("field")),
    ]).filter(pl.col("field").struct.field("key").str.len_chars() > 0)
    fields = _unique_fields(fields)
    # the clauses whose sub-items are fields of a JSON output ("a JSON object with fields:")
    json_rows = clause.filter(pl.col("formats").list.contains("json")
                              | pl.col("json_shape").is_not_null())["_row"]
    lengths, open_counts = _sub_item_counts(sub, json_rows, conditions)
    # "`total` (a number)" in any part, beside the sub-items' own types
    phrase = pl.col("_field_types")
    # (in a sub-item, of a field other than the sub-item's: inside the sub-item's field, "`checks`:
    # a list, each with `checked_at` (an ISO 8601 timestamp)"; v23 as first written read the
    # output's own `checked_at`)
    inline = (parts.select("_row", "_part", pl.col("_field").alias("_holder"), "_field_types")
              .explode("_field_types").drop_nulls("_field_types")
              .select("_row", "_part",
                      phrase.str.extract(FIELD_TYPE, 1).str.strip_chars("`").alias("_field"),
                      _said_kind(_type_of(phrase.str.extract(FIELD_TYPE, 3),
                                          phrase.str.extract(FIELD_TYPE, 2).is_not_null()),
                                 phrase).alias("value_type"), "_holder")
              .with_columns(pl.when((pl.col("_part") > 0) & (normalise_key(pl.col("_holder"))
                                                             != normalise_key(pl.col("_field"))))
                            .then(normalise_key(pl.col("_holder"))).alias("_parent")))
    typed = pl.concat([sub.select("_row", "_part", "_field", "value_type", "value_within"),
                       inline.drop("_holder")], how="diagonal_relaxed").sort(
        "_row", "_part", maintain_order=True)
    types = (typed.filter(pl.col("value_type").is_not_null() & pl.col("_field").is_not_null())
             .select("_row", pl.struct(
                 pl.col("_field").alias("field"), normalise_key(pl.col("_field")).alias("key"),
                 pl.col("value_type").alias("type"), pl.col("value_within").alias("within"),
                 pl.col("_parent").is_not_null().alias("nested"),
                 pl.col("_parent").alias("parent")).alias("field_types"))
             .group_by("_row", maintain_order=True).agg("field_types"))
    # a sub-item's quality words ("`summary`: a concise summary") are judged as the clause's;
    # not its verbs, which describe what the field holds ("`url`: the address", "`why`:
    # explains the routing"), nor "complete", a value as often as a quality
    judged = (sub.select("_row", "_part", "_field", "judgments").explode("judgments")
              .drop_nulls("judgments")
              .filter(~pl.col("judgments").str.contains(SUB_ITEM_NOT_JUDGED))
              .sort("_row", "_part", maintain_order=True)
              .select("_row", pl.when(pl.col("_field").is_not_null())
                      .then(pl.format("`{}`: {}", pl.col("_field"), pl.col("judgments")))
                      .otherwise(pl.col("judgments")).alias("_judged"))
              .group_by("_row", maintain_order=True).agg("_judged"))
    scoped = {}
    # an enumeration of a field inside another ("- `checks`: a list of objects, each with
    # `name` and `status` ("pass" or "fail")", "a list of `services`, each with `status` (up
    # or down)") is of the nested field, not of a field of the output's own of that name
    # (v22 as first written read the output's own `status`)
    # (in the clause itself, where the enumeration or range is said after "`x` …, each with",
    # "each check in `x` has", "`x` array of objects with" (CONTAINS): the elements of a field
    # `x`; after "whose items each have", of a field below the top; a JSON array's own
    # elements are its top)
    for family in ("enums", "ranges"):
        long = (parts.select("_row", "_part", "_field", family).explode(family)
                .drop_nulls(family))
        own = pl.col(family).struct.field("field")
        said = pl.col(family).struct.field("phrase").str.extract(r"(`[^`]+`.*)$", 1)
        # the sentence before it, up to where the clause says it (a byte offset)
        at = pl.col("_description").str.find(said, literal=True)
        before = (pl.col("_description").cast(pl.Binary).bin.head(at).cast(pl.String)
                  .str.extract(r"([^.;\n]*)$", 1))
        # (the last such words before it: "a `services` list, each with a `status` (…), and a
        # `checks` list, each with a `status` (…)" puts the second in `checks`)
        holder = before.str.extract_all(CONTAINS).list.last()
        container = pl.coalesce(holder.str.extract(CONTAINS, 2), holder.str.extract(CONTAINS, 1),
                                holder.str.extract(CONTAINS, 3))
        long = long.join(frame.select("_row", pl.col("description").fill_null("")
                                      .alias("_description")), on="_row", how="left")
        # (each of a JSON array's own elements, "a JSON array of objects, each with a `state`",
        # is at its top: a holder is named, or the sentence names no array or list of them)
        inside = (own.is_not_null() & (own != "[]") & pl.when(pl.col("_part") > 0).then(
            normalise_key(own) != normalise_key(pl.col("_field"))).otherwise(
            holder.is_not_null() & (container.is_not_null() | ~before.str.contains(
                r"(?i)\b(?:arrays?|lists?)\s+of\b"))))
        long = long.with_columns(pl.col(family).struct.with_fields(
            inside.fill_null(False).alias("nested"),
            pl.when(inside).then(normalise_key(pl.when(pl.col("_part") > 0)
                                               .then(pl.col("_field")).otherwise(container)))
            .alias("parent"))).drop("_description")
        # (each element of a sub-item's field is the field's: its values are its elements)
        long = (long.with_columns(pl.col(family).struct.with_fields(
                    pl.when((pl.field("field") == "[]") & (pl.col("_part") > 0))
                    .then(pl.col("_field")).otherwise(pl.coalesce(pl.field("field"),
                                                                  pl.col("_field")))
                    .alias("field")))
                .with_columns(pl.col(family).struct.with_fields(
                    normalise_key(pl.field("field")).alias("key"))))
        scoped[family] = (long.sort("_row", "_part", maintain_order=True)
                          .group_by("_row", maintain_order=True).agg(pl.col(family)))
    clause = (
        clause.drop("enums", "ranges", "_field_lists", "_field_types")
        .join(scoped["enums"], on="_row", how="left")
        .join(scoped["ranges"], on="_row", how="left")
        .join(fields.group_by("_row", maintain_order=True).agg(pl.col("field").alias("fields")),
              on="_row", how="left")
        .join(lengths, on="_row", how="left")
        .join(types, on="_row", how="left")
        .join(open_counts, on="_row", how="left")
        .join(nullable, on="_row", how="left")
        .join(judged, on="_row", how="left")
        .with_columns(pl.concat_list("judgments", pl.col("_judged").fill_null(NO_TEXTS))
                      .list.unique(maintain_order=True).alias("judgments"))
        # a count no check reads in a sub-item, and the values of an output that goes on
        # after them, are questions for judgment, never dropped
        .with_columns(pl.concat_list(pl.col("_asked").fill_null(NO_TEXTS),
                                     pl.col("_open").fill_null(NO_TEXTS)).alias("_open"))
        .with_columns(pl.when(pl.col("_open").list.len() > 0).then(pl.struct(
            pl.concat_str(pl.col("unchecked_text"), pl.col("_open").list.join(" … "),
                          separator=" … ", ignore_nulls=True).alias("unchecked_text"),
            pl.concat_list(pl.col("unchecked_words"), pl.col("_open").list.join(" ")
                           .str.to_lowercase().str.extract_all(r"\p{L}{3,}"))
            .list.unique(maintain_order=True).alias("unchecked_words")))
            .otherwise(pl.struct("unchecked_text", "unchecked_words")).struct.unnest())
        .drop("_open", "_asked", "_judged")
    )
    out = frame.join(clause, on="_row", how="left").sort("_row")
    empty_like = {c: scoped[c].schema[c] for c in ("enums", "ranges")}
    out = out.with_columns(
        *[pl.col(c).fill_null(pl.lit([], dtype=t)) for c, t in empty_like.items()],
        pl.col("fields").fill_null(pl.lit([], dtype=pl.List(fields.schema["field"]))),
        pl.col("field_lengths").fill_null(pl.lit([], dtype=lengths.schema["field_lengths"])),
        pl.col("field_types").fill_null(pl.lit([], dtype=types.schema["field_types"])),
        pl.col("nullable_fields").fill_null(NO_TEXTS),
    )
    decidable = (
        (pl.col("formats").list.len() > 0) | (pl.col("excluded_formats").list.len() > 0)
        | (pl.col("quantities").list.len() > 0)
        | (pl.col("literals").list.eval(
            pl.element().struct.field("mode") != "absent").list.any())
        | pl.col("alternative").is_not_null() | (pl.col("enums").list.len() > 0)
        | (pl.col("fields").list.len() > 0) | (pl.col("ranges").list.len() > 0)
        | (pl.col("field_lengths").list.len() > 0) | (pl.col("field_types").list.len() > 0)
        | (pl.col("only_fields") & (pl.col("fields").list.len() > 0))
        | pl.col("value_type").is_not_null() | (pl.col("item_edges").list.len() > 0)
        | (pl.col("orders").list.len() > 0) | pl.col("letter_case").is_not_null()
    )
    # A clause that only names a kind of output other than a generic one ("`out`: a haiku",
    # "a phone number") states nothing the checks read: whether the output is one is a
    # question for judgment (its publication alone satisfied it at full confidence). The
    # output's own name repeated ("`report`: the final report") asks nothing (meets_description
    # drops a name's words).
    head = pl.col("_bare").str.to_lowercase().str.extract(r"(\p{L}[\p{L}\-]*)$", 1) \
        .str.replace(r"s$", "")
    # "an XML document", "a TOML file": a generic noun named by a format's acronym
    acronym = pl.col("_bare").str.extract(r"^(?-i:([A-Z]{2,6}))\s+\p{L}", 1).str.to_lowercase()
    head = pl.when(head.is_in(GENERIC_NOUNS) & acronym.is_not_null()).then(acronym) \
        .otherwise(head)
    only_named = (pl.col("_bare").is_not_null() & ~decidable & pl.col("unchecked_text").is_null()
                  & (pl.col("judgments").list.len() == 0) & (pl.col("vague_words").list.len() == 0)
                  & ~pl.col("forbids_secrets") & (pl.col("literals").list.len() == 0)
                  & ~head.is_in(GENERIC_NOUNS) & (head.str.len_chars() >= 3))
    out = out.with_columns(
        pl.when(only_named).then(pl.col("_bare").str.strip_chars())
        .otherwise(pl.col("unchecked_text")).alias("unchecked_text"),
        pl.when(only_named).then(pl.concat_list(head))
        .otherwise(pl.col("unchecked_words")).alias("unchecked_words"),
    ).drop("_bare")
    return out.with_columns(decidable.alias("decidable")).drop("_row")


NO_TEXTS = pl.lit([], dtype=pl.List(pl.String))


# A sub-item of a JSON output's field that says it holds an array ("an array of table names",
# "a list of strings"); group 1 is the phrase
LIST_OF_FIELD = r"(?i)^\W*((?:an?\s+)?(?:json\s+)?(?:array|list))\b"


def _sub_item_counts(sub: pl.DataFrame, json_rows: pl.Series, conditions: pl.DataFrame
                     ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(field_lengths, _open) by clause row, from the counts and phrases its sub-items state.
    A length in words or characters of a named field ("`summary`: at most 50 words") is
    checked on the field's values, and so is a count of items of a field of a JSON output
    (a clause of `json_rows`: "`reasons`: a list of 1-3 short strings", the elements of its
    arrays); any other count ("`Summary`: 2-3 sentences", a sub-item naming no field), any
    exact phrase ('`log`: starts with "[INFO]"', '`reply`: never mentions "password"'), order
    or letter case ("`items`: sorted by date", "`id`: all lowercase") is left to the judgment
    question, as "`field`: phrase", and so are the `conditions` under which a field must be
    there."""
    counts = (sub.select("_row", "_part", "_field", "quantities", "t").explode("quantities")
              .drop_nulls("quantities").unnest("quantities")
              # "a list of at most 3 strings": the count of a field said to hold an array
              .with_columns(pl.when((pl.col("measure") == "items")
                                    & pl.col("t").str.contains(LIST_OF_FIELD))
                            .then(pl.format("{} of {}", pl.col("t").str.extract(LIST_OF_FIELD, 1),
                                            pl.col("phrase")))
                            .otherwise(pl.col("phrase")).alias("phrase")).drop("t"))
    counted = (pl.col("measure") == "items") & pl.col("_row").is_in(json_rows.implode())
    measurable = (pl.col("_field").is_not_null() & (pl.col("scope") == "whole")
                  & (pl.col("measure").is_in(["words", "chars"]) | counted))
    # "`late`: an array of table names" (no count): the field holds an array, of any length
    listed = (sub.filter(pl.col("_field").is_not_null() & pl.col("_row").is_in(json_rows.implode())
                         & pl.col("t").str.contains(LIST_OF_FIELD)
                         & ~pl.col("quantities").list.eval(
                             pl.element().struct.field("measure") == "items").list.any())
              .select("_row", "_part", "_field", pl.lit(0, pl.Int64).alias("min"),
                      pl.lit(None, pl.Int64).alias("max"), pl.lit("items").alias("measure"),
                      pl.col("t").str.extract(LIST_OF_FIELD, 1).alias("phrase")))
    lengths = (pl.concat([counts.filter(measurable).select(listed.columns), listed],
                         how="vertical_relaxed").sort("_row", "_part", maintain_order=True)
               .select("_row", pl.struct(
                   pl.col("_field").alias("field"), normalise_key(pl.col("_field")).alias("key"),
                   "min", "max", "measure", "phrase").alias("field_lengths"))
               .group_by("_row", maintain_order=True).agg("field_lengths"))
    phrases = (sub.select("_row", "_part", "_field", "literals").explode("literals")
               .drop_nulls("literals")
               .select("_row", "_part", "_field", pl.col("literals").struct.field("phrase")))
    # an order or a letter case a sub-item states ("`items`: sorted by date"): no check reads
    # it per field
    said = (sub.select("_row", "_part", "_field", pl.col("_sub_said").alias("phrase"))
            .explode("phrase").drop_nulls("phrase")
            .with_columns(pl.col("phrase").str.strip_chars(" ,;")))
    asked = pl.concat([counts.filter(~measurable).select("_row", "_part", "_field", "phrase"),
                       phrases, said, conditions], how="vertical_relaxed"
                      ).sort("_row", "_part", maintain_order=True)
    open_counts = (asked.select(
        "_row", pl.when(pl.col("_field").is_not_null())
        .then(pl.format("`{}`: {}", pl.col("_field"), pl.col("phrase")))
        .otherwise(pl.col("phrase")).alias("_open"))
        .group_by("_row", maintain_order=True).agg("_open"))
    return lengths, open_counts


def _unique_fields(fields: pl.DataFrame) -> pl.DataFrame:
    """One entry per field name and clause: a sub-item's own name wins over a nested mention."""
    return (
        fields.with_columns(pl.col("field").struct.field("key").alias("_n"))
        .sort("_row", "_part", maintain_order=True)
        .unique(["_row", "_n"], keep="first", maintain_order=True)
        .drop("_n")
    )
