-- ACP and UCP items name a variant by its id (gateway/bridge/common.ts resolveItemIds): the lookup of an id among
-- active products' variants (`variants @> '[{"id": …}]'`) uses this index instead of reading every product.
CREATE INDEX products_variant_ids ON products USING gin (variants jsonb_path_ops) WHERE active;
