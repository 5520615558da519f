select
    order_id,
    customer_id,
    ordered_at,
    cast(ordered_at as date) as order_date,
    coalesce(status, 'unknown') as status,   -- the seed has an empty (NULL) status
    amount
from {{ ref('raw_orders') }}
