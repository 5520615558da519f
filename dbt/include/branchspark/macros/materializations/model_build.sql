{#- What every materialization does around its write: pre-hooks before and inside the build, and at its end
    the docs, the post-hooks inside the build, the build's one commit, and the post-hooks after it. A
    materialization with work between the commit and the later post-hooks (a snapshot's clean-up) passes it
    as the body of a call block. -#}

{% macro branchspark_begin_build() %}
  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {% do adapter.begin_model_build(model) %}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}
{% endmacro %}

{% macro branchspark_finish_build(target_relation) %}
  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {% do adapter.commit_model_build() %}
  {% if caller is defined %}{{ caller() }}{% endif %}
  {{ run_hooks(post_hooks, inside_transaction=False) }}
{% endmacro %}
