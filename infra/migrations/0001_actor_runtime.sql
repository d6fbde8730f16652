-- Durable actor state. `version` fences writes: a turn commits only if the version it loaded is still current,
-- so a host that lost ownership of an actor without knowing it cannot overwrite newer state.
-- `recent` keeps the replies of the last messages that changed durable state, keyed by message id, so a caller
-- retrying a write (same message id) after a timeout or a host move gets the first reply instead of a second apply.
CREATE TABLE actor_state (
  kind       text        NOT NULL,
  id         text        NOT NULL,
  version    bigint      NOT NULL,
  state      jsonb       NOT NULL,
  recent     jsonb       NOT NULL DEFAULT '[]'::jsonb,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (kind, id)
);

-- Durable reminders: re-armed after a restart because they live here, not in a timer.
CREATE TABLE actor_reminders (
  kind     text        NOT NULL,
  id       text        NOT NULL,
  name     text        NOT NULL,
  due_at   timestamptz NOT NULL,
  payload  jsonb       NOT NULL DEFAULT 'null'::jsonb,
  PRIMARY KEY (kind, id, name)
);
CREATE INDEX actor_reminders_due ON actor_reminders (due_at);
