-- Addresses an account has signed in from with its password (gateway/login.ts, known devices): an attempt from
-- one of them, within 30 days of its last success, passes a full per-account log-in bucket, so guessers from
-- other addresses cannot lock the owner out. Both columns are keyed digests (HMAC under a key derived from
-- SECRET_KEY): no e-mail or address is stored. Rows of an account older than 30 days go with its next success.
CREATE TABLE login_known_addresses (
  email_digest    text        NOT NULL,
  address_digest  text        NOT NULL,
  last_success_at timestamptz NOT NULL,
  PRIMARY KEY (email_digest, address_digest)
);
CREATE INDEX login_known_addresses_age ON login_known_addresses (last_success_at);
