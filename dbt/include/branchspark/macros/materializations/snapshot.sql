{#- A snapshot: dbt's own staging SQL (timestamp and check strategies) computes the
    changes; they are applied as one commit: changed rows get dbt_valid_to and new
    versions are added (one core upsert on dbt_scd_id). -#}
{% materialization snapshot, adapter='branchspark' %}
  {%- set target_table = model.get('alias', model.get('name')) -%}
  {%- set strategy_name = config.get('strategy') -%}
  {%- set unique_key = config.get('unique_key') -%}

  {% if not adapter.check_schema_exists(model.database, model.schema) %}
    {% do create_schema(api.Relation.create(schema=model.schema)) %}
  {% endif %}

  {% set target_relation_exists, target_relation = get_or_create_relation(
          database=none,
          schema=model.schema,
          identifier=target_table,
          type='table') -%}

  {%- if not target_relation.is_table -%}
    {% do exceptions.relation_wrong_type(target_relation, 'table') %}
  {%- endif -%}

  {{ branchspark_begin_build() }}

  {% set strategy_macro = strategy_dispatch(strategy_name) %}
  {% set strategy = strategy_macro(model, "snapshotted_data", "source_data", model['config'], target_relation_exists) %}
  {% set columns = config.get("snapshot_table_column_names") or get_snapshot_table_column_names() %}

  {% if not target_relation_exists %}
      {% set build_or_select_sql = build_snapshot_table(strategy, model['compiled_code']) %}
      {{ check_time_data_types(build_or_select_sql) }}
      {% set status = adapter.build_table(target_relation, build_or_select_sql) %}
      {% set main_sql = create_table_as(False, target_relation, build_or_select_sql) %}
  {% else %}
      {{ adapter.assert_valid_snapshot_target_given_strategy(target_relation, columns, strategy) }}

      {% set build_or_select_sql = snapshot_staging_table(strategy, sql, target_relation) %}
      {{ check_time_data_types(build_or_select_sql) }}
      {% set staging_table = build_snapshot_staging_table(strategy, sql, target_relation) %}

      {% set remove_columns = ['dbt_change_type', 'DBT_CHANGE_TYPE', 'dbt_unique_key', 'DBT_UNIQUE_KEY'] %}
      {% if unique_key | is_list %}
          {% for key in strategy.unique_key %}
              {{ remove_columns.append('dbt_unique_key_' + loop.index|string) }}
              {{ remove_columns.append('DBT_UNIQUE_KEY_' + loop.index|string) }}
          {% endfor %}
      {% endif %}

      {% set missing_columns = adapter.get_missing_columns(staging_table, target_relation)
                                   | rejectattr('name', 'in', remove_columns)
                                   | list %}
      {% do create_columns(target_relation, missing_columns) %}

      {% set status = adapter.apply_snapshot(target_relation, staging_table, columns, config.get('dbt_valid_to_current')) %}
      {% set main_sql = "-- snapshot changes from " ~ staging_table ~ " applied to " ~ target_relation ~ "\n" ~ build_or_select_sql %}
  {% endif %}

  {% call noop_statement('main', status, status) -%}
    {{ main_sql }}
  {%- endcall %}

  {% call branchspark_finish_build(target_relation) %}
    {% if staging_table is defined %}
      {% do post_snapshot(staging_table) %}
    {% endif %}
  {% endcall %}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
