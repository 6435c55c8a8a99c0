-- depends_on: {{ ref('order_updates') }}
{{ config(materialized='incremental', unique_key=['order_id'], distributed_by=['order_id'], buckets=2) }}

{% if is_incremental() %}
-- later runs merge the changed and new orders into the UNIQUE KEY table
select order_id, customer_id, status, amount, ordered_at from {{ ref('order_updates') }}
{% else %}
select order_id, customer_id, status, amount, ordered_at from {{ ref('orders') }}
{% endif %}
