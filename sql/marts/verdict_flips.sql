-- verdict_flips: the flip matrix. One row per pair of grader ids × base verdict × head verdict
-- with the number of paired clauses that went from one to the other; rows with
-- flipped = false (the diagonal) count the clauses that kept their verdict.
-- Reads: version_diffs.

with

diffs as (
    select base_grader_id, head_grader_id, base_verdict, head_verdict, flipped
    from version_diffs
)

select
    base_grader_id,
    head_grader_id,
    base_verdict as from_verdict,
    head_verdict as to_verdict,
    flipped,
    count(*) as clauses
from diffs
group by base_grader_id, head_grader_id, base_verdict, head_verdict, flipped
order by base_grader_id, head_grader_id, flipped desc, clauses desc, from_verdict, to_verdict
