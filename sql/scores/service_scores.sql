-- service_scores: one row per (grader_id, run, service) that has at least one ensures clause.
--   service_score = (satisfied + 0.5 * partially_satisfied) / evaluable * 100,
--   evaluable = clauses that are not not_evaluable; null when nothing was evaluable.
--   passes = every evaluable clause satisfied (null when nothing was evaluable).
-- Reads: clause_verdicts.

with

verdicts as (
    select grader_id, run_id, run_uri, service, verdict
    from clause_verdicts
),

counted as (
    select
        grader_id,
        run_id,
        run_uri,
        service,
        count(*) as clauses,
        count(*) filter (where verdict = 'satisfied') as satisfied,
        count(*) filter (where verdict = 'partially_satisfied') as partially_satisfied,
        count(*) filter (where verdict = 'violated') as violated,
        count(*) filter (where verdict = 'not_evaluable') as not_evaluable
    from verdicts
    group by grader_id, run_id, run_uri, service
),

scored as (
    select
        *,
        clauses - not_evaluable as evaluable,
        case
            when clauses - not_evaluable > 0
                then (satisfied + 0.5 * partially_satisfied) / (clauses - not_evaluable) * 100.0
        end as service_score
    from counted
)

select
    grader_id,
    run_id,
    run_uri,
    service,
    clauses,
    satisfied,
    partially_satisfied,
    violated,
    not_evaluable,
    evaluable,
    service_score,
    case when evaluable > 0 then satisfied = evaluable end as passes
from scored
order by grader_id, run_uri, service
