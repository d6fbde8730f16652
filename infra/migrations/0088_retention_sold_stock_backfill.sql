-- The data half of 0087 (review V1-1), in its own transaction: 0087 changes the schema under its table locks and
-- commits them at once; this file takes no table lock that the service's statements wait for (ROW EXCLUSIVE on
-- `stock_reservations`, ACCESS SHARE on `orders`), and row locks only on rows nothing else writes any more: committed
-- reservations of closed orders, whose only other writer is the retention rule (which deletes only stamped rows), and
-- returned reservations. Checkout, cancels and refunds run on while it does. It takes about 30 s per million sold
-- reservations of closed orders (reviews V1, R2: 28–30 s); the start-up that applies it waits for it, and so do
-- other hosts starting at the same time (the migrations' advisory lock), while hosts already running serve on. The
-- runner applies a file in one transaction, so it cannot commit in batches; on a very large history, apply it in a
-- quiet window (docs/operations.md "Start order").

-- Committed reservations of orders closed before 0087 (shipped, delivered, refunded, canceled): the order's last change,
-- at or after the close (so never early). A row 0087's trigger stamped meanwhile (`order_closed_at` set) keeps its
-- stamp; an order closing while this runs is stamped by the trigger (this statement reads it as still open).
UPDATE stock_reservations r SET order_closed_at = o.updated_at
FROM orders o
WHERE o.id = r.order_id AND r.status = 'committed' AND r.order_closed_at IS NULL AND o.status NOT IN ('pending', 'paid', 'fulfilled');

-- A `returned` reservation (its units given back by returnSoldStock; its order canceled or refunded, both final) is no
-- longer kept as its order's last attempt: a replay of its id is answered the same without the row (priorOf's fallback
-- reads the order's intent_id as held, and held, committed and returned all answer "begun before"). Only a `released`
-- last attempt needs its row (it answers `conflict`; review RB-1). Rows 0085's rule marked are candidates again.
UPDATE stock_reservations SET kept_as_last_attempt = false WHERE status = 'returned' AND kept_as_last_attempt;
