{#- branch_changes (CDC): the rows inserted into and deleted from a table between two versions.

    In a model, a relation over the changes (a session temp view with a fresh name):
        select * from {{ branch_changes(ref('fct_orders'), from_version, to) }}
    Columns: the table's columns, then _change_type ('insert' | 'delete'), _commit_id,
    _commit_ts, _commit_seq. An update is a delete of the old row plus an insert of the new one.
    from: a commit id (or 6+ digit prefix), a branch name, `branch@time` or a time;
          none / 0 / '' = snapshot mode (the rows of `to`, all as inserts, no deletes).
    to:   the same; none = the head of `branch`.
    branch: the branch times are read on; default the target's branch (or `to` when it names one).
    net:  fold each primary key's changes into their net effect (primary-key tables only).
    `from` is a Python keyword: pass it by position, or as from='...' (it arrives in kwargs).

    As `dbt run-operation branch_changes --args '{table: shop.fct_orders, from: ..., to: ..., branch: ...}'`
    it prints counts per commit and the first `limit` changes instead (see branch_changes_summary).
    A macro run by run-operation that wants the relation calls branch_changes_relation. -#}

{% macro branch_changes(table=none, from_version=none, to=none, branch=none, net=false, limit=10) -%}
  {%- set from_version = kwargs.get('from', from_version) -%}
  {%- if flags.WHICH == 'run-operation' and execute -%}
    {%- do branch_changes_summary(table, from_version, to, branch, net, limit) -%}
  {%- else -%}
    {{- return(branch_changes_relation(table, from_version, to, branch, net)) -}}
  {%- endif -%}
{%- endmacro %}


{% macro branch_changes_relation(table, from_version=none, to=none, branch=none, net=false) -%}
  {%- set from_version = kwargs.get('from', from_version) -%}
  {%- if table is none or table == '' -%}
    {{ exceptions.raise_compiler_error("branch_changes needs a table: branch_changes(ref('orders'), from, to)") }}
  {%- endif -%}
  {%- if not execute -%}
    {#- parsing: nothing is read; the placeholder is never run -#}
    {{- return(api.Relation.create(identifier='branch_changes_placeholder')) -}}
  {%- endif -%}
  {%- if model is mapping and model.get('config', {}).get('materialized') == 'view' -%}
    {{ exceptions.raise_compiler_error(
        "branch_changes returns a relation that lives only while dbt runs: materialize "
        ~ model.get('name') ~ " as table or incremental, not view") }}
  {%- endif -%}
  {{- return(adapter.branch_changes_relation(table, from_version, to, branch, net)) -}}
{%- endmacro %}


{#- The changes of `table` since the last build of the model calling it, for incremental models:
        {{ config(materialized='incremental') }}
        select ... from {{ branch_changes_since_last_build(ref('fct_orders')) }}
    First build and --full-refresh: snapshot mode (every current row, as inserts). Later builds:
    the changes after the commit that last changed {{ this }} on the target branch (the model's
    previous build), up to the head, so each change is consumed once. -#}
{% macro branch_changes_since_last_build(table, net=false) -%}
  {%- set from_version = none -%}
  {%- if execute and is_incremental() -%}
    {%- set from_version = adapter.branch_last_change_commit(this) -%}
  {%- endif -%}
  {{- return(branch_changes_relation(table, from_version, none, none, net)) -}}
{%- endmacro %}


{% macro branch_changes_summary(table=none, from_version=none, to=none, branch=none, net=false, limit=10) %}
  {%- set from_version = kwargs.get('from', from_version) -%}
  {%- if not table -%}
    {{ exceptions.raise_compiler_error(
        "branch_changes needs a table: --args '{table: shop.fct_orders, from: <commit>, to: <commit or branch>}'") }}
  {%- endif -%}
  {{ print(adapter.branch_changes_summary(table, from_version, to, branch or none, net, limit)) }}
{% endmacro %}
