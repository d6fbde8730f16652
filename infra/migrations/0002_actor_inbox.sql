-- Replies of state-changing messages, kept until the caller can no longer retry (its deadline + a margin).
-- Written in the same statement as the fenced state update, read only for resends (attempt > 1), so a retry
-- that reaches a new owner after a failover is answered with the first reply however busy the actor was.
-- Supersedes actor_state.recent (a fixed window of 32 replies that a hot actor could cycle through).
CREATE TABLE actor_inbox (
  kind       text        NOT NULL,
  id         text        NOT NULL,
  msg_id     text        NOT NULL,
  reply      jsonb       NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (kind, id, msg_id)
);
CREATE INDEX actor_inbox_expiry ON actor_inbox (expires_at);
