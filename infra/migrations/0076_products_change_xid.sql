-- The search catch-up finds every product write that committed since its last pass, however late it committed
-- (audit Z-2). It used to re-read `updated_at > watermark − 5 s`, but updated_at is now(), the writing
-- transaction's START time: a write that committed more than 5 s after it began (a lock wait, a stalled connection,
-- a host paused mid-transaction) fell behind a watermark other writes had already moved, and when its
-- best-effort catalog.changed event was lost too, search kept the old row until the gateway restarted.
--
-- `change_xid` is the id of the transaction that last changed the product (set by the trigger below, so no product
-- write has to name it). Transaction ids are handed out in order, so a catch-up that reads
-- `change_xid >= pg_snapshot_xmin(<a snapshot taken before the previous pass read>)` sees every write that was not yet
-- committed when the previous pass read, whatever its start time; the horizon only stays back while a transaction
-- that writes is open, never for one that only reads (search/service.ts `catchUp`, docs/search.md).
--
-- A hold or release of units by a checkout (only reserved_quantity / variant_reserved change) is not a catalog
-- change: it keeps the row's change_xid, so the catch-up does not re-index every product a checkout touched (it
-- re-reads their stock separately). Rows written before this migration keep NULL: every gateway loads them whole
-- at start-up, and their next write sets the column.
ALTER TABLE products ADD COLUMN change_xid xid8;

CREATE FUNCTION products_change_xid() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  o products;
BEGIN
  IF TG_OP = 'UPDATE' THEN
    o := OLD;
    o.reserved_quantity := NEW.reserved_quantity;
    o.variant_reserved := NEW.variant_reserved;
    o.change_xid := NEW.change_xid;
    IF o IS NOT DISTINCT FROM NEW THEN
      RETURN NEW; -- a hold or a release only (or nothing at all)
    END IF;
  END IF;
  NEW.change_xid := pg_current_xact_id();
  RETURN NEW;
END $$;

CREATE TRIGGER products_change_xid BEFORE INSERT OR UPDATE ON products
  FOR EACH ROW EXECUTE FUNCTION products_change_xid();

CREATE INDEX products_change_xid ON products (change_xid);
