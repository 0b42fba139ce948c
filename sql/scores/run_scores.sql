-- run_scores: one row per graded run and grader id.
--   overall_score   = mean of service_score weighted by each service's clause count
--                     (services with no evaluable clause carry no weight).
--   overall_verdict = 'satisfied' when every scored service passes; 'violated' when strictly
--                     more than half of the scored services fail; otherwise 'partial' (so an
--                     exact half is 'partial'); 'not_evaluable' when no service could be scored.
--   outcome_verdict = strongest outcome over all the run's checks: failed > undecided > passed.
-- Reads: runs, service_scores, checks.

with

graded_runs as (
    select grader_id, run_id, run_uri, program
    from runs
    where status = 'graded'
),

scores as (
    select grader_id, run_uri, clauses, service_score, passes
    from service_scores
),

outcomes as (
    select grader_id, run_uri, outcome
    from checks
),

per_run as (
    select
        grader_id,
        run_uri,
        count(*) as services,
        count(service_score) as services_scored,
        count(*) filter (where passes) as services_passing,
        count(*) filter (where not passes) as services_failing,
        cast(sum(clauses) as bigint) as clauses,
        sum(service_score * clauses) / nullif(sum(clauses) filter (where service_score is not null), 0)
            as overall_score
    from scores
    group by grader_id, run_uri
),

strongest as (
    select
        grader_id,
        run_uri,
        case
            when bool_or(outcome = 'failed') then 'failed'
            when bool_or(outcome = 'undecided') then 'undecided'
            else 'passed'
        end as outcome_verdict
    from outcomes
    group by grader_id, run_uri
)

select
    graded_runs.grader_id,
    graded_runs.run_id,
    graded_runs.run_uri,
    graded_runs.program,
    coalesce(per_run.services, 0) as services,
    coalesce(per_run.services_scored, 0) as services_scored,
    coalesce(per_run.services_passing, 0) as services_passing,
    coalesce(per_run.services_failing, 0) as services_failing,
    coalesce(per_run.clauses, 0) as clauses,
    per_run.overall_score,
    case
        when coalesce(per_run.services_scored, 0) = 0 then 'not_evaluable'
        when per_run.services_passing = per_run.services_scored then 'satisfied'
        when per_run.services_failing * 2 > per_run.services_scored then 'violated'
        else 'partial'
    end as overall_verdict,
    -- a run with no check holds no evidence, so it cannot pass
    coalesce(strongest.outcome_verdict, 'undecided') as outcome_verdict
from graded_runs
left join per_run
    on graded_runs.grader_id = per_run.grader_id and graded_runs.run_uri = per_run.run_uri
left join strongest
    on graded_runs.grader_id = strongest.grader_id and graded_runs.run_uri = strongest.run_uri
order by graded_runs.grader_id, graded_runs.run_uri
