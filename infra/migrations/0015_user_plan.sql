-- An account's plan: the highest tier of the agent keys it may mint (POST /api/v1/agent-keys; audit A2-F2, any
-- user could mint ENTERPRISE keys). SANDBOX is outside the ladder and always allowed; operators mint any tier
-- whatever their plan. An operator changes a plan with PUT /api/v1/admin/users/plan. Keys already minted keep
-- their tier when a plan is lowered.
ALTER TABLE users ADD COLUMN plan text NOT NULL DEFAULT 'STARTER'
  CHECK (plan IN ('STARTER', 'GROWTH', 'PRO', 'ENTERPRISE'));
