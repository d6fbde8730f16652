-- Rate-limit buckets that outlive their actor's activation (audit Z-1). Buckets live in their owner actor's memory
-- (actors/agent/buckets.ts); two kinds of row keep some of them across a restart, keyed by owner actor id
-- (`ip/<addr>`, `login/<e-mail digest>`, `agent/<key prefix>`, …) and bucket id:
--  * durable = true: the failed-log-in buckets (`ip:<addr>:login`, `login:<digest>`, `login-known:<digest>`). The
--    row is the count: every counted attempt and every give-back is written in the owner's turn before it answers
--    (actors/ip/index.ts `admitDurable`), so the count survives any restart, kill -9 included.
--  * durable = false: a hand-over. A clean stop of an actor host (SIGTERM, drain) writes each live activation's
--    used buckets here (actors/runtime/host.ts hand-over hook); the next activation of the owner, on whichever host,
--    loads them once (a snapshot: a count only ever as high as it was).
-- Times are epoch milliseconds of the actor hosts' clocks, as the in-memory buckets keep them. A row is dead once its
-- window has ended (`window_end`): those are deleted by the owners' writes (at most once a minute per process) and on
-- every clean stop, through the index below.
CREATE TABLE rate_limit_buckets (
  owner        text    NOT NULL,
  bucket_id    text    NOT NULL,
  window_start bigint  NOT NULL,
  window_end   bigint  NOT NULL,
  used         integer NOT NULL CHECK (used >= 0),
  durable      boolean NOT NULL,
  PRIMARY KEY (owner, bucket_id)
);
CREATE INDEX rate_limit_buckets_end ON rate_limit_buckets (window_end);
