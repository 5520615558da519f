{#-
  Relation DDL on branchspark: every change to a branch relation goes to the
  core (see impl.py), in the current model build's transaction. Session temp
  views (`model__dbt_tmp`, no schema) stay plain Spark temp views.
-#}

{%- macro branchspark__create_table_as(temporary, relation, compiled_code, language='sql') -%}
  {%- if language != 'sql' -%}
    {{ exceptions.raise_compiler_error("branchspark builds SQL models only (model language: " ~ language ~ ")") }}
  {%- endif -%}
  {%- if temporary -%}
    {{ create_temporary_view(relation, compiled_code) }}
  {%- else -%}
    {#- routed to the core's replace_table by the connection's statement router -#}
    create or replace table {{ relation }}
    {{ partition_cols(label="partitioned by") }}
    as
    {{ compiled_code }}
  {%- endif -%}
{%- endmacro -%}

{% macro branchspark__create_view_as(relation, sql) -%}
  create or replace view {{ relation }} as
    {{ sql }}
{%- endmacro %}

{% macro branchspark__drop_relation(relation) -%}
  {% do adapter.drop_branch_relation(relation) %}
{%- endmacro %}

{% macro branchspark__rename_relation(from_relation, to_relation) -%}
  {% do adapter.rename_branch_relation(from_relation, to_relation) %}
{%- endmacro %}

{% macro branchspark__create_schema(relation) -%}
  {% do adapter.create_branch_schema(relation) %}
{%- endmacro %}

{% macro branchspark__drop_schema(relation) -%}
  {% do adapter.drop_branch_schema(relation) %}
{%- endmacro %}

{% macro branchspark__list_relations_without_caching(relation) %}
  {#- relations of the schema on the target branch, from the core's snapshot -#}
  {{ return(adapter.list_relations_without_caching(relation)) }}
{% endmacro %}

{% macro branchspark__get_columns_in_relation(relation) -%}
  {{ return(adapter.get_columns_in_relation(relation)) }}
{%- endmacro %}

{% macro branchspark__list_schemas(database) -%}
  {{ return(adapter.list_schemas(database)) }}
{%- endmacro %}

{% macro branchspark__check_schema_exists(information_schema, schema) -%}
  {{ return(adapter.check_schema_exists(none, schema)) }}
{%- endmacro %}

{% macro branchspark__alter_relation_add_remove_columns(relation, add_columns, remove_columns) %}
  {% do adapter.alter_columns(relation, add_columns, remove_columns) %}
{% endmacro %}

{% macro branchspark__alter_column_type(relation, column_name, new_column_type) -%}
  {% do adapter.change_column_type(relation, column_name, new_column_type) %}
{%- endmacro %}

{% macro branchspark__create_columns(relation, columns) %}
  {% if columns | length > 0 %}
    {% do adapter.alter_columns(relation, columns, none) %}
  {% endif %}
{% endmacro %}

{% macro branchspark__post_snapshot(staging_relation) %}
  {% do adapter.drop_branch_relation(staging_relation) %}
{% endmacro %}

{% macro branchspark__truncate_relation(relation) -%}
  {% call statement('truncate_relation') -%}
    delete from {{ relation }}
  {%- endcall %}
{%- endmacro %}

{#- Column comments are not stored in the catalog yet: docs stay in dbt's manifest. -#}
{% macro branchspark__persist_docs(relation, model, for_relation, for_columns) -%}
{%- endmacro %}

{#- `dbt show` appends `limit N` to the query; a branch statement (`SHOW LOG`, `MERGE BRANCH dev`) takes none:
    the cursor fetches only N of its rows anyway. -#}
{% macro branchspark__get_limit_sql(sql, limit) %}
  {%- if limit is not none and adapter.is_branch_statement(sql) -%}
  {{ sql }}
  {%- else -%}
  {{ default__get_limit_sql(sql, limit) }}
  {%- endif -%}
{% endmacro %}
