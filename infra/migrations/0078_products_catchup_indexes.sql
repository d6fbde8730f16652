-- The search catch-up's indexes (review RS-3/4/5).
--
-- `products_updated_at` (0020: "the search indexer and freshness checks walk recent changes") has no reader left:
-- the catch-up follows `change_xid` since 0076, and nothing else filters or orders products by updated_at. It only
-- cost every catalog write an index entry: dropped.
--
-- The catch-up scans `(change_xid, id)` in keyset pages from its horizon, and reads the full row only where
-- change_xid differs from the one it applied last (search/service.ts `catchUp`). An index on both columns serves
-- that walk in order, page by page, without a sort of everything past the horizon (and, with the visibility map
-- set, without the heap); it replaces 0076's single-column index, which it covers.
DROP INDEX IF EXISTS products_updated_at;
CREATE INDEX products_change_xid_id ON products (change_xid, id);
DROP INDEX IF EXISTS products_change_xid;
