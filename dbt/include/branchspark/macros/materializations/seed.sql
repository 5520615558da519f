{#- A seed: one commit that overwrites the table with the CSV, loaded as a typed DataFrame
    (empty cells are NULL, quotes need no escaping). -#}
{% materialization seed, adapter='branchspark' %}
  {%- set identifier = model['alias'] -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=identifier) -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set agate_table = load_agate_table() -%}
  {%- do store_result('agate_table', response='OK', agate_table=agate_table) -%}

  {% if old_relation is not none and old_relation.is_view %}
    {{ exceptions.raise_compiler_error("Cannot seed to '{}', it is a view".format(old_relation.render())) }}
  {% endif %}

  {{ branchspark_begin_build() }}

  {% set status = adapter.load_seed(target_relation, agate_table, config.get('column_types', {})) %}
  {% set rows_affected = agate_table.rows | length %}
  {% call noop_statement('main', status, 'INSERT', rows_affected) -%}
    -- seed {{ target_relation }}: {{ rows_affected }} rows, loaded as a DataFrame
  {%- endcall %}

  {{ branchspark_finish_build(target_relation) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
