with orders as (
    select customer_id, count(*) as order_count, sum(amount) as lifetime_value
    from {{ ref('stg_orders') }}
    where status != 'returned'
    group by customer_id
)
select
    c.customer_id,
    c.customer_name,
    c.email,
    c.country,
    coalesce(o.order_count, 0) as order_count,
    coalesce(o.lifetime_value, 0) as lifetime_value
from {{ ref('stg_customers') }} c
left join orders o on o.customer_id = c.customer_id
