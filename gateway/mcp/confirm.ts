/**
 * Human confirmation for write tools, through MCP elicitation.
 *
 * - A session whose client declared `elicitation` (form mode, or the older empty object) is asked with
 *   `elicitation/create` on the same response stream as the tool call: accept with `approve` true or absent → the
 *   tool proceeds; accept with `approve: false`, decline or cancel → HUMAN_CONFIRMATION_DECLINED (nothing changed);
 *   an elicitation that fails or times out (nobody answered), or an answer outside the requested schema
 *   (`approve: "false"`, or a key other than `approve`), → UPSTREAM_UNAVAILABLE confirmation_not_completed,
 *   retryable (nothing changed).
 * - Anything else (no capability, or a sessionless JSON-RPC call where the client's capabilities are unknown)
 *   → HUMAN_CONFIRMATION_REQUIRED with `details.approver`.
 * - URL mode (`openUrl`) shows the buyer a link, used for PENDING_EXTERNAL_CONFIRMATION when supported.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ElicitResultSchema, type ProgressNotification, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { fail } from "../../actors/runtime/errors.ts";
import type { ConfirmRequest } from "./registry.ts";

/** Who must approve: the human behind the credential (the key owner's end user). */
export const APPROVER = {
  approver: "human_user",
  who: "the person the agent acts for (owner of the agent key or OAuth grant)",
  how: "call again from an MCP client that declared the `elicitation` capability in a session, so the server can ask them",
};

/**
 * How long a human gets to answer. Past it the call ends UPSTREAM_UNAVAILABLE (reason confirmation_not_completed:
 * nobody answered, nothing changed, call again), not as declined.
 */
export const CONFIRM_TIMEOUT_MS = 5 * 60_000;

export interface Confirmer {
  confirm(req: ConfirmRequest): Promise<void>;
  openUrl(url: string, message: string): Promise<boolean>;
}

/** The path that cannot ask anyone (sessionless, or a client without the capability). */
export const cannotAsk: Confirmer = {
  async confirm(req) {
    throw fail("HUMAN_CONFIRMATION_REQUIRED", `Human approval needed: ${req.summary}`, { ...APPROVER, summary: req.summary, ...(req.facts ? { facts: req.facts } : {}) });
  },
  async openUrl() {
    return false;
  },
};

/**
 * An accepted answer matches the requested schema `{approve?: boolean}` (default true): no content, `{}` or a
 * boolean `approve` and nothing else. Anything else (`"false"`, `0`, `null`, an array) is not an answer to the
 * question, and neither is an object with another key (`{"approved": false}`, `{"confirm": "no"}`: review R3-10):
 * its `approve` being absent does not make it the empty default answer; it answers some other question, maybe "no".
 */
export function approvalAnswer(content: unknown): boolean {
  if (content === undefined) return true;
  if (typeof content !== "object" || content === null || Array.isArray(content)) return false;
  if (Object.keys(content).some((k) => k !== "approve")) return false;
  const approve = (content as { approve?: unknown }).approve;
  return approve === undefined || typeof approve === "boolean";
}

function renderMessage(req: ConfirmRequest): string {
  const facts = Object.entries(req.facts ?? {}).map(([k, v]) => `- ${k}: ${v}`);
  return [req.summary, ...facts, "", "Approve this action?"].join("\n");
}

/**
 * While a question waits, a call that carries a `progressToken` gets `notifications/progress` this often, so a client
 * using `resetTimeoutOnProgress` keeps waiting for the human past its request timeout (the SDK's default is 60 s).
 */
export const CONFIRM_PROGRESS_EVERY_MS = 20_000;

export interface ConfirmOptions {
  /**
   * Aborted when the tool call is cancelled (`notifications/cancelled`, e.g. the client's request timeout) or the
   * gateway shuts down: the question is withdrawn and the write does not start (audit A5 H1).
   */
  signal: AbortSignal;
  /** The call's `_meta.progressToken` and a way to send on the call's stream, if the client asked for progress. */
  progress?: { token: string | number; send: (n: ProgressNotification) => Promise<void> };
  progressEveryMs?: number;
}

/** Why the call's signal was aborted, for `details.error`. */
function abortReason(signal: AbortSignal): string {
  const r = signal.reason as { message?: unknown } | undefined;
  return String(r?.message ?? r ?? "aborted").slice(0, 200);
}

/**
 * The call ended (cancelled or gateway stopping) while the human was asked, or just as they approved: nothing is
 * written. A cancelled call's answer is never sent (the SDK drops it); a stopping gateway's is.
 */
function notCompletedByAbort(signal: AbortSignal): never {
  throw fail("UPSTREAM_UNAVAILABLE", "The call ended before the human's approval could be used (cancelled, or the server is stopping). Nothing changed; call again.", {
    reason: "confirmation_not_completed",
    dependency: "client_elicitation",
    error: abortReason(signal),
  });
}

export function elicitingConfirmer(server: Server, relatedRequestId: RequestId, opts: ConfirmOptions): Confirmer {
  const caps = server.getClientCapabilities()?.elicitation as { form?: object; url?: object } | undefined;
  if (!caps) return cannotAsk;
  const signal = opts.signal;
  // An empty capability object is the pre-2025-11-25 form-only declaration.
  const form = caps.form !== undefined || caps.url === undefined;
  const url = caps.url !== undefined;
  return {
    async confirm(req) {
      if (!form) return cannotAsk.confirm(req);
      if (signal.aborted) notCompletedByAbort(signal);
      const stopProgress = startProgress(opts);
      const result = await server.request(
        {
          method: "elicitation/create",
          params: {
            mode: "form",
            message: renderMessage(req),
            requestedSchema: {
              type: "object",
              properties: {
                approve: { type: "boolean", title: "Approve", description: req.summary, default: true },
              },
              required: [],
            },
          },
        },
        ElicitResultSchema,
        { relatedRequestId, timeout: CONFIRM_TIMEOUT_MS, signal },
      ).catch((err: unknown) => {
        if (signal.aborted) notCompletedByAbort(signal);
        // No answer in time, or the client failed the request: not approved, so nothing happens. But nobody
        // declined either (audit N10): HUMAN_CONFIRMATION_DECLINED means "stop", and an agent obeying it would never
        // ask again. The closed code table's retryable "a dependency did not answer" fits: the human's client.
        throw fail("UPSTREAM_UNAVAILABLE", "The human could not be asked: the client's elicitation did not complete. Nothing changed; call again.", {
          reason: "confirmation_not_completed",
          dependency: "client_elicitation",
          error: String((err as Error)?.message ?? err).slice(0, 200),
        });
      }).finally(stopProgress);
      // An answer that crossed the cancellation (or arrived as it was sent) must not start the write: the agent
      // already saw the call fail and may start over (audit A5 H1). A write that started before the cancel completes.
      if (signal.aborted) notCompletedByAbort(signal);
      if (result.action === "accept" && !approvalAnswer(result.content)) {
        // The server asks with server.request, so nothing checked the answer against requestedSchema (audit B F5):
        // `"false"` or `0` is no approval. Nobody said yes, and maybe not no either: not completed, nothing changed.
        throw fail("UPSTREAM_UNAVAILABLE", "The client's answer to the approval question does not match its schema ({approve: boolean}). Nothing changed; call again.", {
          reason: "confirmation_not_completed",
          dependency: "client_elicitation",
          error: "answer does not match requestedSchema",
        });
      }
      const approved = result.action === "accept" && (result.content as { approve?: boolean } | undefined)?.approve !== false;
      if (!approved) {
        throw fail("HUMAN_CONFIRMATION_DECLINED", "The human declined; nothing changed.", { action: result.action, summary: req.summary });
      }
    },
    async openUrl(link, message) {
      if (!url) return false;
      try {
        const res = await server.request(
          { method: "elicitation/create", params: { mode: "url", message, url: link, elicitationId: crypto.randomUUID() } },
          ElicitResultSchema,
          { relatedRequestId, timeout: CONFIRM_TIMEOUT_MS, signal },
        );
        return res.action === "accept" && !signal.aborted;
      } catch {
        return false;
      }
    },
  };
}

/**
 * Progress while the human thinks: at once, then every `progressEveryMs`. Returns the stop function. A failed send
 * (stream gone) is ignored: the call's own signal says whether it was cancelled.
 */
function startProgress(opts: ConfirmOptions): () => void {
  const p = opts.progress;
  if (!p) return () => {};
  let n = 0;
  const send = () => {
    n += 1;
    p.send({ method: "notifications/progress", params: { progressToken: p.token, progress: n, message: "waiting for the human's approval" } }).catch(() => {});
  };
  send();
  const timer = setInterval(send, opts.progressEveryMs ?? CONFIRM_PROGRESS_EVERY_MS);
  return () => clearInterval(timer);
}
