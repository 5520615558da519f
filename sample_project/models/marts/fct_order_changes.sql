{#- An audit log of fct_orders built from its changes on the branch (branch_changes, so branchspark
    only: the tag lets plain dbt-spark runs exclude it). Each build appends what changed in
    fct_orders since this model's previous build, folded per order_id (net): an order whose
    re-merge changed nothing adds no row. The first build (and --full-refresh) records every
    order as an insert. -#}
{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        tags=['branchspark_only']
    )
}}

select
    order_id,
    status,
    amount,
    _change_type as change_type,
    _commit_id as commit_id,
    _commit_ts as committed_at
from {{ branch_changes_since_last_build(ref('fct_orders'), net=true) }}
