-- The plan an agent key is capped at (review R2-1, R2-2): the owning account's plan when the key was minted, then
-- each plan an operator sets (PUT /api/v1/admin/users/plan sends it to the key's actor). A key has a feature only
-- when its tier and this plan both include it, so a SANDBOX key of a STARTER account no longer has GROWTH's
-- features. NULL: no cap (an operator's key; operators mint any tier).
ALTER TABLE agent_keys ADD COLUMN plan text NULL CHECK (plan IN ('STARTER', 'GROWTH', 'PRO', 'ENTERPRISE'));

-- Keys of merchant accounts minted before this migration: the account's plan, or the key's own tier when it is
-- above the plan (a key minted before plans existed keeps what it was given until the next plan change caps it).
UPDATE agent_keys k
SET plan = CASE
  WHEN k.tier = 'SANDBOX' THEN u.plan
  WHEN array_position(ARRAY['STARTER', 'GROWTH', 'PRO', 'ENTERPRISE'], k.tier)
       > array_position(ARRAY['STARTER', 'GROWTH', 'PRO', 'ENTERPRISE'], u.plan) THEN k.tier
  ELSE u.plan
END
FROM users u
WHERE u.id = k.user_id AND u.role = 'merchant';

-- Counting an account's live keys (AGENT_KEYS_MAX_LIVE) reads only its unrevoked rows.
CREATE INDEX agent_keys_user_live_idx ON agent_keys (user_id) WHERE revoked_at IS NULL;
