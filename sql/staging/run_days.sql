-- run_days: one row per run found and grader id, graded or refused, with the day it ran and
-- its outcome. The grain of every trend.
--   run_date = the date at the start of the run id (YYYYMMDD-…); when the id does not start
--              with a date, the day the run ended (state.md '---end'); else the day it was found.
--   overall_score / overall_verdict / outcome_verdict: from run_scores (null for refused
--              runs); outcome_verdict is a moltzap ledger's own verdict (SPEC 4).
--   refusal_reason: from refusals (null for graded runs).
-- Reads: runs, run_scores, refusals.

with

found_runs as (
    select grader_id, run_id, run_uri, program, status, ended_at, discovered_at
    from runs
),

scores as (
    select grader_id, run_uri, overall_score, overall_verdict, outcome_verdict
    from run_scores
),

refused as (
    select grader_id, run_uri, reason
    from refusals
),

dated as (
    select
        *,
        coalesce(
            try_strptime(left(run_id, 8), '%Y%m%d')::date,
            try_cast(left(ended_at, 10) as date),
            try_cast(left(discovered_at, 10) as date)
        ) as run_date
    from found_runs
)

select
    dated.grader_id,
    dated.run_id,
    dated.run_uri,
    dated.program,
    dated.run_date,
    dated.status,
    scores.overall_score,
    scores.overall_verdict,
    scores.outcome_verdict,
    refused.reason as refusal_reason
from dated
left join scores
    on dated.grader_id = scores.grader_id and dated.run_uri = scores.run_uri
left join refused
    on dated.grader_id = refused.grader_id and dated.run_uri = refused.run_uri
order by dated.grader_id, dated.run_date, dated.run_uri
