/**
 * Spec, common rules: every response of an agent-facing surface carries X-Agent-Commerce and X-Initiated-By;
 * transactional or state-changing responses (any non-safe method) also carry X-AI-Act-Transparency.
 * Set in onRequest so even errors, 404s and rate-limit refusals carry them.
 */
import { Elysia } from "elysia";

const SAFE = new Set(["GET", "HEAD", "OPTIONS"]);

export function applyTransparencyHeaders(method: string, headers: Record<string, string | number>): void {
  headers["x-agent-commerce"] = "1";
  headers["x-initiated-by"] = "ai-agent";
  if (!SAFE.has(method.toUpperCase())) headers["x-ai-act-transparency"] = "agent-initiated-transaction";
}

export const transparency = new Elysia({ name: "transparency" }).onRequest(({ request, set }) => {
  applyTransparencyHeaders(request.method, set.headers as Record<string, string | number>);
});
