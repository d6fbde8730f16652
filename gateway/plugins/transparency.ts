/**
 * Spec, common rules: every response of an agent-facing surface carries X-Agent-Commerce and X-Initiated-By;
 * transactional or state-changing responses (any non-safe method) also carry X-AI-Act-Transparency.
 * Applied by the edge hook (gateway/plugins/edge.ts) so even errors, 404s and rate-limit refusals carry them.
 */
const SAFE = new Set(["GET", "HEAD", "OPTIONS"]);

export function applyTransparencyHeaders(method: string, headers: Record<string, string | number>): void {
  headers["x-agent-commerce"] = "1";
  headers["x-initiated-by"] = "ai-agent";
  if (!SAFE.has(method.toUpperCase())) headers["x-ai-act-transparency"] = "agent-initiated-transaction";
}
