-- trends: one row per grader id × program × day.
--   runs = runs found that day (graded + refused); graded; refused.
--   mean_overall_score / median_overall_score over the graded runs that have a score.
--   satisfied / partial / violated / not_evaluable = graded runs by overall_verdict.
--   passed / failed / undecided = graded runs by outcome_verdict (a ledger's own verdict).
--   program is null for runs refused before their program could be read (e.g. no program.md).
-- Reads: run_days.

with

days as (
    select grader_id, program, run_date, status, overall_score, overall_verdict, outcome_verdict
    from run_days
),

per_day as (
    select
        grader_id,
        program,
        run_date as day,
        count(*) as runs,
        count(*) filter (where status = 'graded') as graded,
        count(*) filter (where status = 'refused') as refused,
        avg(overall_score) as mean_overall_score,
        median(overall_score) as median_overall_score,
        count(*) filter (where overall_verdict = 'satisfied') as satisfied,
        count(*) filter (where overall_verdict = 'partial') as partial,
        count(*) filter (where overall_verdict = 'violated') as violated,
        count(*) filter (where overall_verdict = 'not_evaluable') as not_evaluable,
        count(*) filter (where outcome_verdict = 'passed') as passed,
        count(*) filter (where outcome_verdict = 'failed') as failed,
        count(*) filter (where outcome_verdict = 'undecided') as undecided
    from days
    group by grader_id, program, run_date
)

select
    grader_id,
    program,
    day,
    runs,
    graded,
    refused,
    mean_overall_score,
    median_overall_score,
    satisfied,
    partial,
    violated,
    not_evaluable,
    passed,
    failed,
    undecided
from per_day
order by grader_id, program nulls last, day
