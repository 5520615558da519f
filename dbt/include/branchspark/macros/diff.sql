{#- branch_diff: the rows and schemas that differ between two versions (branches, commit ids, branch@time).

    As `dbt run-operation branch_diff --args '{from: main, to: dev, tables: [shop.orders], mode: three_dot, limit: 10}'`
    it prints per table the rows added, removed and modified, the schema changes and the conflicts a merge
    of `to` into `from` would hit, then the first `limit` rows of each (branch_diff_summary).
    mode: three_dot (default between branches: what `to` changed since its merge base with `from`) or two_dot.

    In a model, a relation over one table's diff (a session temp view with a fresh name):
        select * from {{ branch_diff(ref('fct_orders'), 'main', 'dev') }}
    Columns: _diff_type ('added' | 'removed' | 'modified'), the table's columns (the new values; the old
    ones for removed rows), _diff_changed (the columns a modified key changed).
    `from` is a Python keyword: pass it by position, or as from='...' (it arrives in kwargs). -#}

{% macro branch_diff(table=none, from_version=none, to=none, mode=none, tables=none, limit=10) -%}
  {%- set from_version = kwargs.get('from', from_version) -%}
  {%- if flags.WHICH == 'run-operation' and execute and (table is none or table is string) -%}
    {%- do branch_diff_summary(from_version, to, tables or table, mode, limit) -%}
  {%- else -%}
    {{- return(branch_diff_relation(table, from_version, to, mode)) -}}
  {%- endif -%}
{%- endmacro %}


{% macro branch_diff_summary(from_version=none, to=none, tables=none, mode=none, limit=10) %}
  {%- set from_version = kwargs.get('from', from_version) -%}
  {%- if not from_version or not to -%}
    {{ exceptions.raise_compiler_error(
        "branch_diff needs two versions: --args '{from: main, to: dev}' (branches, commit ids or branch@time)") }}
  {%- endif -%}
  {{ print(adapter.branch_diff_summary(from_version, to, tables, mode, limit)) }}
{% endmacro %}


{% macro branch_diff_relation(table, from_version=none, to=none, mode=none) -%}
  {%- set from_version = kwargs.get('from', from_version) -%}
  {%- if table is none or table == '' or not from_version or not to -%}
    {{ exceptions.raise_compiler_error("branch_diff needs a table and two versions: branch_diff(ref('orders'), 'main', 'dev')") }}
  {%- endif -%}
  {%- if not execute -%}
    {{- return(api.Relation.create(identifier='branch_diff_placeholder')) -}}
  {%- endif -%}
  {%- if model is mapping and model.get('config', {}).get('materialized') == 'view' -%}
    {{ exceptions.raise_compiler_error(
        "branch_diff returns a relation that lives only while dbt runs: materialize "
        ~ model.get('name') ~ " as table, not view") }}
  {%- endif -%}
  {{- return(adapter.branch_diff_relation(table, from_version, to, mode)) -}}
{%- endmacro %}


{#- Restore one table on the target's branch to its state at a version, as one new commit:
    --args '{table: shop.fct_orders, to: <commit id | branch | branch@time>}' -#}
{% macro restore(table=none, to=none) %}
  {%- if not table or not to -%}
    {{ exceptions.raise_compiler_error("restore needs a table and a version: --args '{table: shop.orders, to: <commit>}'") }}
  {%- endif -%}
  {{ print(adapter.restore_table(table, to)) }}
{% endmacro %}
