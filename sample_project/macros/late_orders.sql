{#- A change made only on the target's branch: two late orders arrive. -#}
{% macro add_late_orders() %}
  {% call statement('add_late_orders') %}
    insert into {{ ref('raw_orders') }} (order_id, customer_id, ordered_at, status, amount)
    values (1008, 3, timestamp'2024-01-11 09:00:00', 'completed', 99.90),
           (1009, 5, timestamp'2024-01-11 10:30:00', null, 12.00)
  {% endcall %}
  {{ print("added 2 late orders to " ~ ref('raw_orders') ~ " on branch " ~ target.branch) }}
{% endmacro %}
