select
    customer_id,
    name as customer_name,
    lower(email) as email,
    country,
    updated_at
from {{ ref('raw_customers') }}
