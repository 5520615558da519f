{#- Branch operations for `dbt run-operation NAME --args '{...}'` (argument names: SPEC section 5).
    Each prints a table (with dbt's print, so --quiet keeps it). `from` is a Python keyword, so it is read from kwargs. -#}

{% macro create_branch(name) %}
  {%- set source = kwargs.get('from') or target.branch -%}
  {%- if not name -%}
    {{ exceptions.raise_compiler_error("create_branch needs a name: --args '{name: dev, from: main}'") }}
  {%- endif -%}
  {%- set branches = adapter.create_branch(name, source) -%}
  {{ print("created branch " ~ name ~ " from " ~ source) }}
  {{ print(adapter.table_text(branches)) }}
{% endmacro %}

{% macro drop_branch(name, force=false) %}
  {%- if not name -%}
    {{ exceptions.raise_compiler_error("drop_branch needs a name: --args '{name: dev}'") }}
  {%- endif -%}
  {#- force: also drop a branch whose commits no other branch reaches (git branch -D) -#}
  {%- set branches = adapter.drop_branch(name, force) -%}
  {{ print("dropped branch " ~ name) }}
  {{ print(adapter.table_text(branches)) }}
{% endmacro %}

{% macro list_branches() %}
  {%- set branches = adapter.list_branches() -%}
  {{ print(adapter.table_text(branches)) }}
{% endmacro %}

{% macro branch_log(branch=none, limit=none) %}
  {%- set branch = branch or target.branch -%}
  {%- set commits = adapter.branch_log(branch, limit) -%}
  {{ print("commits on branch " ~ branch ~ " (newest first)") }}
  {{ print(adapter.table_text(commits)) }}
  {%- set read = adapter.branch_log_sources(branch, limit) -%}
  {%- if read %}{{ print(read) }}{% endif %}
{% endmacro %}

{#- MERGE BRANCH src TO dest (SPEC section 3): dest defaults to the target's branch.
    --args '{src: dev, dest: main, strategy: merge|fast_forward|auto|interactive|rebase,
             on_conflict: abort|ours|theirs|pause (or {table: mode}; rebase: skip|replace), dry_run: true}';
    --args '{dest: main, continue: true}' finishes a paused merge or resumes a stopped rebase. -#}
{% macro merge_branch(src=none, dest=none, strategy='merge', on_conflict='abort', dry_run=false, message=none) %}
  {%- set dest = dest or target.branch -%}
  {%- set drivers = branchspark_merge_drivers(dest) -%}
  {{ print(adapter.merge_branch(src, dest, strategy, on_conflict, dry_run, message, drivers, kwargs.get('continue', false),
                                views=branchspark_project_views())) }}
{% endmacro %}

{#- The project's view models as 'schema.alias': merge_branch publishes them with the tables (SPEC 5). -#}
{% macro branchspark_project_views() %}
  {%- set names = [] -%}
  {%- if execute -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'model' and node.config.materialized == 'view' -%}
      {%- do names.append((node.schema ~ '.' ~ (node.alias or node.name)) | lower) -%}
    {%- endfor -%}
  {%- endif -%}
  {{ return(names) }}
{% endmacro %}

{#- Zero-copy import (docs/import.md): the table at `source` (a Parquet directory, a Delta or an Iceberg table)
    becomes table `as` on `branch` (default: the target's) in one commit that writes no data file.
    --args '{source: /data/raw/events, as: raw.events, format: delta, version: 3, primary_key: [id]}'
    (`snapshot` for an Iceberg snapshot id; `as` is a Python keyword, so it is read from kwargs);
    `refresh: true` brings the source's later versions as commits of its own changes. -#}
{% macro import_table(source=none, branch=none, format=none, version=none, snapshot=none, primary_key=none,
                      message=none, refresh=false) %}
  {%- set name = kwargs.get('as') or kwargs.get('name') -%}
  {%- if not source or not name -%}
    {{ exceptions.raise_compiler_error("import_table needs source and as: --args '{source: /data/raw/events, as: raw.events}'") }}
  {%- endif -%}
  {{ print(adapter.import_table(source, name, branch, format, snapshot if snapshot is not none else version,
                                primary_key, message, refresh)) }}
{% endmacro %}
