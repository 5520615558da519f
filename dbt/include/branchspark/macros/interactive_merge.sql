{#- Paused merges, conflict relations and merge drivers (SPEC 3.6; docs/interactive-merge.md).
    merge_branch with on_conflict: pause or strategy: interactive pauses; continue: true finishes. -#}

{% macro merge_status(dest=none) %}
  {{ print(adapter.paused_merge('merge_status', dest or target.branch)) }}
{% endmacro %}

{#- --args '{dest: main, table: shop.orders, take: ours | theirs}' resolves in bulk;
    --args '{dest: main, table: shop.orders, where: "id = 3", set: {merged_amount: "their_amount * 2"}}'
    sets merged values with Spark SQL (CONFLICT() marks rows); table 'schema' is the schema-conflicts relation. -#}
{% macro resolve_conflicts(dest=none, table=none, take=none, where=none) %}
  {%- if not take and not kwargs.get('set') -%}
    {{ exceptions.raise_compiler_error("resolve_conflicts needs take (ours | theirs) or set: --args '{dest: main, table: shop.orders, take: theirs}'") }}
  {%- endif -%}
  {{ print(adapter.paused_merge('resolve_conflicts', dest or target.branch, table, take, where, kwargs.get('set'))) }}
{% endmacro %}

{#- The conflict relation of `table` ('schema': the schema conflicts) in the merge paused on dest, as a
    relation name for SQL: select * from {{ merge_conflicts('shop.orders', 'main') }} where conflict -#}
{% macro merge_conflicts(table, dest=none) %}
  {{ return(adapter.paused_merge('conflict_view', dest or target.branch, table)) }}
{% endmacro %}

{% macro abort_merge(dest=none) %}
  {{ print(adapter.paused_merge('abort_merge', dest or target.branch)) }}
{% endmacro %}

{#- table -> {column: merged SQL}: every table whose model names a merge driver (config merge_driver, or
    meta.merge_driver) or that var('merge_drivers', {table: macro}) maps. The macro is called with base, ours
    and theirs (column -> SQL expression) and returns {column: SQL} (and optionally _conflict: a boolean SQL). -#}
{% macro branchspark_merge_drivers(dest) %}
  {%- set names = {} -%}
  {%- if execute -%}
    {%- for node in graph.nodes.values() -%}
      {%- set driver = node.config.get('merge_driver') or (node.config.get('meta') or {}).get('merge_driver') -%}
      {%- if driver -%}
        {%- do names.update({(node.schema ~ '.' ~ (node.alias or node.name)) | lower: driver}) -%}
      {%- endif -%}
    {%- endfor -%}
  {%- endif -%}
  {%- do names.update(var('merge_drivers', {})) -%}
  {%- set drivers = {} -%}
  {%- for table, macro_name in names.items() -%}
    {%- set sides = adapter.paused_merge('merge_driver_sides', dest, table) -%}
    {%- if sides -%}
      {%- if macro_name not in context -%}
        {{ exceptions.raise_compiler_error("merge driver '" ~ macro_name ~ "' of " ~ table ~ " is not a macro of this project") }}
      {%- endif -%}
      {%- do drivers.update({table: context[macro_name](sides['base'], sides['ours'], sides['theirs'])}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(drivers) }}
{% endmacro %}
