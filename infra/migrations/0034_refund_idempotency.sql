-- Refund requests remember the caller's idempotency key (POST /agent/orders/{id}/refund `Idempotency-Key` or
-- `idempotency_key`; MCP request_refund `idempotency_key`), scoped to the order, and the request as sent
-- ({amount, reason}, an omitted value null): the same key and request answer the first record, the same key with
-- another request is 409 IDEMPOTENCY_KEY_CONFLICT (actors/store/commerce.ts proposeRefund).
ALTER TABLE order_refunds ADD COLUMN idempotency_key text, ADD COLUMN idempotency_request jsonb;
CREATE UNIQUE INDEX order_refunds_idempotency ON order_refunds (order_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
