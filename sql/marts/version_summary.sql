-- version_summary: one row per ordered pair of grader ids: how far the head moved from the base.
--   shared_runs, changed_runs  from grader_pairs: runs graded under both ids from the same
--                     files, and runs whose files changed between the two grades (left out)
--   runs_paired       runs with an overall_score under both ids, from the same files
--   mean_score_delta  mean of (head - base) overall_score over those runs (a paired difference)
--   sd_score_delta    sample standard deviation of those differences
--   ci95_low/high     mean_score_delta ± t × sd / sqrt(runs_paired), t = the 0.975 quantile of
--                     Student's t with runs_paired - 1 degrees of freedom (taken from the table
--                     below at the largest tabulated df not above it, each value rounded up
--                     at its third decimal, so never too narrow);
--                     null when fewer than 2 runs are paired
--   runs_verdict_changed  runs whose overall_verdict differs
--   runs_outcome_changed  runs whose outcome_verdict differs (a ledger's own verdict)
--   clauses_paired, clauses_flipped  from version_diffs
--   clauses_only_base, clauses_only_head  clauses of the shared runs graded under one id only
--                     (a contract parser change gave them new clause ids)
-- Reads: grader_pairs, paired_runs, run_score_deltas, version_diffs, clause_verdicts.

with

pairs as (
    select base_grader_id, head_grader_id, shared_runs, changed_runs
    from grader_pairs
),

run_deltas as (
    select base_grader_id, head_grader_id, score_delta, verdict_changed, outcome_changed
    from run_score_deltas
),

clause_diffs as (
    select base_grader_id, head_grader_id, flipped
    from version_diffs
),

verdicts as (
    select grader_id, run_uri
    from clause_verdicts
),

t_quantiles as (
    select *
    from (values
        (1, 12.707), (2, 4.303), (3, 3.183), (4, 2.777), (5, 2.571), (6, 2.447), (7, 2.365),
        (8, 2.307), (9, 2.263), (10, 2.229), (11, 2.201), (12, 2.179), (13, 2.161),
        (14, 2.145), (15, 2.132), (16, 2.120), (17, 2.110), (18, 2.101), (19, 2.094),
        (20, 2.086), (21, 2.080), (22, 2.074), (23, 2.069), (24, 2.064), (25, 2.060),
        (26, 2.056), (27, 2.052), (28, 2.049), (29, 2.046), (30, 2.043), (40, 2.022),
        (50, 2.009), (60, 2.001), (80, 1.991), (100, 1.984), (120, 1.980), (1000, 1.963)
    ) as t (degrees_of_freedom, t975)
),

score_moves as (
    select
        base_grader_id,
        head_grader_id,
        count(score_delta) as runs_paired,
        count(score_delta) - 1 as degrees_of_freedom,
        avg(score_delta) as mean_score_delta,
        stddev_samp(score_delta) as sd_score_delta,
        count(*) filter (where verdict_changed) as runs_verdict_changed,
        count(*) filter (where outcome_changed) as runs_outcome_changed
    from run_deltas
    group by base_grader_id, head_grader_id
),

intervals as (
    select
        score_moves.*,
        t_quantiles.t975 * score_moves.sd_score_delta / sqrt(score_moves.runs_paired)
            as half_width
    from score_moves
    asof left join t_quantiles
        on score_moves.degrees_of_freedom >= t_quantiles.degrees_of_freedom
),

clause_moves as (
    select
        base_grader_id,
        head_grader_id,
        count(*) as clauses_paired,
        count(*) filter (where flipped) as clauses_flipped
    from clause_diffs
    group by base_grader_id, head_grader_id
),

shared_runs as (
    select base_grader_id, head_grader_id, run_uri
    from paired_runs
    where same_files
),

clauses_graded as (
    select
        shared_runs.base_grader_id,
        shared_runs.head_grader_id,
        count(*) filter (where verdicts.grader_id = shared_runs.base_grader_id) as base_clauses,
        count(*) filter (where verdicts.grader_id = shared_runs.head_grader_id) as head_clauses
    from shared_runs
    inner join verdicts
        on verdicts.run_uri = shared_runs.run_uri
        and verdicts.grader_id in (shared_runs.base_grader_id, shared_runs.head_grader_id)
    group by shared_runs.base_grader_id, shared_runs.head_grader_id
)

select
    pairs.base_grader_id,
    pairs.head_grader_id,
    pairs.shared_runs,
    pairs.changed_runs,
    coalesce(intervals.runs_paired, 0) as runs_paired,
    intervals.mean_score_delta,
    intervals.sd_score_delta,
    intervals.mean_score_delta - intervals.half_width as ci95_low,
    intervals.mean_score_delta + intervals.half_width as ci95_high,
    coalesce(intervals.runs_verdict_changed, 0) as runs_verdict_changed,
    coalesce(intervals.runs_outcome_changed, 0) as runs_outcome_changed,
    coalesce(clause_moves.clauses_paired, 0) as clauses_paired,
    coalesce(clause_moves.clauses_flipped, 0) as clauses_flipped,
    coalesce(clauses_graded.base_clauses, 0) - coalesce(clause_moves.clauses_paired, 0)
        as clauses_only_base,
    coalesce(clauses_graded.head_clauses, 0) - coalesce(clause_moves.clauses_paired, 0)
        as clauses_only_head
from pairs
left join intervals
    on pairs.base_grader_id = intervals.base_grader_id
    and pairs.head_grader_id = intervals.head_grader_id
left join clause_moves
    on pairs.base_grader_id = clause_moves.base_grader_id
    and pairs.head_grader_id = clause_moves.head_grader_id
left join clauses_graded
    on pairs.base_grader_id = clauses_graded.base_grader_id
    and pairs.head_grader_id = clauses_graded.head_grader_id
order by pairs.base_grader_id, pairs.head_grader_id
