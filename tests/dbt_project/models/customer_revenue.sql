{{ config(materialized='table', duplicate_key=['customer_id'], distributed_by=['customer_id'], buckets=2) }}

select c.customer_id,
       c.name,
       count(o.order_id) as order_count,
       coalesce(sum(case when o.status != 'returned' then o.amount end), 0) as revenue
from {{ ref('stg_customers') }} c
left join {{ ref('orders') }} o on o.customer_id = c.customer_id
group by c.customer_id, c.name
