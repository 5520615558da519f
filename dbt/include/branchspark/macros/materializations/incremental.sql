{#- An incremental model: one commit per build (per batch for microbatch).
    First build / full refresh: replace_table. Later builds apply the new rows
    (a session temp view) with the strategy's core operations:
      append -> insert, merge -> upsert on unique_key, delete+insert -> delete + insert,
      insert_overwrite -> overwrite of the partitions (partition_by), microbatch -> the
      batch's event-time window replaced. -#}

{% macro branchspark_incremental_strategy(raw_strategy, unique_key) %}
  {%- set strategy = raw_strategy or ('merge' if unique_key else 'append') -%}
  {%- set supported = ['append', 'merge', 'delete+insert', 'insert_overwrite', 'microbatch'] -%}
  {%- if strategy not in supported -%}
    {% do exceptions.raise_compiler_error(
      "Invalid incremental strategy provided: " ~ strategy ~ "\n    Expected one of: '" ~ supported | join("', '") ~ "'") %}
  {%- endif -%}
  {%- if strategy == 'microbatch' and not config.get('event_time') -%}
    {% do exceptions.raise_compiler_error("microbatch models need an `event_time` config") %}
  {%- endif -%}
  {{ return(strategy) }}
{% endmacro %}

{% macro branchspark_merge_update_columns(strategy) %}
  {#- the columns a merge updates on matched rows; none = all -#}
  {%- set update_columns = config.get('merge_update_columns') -%}
  {%- set exclude_columns = config.get('merge_exclude_columns') -%}
  {%- if update_columns and exclude_columns -%}
    {{ exceptions.raise_compiler_error('Model cannot specify merge_update_columns and merge_exclude_columns. Please update model to use only one config') }}
  {%- endif -%}
  {%- if strategy != 'merge' or not (update_columns or exclude_columns) -%}
    {{ return(none) }}
  {%- endif -%}
  {%- if update_columns -%}
    {{ return(update_columns) }}
  {%- endif -%}
  {%- set excluded = exclude_columns | map('lower') | list -%}
  {%- set columns = [] -%}
  {%- for column in adapter.get_columns_in_relation(this) -%}
    {%- if column.name | lower not in excluded -%}
      {%- do columns.append(column.name) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(columns) }}
{% endmacro %}

{% materialization incremental, adapter='branchspark' -%}
  {%- set unique_key = config.get('unique_key') -%}
  {%- set strategy = branchspark_incremental_strategy(config.get('incremental_strategy'), unique_key) -%}
  {%- set partition_by = config.get('partition_by') -%}
  {%- set on_schema_change = incremental_validate_on_schema_change(config.get('on_schema_change'), default='ignore') -%}
  {%- set incremental_predicates = config.get('predicates', none) or config.get('incremental_predicates', none) -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set tmp_relation = make_temp_relation(this) -%}

  {{ branchspark_begin_build() }}

  {%- if existing_relation is none or existing_relation.is_view or should_full_refresh() -%}
    {% if existing_relation is not none and existing_relation.is_view %}
      {% do adapter.drop_relation(existing_relation) %}
    {% endif %}
    {#- a unique_key declares the table's primary key -#}
    {% set status = adapter.build_table(target_relation, compiled_code, partition_by,
                                        unique_key if strategy == 'merge' else none) %}
    {% set main_sql = create_table_as(False, target_relation, compiled_code) %}
  {%- else -%}
    {% call statement('create_tmp_relation') -%}
      {{ create_table_as(True, tmp_relation, compiled_code) }}
    {%- endcall %}
    {% do process_schema_changes(on_schema_change, tmp_relation, existing_relation) %}
    {% set batch = model.get('batch') or {} %}
    {% set status = adapter.write_incremental(
        strategy, target_relation, tmp_relation,
        unique_key=unique_key,
        partition_by=partition_by,
        update_columns=branchspark_merge_update_columns(strategy),
        predicates=incremental_predicates,
        event_time=config.get('event_time'),
        batch_start=batch.get('event_time_start'),
        batch_end=batch.get('event_time_end')) %}
    {% do adapter.drop_branch_relation(tmp_relation) %}
    {% set main_sql = "-- " ~ strategy ~ " of " ~ tmp_relation ~ " into " ~ target_relation ~ "\n" ~ compiled_code %}
  {%- endif -%}

  {% call noop_statement('main', status, status) -%}
    {{ main_sql }}
  {%- endcall %}

  {{ branchspark_finish_build(target_relation) }}

  {{ return({'relations': [target_relation]}) }}
{%- endmaterialization %}
