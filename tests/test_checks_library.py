"""Table-driven tests of the check library: a clause and an output go in, the check's outcome
and evidence and the clause's verdict come out.

Every case is a real run folder (one service, one ensures item, one output) written to disk
and graded as one batch through the real pipeline, so cases also prove that heterogeneous
clauses judged side by side in one vectorized pass do not leak into each other. Every
deciding check has a case in each direction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl
import pytest
from check_runs import grade_folder, run_id, write_service_run


@dataclass(frozen=True)
class Case:
    id: str
    clause: str                 # the ensures item after "- `out`: "
    output: str                 # the text of bindings/svc/out.md (or the file below)
    check: str                  # the check whose row is asserted
    outcome: str                # its expected outcome
    verdict: str                # the clause's expected verdict
    evidence: str               # a piece of the check's evidence (exact, case-sensitive)
    select: str = ""            # a piece of the check's detail, when a clause has several rows
    file: str = "out.md"
    details: tuple[str, ...] = field(default_factory=tuple)  # sub-items under the clause


JSON_SOURCES = '[{"url": "https://a.example/1", "title": "A"}, {"url": "https://b.example/2"}]'
TABLE = "| claim | severity |\n|---|---|\n| rates fell | high |\n| costs rose | {sev} |\n"

CASES = [
    # ---- formats: both directions for each named format
    Case("json-passes", "the decision as JSON", '{"action": "approve"}', "format", "passed",
         "satisfied", "valid JSON object"),
    Case("json-fails", "the decision as JSON", "approve, I think {", "format", "failed",
         "violated", "not valid JSON: “approve, I think {”"),
    # DuckDB's parser takes a comma before a closing bracket and NaN; JSON does not
    Case("json-trailing-comma-fails", "valid JSON", '{"action": "approve",\n}', "format",
         "failed", "violated", "not valid JSON"),
    Case("json-nan-fails", "the scores as JSON", '{"score": NaN}', "format", "failed",
         "violated", "not valid JSON"),
    Case("json-brackets-in-strings-pass", "valid JSON", '{"a": "x,]", "b": "NaN \\" ,}"}',
         "format", "passed", "satisfied", "valid JSON object"),
    Case("json-fenced-passes", "the decision as JSON", '```json\n{"action": "approve"}\n```',
         "format", "passed", "satisfied", "(inside one fenced block)"),
    Case("table-passes", "a markdown table", TABLE.format(sev="low"), "format", "passed",
         "satisfied", "table header “| claim | severity |”"),
    Case("named-table-fails", "a summary table with one row per service", "svc a: ok", "format",
         "failed", "violated", "no markdown table"),
    Case("table-fails", "a markdown table", "claim, severity\nrates fell, high", "format",
         "failed", "violated", "no markdown table"),
    # GFM's delimiter cells of one hyphen or more (v13 asked three)
    Case("table-short-delimiters-pass", "a markdown table", "| a | b |\n|:-|-:|\n| c | d |\n",
         "format", "passed", "satisfied", "table header “| a | b |”"),
    Case("table-not-a-delimiter-row-fails", "a markdown table", "a | b\n| - c\n", "format",
         "failed", "violated", "no markdown table"),
    Case("numbered-passes", "a numbered list", "1. first\n2. second", "format", "passed",
         "satisfied", "2 numbered and 0 bulleted items; first: “first”"),
    Case("numbered-fails-on-bullets", "a numbered list", "- first\n- second", "format",
         "failed", "violated", "a bulleted list, not a numbered one"),
    Case("bulleted-passes", "a bulleted list", "- first\n* second", "format", "passed",
         "satisfied", "0 numbered and 2 bulleted items"),
    Case("bulleted-fails-on-numbers", "a bulleted list", "1. first\n2. second", "format",
         "failed", "violated", "a numbered list, not a bulleted one"),
    Case("list-passes", "a list", "intro\n\n1) one\n2) two", "format", "passed", "satisfied",
         "2 numbered and 0 bulleted items"),
    Case("list-fails", "a list", "one, two and three", "format", "failed",
         "violated", "no list in `out`"),
    Case("code-block-passes", "a fenced code block", "Patch:\n\n```diff\n+x\n```\n", "format",
         "passed", "satisfied", "fenced block “```diff”"),
    Case("code-block-fails", "a fenced code block", "+x\n-y", "format", "failed",
         "violated", "no fenced code block"),
    Case("yaml-passes", "a YAML document", "name: rungrade\nversion: 2\ntags:\n  - a\n",
         "format", "passed", "satisfied", "“name: rungrade"),
    Case("yaml-fails", "a YAML document", "This is a sentence about YAML.", "format", "failed",
         "violated", "no YAML in `out`"),
    # lines shaped like YAML that a YAML parser refuses (v13 matched the lines only)
    Case("yaml-unclosed-fails", "a YAML file", "key: [unclosed\nother: 1\n", "format",
         "failed", "violated", "no YAML in `out`"),
    Case("yaml-nested-mapping-fails", "a YAML file", "a: b: c\n", "format", "failed",
         "violated", "no YAML in `out`"),
    Case("yaml-tab-indent-fails", "a YAML file", "a:\n\tb: 2\n", "format", "failed",
         "violated", "no YAML in `out`"),
    Case("csv-passes", "a CSV file", 'name,score\nann,3\n"bo, jr",4\n', "format", "passed",
         "satisfied", "“name,score"),
    Case("csv-fails", "a CSV file", "name,score\nann", "format", "failed", "violated",
         "no CSV in `out`"),
    Case("markdown-passes", "a markdown note", "# Note\n\nAll **good**.", "format", "passed",
         "satisfied", "markdown syntax: “# Note"),
    Case("markdown-fails-on-json", "a markdown note", '{"note": "x"}', "format", "failed",
         "violated", "JSON, not markdown"),
    Case("markdown-plain-text", "a markdown note", "Plain words only.", "format", "passed",
         "satisfied", "plain text with no markdown syntax (valid markdown)"),
    Case("json-array-shape-passes", "a JSON array", "[1, 2]", "json_shape", "passed",
         "satisfied", "a JSON array of 2 elements"),
    Case("json-array-shape-fails", "a JSON array", '{"a": 1}', "json_shape", "failed",
         "partially_satisfied", "a JSON object"),

    # ---- counts and lengths
    Case("at-least-passes", "a JSON array of at least 2 sources", JSON_SOURCES, "count",
         "passed", "satisfied", "`out` has 2 JSON array elements"),
    Case("at-least-fails", "a JSON array of at least 5 sources", JSON_SOURCES, "count",
         "failed", "partially_satisfied", "`out` has 2 JSON array elements"),
    Case("per-item-count-fails", "under 10 words for each bullet",
         "- one two\n- one two three four five six seven eight nine ten eleven", "count",
         "failed", "violated", "item 2 of 2 has 11 words"),
    # an item indented under another is no item of the list
    Case("nested-items-not-counted", "a markdown list with exactly 3 top-level items",
         "- a\n  - a detail\n  - another\n- b\n- c", "count", "passed", "satisfied",
         "`out` has 3 list items; first: “a”; last: “c”"),
    Case("top-level-items-counted", "a markdown list with exactly 3 top-level items",
         "- a\n  - a detail\n- b\n- c\n- d", "count", "failed", "partially_satisfied",
         "`out` has 4 list items"),
    # a count of one named section: the text under its heading, to the next of its level
    Case("section-count-fails", 'at least 3 bullet points under a "Risks" heading',
         "## Risks\n- a\n- b\n\n## Other\n- c", "count", "failed", "partially_satisfied",
         "the “Risks” section of `out` has 2 list items"),
    Case("section-count-passes", 'a "Risks" section with at least 3 bullet points',
         "# Report\n## Risks\n- a\n- b\n### Detail\n- c\n## Other\n- d", "count", "passed",
         "satisfied", "the “Risks” section of `out` has 3 list items"),
    Case("section-without-list-undecided", "a single summary in the Overview section",
         "## Overview\nJust prose here.", "count", "undecided", "not_evaluable",
         "no list in the “Overview” section of `out` in which to count summary"),
    Case("section-urls-fail", "a brief that ends with a `## Sources` section listing 3+ URLs",
         "# Brief\nSee https://x.example and https://y.example\n\n## Sources\n"
         "- https://a.example", "count", "failed", "partially_satisfied",
         "the “Sources” section of `out` has 1 distinct URL"),
    Case("plus-passes", "a list of 3+ items", "- a\n- b\n- c", "count", "passed", "satisfied",
         "`out` has 3 list items; first: “a”; last: “c”"),
    Case("plus-fails", "a list of 3+ items", "- a\n- b", "count", "failed",
         "partially_satisfied", "`out` has 2 list items"),
    Case("paragraph-range-passes", "2-3 paragraphs", "One here.\n\nTwo here.", "count",
         "passed", "satisfied", "`out` has 2 paragraphs"),
    Case("paragraph-range-fails", "2-3 paragraphs", "A.\n\nB.\n\nC.\n\nD.", "count", "failed",
         "violated", "`out` has 4 paragraphs"),
    # an indented code block, and a list item's indented paragraph, are no paragraphs of the
    # output (v13 counted them: 3 paragraphs)
    Case("paragraphs-beside-indented-code-pass", "exactly 2 paragraphs",
         "First one.\n\n    indented code\n\nSecond one.", "count", "passed", "satisfied",
         "`out` has 2 paragraphs"),
    Case("paragraphs-beside-a-list-items-paragraph-pass", "exactly 2 paragraphs",
         "First one.\n\n- an item\n\n  more of the item\n\nSecond one.", "count", "passed",
         "satisfied", "`out` has 2 paragraphs"),
    Case("exactly-one-sentence-passes", "exactly one sentence", "It worked, mostly.", "count",
         "passed", "satisfied", "`out` has 1 sentence"),
    Case("exactly-one-sentence-fails", "exactly one sentence", "It worked. Mostly.", "count",
         "failed", "violated", "`out` has 2 sentences"),
    Case("bare-one-sentence-passes", "one sentence", "Overall fine.", "count", "passed",
         "satisfied", "1 sentence"),
    # "e.g." and "i.e." end no sentence, nor does a mark before a word in lower case (v14
    # counted 3 and 2)
    Case("abbreviations-end-no-sentence", "exactly two sentences", "Use a standard unit, e.g. "
         "Celsius, i.e. the usual one. It is approx. five degrees.", "count", "passed",
         "satisfied", "`out` has 2 sentences"),
    Case("top-n-passes", "a numbered list of the top 3 results", "1. a\n2. b\n3. c", "count",
         "passed", "satisfied", "3 numbered items"),
    Case("top-n-fails", "a numbered list of the top 3 results", "1. a\n2. b\n3. c\n4. d",
         "count", "failed", "partially_satisfied", "4 numbered items"),
    Case("at-most-words-passes", "at most 5 words", "one two three four five", "count",
         "passed", "satisfied", "`out` has 5 words"),
    # tabs, newlines and no-break spaces all separate words
    Case("at-most-words-fails-with-tabs-newlines-nbsp", "at most 5 words",
         "one\ttwo\nthree\u00a0four five six", "count", "failed", "violated",
         "`out` has 6 words"),
    # "whose first line is at most 50 characters": the first line, not the whole message
    Case("first-line-length-passes", "a commit message whose first line is at most 30 characters",
         "fix: handle empty input\n\nA body that runs well past thirty characters, as bodies do.",
         "count", "passed", "satisfied",
         "the first line of `out` has 23 characters: “fix: handle empty input”"),
    Case("title-length-passes", "a report whose title is at most 8 words",
         "# Short title\n\n" + "body " * 20, "count", "passed", "satisfied",
         "the first line of `out` has 2 words: “# Short title”"),
    Case("first-line-length-fails", "a commit message whose first line has at most 5 words",
         "fix: handle empty input in the parser\n\nbody", "count", "failed", "violated",
         "the first line of `out` has 7 words"),
    Case("nbsp-separates-words", "at most 2 words", "one\u00a0two", "count", "passed",
         "satisfied", "`out` has 2 words"),
    Case("under-characters-passes", "under 20 characters", "short enough", "count", "passed",
         "satisfied", "`out` has 12 characters"),
    Case("under-characters-fails", "under 20 characters", "x" * 20, "count", "failed",
         "violated", "`out` has 20 characters"),
    Case("each-under-words-passes", "a bulleted list, each under 5 words",
         "- one two\n- three four five six", "count", "passed", "satisfied",
         "all 2 items within bounds", select="each under 5 words"),
    Case("each-under-words-fails", "a bulleted list, each under 5 words",
         "- one two\n- three four five six seven\n- eight", "count", "failed",
         "partially_satisfied", "item 2 of 3 has 5 words: “three four five six seven”",
         select="each under 5 words"),
    # headings and list items are not paragraphs: the second paragraph is the long one
    Case("each-paragraph-at-most-words-fails", "text where each paragraph has at most 3 words",
         "# Title\n\nShort one.\n\n- a list item here\n\nThis paragraph has six words.",
         "count", "failed", "violated",
         "paragraph 2 of 2 has 5 words: “This paragraph has six words.”"),
    Case("followed-by-one-paragraph-passes", "a score, followed by exactly one paragraph",
         "**Score: 7**\n\nBecause the evidence is thin.", "count", "passed", "satisfied",
         "`out` has 1 paragraph after its first line"),
    Case("followed-by-one-paragraph-fails", "a score, followed by exactly one paragraph",
         "**Score: 7**\n\nBecause.\n\nAnd also.", "count", "failed", "violated",
         "`out` has 2 paragraphs after its first line"),
    Case("followed-by-one-sentence-on-one-line", "a score from 0-100, followed by exactly one "
         "sentence", "**Risk: 68/100** — the change touches every request path.", "count",
         "passed", "satisfied", "`out` has 1 sentence after its first line"),
    Case("followed-by-one-sentence-after-a-number", "a score from 0-100, followed by exactly "
         "one sentence", "85 — the evidence is strong.", "count", "passed", "satisfied",
         "`out` has 1 sentence after its first line"),
    # a labelled lead is the label and its value: "70/100." is no sentence of what follows
    # (v14 counted 2)
    Case("followed-by-one-sentence-after-a-labelled-value", "a score from 0-100, followed by "
         "exactly one sentence", "Score: 70/100. Rolling back restores the old behaviour.",
         "count", "passed", "satisfied", "`out` has 1 sentence after its first line"),
    Case("followed-by-after-a-time", "a status line, followed by at most 4 words",
         "10:30: deploy done, rollback ready.", "count", "passed", "satisfied",
         "`out` has 4 words after its first line"),
    Case("followed-by-one-sentence-after-a-labelled-url", "a source, followed by exactly one "
         "sentence", "Source: https://example.com/report. The figures match.", "count",
         "passed", "satisfied", "`out` has 1 sentence after its first line"),
    Case("followed-by-one-sentence-after-a-value-with-eg", "a verdict, followed by exactly one "
         "sentence", "Verdict: approve, e.g. ship it. Tests pass.", "count", "passed",
         "satisfied", "`out` has 1 sentence after its first line"),
    Case("followed-by-one-sentence-after-a-number-fails", "a score from 0-100, followed by "
         "exactly one sentence", "85/100: strong. Very.", "count", "failed", "partially_satisfied",
         "`out` has 2 sentences after its first line"),
    Case("distinct-urls-passes", "at least 2 distinct URLs",
         "See https://a.example/x and https://b.example/y.", "count", "passed", "satisfied",
         "`out` has 2 distinct URLs"),
    Case("distinct-urls-fails", "at least 2 distinct URLs",
         "See https://a.example/x and https://a.example/x again.", "count", "failed",
         "violated", "`out` has 1 distinct URL"),
    # a count of one kind of item among others is asked: a list is not told apart by kind
    Case("kinds-of-items-are-asked", "a list of at least 2 pros and at least 2 cons",
         "Pros:\n- fast\nCons:\n- costly", "count", "undecided", "satisfied",
         "`out` has 2 list items in all; how many are pros is not told apart",
         select="at least 2 pros"),
    Case("generic-count-beside-a-kind", "a list of 5 items with at least 2 risks",
         "- a\n- b\n- c\n- d", "count", "failed", "partially_satisfied",
         "`out` has 4 list items", select="5 items"),
    # "ends with a question" where the clause part closes
    Case("ends-with-a-question-fails", "a response under 100 words that ends with a question",
         "All done.", "literal", "failed", "partially_satisfied", "ends: “All done.”"),
    Case("a-link-fails", "a reply with a link to the PR", "See the PR.", "count", "failed",
         "violated", "`out` has 0 distinct URLs"),
    Case("no-line-breaks-fails", "a single paragraph without line breaks", "one\ntwo", "count",
         "failed", "partially_satisfied", "`out` has 2 non-empty lines",
         select="at most one line"),
    # values the output goes on after ("…, with a reason") are asked, not the whole output
    Case("values-then-reason-are-asked", "a decision: approve or reject, with a one-sentence "
         "reason", "approve - the tests pass.", "meets_description", "undecided",
         "not_evaluable", "“approve - the tests pass.”"),
    # a field's length in parentheses bounds the field, not the whole output
    Case("inline-field-length-passes", "a JSON object with `summary` (at most 5 words) and "
         "`notes`", '{"summary": "ok fine", "notes": "a b c d e f g h i j k"}', "field_length",
         "passed", "satisfied", "the longest has 2 words: “ok fine”"),
    Case("inline-field-length-fails", "a JSON object with `title` (under 20 characters)",
         '{"title": "a very long title indeed here"}', "field_length", "failed",
         "partially_satisfied", "one has 29 characters: “a very long title indeed here”"),
    # "no headings", "without any markdown headings": none at all (other markdown allowed)
    Case("no-headings-fails", "a summary with no more than 3 bullet points and no headings",
         "# H\n- a", "count", "failed", "partially_satisfied", "`out` has 1 heading",
         select="no headings"),
    Case("no-markdown-headings-passes", "a reply without any markdown headings",
         "**bold** text", "count", "passed", "satisfied", "`out` has 0 headings"),
    # a fenced example's headings and items are the example's (v13 counted them)
    Case("headings-in-a-fence-pass", "instructions without any markdown headings",
         "Run this:\n\n```bash\n# install the tool\npip install tool\n```\n\nDone.",
         "count", "passed", "satisfied", "`out` has 0 headings"),
    Case("items-in-a-fence-and-rules-pass", "a markdown list of exactly 2 items",
         "- alpha\n- beta\n\n- - -\n\n```yaml\nsteps:\n  - build\n- test\n```",
         "count", "passed", "satisfied", "`out` has 2 list items"),
    # "where score is between 0 and 100" bounds that field, not the output's first number
    Case("bare-field-range-passes", "a markdown table with columns `name` and `score`, where "
         "score is between 0 and 100", "| year | name | score |\n|---|---|---|\n| 2026 | a | 50 |",
         "numeric_range", "passed", "satisfied", "`score` values: 50"),
    # 'ends with a "Next steps" section': the last heading, whatever its level or case
    Case("last-section-passes", 'a report that ends with a "Next steps" section',
         "## Intro\nx\n### next steps\ny", "literal", "passed", "satisfied",
         "last heading: “### next steps”"),
    Case("last-section-fails", 'a report that ends with a "Next steps" section',
         "## Next steps\ny\n## Intro\nx", "literal", "failed", "violated",
         "last heading: “## Intro”"),
    # a quoted key name before "key", and a section named with its heading marks
    Case("quoted-key-fails", 'a response in JSON format with a "result" key', '{"res": 1}',
         "required_field", "failed", "partially_satisfied", "top-level keys: res"),
    Case("hashed-section-fails", "a markdown report with a ## Summary section",
         "# R\n## Other\nx", "required_field", "failed", "partially_satisfied",
         "no `Summary` field, label or heading in `out`"),
    # a possessive before the quoted phrase hides it no more
    Case("possessive-phrase-fails", 'a reply that mentions the user\'s name "Alice"',
         "Hello Bob", "literal", "failed", "violated", "no “Alice” in `out`"),
    # repeated items, compared without case or a final period (lines without a list)
    Case("no-duplicates-fails", "a list of tags with no duplicates", "- ai\n- AI.\n- ml",
         "count", "failed", "partially_satisfied", "`out` has 1 repeated item"),
    Case("no-repeated-lines-passes", "a note, no repeated lines", "ok\n---\ntext\n---",
         "count", "passed", "satisfied", "`out` has 0 repeated items"),
    # headings of one level
    Case("h2-sections-pass", "a markdown report with at least 3 H2 sections",
         "# R\n## A\n## B\n## C", "count", "passed", "satisfied", "`out` has 3 H2 headings (##)"),
    Case("h2-sections-fail", "a markdown report with at least 3 H2 sections",
         "# R\n## A\n## B\n### C", "count", "failed", "partially_satisfied",
         "`out` has 2 H2 headings (##)"),
    # the case of every letter
    Case("lowercase-passes", "a slug, all lowercase", "my-post-42", "letter_case", "passed",
         "satisfied", "all lowercase: “my-post-42”"),
    Case("bare-lowercase-fails", '"yes" or "no", lowercase', "Yes", "letter_case", "failed",
         "partially_satisfied", "an uppercase letter “Y” in “Yes”"),
    Case("lowercase-fails", "a slug, lowercase only", "my-Post", "letter_case", "failed",
         "violated", "an uppercase letter “P” in “my-Post”"),
    Case("all-caps-fails", "a headline in ALL CAPS", "BREAKING: rates Fall", "letter_case",
         "failed", "violated", "a lowercase letter “r”"),
    Case("not-all-caps-is-asked", "a reply, not in all caps", "HELLO", "meets_description",
         "undecided", "not_evaluable", "“HELLO”"),
    # hashtags and emojis, counted in the output
    Case("hashtags-pass", "a post with exactly 3 hashtags", "Launch day! #ai #ml #nlp",
         "count", "passed", "satisfied", "`out` has 3 hashtags"),
    Case("hashtags-fail", "a tweet under 280 characters with at least 2 hashtags",
         "# News\n\nC# ships; see page#x. #release", "count", "failed", "partially_satisfied",
         "`out` has 1 hashtag", select="hashtags"),
    Case("no-emojis-fails", "a reply with no emojis", "Thanks 👋🏽, done 🎉",
         "count", "failed", "violated", "`out` has 2 emojis"),
    Case("no-emojis-passes", "a reply with no emojis", "© 2026 Acme™ — done.", "count",
         "passed", "satisfied", "`out` has 0 emojis"),
    # fenced code blocks and exclamation marks, counted (v7: asked, or a bound on a number)
    Case("code-blocks-pass", "exactly 2 code blocks", "Run:\n```sh\nmake\n```\nthen\n"
         "```python\nprint(1)\n```", "count", "passed", "satisfied",
         "`out` has 2 fenced code blocks"),
    Case("code-blocks-fail", "a Python script in one code block",
         "```python\nx = 1\n```\n```python\ny = 2\n```", "count", "failed",
         "partially_satisfied", "`out` has 2 fenced code blocks", select="one code block"),
    Case("at-most-code-blocks-allows-none", "an answer with at most one code block",
         "Just prose.", "count", "passed", "satisfied", "`out` has 0 fenced code blocks"),
    Case("at-most-code-blocks-fails", "at most 1 fenced code block",
         "```a\nx\n```\n```b\ny\n```", "count", "failed", "violated",
         "`out` has 2 fenced code blocks"),
    Case("exclamations-fail", "no more than 2 exclamation marks", "Wow! Great! Super!",
         "count", "failed", "violated", "`out` has 3 exclamation marks"),
    Case("no-exclamations-passes", "a reply without exclamation points",
         "Done: `a != b` holds.", "count", "passed", "satisfied",
         "`out` has 0 exclamation marks"),
    # a fenced block's language tag (v7: asked)
    Case("fence-tag-passes", "a unified diff inside a ```diff code block",
         "```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n```", "format", "passed",
         "satisfied", "fenced block “```diff”", select="tagged diff"),
    Case("fence-tag-fails", "a unified diff inside a ```diff code block",
         "```\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n```", "format", "failed",
         "partially_satisfied", "no fenced block in `out` is tagged diff; its first fence: “```”",
         select="tagged diff"),
    Case("fence-alias-passes", "a Python code block", '```py title="x"\nx = 1\n```', "format",
         "passed", "satisfied", "fenced block “```py title=\"x\"”"),
    Case("fence-other-language-fails", "a Python code block", "```pythonic\nx = 1\n```",
         "format", "failed", "violated", "is tagged python; its first fence: “```pythonic”"),
    # every item begins with an emoji (v7: asked)
    Case("emoji-start-passes", "each item starts with an emoji", "- ✅ done\n- 👍🏽 fine",
         "item_edge", "passed", "satisfied", "all 2 list item(s) begin with an emoji"),
    Case("emoji-start-fails", "each item starts with an emoji", "- done\n- ❌ not",
         "item_edge", "failed", "violated", "list item 1 of 2 does not begin with an emoji"),
    # "each" of a JSON array is each element (v7: each line, the whole one-line array passed)
    Case("json-elements-sources-fail", "a JSON array of findings, each with at least 2 sources",
         '[{"claim": "a", "sources": ["https://a.example/1", "https://b.example/2"]}, '
         '{"claim": "b", "sources": ["https://c.example/3"]}]', "count", "failed",
         "partially_satisfied", "element 2 of 2 has 1 distinct URL"),
    Case("json-elements-sources-pass", "a JSON array of findings, each with at least 2 sources",
         '[\n  {"claim": "a",\n   "sources": ["https://a.example/1", "https://b.example/2"]}\n]',
         "count", "passed", "satisfied",
         "all 1 elements within bounds; the longest has 2 distinct URLs"),
    Case("json-elements-words-undecided", "a JSON array of findings, each under 20 words",
         '[\n  {"claim": "a b c"},\n  {"claim": "d"}\n]', "count", "undecided", "satisfied",
         "words cannot be counted per element of `out`"),
    # every item wrapped whole (v7: asked)
    Case("bold-items-pass", "each bullet in bold", "- **Rates fell**\n- **Costs rose**.",
         "item_edge", "passed", "satisfied", "all 2 list item(s) are wrapped in bold (**…**)"),
    Case("bold-items-fail", "each bullet in bold", "- **Rates fell**\n- Costs rose",
         "item_edge", "failed", "violated", "list item 2 of 2 is not wrapped in bold (**…**): "
         "“Costs rose”"),
    Case("quoted-items-fail", "every item wrapped in quotes", '- "alpha"\n- “beta”\n- gamma',
         "item_edge", "failed", "violated", "list item 3 of 3 is not wrapped in quotes"),
    Case("bold-terms-are-asked", "each term in bold", "The **cat** sat.", "meets_description",
         "undecided", "not_evaluable", "“The **cat** sat.”"),
    # checkboxes (v7: "a markdown checklist" was any markdown)
    Case("checklist-passes", "a markdown checklist (- [ ] items)", "- [ ] one\n- [x] two",
         "format", "passed", "satisfied", "2 checklist items; first: “[ ] one”"),
    Case("checklist-fails", "a markdown checklist of the steps", "- one\n- two", "format",
         "failed", "violated", "no markdown checklist (- [ ] items) in `out`"),
    Case("no-checkboxes-fails", "a list with no checkboxes", "- [ ] one", "excluded_format",
         "failed", "partially_satisfied", "1 checklist item; first: “[ ] one”"),
    # a CSV's rows below its header, counted (v7: undecided, "no list")
    Case("csv-rows-fail", "a CSV with at least 3 data rows", "name,score\nann,3",
         "count", "failed", "partially_satisfied", "`out` has 1 CSV data row"),
    Case("csv-rows-pass", "a CSV file with exactly 2 rows", "name,score\nann,3\nbob,4",
         "count", "passed", "satisfied", "`out` has 2 CSV data rows"),
    # sentences per item, paragraph or line
    Case("each-one-sentence-passes", "three bullet points, each one sentence",
         "- Rates fell.\n- Costs rose in May.\n- Margins held", "count", "passed", "satisfied",
         "all 3 items within bounds; the longest has 1 sentence: “Rates fell.”",
         select="each one sentence"),
    Case("each-one-sentence-fails", "three bullet points, each one sentence",
         "- Rates fell. Then rose.\n- Costs rose.\n- Margins held.", "count", "failed",
         "partially_satisfied", "item 1 of 3 has 2 sentences: “Rates fell. Then rose.”",
         select="each one sentence"),
    Case("each-paragraph-sentences-fails", "each paragraph has at most 2 sentences",
         "One. Two.\n\nThree. Four! Five?", "count", "failed", "violated",
         "paragraph 2 of 2 has 3 sentences: “Three. Four! Five?”"),
    Case("every-line-sentence-passes", "every line a single sentence", "Up 3%.\nDown 2%.",
         "count", "passed", "satisfied", "all 2 lines within bounds"),
    Case("bare-each-bounds-the-counted-paragraphs", "at least 2 paragraphs, each under 5 words",
         "One two three\nfour five six.\n\nTwo para.", "count", "failed", "partially_satisfied",
         "paragraph 1 of 2 has 6 words", select="each under 5 words"),
    Case("no-item-longer-fails", "a bulleted list, no item longer than 10 words",
         "- a b c d e f g h i j k l\n- b", "count", "failed", "partially_satisfied",
         "item 1 of 2 has 12 words", select="each item at most 10 words"),
    Case("every-bullet-words-fails", "every bullet under 4 words", "- a b\n- c d e f g",
         "count", "failed", "violated", "item 2 of 2 has 5 words: “c d e f g”"),
    Case("each-with-url-fails", "a bulleted list, each with a source URL",
         "- a https://a.example\n- b, no link", "count", "failed", "partially_satisfied",
         "item 2 of 2 has 0 distinct URLs", select="each with a source URL"),
    Case("count-undecided-without-structure", "at least 3 findings", "Prose, no list at all.",
         "count", "undecided", "not_evaluable",
         "no list, table or JSON array in `out` in which to count findings"),

    # ---- exact phrases (deciding, both ways)
    Case("contains-passes", 'a note stating "no results"', "Sadly: no results today.",
         "literal", "passed", "satisfied", "“Sadly: no results today.”"),
    Case("contains-fails", 'a note stating "no results"', "We found three.", "literal",
         "failed", "violated", "no “no results” in `out`"),
    Case("contains-ignoring-case-passes", 'a note stating "no results"', "No results.",
         "literal", "passed", "satisfied", "(ignoring case)"),
    Case("starts-passes", 'one sentence beginning with "Overall:"', "Overall: fine.",
         "literal", "passed", "satisfied", "first line: “Overall: fine.”"),
    Case("starts-fails", 'one sentence beginning with "Overall:"', "In short: fine.",
         "literal", "failed", "partially_satisfied", "first line: “In short: fine.”"),
    Case("ends-passes", "a reply that ends with the sign-off “— The Team”",
         "Thanks for writing.\n\n— The Team", "literal", "passed", "satisfied",
         "ends: “Thanks for writing.\n\n— The Team”"),  # (quoted as written)
    Case("ends-fails", "a reply that ends with the sign-off “— The Team”",
         "— The Team\n\nThanks for writing.", "literal", "failed", "violated",
         "ends: “— The Team\n\nThanks for writing.”"),
    Case("ends-with-section-passes", "a brief that ends with a `## Sources` section",
         "# Brief\n\nText.\n\n## Sources\n\n- https://a.example", "literal", "passed",
         "satisfied", "last heading: “## Sources”"),
    Case("ends-with-section-fails", "a brief that ends with a `## Sources` section",
         "# Brief\n\n## Sources\n\n- a\n\n## Appendix\n\nmore", "literal", "failed",
         "violated", "last heading: “## Appendix”"),
    # a named section is a heading (or a label on a line of its own) so named: the word in
    # prose is no section (v14 read "contains “Sources”", satisfied at 95)
    Case("named-section-fails-on-the-word", "a report; must include a `Sources` section",
         "# Report\n\nWe checked the Sources listed by the client.", "literal", "failed",
         "violated", "no heading or label “Sources” in `out`; headings: “# Report”"),
    Case("named-section-passes-on-a-heading", 'a report with a "Sources" heading',
         "# Report\n\nText.\n\n### sources\n\n- a", "literal", "passed", "satisfied",
         "heading “### sources”"),
    Case("named-section-passes-on-a-numbered-bold-heading", "a report with a `Sources` section",
         "# Report\n\n## 3. **Sources:**\n\n- a", "literal", "passed", "satisfied",
         "heading “## 3. **Sources:**”"),
    Case("named-section-passes-on-a-label", "a report with a `Sources` section",
         "Report\n\n**Sources:**\n- a", "literal", "passed", "satisfied",
         "label “**Sources:**”"),
    # a label in a code block is the code's (v15 passed "Sources:" in a fenced config)
    Case("named-section-fails-on-a-label-in-code", "a report with a `Sources` section",
         "# Report\n\nThe parser reads:\n\n```yaml\nSources:\n  - a\n```\n", "literal",
         "failed", "violated", "no heading or label “Sources” in `out`; headings: “# Report”"),
    Case("first-line-passes", "a comment whose first line is exactly `### Review`",
         "### Review\nLooks fine.", "literal", "passed", "satisfied",
         "first line: “### Review”"),
    Case("first-line-fails", "a comment whose first line is exactly `### Review`",
         "### Review of PR 12\nLooks fine.", "literal", "failed", "violated",
         "first line: “### Review of PR 12”"),
    Case("exact-passes", "the reply is exactly `eval-sender`", "  eval-sender\n", "literal",
         "passed", "satisfied", "the output is “eval-sender”"),
    # SPEC §4: a sentence that mentions the value is not exactly the value
    Case("exact-fails-on-a-sentence", "the reply is exactly `eval-sender`",
         "The sender is not eval-sender.", "literal", "failed", "violated",
         "the output is “The sender is not eval-sender.”"),
    Case("exact-is-case-sensitive", "the reply is exactly `eval-sender`", "Eval-Sender",
         "literal", "failed", "violated", "the output is “Eval-Sender”"),
    Case("exact-phrase-unquoted-passes", "a summary containing the exact phrase Final answer",
         "Final answer: 42", "literal", "passed", "satisfied", "“Final answer: 42”"),
    Case("exact-phrase-unquoted-fails", "a summary containing the exact phrase Final answer",
         "The answer is 42", "literal", "failed", "violated",
         "no “Final answer” in `out`"),
    Case("alternative-passes", 'a bulleted list of the ids, or the single line "none"',
         "none", "alternative_output", "passed", "satisfied",
         "the output is “none”"),
    Case("alternative-not-taken", 'a bulleted list of the ids, or the single line "none"',
         "- id-1\n- id-2", "format", "passed", "satisfied", "0 numbered and 2 bulleted items"),

    # ---- one-sided detectors: failed or undecided, never passed (SPEC §4 boundaries)
    Case("forbidden-found", 'a reply that never mentions the password "hunter2"',
         "the password is hunter2", "forbidden_literal", "failed", "violated",
         "“the password is hunter2”"),
    Case("forbidden-inside-letters", 'a reply that never mentions the password "hunter2"',
         "éhunter2é", "forbidden_literal", "undecided", "not_evaluable",
         "“hunter2” not found in `out` as a whole word"),
    Case("forbidden-as-prefix", 'a reply that never mentions the password "hunter2"',
         "hunter20", "forbidden_literal", "undecided", "not_evaluable",
         "finding nothing establishes nothing"),
    Case("forbidden-list-found", 'a reply that never mentions "staging" or "prod"',
         "deployed to prod at noon", "forbidden_literal", "failed", "violated",
         "“deployed to prod at noon”", select="“prod”"),
    Case("forbidden-list-is-no-choice", 'a reply that never mentions "staging" or "prod"',
         "All clear.", "forbidden_literal", "undecided", "not_evaluable",
         "“staging” not found in `out` as a whole word", select="“staging”"),
    Case("negated-start-is-not-read-as-start", 'a title that does not start with "Untitled"',
         "Report on Q3", "meets_description", "undecided", "not_evaluable",
         "“Report on Q3”"),
    Case("negated-enum-is-not-read-as-enum", 'a status that must not be "failed" or "error"',
         "status: ok", "meets_description", "undecided", "not_evaluable", "“status: ok”"),
    Case("enum-opening-noun-is-the-output", 'a decision: "yes" or "no"', "yes", "enum_value",
         "passed", "satisfied", "the output is “yes”"),
    Case("enum-opening-noun-fails", 'a decision: "yes" or "no"', "maybe", "enum_value",
         "failed", "violated", "the output is “maybe”"),
    Case("enum-field-named-with-of-passes",
         'a JSON array, each object with a status of either "ok" or "late"',
         '[{"status": "ok"}, {"status": "late"}]', "enum_value", "passed", "satisfied",
         "`status` values: ok, late"),
    Case("enum-field-named-with-of-fails",
         'a JSON array, each object with a status of either "ok" or "late"',
         '[{"status": "ok"}, {"status": "lost"}]', "enum_value", "failed", "partially_satisfied",
         "“lost” is not one of"),
    Case("phrase-choice-is-judged", 'a reply that begins with either "Yes" or "No"',
         "Yes, indeed.", "meets_description", "undecided", "not_evaluable",
         "“Yes, indeed.”"),
    Case("phrase-choice-without-either-is-judged", 'a reply that starts with "Hi" or "Hello"',
         "Hello there", "meets_description", "undecided", "not_evaluable", "“Hello there”"),
    Case("bare-alternative-met", 'a list of bugs, or just "none"', "none",
         "alternative_output", "passed", "satisfied", "the output is “none”"),
    Case("thousands-separator", "a reply under 2,000 characters", "short", "count", "passed",
         "satisfied", "5 characters"),
    Case("negated-bound-caps", "a summary that is not longer than 5 words",
         "one two three four five six", "count", "failed", "violated", "6 words"),
    Case("negated-bound-caps-passes", "a report that does not exceed 100 words",
         "a short report", "count", "passed", "satisfied", "3 words"),
    # a length of one part of the output (the rest is a list) is no length of the output
    Case("part-length-is-judged", "a summary of at most 2 sentences followed by a bullet list "
         "of risks", "It works. It is fast.\n- cost\n- latency", "meets_description",
         "undecided", "satisfied", "“It works."),
    Case("part-line-is-judged", "a one-line verdict and a list of at most 5 reasons",
         "Approve\n- fast\n- safe", "count", "passed", "satisfied", "2 list items"),
    Case("ticked-field-of-values-passes", 'a JSON object with a `status` of "ok" or "error"',
         '{"status": "ok"}', "enum_value", "passed", "satisfied", "`status` values: ok"),
    Case("ticked-field-of-values-fails", 'a JSON object with a `status` of "ok" or "error"',
         '{"status": "bad"}', "enum_value", "failed", "partially_satisfied",
         "“bad” is not one of “ok”, “error”"),
    # the output's own key, not a nested one of the same name (v21: both, the nested
    # "failing" failed it)
    Case("ticked-field-of-values-reads-the-top-key",
         'a JSON object with a `status` key ("ok" or "error")',
         '{"status": "ok", "checks": [{"name": "db", "status": "failing"}]}', "enum_value",
         "passed", "satisfied", "`status` values: ok"),
    Case("ticked-field-of-values-nested-alone",
         'a JSON object with a `status` key ("ok" or "error")',
         '{"result": {"status": "bad"}}', "enum_value", "failed", "partially_satisfied",
         "“bad” is not one of “ok”, “error”"),
    # a null of a field that may be absent is no value (v22 as first written: "null" failed)
    Case("optional-field-null-is-no-value", "a JSON object with fields:",
         '{"name": "x", "severity": null}', "enum_value", "undecided", "satisfied",
         "no value of `severity` found",
         details=("`name`: the name", '`severity`: "low", "medium" or "high" (optional)')),
    Case("conditional-field-null-is-no-value", "a JSON object with fields:",
         '{"resolution": null}', "enum_value", "undecided", "satisfied",
         "no value of `resolution` found",
         details=('`resolution`: "fixed" or "wontfix", if resolved',)),
    Case("optional-typed-field-null-is-no-value", "a JSON object with fields:",
         '{"id": 1, "closed_at": null}', "field_type", "undecided", "satisfied",
         "no value of `closed_at` to read",
         details=("`id`: the id", "`closed_at` (optional): an ISO 8601 timestamp in UTC")),
    Case("field-said-absent-null-is-no-value", 'a JSON object with a `resolution` field ("fixed" '
         'or "wontfix"), or nothing if the check was skipped', '{"resolution": null}',
         "enum_value", "undecided", "satisfied", "no value of `resolution` found"),
    Case("other-field-said-empty-null-fails", 'a JSON object with a `verdict` ("approve" or '
         '"reject") and a `reasons` list (may be empty)', '{"verdict": null, "reasons": []}',
         "enum_value", "failed", "partially_satisfied", "“null” is not one of"),
    # ... but of a required one, it is a wrong value, whatever "if" or "when" the clause says
    # elsewhere (v22 as first written: no value, the clause met at 75)
    Case("required-field-null-fails-beside-when", 'a JSON object with a `status` key ("ok" or '
         '"error") that says when the job ran', '{"status": null}', "enum_value", "failed",
         "partially_satisfied", "“null” is not one of “ok”, “error”"),
    Case("required-sub-item-null-fails-beside-if", "a JSON object with fields:",
         '{"priority": null, "assignee": null}', "enum_value", "failed", "partially_satisfied",
         "“null” is not one of “p1”, “p2”, “p3”",
         details=('`priority`: "P1", "P2" or "P3"', "`assignee`: an email address, if assigned")),
    # the output's own field, said before another's "each with" (v22 as first written read
    # it below the top)
    Case("top-enum-before-each-with-reads-the-top", 'a JSON object with an overall `status` ("ok" '
         'or "error"). It also has `checks`, each with a `name` and a `status`.',
         '{"status": "ok", "checks": [{"name": "db", "status": "passing"}]}', "enum_value",
         "passed", "satisfied", "`status` values: ok"),
    Case("top-enum-before-each-with-fails", 'a `verdict` ("approve" or "reject") and `comments`, '
         "each with a `line` and a `text`",
         '{"verdict": "maybe", "comments": [{"line": 1, "text": "x"}]}', "enum_value", "failed",
         "violated", "“maybe” is not one of"),
    # numbers with a thousands separator are lines of one item (v22 as first written: a CSV)
    Case("count-of-number-lines-fails", "a list of at most 2 invoice amounts, one per line",
         "1,200\n3,400\n560", "count", "failed", "violated", "`out` has 3 lines"),
    # a field inside another is read below the top (v22 as first written: the output's own)
    Case("nested-sub-item-enum-reads-below-the-top", "a JSON object with fields:",
         '{"status": "ok", "checks": [{"name": "a", "status": "broken"}]}', "enum_value",
         "failed", "partially_satisfied", "“broken” is not one of “pass”, “fail”",
         select="“pass”", details=('`status`: "ok" or "degraded"', '`checks`: a list of objects, '
                                   'each with `name` and `status` ("pass" or "fail")')),
    Case("contained-enum-reads-below-the-top", "a JSON object with a list of `services`, each "
         "with `name` and `status` (up or down)",
         '{"status": "degraded", "services": [{"name": "a", "status": "up"}]}', "enum_value",
         "passed", "satisfied", "`status` values: up"),
    # "never an empty `results` list" is at least one item (v22 as first written: none)
    Case("never-an-empty-field-list-passes", "a JSON object, never an empty `results` list",
         '{"results": [{"id": 1}]}', "field_length", "passed", "satisfied",
         "1 array(s) under `results`"),
    # "never uses more than 2 …" bounds them (v22 as first written: more than 2 required)
    Case("never-uses-more-than-passes", "a reply that never uses more than 2 exclamation marks",
         "Thanks! Done!", "count", "passed", "satisfied", "2 exclamation marks"),
    # a label line opens a list of lines; a CSV's lines are no such list
    Case("label-line-is-no-item", "a list of at most 3 hosts, one per line",
         "Hosts:\nweb-1\nweb-2\nweb-3", "count", "passed", "satisfied", "`out` has 3 lines"),
    Case("csv-lines-are-no-items", "a list of at least 3 customers",
         "name,plan\nann,pro\nbob,free", "count", "undecided", "violated",
         "no list, table or JSON array in `out`"),
    # what is forbidden in one part only is asked (v22 as first written: the whole output)
    Case("forbidden-in-one-part-is-asked", 'a reply that never names "Acme" in its first '
         "sentence", "We shipped it. Acme helped.", "meets_description", "undecided",
         "not_evaluable", "We shipped it."),
    # a value not of its type is said so, not to be outside what it is within
    Case("value-within-wrong-type-fails", "a date in 2026", "Q1 2026", "value_type",
         "failed", "violated", "`out` is not a date: “Q1 2026”"),
    # a date with its time is a date (v22: not a date) ...
    Case("date-with-time-is-a-date", "a JSON object with a `created` field (a date)",
         '{"created": "2026-12-05T10:00:00Z"}', "field_type", "passed", "satisfied",
         "each a date; first: “2026-12-05T10:00:00Z”"),
    Case("date-time-within-year", "a date in 2026", "2025-12-31 23:00 UTC", "value_type",
         "failed", "violated", "`out` is a date, not in 2026"),
    # ... and an address after a display name is an email address (v22: none), its host
    # that of the address
    Case("email-display-name-passes", "a JSON object with an `owner` field (an email address)",
         '{"owner": "Ann Lee <ann@example.com>"}', "field_type", "passed", "satisfied",
         "each an email address"),
    Case("email-display-name-host", "an email address at the acme.com domain",
         "Ann Lee <ann@acme.co>", "value_type", "failed", "violated",
         "`out` is an email address, not at acme.com"),
    # a markdown link is the URL it leads to (v22: no URL) ...
    Case("url-markdown-link-passes", "a URL on github.com",
         "[PR #3](https://github.com/acme/app/pull/3)", "value_type", "passed", "satisfied",
         "`out` is a URL on github.com"),
    Case("url-markdown-link-host", "a URL on github.com",
         "[PR #3](https://gitlab.com/acme/app/pull/3)", "value_type", "failed", "violated",
         "`out` is a URL, not on github.com"),
    # ... and a mail header's date and time a timestamp, its zone read (v22: no timestamp)
    Case("rfc-2822-timestamp-in-utc", "a timestamp in UTC", "Tue, 17 Mar 2026 14:35:22 +0000",
         "value_type", "passed", "satisfied", "in UTC: “Tue, 17 Mar 2026 14:35:22 +0000”"),
    Case("rfc-2822-timestamp-not-utc", "a timestamp in UTC", "Tue, 17 Mar 2026 14:35:22 +0100",
         "value_type", "failed", "violated", "not in UTC"),
    # ... but a link in a JSON field is no URL (its reader needs the address), nor a sentence
    # before an address a display name; an address in angle brackets is a URL
    Case("url-angle-brackets-passes", "a URL", "<https://github.com/acme/app>", "value_type",
         "passed", "satisfied", "`out` is a URL"),
    Case("url-link-in-json-field-fails", "a JSON object with an `evidence_url` field (a URL)",
         '{"evidence_url": "[source](https://x.org/1)"}', "field_type", "failed",
         "partially_satisfied", "“[source](https://x.org/1)” is not a URL"),
    Case("email-after-sentence-fails", "an email address",
         "Please write to the on-call team at <ops@acme.com>", "value_type", "failed",
         "violated", "`out` is not an email address"),
    Case("email-quoted-display-name-passes", "an email address", '"Lee, Ann" <ann@acme.com>',
         "value_type", "passed", "satisfied", "`out` is an email address"),
    # a date said without its time has none, in the clause or a sub-item; "in ISO format" is
    # ISO 8601 (v23 as first written: any date with a time, an RFC 2822 timestamp)
    Case("date-only-no-time", "a date only, without the time", "2026-12-05T10:00:00Z",
         "value_type", "failed", "violated", "`out` is not a date without its time"),
    Case("date-only-sub-item", "a JSON object with:", '{"due": "2026-12-05T10:00:00Z"}',
         "field_type", "failed", "partially_satisfied", "is not a date without its time",
         file="out.json", details=("`due`: a date (no time)",)),
    Case("timestamp-iso-format-words", "a timestamp in ISO format",
         "Tue, 17 Mar 2026 14:35:22 +0000", "value_type", "failed", "violated",
         "`out` is not an ISO 8601 date and time"),
    # a timestamp said to be Unix time is one, in the clause, a sub-item or a field's
    # parentheses; an address said to go bare has no display name (v23: any timestamp, an
    # address after a display name; "a Unix timestamp" asked)
    Case("unix-timestamp-iso-fails", "a Unix timestamp", "2026-12-05T10:00:00Z", "value_type",
         "failed", "violated", "`out` is not a Unix timestamp"),
    Case("unix-timestamp-seconds-passes", "a timestamp (Unix seconds)", "1764928800",
         "value_type", "passed", "satisfied", "`out` is a Unix timestamp"),
    Case("unix-timestamp-decimals-year", "a Unix timestamp in 2026", "1764928800.25",
         "value_type", "failed", "violated", "since 1970), not in 2026: “1764928800.25”"),
    Case("unix-timestamp-sub-item", "a JSON object with:", '{"ts": "2026-12-05T10:00:00Z"}',
         "field_type", "failed", "partially_satisfied", "is not a Unix timestamp",
         file="out.json", details=("`ts`: a Unix timestamp in seconds",)),
    Case("unix-timestamp-field-passes", "a JSON object with `created` (an epoch timestamp)",
         '{"created": 1764928800123}', "field_type", "passed", "satisfied",
         "each a Unix timestamp"),
    Case("not-unix-stays-any-timestamp", "a timestamp, not a Unix timestamp",
         "Tue, 17 Mar 2026 14:35:22 +0000", "value_type", "passed", "satisfied",
         "`out` is a timestamp"),
    # RFC 3339 is ISO 8601's date and time (v23 read "3339 timestamp" as a count, asked)
    Case("rfc-3339-timestamp-not-rfc-2822", "an RFC 3339 timestamp",
         "Tue, 17 Mar 2026 14:35:22 +0000", "value_type", "failed", "violated",
         "`out` is not an ISO 8601 date and time"),
    Case("rfc-3339-field", "a JSON object with `created` (an RFC 3339 timestamp)",
         '{"created": "2026-03-17T14:35:22Z"}', "field_type", "passed", "satisfied",
         "each an ISO 8601 date and time"),
    Case("bare-email-display-name-fails", "a bare email address, without a display name",
         "Ann Lee <ann@acme.com>", "value_type", "failed", "violated",
         "`out` is not an email address without a display name"),
    Case("bare-email-passes", "an email address (no display name)", "ann@acme.com",
         "value_type", "passed", "satisfied", "`out` is an email address without a display"),
    Case("bare-email-field", "a JSON object with `to` (a bare email address)",
         '{"to": "Ann <ann@acme.com>"}', "field_type", "failed", "partially_satisfied",
         "is not an email address without a display name"),
    # a CSV said to have no header row has its first line counted (v23 took it for one)
    Case("csv-no-header-counts-every-line", "a CSV with no header row and exactly 3 rows",
         "alpha,1\nbeta,2\ngamma,3\n", "count", "passed", "satisfied",
         "`out` has 3 CSV rows (no header)", file="out.csv"),
    Case("csv-no-header-names-no-column", "a CSV with no header row and the columns name "
         "and email", "ann,ann@x.com\nbob,bob@x.com\n", "required_field", "undecided",
         "not_evaluable", "`out` is a CSV said to have no header row", file="out.csv",
         select="field `name`"),
    Case("csv-header-first-line-not-a-row", "a CSV with a header row and exactly 3 rows",
         "alpha,1\nbeta,2\ngamma,3\n", "count", "failed", "partially_satisfied",
         "`out` has 2 CSV data rows", file="out.csv"),
    # a CSV of one column is a CSV, its header no row (v22: no CSV, and 4 lines)
    Case("one-column-csv-is-csv", "a CSV with one column `name`, exactly 3 rows",
         "name\nalpha\nbeta\ngamma\n", "count", "passed", "satisfied",
         "`out` has 3 CSV data rows", file="out.csv"),
    Case("one-column-csv-column-missing", "a CSV with one column `email`",
         "name\nalpha\nbeta\n", "required_field", "failed", "partially_satisfied",
         "`out` is a CSV of one column, headed “name”", file="out.csv"),
    Case("one-column-csv-not-a-message", "a CSV file of the exported accounts",
         "Export failed: the database timed out.\nRetry later.", "format", "failed", "violated",
         "no CSV in `out`", file="out.csv"),
    Case("one-column-csv-not-in-md", "a CSV with exactly 3 rows", "alpha\nbeta\ngamma\n",
         "format", "failed", "partially_satisfied", "no CSV in `out`"),
    # each element of a named field's array is bounded (v22: asked), not its length
    # a field inside another is read inside it where the output holds it at its top (v22
    # read every one below the top: the `summary`'s "mixed" failed the checks')
    Case("nested-field-read-in-its-container",
         'a JSON object with a `checks` array, each with a `status` ("pass" or "fail")',
         '{"summary": {"status": "mixed"}, "checks": [{"name": "a", "status": "pass"}]}',
         "enum_value", "passed", "satisfied", "`status` values: pass"),
    Case("nested-field-wrong-in-its-container", "a JSON object with fields:",
         '{"summary": {"status": "done"}, "checks": [{"name": "a", "status": "skip"}]}',
         "enum_value", "failed", "partially_satisfied", "“skip” is not one of “pass”, “fail”",
         file="out.json", details=('`checks`: a list of objects, each with `name` and `status` '
                                   '("pass" or "fail")',)),
    # ... after other words that put it there too, the last such before it (v23 as first
    # written: only after "`x` …, each with")
    Case("nested-field-each-object-with",
         'a JSON object with a `results` array, each object with a `status` ("confirmed" or '
         '"disputed")', '{"status": "partial", "results": [{"status": "confirmed"}]}',
         "enum_value", "passed", "satisfied", "`status` values: confirmed"),
    Case("nested-field-each-in-container", 'each check in `checks` has a `status` of "pass" or '
         '"fail"', '{"status": "degraded", "checks": [{"status": "pass"}, {"status": "fail"}]}',
         "enum_value", "passed", "satisfied", "`status` values: pass, fail"),
    Case("nested-field-array-own-elements",
         'a JSON array of services, each with a `state` ("up" or "down")',
         '[{"name": "api", "state": "up", "deps": [{"state": "unknown"}]}]', "enum_value",
         "passed", "satisfied", "`state` values: up"),
    Case("nested-field-two-containers",
         'a JSON object with a `services` list, each with a `status` ("up" or "down"), and a '
         '`checks` list, each with a `status` ("pass" or "fail")',
         '{"services": [{"status": "up"}], "checks": [{"status": "skip"}]}', "enum_value",
         "failed", "partially_satisfied", "“skip” is not one of “pass”, “fail”",
         select="“pass”"),
    # ... and so are its range and its type (v23 as first written read the output's own)
    Case("nested-field-range-in-container",
         "a JSON object with a `score` from 0 to 100 and a `results` array, each with a "
         "`score` between 0 and 1", '{"score": 82, "results": [{"score": 0.8}]}',
         "numeric_range", "passed", "satisfied", "`score` values: 0.8",
         select="between 0 and 1"),
    Case("nested-field-type-in-container", "a JSON object with:",
         '{"checked_at": "yesterday", "checks": [{"name": "a", "checked_at": '
         '"2026-03-17T14:35:22Z"}]}', "field_type", "passed", "satisfied",
         "first: “2026-03-17T14:35:22Z”", file="out.json",
         details=("`checks`: a list, each with `name` and `checked_at` (an ISO 8601 timestamp)",)),
    Case("field-elements-whose-each-bound", "a JSON object whose `counts` are each at least 1",
         '{"counts": [2, 0]}', "numeric_range", "failed", "partially_satisfied",
         "`counts` values: 2, 0"),
    Case("field-elements-none-above", "a JSON object with a `retries` list of integers, none "
         "above 3", '{"retries": [1, 5]}', "numeric_range", "failed", "partially_satisfied",
         "`retries` values: 1, 5"),
    Case("field-elements-signed-type", "a JSON object with a `counts` array of positive integers",
         '{"counts": [2, 0]}', "numeric_range", "failed", "partially_satisfied",
         "`counts` values: 2, 0"),
    # a length said of each of a named field's elements is each value's (v22 measured the
    # output's lines: two 30-word summaries had 61 words on their line)
    Case("field-elements-each-length-passes",
         "a JSON object with a `summaries` array, each under 50 words",
         '{"summaries": ["' + "word " * 29 + 'word", "' + "word " * 29 + 'word"]}',
         "field_length", "passed", "satisfied", "the longest has 30 words"),
    Case("field-elements-each-length-fails",
         "a JSON object with a `summaries` array, each under 50 words",
         '{"summaries": ["' + "word " * 29 + 'word", "' + "word " * 59 + 'word"]}',
         "field_length", "failed", "partially_satisfied", "one has 60 words"),
    Case("field-elements-each-bounded", "a JSON object with a `counts` list, each at least 1",
         '{"counts": [0, 3]}', "numeric_range", "failed", "partially_satisfied",
         "`counts` values: 0, 3"),
    Case("field-elements-each-in-range", "a JSON object whose `scores` are each between 0 and 1",
         '{"scores": [0.2, 0.9]}', "numeric_range", "passed", "satisfied",
         "`scores` values: 0.2, 0.9"),
    # a field naming a kind holds a format's name (v21 required markdown of the output)
    Case("kind-field-format-names-fail", "a JSON object with a `format` field (markdown or html)",
         '{"format": "pdf"}', "enum_value", "failed", "partially_satisfied",
         "“pdf” is not one of “markdown”, “html”"),
    # an exception to what is forbidden is asked with it (v21: forbidden everywhere)
    Case("forbidden-with-exception-is-asked", "a reply that does not name other customers, "
         "such as Northwind or Contoso, unless the ticket does",
         "As you mentioned, Northwind saw the same issue.", "meets_description", "undecided",
         "not_evaluable", "As you mentioned"),
    # a null is no allowed value unless the clause says it may be (v21: "no value found")
    Case("ticked-field-of-values-null-fails",
         'a JSON object with a `status` key ("ok" or "error")', '{"status": null}',
         "enum_value", "failed", "partially_satisfied", "“null” is not one of “ok”, “error”"),
    Case("ticked-field-of-values-null-allowed",
         'a JSON object with a `status` key ("ok" or "error"), null when not run',
         '{"status": null}', "enum_value", "undecided", "satisfied",
         "no value of `status` found"),
    Case("ticked-field-of-values-array-elements",
         'a JSON object with a `status` key ("ok" or "error")', '{"status": ["ok", "bad"]}',
         "enum_value", "failed", "partially_satisfied", "“bad” is not one of “ok”, “error”"),
    Case("comma-separated-list-is-no-csv", "a comma-separated list of tags", "ai, ml, data",
         "meets_description", "undecided", "not_evaluable", "“ai, ml, data”"),
    Case("field-range-in-parentheses-fails", "a JSON array of objects with `name` and `score` "
         "(0-100)", '[{"name": "a", "score": 190}]', "numeric_range", "failed",
         "partially_satisfied", "`score` values: 190"),
    Case("field-range-in-parentheses-passes", "a table with columns `claim` and `confidence` "
         "(0 to 1)", "| claim | confidence |\n|---|---|\n| x | 0.4 |", "numeric_range", "passed",
         "satisfied", "`confidence` values: 0.4"),
    Case("field-between-bounds-the-field", "a JSON object with `score` between 0 and 1",
         '{"id": 7, "score": 0.5}', "numeric_range", "passed", "satisfied", "`score` values: 0.5"),
    Case("bare-column-names-required", "a markdown table with the columns Name, Role and Email",
         "| Name | Role |\n|---|---|\n| a | b |", "required_field", "failed",
         "partially_satisfied", "no column `Email` among the table columns: Name, Role",
         select="`Email`"),
    Case("then-counted-part", "the recommendation in one sentence, then up to 3 bullet points "
         "of evidence", "Do it.\n- a\n- b", "count", "passed", "satisfied", "2 bulleted items"),
    Case("each-after-unit", "a bulleted list of findings, under 5 words each",
         "- one two\n- three four five six seven eight", "count", "failed",
         "partially_satisfied", "item 2 of 2 has 6 words"),
    Case("value-then-more-is-asked", 'a verdict of "approve" or "reject", followed by one '
         "sentence of reasoning", "approve. It is fine.", "meets_description", "undecided",
         "satisfied", "“approve. It is fine.”", select='"approve" or "reject"'),
    Case("each-inside-an-object-passes", "a JSON object with a `findings` array of objects, "
         "each with `id` and `title`", '{"findings": [{"id": 1, "title": "x"}]}',
         "required_field", "passed", "satisfied", '“{"findings": [{"id": 1, "title": "x"}]}”',
         select="`title`"),
    Case("each-inside-an-object-fails", "a JSON object with a `findings` array of objects, "
         "each with `id` and `title`", '{"findings": [{"id": 1}]}', "required_field", "failed",
         "partially_satisfied", "no key `title` anywhere", select="`title`"),
    Case("one-value-of-a-field-fails", 'a JSON object whose `status` is "ok"',
         '{"status": "failed"}', "enum_value", "failed", "partially_satisfied",
         "“failed” is not one of “ok”"),
    Case("at-least-one-of-is-no-enumeration", 'at least one of "low", "medium" or "high"',
         "The risk is medium.", "meets_description", "undecided", "not_evaluable",
         "“The risk is medium.”"),
    Case("bare-bound-after-a-list", "a plan with numbered steps, at most 2",
         "1. a\n2. b\n3. c", "count", "failed", "partially_satisfied", "3 numbered items"),
    # a report's sections are its headings but a lone # title
    Case("sections-below-a-title", "a report with 3 sections", "# R\n## a\n## b\n## c", "count",
         "passed", "satisfied", "3 sections (headings below its # title)"),
    Case("sections-below-a-title-too-many", "a report with at most 2 sections",
         "# R\n## a\n## b\n## c", "count", "failed", "violated",
         "3 sections (headings below its # title)"),
    Case("quoted-section-names-required", 'release notes with sections "Features", "Fixes" '
         'and "Known issues"', "## Features\n- a\n## Fixes\n- b", "required_field", "failed",
         "partially_satisfied", "no `Known issues` field, label or heading",
         select="`Known issues`"),
    # the named fields and no other
    Case("no-extra-fields-fails", "a JSON object with exactly the keys `a` and `b`",
         '{"a": 1, "b": 2, "c": 3}', "no_extra_fields", "failed", "partially_satisfied",
         "top-level keys beside the named ones: c (all: a, b, c)"),
    # keys and columns quoted as the output writes them (v19: normalised, `extra-key`)
    Case("no-extra-fields-as-written", "a JSON object with exactly the keys `invoice_no` and "
         "`total`", '{"Invoice_No": 1, "total": 2, "Extra_Key": 3, "notes ": 4}',
         "no_extra_fields", "failed", "partially_satisfied", "top-level keys beside the named "
         "ones: Extra_Key, notes  (all: Invoice_No, total, Extra_Key, notes )",
         select="`invoice_no`, `total`"),
    Case("no-extra-columns-as-written", "a markdown table with only the columns `claim_id` "
         "and `severity`", "| Claim_ID | Severity | Extra Col |\n|---|---|---|\n| 1 | low | x |",
         "no_extra_fields", "failed", "partially_satisfied", "table columns beside the named "
         "ones: Extra Col (all: Claim_ID, Severity, Extra Col)"),
    # a blank column (a data frame's index) is named "", never the gap between two names
    Case("no-extra-columns-blank-one", "a markdown table with only the columns `claim` and "
         "`severity`", "|    | claim | severity | Reviewer_Notes |\n|---|---|---|---|\n"
         "| 0 | a | low | x |", "no_extra_fields", "failed", "partially_satisfied",
         'table columns beside the named ones: "", Reviewer_Notes (all: "", claim, severity, '
         'Reviewer_Notes)'),
    Case("no-extra-keys-of-elements-as-written", "a JSON array of objects with only the fields "
         "`claim_id` and `name`", '[{"Claim_ID": 1, "name": "a"}, {"Claim_ID": 2, "name": "b", '
         '"Extra_Key": 3}]', "no_extra_fields", "failed", "partially_satisfied",
         "keys of its elements beside the named ones: Extra_Key (all: Claim_ID, name, "
         "Extra_Key)"),
    Case("no-extra-fields-passes", "a JSON object with exactly the keys `a` and `b`",
         '{"a": 1, "b": 2}', "no_extra_fields", "passed", "satisfied", "top-level keys: a, b"),
    Case("no-extra-fields-in-array-elements", "a JSON array of objects with only the fields "
         "`name` and `url`", '[{"name": "x", "url": "u"}, {"name": "y", "url": "v", "extra": 1}]',
         "no_extra_fields", "failed", "partially_satisfied", "keys of its elements beside the "
         "named ones: extra"),
    Case("no-extra-columns-undecided-without-table", "a table with columns `claim`, `severity` "
         "and no other columns", "claim: x", "no_extra_fields", "undecided", "partially_satisfied",
         "no JSON object, array or table"),
    Case("row-literal", "a markdown table with a `Total` row", "| item | cost |\n|---|---|\n"
         "| a | 1 |", "literal", "failed", "partially_satisfied", "“Total”"),
    # a clause that is one value of a type
    Case("value-type-integer-passes", "the answer as a single integer", "1,024", "value_type",
         "passed", "satisfied", "`out` is an integer: “1,024”"),
    Case("value-type-integer-fails", "the answer as a single integer", "12 apples",
         "value_type", "failed", "violated", "`out` is not an integer: “12 apples”"),
    Case("value-type-url-passes", "a URL", "`https://example.com/x`", "value_type", "passed",
         "satisfied", "is a URL"),
    Case("value-type-url-fails", "a URL", "see the docs", "value_type", "failed", "violated",
         "is not a URL"),
    Case("value-type-iso-date-fails", "a date in YYYY-MM-DD format", "30 Nov 2026",
         "value_type", "failed", "violated", "is not an ISO 8601 date (YYYY-MM-DD)"),
    Case("value-type-date-passes", "a date", "30 Nov 2026", "value_type", "passed",
         "satisfied", "is a date"),
    # what a value is within: a time zone, a year, a domain (v21: asked, satisfied at 75)
    Case("value-within-utc-fails", "an ISO 8601 timestamp in UTC", "2026-03-17T14:35:22+02:00",
         "value_type", "failed", "violated", "is an ISO 8601 date and time (YYYY-MM-DDTHH:MM…), "
         "not in UTC: “2026-03-17T14:35:22+02:00”"),
    Case("value-within-utc-named-passes", "a timestamp in UTC", "2026-03-17 14:35:22 UTC",
         "value_type", "passed", "satisfied", "in UTC: “2026-03-17 14:35:22 UTC”"),
    Case("value-within-utc-offset-passes", "a timestamp in GMT", "2026-03-17T14:35:22+00:00",
         "value_type", "passed", "satisfied", "in GMT"),
    Case("value-within-year-fails", "a date in 2026", "2025-05-01", "value_type", "failed",
         "violated", "`out` is a date, not in 2026: “2025-05-01”"),
    Case("value-within-epoch-year-passes", "a timestamp in 2026", "1767225600", "value_type",
         "passed", "satisfied", "in 2026"),
    Case("value-within-domain-lookalike-fails", "a URL on github.com",
         "https://github.com.evil.io/acme", "value_type", "failed", "violated",
         "`out` is a URL, not on github.com"),
    Case("value-within-subdomain-passes", "a URL on github.com", "https://api.github.com/x",
         "value_type", "passed", "satisfied", "`out` is a URL on github.com"),
    Case("value-within-email-domain-fails", "an email address at the acme.com domain",
         "bob@acme.co", "value_type", "failed", "violated",
         "`out` is an email address, not at acme.com"),
    Case("field-type-within-year-fails", "a JSON object with:",
         '{"released_on": ["2026-02-01", "2025-01-01"]}', "field_type", "failed",
         "partially_satisfied", "1 of 2 value(s) of `released_on` not in 2026",
         details=("`released_on`: a date in 2026",)),
    Case("field-type-within-utc-passes", "a JSON object with:", '{"at": "2026-03-17T14:35:22Z"}',
         "field_type", "passed", "satisfied", "each an ISO 8601 date and time (YYYY-MM-DDTHH:MM…) "
         "in UTC", details=("`at`: an ISO 8601 timestamp in UTC",)),
    Case("value-type-in-parentheses-fails", "a duration in minutes (an integer)",
         "about an hour", "value_type", "failed", "violated",
         "`out` is not an integer: “about an hour”"),
    # "a 6-digit code": so many digits, in groups a space or a dash may set apart
    Case("value-type-digits-pass", "a 6-digit verification code", "`123 456`", "value_type",
         "passed", "satisfied", "`out` is 6 digits: “`123 456`”"),
    Case("value-type-digits-fail", "a 6-digit verification code", "12345", "value_type",
         "failed", "violated", "`out` is not 6 digits: “12345”"),
    Case("value-type-digit-words-fail", "a four-digit PIN", "042", "value_type", "failed",
         "violated", "`out` is not 4 digits"),
    Case("json-array-elements-fail", "a JSON array of strings", "[1, 2]", "json_shape",
         "failed", "partially_satisfied", "a JSON array of 2 elements (integer)"),
    Case("json-array-elements-pass", "a JSON array of numbers", "[1, 2.5]", "json_shape",
         "passed", "satisfied", "a JSON array of 2 elements (integer, number)"),
    Case("value-type-uuid-passes", "a UUID", "123e4567-e89b-12d3-a456-426614174000",
         "value_type", "passed", "satisfied", "is a UUID"),
    Case("value-type-email-fails", "an email address", "ann at example dot com", "value_type",
         "failed", "violated", "is not an email address"),
    # counts read after their unit, and columns
    Case("or-fewer-after-unit", "exactly 280 characters or fewer", "Short tweet.", "count",
         "passed", "satisfied", "12 characters"),
    Case("keys-fail", "a JSON object with at least 3 keys", '{"a": 1}', "count", "failed",
         "partially_satisfied", "`out` has 1 top-level key"),
    Case("keys-of-a-table-pass", "a markdown table with 2 fields",
         "| a | b |\n|---|---|\n| 1 | 2 |", "count", "passed", "satisfied",
         "`out` has 2 table columns"),
    Case("citations-are-sources", "a brief with at least 3 citations in [n] format",
         "Claims [1], [2] and [3]; again [1].", "count", "passed", "satisfied",
         "`out` has 3 distinct numbered citations ([n])"),
    # indexes in code are no citations (v13 counted `rows[0]` and a fenced `a[1]`)
    Case("citations-in-code-fail", "a brief with at least 3 citations in [n] format",
         "The code reads `rows[0]`, `rows[1]` and `rows[2]`.\n\n```py\nprint(a[1], a[2], "
         "a[3])\n```", "count", "failed", "violated", "`out` has 0 distinct URLs"),
    # one URL closed by emphasis or a quote mark is still one (v13: "…/x**" and "…/x")
    Case("one-url-in-bold-fails", "a note with at least 2 sources",
         "Read **https://a.example/x** and “https://a.example/x” and https://a.example/x…",
         "count", "failed", "violated", "`out` has 1 distinct URL"),
    Case("columns-pass", "a two-column markdown table", "| term | definition |\n|---|---|\n"
         "| a | b |", "count", "passed", "satisfied", "2 table columns"),
    Case("columns-fail", "a table with 3 columns", "| a | b |\n|---|---|\n| 1 | 2 |", "count",
         "failed", "partially_satisfied", "2 table columns"),
    Case("one-per-line-is-no-markdown-list", "a list of URLs, one per line",
         "https://a.example\nhttps://b.example", "meets_description", "undecided",
         "not_evaluable", "https://a.example"),
    # a list without markers: lines of one item each, unless the clause says markdown
    Case("list-of-plain-lines-passes", "a list of URLs", "https://a.example\nhttps://b.example",
         "format", "passed", "satisfied",
         "2 lines of one item each, no list markers; first: “https://a.example”"),
    Case("markdown-list-is-no-plain-lines", "a markdown list of URLs",
         "https://a.example\nhttps://b.example", "format", "failed", "violated",
         "no markdown list in `out`"),
    Case("lines-of-prose-are-no-list", "a list of findings",
         "Rates fell in March.\nCosts rose in April.", "format", "failed", "violated",
         "no list in `out`"),
    Case("plain-lines-are-counted", "a list of at least 3 tags", "alpha\nbeta", "count",
         "failed", "partially_satisfied", "2 lines"),
    # a range in parentheses after what it bounds
    Case("parenthesised-range-passes", "a confidence score (0-100)", "72", "numeric_range",
         "passed", "satisfied", "“72”"),
    Case("parenthesised-range-fails", "a relevance rating (0-100)", "140", "numeric_range",
         "failed", "violated", "“140”"),
    Case("sub-item-quality-word-is-judged", "a JSON object with fields:",
         '{"summary": "Rates fell."}', "judgment", "undecided", "satisfied",
         '“{"summary": "Rates fell."}”', select="`summary`: concise",
         details=("`summary`: a concise summary",)),
    # unquoted answers, timestamps, a backticked name before "key", section titles
    Case("yes-no-fails", "a single word: yes or no", "Maybe", "enum_value", "failed",
         "partially_satisfied", "the output is “Maybe”"),
    Case("yes-no-passes", "yes or no", "Yes.", "enum_value", "passed", "satisfied", "Yes"),
    Case("timestamp-passes", "a timestamp", "2026-11-30 10:00:00", "value_type", "passed",
         "satisfied", "is a timestamp"),
    Case("iso-timestamp-fails", "an ISO 8601 timestamp", "yesterday at noon", "value_type",
         "failed", "violated", "is not an ISO 8601 date and time"),
    # an output named by a date noun, then how it is written (v7: only published)
    Case("date-in-iso-format-passes", "the release date in ISO 8601 format", "2026-11-30",
         "value_type", "passed", "satisfied", "`out` is an ISO 8601 date (YYYY-MM-DD)"),
    Case("date-in-iso-format-fails", "the release date in ISO 8601 format", "Nov 30 2026",
         "value_type", "failed", "violated", "is not an ISO 8601 date (YYYY-MM-DD)"),
    Case("date-as-mask-fails", "the date as YYYY-MM-DD", "30/11/2026", "value_type", "failed",
         "violated", "is not an ISO 8601 date"),
    Case("timestamp-in-iso-fails", "the timestamp in ISO-8601", "yesterday at 10",
         "value_type", "failed", "violated", "is not an ISO 8601 date and time"),
    Case("time-as-full-mask-passes", "the start time as YYYY-MM-DDTHH:MM:SSZ",
         "2026-11-30T10:00:00Z", "value_type", "passed", "satisfied",
         "is an ISO 8601 date and time"),
    # a date of something else is asked, the standard kept in the question
    Case("report-with-iso-date-is-asked", "the report with its date in ISO 8601 format",
         "report 2026-11-30", "meets_description", "undecided", "not_evaluable",
         "“report 2026-11-30”", select="date in ISO 8601 format"),
    # a value the output opens with, then goes on (v7: the whole output, failed)
    Case("value-lead-passes", "an integer followed by a one-line note", "**5** — shipped",
         "value_type", "passed", "satisfied", "`out` opens with an integer"),
    Case("value-lead-fails", "an integer followed by a one-line note", "5.5 shipped",
         "value_type", "failed", "violated", "`out` does not open with an integer"),
    Case("date-lead-passes", "the date in ISO 8601 format, with a one-line note",
         "2026-11-30: shipped", "value_type", "passed", "satisfied",
         "opens with an ISO 8601 date"),
    Case("whole-value-still-whole", "an integer", "5 shipped", "value_type", "failed",
         "violated", "`out` is not an integer"),
    Case("bare-columns-fail", "a CSV with columns id, name, email", "id,name\n1,ann\n",
         "required_field", "failed", "partially_satisfied", "no `email` field",
         select="`email`"),
    # the bound "and" goes on to is no column (v18: a column `at`, and "exactly 4 rows")
    Case("bare-columns-then-a-bound", "a CSV file with columns region, revenue, units and at "
         "least 4 data rows", "region,revenue,units\n" + "north,1,2\n" * 5, "count", "passed",
         "satisfied", "`out` has 5 CSV data rows"),
    Case("bare-columns-then-a-bound-in-a-table", "a markdown table with columns Name, Role and "
         "at most 5 rows", "| Name | Role |\n|---|---|\n| ann | lead |\n| bo | dev |\n", "count",
         "passed", "satisfied", "`out` has 2 table rows"),
    Case("ticked-key-fails", "valid JSON with a `status` key", '{"state": "ok"}',
         "required_field", "failed", "partially_satisfied",
         "no key `status` among the top-level keys: state"),
    Case("section-titles-fail", "a markdown report with sections Summary, Findings and Sources",
         "# Report\n\n## Summary\nx\n\n## Findings\ny\n", "required_field", "failed",
         "partially_satisfied", "no `Sources` field, label or heading in `out`",
         select="`Sources`"),
    # a number written with its thousands grouped is that number (v18 read its first group:
    # 1,250 within 0-100, 1,284.50 under 100, evidence quoting "1")
    Case("grouped-number-out-of-range", "a markdown table with columns Team and Score, where "
         "score is between 0 and 100", "| Team | Score |\n|---|---|\n| a | 1,250 |\n| b | 40 |\n",
         "numeric_range", "failed", "partially_satisfied", "`score` values: 1,250, 40"),
    Case("grouped-number-in-range", "a JSON object with a `total` (at least 100)",
         '{"total": "1,284.50"}', "numeric_range", "passed", "satisfied",
         "`total` values: 1,284.50", file="out.json"),
    Case("grouped-number-alone", "a score from 0-100", "Score: 1,250", "numeric_range",
         "failed", "violated", "“Score: 1,250”"),
    # the first number of prose, out of range, may be another number (v18: violated)
    Case("prose-first-number-out-of-range-is-open", "a score from 0-100",
         "A 2025 field study found the effect small.", "numeric_range", "undecided",
         "not_evaluable", "“A 2025 field study"),
    # in JSON a number or a boolean written as a string is a string (v18: the text within
    # the quotes was typed)
    Case("json-string-is-no-integer", "a JSON object with `line` (a positive integer)",
         '{"line": "88"}', "field_type", "failed", "partially_satisfied",
         '`line` is a JSON string, not an integer: "88"', file="out.json"),
    Case("json-number-is-an-integer", "a JSON object with `line` (a positive integer)",
         '{"line": 88}', "field_type", "passed", "satisfied", "each an integer",
         file="out.json"),
    Case("json-string-is-no-boolean", "a JSON object with `done` (a boolean)",
         '{"done": "true"}', "field_type", "failed", "partially_satisfied",
         '`done` is a JSON string, not a boolean (true or false): "true"', file="out.json"),
    # a heading with nothing under it is a section in name only (v18: met)
    Case("section-title-with-nothing-under-it",
         "a markdown report with sections Summary, Findings and Sources",
         "# Report\n\n## Summary\nx\n\n## Findings\n\n## Sources\n- a\n", "required_field",
         "failed", "partially_satisfied",
         "the heading `Findings` of `out` has nothing under it", select="`Findings`"),
    Case("section-holding-a-subsection-is-not-empty",
         "a markdown report with sections Summary, Findings and Sources",
         "# Report\n\n## Summary\nx\n\n## Findings\n### Detail\ny\n\n## Sources\n- a\n",
         "required_field", "passed", "satisfied", "## Findings", select="`Findings`"),
    Case("named-section-with-nothing-under-it", "a report with a `Risks` section",
         "# Report\n\nAll fine.\n\n## Risks\n", "literal", "failed", "violated",
         "“## Risks” has nothing under it before the next heading or the end"),
    Case("language-is-judged", "the translated text, in French", "Bonjour le monde",
         "judgment", "undecided", "not_evaluable", "“Bonjour le monde”"),
    # a sub-item's value type is checked on every value of the field
    Case("field-type-fails", "a JSON array of sources, each with fields:",
         '[{"url": "http://a", "retrieved": "2026-11-30"}, {"url": "http://b", '
         '"retrieved": "yesterday"}]', "field_type", "failed", "partially_satisfied",
         "“yesterday” is not an ISO 8601 date (YYYY-MM-DD) (`retrieved`, value 2 of 2)",
         details=("`url`: the address", "`retrieved`: the date it was read, as YYYY-MM-DD")),
    Case("inline-field-type-fails", "a JSON object with `items` and `total` (a number)",
         '{"items": [], "total": "x"}', "field_type", "failed", "partially_satisfied",
         "“x” is not a number (`total`, value 1 of 1)"),
    # a nested value is of no scalar type (v15 skipped it, and passed on the nested `score`)
    Case("nested-field-type-fails", "a JSON object with `score` (an integer, 1 to 5)",
         '{"score": {"score": 3}}', "field_type", "failed", "partially_satisfied",
         "“{…} (an object)” is not an integer (`score`, value 1 of 1)"),
    # an array's elements are a field's values (v16 to v21: undecided, "no value")
    Case("array-field-type-reads-elements", "a JSON object with:",
         '{"dates": ["2026-01-02", "2026-01-03"]}', "field_type", "passed",
         "satisfied", "2 value(s) of `dates`, each an ISO 8601 date (YYYY-MM-DD)",
         details=("`dates`: the dates it was read, as YYYY-MM-DD",)),
    Case("array-field-type-element-fails", "a JSON object with:",
         '{"dates": ["2026-01-02", "Jan 3"]}', "field_type", "failed",
         "partially_satisfied", "“Jan 3” is not an ISO 8601 date (YYYY-MM-DD) (`dates`, value "
         "2 of 2)", details=("`dates`: the dates it was read, as YYYY-MM-DD",)),
    # a sub-item's type said between commas
    Case("type-apart-fails", "a JSON object with fields:",
         '{"status": "ok", "retry_after": "soon"}', "field_type", "failed",
         "partially_satisfied", "“soon” is not an integer (`retry_after`, value 1 of 1)",
         details=('`status`: "ok" or "error"',
                  '`retry_after`: seconds to wait, an integer, only when status is "error"')),
    # "non-negative", "positive" bound the number the type is
    Case("non-negative-field-fails", "a JSON array of objects, each with:", '[{"stars": -3}]',
         "numeric_range", "failed", "partially_satisfied", "`stars` values: -3",
         details=("`stars`: a non-negative integer",)),
    Case("positive-integer-passes", "a positive integer", "7", "numeric_range", "passed",
         "satisfied", "“7”"),
    # a bound that excludes its number: "positive", "negative", "above", "less than", …
    Case("positive-number-fails-at-zero", "a positive number", "0", "numeric_range", "failed",
         "partially_satisfied", "“0”"),
    Case("positive-number-passes", "a positive number", "0.25", "numeric_range", "passed",
         "satisfied", "“0.25”"),
    Case("less-than-fails-at-its-number", "a number less than 1", "1", "numeric_range",
         "failed", "partially_satisfied", "“1”"),
    Case("below-passes", "the temperature, below 0", "-4", "numeric_range", "passed",
         "satisfied", "“-4”"),
    Case("price-positive-fails", "a price, a positive number", "-4", "numeric_range", "failed",
         "violated", "“-4”"),
    Case("field-positive-integer-passes", "a JSON object with `count` (a positive integer)",
         '{"id": 0, "count": 4}', "numeric_range", "passed", "satisfied", "`count` values: 4"),
    Case("field-noun-positive-integer-fails", "a JSON object with a `count` field (a positive "
         "integer)", '{"id": 9, "count": 0}', "numeric_range", "failed", "partially_satisfied",
         "`count` values: 0"),
    Case("field-above-fails-at-its-number", "a JSON object with `total` (a positive number)",
         '{"total": 0}', "numeric_range", "failed", "partially_satisfied", "`total` values: 0"),
    Case("subject-length-after-parts-fails", "a commit message: subject of at most 20 "
         "characters, a blank line, then a body", "Fix the parser that dropped tokens\n\nBody.",
         "count", "failed", "partially_satisfied", "the first line of `out` has 34 characters"),
    # lines of one item each are a list's items where no other list is (v21: no list)
    Case("count-of-lines-fails", "a list of at least 3 email addresses, one per line",
         "a@x.com\nb@x.com", "count", "failed", "violated",
         "`out` has 2 lines; first: “a@x.com”; last: “b@x.com”"),
    # a whole number with zero decimals is the number (v21: "2.0" was none of 1, 2 or 3)
    Case("enum-number-with-zero-decimals-passes", "a JSON object with a `count` field (1, 2 or 3)",
         '{"count": 2.0}', "enum_value", "passed", "satisfied", "`count` values: 2.0"),
    Case("empty-field-list-fails", "a JSON object with an empty `results` list",
         '{"results": ["x"]}', "field_length", "failed", "partially_satisfied",
         "1 array(s) under `results`; one has 1 element"),
    Case("empty-field-list-passes", "a JSON object whose `errors` list is empty",
         '{"errors": []}', "field_length", "passed", "satisfied",
         "1 array(s) under `errors`; the longest has 0 elements"),
    Case("non-empty-field-array-fails", "a JSON object with a non-empty `items` array",
         '{"items": []}', "field_length", "failed", "partially_satisfied",
         "1 array(s) under `items`; one has 0 elements"),
    # "never an empty list" is a count of at least one item (v21: a list ruled out, the
    # empty array counted as what the clause asks)
    Case("never-an-empty-list-passes", "a bulleted list of tags, never an empty list",
         "- billing\n- refund", "count", "passed", "satisfied", "`out` has 2 bulleted items"),
    Case("never-an-empty-array-fails", "a JSON array of findings, never an empty array", "[]",
         "count", "failed", "partially_satisfied", "`out` has 0 JSON array elements"),
    Case("must-not-be-an-empty-list-fails", "a JSON array of tags; must not be an empty list",
         "[]", "count", "failed", "partially_satisfied", "`out` has 0 JSON array elements"),
    Case("unique-cap-counts-every-item", "a list of at most 2 unique tags", "- a\n- a\n- b",
         "count", "failed", "partially_satisfied", "`out` has 3 list items",
         select="at most 2 unique"),
    Case("unique-cap-rules-out-repeats", "a list of at most 5 unique tags", "- a\n- a\n- b",
         "count", "failed", "partially_satisfied", "`out` has 1 repeated item",
         select="no repeated items"),
    Case("field-set-to-values-passes", 'a JSON object with `severity` set to "low", "medium" '
         'or "high"', '{"severity": "low"}', "enum_value", "passed", "satisfied",
         "`severity` values: low"),
    Case("paren-values-fail", "a sentiment label (positive, negative or neutral)", "happy",
         "enum_value", "failed", "violated", "the output is “happy”"),
    Case("from-list-fails", "a category from: billing, technical, account", "shipping",
         "enum_value", "failed", "violated", "the output is “shipping”"),
    Case("every-listed-phrase-is-required", 'a summary that mentions "Q3" and "Q4"',
         "Q3 was fine.", "literal", "failed", "partially_satisfied", "no “Q4” in `out`",
         select="Q4"),
    Case("optional-field-may-be-absent", "a JSON object with fields:", '{"id": 1}',
         "required_field", "passed", "satisfied", "top-level keys: id", select="`id`",
         details=("`id`: an identifier", "`note`: optional, a short remark")),
    Case("whose-field-bound-passes", "a JSON object whose `count` is at least 1",
         '{"id": 0, "count": 4}', "numeric_range", "passed", "satisfied", "`count` values: 4"),
    Case("each-range-is-asked", "a list of scores, each between 0 and 1", "- 0.5\n- 3",
         "meets_description", "undecided", "satisfied", "“- 0.5\n- 3”"),
    # a JSON array's elements, each bounded (v12 asked it, or lost the sign)
    Case("element-range-fails", "a JSON array of numbers, each between 0 and 1", "[0.5, 3]",
         "numeric_range", "failed", "partially_satisfied", "elements of `out`: 0.5, 3"),
    Case("element-range-passes", "a JSON array of numbers, each between 0 and 1",
         "[0.5, 0.25]", "numeric_range", "passed", "satisfied", "elements of `out`: 0.5, 0.25"),
    Case("element-sign-fails", "a JSON array of at most 3 positive integers", "[1, -2, 3]",
         "numeric_range", "failed", "partially_satisfied", "elements of `out`: 1, -2, 3"),
    Case("element-sign-passes", "a JSON array of at most 3 positive integers", "[1, 2, 3]",
         "numeric_range", "passed", "satisfied", "elements of `out`: 1, 2, 3"),
    Case("element-count-still-counts", "a JSON array of at most 3 positive integers",
         "[1, 2, 3, 4]", "count", "failed", "partially_satisfied",
         "`out` has 4 JSON array elements"),
    # a unitless one-sided bound on a field of JSON arrays counts their elements (v12: undecided)
    Case("array-field-bound-fails", "a JSON object with `tags` (at least 2)", '{"tags": ["a"]}',
         "numeric_range", "failed", "partially_satisfied",
         "lengths of the JSON arrays under `tags`: 1"),
    Case("array-field-bound-passes", "a JSON object with `tags` (at least 2)",
         '{"tags": ["a", "b"]}', "numeric_range", "passed", "satisfied",
         "lengths of the JSON arrays under `tags`: 2"),
    # each element of an array is bounded (v21: undecided); a one-sided bound counts them
    Case("array-field-range-bounds-elements", "a JSON object with `scores` (0-100)",
         '{"scores": [50, 170]}', "numeric_range", "failed", "partially_satisfied",
         "`scores` values: 50, 170"),
    Case("array-field-bound-counts-elements", "a JSON object with `ids` (at least 2)",
         '{"ids": [5]}', "numeric_range", "failed", "partially_satisfied",
         "lengths of the JSON arrays under `ids`: 1"),
    Case("sub-item-negative-passes", "a JSON object with:", '{"delta": -2.5}', "numeric_range",
         "passed", "satisfied", "`delta` values: -2.5", details=("`delta`: a negative number",)),
    Case("bounds-joined-fail-below", "a number at least 0 and at most 1", "-0.5",
         "numeric_range", "failed", "partially_satisfied", "“-0.5”", select="at least 0"),
    # a CSV's columns are counted as a table's are
    Case("csv-columns-fail", "a CSV with exactly 3 columns", '"a,x",b\n1,2\n', "count",
         "failed", "partially_satisfied", "`out` has 2 CSV columns"),
    # a field whose values the clause lists
    Case("field-holds-passes", 'a table whose `Status` column holds only "pass" or "fail"',
         "| Name | Status |\n|---|---|\n| a | pass |\n| b | fail |", "enum_value", "passed",
         "satisfied", "`Status` values: pass, fail"),
    Case("top-level-key-required", "a YAML document with a top-level `version` key",
         "name: x\n", "required_field", "failed", "partially_satisfied", "no `version` field"),
    # a JSON key compares as a field's name does: `_id` and "_id" alike
    Case("underscored-key-passes", "a JSON object with an `_id` field", '{"_id": 7, "n": 1}',
         "required_field", "passed", "satisfied", "top-level keys: _id, n"),
    Case("underscored-element-key-fails", "a JSON array of objects, each with an `_id`",
         '[{"_id": 1}, {"_id": 2, "x": 3}, {"x": 4}]', "required_field", "failed",
         "partially_satisfied", "key `_id` in 2 of 3 array elements"),
    Case("key-after-with-fails", "a JSON object with a `name`", '{"title": "x"}',
         "required_field", "failed", "partially_satisfied", "top-level keys: title"),
    # a type said before or after a field's name in the clause
    Case("type-before-field-fails", "a JSON object with a boolean `done`", '{"done": "yes"}',
         "field_type", "failed", "partially_satisfied",
         "“yes” is not a boolean (true or false) (`done`, value 1 of 1)"),
    Case("type-after-field-passes", "a JSON object with `count` as an integer", '{"count": 3}',
         "field_type", "passed", "satisfied", "each an integer; first: “3”"),
    Case("array-field-required", "a JSON object with a `findings` array", '{"items": []}',
         "required_field", "failed", "partially_satisfied", "top-level keys: items"),
    Case("field-type-passes", "a JSON object with fields:", '{"sla_hours": 24}', "field_type",
         "passed", "satisfied", "each an integer; first: “24”",
         details=("`sla_hours`: an integer from 1-72",)),
    Case("field-type-integer-is-no-decimal", "a JSON object with fields:",
         '{"sla_hours": 7.5}', "field_type", "failed", "partially_satisfied",
         "“7.5” is not an integer", details=("`sla_hours`: an integer from 1-72",)),
    # a sub-item's length is checked on the field's values, never dropped
    Case("field-length-passes", "a JSON object with fields:", '{"summary": "one two three"}',
         "field_length", "passed", "satisfied", "the longest has 3 words: “one two three”",
         details=("`summary`: at most 5 words",)),
    Case("field-length-fails", "a JSON object with fields:",
         '{"summary": "one two three four five six"}', "field_length", "failed",
         "partially_satisfied", "one has 6 words: “one two three four five six”",
         details=("`summary`: at most 5 words",)),
    Case("field-length-in-table-cells", "a markdown table with columns:",
         "| title | n |\n|---|---|\n| Short | 1 |\n| A much longer title | 2 |", "field_length",
         "failed", "partially_satisfied", "one has 19 characters: “A much longer title”",
         details=("`title`: under 12 characters",)),
    # the items of a JSON output's array field (v7: asked)
    Case("field-items-pass", "a JSON object with fields:",
         '{"action": "approve", "reasons": ["fully answered"]}', "field_length", "passed",
         "satisfied", "1 array(s) under `reasons`; the longest has 1 element",
         details=("reasons: a list of 1-3 short strings",)),
    Case("field-items-fail", "a JSON array of findings, each with:",
         '[{"sources": ["a", "b"]}, {"sources": ["c"]}]', "field_length", "failed",
         "partially_satisfied", "2 array(s) under `sources`; one has 1 element",
         details=("`sources`: at least 2 strings",)),
    Case("field-items-without-array", "a JSON object with fields:", '{"reasons": "none"}',
         "field_length", "undecided", "satisfied", "no JSON array under `reasons` in `out`",
         details=("`reasons`: 1-3 strings",)),
    # a field said to hold an array that holds something else
    Case("field-list-holds-no-array", "a JSON object with fields:", '{"late": "t1"}',
         "field_length", "failed", "partially_satisfied",
         "`late` in `out` holds a value that is no JSON array",
         details=("`late`: an array of table names",)),
    Case("field-list-of-elements-fails", "a JSON array of objects, each with:",
         '[{"tags": ["a"]}, {"tags": "b"}]', "field_length", "failed", "partially_satisfied",
         "`tags` in `out` holds a value that is no JSON array",
         details=("`tags`: a list of at most 3 strings",)),
    Case("field-list-passes", "a JSON object with fields:", '{"late": []}', "field_length",
         "passed", "satisfied", "1 array(s) under `late`; the longest has 0 elements",
         details=("`late`: an array of table names",)),
    Case("field-items-of-markdown-are-asked", "a markdown report with sections:",
         "# Findings\n\n- a", "meets_description", "undecided", "satisfied", "- a”",
         select="`Findings`: at least 3 items", details=("`Findings`: at least 3 items",)),
    # ... and a length said of a field in the clause itself (v10 counted the whole output)
    Case("clause-field-length-passes", "a JSON object with a `name` field of at most 5 "
         "characters", '{"name": "abc", "description": "a much longer value"}', "field_length",
         "passed", "satisfied", "the longest has 3 characters: “abc”"),
    Case("clause-field-length-fails", "a JSON object whose `name` is at most 5 characters",
         '{"name": "abcdefgh"}', "field_length", "failed", "partially_satisfied",
         "one has 8 characters: “abcdefgh”"),
    Case("clause-field-length-in-json-after-a-verb", "a JSON object with keys `title` and "
         "`body`; `title` must be at most 10 characters",
         '{"title": "short", "body": "a body much longer than ten characters"}', "field_length",
         "passed", "satisfied", "the longest has 5 characters: “short”"),
    Case("sentence-case-section-passes", "a report with sections Summary and Next steps.",
         "## Summary\nAll good.\n\n## Next steps\nShip it.", "required_field", "passed",
         "satisfied", "Next steps", select="`Next steps`"),
    Case("comma-listed-sections-fail", "a changelog with sections Added, Changed, Fixed",
         "## Added\n- x\n## Changed\n- y", "required_field", "failed", "partially_satisfied",
         "no `Fixed` field, label or heading in `out`", select="`Fixed`"),
    Case("typed-field-range-fails", "a JSON object with `id` and `confidence` (a number "
         "between 0 and 1)", '{"id": 7, "confidence": 1.5}', "numeric_range", "failed",
         "partially_satisfied", "`confidence` values: 1.5"),
    Case("field-edge-is-asked", 'a JSON object where every `url` starts with "https://"',
         '{"url": "http://x"}', "meets_description", "undecided", "satisfied",
         '“{"url": "http://x"}”'),
    Case("then-paragraphs-count-the-rest", "a title, then 2-3 paragraphs",
         "Title\n\nP1.\n\nP2.\n\nP3.", "count", "passed", "satisfied",
         "`out` has 3 paragraphs after its first line"),
    Case("own-line-prefix-is-asked", 'the final answer on its own line, prefixed with '
         '"Answer:"', "Thinking...\nAnswer: 42", "meets_description", "undecided",
         "not_evaluable", "“Thinking..."),
    Case("word-count-range-fails", "the word count is between 100 and 200",
         "In 2024 the team shipped three releases.", "count", "failed", "violated",
         "`out` has 7 words"),
    Case("field-sentence-count-is-asked", "a JSON object with `score` and `reason` (one "
         "sentence)", '{"score": 4, "reason": "Good. Very good."}', "meets_description",
         "undecided", "satisfied", "“{\"score\": 4", select="`reason`: one sentence"),
    Case("clause-field-items-fail", "a JSON array of objects, each with a `tags` array of at "
         "most 2 strings", '[{"tags": ["a"]}, {"tags": ["a", "b", "c"]}]', "field_length",
         "failed", "partially_satisfied", "2 array(s) under `tags`; one has 3 elements"),
    Case("field-length-of-a-heading-is-undecided", "a markdown report with sections:",
         "# Summary\n\nText.", "field_length", "undecided", "not_evaluable",
         "no value of `Summary` to measure", details=("`Summary`: at most 50 words",)),
    Case("sub-item-count-is-judged", "a markdown report with sections:",
         "# Summary\n\nOne. Two.", "meets_description", "undecided", "satisfied",
         "One. Two.”", select="`Summary`: 2-3 sentences",
         details=("`Summary`: 2-3 sentences",)),
    Case("negated-field-is-not-required", "a JSON object without the field `debug`",
         '{"a": 1}', "meets_description", "undecided", "satisfied", '“{"a": 1}”'),
    Case("excluded-json-passes", "plain text, not JSON", "hello world", "excluded_format",
         "passed", "satisfied", "no valid JSON in `out`; it begins “hello world”"),
    Case("excluded-json-fails", "plain text, not JSON", '{"a": 1}', "excluded_format",
         "failed", "violated", "valid JSON object"),
    Case("excluded-bullets-passes", "a reply with no bullet points", "Just prose.",
         "excluded_format", "passed", "satisfied", "no bulleted list in `out`"),
    Case("excluded-bullets-fails", "a reply with no bullet points", "- a\n- b",
         "excluded_format", "failed", "violated", "0 numbered and 2 bulleted items"),
    Case("excluded-markdown-fails", "plain text, no markdown", "# Title\n\n**bold** words",
         "excluded_format", "failed", "violated", "markdown syntax: “# Title"),
    Case("excluded-fences-fails", "a JSON object; do not include markdown fences",
         '```json\n{"a": 1}\n```', "excluded_format", "failed", "partially_satisfied",
         "fenced block “```json”"),
    Case("excluded-yaml-passes-on-json", "a JSON object, not YAML", '{"a": 1}',
         "excluded_format", "passed", "satisfied", "no YAML in `out`"),
    Case("forbidden-ignores-case", 'a reply that never mentions the password "hunter2"',
         "It was HUNTER2!", "forbidden_literal", "failed", "violated",
         "“It was HUNTER2!”"),
    Case("forbidden-underscore-is-a-word-character",
         'a reply that never mentions the password "hunter2"', "hunter2_backup",
         "forbidden_literal", "undecided", "not_evaluable", "not found"),
    Case("secret-found-and-masked", "a log that never contains API keys or secrets",
         "deploy with AKIAABCDEFGHIJKLMNOP now", "no_secrets", "failed", "violated",
         "“AKIA”… (20 characters, the rest masked)"),
    Case("secret-not-found", "a log that never contains API keys or secrets",
         "deployed fine", "no_secrets", "undecided", "not_evaluable",
         "no key, token or password pattern found"),

    # ---- enumerated values
    Case("enum-whole-passes", 'one of "approve", "reject", or "escalate"', "**Approve**",
         "enum_value", "passed", "satisfied", "the output is “**Approve**”"),
    Case("enum-whole-fails", 'one of "approve", "reject", or "escalate"', "approve later",
         "enum_value", "failed", "violated", "the output is “approve later”"),
    Case("enum-table-column-passes",
         'a markdown table with columns `claim`, `severity`, where severity is one of "low", '
         '"high"', TABLE.format(sev="low"), "enum_value", "passed", "satisfied",
         "`severity` values: high, low"),
    Case("enum-table-column-fails",
         'a markdown table with columns `claim`, `severity`, where severity is one of "low", '
         '"high"', TABLE.format(sev="critical"), "enum_value", "failed",
         "partially_satisfied", "“critical” is not one of “low”, “high”"),
    Case("enum-json-field-passes", "a JSON object with fields:", '{"status": "late"}',
         "enum_value", "passed", "satisfied", "`status` values: late",
         details=('`status`: one of "ok", "late"',)),
    Case("enum-json-field-fails", "a JSON object with fields:", '{"status": "lost"}',
         "enum_value", "failed", "partially_satisfied", "“lost” is not one of “ok”, “late”",
         details=('`status`: one of "ok", "late"',)),
    Case("enum-field-absent-undecided", "a JSON object with fields:", '{"other": 1}',
         "enum_value", "undecided", "partially_satisfied", "no value of `status` found",
         details=('`status`: one of "ok", "late"',)),

    # ---- required fields
    Case("fields-every-element-passes", "a JSON array of sources, each object with fields:",
         '[{"url": "u1", "title": "t"}, {"url": "u2", "title": "s"}]', "required_field",
         "passed", "satisfied", "key `title` in 2 of 2 array elements", select="`title`",
         details=("`url`: the address", "`title`: the page title")),
    Case("fields-every-element-fails", "a JSON array of sources, each object with fields:",
         JSON_SOURCES, "required_field", "failed", "partially_satisfied",
         "key `title` in 1 of 2 array elements", select="`title`",
         details=("`url`: the address", "`title`: the page title")),
    Case("fields-object-passes", "a JSON object with fields:", '{"checked": 4}',
         "required_field", "passed", "satisfied", "top-level keys: checked",
         details=("`checked`: the number of claims checked",)),
    Case("fields-object-fails", "a JSON object with fields:", '{"count": 4}',
         "required_field", "failed", "partially_satisfied", "top-level keys: count",
         details=("`checked`: the number of claims checked",)),
    Case("fields-table-column-passes", "a markdown table with columns `claim`, `severity`",
         TABLE.format(sev="low"), "required_field", "passed", "satisfied",
         "table columns: claim, severity", select="`severity`"),
    Case("fields-table-column-fails", "a markdown table with columns `claim`, `source`",
         TABLE.format(sev="low"), "required_field", "failed", "partially_satisfied",
         "table columns: claim, severity", select="`source`"),
    Case("fields-csv-column-passes", "a CSV with columns `name`, `email`",
         "name,email\nann,a@x.example\n", "required_field", "passed", "satisfied",
         "“name,email\nann,a@x.example”", select="`email`"),
    Case("fields-csv-column-fails", "a CSV with columns `name`, `phone`",
         "name,email\nann,a@x.example\n", "required_field", "failed", "partially_satisfied",
         "no `phone` field, label or heading in `out`; it has: name, email", select="`phone`"),
    # a list the clause names that the output lacks holds no count: an upper bound is not
    # met by "0 items" (v14 passed it, and the clause was partially satisfied at 95)
    Case("no-named-list-no-count", "a numbered list of the queries issued, at most 12 entries",
         "The benchmark claims fewer escalations.\n\nA second paragraph of prose.", "count",
         "undecided", "violated", "no list, table or JSON array in `out` in which to count"),
    # values compare with `-`, `_` and spaces alike (v14 failed "request changes")
    Case("enum-separators-alike", 'one of "approve", "request-changes", or "comment"',
         "request changes", "enum_value", "passed", "satisfied",
         "the output is “request changes”"),
    Case("enum-field-separators-alike", 'a JSON object with `status` set to "in-progress" or '
         '"done"', '{"status": "in_progress"}', "enum_value", "passed", "satisfied",
         "`status` values: in_progress"),
    Case("enum-csv-column-passes", 'a CSV file whose `city` is one of "Paris", "Rome"',
         'name,city\n"Doe, Ann",Paris\n"Roe, Bo", "Rome"\n', "enum_value", "passed",
         "satisfied", "`city` values: Paris, Rome"),
    Case("enum-csv-column-fails", 'a CSV file whose `status` is one of "ok", "late"',
         "id,status\n1,ok\n2,lost\n", "enum_value", "failed", "partially_satisfied",
         "“lost” is not one of"),
    Case("fields-labels-passes", "a citation containing: title, author and year",
         "Title: Dune\nAuthor: Herbert\nYear: 1965", "required_field", "passed", "satisfied",
         "Year: 1965”", select="`year`"),
    Case("fields-labels-fails", "a citation containing: title, author and year",
         "Title: Dune\nAuthor: Herbert", "required_field", "failed", "partially_satisfied",
         "no `year` field, label or heading in `out`; it has: title, author", select="`year`"),
    Case("fields-mentioned-undecided", "a citation containing: title, author and year",
         "Title: Dune\nAuthor: Herbert, in the year 1965", "required_field", "undecided",
         "satisfied", "`year` is mentioned but not as a labelled field or heading",
         select="`year`"),

    # ---- numeric ranges
    Case("range-passes", "a score from 0-100", "**Confidence: 62/100**", "numeric_range",
         "passed", "satisfied", "“**Confidence: 62/100**”"),
    Case("range-fails", "a score from 0-100", "Confidence: 140/100", "numeric_range", "failed",
         "violated", "“Confidence: 140/100”"),
    Case("percentage-passes", "a percentage", "87.5 %", "value_type", "passed", "satisfied",
         "`out` is a percentage: “87.5 %”"),
    Case("percentage-fails", "a percentage", "about half", "value_type", "failed", "violated",
         "`out` is not a percentage: “about half”"),
    Case("field-percentage-fails", "a JSON object with `rate` (a percentage)", '{"rate": "high"}',
         "field_type", "failed", "partially_satisfied", "“high” is not a percentage"),
    Case("score-out-of-fails", "a score out of 10", "Score: 12/10", "numeric_range", "failed",
         "violated", "“Score: 12/10”"),
    Case("range-fails-without-number", "a score from 0-100", "high confidence",
         "numeric_range", "failed", "violated", "no number in `out`"),
    Case("range-field-passes", "a JSON object with fields:", '{"sla_hours": 24}',
         "numeric_range", "passed", "satisfied", "`sla_hours` values: 24",
         details=("`sla_hours`: an integer from 1-72",)),
    Case("range-field-fails", "a JSON object with fields:", '{"sla_hours": 96}',
         "numeric_range", "failed", "partially_satisfied", "`sla_hours` values: 96",
         details=("`sla_hours`: an integer from 1-72",)),
    Case("bound-field-passes", "a JSON object with fields:", '{"checked": 4}', "numeric_range",
         "passed", "satisfied", "`checked` values: 4",
         details=("`checked`: the number of claims checked, at least 3",)),
    Case("bound-field-fails", "a JSON object with fields:", '{"checked": 2}', "numeric_range",
         "failed", "partially_satisfied", "`checked` values: 2",
         details=("`checked`: the number of claims checked, at least 3",)),
    # a phrase's occurrences, a named end mark, a unified diff, a numbered list said after
    # its noun, unquoted values
    Case("mentions-twice-passes", 'a summary that mentions "climate" at least twice',
         "Climate policy matters. The climate is warming.", "literal", "passed", "satisfied",
         "“climate” 2 time(s) in `out`"),
    Case("mentions-twice-fails", 'a summary that mentions "climate" at least twice',
         "Policy matters. The climate is warming.", "literal", "failed", "violated",
         "“climate” 1 time(s) in `out`"),
    Case("question-mark-passes", "a clarifying question ending with a question mark",
         "What is the deadline?", "literal", "passed", "satisfied", "ends: “What is the"),
    Case("question-mark-fails", "a single line ending with a question mark",
         "Tell me the deadline.", "literal", "failed", "partially_satisfied",
         "ends: “Tell me the deadline.”"),
    Case("diff-passes", "a unified diff",
         "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-a = 1\n+a = 2\n b = 3\n", "format",
         "passed", "satisfied", "unified diff hunk “@@ -1,2 +1,2 @@”"),
    Case("diff-fails", "a unified diff", "I changed a to 2 in x.py.", "format", "failed",
         "violated", "no unified diff in `out`"),
    Case("not-a-diff-fails", "plain prose, not a diff", "@@ -1 +1 @@\n-a\n+b\n",
         "excluded_format", "failed", "violated", "“@@ -1 +1 @@”"),
    Case("post-numbered-fails", "a list of steps, numbered", "- open\n- close", "format",
         "failed", "violated", "a bulleted list, not a numbered one"),
    Case("unquoted-or-passes", "a severity: low, medium or high", "Medium", "enum_value",
         "passed", "satisfied", "the output is “Medium”"),
    Case("unquoted-of-fails", "a priority of P1, P2 or P3", "urgent", "enum_value", "failed",
         "violated", "the output is “urgent”"),
    Case("unquoted-sub-item-fails", "a JSON object with fields:", '{"tier": "platinum"}',
         "enum_value", "failed", "partially_satisfied",
         "“platinum” is not one of “gold”, “silver”, “bronze”",
         details=("`tier`: gold, silver or bronze",)),
    # a date or time written as a mask; quoted key names
    Case("date-mask-fails", "a date in the format DD/MM/YYYY", "2026-01-02", "value_type",
         "failed", "violated", "`out` is not written as DD/MM/YYYY: “2026-01-02”"),
    Case("date-mask-passes", "a date in the format DD/MM/YYYY", "02/01/2026", "value_type",
         "passed", "satisfied", "`out` is written as DD/MM/YYYY"),
    # a blank line after the first line, then more (v12 dropped it unread)
    Case("blank-line-fails", "a subject line, a blank line, then a body",
         "Fix the parser\nIt failed on empty input.", "blank_line", "failed", "violated",
         "is followed by “It failed on empty input.”, not a blank line"),
    Case("blank-line-passes", "a subject line, a blank line, then a body",
         "Fix the parser\n\nIt failed on empty input.", "blank_line", "passed", "satisfied",
         "a blank line follows the first line, “Fix the parser”"),
    Case("blank-line-one-line-fails", "a title, an empty line, then the text", "Just a title",
         "blank_line", "failed", "violated", "is one line, “Just a title”: nothing follows it"),
    # a CSV's header row: no number in its first line (all numbers: data; v12: asked)
    Case("csv-header-passes", "a CSV with a header row", '"last, first",age\n"doe, j",3\n',
         "csv_header", "passed", "satisfied", "first line, 2 named columns"),
    Case("csv-header-fails", "a CSV with a header row", "1,2,3\n4,5,6\n", "csv_header",
         "failed", "partially_satisfied", "the first line is data, every cell a number"),
    Case("csv-header-mixed-undecided", "a CSV with column headers", "id,2025,2026\na,1,2\n",
         "csv_header", "undecided", "satisfied", "2 of the 3 cells of the first line"),
    # a number's mask: its marks, its decimals, commas where it groups digits (v12: asked)
    Case("number-mask-fails-decimals", "a price in the format $X.XX", "$12.5", "value_type",
         "failed", "violated", "`out` is not written as $X.XX: “$12.5”"),
    Case("number-mask-fails-mark", "a price in the format $X.XX", "12.50", "value_type",
         "failed", "violated", "`out` is not written as $X.XX"),
    Case("number-mask-passes", "a price in the format $X.XX", "$1234.50", "value_type",
         "passed", "satisfied", "`out` is written as $X.XX: “$1234.50”"),
    Case("grouped-mask-fails", "a total formatted as X,XXX.XX", "1234.50", "value_type",
         "failed", "violated", "`out` is not written as X,XXX.XX"),
    Case("grouped-mask-passes", "a total formatted as X,XXX.XX", "-1,234.50", "value_type",
         "passed", "satisfied", "`out` is written as X,XXX.XX"),
    Case("percent-mask-passes", "a share formatted as XX.X%", "45.5%", "value_type",
         "passed", "satisfied", "`out` is written as XX.X%"),
    # a version's numbers parted by dots, "v" before them where the mask has it
    Case("version-mask-fails", "the version number, as X.Y.Z", "banana", "value_type",
         "failed", "violated", "`out` is not written as X.Y.Z: “banana”"),
    Case("version-mask-fails-parts", "the version number, as X.Y.Z", "1.2", "value_type",
         "failed", "violated", "`out` is not written as X.Y.Z: “1.2”"),
    Case("version-mask-passes", "the version number, as X.Y.Z", "v2.10.0-rc.1", "value_type",
         "passed", "satisfied", "`out` is written as X.Y.Z: “v2.10.0-rc.1”"),
    Case("version-mask-wants-its-v", "the tag, formatted as vX.Y.Z", "2.10.0", "value_type",
         "failed", "violated", "`out` is not written as vX.Y.Z"),
    # "X.X" is a number's mask, one decimal: no version (v20 as first written passed these)
    Case("one-decimal-mask-is-no-version", "the average rating, formatted as X.X", "4.75",
         "value_type", "failed", "violated", "`out` is not written as X.X: “4.75”"),
    Case("time-mask-passes", "a time in HH:MM format", "09:45", "value_type", "passed",
         "satisfied", "`out` is written as HH:MM"),
    Case("quoted-keys-fail", 'a JSON object with keys "name" and "age"', '{"name": "a"}',
         "required_field", "failed", "partially_satisfied", "top-level keys: name",
         select="`age`"),
    # the last line, not the first
    Case("last-line-starts-passes", 'a response whose last line begins with "Answer:"',
         "Because x.\nAnswer: 4\n", "literal", "passed", "satisfied", "last line: “Answer: 4”"),
    Case("last-line-starts-fails", 'a response whose last line begins with "Answer:"',
         "Answer: 4\nBecause x.", "literal", "failed", "violated", "last line: “Because x.”"),
    Case("last-line-fails", 'a log whose last line is "DONE"', "DONE\nwork", "literal",
         "failed", "violated", "last line: “work”"),
    # no URLs at all; a file name's extension
    Case("no-urls-fails", "a reply that does not include any URLs", "see https://a.example",
         "count", "failed", "violated", "`out` has 1 distinct URL"),
    Case("no-links-passes", "a reply with no links", "plain words", "count", "passed",
         "satisfied", "`out` has 0 distinct URLs"),
    Case("extension-fails", "a filename ending in .csv", "data.txt", "literal", "failed",
         "violated", "ends: “data.txt”"),
    Case("not-ending-is-asked", "a subject line, not ending with a period", "Hello there.",
         "meets_description", "undecided", "not_evaluable", "“Hello there.”",
         select="not ending with a period"),
    # the values of a one-line list are counted
    Case("inline-values-fail", "a comma-separated list of 3 to 5 keywords", "ai, ml",
         "count", "failed", "violated", "`out` has 2 values separated by “,”"),
    Case("inline-values-said-after", "a list of 5 keywords, comma-separated",
         "ai, ml, nlp, cv, rl", "count", "passed", "satisfied",
         "`out` has 5 values separated by “,”"),
    Case("inline-values-pass", "a comma-separated list of 3 to 5 keywords", "ai, ml, nlp",
         "count", "passed", "satisfied", "`out` has 3 values separated by “,”"),
    # distinct items count once
    Case("distinct-items-fail", "a list of at least 3 unique tags", "- ai\n- AI\n- ai.\n- ml",
         "count", "failed", "partially_satisfied", "`out` has 2 distinct list items"),
    Case("distinct-items-pass", "a list of at least 3 unique tags", "- ai\n- ml\n- nlp",
         "count", "passed", "satisfied", "`out` has 3 distinct list items"),
    Case("repeated-items-count", "a list of at least 3 tags", "- ai\n- ai\n- ai", "count",
         "passed", "satisfied", "`out` has 3 list items"),
    # how every item or line begins
    Case("item-edge-type-passes", "a list of events where each item starts with a date",
         "- 2026-01-02 launch\n- 2026-02-03 review", "item_edge", "passed", "satisfied",
         "all 2 list item(s) begin with a date; first: “2026-01-02 launch”"),
    Case("item-edge-type-fails", "a changelog, each entry starting with an ISO 8601 date",
         "2026-01-02: x\nJan 3, 2026: y", "item_edge", "failed", "violated",
         "line 2 of 2 does not begin with an ISO 8601 date (YYYY-MM-DD): “Jan 3, 2026: y”"),
    Case("item-edge-text-passes", 'a log where each line is prefixed with "[INFO]"',
         "[INFO] a\n**[INFO]** b", "item_edge", "passed", "satisfied",
         "all 2 line(s) begin with “[INFO]”"),
    Case("item-edge-text-fails", 'a checklist where every item begins with "TODO:"',
         "- TODO: a\n- FIX: b\n- TODO: c", "item_edge", "failed", "violated",
         "list item 2 of 3 does not begin with “TODO:”: “FIX: b”"),
    Case("item-edge-end-fails", "a list of exactly 3 items, each ending with a period",
         "- a.\n- b\n- c.", "item_edge", "failed", "partially_satisfied",
         "list item 2 of 3 does not end with “.”: “b”"),
    Case("item-edge-end-passes", 'a list where every line ends with ";"', "- a;\n- **b;**",
         "item_edge", "passed", "satisfied", "all 2 list item(s) end with “;”"),
    # an element of a named tag, opened and closed
    Case("tagged-passes", "the final answer wrapped in <answer></answer> tags",
         "Thinking it over.\n<answer>42</answer>", "literal", "passed", "satisfied",
         "“Thinking it over.\n<answer>42</answer>”"),
    Case("tagged-fails-without-the-tag", "the final answer wrapped in <answer></answer> tags",
         "The answer is 42.", "literal", "failed", "violated",
         "no <answer> tag in `out`: “The answer is 42.”"),
    Case("tagged-fails-unclosed", "reasoning in `<think>` tags, then the answer in <answer> tags",
         "<think>hm</think>\n<answer>4", "literal", "failed", "partially_satisfied",
         "<answer> is opened but never closed by </answer>: “<think>hm</think>\n<answer>4”",
         select="<answer>"),
    Case("tagged-case-sensitive", "the answer between <answer> and </answer>",
         "<ANSWER>4</ANSWER>", "literal", "failed", "violated", "no <answer> tag in `out`"),
    Case("tagged-negated-is-asked", "the answer, not wrapped in <answer> tags",
         "<answer>4</answer>", "meets_description", "undecided", "not_evaluable",
         "“<answer>4</answer>”"),
    # an order the items or a field's values keep
    Case("order-alphabetical-passes", "a list of tools, sorted alphabetically",
         "- awk\n- **Bash**\n- curl", "order", "passed", "satisfied",
         "the list items are in ascending order (3 values, compared as text, without case)"),
    Case("order-alphabetical-fails", "the names, in alphabetical order", "- Bo\n- Al\n- Cy",
         "order", "failed", "violated", "“Al” (value 2) comes after “Bo”"),
    Case("order-by-column-fails", "a table sorted by Score descending",
         "| Name | Score |\n|---|---|\n| a | 3 |\n| b | 5 |", "order", "failed",
         "partially_satisfied", "the values of `score` are not in descending order (compared "
         "as numbers): “5” (value 2) comes after “3”"),
    Case("order-by-json-key-passes", "a JSON array sorted by `score`, highest first",
         '[{"score": 0.99}, {"score": 0.95}, {"score": 0.95}]', "order", "passed", "satisfied",
         "the values of `score` are in descending order (3 values, compared as numbers)"),
    Case("order-by-date-fails", "a changelog table sorted by date, newest first",
         "| date | change |\n|---|---|\n| 2026-01-02 | a |\n| 2026-03-01 | b |", "order",
         "failed", "violated", "(compared as dates): “2026-03-01” (value 2)"),
    Case("order-without-direction-takes-either", "results ranked by score",
         "- score: 9\n- score: 7\n- score: 8", "order", "failed", "violated",
         "not in descending order (compared as numbers): “8” (value 3) comes after “7”"),
    Case("order-chronological-fails", "a timeline of events in chronological order",
         "- 2026-01-02 launch\n- 2025-12-30 freeze", "order", "failed", "violated",
         "the dates of the list items are not in ascending order (compared as dates): "
         "“2025-12-30” (value 2) comes after “2026-01-02”"),
    Case("order-newest-first-passes", "a changelog, newest first",
         "2026-03-01: b\n2026-01-02: a", "order", "passed", "satisfied",
         "the dates of the lines are in descending order"),
    Case("order-chronological-without-dates-is-asked", "events in chronological order",
         "- Jan 2: a\n- Jan 1: b", "order", "undecided", "not_evaluable",
         "not every one is an ISO date"),
    Case("order-json-strings-fails", "a JSON array of 5 strings, sorted alphabetically",
         '["b", "a", "c", "d", "e"]', "order", "failed", "partially_satisfied",
         "the JSON array's elements are not in ascending order (compared as text, without "
         "case): “a” (value 2) comes after “b”"),
    Case("order-by-column-word-fails", "a markdown table sorted by the Date column, oldest "
         "first", "| Date | x |\n|---|---|\n| 2026-02-01 | a |\n| 2026-01-01 | b |", "order",
         "failed", "partially_satisfied", "the values of `date` are not in ascending order"),
    Case("order-without-items-is-undecided", "a plan, sorted alphabetically", "Just prose.",
         "order", "undecided", "not_evaluable",
         "no list, table or JSON array in `out` whose items to order"),
    Case("order-of-words-is-asked", "findings ranked by severity, highest first",
         "- severity: high\n- severity: low", "order", "undecided", "not_evaluable",
         "the values of `severity` are neither numbers nor dates"),
    # a sub-item's exact phrase is asked, not dropped
    Case("sub-item-phrase-is-asked", "a JSON object with fields:", '{"log": "x"}',
         "meets_description", "undecided", "satisfied", '“{"log": "x"}”',
         select='`log`: starts with "[INFO]"', details=('`log`: starts with "[INFO]"',)),

    # ---- what needs judgment, and what is too vague to check
    Case("only-a-kind-is-asked", "a haiku", "This is prose, not a poem.", "meets_description",
         "undecided", "not_evaluable", "“This is prose, not a poem.”", select="“haiku”"),
    Case("judgment-deferred", "a critically evaluated review", "It is fine.", "judgment",
         "undecided", "not_evaluable", "“It is fine.”"),
    Case("vague-clause-article", "a nice answer", "All went well.", "testable", "undecided",
         "not_evaluable", "All went well."),
    Case("vague-clause-cut-short", "a report that is good", "All went well.", "testable",
         "undecided", "not_evaluable", "All went well."),
    Case("vague-clause", "a good report", "All went well.", "testable", "undecided",
         "not_evaluable", "“All went well.”"),
    Case("unchecked-rest-deferred", "the queries that were issued to the search engine",
         "q1\nq2", "meets_description", "undecided", "not_evaluable", "“q1\nq2”"),
    # "one row per service" is no count, and no check reads it: asked, never dropped
    Case("per-phrase-asked", "a markdown table with one row per service",
         "| service |\n|---|\n| a |", "meets_description", "undecided", "satisfied",
         "“| service |", select="one row per service"),
    Case("missing-output-violates", "at most 5 words", "", "output_published", "failed",
         "violated", "is empty"),
]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("library-runs")
    for n, case in enumerate(CASES):
        item = f"- `out`: {case.clause}" + "".join(f"\n    - {d}" for d in case.details)
        write_service_run(root, run_id(n), ensures=item, outputs={case.file: case.output})
    tables, _ = grade_folder(root)
    assert tables["runs"].filter(pl.col("status") == "graded").height == len(CASES)
    return tables


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_check(graded, case: Case):
    n = CASES.index(case)
    checks = graded["checks"].filter(pl.col("run_id") == run_id(n))
    rows = checks.filter((pl.col("check") == case.check)
                         & pl.col("detail").str.contains(case.select, literal=True))
    assert rows.height == 1, checks.select("check", "outcome", "detail").rows()
    row = rows.row(0, named=True)
    assert (row["outcome"], case.evidence in row["evidence"]) == (case.outcome, True), row
    verdict = graded["clause_verdicts"].filter(pl.col("run_id") == run_id(n)).row(0, named=True)
    assert verdict["verdict"] == case.verdict, (verdict, checks.rows())


def test_every_deciding_check_is_tested_both_ways():
    deciding = {"format", "excluded_format", "json_shape", "count", "literal", "enum_value",
                "required_field", "numeric_range", "item_edge", "csv_header", "value_type",
                "blank_line"}
    seen = {(c.check, c.outcome) for c in CASES}
    for name in deciding:
        assert {(name, "passed"), (name, "failed")} <= seen, name


def test_one_sided_detectors_never_pass(graded):
    detectors = graded["checks"].filter(pl.col("check").is_in(["forbidden_literal",
                                                               "no_secrets"]))
    assert set(detectors["outcome"]) == {"failed", "undecided"}


def test_deferred_checks_stay_undecided_with_their_question(graded):
    deferred = graded["checks"].filter(pl.col("check").is_in(["judgment", "testable",
                                                              "meets_description"]))
    assert deferred.height >= 3
    assert set(deferred["outcome"]) == {"undecided"}
    assert deferred["detail"].str.contains("judgment|too vague").all()
    assert deferred["recommendation"].is_not_null().all()


def test_evidence_never_holds_a_secret(graded):
    n = next(i for i, c in enumerate(CASES) if c.id == "secret-found-and-masked")
    evidence = graded["checks"].filter(pl.col("run_id") == run_id(n))["evidence"]
    assert evidence.str.contains("[secret masked]", literal=True).sum() >= 1  # the quotes
    assert not pl.concat([evidence, graded["clause_verdicts"]["evidence"]]).str.contains(
        "AKIAABCDEFGHIJKLMNOP").any()


def test_vague_clause_gets_reason_and_testable_rewrite(graded):
    n = next(i for i, c in enumerate(CASES) if c.id == "vague-clause")
    verdict = graded["clause_verdicts"].filter(pl.col("run_id") == run_id(n)).row(0, named=True)
    assert verdict["reason"].startswith("too vague to check: “good”")
    assert verdict["recommendation"].startswith("rewrite as a testable clause, e.g. \"- `out`: "
                                                "a report, as a bulleted list")


@pytest.mark.parametrize(("case", "rewrite"), [
    ("vague-clause-article", "an answer"), ("vague-clause-cut-short", "a report")])
def test_a_vague_clause_is_rewritten_in_grammar(graded, case, rewrite):
    # the vague words go, and what they leave reads as English (v13: "a answer", "a report
    # that is, as a bulleted list")
    n = next(i for i, c in enumerate(CASES) if c.id == case)
    verdict = graded["clause_verdicts"].filter(pl.col("run_id") == run_id(n)).row(0, named=True)
    assert verdict["recommendation"].startswith(
        f"rewrite as a testable clause, e.g. \"- `out`: {rewrite}, as a bulleted list")


def test_evidence_is_capped(tmp_path):
    long = "word " * 5000
    write_service_run(tmp_path, run_id(1), ensures="- `out`: at most 10 words",
                      outputs={"out.md": long})
    tables, _ = grade_folder(tmp_path)
    assert tables["checks"]["evidence"].str.len_chars().max() <= 2000
    assert tables["checks"].filter(pl.col("check") == "count")["outcome"].item() == "failed"


@pytest.mark.parametrize(("output", "confidence"), [
    ("72", 90),                                   # the output is the number
    ("72\n\nThe evidence is strong.", 85),        # it opens the output, set apart
    ("**72** — the evidence is strong.", 85),
    ("Score: 72", 85),                            # labelled
    ("About 3 of 5 sources agree.", 60),          # a number somewhere in a sentence
])
def test_number_read_with_the_confidence_of_where_it_stands(tmp_path, output, confidence):
    write_service_run(tmp_path, run_id(1), ensures="- `out`: a number from 0-100",
                      outputs={"out.md": output})
    tables, _ = grade_folder(tmp_path)
    row = tables["checks"].filter(pl.col("check") == "numeric_range")
    assert row["outcome"].to_list() == ["passed"]
    assert row["confidence"].to_list() == [confidence]


def test_rows_of_each_element_keep_the_clause_order(tmp_path):
    # the rows of a check judged per element are grouped by element while judged (a regex
    # built from a name is compiled once per name); the table lists them as the clause does
    names = ["zulu", "alpha", "mike", "bravo", "yankee", "charlie", "kilo", "delta"]
    for n in range(3):  # several runs naming the same fields, in different orders
        order = names[n:] + names[:n]
        details = "".join(f"\n    - `{name}`: a value" for name in order)
        write_service_run(tmp_path, run_id(n), ensures=f"- `out`: a report with fields:{details}",
                          outputs={"out.md": "Alpha: 1\nZulu: 2\nsome words about mike"})
    tables, _ = grade_folder(tmp_path)
    for n in range(3):
        rows = tables["checks"].filter((pl.col("run_id") == run_id(n))
                                       & (pl.col("check") == "required_field"))
        named = rows["detail"].str.extract(r"field `([a-z]+)`", 1).to_list()
        assert named == names[n:] + names[:n], rows.select("detail", "outcome").rows()
        outcomes = dict(zip(named, rows["outcome"], strict=True))
        assert (outcomes["alpha"], outcomes["zulu"], outcomes["mike"], outcomes["kilo"]) == (
            "passed", "passed", "undecided", "failed")


@pytest.mark.parametrize(("ensures", "output", "expected"), [
    # a JSON array is a list, its elements the items (v20: "no list", violated at 95)
    ("a list of at least 2 tags", '["billing", "refund", "urgent"]',
     {"format": "passed", "count": "passed"}),
    ("a list of at least 2 tags", '["billing"]', {"format": "passed", "count": "failed"}),
    # "empty" is no item at all (v20: an empty array failed, a list with items passed)
    ("an empty list", "[]", {"format": "passed", "count": "passed"}),
    ("an empty list", '[{"id": "T-1"}]', {"format": "passed", "count": "failed"}),
    ("an empty list", "- T-1 Refund request", {"format": "passed", "count": "failed"}),
    ("an empty JSON array", '[{"id": "T-1"}]', {"format": "passed", "count": "failed"}),
])
def test_a_json_array_is_a_list_and_an_empty_one_has_no_item(tmp_path, ensures, output,
                                                              expected):
    write_service_run(tmp_path, run_id(1), ensures=f"- `out`: {ensures}",
                      outputs={"out.md": output})
    tables, _ = grade_folder(tmp_path)
    checks = tables["checks"].filter(pl.col("check").is_in(list(expected)))
    assert dict(zip(checks["check"], checks["outcome"], strict=True)) == expected, (
        checks.select("check", "outcome", "evidence").rows())
