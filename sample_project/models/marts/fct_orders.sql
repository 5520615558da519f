{{
    config(
        materialized='incremental',
        unique_key='order_id',
        incremental_strategy='merge',
        on_schema_change='append_new_columns'
    )
}}

select
    o.order_id,
    o.customer_id,
    c.country,
    o.order_date,
    o.status,
    o.amount
from {{ ref('stg_orders') }} o
join {{ ref('stg_customers') }} c on c.customer_id = o.customer_id
{% if is_incremental() %}
-- new orders, and orders whose status may have changed since the last build
where o.order_date >= (select date_sub(max(order_date), 3) from {{ this }})
{% endif %}
