-- version_diffs: the same clause of the same run graded under two grader ids. One row per
-- (base_grader_id, head_grader_id, run, service, clause) of the runs both graded from the
-- same files (paired_runs); clauses graded under only one of the two ids are left out
-- (version_summary counts them).
--   flipped = base_verdict differs from head_verdict; flip = 'base_verdict→head_verdict'.
--   text = the clause as written in the run's contract.
-- A clause pairs with the one of the same clause_id; a ledger check (kind 'ledger_check')
-- with the one of the same name (its text), unique within a grader: its clause_id hashes its
-- place among the grader's checks, which a check added before it moves.
-- Reads: paired_runs, clause_verdicts, clauses.

with

compared as (
    select base_grader_id, head_grader_id, run_uri
    from paired_runs
    where same_files
),

clause_texts as (
    select grader_id, run_uri, service, clause_id, kind, text
    from clauses
),

verdicts as (
    select
        clause_verdicts.grader_id,
        clause_verdicts.run_id,
        clause_verdicts.run_uri,
        clause_verdicts.service,
        clause_verdicts.clause_id,
        clause_verdicts.verdict,
        clause_verdicts.confidence,
        clause_texts.kind,
        clause_texts.text,
        case
            when clause_texts.kind = 'ledger_check' then 'check ' || clause_texts.text
            else clause_verdicts.clause_id
        end as pair_key
    from clause_verdicts
    left join clause_texts
        on clause_texts.grader_id = clause_verdicts.grader_id
        and clause_texts.run_uri = clause_verdicts.run_uri
        and clause_texts.service = clause_verdicts.service
        and clause_texts.clause_id = clause_verdicts.clause_id
),

paired as (
    select
        compared.base_grader_id,
        compared.head_grader_id,
        base.run_id,
        base.run_uri,
        base.service,
        base.clause_id,
        base.kind,
        base.text,
        base.verdict as base_verdict,
        head.verdict as head_verdict,
        base.confidence as base_confidence,
        head.confidence as head_confidence
    from compared
    inner join verdicts as base
        on base.grader_id = compared.base_grader_id and base.run_uri = compared.run_uri
    inner join verdicts as head
        on head.grader_id = compared.head_grader_id
        and head.run_uri = base.run_uri
        and head.service = base.service
        and head.pair_key = base.pair_key
)

select
    paired.base_grader_id,
    paired.head_grader_id,
    paired.run_id,
    paired.run_uri,
    paired.service,
    paired.clause_id,
    paired.kind,
    paired.text,
    paired.base_verdict,
    paired.head_verdict,
    paired.base_verdict <> paired.head_verdict as flipped,
    case
        when paired.base_verdict <> paired.head_verdict
            then paired.base_verdict || '→' || paired.head_verdict
    end as flip,
    paired.base_confidence,
    paired.head_confidence
from paired
order by paired.base_grader_id, paired.head_grader_id, paired.run_uri, paired.service,
    paired.clause_id
