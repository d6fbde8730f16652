-- Price history bounded per product (review Session 14 "Search and reads (P)"; docs/catalog.md "Price history").
-- Until now every catalog write that changed a price added a row, with no retention: a merchant re-pricing one
-- product a million times left a million rows, and a read of its window scanned them all (~2 s at 1.1M).
--
-- Write side (actors/store/index.ts ingestCatalog): a row is one hour of one currency of one product (the hour on the
-- epoch's grid: the finest span the read answers, 1/720 of 30 days). A write in the same hour and currency as the
-- product's latest row of that currency folds into it: the row's price and time become the write's (the hour's last
-- price, at its own time, as the read answers it) and these columns keep what the read needs of the observations it
-- replaced. NULL in all three is a row of one observation (every row written before this migration): its price.
--   lo_minor, hi_minor  the lowest and highest price observed within the row's hour (lowest/highest stay exact)
--   first_minor         the first price observed within it (the window's opening price when nothing precedes it)
ALTER TABLE product_price_history
  ADD COLUMN lo_minor bigint,
  ADD COLUMN hi_minor bigint,
  ADD COLUMN first_minor bigint;

-- Retention (infra/retention.ts `product_price_history`): rows older than the longest window (90 days) and a day,
-- but for each product's last one before that cut (the price a 90-day window opens at), go. The rule walks old rows
-- oldest first through this index, as a keyset within a run, so each run reads every old row once (those it keeps:
-- one per product at most) and never the recent ones. Built here in one scan of the table (about a second per million
-- rows; catalog writes wait for it); on a very large table, build it first with CREATE INDEX CONCURRENTLY under the
-- same name and definition and this statement does nothing (docs/operations.md "Start order").
CREATE INDEX IF NOT EXISTS product_price_history_time ON product_price_history (recorded_at, id);
