{#- A table model: one commit that overwrites the table on the branch (replace_table). -#}
{% materialization table, adapter='branchspark' %}
  {%- set identifier = model['alias'] -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=identifier) -%}
  {%- set target_relation = this.incorporate(type='table') -%}

  {{ branchspark_begin_build() }}

  {% if old_relation is not none and old_relation.is_view %}
    {% do adapter.drop_relation(old_relation) %}
  {% endif %}

  {% set status = adapter.build_table(target_relation, compiled_code, config.get('partition_by')) %}
  {% call noop_statement('main', status, status) -%}
    {{ create_table_as(False, target_relation, compiled_code) }}
  {%- endcall %}

  {{ branchspark_finish_build(target_relation) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
