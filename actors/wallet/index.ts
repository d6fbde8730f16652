/**
 * `wallet/<agentKeyId>`: the custodial x402 wallet of one agent identity (agent key). One activation per agent
 * handles one message at a time, so concurrent provisions for one agent create exactly one wallet (the second
 * finds the first in state and gets 409); the table's primary key backs that up if two hosts ever both own the
 * activation. Kept apart from `agent/<prefix>` so key authentication never loads wallet crypto
 * (docs/decisions.md).
 *
 * Messages: `provision {network}` → WalletView (409 conflict when one exists); `get` → WalletView (404
 * not_found); `signX402 {requirements, resource?}` → an x402 v2 PaymentPayload signed by the wallet (the
 * custodial payer of an x402 checkout). The private key never leaves this module.
 */
import { Type as T } from "@sinclair/typebox";
import type { PaymentRequirements } from "@x402/core/types";
import { defineActor } from "../runtime/define-actor.ts";
import { ActorError, fail } from "../runtime/errors.ts";
import { PaymentRequirementsSchema, ResourceInfoSchema } from "../payments/x402-challenge.ts";
import { generateWalletKey, isWalletNetwork, signX402Payment, WALLET_NETWORKS, walletSealingKey } from "./keys.ts";
import { isUuid } from "../../infra/uuid.ts";

export interface WalletView {
  id: string;
  address: string;
  network: string;
  createdAt: string;
}

interface WalletRecord extends WalletView {
  sealedPrivateKey: string;
}

interface WalletState {
  loaded: boolean;
  wallet: WalletRecord | null;
}

// The sealing key is process configuration, handed over at start-up (actors/payments/x402-rail.ts boot hook).
let sealingKey: Uint8Array | undefined;

/** Installs the key-encryption key this process seals wallet keys with; returns the uninstall. */
export function installWalletRuntime(kek: Uint8Array): () => void {
  const key = walletSealingKey(kek);
  sealingKey = key;
  return () => {
    if (sealingKey === key) sealingKey = undefined;
  };
}

function key(): Uint8Array {
  if (!sealingKey) throw new ActorError("service_unavailable", "wallet runtime not installed in this process");
  return sealingKey;
}

function view(w: WalletRecord): WalletView {
  return { id: w.id, address: w.address, network: w.network, createdAt: w.createdAt };
}

export const walletActor = defineActor({
  kind: "wallet",
  initialState: (): WalletState => ({ loaded: false, wallet: null }),
  async onActivate(ctx) {
    if (ctx.state.loaded) return;
    if (!isUuid(ctx.id)) {
      ctx.state = { loaded: true, wallet: null };
      return;
    }
    const [r] = await ctx.sql<{ id: string; address: string; network: string; sealed_private_key: string; created_at: Date }[]>`
      SELECT id, address, network, sealed_private_key, created_at FROM agent_wallets WHERE agent_key_id = ${ctx.id}`;
    ctx.state = {
      loaded: true,
      wallet: r
        ? { id: r.id, address: r.address, network: r.network, sealedPrivateKey: r.sealed_private_key, createdAt: r.created_at.toISOString() }
        : null,
    };
  },
  messages: {
    provision: T.Object({ network: T.String() }),
    get: T.Object({}),
    signX402: T.Object({ requirements: PaymentRequirementsSchema, resource: T.Optional(ResourceInfoSchema) }),
  },
  handlers: {
    async provision(ctx, m) {
      if (!isUuid(ctx.id)) throw fail("not_found", "no such agent identity");
      if (!isWalletNetwork(m.network)) {
        throw fail("validation_error", `network must be one of ${WALLET_NETWORKS.join(", ")}`, {
          field: "network",
          allowed: [...WALLET_NETWORKS],
        });
      }
      if (ctx.state.wallet) {
        throw fail("conflict", "a wallet already exists for this agent identity", { address: ctx.state.wallet.address, network: ctx.state.wallet.network });
      }
      const id = crypto.randomUUID();
      const made = generateWalletKey(key(), id);
      const tx = await ctx.tx();
      const rows = await tx<{ created_at: Date }[]>`
        INSERT INTO agent_wallets (agent_key_id, id, address, network, sealed_private_key)
        VALUES (${ctx.id}, ${id}, ${made.address}, ${m.network}, ${made.sealedPrivateKey})
        ON CONFLICT (agent_key_id) DO NOTHING
        RETURNING created_at`;
      if (!rows[0]) throw fail("conflict", "a wallet already exists for this agent identity");
      ctx.state.wallet = { id, address: made.address, network: m.network, sealedPrivateKey: made.sealedPrivateKey, createdAt: rows[0].created_at.toISOString() };
      ctx.log.info("wallet provisioned", { agentKeyId: ctx.id, address: made.address, network: m.network });
      return view(ctx.state.wallet);
    },

    async get(ctx) {
      if (!ctx.state.wallet) throw fail("not_found", "no wallet provisioned for this agent identity; POST /api/v1/agent/wallet/provision first (MCP: provision_wallet)");
      return view(ctx.state.wallet);
    },

    async signX402(ctx, m) {
      const w = ctx.state.wallet;
      if (!w) throw fail("not_found", "no wallet provisioned for this agent identity; POST /api/v1/agent/wallet/provision first (MCP: provision_wallet)");
      const payload = await signX402Payment(key(), w, m.requirements as PaymentRequirements, m.resource, Math.floor(ctx.now() / 1000));
      ctx.log.info("wallet signed an x402 authorization", { agentKeyId: ctx.id, address: w.address, payTo: m.requirements.payTo, amount: m.requirements.amount });
      return payload;
    },
  },
});
