/**
 * The agent's custodial x402 wallet: POST /api/v1/agent/wallet/provision, GET /api/v1/agent/wallet. One message to
 * `wallet/<agentKeyId>` each; the actor owns the key and never returns it.
 */
import { Elysia, t } from "elysia";
import { walletActor } from "../../actors/wallet/index.ts";
import { DEFAULT_WALLET_NETWORK, WALLET_NETWORKS } from "../../actors/wallet/keys.ts";
import { errorResponses, ok, SuccessEnvelope } from "../envelope.ts";
import { agentAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { optionalObjectBody } from "./optional-body.ts";
import { strictJsonBody } from "./strict-body.ts";

const sec = [{ agentApiKey: [] }];

const WalletSchema = t.Object({
  address: t.String({ description: "EVM address (checksummed)." }),
  network: t.String({ description: "CAIP-2 chain id: eip155:8453 or eip155:84532." }),
  createdAt: t.String({ format: "date-time" }),
});

/**
 * The spec's enum and default in the served schema (audit S-4). A literal union: the error plugin answers any other
 * value, of any type, with the same 400 naming the field and the allowed values (details.allowed).
 */
export const WalletNetworkField = t.Union(
  WALLET_NETWORKS.map((n) => t.Literal(n)),
  { default: DEFAULT_WALLET_NETWORK, description: "CAIP-2 chain id: eip155:8453 (Base) or eip155:84532 (Base Sepolia); omitted: eip155:84532." },
);

/** The optional body, also the route's `strictJsonBody`: a misspelt `netwrok` is 400 naming it, not a wallet on the default network (audit W-7). */
const ProvisionBody = t.Optional(t.Object({ network: t.Optional(WalletNetworkField) }));

export function walletRoutes(svc: Services) {
  return new Elysia({ name: "wallet-routes" })
    .use(agentAuth(svc))
    .post(
      "/api/v1/agent/wallet/provision",
      async ({ agent, body, set }) => {
        // The schema admits only the two networks; an empty or absent body means the default one.
        const network = body?.network ?? DEFAULT_WALLET_NETWORK;
        const w = await svc.actors.ask(walletActor, agent.keyId, "provision", { network });
        set.status = 201;
        return ok({ address: w.address, network: w.network, createdAt: w.createdAt });
      },
      {
        parse: optionalObjectBody,
        ...strictJsonBody(ProvisionBody),
        response: { 201: SuccessEnvelope(WalletSchema, "WalletProvisioned"), ...errorResponses(400, 401, 403, 409) },
        detail: {
          tags: ["wallet"],
          summary: "Provision the agent's custodial x402 wallet (one per agent identity)",
          description: `network: ${WALLET_NETWORKS.join(" | ")}, default ${DEFAULT_WALLET_NETWORK}. The private key is generated with viem, stored sealed (AES-256-GCM) and never returned.`,
          security: sec,
        },
      },
    )
    .get(
      "/api/v1/agent/wallet",
      async ({ agent }) => {
        const w = await svc.actors.ask(walletActor, agent.keyId, "get", {});
        return ok({ address: w.address, network: w.network, createdAt: w.createdAt });
      },
      {
        response: { 200: SuccessEnvelope(WalletSchema, "Wallet"), ...errorResponses(401, 403, 404) },
        detail: { tags: ["wallet"], summary: "The agent's wallet", security: sec },
      },
    );
}
