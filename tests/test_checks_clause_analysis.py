"""Table-driven tests of clause analysis: a clause's text in, the requirements it states out.

The clause rows go through the real `clause_frame` (built with `pipeline.tables.frame`), all
cases in one frame: the analysis runs as column expressions over every clause at once.
"""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.checks.frame import clause_frame
from pipeline.tables import frame

RUN = "20261112-031502-analysis"


def q(lo, hi, measure, scope="whole"):
    return (lo, hi, measure, scope)


CASES = [
    # formats
    ("a markdown table", (), {"formats": ["table"]}),
    # a table named by what it holds; not any noun before "table"
    ("a comparison table of the three options", (), {"formats": ["table"]}),
    ("a summary table with one row per service", (), {"formats": ["table"]}),
    ("the DDL for a new table", (), {"formats": []}),
    ("a table of contents", (), {"formats": []}),
    ("a JSON array of table names", (), {"formats": ["json"], "json_shape": "array"}),
    ("a JSON object with fields:", (), {"formats": ["json"], "json_shape": "object"}),
    ("a JSON array of at least 3 URL strings", (),
     {"json_shape": "array", "json_elements": "string"}),
    ("a JSON list of whole numbers", (), {"json_shape": "array", "json_elements": "integer"}),
    ("a JSON array of council items, each with `title`", (), {"json_elements": None}),
    ("a JSON array of findings with their numbers", (), {"json_elements": None}),
    ("a numbered list of the queries", (), {"formats": ["numbered_list"]}),
    ("exactly 3 bullet points", (), {"formats": ["bulleted_list"],
                                     "quantities": [q(3, 3, "items")]}),
    ("a markdown list of findings", (), {"formats": ["markdown_list"]}),
    ("a YAML file", (), {"formats": ["yaml"]}),
    ("a CSV export", (), {"formats": ["csv"]}),
    ("a unified diff inside a ```diff fenced code block", (),
     {"formats": ["code_block", "diff"]}),
    ("the fix as a git patch", (), {"formats": ["diff"]}),
    ("a summary of the diff", (), {"formats": []}),
    ("plain prose, not a diff", (), {"formats": [], "excluded_formats": ["diff"]}),
    # a file name's extension is no format; it ends the output
    ("a filename ending in .csv", (), {"formats": [], "literals": [(".csv", "ends")]}),
    ("the path of the report, with a .md extension", (), {"literals": [(".md", "ends")]}),
    ("the config as YAML, saved to config.yaml", (), {"formats": ["yaml"]}),
    # a numbered or bulleted list said after its noun
    ("a list of steps, numbered", (), {"formats": ["numbered_list"]}),
    # a bound on a count rules no format out
    ("a summary in no more than three bullet points", (),
     {"formats": ["bulleted_list"], "excluded_formats": [], "quantities": [q(None, 3, "items")]}),
    ("not more than five numbered steps", (),
     {"formats": ["numbered_list"], "excluded_formats": [], "quantities": [q(None, 5, "items")]}),
    ("a plain summary, no bullet points", (), {"excluded_formats": ["bulleted_list"]}),
    ("a list of the steps to reproduce, each numbered", (), {"formats": ["numbered_list"]}),
    ("a list of findings, numbered by severity", (), {"formats": ["numbered_list"]}),
    ("a markdown brief", (), {"formats": ["markdown"]}),
    ("the decision, naming every table whose status is bad", (), {"formats": []}),
    # lines, not a markdown list; one line of values, no CSV table
    ("a list of URLs, one per line", (), {"formats": []}),
    ("a markdown list of the pages fetched, one per line", (), {"formats": ["markdown_list"]}),
    ("a comma-separated list of tags", (), {"formats": [], "inline_list": ","}),
    ("up to 3 tags, separated by semicolons", (), {"inline_list": ";"}),
    ("comma-separated values with a header", (), {"inline_list": None}),
    ("a list of 3 keywords separated by commas", (), {"formats": []}),
    ("up to 5 keywords, comma-separated", (), {"formats": []}),
    ("comma-separated values with a header", (), {"formats": ["csv"]}),
    ("a newline-separated list of ids", (), {"formats": []}),
    ("a bulleted list, one item per line", (), {"formats": ["bulleted_list"]}),
    ("a markdown table with the columns Name, Role and Email", (),
     {"fields": [("Name", False), ("Role", False), ("Email", False)]}),
    ("a CSV with columns date and amount", (), {"fields": [("date", False), ("amount", False)]}),
    # three names or more, without "and", closing the part
    ("a CSV with columns id, name, email.", (),
     {"fields": [("id", False), ("name", False), ("email", False)], "unchecked_text": None}),
    ("a table with columns Name, Owner, Status", (),
     {"fields": [("Name", False), ("Owner", False), ("Status", False)]}),
    ("a table with columns Name, Owner, sorted by Name", (), {"fields": []}),
    # an aside in parentheses no reader takes stays whole in the judgment question
    ("a list of risks, each with a severity (low, medium, high)", (),
     {"unchecked_text": "list of risks … each with a severity (low, medium, high)"}),
    ("a Jira ticket key (e.g. PROJ-42)", (),
     {"unchecked_text": "Jira ticket key (e.g. PROJ-42)"}),
    # a count "per item" is a count of every item
    ("a bulleted list, at most 3 sentences per item", (),
     {"quantities": [q(None, 3, "sentences", "each")], "unchecked_text": None}),
    ("a markdown list with one summary of at most 3 sentences per item", (),
     {"quantities": [q(None, 3, "sentences", "each")],
      "unchecked_text": "markdown list with one summary"}),
    # a choice of phrases to mention is asked, not read as the whole output's values
    ('mentions either "Monday" or "Tuesday"', (),
     {"enums": [], "unchecked_text": 'mentions either "Monday" or "Tuesday"'}),
    ('includes one of "a", "b"', (), {"enums": [], "literals": []}),
    # "at least once" is what "mentions" asks already
    ('mentions "refund" at least once', (),
     {"literals": [("refund", "contains")], "unchecked_text": None}),
    # quoted names before their noun; the order of two sections is asked whole
    ('a changelog entry with "Added", "Changed" and "Fixed" headings', (),
     {"fields": [("Added", False), ("Changed", False), ("Fixed", False)]}),
    ('a report with an "Impact" section before the "Timeline" section', (),
     {"literals": [], "unchecked_text":
      'report with an "Impact" section before the "Timeline" section'}),
    # a title's length is its first line's
    ("a report whose title is at most 8 words", (), {"quantities": [q(None, 8, "words",
                                                                        "first")]}),
    # a bare bound is a number's; one said of something is a count (code examples are fenced
    # code blocks: v20 asked "at least 2 code examples")
    ("at least 2 code examples", (),
     {"ranges": [], "quantities": [q(2, None, "code_blocks")], "unchecked_text": None}),
    ("`checked`: at least 3", (), {"ranges": [(None, 3.0, None)]}),
    # "a top-10 list", "no more than a paragraph"
    ("a top-10 list", (), {"quantities": [q(10, 10, "items")]}),
    ("no more than a paragraph", (), {"quantities": [q(None, 1, "paragraphs")]}),
    ("at least a few sources", (), {"quantities": []}),
    # a least value said with the type
    ("a non-negative integer", (), {"value_type": "integer", "ranges": [(None, 0.0, None)]}),
    ("a positive integer", (), {"value_type": "integer", "ranges": [(None, 1.0, None)]}),
    # "out of N" after a score's noun: from 0 (v10: asked); not "3 out of 5 items"
    # a percentage: a number, with "%" or without (v10: asked)
    ("a percentage between 0 and 100", (),
     {"value_type": "percentage", "ranges": [(None, 0.0, 100.0)]}),
    ("a JSON object with `rate` (a percentage)", (), {"field_types": [("rate", "percentage")]}),
    ("a score out of 10", (), {"ranges": [(None, 0.0, 10.0)]}),
    ("3 out of 5 items marked done", (),
     {"quantities": [], "ranges": [], "unchecked_text": "3 out of 5 items marked done"}),
    ("a rating out of 5, then a one-line justification", (), {"ranges": [(None, 0.0, 5.0)]}),
    # a sign, or a bound in words, of a number: "positive" excludes 0 (v11: asked, or dropped)
    ("a positive number", (),
     {"value_type": "number", "ranges": [(None, 0.0, None, ">")], "unchecked_text": None}),
    ("a negative integer", (),
     {"value_type": "integer", "ranges": [(None, None, 0.0, "<")], "unchecked_text": None}),
    ("a non-positive number", (), {"value_type": "number", "ranges": [(None, None, 0.0)]}),
    ("a number less than 1", (),
     {"value_type": "number", "ranges": [(None, None, 1.0, "<")], "unchecked_text": None}),
    ("a confidence above 0.5", (), {"ranges": [(None, 0.5, None, ">")]}),
    ("a score of 1-5", (), {"ranges": [(None, 1.0, 5.0)], "unchecked_text": None}),
    ("a rating of 1 to 10, then a reason", (), {"ranges": [(None, 1.0, 10.0)]}),
    # when a date falls is asked (v11 dropped "in the future" unread: any date satisfied it)
    ("a date in the future", (), {"value_type": "date", "unchecked_text": "in the future"}),
    ("the temperature, below 0", (),
     {"ranges": [(None, None, 0.0, "<")], "unchecked_text": None}),
    ("a price, a positive number", (), {"ranges": [(None, 0.0, None, ">")]}),
    ("not more than 10", (), {"ranges": [(None, None, 10.0)]}),
    ("greater than or equal to 2", (), {"ranges": [(None, 2.0, None)]}),
    # two bounds joined: both read (v11 took "at least 3 and" for a count of "and")
    ("a number at least 0 and at most 1", (),
     {"ranges": [(None, 0.0, None), (None, None, 1.0)], "quantities": []}),
    ("a score of at least 3 or higher", (), {"ranges": [(None, 3.0, None)], "quantities": []}),
    ("at least 3 and at most 5 bullet points", (),
     {"quantities": [q(3, 5, "items")], "ranges": []}),
    ("more than 3 sources", (), {"quantities": [q(4, None, "sources")], "ranges": []}),
    # ... of a field, in its parentheses or its sub-item (v11: the output's first number)
    ("a JSON object with `count` (a positive integer)", (),
     {"ranges": [("count", 1.0, None)], "field_types": [("count", "integer")],
      "fields": [("count", False)], "unchecked_text": None}),
    ("a JSON object with `total` (a positive number)", (),
     {"ranges": [("total", 0.0, None, ">")], "field_types": [("total", "number")]}),
    ("a JSON object with `count` (an integer, at least 1)", (),
     {"ranges": [("count", 1.0, None)], "field_types": [("count", "integer")]}),
    ("a JSON object whose `count` is at least 1", (),
     {"ranges": [("count", 1.0, None)], "fields": [("count", False)], "unchecked_text": None}),
    ("a JSON object where `count` > 0", (), {"ranges": [("count", 0.0, None, ">")]}),
    ("a JSON object; `count` must be greater than 0", (),
     {"ranges": [("count", 0.0, None, ">")]}),
    # a name said alone outside JSON may be the output's own: its number is bounded
    ("`score` is at least 3", (), {"ranges": [(None, 3.0, None)]}),
    # "unique" with an upper bound also rules out repeats (v11 counted each item once)
    ("a list of at most 5 unique tags", (),
     {"quantities": [q(None, 5, "items"), q(0, 0, "duplicates")]}),
    ("a list of at least 3 unique tags", (), {"quantities": [q(3, None, "items")]}),
    ("a bash one-liner", (), {"quantities": [q(None, 1, "lines")], "unchecked_text": None}),
    # every phrase of a list joined by "and" (v11 read the first and dropped the rest)
    ('a summary that mentions both "Q3" and "Q4"', (),
     {"literals": [("Q3", "contains"), ("Q4", "contains")], "unchecked_text": None}),
    ('a summary that includes "a", "b", "c" and "d"', (),
     {"literals": [("a", "contains"), ("b", "contains"), ("c", "contains"),
                   ("d", "contains")]}),
    # "signed" with a quoted phrase: the output's last words (v11: asked)
    ('a reply signed "— Support"', (), {"literals": [("— Support", "ends")],
                                        "unchecked_text": None}),
    # a field that may be absent is not required; when it must be there is asked (v11
    # required it)
    ("a JSON object with fields:", ('`status`: "ok" or "error"',
                                    '`code`: an integer, only when status is "error"'),
     {"fields": [("status", False)], "field_types": [("code", "integer")],
      "unchecked_text": '`code`: only when status is "error"'}),
    ("a JSON object with fields:", ("`id`: a UUID", "`note`: optional, a short text"),
     {"fields": [("id", False)], "unchecked_text": None}),
    # a participle alone after a comma is asked (v11 dropped it: any slug satisfied it)
    ("a slug, hyphenated", (), {"unchecked_text": "hyphenated"}),
    ("the report, anonymized", (), {"unchecked_text": "anonymized"}),
    # "non-empty" of an array or a list: at least one item (v11: asked)
    ("a non-empty JSON array", (), {"quantities": [q(1, None, "items")], "unchecked_text": None}),
    ("a JSON object with a non-empty `items` array", (),
     {"field_lengths": [("items", 1, None, "items")], "fields": [("items", False)]}),
    ("a JSON object whose `tags` list is non-empty", (),
     {"field_lengths": [("tags", 1, None, "items")]}),
    ("a JSON object with fields:", ("`items`: a non-empty array",),
     {"field_lengths": [("items", 1, None, "items")]}),
    # ... "empty" of a named one: none (v21 counted the output's own items)
    ("a JSON object with an empty `results` list", (),
     {"field_lengths": [("results", 0, 0, "items")], "quantities": [],
      "fields": [("results", False)]}),
    ("a JSON object whose `errors` list is empty", (),
     {"field_lengths": [("errors", 0, 0, "items")], "unchecked_text": None}),
    ("a JSON object with `results` as an empty list", (),
     {"field_lengths": [("results", 0, 0, "items")], "unchecked_text": None}),
    ("a JSON object with an empty `results` list if nothing matched", (),
     {"field_lengths": [], "quantities": []}),
    # ... and never empty: at least one (v22 as first written: none, or the output's items)
    ("a JSON object, never an empty `results` list", (),
     {"field_lengths": [("results", 1, None, "items")], "unchecked_text": None}),
    ("if there are none, not null but an empty `warnings` list", (), {"field_lengths": []}),
    ("a JSON object whose `results` list is never empty", (),
     {"field_lengths": [("results", 1, None, "items")], "unchecked_text": None}),
    ("a JSON object with a `tags` array, never an empty list", (),
     {"field_lengths": [("tags", 1, None, "items")], "quantities": []}),
    # "write "none" if there are none": an alternative (v22 as first written: asked)
    ("a list of blockers (write “none” if there are none)", (), {"alternative": "none"}),
    # a range of each of several numbers is asked (v11 bounded the first number only) ...
    ("a list of scores, each between 0 and 1", (),
     {"ranges": [], "unchecked_text": "list of scores … each between 0 and 1"}),
    # ... but a JSON array's elements' ("[]"), and so is a sign of its elements' type (v12
    # asked the first, and took "positive" for the unit of the count)
    ("a JSON array of numbers, each between 0 and 1", (),
     {"ranges": [("[]", 0.0, 1.0)], "unchecked_text": None}),
    ("a JSON array of at most 3 positive integers", (),
     {"ranges": [("[]", 1.0, None)], "quantities": [q(None, 3, "items")],
      "json_elements": "integer"}),
    ("a JSON array of positive numbers", (), {"ranges": [("[]", 0.0, None, ">")]}),
    ("a JSON array of non-negative numbers, each at most 10", (),
     {"ranges": [("[]", 0.0, None), ("[]", None, 10.0)]}),
    ("a JSON list of negative integers", (), {"ranges": [("[]", None, 0.0, "<")]}),
    # ... not a length of each ("each at most 50 characters" counts)
    ("a JSON array of strings, each at most 50 characters", (),
     {"ranges": [], "quantities": [q(None, 50, "chars", "each")]}),
    # a sub-item's array's elements are its field's values (v22: nothing read), and so are
    # those of a field the clause names (v22: asked, or the output's first number bounded)
    ("a JSON object with fields:", ("`scores`: a JSON array of numbers, each between 0 and 1",),
     {"ranges": [("scores", 0.0, 1.0)]}),
    ("a JSON object with fields:", ("`counts`: an array of positive integers",),
     {"ranges": [("counts", 1.0, None)]}),
    ("a JSON object with a `scores` array, each score between 0 and 1", (),
     {"ranges": [("scores", 0.0, 1.0)], "unchecked_text": None}),
    ("a JSON object whose `scores` are each at most 5", (),
     {"ranges": [("scores", None, 5.0)], "unchecked_text": None}),
    ("a JSON object with a `weights` list of numbers between 0 and 1, and a `total`", (),
     {"ranges": [("weights", 0.0, 1.0)]}),
    # ... not a length of each of them ("each at least 2 sources" counts)
    ("a JSON object with a `findings` array, each with at least 2 sources", (),
     {"ranges": []}),
    ("a bulleted list, each under 25 words", (), {"quantities": [q(None, 24, "words", "each")],
                                                  "ranges": []}),
    ("a JSON object with `delay` (under 30) and `name`", (),
     {"ranges": [("delay", None, 30.0, "<")], "fields": [("delay", False), ("name", False)]}),
    ("a JSON object with fields:", ("`profiled`: the number of tables profiled, a positive "
                                    "integer",),
     {"ranges": [("profiled", 1.0, None)], "field_types": [("profiled", "integer")]}),
    ("a JSON object with:", ("`ratio`: a number greater than 0 and at most 1",
                             "`delta`: a negative number"),
     {"ranges": [("ratio", None, 1.0), ("ratio", 0.0, None, ">"), ("delta", None, 0.0, "<")],
      "field_types": [("ratio", "number"), ("delta", "number")]}),
    # ... with the field's noun before its parentheses (v11: the output's first number, or the
    # type and the range dropped unread)
    ("a JSON object with a `count` field (a positive integer)", (),
     {"ranges": [("count", 1.0, None)], "field_types": [("count", "integer")],
      "fields": [("count", False)]}),
    ("a JSON object with a `score` key (0-100)", (), {"ranges": [("score", 0.0, 100.0)]}),
    ("a JSON object with a `total` field (a number)", (),
     {"field_types": [("total", "number")], "fields": [("total", False)]}),
    ("a table with a `count` column (a positive integer)", (),
     {"ranges": [("count", 1.0, None)], "fields": [("count", False)]}),
    # a case said of what is counted: the count, and the case asked
    ("at most 3 lowercase tags", (),
     {"quantities": [q(None, 3, "items")], "unchecked_text": "all lowercase"}),
    ("at most 3 tags, all lowercase", (), {"letter_case": None,
                                           "unchecked_text": "all lowercase"}),
    # what no reader reads but looks like what they do is asked whole
    ("an HTML table", (), {"formats": [], "unchecked_text": "HTML table"}),
    ("a JSON Lines file (one JSON object per line)", (),
     {"formats": [], "quantities": [],
      "unchecked_text": "JSON Lines file (one JSON object per line)"}),
    ("a numbered list starting at 1", (),
     {"formats": ["numbered_list"], "unchecked_text": "numbered list starting at 1"}),
    ("an XML document", (), {"unchecked_text": "XML document"}),
    # words that say something once the readers are done: a date, "nothing else"
    ("a table whose first column is the date", (),
     {"unchecked_text": "table whose first column is the date"}),
    ("a single code block and nothing else", (), {"unchecked_text": "nothing else"}),
    ('one of "approve" or "reject", the single word only, nothing else in the file', (),
     {"unchecked_text": None}),
    # what looks like a count but is none is asked, not dropped
    ("a summary for each finding", (), {"quantities": [], "unchecked_text":
                                        "a summary for each finding"}),
    ("a table with one row per service", (), {"quantities": [], "formats": ["table"]}),
    ("a list mapping each comment (`file:line`) to its fix", (),
     {"unchecked_text": "list mapping each comment (`file:line`) to its fix"}),
    ("a table with two columns and a total row", (), {"fields": []}),
    # a backticked name before what it is; capitalised section titles
    ("valid JSON with a `status` key", (), {"fields": [("status", False)]}),
    ('a JSON object with keys "name" and "age"', (),
     {"fields": [("name", False), ("age", False)]}),
    ('a CSV with columns "date", "amount"', (), {"fields": [("date", False), ("amount", False)]}),
    ("an object with an `id` field and a `title` field", (),
     {"fields": [("id", False), ("title", False)]}),
    ("JSON containing the `claims` and `sources` keys", (),
     {"fields": [("claims", False), ("sources", False)]}),
    ("valid JSON without a `debug` key", (), {"fields": []}),
    ("a report with sections Summary, Findings and Known Issues", (),
     {"fields": [("Summary", False), ("Findings", False), ("Known Issues", False)]}),
    ("a report with sections for each item and a summary", (), {"fields": []}),
    ("a table with columns for each metric and its value", (), {"fields": []}),
    ("a JSON object with `score` between 0 and 1", (), {"ranges": [("score", 0.0, 1.0)]}),
    ("a JSON object with a `findings` array of objects, each with `id` and `title`", (),
     {"fields": [("id", True), ("title", True), ("findings", False)]}),
    # the field that holds an array, and a field given a type, are fields the output has
    ("a JSON object with a `findings` array", (), {"fields": [("findings", False)]}),
    ("a JSON object with `count` as an integer", (),
     {"fields": [("count", False)], "unchecked_text": None}),
    ("a JSON object with a boolean `done`", (), {"fields": [("done", False)]}),
    # in a clause about JSON, a key's name after "with" is a field it has, said nothing more
    # of; elsewhere, or followed by another word, it is not
    ("a JSON array of objects, each with an `id` and a `name`", (),
     {"fields": [("id", False), ("name", False)], "unchecked_text": None}),
    ("valid JSON with an `_id`, sorted by date", (), {"fields": [("_id", False)]}),
    ("a JSON object with a `main` function", (), {"fields": []}),
    ("a reply tagged with `urgent`", (), {"fields": []}),
    ("a markdown list, each item with a `url`", (),
     {"fields": [], "unchecked_text": "each item with a `url`"}),
    # a name in backticks said something of no reader takes is asked
    ("a JSON object with no `debug` field", (),
     {"unchecked_text": "JSON object with no `debug` field"}),
    ("a JSON object with a string `id`", (),
     {"unchecked_text": "JSON object with a string `id`"}),
    ("a JSON object with `score` (0-100)", (), {"unchecked_text": None}),
    ("a JSON array of objects, each with `id` and `title`", (),
     {"fields": [("id", False), ("title", False)]}),
    ('a markdown heading "## Summary" followed by a paragraph', (),
     {"fields": [("Summary", False)]}),
    ('release notes with sections "Features", "Fixes" and "Known issues"', (),
     {"fields": [("Features", False), ("Fixes", False), ("Known issues", False)]}),
    # the named fields and no other
    ("a JSON object with exactly the keys `a` and `b`", (),
     {"only_fields": True, "fields": [("a", False), ("b", False)], "unchecked_text": None}),
    ("a table with columns `claim`, `severity` and no other columns", (),
     {"only_fields": True, "unchecked_text": None}),
    ("a JSON object with fields `a` and `b`", (), {"only_fields": False}),
    # a precision no check reads is asked, never dropped
    ("a number, rounded to 2 decimals", (),
     {"value_type": "number", "unchecked_text": "rounded to 2 decimals"}),
    ("the total as a number with 2 decimal places", (),
     {"value_type": "number", "unchecked_text": "with 2 decimal places"}),
    ("a number with no more than 2 decimal places", (),
     {"value_type": "number", "unchecked_text": "with no more than 2 decimal places"}),
    ("a price, at most 2 decimals", (), {"unchecked_text": "at most 2 decimals"}),
    # a clause that is one value of a type
    ("an integer", (), {"value_type": "integer", "unchecked_text": None}),
    # a date or time written as a mask
    ("a date in the format DD/MM/YYYY", (),
     {"value_type": "masked", "value_mask": "DD/MM/YYYY", "unchecked_text": None}),
    ("a time in HH:MM format", (), {"value_type": "masked", "value_mask": "HH:MM"}),
    ("the meeting time, as HH:MM", (), {"value_type": "masked", "value_mask": "HH:MM"}),
    ("a date in YYYY-MM-DD format", (), {"value_type": "iso_date", "value_mask": None}),
    ("a JSON object with `due` as DD/MM/YYYY", (), {"value_type": None, "value_mask": None}),
    # a blank line after the first line (v12 dropped it unread); not between paragraphs
    ("a commit message: a subject line of at most 50 characters, a blank line, then a body",
     (), {"blank_after_first": True, "quantities": [q(None, 50, "chars", "first")]}),
    ("a title, an empty line, then the text", (),
     {"blank_after_first": True, "unchecked_text": None}),
    ("an email with a subject line followed by a blank line and the body", (),
     {"blank_after_first": True}),
    ("a title, then paragraphs separated by a blank line", (), {"blank_after_first": False}),
    ("a title then paragraphs separated by a blank line", (), {"blank_after_first": False}),
    # a CSV's header row (v12 asked it); "without a header row" and a table's stay asked
    ("a CSV with a header row", (), {"csv_header": True, "unchecked_text": None}),
    ("a CSV file with column headers", (), {"csv_header": True, "unchecked_text": None}),
    ("CSV data, including a header line", (), {"csv_header": True, "unchecked_text": None}),
    ("a CSV without a header row", (), {"csv_header": False, "csv_headerless": True}),
    ("a CSV with no header row, exactly 3 rows", (),
     {"csv_header": False, "csv_headerless": True}),
    ("a CSV with a header row", (), {"csv_headerless": False}),
    ("a markdown table with a header row", (), {"csv_header": False}),
    ("a markdown table without a header row", (), {"csv_headerless": False}),
    # a Unix timestamp and a bare address (v23 asked "a Unix timestamp", took any timestamp
    # for "a timestamp (Unix seconds)" and an address after a display name for a bare one)
    ("a Unix timestamp", (), {"value_type": "unix_time", "unchecked_text": None}),
    ("a timestamp (Unix seconds)", (), {"value_type": "unix_time"}),
    ("an ISO 8601 timestamp, not a Unix timestamp", (), {"value_type": "iso_datetime"}),
    ("an RFC 3339 timestamp", (), {"value_type": "iso_datetime", "quantities": []}),
    ("a bare email address", (), {"value_type": "bare_email", "unchecked_text": None}),
    ("an email address (no display name)", (), {"value_type": "bare_email"}),
    ("an email address", (), {"value_type": "email"}),
    # a number's mask: X, x or # for each digit, and a mark besides (v12 asked it)
    ("a price in the format $X.XX", (),
     {"value_type": "masked", "value_mask": "$X.XX", "unchecked_text": None}),
    ("a total formatted as X,XXX.XX, in dollars", (),
     {"value_type": "masked", "value_mask": "X,XXX.XX"}),
    ("a number like x.xx", (), {"value_type": "masked", "value_mask": "x.xx"}),
    ("a share of revenue formatted as XX.X%", (),
     {"value_type": "masked", "value_mask": "XX.X%"}),
    ("the version as X", (), {"value_type": None, "value_mask": None}),
    # a version's numbers (v19 read nothing in these, and satisfied them with any text)
    ("the version number, as X.Y.Z", (),
     {"value_type": "masked", "value_mask": "X.Y.Z", "unchecked_text": None}),
    ("the release tag, formatted as vX.Y", (), {"value_type": "masked", "value_mask": "vX.Y"}),
    ("the version, written as MAJOR.MINOR.PATCH", (),
     {"value_type": "masked", "value_mask": "MAJOR.MINOR.PATCH"}),
    ("a JSON object with the version as X.Y.Z", (), {"value_type": None, "value_mask": None}),
    # ... only where the output is that version: in a clause about something else it is asked
    # (v20 as first written failed a changelog and a one-sentence note on it)
    ("a changelog with entries grouped under headings like vX.Y", (),
     {"value_type": None, "value_mask": None}),
    ("one sentence naming the new version (as X.Y.Z)", (),
     {"value_type": None, "unchecked_text": "naming the new version (as X.Y.Z)"}),
    ("the average rating, formatted as X.X", (), {"value_type": "masked", "value_mask": "X.X"}),
    # a mask no reader reads is asked, never dropped for having no word
    # a time zone, a year or a domain closing a value's clause is what the value is within
    # (v21 asked it, v20 dropped it: any timestamp, date or URL met the clause at 95) ...
    ("an ISO 8601 timestamp in UTC", (),
     {"value_type": "iso_datetime", "value_within": "in UTC", "unchecked_text": None}),
    ("an ISO 8601 date in 2026", (),
     {"value_type": "iso_date", "value_within": "in 2026", "unchecked_text": None}),
    ("a URL on github.com", (),
     {"value_type": "url", "value_within": "on github.com", "unchecked_text": None}),
    ("an email address at the acme.com domain", (),
     {"value_type": "email", "value_within": "at acme.com", "unchecked_text": None}),
    # ... and asked with its preposition where it is more, or of another type
    ("a URL on github.com or gitlab.com", (),
     {"value_type": "url", "value_within": None, "unchecked_text": "on github.com or gitlab.com"}),
    ("a date in UTC", (), {"value_type": "date", "value_within": None, "unchecked_text": "in UTC"}),
    ("a URL in 2026", (), {"value_type": "url", "value_within": None, "unchecked_text": "in 2026"}),
    ("a summary in JSON", (), {"unchecked_text": "summary in JSON"}),
    ("a date in ISO format", (), {"unchecked_text": None}),
    # (the whole phrase: v20 read "address" as a quality word and asked it alone)
    ("an IPv4 address, as N.N.N.N", (),
     {"value_type": None, "unchecked_text": "IPv4 address … as N.N.N.N", "judgments": []}),
    ("ranked as #1 of the week", (), {"value_type": None, "value_mask": None}),
    ("a JSON object with the price as $X.XX", (), {"value_type": None, "value_mask": None}),
    # so many digits; a phone number (a plus, parentheses) and a value inside are asked
    ("a 6-digit verification code", (),
     {"value_type": "digits", "value_mask": "######", "unchecked_text": None}),
    ("a 10-digit phone number", (),
     {"value_type": None, "unchecked_text": "10-digit phone number"}),
    ("a 4-digit PIN for each user", (),
     {"value_type": None, "unchecked_text": "4-digit PIN for each user"}),
    # a number joined by a hyphen to a word that counts nothing stays in the question
    ("a 5-star rating", (), {"quantities": [], "unchecked_text": "5-star rating"}),
    ("a 3-day forecast", (), {"quantities": [], "unchecked_text": "3-day forecast"}),
    # an output named by a date or time noun, then how it is written
    ("the release date in ISO 8601 format", (),
     {"value_type": "iso_date", "value_lead": False, "unchecked_text": None}),
    ("the timestamp, in ISO-8601", (), {"value_type": "iso_datetime", "unchecked_text": None}),
    ("the start time as YYYY-MM-DDTHH:MM:SSZ", (),
     {"value_type": "iso_datetime", "value_mask": None, "unchecked_text": None}),
    ("the start time in ISO 8601", (), {"value_type": None, "unchecked_text": "start time"
                                        " in ISO 8601"}),
    # a type in parentheses closing the clause is the whole output's
    ("a duration in minutes (an integer)", (),
     {"value_type": "integer", "unchecked_text": "duration in minutes"}),
    ("a summary (a number of sentences)", (), {"value_type": None}),
    ("a JSON object with `total` (a number)", (), {"value_type": None}),
    ("the date of the last deploy, as YYYY-MM-DD", (),
     {"value_type": "iso_date", "unchecked_text": None}),
    ("the date of each event, as YYYY-MM-DD", (), {"value_type": None}),
    ("the report with its date in ISO 8601 format", (),
     {"value_type": None, "unchecked_text": "report with its date in ISO 8601 format"}),
    ("a JSON object whose `due` date is in ISO 8601 format", (), {"value_type": None}),
    # a standard's number is no count, and stays in the question where no reader took it
    ("a summary with dates in ISO 8601 format", (),
     {"quantities": [], "unchecked_text": "summary with dates in ISO 8601 format"}),
    ("ISO-8601 timestamps for every event", (), {"quantities": [], "ranges": []}),
    # fenced code blocks and exclamation marks, counted
    ("exactly 2 code blocks", (), {"quantities": [(2, 2, "code_blocks", "whole")],
                                   "formats": ["code_block"], "ranges": []}),
    ("an answer with at most one fenced code snippet", (),
     {"quantities": [(None, 1, "code_blocks", "whole")], "formats": [], "ranges": []}),
    ("a Python script in a fenced code block, at most 2 code blocks", (),
     {"quantities": [(None, 2, "code_blocks", "whole")], "formats": ["code_block"]}),
    ("no code blocks", (), {"quantities": [], "excluded_formats": ["code_block"]}),
    # (v20 asked "code example" and "code sample" as judgments)
    ("at least one code example", (),
     {"quantities": [(1, None, "code_blocks", "whole")], "unchecked_text": None}),
    ("two code samples", (), {"quantities": [(2, 2, "code_blocks", "whole")]}),
    ("no exclamation marks", (), {"quantities": [(0, 0, "exclamations", "whole")]}),
    ("at most one exclamation point", (), {"quantities": [(None, 1, "exclamations", "whole")],
                                           "unchecked_text": None}),
    # a fenced block's language, in the clause
    ("a unified diff inside a ```diff code block", (),
     {"fence_lang": "diff", "formats": ["code_block", "diff"]}),
    ("a Python code block", (), {"fence_lang": "python", "unchecked_text": None}),
    ("the migration in a fenced ```SQL block", (), {"fence_lang": "sql"}),
    ("a code block", (), {"fence_lang": None}),
    ("the fix, as a bash script", (), {"fence_lang": None, "formats": []}),
    # checkboxes; a bare "checklist" or "task list" is any list of things to check or do
    ("a markdown checklist", (), {"formats": ["checklist"]}),
    ("a list with checkboxes (- [ ] items)", (), {"formats": ["checklist", "list"]}),
    ("the release checklist", (), {"formats": []}),
    ("a task list of the follow-ups", (), {"formats": ["list"]}),
    ("every bullet begins with an emoji", (),
     {"item_edges": [("item", "start", None, "emoji")]}),
    ("each bullet in bold", (), {"item_edges": [("item", "wrap", None, "bold")],
                                 "unchecked_text": None}),
    ("every line must be wrapped in backticks", (),
     {"item_edges": [("line", "wrap", None, "backticks")]}),
    ("a list of 3 keywords, every item quoted", (),
     {"item_edges": [("item", "wrap", None, "quotes")]}),
    ("each term in bold", (), {"item_edges": [], "unchecked_text": "each term in bold"}),
    # a value that opens an output which goes on
    ("an integer followed by a one-line note", (),
     {"value_type": "integer", "value_lead": True}),
    ("an ISO 8601 date, with a short reason", (), {"value_type": "iso_date", "value_lead": True}),
    # a clause that only names a kind of output asks whether the output is one
    ("a haiku", (), {"unchecked_text": "haiku", "unchecked_words": ["haiku"]}),
    ("a phone number", (), {"unchecked_text": "phone number", "unchecked_words": ["number"]}),
    ("the result", (), {"unchecked_text": None}),
    ("the answers", (), {"unchecked_text": None}),
    ("a markdown note", (), {"unchecked_text": None}),
    ("a number between 1 and 10", (), {"value_type": "number", "ranges": [(None, 1.0, 10.0)]}),
    ("a URL", (), {"value_type": "url"}),
    ("an ISO 8601 date", (), {"value_type": "iso_date"}),
    ("a date in YYYY-MM-DD format", (), {"value_type": "iso_date"}),
    ("a date", (), {"value_type": "date"}),
    ("a boolean", (), {"value_type": "boolean"}),
    ("a UUID", (), {"value_type": "uuid"}),
    ("an email address", (), {"value_type": "email"}),
    ("an email to the customer", (), {"value_type": None}),
    ("the answer as a single integer", (), {"value_type": "integer", "quantities": []}),
    ("the word count of the input, as an integer", (),
     {"value_type": "integer", "unchecked_text": "word count of the input"}),
    # ... and types of something else
    ("a number of findings, as a list", (), {"value_type": None}),
    ("a JSON object with an integer `count`", (), {"value_type": None}),
    ("a URL per source", (), {"value_type": None}),
    ("the date the report was written", (), {"value_type": None}),
    ("a date and time", (), {"value_type": None}),
    ("a JSON object with `items`, `total` (a number) and `at` (an ISO 8601 date)",
     (), {"value_type": None, "field_types": [("total", "number"), ("at", "iso_date")],
          "fields": [("items", False), ("total", False), ("at", False)]}),
    ("a timestamp", (), {"value_type": "datetime"}),
    ("an ISO 8601 timestamp", (), {"value_type": "iso_datetime"}),
    ("the start time, as an ISO 8601 date-time", (), {"value_type": "iso_datetime"}),
    ("a timestamp per event", (), {"value_type": None}),
    ("a URL or a file path", (), {"value_type": None}),
    ('an integer, or "none" if nothing was found', (),
     {"value_type": "integer", "alternative": "none"}),
    # a phrase said to occur more than once; a mark the output ends with, named
    ('a summary that mentions "climate" at least twice', (),
     {"literals": [("climate", "contains", 2)], "unchecked_text": None}),
    ('a log that includes "WARN" 3 or more times', (), {"literals": [("WARN", "contains", 3)]}),
    ('mentions "Q3" more than once', (), {"literals": [("Q3", "contains", 2)]}),
    ('mentions "Q3" four times', (), {"literals": [("Q3", "contains", 4)]}),
    ('mentions "Q3"', (), {"literals": [("Q3", "contains")]}),
    ("a clarifying question ending with a question mark", (),
     {"literals": [("?", "ends")]}),
    ("a sentence that ends in a full stop", (), {"literals": [(".", "ends")]}),
    ("a reply, ending with a period", (), {"literals": [(".", "ends")]}),
    # ... not where the clause rules the ending out: asked
    ("a subject line under 80 characters, not ending with a period", (),
     {"literals": [], "unchecked_text": "not ending with a period"}),
    ("a file name that does not end in .tmp", (), {"literals": []}),
    ("exactly 3 hashtags", (), {"quantities": [(3, 3, "hashtags", "whole")]}),
    ("exactly 3 strengths and 3 weaknesses", (), {"item_kinds": 2}),
    # "comma-separated" said after the noun: one line of values too, no markdown list
    ("a list of 5 keywords, comma-separated", (), {"formats": [], "inline_list": ","}),
    ("at least 2 paragraphs, each under 50 words", (), {"each_of": "paragraphs"}),
    ("a bulleted list, each under 5 words", (), {"each_of": None}),
    ("a numbered list of 5 steps", (), {"item_kinds": 1}),
    ("a phone number in E.164 format", (), {"quantities": []}),
    ("a link to the PR", (), {"quantities": [q(1, None, "urls")]}),
    ("a markdown link to the docs", (), {"quantities": [q(1, None, "urls")]}),
    ("a list with no duplicates", (), {"quantities": [q(0, 0, "duplicates")]}),
    ('a response in JSON format with a "result" key', (), {"fields": [("result", False)]}),
    ("a table with columns `name` and `score`, where score is between 0 and 100", (),
     {"ranges": [("score", 0.0, 100.0)], "unchecked_text": None}),
    ('the report ends with a "Next steps" section', (),
     {"literals": [("Next steps", "last_section")]}),
    ("a markdown report with a ## Summary section", (), {"fields": [("Summary", False)]}),
    # three or more names parted by commas only, closing the clause (v10: asked)
    ("a changelog with sections Added, Changed, Fixed", (),
     {"fields": [("Added", False), ("Changed", False), ("Fixed", False)],
      "unchecked_text": None}),
    ("a report with sections Summary, Details in that order", (), {"fields": []}),
    # a name in sentence case where a mark, "and" or a plural word closes it (v11 read a
    # section "Next"); the order of the named sections is asked (v11 dropped it)
    ("sections Summary, Details and Next steps, in that order", (),
     {"fields": [("Summary", False), ("Details", False), ("Next steps", False)],
      "unchecked_text": "in that order"}),
    ("a report with sections Summary, Risks and Next steps", (),
     {"fields": [("Summary", False), ("Risks", False), ("Next steps", False)]}),
    ("a changelog with sections Added, Open questions, Fixed.", (),
     {"fields": [("Added", False), ("Open questions", False), ("Fixed", False)]}),
    ("a report with sections Summary and Details in French", (),
     {"fields": [("Summary", False), ("Details", False)], "judgments": ["in french"]}),
    ("a reply without any markdown headings", (),
     {"quantities": [q(0, 0, "headings")], "excluded_formats": []}),
    ("a report with no duplicate entries", (), {"quantities": [q(0, 0, "duplicates")]}),
    ("a reply with no repetitions", (), {"quantities": []}),
    # the output goes on after the value ("…, with a reason"): the values are asked
    ("a decision: approve or reject, with a one-sentence reason", (),
     {"enums": [], "unchecked_text": "decision with a one-sentence reason … approve or reject"}),
    ("a JSON object with `summary` (at most 50 words) and `score` (0-10)", (),
     {"quantities": [], "field_lengths": [("summary", None, 50, "words")],
      "ranges": [("score", 0.0, 10.0)]}),
    ("a single paragraph without line breaks", (),
     {"quantities": [q(None, 1, "lines"), q(1, 1, "paragraphs")]}),
    ("a page that ends with a question and answer section", (), {"literals": []}),
    ("a reply that ends with a question, under 50 words", (), {"literals": [("?", "ends")]}),
    # the case of the whole output; a field's, or a negated one, is asked
    ("all lowercase", (), {"letter_case": "lower", "unchecked_text": None}),
    ("in ALL CAPS", (), {"letter_case": "upper"}),
    ("no uppercase letters", (), {"letter_case": "lower"}),
    # the case word alone, closing the clause (v10: dropped unread)
    ('"yes" or "no", lowercase', (), {"letter_case": "lower", "unchecked_text": None}),
    ("a slug, lowercase.", (), {"letter_case": "lower", "unchecked_text": None}),
    ("tags separated by commas, lowercase", (), {"letter_case": None}),
    ("a reply, not in all caps", (), {"letter_case": None}),
    ("a JSON object with keys in lowercase", (), {"letter_case": None}),
    ("a report with section names in uppercase", (), {"letter_case": None}),
    ("a link-check report", (), {"quantities": []}),
    ("a plain name, not a link", (), {"quantities": []}),
    ("a table, no line breaks inside cells", (), {"quantities": []}),
    ("a JSON object", ("`id`: lowercase",), {"letter_case": None}),
    # a sub-item's order or letter case is asked, never dropped
    ("a JSON object with fields:", ("`items`: sorted by date, newest first",
                                    "`title`: all lowercase"),
     {"orders": [], "letter_case": None,
      "unchecked_text": "`items`: sorted by date, newest first … `title`: all lowercase"}),
    ("no emojis", (), {"quantities": [(0, 0, "emojis", "whole")]}),
    ("at most one emoji", (), {"quantities": [(None, 1, "emojis", "whole")]}),
    # an order: the field to order by (never a field to require), the direction, and
    # whether text is compared alphabetically
    ("a list of tools, sorted alphabetically", (),
     {"orders": [(None, "asc", True, False)], "formats": ["list"]}),
    ("a table sorted by Score descending", (), {"orders": [("score", "desc", False, False)]}),
    ("a JSON array sorted by `score`, highest first", (),
     {"orders": [("score", "desc", False, False)], "fields": []}),
    ("results in ascending order of `rank`", (), {"orders": [("rank", "asc", False, False)]}),
    ("contacts sorted by last-name, Z to A", (),
     {"orders": [("last-name", "desc", True, False)]}),
    ("results ranked by score", (), {"orders": [("score", "any", False, False)]}),
    ("an alphabetical list of tools", (), {"orders": [(None, "asc", True, False)]}),
    ("a summary in plain words", (), {"orders": []}),
    ("a markdown table sorted by the Date column, oldest first", (),
     {"orders": [("date", "asc", False, False)]}),
    # "no item longer than N words" bounds each item; per sentence, nothing counts: asked
    ("a bulleted list, no item longer than 10 words", (),
     {"quantities": [q(None, 10, "words", "each")]}),
    ("prose where no sentence is longer than 25 words", (), {"quantities": []}),
    ("a timeline in reverse chronological order", (),
     {"orders": [(None, "desc", False, True)]}),
    ("a changelog, oldest first", (), {"orders": [(None, "asc", False, True)]}),
    # an element of a named tag: its name, never a field or a phrase
    ("the final answer wrapped in <answer></answer> tags", (),
     {"literals": [("answer", "tagged")], "fields": []}),
    ("reasoning in `<think>` tags, then the answer in <answer> tags", (),
     {"literals": [("think", "tagged"), ("answer", "tagged")], "fields": []}),
    ("the answer between <answer> and </answer>", (), {"literals": [("answer", "tagged")]}),
    ("the answer in <answer> tags", (), {"literals": [("answer", "tagged")]}),
    # a placeholder is no element: "in <name>" says tags only with "tags" or a closing tag
    ("a commit message in <type>: <subject> form", (), {"literals": []}),
    ("the answer, never wrapped in <answer> tags", (),
     {"literals": [], "unchecked_text": "never wrapped in <answer> tags"}),
    ("a cheer that ends with an exclamation point", (), {"literals": [("!", "ends")]}),
    # the last line, not the first
    ('a response whose last line begins with "Answer:"', (),
     {"literals": [("Answer:", "last_line_starts")]}),
    ('reasoning, then the final answer on the last line, prefixed with "Answer:"', (),
     {"literals": [("Answer:", "last_line_starts")]}),
    ('a reply ending with a line that starts with "Final answer:"', (),
     {"literals": [("Final answer:", "last_line_starts")]}),
    ('a log whose last line is "DONE"', (), {"literals": [("DONE", "last_line")]}),
    # how every item or line begins
    ('a log where each line starts with "[INFO]"', (),
     {"item_edges": [("line", "start", "[INFO]", None)], "literals": []}),
    ("a list of events where every item begins with an ISO 8601 date", (),
     {"item_edges": [("item", "start", None, "iso_date")]}),
    ("a timeline, with each bullet starting with a date", (),
     {"item_edges": [("item", "start", None, "date")]}),
    ("each item starts with a verb", (), {"item_edges": []}),
    ("a list of exactly 3 items, each ending with a period", (),
     {"item_edges": [("item", "end", ".", None)], "literals": []}),
    ('a list where every line ends with ";"', (), {"item_edges": [("line", "end", ";", None)]}),
    ('a JSON object with fields:', ('`log`: each line starts with "[INFO]"',),
     {"item_edges": [], "unchecked_text": '`log`: starts with "[INFO]"'}),
    # counts and lengths, with their unit
    ("at least 5 sources", (), {"quantities": [q(5, None, "sources")]}),
    ("3+ items", (), {"quantities": [q(3, None, "items")]}),
    ("2-3 paragraphs", (), {"quantities": [q(2, 3, "paragraphs")]}),
    ("400–900 words", (), {"quantities": [q(400, 900, "words")]}),
    ("between 2 and 4 sentences", (), {"quantities": [q(2, 4, "sentences")]}),
    ("exactly one sentence", (), {"quantities": [q(1, 1, "sentences")]}),
    ("one sentence", (), {"quantities": [q(1, 1, "sentences")]}),
    ("a single paragraph", (), {"quantities": [q(1, 1, "paragraphs")]}),
    ("the top 10 results", (), {"quantities": [q(10, 10, "items")]}),
    ("at most 200 words", (), {"quantities": [q(None, 200, "words")]}),
    ("no more than 12 entries", (), {"quantities": [q(None, 12, "items")]}),
    ("under 500 characters", (), {"quantities": [q(None, 499, "chars")]}),
    ("more than 3 findings", (), {"quantities": [q(4, None, "items")]}),
    ("5 or more distinct URLs", (), {"quantities": [q(5, None, "urls")]}),
    ("a 200-word abstract", (), {"quantities": [q(None, 200, "words")]}),
    # nested items are not counted as the list's items
    ("a bulleted list with at least one sub-bullet", (),
     {"quantities": [], "unchecked_text": "bulleted list with at least one sub-bullet"}),
    # none at all
    ("a reply that does not include any URLs", (), {"quantities": [q(0, 0, "urls")]}),
    ("a summary without any links, at most 50 words", (),
     {"quantities": [q(0, 0, "urls"), q(None, 50, "words")]}),
    # thousands grouped with commas are one number
    ("a reply under 2,000 characters", (),
     {"quantities": [q(None, 1999, "chars")], "unchecked_text": None}),
    ("between 1,000 and 2,500 words", (), {"quantities": [q(1000, 2500, "words")]}),
    # a negated bound is the other bound
    ("a summary that is not longer than 50 words", (),
     {"quantities": [q(None, 50, "words")], "unchecked_text": None}),
    ("a report that does not exceed 100 words", (),
     {"quantities": [q(None, 100, "words")], "unchecked_text": None}),
    ("a reply that doesn't exceed 3 sentences", (), {"quantities": [q(None, 3, "sentences")]}),
    ("a list that never has more than 5 items", (), {"quantities": [q(None, 5, "items")]}),
    ("notes that are never shorter than 3 lines", (), {"quantities": [q(3, None, "lines")]}),
    ("a body that must not be under 10 words", (), {"quantities": [q(10, None, "words")]}),
    ("more than 3 findings", (), {"quantities": [q(4, None, "items")]}),
    ("a one-sentence summary", (), {"quantities": [q(1, 1, "sentences")]}),
    ("exactly 3 bullet points, each under 25 words", (),
     {"quantities": [q(None, 24, "words", "each"), q(3, 3, "items")]}),
    ("a list, each with a source URL", (), {"quantities": [q(1, None, "urls", "each")]}),
    # a bound after its unit and "each" is a bound of each item
    ("a bulleted list of findings, under 5 words each", (),
     {"quantities": [q(None, 4, "words", "each")]}),
    ("a bulleted list of the changes, one line each", (),
     {"quantities": [q(1, 1, "lines", "each")]}),
    # an output that goes on after its value is not one of the values: asked
    ('a verdict of "approve" or "reject", followed by one sentence of reasoning', (),
     {"enums": [], "unchecked_text": '"approve" or "reject"'}),
    # (no question is left of the field's name: v11 asked "JSON object `status`")
    ('a JSON object whose `status` is "ok"', (),
     {"enums": [("status", ["ok"])], "unchecked_text": None}),
    ('a JSON object with `severity` set to "low" or "high"', (),
     {"enums": [("severity", ["low", "high"])], "unchecked_text": None}),
    # the noun after a field's name is not the field (v20: a field `key`, `field`)
    ('a JSON object with a `status` key ("ok" or "error")', (),
     {"enums": [("status", ["ok", "error"])], "unchecked_text": None}),
    ('a `status` field set to "ok" or "error"', (),
     {"enums": [("status", ["ok", "error"])], "unchecked_text": None}),
    ('a `state` field that is either "open" or "closed"', (),
     {"enums": [("state", ["open", "closed"])], "unchecked_text": None}),
    ('the status field is one of "ok" or "error"', (),
     {"enums": [("status", ["ok", "error"])], "unchecked_text": None}),
    # (a word that names no field alone names one before a field's noun: v20 read a field
    # `field`, v21 as first written the whole output)
    ("the response field set to yes or no", (), {"enums": [("response", ["yes", "no"])]}),
    # ... nor do its unquoted values go unread (v20 asked them)
    ("a JSON object with a `priority` field set to P1, P2 or P3", (),
     {"enums": [("priority", ["p1", "p2", "p3"])], "unchecked_text": None}),
    ("a JSON object with a `severity` property: low, medium or high", (),
     {"enums": [("severity", ["low", "medium", "high"])], "unchecked_text": None}),
    ("a JSON object with a `severity` field (low, medium or high)", (),
     {"enums": [("severity", ["low", "medium", "high"])], "unchecked_text": None}),
    ("a `tone` field that is either formal or casual", (),
     {"enums": [("tone", ["formal", "casual"])], "unchecked_text": None}),
    ("a `summary` field (concise or brief)", (), {"enums": []}),
    # ... nor words saying whether the field is there, nor a field named as the output is
    # (v21 as first written: `notes` had to be "optional" or "null", the whole output
    # "english" or "french")
    ("a JSON object with a `notes` field (optional or null)", (), {"enums": []}),
    ("a `name` field (required or optional)", (), {"enums": []}),
    ("a `text` field: English or French", (),
     {"enums": [], "unchecked_text": "English or French"}),
    # a field's values name no format of the output (v21 required markdown of the JSON
    # output); a field naming a kind holds formats' names as values, another field may hold
    # text in that format: asked
    ("a JSON object with a `format` field (markdown or html)", (),
     {"formats": ["json"], "enums": [("format", ["markdown", "html"])], "unchecked_text": None}),
    ("a JSON object with a `syntax` key set to json or yaml", (),
     {"formats": ["json"], "enums": [("syntax", ["json", "yaml"])], "unchecked_text": None}),
    ("a JSON object with a `body` field (markdown or html)", (),
     {"formats": ["json"], "enums": [], "unchecked_text": "(markdown or html)"}),
    # ... nor a format a field is written in (v22 as first written: the output's)
    ("a JSON object with a `body` in markdown", (), {"formats": ["json"]}),
    ("a JSON object whose `description` is written in markdown", (), {"formats": ["json"]}),
    # an exception to what is forbidden is asked with it (v21 forbade it everywhere)
    ('never mentions "Northwind" unless the ticket does', (),
     {"literals": [], "unchecked_text": 'never mentions "Northwind" unless the ticket does'}),
    ("does not name other customers, such as Northwind or Contoso, unless the ticket does", (),
     {"literals": [], "unchecked_text": "does not name other customers, such as Northwind or "
                                        "Contoso, unless the ticket does"}),
    ("a JSON object with an `items` field (a list of strings)", (), {"formats": ["json"]}),
    ("a markdown table with a `status` column (pass or fail)", (),
     {"formats": ["table"], "enums": [("status", ["pass", "fail"])]}),
    ("a `count` field set to 3 or more", (), {"enums": []}),
    # unquoted answers
    ("a single word: yes or no", (), {"enums": [(None, ["yes", "no"])]}),
    ("true/false", (), {"enums": [(None, ["true", "false"])]}),
    ("yes or no, followed by one sentence of reasoning", (),
     {"enums": [], "unchecked_text": "yes or no"}),
    # unquoted values after the opening noun, alone in a part, or after a value's noun + "of"
    ("a severity rating: low, medium or high", (),
     {"enums": [(None, ["low", "medium", "high"])]}),
    ("approve, reject or escalate", (), {"enums": [(None, ["approve", "reject", "escalate"])],
                                         "unchecked_text": None}),
    ("a priority of P1, P2 or P3", (), {"enums": [(None, ["p1", "p2", "p3"])],
                                        "unchecked_text": None}),
    ("a JSON object with a risk of low or high", (), {"enums": [("risk", ["low", "high"])]}),
    ("a JSON object with fields:", ("`tier`: gold, silver or bronze",),
     {"enums": [("tier", ["gold", "silver", "bronze"])]}),
    # ... never a count, a format, a quality, or words that go on after the choice
    ("a score of 3 or more", (), {"enums": []}),
    ("markdown or JSON", (), {"enums": []}),
    ("a summary: concise or brief", (), {"enums": [], "judgments": ["concise"]}),
    ("a list of bugs, fixes or features", (), {"enums": []}),
    # "empty": no item at all (v20 read nothing of it)
    ("an empty list", (), {"quantities": [q(0, 0, "items")], "unchecked_text": None}),
    ("an empty `results` list and a note explaining why", (),
     {"quantities": [q(0, 0, "items")]}),
    ("an empty JSON array", (), {"quantities": [q(0, 0, "items")], "unchecked_text": None}),
    # ... but not empty only at times, or allowed empty: asked (v21 as first written counted
    # no item, and failed every list with items)
    ("the matches, or an empty list if nothing matched", (), {"quantities": []}),
    ("a list (may be an empty list)", (), {"quantities": []}),
    ("a non-empty list of tags", (), {"quantities": [q(1, None, "items")]}),
    # "addresses" the noun is no quality word; the verb is
    ("a list of at least 3 email addresses, one per line", (),
     {"quantities": [q(3, None, "items")], "judgments": []}),
    ("does not include PII such as email addresses or phone numbers", (), {"judgments": []}),
    ("addresses each of the customer's questions", (),
     {"judgments": ["addresses"], "unchecked_text": "each of the customer's questions"}),
    ("a list: bugs, fixes or features", (), {"enums": []}),
    ("a level of detail or depth", (), {"enums": []}),
    ("a risk level of low or high", (), {"enums": [(None, ["low", "high"])]}),
    ("a summary and a risk level of low, medium or high", (), {"enums": []}),
    ("one or two sentences", (), {"enums": []}),
    ('at least one of "low", "medium" or "high"', (),
     {"enums": [], "unchecked_text": 'at least one of "low", "medium" or "high"'}),
    ('each finding with a severity of "low" or "high", followed by a fix', (),
     {"enums": [("severity", ["low", "high"])]}),
    ("a score, followed by exactly one paragraph", (),
     {"quantities": [q(1, 1, "paragraphs", "rest")]}),
    # a length of one part of an output of several parts measures no part: judged
    ("a title and a summary of 2 sentences", (),
     {"quantities": [], "unchecked_text": "title and a summary of 2 sentences"}),
    ("a one-line verdict and a list of at most 5 reasons", (),
     {"quantities": [q(None, 5, "items")], "unchecked_text": "one-line verdict and a list"}),
    ("a heading, then a paragraph of no more than 50 words", (), {"quantities": []}),
    ("a summary of at most 2 sentences followed by a bullet list of risks", (),
     {"quantities": []}),
    ("a report with an executive summary of at most 100 words", (),
     {"quantities": [],
      "unchecked_text": "report with an executive summary of at most 100 words"}),
    ("a summary (2 sentences) and a list of sources", (), {"quantities": []}),
    ("at least 3 sources and a summary of at most 50 words", (),
     {"quantities": [q(3, None, "sources")]}),
    # ... while a length of the whole output stays a count
    ("a summary with a maximum of 100 words", (), {"quantities": [q(None, 100, "words")]}),
    ("a post of at most 280 characters, with a link", (),
     {"quantities": [q(None, 280, "chars"), q(1, None, "urls")]}),
    ("a title followed by two paragraphs", (), {"quantities": [q(2, 2, "paragraphs", "rest")]}),
    # a count of one named section
    ('a "Risks" section with at least 3 bullet points', (),
     {"section_name": "Risks", "quantities": [q(3, None, "items", "section")]}),
    ("a brief that ends with a `## Sources` section listing 5+ distinct URLs", (),
     {"section_name": "Sources", "quantities": [q(5, None, "urls", "section")]}),
    ('at least 3 items under the "Risks" heading, then a summary', (),
     {"section_name": "Risks", "quantities": [q(3, None, "items", "section")]}),
    ("a report with 3 sections", (), {"section_name": None, "quantities": [q(3, 3, "headings")]}),
    ('a "Risks" section and at least 3 sources', (),
     {"section_name": None, "quantities": [q(3, None, "sources")]}),
    # a length of the first line (a commit message's subject)
    ("a commit message whose first line is at most 50 characters", (),
     {"quantities": [q(None, 50, "chars", "first")], "unchecked_text": "commit message"}),
    ("a commit message, first line under 72 characters", (),
     {"quantities": [q(None, 71, "chars", "first")]}),
    ("a single paragraph with at most 3 sentences", (),
     {"quantities": [q(1, 1, "paragraphs"), q(None, 3, "sentences")]}),
    # a sub-item's length in words or characters is a length of its field; its other counts
    # are left to the judgment question
    ("a JSON object with fields:", ("`summary`: at most 50 words", "`title`: under 80 chars"),
     {"field_lengths": [("summary", None, 50, "words"), ("title", None, 79, "chars")],
      "quantities": [], "unchecked_text": None}),
    ("a markdown report with sections:", ("`Summary`: 2-3 sentences",),
     {"field_lengths": [], "unchecked_text": "markdown report with sections … `Summary`: 2-3 "
                                             "sentences"}),
    # a count of items of a JSON output's field: its arrays' elements (elsewhere asked)
    ("a JSON object with fields:", ("reasons: a list of 1-3 short strings",),
     {"field_lengths": [("reasons", 1, 3, "items")], "unchecked_text": None}),
    ("a markdown report with sections:", ("`Findings`: at least 3 items",),
     {"field_lengths": [], "unchecked_text": "markdown report with sections … `Findings`: at "
                                             "least 3 items"}),
    ("a JSON object with fields:", ("`sla_hours`: an integer from 1-72",
                                    "`retrieved`: the date it was read, as YYYY-MM-DD",
                                    "`line`: the line number in the new file"),
     {"field_types": [("sla_hours", "integer"), ("retrieved", "iso_date")],
      "ranges": [("sla_hours", 1.0, 72.0)], "value_type": None}),
    ("a markdown report", ("at most 500 words",),
     {"field_lengths": [], "quantities": [], "unchecked_text": "at most 500 words"}),
    # a field's length said in the clause (v10: the length of the whole output): after a noun
    # that makes the name a field, or after words that make it part of the output
    ("a JSON object with a `name` field of at most 40 characters", (),
     {"field_lengths": [("name", None, 40, "chars")], "quantities": [],
      "fields": [("name", False)]}),
    ("a JSON object whose `summary` is under 50 words", (),
     {"field_lengths": [("summary", None, 49, "words")], "quantities": [],
      "fields": [("summary", False)], "unchecked_text": None}),
    # "where each element has" says where, not what (v10 asked "JSON array where each element")
    ("a JSON array where each element has a `name`", (),
     {"fields": [("name", False)], "unchecked_text": None}),
    ("a JSON array of objects, each with `name` of at most 40 characters", (),
     {"field_lengths": [("name", None, 40, "chars")], "quantities": []}),
    ("a JSON object with keys `title` and `body`; `title` must be at most 80 characters", (),
     {"field_lengths": [("title", None, 80, "chars")], "quantities": [],
      "unchecked_text": None}),
    ("a JSON object with a `tags` array of 2-5 strings", (),
     {"field_lengths": [("tags", 2, 5, "items")], "quantities": []}),
    ("a JSON object with a `summary` field (at most 3 words) and a `score`", (),
     {"field_lengths": [("summary", None, 3, "words")], "quantities": [],
      "unchecked_text": None}),
    ("a reply with a `title` of at most 8 words", (),
     {"field_lengths": [("title", None, 8, "words")], "quantities": []}),
    # ... its other counts are asked, never counted in the whole output
    ("a markdown report with a `Summary` field of 2-3 sentences", (),
     {"field_lengths": [], "quantities": [], "unchecked_text": "`Summary`: 2-3 sentences"}),
    # a name said alone may be the output's own: its length is the output's
    ("`report` has at most 500 words", (),
     {"field_lengths": [], "quantities": [q(None, 500, "words")]}),
    ("a reply; `report` must be at most 500 words", (),
     {"field_lengths": [], "quantities": [q(None, 500, "words")]}),
    ("a JSON object with a `name` field, at most 500 characters", (),
     {"field_lengths": [], "quantities": [q(None, 500, "chars")]}),
    ("a JSON object with `tags` (2-3 strings) and `title`", (),
     {"field_lengths": [("tags", 2, 3, "items")], "quantities": []}),
    ("a JSON object with `items` (an array of at most 3 objects)", (),
     {"field_lengths": [("items", None, 3, "items")], "quantities": []}),
    # a field's type and range in parentheses (v10: the output's first number, or asked)
    ("a JSON object with `confidence` (a number between 0 and 1)", (),
     {"ranges": [("confidence", 0.0, 1.0)], "field_types": [("confidence", "number")]}),
    ("a JSON object with `score` (an integer, 1 to 5)", (),
     {"ranges": [("score", 1.0, 5.0)], "field_types": [("score", "integer")],
      "unchecked_text": None}),
    ("a JSON object with `score` (integer 1-5)", (),
     {"ranges": [("score", 1.0, 5.0)], "field_types": [("score", "integer")],
      "unchecked_text": None}),
    # how a line or a field's values begin is asked, never held against the output's start
    # (v10)
    ('the final answer on its own line, prefixed with "Answer:"', (),
     {"literals": [], "unchecked_text": 'final answer on its own line, prefixed with "Answer:"'}),
    ('a JSON object where every `url` starts with "https://"', (),
     {"literals": [], "item_edges": [],
      "unchecked_text": 'JSON object where every `url` starts with "https://"'}),
    ("a JSON object with `score` and `reason` (one sentence)", (),
     {"field_lengths": [], "quantities": [], "unchecked_text": "`reason`: one sentence"}),
    # a length said as a count of its unit, or with its unit after "whose length is" (v10: a
    # range of the output's first number, or of a field `length`)
    ("the word count is between 100 and 200", (),
     {"quantities": [q(100, 200, "words")], "ranges": []}),
    ("a tweet; keep the character count under 280", (), {"quantities": [q(None, 279, "chars")]}),
    ("a summary whose length is between 50 and 100 words", (),
     {"quantities": [q(50, 100, "words")], "ranges": []}),
    # "…, then N paragraphs" is "followed by": the rest after the first line (v10: the whole)
    ("a title, then 2-3 paragraphs", (), {"quantities": [q(2, 3, "paragraphs", "rest")]}),
    # ... but a length of the first line is that line's, whatever follows (v11: asked)
    ("a headline of at most 10 words and a 2-sentence lede", (),
     {"quantities": [q(None, 10, "words", "first")], "unchecked_text": "2-sentence lede"}),
    ("a commit message: subject of at most 50 characters, a blank line, then a body", (),
     {"quantities": [q(None, 50, "chars", "first")]}),
    ("an email subject line under 60 characters, then a blank line, then the body", (),
     {"quantities": [q(None, 59, "chars", "first")]}),
    ("a greeting of at most 2 sentences, then the answer", (), {"quantities": []}),
    ("the recommendation in one sentence, then up to 3 bullet points of evidence", (),
     {"quantities": [q(None, 3, "items")]}),
    # a count beside one that is no count (v3 crashed reading this clause)
    ("a haiku: three lines of 5, 7 and 5 syllables", (), {"quantities": [q(3, 3, "lines")]}),
    # "N units or fewer / or more" (an "exactly" before it is overruled)
    ("exactly 280 characters or fewer", (), {"quantities": [q(None, 280, "chars")]}),
    ("a list of 5 items or more", (), {"quantities": [q(5, None, "items")]}),
    ("a reply of 50 words or less", (), {"quantities": [q(None, 50, "words")]}),
    # columns of a table are counted as columns, not items
    ("a two-column markdown table", (), {"quantities": [q(2, 2, "columns")]}),
    ("a table with 3 columns and at least 4 rows", (),
     {"quantities": [q(3, 3, "columns"), q(4, None, "items")]}),
    # headings of one level are counted by their level
    ("a markdown document with an H1 title and at least 2 H2 sections", (),
     {"quantities": [q(2, None, "h2")], "unchecked_text": "markdown document with an H1 title"}),
    ("exactly one H1 heading and 2-4 H3 headers", (),
     {"quantities": [q(1, 1, "h1"), q(2, 4, "h3")]}),
    # a bare bound closing a list's clause counts its items; elsewhere it bounds a number
    ("a plan with numbered steps, at most 7", (),
     {"quantities": [q(None, 7, "items")], "ranges": []}),
    ("a score, at most 7", (), {"quantities": [], "ranges": [(None, None, 7.0)]}),
    # things that look like counts and are not
    # (a single one is a count of fenced blocks: two blocks are not "a single" one)
    ("the SQL migration as a single fenced code block", (),
     {"quantities": [(1, 1, "code_blocks", "whole")], "formats": ["code_block"]}),
    ("a JSON array with one object per source", (), {"quantities": []}),
    ("a score from 0-100 for the findings", (), {"quantities": [],
                                                 "ranges": [(None, 0.0, 100.0)]}),
    ("delivered within 2 days", (), {"quantities": []}),
    ("an ISO 639-1 code", (), {"quantities": []}),
    ("z-scores rounded to 2 decimals", (), {"quantities": []}),
    # exact phrases: a quote is a requirement only after a cue that says so
    ('a note stating "no results"', (), {"literals": [("no results", "contains")]}),
    ('exactly one sentence beginning with "Overall:"', (),
     {"literals": [("Overall:", "starts")]}),
    ("ends with a `## Sources` section", (), {"literals": [("## Sources", "ends")]}),
    ("a reply that ends with the exact sign-off “— The Team”", (),
     {"literals": [("— The Team", "ends")]}),
    ("a comment whose first line is exactly `### Review`", (),
     {"literals": [("### Review", "first_line")]}),
    ("the reply is exactly `eval-sender`", (), {"literals": [("eval-sender", "exact")]}),
    ("a summary containing the exact phrase Final answer", (),
     {"literals": [("Final answer", "contains")]}),
    ("every claim is marked “unverified”", (), {"literals": [("unverified", "contains")]}),
    ('never mentions the password "hunter2"', (), {"literals": [("hunter2", "absent")],
                                                   "forbids_secrets": True}),
    # a quoted list after a cue of absence forbids each phrase; it is no enumeration
    ('a summary that never mentions "staging" or "prod"', (),
     {"literals": [("staging", "absent"), ("prod", "absent")], "enums": []}),
    ("a reply that doesn't say 'yes', 'no' or 'maybe'", (),
     {"literals": [("yes", "absent"), ("no", "absent"), ("maybe", "absent")], "enums": []}),
    ('a note without "TODO" and "FIXME", starting with "Note:"', (),
     {"literals": [("TODO", "absent"), ("FIXME", "absent"), ("Note:", "starts")]}),
    # examples of what is forbidden are forbidden, quoted or named; what they are examples of
    # is asked (v20 dropped them as examples)
    ("does not mention competitors such as Zendesk or Freshdesk", (),
     {"literals": [("Zendesk", "absent"), ("Freshdesk", "absent")],
      "unchecked_text": "does not mention competitors"}),
    ('never mentions other vendors like "Acme", "Globex" and "Initech"', (),
     {"literals": [("Acme", "absent"), ("Globex", "absent"), ("Initech", "absent")],
      "unchecked_text": "never mentions other vendors"}),
    # ... in parentheses, after "avoids", "uses" or "names" (v21: asked whole)
    ("does not mention any competitor (e.g. Zendesk, Freshdesk, Intercom)", (),
     {"literals": [("Zendesk", "absent"), ("Freshdesk", "absent"), ("Intercom", "absent")],
      "unchecked_text": "does not mention any competitor"}),
    ('avoids jargon such as "synergy" or "leverage"', (),
     {"literals": [("synergy", "absent"), ("leverage", "absent")],
      "unchecked_text": "avoids jargon"}),
    ("never uses placeholder text such as TODO or TBD", (),
     {"literals": [("TODO", "absent"), ("TBD", "absent")],
      "unchecked_text": "never uses placeholder text"}),
    ("never names vendors like Acme or Globex", (),
     {"literals": [("Acme", "absent"), ("Globex", "absent")],
      "unchecked_text": "never names vendors"}),
    ('avoids the words "synergy" and "leverage"', (),
     {"literals": [("synergy", "absent"), ("leverage", "absent")], "unchecked_text": None}),
    # (an example of what is asked for stays an example)
    ("mentions a competitor such as Zendesk", (), {"literals": []}),
    ("names vendors like Acme", (), {"literals": []}),
    # a requirement stated in the negative is not read as its opposite: it is left, in place,
    # to the judgment question
    ('a title that does not start with "Untitled"', (),
     {"literals": [], "unchecked_text": 'title that does not start with "Untitled"'}),
    ('a status that must not be "failed" or "error"', (), {"enums": [], "literals": []}),
    ('a heading that is not one of "Draft", "WIP"', (),
     {"enums": [], "unchecked_text": 'heading that is not one of "Draft", "WIP"'}),
    ('a reply that doesn\'t end with "Regards" and starts with "Hi"', (),
     {"literals": [("Hi", "starts")]}),
    ("a JSON object without the field `debug`", (), {"fields": []}),
    # a choice of phrases to begin or end with is no enumeration of the whole output
    ('a reply that begins with either "Yes" or "No"', (),
     {"enums": [], "literals": [],
      "unchecked_text": 'reply that begins with either "Yes" or "No"'}),
    ('a reply that starts with "Hi" or "Hello"', (), {"enums": [], "literals": []}),
    ('a summary, or "none" if there is nothing to report', (),
     {"alternative": "none", "enums": [], "unchecked_text": "if there is nothing to report"}),
    ('a list of bugs, or just "none"', (), {"alternative": "none", "formats": ["list"]}),
    ('a reply that ends with one of "Thanks", "Cheers"', (),
     {"enums": [], "unchecked_text": 'reply that ends with one of "Thanks", "Cheers"'}),
    # a format the clause rules out is an excluded format, not a format to require
    ("plain text, not JSON", (),
     {"formats": [], "excluded_formats": ["json"], "unchecked_text": None}),
    ("a reply with no bullet points", (),
     {"formats": [], "excluded_formats": ["bulleted_list"]}),
    ("a reply without a markdown table", (), {"formats": [], "excluded_formats": ["table"]}),
    ("prose rather than a table", (), {"formats": [], "excluded_formats": ["table"]}),
    ("a paragraph instead of a bulleted list", (),
     {"formats": [], "excluded_formats": ["bulleted_list"]}),
    ("plain text, no markdown", (), {"formats": [], "excluded_formats": ["markdown"]}),
    ("a JSON object; do not include markdown fences", (),
     {"formats": ["json"], "excluded_formats": ["code_block"]}),
    ("a JSON object, not YAML", (), {"formats": ["json"], "excluded_formats": ["yaml"]}),
    ("a numbered list, no bullets", (),
     {"formats": ["numbered_list"], "excluded_formats": ["bulleted_list"]}),
    ("a table, no more than 5 rows", (),
     {"formats": ["table"], "excluded_formats": [], "quantities": [q(None, 5, "items")]}),
    ('a note stating "do not panic" and ending with "Bye"', (),
     {"literals": [("Bye", "ends"), ("do not panic", "contains")]}),
    ('a patch that addresses every "blocker" and "major" comment', (), {"literals": []}),
    ('an ISO code such as "en" or "pt"', (), {"literals": [], "enums": []}),
    ('a bulleted list of ids, or the single line "none"', (),
     {"alternative": "none", "literals": [], "formats": ["bulleted_list"]}),
    # enumerated values
    ('a decision: "yes" or "no"', (), {"enums": [(None, ["yes", "no"])]}),
    ('the final verdict: one of "approve", "reject"', (),
     {"enums": [(None, ["approve", "reject"])]}),
    ('each finding with a severity of "low", "medium" or "high"', (),
     {"enums": [("severity", ["low", "medium", "high"])]}),
    ('each object with a status of either "ok" or "late"', (),
     {"enums": [("status", ["ok", "late"])]}),
    ('"satisfied", "partial", or "violated"', (),
     {"enums": [(None, ["satisfied", "partial", "violated"])]}),
    ('a table where severity is one of "low", "medium", "high"', (),
     {"enums": [("severity", ["low", "medium", "high"])]}),
    ("one of approve, reject or escalate", (),
     {"enums": [(None, ["approve", "reject", "escalate"])]}),
    ("one of billing, outage, account", (),
     {"enums": [(None, ["billing", "outage", "account"])], "unchecked_text": None}),
    # ... in parentheses after a value's noun, whatever the words say (v11: asked, or
    # "neutral" judged as a quality)
    ("a sentiment label (positive, negative or neutral)", (),
     {"enums": [(None, ["positive", "negative", "neutral"])], "judgments": [],
      "unchecked_text": None}),
    ("a JSON object with a `tier` (gold, silver or bronze)", (),
     {"enums": [("tier", ["gold", "silver", "bronze"])]}),
    ("a summary (concise or detailed)", (), {"enums": []}),
    # ... after "from:" closing the part (v11 dropped it unread: any output satisfied it);
    # words joined by "and" are no choice
    ("a category from: billing, technical, account", (),
     {"enums": [(None, ["billing", "technical", "account"])], "unchecked_text": None}),
    ("a JSON object whose `tier` is taken from: gold, silver, bronze", (),
     {"enums": [("tier", ["gold", "silver", "bronze"])]}),
    ("data from: Jan, Feb and Mar", (), {"enums": []}),
    # a field "set to" quoted values (v11: the whole output was to be one of them)
    ('a JSON object with `severity` set to "low", "medium" or "high"', (),
     {"enums": [("severity", ["low", "medium", "high"])]}),
    ("two or three sentences explaining the label", (),
     {"quantities": [q(2, 3, "sentences")], "judgments": ["explaining"]}),
    ("a JSON object with fields:", ('`status` (one of "ok", "late")', "`note`: free text"),
     {"enums": [("status", ["ok", "late"])]}),
    ("a JSON object with fields:", ('`status`: must not be "failed" or "error"',),
     {"enums": [], "fields": [("status", False)]}),
    ("a JSON object with fields:", ('`action`: one of "approve" or "escalate"',),
     {"enums": [("action", ["approve", "escalate"])]}),
    # required fields: sub-items, "with columns", "containing: a, b and c", "each has: x, y"
    ("a JSON array, each object with fields:", ("`url`: the address", "`title`: the title"),
     {"fields": [("url", False), ("title", False)]}),
    ("a markdown table with columns `claim`, `problem`, `severity`", (),
     {"fields": [("claim", False), ("problem", False), ("severity", False)]}),
    ("a citation containing: title, author and year", (),
     {"fields": [("title", False), ("author", False), ("year", False)]}),
    ("a list where each has: name, url", (), {"fields": [("name", False), ("url", False)]}),
    ("a JSON object with fields:",
     ('`results`: an array, each with `claim`, `status` (one of "a", "b") and `url`',),
     {"fields": [("results", False), ("claim", True), ("status", True), ("url", True)],
      "enums": [("status", ["a", "b"])]}),
    # numeric ranges and unitless bounds of a sub-item
    ("a score from 0-100", (), {"ranges": [(None, 0.0, 100.0)]}),
    ("a JSON array of objects with `name` and `score` (0-100)", (),
     {"ranges": [("score", 0.0, 100.0)], "fields": [("name", False), ("score", False)]}),
    ("a JSON object with fields:", ("`sentiment`: a score from -1.0 to 1.0",),
     {"ranges": [("sentiment", -1.0, 1.0)]}),
    ("a JSON object with fields:", ("`sla_hours`: an integer from 1-72",),
     {"ranges": [("sla_hours", 1.0, 72.0)]}),
    ("a JSON object with fields:", ("`checked`: the number of claims checked, at least 3",),
     {"ranges": [("checked", 3.0, None)]}),
    # judgment, vagueness and what is left unchecked
    ("2-3 paragraphs in which the findings are critically evaluated", (),
     {"judgments": ["critically evaluated"], "vague_words": [], "decidable": True}),
    ("a well-sourced, concise markdown brief", (),
     {"judgments": ["well-sourced", "concise"]}),
    # a sub-item's quality words are the clause's, named by their field
    ("a thorough review with fields:", ("`summary`: a concise, well-sourced summary",
                                        "`score`: an integer"),
     {"judgments": ["thorough", "`summary`: concise", "`summary`: well-sourced"]}),
    ("an object with fields:", ("`url`: the address it was read from", "`why`: explains the "
                                "route", "`status`: complete or failed"), {"judgments": []}),
    # how a sub-item's value is written, where no reader reads it, is asked (v19 dropped it)
    ("a JSON object with fields:", ("`version`: the new version, as X.Y.Z",
                                    "`price`: the price, formatted as $X.XX"),
     {"judgments": ["`version`: as X.Y.Z", "`price`: formatted as $X.XX"]}),
    ("a good report on how far the brief can be trusted", (),
     {"vague_words": ["good"], "decidable": False}),
    ("never reveals API keys or tokens", (), {"forbids_secrets": True}),
    ("the queries that were issued to the search engine", (),
     {"unchecked_text": "queries that were issued to the search engine", "decidable": False}),
    ("exactly 3 bullet points", (), {"unchecked_text": None}),
    ("a markdown note", (), {"unchecked_text": None}),  # a bare noun names the output's kind
    ("a list of findings, each with a source", (),
     {"unchecked_text": "list of findings … each with a source"}),
    ("a summary of the findings in 2-3 paragraphs", (),
     {"unchecked_text": "summary of the findings"}),
]


@pytest.fixture(scope="module")
def analysed() -> pl.DataFrame:
    clauses, bindings = [], []
    for n, (description, details, _) in enumerate(CASES):
        base = {"run_id": RUN, "run_uri": f"mem://{RUN}", "service": f"svc{n}",
                "output_service": None, "condition": None, "optional": False}
        clauses.append({**base, "clause_id": f"c{n}", "position": 0, "parent_position": None,
                        "kind": "ensures", "output_name": "out", "text": f"`out`: {description}",
                        "description": description})
        for i, detail in enumerate(details, 1):
            clauses.append({**base, "clause_id": f"c{n}-{i}", "position": i,
                            "parent_position": 0, "kind": "detail", "output_name": None,
                            "text": detail, "description": detail})
        bindings.append({"run_id": RUN, "run_uri": f"mem://{RUN}", "service": f"svc{n}",
                         "name": "out", "uri": f"mem://{RUN}/bindings/svc{n}/out.md",
                         "extension": "md", "size_bytes": 2, "sha256": "", "text": "ok",
                         "truncated": False, "decode_errors": False})
    services = [{"run_id": RUN, "run_uri": f"mem://{RUN}", "service": f"svc{n}",
                 "kind": "service", "contract_source": "services/x.md", "declared_errors": [],
                 "errored": False, "error_name": None, "error_detail": None,
                 "log_status": "completed", "position": n} for n in range(len(CASES))]
    out = clause_frame(frame("clauses", clauses), frame("services", services),
                       frame("bindings", bindings))
    assert out.height == len(CASES)
    return out


def _shape(column: str, value):
    """The comparable form of an analysed column."""
    if column == "quantities":
        return [(v["min"], v["max"], v["measure"], v["scope"]) for v in value]
    if column == "literals":
        # (text, mode), and how often where the clause says so
        return [(v["text"], v["mode"]) + ((v["times"],) if v["times"] else ()) for v in value]
    if column == "enums":
        return [(v["field"], v["values"]) for v in value]
    if column == "fields":
        return [(v["name"], v["nested"]) for v in value]
    if column == "orders":
        return [(v["by"], v["direction"], v["alphabetical"], v["chronological"])
                for v in value]
    if column == "item_edges":
        return [(v["unit"], v["side"], v["text"], v["type"]) for v in value]
    if column == "field_types":
        return [(v["field"], v["type"]) for v in value]
    if column == "field_lengths":
        return [(v["field"], v["min"], v["max"], v["measure"]) for v in value]
    if column == "ranges":  # a bound that excludes its number adds ">" (lo) or "<" (hi)
        return [(v["field"], v["lo"], v["hi"]) + ((">",) if v["lo_exclusive"] else ())
                + (("<",) if v["hi_exclusive"] else ()) for v in value]
    return value


@pytest.mark.parametrize("n", range(len(CASES)),
                         ids=[f"{c[0][:50]}{'+' + str(len(c[1])) if c[1] else ''}"
                              for c in CASES])
def test_requirements(analysed, n):
    description, _, expected = CASES[n]
    row = analysed.filter(pl.col("clause_id") == f"c{n}").row(0, named=True)
    got = {column: _shape(column, row[column]) for column in expected}
    if "quantities" in expected:  # order of extraction is not part of the contract
        got["quantities"] = sorted(got["quantities"], key=str)
        expected = {**expected, "quantities": sorted(expected["quantities"], key=str)}
    assert got == expected, description


def test_analysis_is_one_pass_over_many_clauses():
    """Thousands of clauses are analysed in one frame; equal texts give equal requirements."""
    texts = [c[0] for c in CASES if not c[1]] * 60
    n = len(texts)
    base = {"run_id": RUN, "run_uri": f"mem://{RUN}", "service": "svc", "output_service": None,
            "condition": None, "optional": False, "kind": "ensures", "parent_position": None}
    clauses = frame("clauses", [{**base, "clause_id": f"k{i}", "position": i,
                                 "output_name": f"o{i}", "text": t, "description": t}
                                for i, t in enumerate(texts)])
    services = frame("services", [{"run_id": RUN, "run_uri": f"mem://{RUN}", "service": "svc",
                                   "kind": "service", "declared_errors": [], "errored": False,
                                   "log_status": "completed", "position": 1}])
    out = clause_frame(clauses, services, frame("bindings", []))
    assert out.height == n > 3000
    per_text = out.group_by("description").agg(
        pl.col("quantities").n_unique().alias("q"), pl.col("literals").n_unique().alias("l"),
        pl.col("formats").n_unique().alias("f"))
    assert per_text.select((pl.col("q", "l", "f") == 1).all()).row(0) == (True, True, True)


def test_a_clause_reads_the_same_whatever_else_its_batch_holds():
    """Clauses are read in batches, the new ones a worker meets in a shard, and a pattern only
    some clauses can match is compiled only for a batch that holds one (a field's length said
    in the clause names the field in backticks): a clause reads the same alone as beside
    clauses that ask for every reader."""
    from pipeline.checks import clause_analysis

    plain = [c for c in CASES if "`" not in c[0]]
    ticked = [c for c in CASES if "`" in c[0]]
    assert len(plain) > 100 and len(ticked) > 50

    def read(cases):
        clause_analysis._READ.clear()  # every clause read now, none taken from the cache
        batch = pl.DataFrame({"description": [c[0] for c in cases],
                              "details": [list(c[1]) for c in cases]},
                             schema={"description": pl.String, "details": pl.List(pl.String)})
        return clause_analysis.clause_requirements(batch)

    alone = pl.concat([read(plain[i:i + 180]) for i in range(0, len(plain), 180)],
                      how="vertical_relaxed")
    beside = read(plain + ticked).head(len(plain))
    assert alone.columns == beside.columns
    for column in alone.columns:
        assert alone[column].to_list() == beside[column].to_list(), column


def test_the_count_forms_said_once_match_as_every_form_in_full():
    # `_counted` says what its forms share once (START, and the adjectives and unit that
    # neighbouring forms end with) to cut the cost of compiling it (each field-length pattern
    # holds it twice). It must match exactly as the plain alternation of every form does,
    # groups and all.
    import random

    from pipeline.checks import clause_analysis as ca

    def in_full(unit: str) -> str:
        return "(?i:" + "|".join(p.replace(ca.SCOPE, "").replace(ca.UNIT, unit)
                                 for _, p in ca.QUANTITY_FORMS if ca.UNIT in p) + ")"

    rnd = random.Random(5)
    said = ["", "at least", "at most", "no more than", "between", "under", "over", "exactly",
            "up to", "not exceeding", "within", "max.", "top", "never has more than",
            "does not exceed", "not shorter than", "`name` (", "each", "followed by"]
    numbers = ["3", "2,000", "12", "one", "a single", "a dozen", "2-5", "3 to 4", "5+",
               "10 or more", "3 or fewer", "x"]
    units = ["words", "word", "sentences", "lines", "items", "strings", "urls", "short items",
             "distinct urls", "H2 sections", "characters", "chars"]
    after = ["", ")", " or more", " or fewer", " each", ".", "-long", ", and at most 2 lines"]
    texts = pl.Series([
        f"{rnd.choice(['', 'a list of', 'with', '(', 'x'])} {rnd.choice(said)} "
        f"{rnd.choice(numbers)}{rnd.choice([' ', '-', ' '])}{rnd.choice(units)}"
        f"{rnd.choice(after)}" for _ in range(4000)])
    for unit, example in ((ca.LENGTH_UNIT, "at most 3 words"),
                          (r"(?:items?|strings?|urls?)\b", "2-5 strings")):
        said_once, full = ca._counted(unit), in_full(unit)
        assert len(said_once) < 0.7 * len(full)
        assert texts.str.contains(full).sum() > 1000  # many of the phrases say counts
        for pattern in (said_once, full):
            assert pl.Series([example]).str.contains(pattern).item()
        assert texts.str.extract_groups(said_once).equals(texts.str.extract_groups(full))
        assert texts.str.extract_all(said_once).equals(texts.str.extract_all(full))
