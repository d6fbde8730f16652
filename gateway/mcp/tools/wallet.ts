/** The agent's custodial x402 wallet: the `wallet/<keyId>` actor's get and provision messages (same as REST). */
import { Type as T } from "@sinclair/typebox";
import { walletActor } from "../../../actors/wallet/index.ts";
import { defineTool } from "../registry.ts";
import { ownerId } from "./commerce.ts";
import { Open, Strict } from "./schemas.ts";

const Wallet = T.Object({ address: T.String(), network: T.String(), createdAt: T.Unknown() }, Open);

export const getWallet = defineTool({
  name: "get_wallet",
  title: "Get wallet",
  description: "Your custodial x402 wallet (address and CAIP-2 network). Answers a not_found error when none is provisioned yet; then call provision_wallet.",
  group: "account",
  input: T.Object({}, Strict),
  output: Wallet,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  auth: "key",
  scopes: ["checkout"],
  sandboxRefused: true,
  confirmation: false,
  async handler(_a, ctx) {
    const w = await ctx.svc.actors.ask(walletActor, ownerId(ctx), "get", {});
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
  async summarize(a) {
    return { summary: `Create an x402 wallet for this agent on ${a.network ?? "eip155:84532"}.` };
  },
  async handler(a, ctx) {
    const w = await ctx.svc.actors.ask(walletActor, ownerId(ctx), "provision", { network: a.network ?? "eip155:84532" });
    return { address: w.address, network: w.network, createdAt: w.createdAt };
  },
});
