-- Accounts: operators run the service, merchants own stores. Passwords are argon2id hashes (Bun.password).
CREATE TABLE users (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  email         text NOT NULL UNIQUE,
  password_hash text NOT NULL,
  role          text NOT NULL CHECK (role IN ('operator', 'merchant')),
  created_at    timestamptz NOT NULL DEFAULT now()
);
