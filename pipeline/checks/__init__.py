"""Checks and graders: the public API for writing a grader of your own (see README)."""

from .contract import (
    CUT_SHORT,
    FAILED,
    ON_AN_OUTPUT,
    PASSED,
    PRIMARY,
    UNDECIDED,
    contract_checks,
    excerpt,
    part_read,
    quoted,
)
from .grader import EVIDENCE_CAP, REGISTRY, Check, Grader, GraderError, check, run_checks
from .library import CONTENT, JUDGED, NAMED, around, content_checks, failed_on_part_read, label

# v2: checks read what each clause requires (formats, counts, phrases, fields, ranges, ...)
# v3: clauses are no longer read as their opposite (v2 did all of these):
#     - 'never mentions "a" or "b"' forbids each phrase (v2: the output is one of them);
#     - a requirement stated in the negative ('does not start with "Draft"', 'must not be
#       "failed"', 'without the field `debug`') is left to judgment;
#     - a format ruled out ('plain text, not JSON', 'no bullet points') is checked by the
#       new `excluded_format` check (v2 required the format);
#     - a negated bound is the other bound ('does not exceed 100 words' caps);
#     - 'begins with either "Yes" or "No"' and 'starts with "Hi" or "Hello"' are left to
#       judgment (v2: the output is one of them);
#     - ', or just "none"', ', or "none" if nothing was found' state the alternative output
#       (v2 read it only after "or the single line/word");
#     - '2,000 characters' is one number (v2 read '000 characters');
#     - 'each with a severity of "low" or "high"' names the field (v2 held the whole output to
#       the values), and 'a decision: "yes" or "no"' does not (v2 looked for a field
#       `decision`);
#     - the columns of a CSV output are its fields (v2 found none: undecided).
# v4: v3 failed outputs that met their clause and satisfied outputs that did not:
#     - a length stated of one part of an output of several parts ('a title and a summary of
#       2 sentences', 'a one-line verdict and a list', 'a report with an executive summary of
#       at most 100 words') is left to judgment (v3 measured the whole output against it);
#     - a sub-item's length in words or characters ('`body`: at most 60 words') is checked on
#       the field's values by the new `field_length` check, and its other counts join the
#       judgment question (v3 dropped both: the clause could be satisfied without them);
#     - a clause that is one value of a type ('an integer', 'a URL', 'an ISO 8601 date', 'a
#       UUID', 'an email address') is checked by the new `value_type` check (v3 read
#       nothing: any output satisfied it), a sub-item's type ('`sla_hours`: an integer',
#       '`retrieved`: as YYYY-MM-DD') by the new `field_type` check on every value of the
#       field;
#     - the language of a text ('in French') needs judgment (v3 dropped it);
#     - '280 characters or fewer' and '5 sources or more' are bounds (v3: exactly 280, 5);
#       'under 20 words each' bounds each item (v3: the whole output); 'numbered steps, at
#       most 7' counts the steps (v3 bounded the output's first number);
#     - 'a verdict of "approve" or "reject", followed by one sentence' and 'at least one of
#       "low", "medium" or "high"' ask about the values (v3 held the whole output to them);
#       'whose `status` is "ok"' holds the field to the value (v3 read nothing);
#     - columns of a table are counted as columns (v3 counted rows), and a report's sections
#       are its headings but a lone # title above them (v3 counted the title); 'at least 2
#       H2 sections' is asked (v3 read "at least 2" as a bound on the output's first number);
#     - 'sections "Features", "Fixes" and "Known issues"' requires those headings (v3 read
#       nothing);
#     - 'a JSON object with a `findings` array of objects, each with `id` and `title`' looks
#       for `id` and `title` inside the object (v3 required them as its top-level keys);
#     - 'a list of URLs, one per line' requires no markdown list (v3 failed plain lines), nor
#       does 'a comma-separated list of tags' (v3 required a list and a CSV table), and a
#       bare 'comma-separated' is no CSV;
#     - 'with a `status` of "ok" or "error"' names the field (v3 held the whole output to the
#       values); 'with `name` and `score` (0-100)' and '`score` between 0 and 1' bound the
#       field `score` (v3: none, or the output's first number); 'the columns Name, Role and
#       Email' requires those columns (v3 read nothing);
#     - 'exactly the keys `a` and `b`', 'only these fields:', 'no other columns' are checked
#       by the new `no_extra_fields` check (v3 read only the required fields); 'a `Total` row'
#       is a phrase the output contains; 'rounded to 2 decimals' is asked (v3 dropped it);
#     - judgment questions keep the closing quote of a quoted phrase that ends the clause;
#     - a clause with a count beside a number that counts nothing ('three lines of 5, 7 and 5
#       syllables') is read; v3 raised, and its runs were refused as internal-error.
# v5: v4 failed outputs that met their clause and let quality words go unjudged:
#     - 'a list of URLs' is met by lines of one item each, without list markers (v4 failed
#       them: "no list"); 'a markdown list' still needs markers (its own format,
#       `markdown_list`), and such lines are counted as the list's items;
#     - a range in parentheses after what it bounds ('a confidence score (0-100)') is checked
#       by `numeric_range` (v4 read nothing: any output satisfied it, or none could); an output
#       that is just the number is read at 90 confidence (v4: 60, as a first number in text);
#     - a sub-item's quality words ('`summary`: a concise, well-sourced summary') are judged
#       (v4 dropped them: the clause was satisfied at full confidence);
#     - 'a timestamp' and 'an ISO 8601 timestamp' are value types (v4 read nothing: "yesterday
#       at noon" satisfied them);
#     - 'yes or no', 'yes/no', 'true or false' are the values of the output (v4: any word);
#     - 'with a `status` key', 'an `id` field and a `title` field' name required fields, and so
#       do capitalised titles after "sections" ('sections Summary, Findings and Sources'); v4
#       read neither, so outputs without them were satisfied;
#     - 'a JSON array of strings' (numbers, integers, objects, arrays, booleans) holds only such
#       elements, checked by `json_shape` (v4: any array);
#     - a field's type in parentheses ('`total` (a number)') is checked by `field_type` (v4
#       read types from sub-items only), and 'separated by commas' is one line of values, no
#       list (v4 failed such outputs: "no list");
#     - 'a JSON object with at least 3 keys' (fields, properties) counts its top-level keys, or
#       a table's columns (v4 could count neither: the clause was satisfied);
#     - sources are counted as numbered citations ("[1]", "[2]") where those outnumber the
#       URLs (v4 counted URLs only: "at least 3 citations in [n] format" always failed);
#     - 'with 2 decimal places' is asked, like 'rounded to 2 decimals' (v4 dropped it).
# v6: v5 satisfied outputs that did not meet their clause, and read some checkable clauses
#     as questions for judgment:
#     - 'mentions "climate" at least twice' (3 times, 2 or more times) counts the phrase's
#       occurrences, without case (v5: once was enough);
#     - 'a list of steps, numbered' is a numbered list (v5: any list);
#     - a clause that only names a kind of output ('a haiku', 'a phone number', 'an email')
#       asks whether the output is one (v5: its publication satisfied it at 95); generic
#       nouns ('the result', 'the answer') and the output's own name still ask nothing;
#     - unquoted values joined by "or" that are all a clause says after its opening noun ('a
#       severity: low, medium or high', a sub-item '`tier`: gold, silver or bronze') or after
#       a value's noun and "of" ('a priority of P1, P2 or P3', 'with a risk of low or high')
#       are enumerations (v5: a question for judgment);
#     - 'ending with a question mark' (a period, an exclamation mark) is checked as the
#       output's last character (v5: a question for judgment);
#     - 'a unified diff' is a format, met by a hunk header ("@@ -1,2 +1,2 @@"), new measure
#       `is_diff` (v5: a question for judgment);
#     - 'no more than three bullet points' bounds the count (v5 read "no ... bullet points" as
#       a format ruled out, and failed every bulleted output);
#     - 'no more than 2 decimal places' (at most, up to, a bare '2 decimals') is asked, like
#       'rounded to 2 decimals' (v5 dropped it);
#     - 'each line starts with "TODO:"', 'every item begins with a date', 'each ending with a
#       period' are checked on every list item (else every line) by the new `item_edge` check
#       (v5 checked a quoted text on the output's first line or end, and asked about a type);
#     - 'ending with a period' (a full stop, a question or exclamation mark) is read (v5
#       dropped "a period": the clause was satisfied); 'not ending with a period' is asked;
#     - a sub-item's exact phrase ('`log`: starts with "[INFO]"', '`reply`: never mentions
#       "password"') is asked (v5 read it and dropped it: the clause was satisfied);
#     - 'at least 3 unique tags' (distinct, different) counts a list's items once each (v5
#       counted repeats);
#     - 'whose last line begins with "Answer:"' ('on the last line, prefixed with', 'ending
#       with a line that starts with') and 'whose last line is "DONE"' read the output's last
#       line (v5 checked "begins with" on the first line, and dropped "last line is");
#     - 'a date in the format DD/MM/YYYY', 'a time in HH:MM format' are checked against the
#       mask (value type `masked`, new column `value_mask`; v5: any date, or a question);
#     - quoted names of keys, fields or columns ('keys "name" and "age"') are required fields
#       (v5 asked about them);
#     - 'no URLs', 'without any links', 'does not include any URLs' count 0 URLs (v5 asked);
#     - a file name's extension ('a filename ending in .csv', 'with a .md extension') is the
#       end of the output, not a format (v5 failed "data.csv": "no CSV");
#     - 'at least one sub-bullet' (sub-items, sub-lists) is asked (v5 counted the top-level
#       items);
#     - 'a comma-separated list of 3 to 5 keywords' counts the values of a one-line output
#       (new column `inline_list`; v5 found nothing to count: undecided).
# v7: v6 left as questions what text settles, and read one scope word as the whole output:
#     - 'each bullet is one sentence', 'each paragraph has at most 3 sentences' count the
#       sentences of every list item, paragraph or line (new measures item_sentences,
#       paragraph_sentences, line_sentences; v6: undecided, "cannot be counted per item");
#     - 'every line a single sentence', 'every bullet under 10 words' bound every line or
#       item, as "each" does (v6 bounded the whole output);
#     - 'the final answer wrapped in <answer></answer> tags' ('enclosed in <final> tags',
#       'between <answer> and </answer>') requires that element, opened and closed, in the
#       output (literal mode `tagged`; v6: a question for judgment);
#     - 'sorted alphabetically', 'a table sorted by Score descending', 'a JSON array sorted by
#       `score`, highest first', 'in ascending order of `rank`', 'in chronological order'
#       are checked on the list items, the field's values or the dates the items hold by the
#       new `order` check (numbers, ISO dates, and text only where the clause says
#       alphabetically; v6: a question for judgment);
#     - a table named by what it holds ('a comparison table', 'a summary table with one row
#       per service', 'a markdown summary table') is a markdown table (v6 read no format:
#       'a summary table with one row per service' was satisfied by any published text);
#     - 'exactly 3 hashtags', 'no emojis', 'at most one emoji' count them in the output (v6:
#       undecided, "no list ... in which to count hashtags"; "no emojis" was asked);
#     - 'all lowercase', 'in ALL CAPS', 'no uppercase letters' are checked on every letter of
#       the output by the new `letter_case` check (v6: a question for judgment);
#     - 'at least 3 H2 sections', 'exactly one H1 heading' count the headings of that level
#       (v6: a question for judgment);
#     - a count of one kind of item among others ('at least 2 pros and at least 2 cons') is
#       undecided, the items not being told apart by kind (v6 counted every item for each:
#       one pro and one con met both counts, six items failed 'exactly 3 strengths and 3
#       weaknesses' twice);
#     - 'a reply that ends with a question' ends with "?" (v6: a question for judgment);
#       'in E.164 format' is no count (v6 read "164 format" as one);
#     - 'a link to the PR', 'with a source link' ask for at least one URL, 'without line
#       breaks' for at most one line (v6: questions for judgment);
#     - values the output goes on after ('a decision: approve or reject, with a one-sentence
#       reason') are asked (v6 held the whole output to them: "approve - the tests pass."
#       failed), as after "followed by" or ", then";
#     - a field's length in parentheses ('`summary` (at most 50 words)') bounds the field's
#       values, as the sub-item '`summary`: at most 50 words' does (v6 bounded the whole
#       output);
#     - on a one-line output, a number set off by a dash, colon or comma ("85 — the evidence
#       is strong.") is the lead that "followed by exactly one sentence" counts after (v6
#       found no sentence after it: failed);
#     - a sub-item's order or letter case ('`items`: sorted by date, newest first', '`title`:
#       all lowercase') is asked (v6 dropped it with the sub-item's other words);
#     - 'a list with no duplicates', 'no duplicate entries', 'no repeated lines' count the
#       list items (else lines) that repeat an earlier one (v6: a question for judgment);
#     - a possessive or "name" before a quoted phrase ('mentions the user's name "Alice"') no
#       longer hides it from the phrase reader (v6: a question for judgment);
#     - 'no item longer than 10 words' bounds each item (v6 read "longer than 10 words" of the
#       whole output: a long list passed, a short one failed); 'no sentence longer than 25
#       words' is asked (no check counts words per sentence);
#     - 'no headings' counts none (v6 dropped it), and 'without any markdown headings' rules
#       out headings, not all markdown (v6 failed "**bold** text");
#     - 'with a "result" key' and 'a ## Summary section' require that key or heading (v6 read
#       quoted names only after "keys", "fields" or "sections", and no "## " name);
#     - 'ends with a "Next steps" section' is the last heading's text, any level or case (v6
#       read the output's last words: the right report failed);
#     - 'where score is between 0 and 100' bounds that field's values (v6 bounded the output's
#       first number: a table with a year column failed);
#     - a bare "each" after a count of paragraphs or lines ('at least 2 paragraphs, each under
#       50 words') bounds each of them (v6 bounded each line);
#     - 'a list of 5 keywords, comma-separated' is one line of values, no markdown list (v6
#       counted the values but failed the format: "no list").
# v8: v7 dropped what a standard's number or a date noun said, and held a value the output
#     goes on after to the whole output:
#     - 'the release date in ISO 8601 format', 'the date as YYYY-MM-DD', 'the timestamp in
#       ISO-8601' are that value type (v7 dropped the words: any published text satisfied
#       the clause at confidence 95);
#     - "ISO 8601" that no reader takes stays in the judgment question (v7 dropped it: 'a
#       summary with dates in ISO 8601 format' asked about "summary" alone);
#     - 'an integer followed by a one-line note', 'an ISO 8601 date, with a short reason': the
#       output opens with the value (new clause column `value_lead`; v7 held the whole output
#       to it: "5 shipped" failed "an integer followed by a one-line note");
#     - 'exactly 2 code blocks', 'a Python script in one code block', 'at most one fenced
#       code snippet' count the fenced blocks (new measure `n_code_blocks`; v7 asked, or read
#       "at most 3" as a bound on the output's first number: every output failed it); a count
#       with only an upper bound requires no block;
#     - 'no more than 2 exclamation marks', 'without exclamation points' count every "!" but
#       the one of "!=" (v7: a question for judgment, or undecided);
#     - 'a CSV with at least 3 data rows' counts the lines below the header (v7: undecided,
#       "no list": a one-row CSV satisfied the clause);
#     - 'a unified diff inside a ```diff code block', 'a Python code block' require a fence
#       tagged with that language (new clause column `fence_lang`; v7 took any fenced block);
#     - 'each item starts with an emoji', 'each bullet in bold', 'every item wrapped in
#       quotes' are checked on every item (v7: questions);
#     - 'a markdown checklist', 'with checkboxes', '- [ ] items' require every list item to be
#       a checkbox (v7: any markdown satisfied it); a bare "checklist" or "task list" is any
#       list;
#     - a count of items a sub-item states of a JSON output's field ('reasons: a list of 1-3
#       short strings') bounds the length of its arrays (new measure `json_array_lens`; v7
#       asked it);
#     - "each" of a JSON array output is each element: 'a JSON array of findings, each with at
#       least 2 sources' counts the distinct URLs of every element (new measures
#       `element_texts`, `element_urls`; v7 counted per line: a one-line array passed with an
#       element of one source, a pretty-printed one failed its lines without a URL); other
#       counts per element ('each under 20 words') are undecided.
# v9: v8 satisfied outputs that did not meet their clause:
#     - 'valid JSON' took '{"a": 1,}' and NaN (DuckDB's parser is lenient; JSON is not): a
#       comma before a closing bracket, NaN or Infinity outside a string is not valid JSON;
#     - 'a 6-digit code', 'a 4-digit PIN', 'a 5-star rating' were dropped whole (a number
#       hyphened to a word that counts nothing took the phrase with it: any published text
#       satisfied them at confidence 95); now the words stay in the judgment question, and
#       'a 6-digit verification code', 'a four-digit PIN', 'a 5-digit ZIP code' are so many
#       digits (value type `digits`, its mask one '#' a digit; a space or a dash may set
#       groups apart; a phone number is asked);
#     - 'a commit message whose first line is at most 50 characters' bounds the first line
#       (scope `first`, words or characters; v8 bounded the whole message: a right commit
#       message failed at confidence 95);
#     - 'a CSV with columns id, name, email', 'a table with columns Name, Owner, Status'
#       (three one-word names or more, no "and", closing the part) require those fields (v8
#       dropped the names: any CSV satisfied the clause at confidence 75);
#     - an aside in parentheses no reader takes stays in the judgment question with the words
#       before it ('each with a severity (low, medium, high)'; v8 asked "each with a
#       severity": a judge could not know the values), and so does the period of "e.g.";
#     - a list's items are those of least indent: "  - detail" under "- finding" is no item
#       (v8 counted items indented by up to 3 spaces: "exactly 3 top-level items" failed a
#       list of three findings with details, "at least 5 findings" passed three);
#     - a number the output opens with, set apart ("85\n\nThe evidence…", "85 — strong"), is
#       read with confidence 85 (v8: 60, as any number in a sentence; with the open question
#       of "followed by one paragraph of justification" the clause fell under the floor);
#     - what looks like a count but is none ('one row per service', 'a summary for each
#       finding') is asked (v8 held it from the count readers and never put it back: any
#       published text satisfied 'a summary for each finding' at confidence 95);
#     - a count of one named section ('a "Risks" section with at least 3 bullet points', 'a
#       `## Sources` section listing 5+ distinct URLs', 'at least 3 items under the "Risks"
#       heading') counts the list items, URLs or words under that heading (scope `section`,
#       new clause column `section_name`; v8 counted the whole output's);
#     - 'at most 3 sentences per item', 'under 10 words for each bullet' bound every item
#       (v8 dropped them, as counts that were none); so does 'a markdown list with one
#       summary of at most 3 sentences per item', where "one summary" is no count of items
#       (v8 read it as exactly one list item: every list of two summaries or more failed);
#     - a name in backticks said something of ('with no `debug` field', 'a string `id`')
#       stays in the judgment question (v8 dropped the stretch: any JSON object satisfied
#       the clause at confidence 95); a type said before or after a field's name ('a
#       boolean `done`', '`count` as an integer') is that field's type, and the field is
#       required, as is one that holds an array ('with a `findings` array'; v8 dropped
#       both);
#     - "an HTML table" is no markdown table, "a JSON Lines file" no JSON document, "an XML
#       document" a kind of output, and "a numbered list starting at 1", "a table whose
#       first column is the date", "a single code block and nothing else" say more than
#       their format: all asked (v8 read an HTML table as markdown, JSON Lines as invalid
#       JSON, and dropped the rest: any markdown table satisfied "an HTML table", any
#       output "an XML document", at confidence 95); "nothing else" after a value that is
#       the whole output ('one of "approve" or "reject", nothing else in the file') says
#       nothing more;
#     - 'a non-negative integer' and 'a positive integer' bound the number (≥ 0, ≥ 1; v8
#       dropped the word: `stars`: a non-negative integer passed -3); 'a positive number'
#       is asked;
#     - 'at most 3 lowercase tags' counts the tags and asks their case (v8 counted
#       "lowercase"s and dropped the case), and the case of something inside the output
#       ('at most 3 tags, all lowercase') is asked (v8 dropped it);
#     - a sub-item's type said between commas ('`retry_after`: seconds to wait, an integer,
#       only when status is "error"') is its field's type (v8 read a type only where the
#       sub-item opened with it);
#     - 'mentions either "Monday" or "Tuesday"', 'includes one of "a", "b"' are asked (v8
#       read them as the whole output's values: "See you Monday." failed at 85), and
#       'mentions "refund" at least once' asks nothing more than the phrase;
#     - a JSON output's field a sub-item says holds an array ('`late`: an array of table
#       names', '`tags`: a list of at most 3 strings') fails where it holds something else
#       (v8: undecided, or nothing checked without a count);
#     - a bare bound is read only where nothing follows it: 'at least 2 code examples' is
#       asked (v8 bounded the output's first number by 2: two fenced examples failed at
#       80); 'a top-10 list' is ten items and 'no more than a paragraph' one paragraph (v8
#       dropped both: any list, any text satisfied them at 95);
#     - '"Added", "Changed" and "Fixed" headings' names required fields (v8: asked); 'an
#       "Impact" section before the "Timeline" section' is asked whole (v8 checked that both
#       names occur and dropped the order: satisfied at 95 in either order); 'whose title is
#       at most 8 words' bounds the first line without its heading marks (v8: the whole
#       output);
#     - 'a table whose `Status` column holds only "pass" or "fail"' bounds that column's
#       values (v8 held the whole output to them: every table failed); 'a top-level
#       `version` key' is a required field (v8: asked); 'a CSV with exactly 3 columns'
#       counts its first line's cells (v8: undecided); 'the date of the last deploy, as
#       YYYY-MM-DD' is an ISO date (v8: asked), 'the date of each event, …' is not; 'a
#       duration in minutes (an integer)' is an integer (a type in parentheses closing the
#       clause; v8: asked).
# v10: v9 named a JSON key otherwise than a clause names its field (DuckDB's lower and trim,
#      keeping underscores at the ends: "_id" was "-id", the clause's `_id` "id"): "a JSON
#      object with an `_id` field" failed {"_id": 7}; every key measure (json_keys,
#      json_element_keys, json_array_lens) is now normalised as field names are, as
#      field_values already was. And in a clause about JSON, key names after "with" said
#      nothing more of ('a JSON object with a `name`', 'each with an `id` and a `title`') are
#      required fields (v9 dropped them: any JSON satisfied the clause at confidence 95);
#      elsewhere ('a markdown list, each item with a `url`') they are asked (v9 dropped them
#      too).
# v11: a field's length said in the clause itself ("a JSON object with a `name` field of at
#      most 40 characters", "whose `summary` is under 50 words", "with a `tags` array of 2-5
#      strings", in a JSON clause "`title` must be at most 80 characters") is checked on the
#      field's values, as a sub-item's is (v10 counted the whole output: the object's 23
#      characters failed a 3-letter name); its counts no check reads per field ("a `Summary`
#      field of 2-3 sentences", "`reason` (one sentence)") are asked. "The word count is
#      between 100 and 200" and "whose length is between 50 and 100 words" count words (v10:
#      a range of the output's first number, of a field `length`). "Sections Added, Changed,
#      Fixed" (commas only) are required fields (v10: asked). "`confidence` (a number between
#      0 and 1)" bounds and types the field (v10: the output's first number); 'every `url`
#      starts with "https://"' and 'the answer on its own line, prefixed with "Answer:"' are
#      asked (v10: the whole output's start). '"yes" or "no", lowercase' reads the case word
#      closing the clause (v10 dropped it); "a title, then 2-3 paragraphs" counts those after
#      the first line (v10: the title too). A judgment question keeps a quoted phrase's
#      colons and commas (v10 cut it there). "A score out of 10" is a range from 0 (v10:
#      asked); "3 out of 5 items marked done" is asked (v10 counted 5 items); "where each
#      element has" is no question (v10 asked it); "a percentage" is a value type (v10:
#      asked). A JSON string
#      value is decoded in field_values
#      ('"ends \"quoted\""' reads ends "quoted", "caf\u00e9" café; v10 kept the escapes and
#      lost a final escaped quote).
# v12: a bound said in words or by a sign bounds a number, excluding its own number where the words
#      say so: "a positive number" (> 0), "a negative integer" (< 0), "a non-positive number" (≤ 0),
#      "a number less than 1", "a confidence above 0.5", "the temperature, below 0" (v11 dropped
#      these unread, "less than 1" satisfied by 5 at confidence 95, or asked). A field's sign or
#      one-sided bound in its parentheses, "`count` (a positive integer)", "`delay` (under 30)",
#      "`count` (an integer, at least 1)", bounds and types that field (v11 bounded the output's
#      first number: {"id": 0, "count": 4} failed), and so do a type or a range after the field's
#      noun, "a `count` field (a positive integer)", "a `score` key (0-100)", "a `total` field (a
#      number)" (v11: the output's first number, or dropped unread), and so does one after "whose"
#      or "where" ("whose `count` is at least 1") or after the name and a verb in a clause about
#      JSON ("`count` must be greater than 0"); "a JSON array of numbers, each between 0 and 1" is
#      asked (v11 bounded the first number only). Two bounds joined, "at least 0 and at most 1", are
#      both read, and "at least 3 and at most 5 bullet points" counts 3-5 items (v11 took "at least
#      3 and" for a count of "and" and lost the lower bound; "at least 3 or higher" was dropped
#      whole). "Sections Summary, Risks and Next steps" names "Next steps" (v11: "Next"), and "in
#      that order" after named sections is asked (v11 dropped it), as is "a date in the future" (v11
#      dropped "in the future"); "a score of 1-5" is a range (v11: asked). A length of the first
#      line ("subject", "headline", "title", "first line") in a clause of several parts is that
#      line's ("a commit message: subject of at most 50 characters, a blank line, then a body"; v11
#      asked it). "A non-empty JSON array", "a non-empty `items` array", "whose `tags` list is
#      non-empty" count at least one item (v11: asked). "A category from: billing, technical,
#      account" is an enumeration (v11 dropped it unread), as is "a sentiment label (positive,
#      negative or neutral)" (v11: asked), and "`severity` set to "low", "medium" or "high"" the
#      field's (v11: the whole output's), with no question left of the field's name. 'A reply signed
#      "— Support"' ends with it (v11: asked); 'mentions "Q3" and "Q4"' requires both (v11: the
#      first only). "A one-liner" is at most one line (v11: undecided). A sub-item's field that may
#      be absent ("`note`: optional", "`code`: …, only when status is "error"") is not required (v11
#      failed outputs without it); when it must be there is asked. "A slug, hyphenated": a
#      participle set apart is asked (v11 dropped it). "At most 5 unique tags" counts every item and
#      rules out repeats (v11 counted each item once: "a, a, b" passed). A bound's phrase in a
#      check's detail no longer ends on the comma or the "and" after it ("rating out of 5", not
#      "rating out of 5,").
# v13: in a clause about a JSON array, a bound of each element ("a JSON array of numbers, each
#      between 0 and 1", v12: asked) and a sign said of the elements' type ("a JSON array of at
#      most 3 positive integers", v12 read "positive" as the unit of the count and satisfied
#      [1, -2, 3] at confidence 90) bound every element that is a number. A one-sided whole
#      bound without a unit on a field holding JSON arrays and no number ("`tags` (at least
#      2)", "whose `items` is at most 5") counts their elements (v12: undecided, so {"tags":
#      ["a"]} was satisfied at confidence 75). A number's mask, "a price in the format $X.XX",
#      "a total formatted as X,XXX.XX", "XX.X%", is the form of the whole output (v12: asked).
#      "A CSV with a header row" is checked by a new check, csv_header: no cell of the first line
#      is a number (v12: asked). "A subject line, a blank line, then a body" is checked by a new
#      check, blank_line: the second line is blank, more text after it (v12 dropped it).
# v14: v13 gave wrong verdicts where a run's files name things otherwise than it expected:
#      an item marked "(optional)" whose output is absent is not_evaluable (v13: violated);
#      "a YAML file" must parse as YAML (v13 matched its lines only: "key: [unclosed"
#      satisfied it); a program's conditional is triggered by an error the erroring service
#      declared (v13 looked for it among the program's own errors and violated it); a
#      manifest's `errors:` item "`no-results` — why" declares `no-results` (v13: the whole
#      text); an item naming its file's extension ("`report.md`") is its binding `report`
#      (v13: none found); an old-style `ensures:` block ends at another block ("notes:",
#      "examples:"), whose items were clauses in v13; a service's name compares with its
#      bindings' folder, its workspace and its log steps as output names do (`Fact_Checker`
#      publishes in bindings/fact-checker/; v13: no binding, log 'absent'); a service whose
#      contract the run does not hold has one not_evaluable clause saying so (v13 dropped
#      it silently); a table's delimiter cells may hold one or two hyphens (`|-|:-:|`, v13:
#      "no markdown table"). A not_evaluable clause's reason and recommendation name every
#      open question (v13: the first), and a rewrite of a vague clause keeps its grammar
#      ("an answer", v13 "a answer").
# v15: files as other tools write them: a byte-order mark opening a file is no part of its
#      text (v14: the program unnamed, the first heading and front matter unread, a JSON
#      output "not valid JSON"); names compare with their accents composed or decomposed
#      (NFC: a service whose folder macOS wrote decomposed published nothing in v14); a
#      run's log is read up to 32 MB (v14: 1 MB, refusing a longer run `incomplete-run`);
#      "e.g." and "i.e." end no sentence, nor does a mark before a word in lower case
#      ("approx. five"; v14 counted a sentence at each); an output's `\r\n` line ends
#      read as `\n` (v14: a valid table "no markdown table", valid YAML "no YAML"); ensures
#      items may be numbered (v14 read none: a service left out, or a run refused); an
#      item's unindented next line continues it (v14 dropped it), and its HTML comments are
#      no part of it (v14 read their words as requirements); "a `Sources` section" is a
#      heading or label so named (v14: the word anywhere in the text). Era B: a forme graph
#      of `nodes` holds the services (v14 made services of its keys), its execution order and
#      returns are read as manifest.md's are (v14 made a service of each other spelling).
#      A labelled lead takes its value ("Score: 70/100."); a count in a named structure the
#      output lacks is undecided (v14: 0, passing upper bounds); enumerated values compare
#      with `-`, `_` and spaces alike, as documented.
# v16: a label in fenced code is no section ("a `Sources` section": v15 passed on
#      `Sources:` in a YAML block); a program's ensures item naming its origin ("`report`
#      (from writer)") is graded on that service's output (v15: the last to run); a
#      contract, manifest or error file longer than the 1 MB read of it refuses its run
#      `unreadable-file` (v15 graded the run on its head: clauses past the cut unread); a
#      file in UTF-16 or UTF-32 opened by its mark is read so, and a lone `\r` ends a line
#      (v15: such a contract had no ensures, such an output's list was one line); of two
#      outputs whose names compare alike (`Tldr.md`, `tldr.md`), the one wired, else the
#      one named as the clause writes it is graded (v15: the first by path); a field whose
#      value is a JSON object is of no scalar type (v15 skipped the value, and
#      `{"score": {"score": 3}}` passed); a symlink inside the root where the grader reads
#      refuses the run `unsafe-path` (v15 read it as absent: an output "not published", a
#      contract "not in it").
# v17: services snapshotted but left out of the manifest are graded; a program's
#      conditionals match every errored service (see the README).
# v18: a conditional of a service that did not err is triggered by the log's note on its step
#      naming the state it asks about ("⊘ (deferred: no blocker/major comments …)"; v17: not
#      triggered, the primary ensures held against a deferred service), or by another
#      service's error it names as a program's would ("if fact-checking finds no sources" of
#      the writer; v17: untested); a ⊘ service whose conditional so triggered is graded on
#      that path; a service whose ensures stand under a heading not read (`## Ensures`) has
#      one not_evaluable clause of kind `unread_ensures` (v17 left it out without a word).
# v19: an output cut at the read cap fails the clauses its start already violates: a count
#      past an upper bound ("at most 200 words" of 14,000), a forbidden text, a secret (v18:
#      not_evaluable); its start ends after a whole block, and a character the cap split is
#      no decoding error (v18 flagged clean UTF-8 `decode_errors`); "`x`: (optional) …" marks
#      an optional output (v18: required); "columns a, b and at least 4 rows" reads no column
#      `at` and a least count (v18: a column `at`, exactly 4 rows); a required section whose
#      heading has nothing under it fails (v18: met); "1,250" is 1250 (v18: 1); prose's first
#      number out of a range is asked (v18: violated, "a 2025 field study" for a score); in
#      JSON "88" is no integer; items inside a multi-line HTML comment, and a note after an
#      error's name (`✗ no-results — 0 hits`), are not read as such (v18: graded, undeclared).
# v20: a sub-item `if CONDITION: …` is a conditional of its own, judged on the output of the
#      top-level item it stands under (v19: a detail of that item, its degraded output asked
#      of every run); "the version number, as X.Y.Z" is a value_type check (v19: nothing
#      read, any text satisfied it), and a mask no reader reads, a sub-item's too, is asked;
#      a clause's failure confidence is the weakest established failure's, a precondition's
#      unsure failure counted among the requirements' (v19: the weakest of all, so a judge's
#      "failed" at 49 beside a count failed at 95 made it not_evaluable); keys and columns
#      are quoted in evidence as the output writes them (v19: normalised, `extra-key`).
# v21: a field named before a noun ("a `status` key ("ok" or "error")", "a `severity` field
#      set to P1, P2 or P3") is that field, its values unquoted too (v20: a field `key`, found
#      in no output, the clause satisfied at 75 whatever the value); a JSON array is a list,
#      "an empty list" a count of no item (v20: an empty array failed, a list with items met
#      it); a qualifier naming a time zone, a year or a domain ("in UTC", "in 2026") is asked
#      (v20: dropped, any timestamp met the clause at 95); "addresses" is a quality word only
#      as a verb (v20: "3 email addresses" judged); "code examples" are code blocks,
#      counted (v20: asked); a conditional naming no output asks its degraded output whole;
#      a missing key's or column's evidence says it is missing (v20: the keys alone);
#      examples of what a clause forbids ("does not mention competitors such as Zendesk")
#      are forbidden (v20: dropped as examples).
# v22: a key of a JSON output is read where it is nearest the top (v21: at every depth, so
#      a nested `status` of "failing" failed the output's own `status` of "ok"), and one the
#      clause puts inside another ("`checks`: … each with `status` …") below the top (new
#      measure `json_top_values`, enums' `nested`); a field's JSON array holds its elements
#      as values (v21: none, "no value"), a JSON null is a wrong value unless the field's
#      sub-item says it may be absent or null ("(optional)", "if resolved"), or the clause
#      says its values may be null (new clause column `nullable_fields`; v21: no value);
#      "never an empty list", "must not be an empty array" is a count of at least one item
#      (v21: a list ruled out, and "empty array" counted as what was asked); a time zone, a
#      year or a domain closing a value's clause ("an ISO 8601 timestamp in UTC", "a date in
#      2026", "a URL on github.com"), a sub-item's too, is checked (new clause column
#      `value_within`, field_types' `within`; v21 asked it, satisfied at 75, and dropped a
#      sub-item's); "… 14:35:22 UTC" is a timestamp (v21: none); examples of what a clause
#      forbids in parentheses ("(e.g. Zendesk, Intercom)"), after "avoids", "never uses" or
#      "never names", are forbidden, and "avoids "x"", "never names "x"" forbid x (v21: asked);
#      a named field's values name no format of the output ("a `format` field (markdown or
#      html)": values, as a field naming a kind holds them; another field's are asked; v21
#      required the JSON output to be markdown); what is forbidden with an exception
#      ('never mentions "Northwind" unless the ticket does') is asked whole (v21 forbade it
#      everywhere, and asked the exception alone); in a clause about JSON,
#      "an empty `results` list", "whose `errors` list is empty" is the field's count of no
#      item (v21 counted the output's own items: none in an object, the clause met at 75);
#      lines of one item each are counted where the output has no other list (v21: none to
#      count in); a whole number with zero decimals is the number among values (v21: "2.0"
#      was none of 1, 2 or 3); a missing field of a text or CSV output is said so with the
#      labels, headings or columns there are (v21: none); a quote of a service's outputs
#      joined (a conditional naming no output) stays within one of them (v21 quoted the end
#      of one file and the start of the next as one text); "never uses more than 2 …" bounds
#      them (v21 required more than 2); a label line opening lines of one item each is none
#      of them, and a CSV's lines are no such list; what is forbidden in one part of the
#      output ("in its first sentence", "whose subject line does not mention …") is asked;
#      "a `tags` array, never an empty list" is the field's count of at least one item, and
#      '(write "none" if there are none)' an alternative output (v21: asked); a field
#      written in a format ("a `body` in markdown") names no format of the output.
# v23: a field the clause puts inside another ("`checks` …, each with", "each object with",
#      "each check in `checks` has", "`x` array of objects with") is read inside the last
#      such field named before it, where the output holds that field at its top (new measure
#      `json_child_values`; enums', ranges' and field_types' `parent`; v22 read every one
#      below the top: a `summary`'s `status` of "mixed" failed the checks' "pass" or
#      "fail"); "has a `status` of …" names the field (v22: the whole output); each element
#      of a named field's array is bounded where the clause says so ("a `scores` array, each
#      between 0 and 1", "whose `counts` are each at least 1", "a `counts` array of positive
#      integers", "a `retries` list, none above 3", a sub-item's "an array of numbers, each
#      between 0 and 1"; v22 asked it, bounded the output's first number or the array's
#      length, or read nothing), and measured where its length is said ("a `summaries`
#      array, each under 50 words"; v22 measured the output's lines); a `.csv` output of
#      one column is a CSV, its header no row (v22: no CSV, the header counted); an address
#      after a short display name is an email address, a date with its time a date (not
#      where the clause says without its time), a mail header's date and time (RFC 2822) a
#      timestamp (not where the clause says ISO), and a markdown link that is the whole
#      output the URL it leads to (v22: none of them).
# v24: a timestamp said to be Unix time ("a Unix timestamp", "a timestamp (Unix seconds)",
#      "an epoch timestamp", "seconds since the epoch") is Unix seconds or milliseconds
#      (v23 asked the first and took an ISO 8601 or RFC 2822 timestamp for the others); an
#      email address said to go without a display name ("a bare email address", "(no display
#      name)", "just the address") has none (v23 took "Ann Lee <ann@acme.com>"); in the
#      clause, a sub-item or a field's parentheses. A CSV said to have no header row has
#      every line counted as a row, and its columns undecided (v23 took the first line for
#      its header). "An RFC 3339 timestamp" is an ISO 8601 one (v23: a count of 3339).
DEFAULT_GRADER_ID = "prose.contract.grader/v24"


# The built-in checks' names, as registered when this package is imported (before any grader
# file): a grader whose checks bear exactly these names is the built-in one, or a copy of it
BUILTIN_NAMES = frozenset(REGISTRY)


def builtin_checks() -> list[Check]:
    """Every built-in check, contract checks first, in the order the default grader runs them."""
    return [*contract_checks(), *content_checks()]


def default_grader(grader_id: str = DEFAULT_GRADER_ID) -> Grader:
    """The built-in contract grader (its id changes whenever a check's meaning changes)."""
    return Grader(grader_id, builtin_checks())


__all__ = ["BUILTIN_NAMES", "CONTENT", "CUT_SHORT", "DEFAULT_GRADER_ID", "EVIDENCE_CAP",
           "FAILED", "JUDGED", "NAMED", "ON_AN_OUTPUT", "PASSED", "PRIMARY", "REGISTRY",
           "UNDECIDED", "Check", "Grader", "GraderError", "around", "builtin_checks", "check",
           "content_checks", "contract_checks", "default_grader", "excerpt",
           "failed_on_part_read", "label", "part_read", "quoted", "run_checks"]
