/** The agent's custodial x402 wallet: the `wallet/<keyId>` actor's get and provision messages (same as REST). */
import { Type as T } from "@sinclair/typebox";
import { ActorError, fail } from "../../../actors/runtime/errors.ts";
import { walletActor } from "../../../actors/wallet/index.ts";
import { defineTool, type ToolContext } from "../registry.ts";
import { ownerId } from "./commerce.ts";
import { Open, Strict } from "./schemas.ts";

/**
 * The wallet actor answers REST's `not_found` / `conflict`; MCP answers from the spec's closed tool-error table
 * (audit N1): no wallet yet is PRECONDITION_NOT_MET (the step to take first), a second one NOT_ELIGIBLE.
 */
async function walletOf(ctx: ToolContext) {
  try {
    return await ctx.svc.actors.ask(walletActor, ownerId(ctx), "get", {});
  } catch (err) {
    if (err instanceof ActorError && err.code === "not_found") return null;
    throw err;
  }
}

const Wallet = T.Object({ address: T.String(), network: T.String(), createdAt: T.Unknown() }, Open);

export const getWallet = defineTool({
  name: "get_wallet",
  title: "Get wallet",
  description: "Your custodial x402 wallet (address and CAIP-2 network). Answers PRECONDITION_NOT_MET (details.required_step = provision_wallet) when none is provisioned yet; then call provision_wallet.",
  group: "account",
  input: T.Object({}, Strict),
  output: Wallet,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  auth: "key",
  scopes: ["checkout"],
  sandboxRefused: true,
  confirmation: false,
  errors: { PRECONDITION_NOT_MET: "no wallet provisioned yet (details.required_step = provision_wallet)" },
  async handler(_a, ctx) {
    const w = await walletOf(ctx);
    if (!w) throw fail("PRECONDITION_NOT_MET", "This agent has no x402 wallet yet; call provision_wallet.", { required_step: "provision_wallet" });
    return { address: w.address, network: w.network, createdAt: w.createdAt };
  },
});

export const provisionWallet = defineTool({
  name: "provision_wallet",
  title: "Provision wallet",
  description:
    "Create your custodial x402 settlement wallet (one per agent identity) on eip155:84532 (test network, default) or " +
    "eip155:8453 (mainnet). The private key never leaves the service. Asks the human to approve.",
  group: "account",
  input: T.Object({ network: T.Optional(T.Union([T.Literal("eip155:84532"), T.Literal("eip155:8453")])) }, Strict),
  output: Wallet,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  auth: "key",
  scopes: ["checkout"],
  sandboxRefused: true,
  confirmation: true,
  errors: { NOT_ELIGIBLE: "the agent already has a wallet (details.reason = wallet_exists, details.address); answered before the human is asked" },
  async summarize(a, ctx) {
    // one wallet per agent: say so before asking the human to approve a second one
    const existing = await walletOf(ctx);
    if (existing) throw alreadyProvisioned(existing);
    return { summary: `Create an x402 wallet for this agent on ${a.network ?? "eip155:84532"}.` };
  },
  translate: { conflict: "NOT_ELIGIBLE" },
  async handler(a, ctx) {
    const w = await ctx.svc.actors.ask(walletActor, ownerId(ctx), "provision", { network: a.network ?? "eip155:84532" });
    return { address: w.address, network: w.network, createdAt: w.createdAt };
  },
});

function alreadyProvisioned(w: { address: string; network: string }) {
  return fail("NOT_ELIGIBLE", "This agent already has an x402 wallet; get_wallet returns it.", { reason: "wallet_exists", address: w.address, network: w.network });
}
