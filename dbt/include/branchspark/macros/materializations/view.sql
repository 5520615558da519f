{#- A view model: the view's SQL is stored on the branch and exposed as a session temp view. -#}
{% materialization view, adapter='branchspark' %}
  {%- set identifier = model['alias'] -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=identifier) -%}
  {%- set target_relation = this.incorporate(type='view') -%}

  {{ branchspark_begin_build() }}

  {% if old_relation is not none and not old_relation.is_view %}
    {% do adapter.drop_relation(old_relation) %}
  {% endif %}

  {% set status = adapter.build_view(target_relation, compiled_code) %}
  {% call noop_statement('main', status, status) -%}
    {{ get_create_view_as_sql(target_relation, compiled_code) }}
  {%- endcall %}

  {{ branchspark_finish_build(target_relation) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
