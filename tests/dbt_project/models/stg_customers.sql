{{ config(materialized='view') }}

select customer_id, name, upper(country) as country
from {{ ref('customers') }}
