{#- A view model: the view's SQL is stored on the branch and exposed as a session temp view. -#}
{% materialization view, adapter='branchspark' %}
  {%- set identifier = model['alias'] -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=identifier) -%}
  {%- set target_relation = this.incorporate(type='view') -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {% do adapter.begin_model_build(model) %}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}

  {% if old_relation is not none and not old_relation.is_view %}
    {% do adapter.drop_relation(old_relation) %}
  {% endif %}

  {% set status = adapter.build_view(target_relation, compiled_code) %}
  {% call noop_statement('main', status, status) -%}
    {{ get_create_view_as_sql(target_relation, compiled_code) }}
  {%- endcall %}

  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {% do adapter.commit_model_build() %}
  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
