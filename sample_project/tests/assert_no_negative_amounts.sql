-- singular test: an order never has a negative amount
select * from {{ ref('fct_orders') }} where amount < 0
