/**
 * A real x402 facilitator for the devnet: the x402 project's own `x402Facilitator` with the EVM `exact`
 * scheme registered (v2 for our CAIP-2 network, v1 for the library's named networks such as `base-sepolia`),
 * signing and paying gas with a dev key, served over HTTP on loopback:
 *
 *   POST /verify   {x402Version, paymentPayload, paymentRequirements} → VerifyResponse
 *   POST /settle   {x402Version, paymentPayload, paymentRequirements} → SettleResponse
 *   GET  /supported                                                   → SupportedResponse
 *
 * Signatures are checked, the token's `transferWithAuthorization` runs on chain, and a replayed
 * authorization is refused (the token marks its nonce used). Test knobs: `settleDelayMs` holds /settle
 * before settling (a client with a shorter timeout sees a timeout, and the settlement still happens, as with
 * a slow real facilitator), and `down()` / `up()` stop and restart listening on the same port.
 */
import { x402Facilitator } from "@x402/core/facilitator";
import type { Network, PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/facilitator";
import type { Abi, Address, Hex } from "viem";
import { devnetWalletClient } from "./token.ts";

/** The signer type the exact EVM facilitator scheme takes (not exported by name from @x402/evm). */
export type FacilitatorEvmSigner = ReturnType<typeof toFacilitatorEvmSigner>;

export interface FacilitatorOptions {
  rpcUrl: string;
  chainId: number;
  /** Key that submits settlements and pays their gas. */
  privateKey: Hex;
  /** v2 networks to serve; default `eip155:<chainId>`. */
  networks?: Network[];
  /** Loopback port; default 0 (the OS picks a free one). */
  port?: number;
  /** Delay before each /settle is processed, to simulate a slow facilitator. Default 0. */
  settleDelayMs?: number;
  /** Receipt-wait bound for a settlement transaction. Default 15 000 ms. */
  confirmationTimeoutMs?: number;
}

export interface LocalFacilitator {
  /** Base URL, e.g. `http://127.0.0.1:41234` (append /verify, /settle, /supported). */
  readonly url: string;
  /** The address that submits settlements (reported under `signers` by /supported). */
  readonly address: Address;
  /** The in-process facilitator, for hooks in tests. */
  readonly facilitator: x402Facilitator;
  readonly isUp: boolean;
  setSettleDelay(ms: number): void;
  /** Stop listening: calls fail at once with a refused connection. */
  down(): Promise<void>;
  /** Listen again on the same port. */
  up(): Promise<void>;
  stop(): Promise<void>;
}

/** The facilitator signer the exact EVM scheme needs, over a viem wallet client extended with public actions. */
export function createFacilitatorSigner(
  rpcUrl: string,
  chainId: number,
  privateKey: Hex,
  confirmationTimeoutMs = 15_000,
): FacilitatorEvmSigner {
  const client = devnetWalletClient(rpcUrl, chainId, privateKey);
  // Explicit adapters instead of spreading the client: viem's generic signatures do not unify with the
  // signer's plain ones, and this keeps the surface the library can reach small.
  return toFacilitatorEvmSigner(
    {
      address: client.account.address,
      readContract: (args) =>
        client.readContract({ address: args.address, abi: args.abi as Abi, functionName: args.functionName, args: args.args }),
      verifyTypedData: (args) =>
        client.verifyTypedData({
          address: args.address,
          domain: args.domain,
          types: args.types,
          primaryType: args.primaryType,
          message: args.message,
          signature: args.signature,
        } as Parameters<typeof client.verifyTypedData>[0]),
      writeContract: (args) =>
        client.writeContract({
          address: args.address,
          abi: args.abi as Abi,
          functionName: args.functionName,
          args: args.args,
          gas: args.gas,
          dataSuffix: args.dataSuffix,
        }),
      sendTransaction: (args) => client.sendTransaction({ to: args.to, data: args.data }),
      waitForTransactionReceipt: async (args) => {
        const receipt = await client.waitForTransactionReceipt({ hash: args.hash, timeout: args.timeout });
        return { status: receipt.status, logs: receipt.logs };
      },
      getCode: (args) => client.getCode({ address: args.address }),
    },
    { confirmationTimeoutMs },
  );
}

interface FacilitatorRequestBody {
  x402Version: number;
  paymentPayload: PaymentPayload;
  paymentRequirements: PaymentRequirements;
}

/** Shape check of a /verify or /settle body; the scheme itself validates the inner payload. */
function parseRequestBody(raw: unknown): FacilitatorRequestBody | string {
  if (typeof raw !== "object" || raw === null) return "body must be a JSON object";
  const body = raw as Record<string, unknown>;
  const payload = body.paymentPayload;
  const requirements = body.paymentRequirements;
  if (typeof payload !== "object" || payload === null) return "paymentPayload is required";
  if (typeof requirements !== "object" || requirements === null) return "paymentRequirements is required";
  const version = (payload as Record<string, unknown>).x402Version;
  if (version !== 1 && version !== 2) return "paymentPayload.x402Version must be 1 or 2";
  if (body.x402Version !== undefined && body.x402Version !== version) {
    return "x402Version does not match paymentPayload.x402Version";
  }
  const req = requirements as Record<string, unknown>;
  if (typeof req.scheme !== "string" || typeof req.network !== "string") {
    return "paymentRequirements.scheme and .network are required";
  }
  if (typeof (payload as Record<string, unknown>).payload !== "object") return "paymentPayload.payload is required";
  // v1 bodies (maxAmountRequired, payload.scheme/network) go through unchanged: the library's v1 scheme reads them.
  return {
    x402Version: version,
    paymentPayload: payload as unknown as PaymentPayload,
    paymentRequirements: requirements as unknown as PaymentRequirements,
  };
}

const json = (status: number, body: unknown): Response =>
  new Response(JSON.stringify(body, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)), {
    status,
    headers: { "content-type": "application/json" },
  });

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export async function startFacilitator(options: FacilitatorOptions): Promise<LocalFacilitator> {
  const networks = options.networks ?? [`eip155:${options.chainId}` as Network];
  const signer = createFacilitatorSigner(options.rpcUrl, options.chainId, options.privateKey, options.confirmationTimeoutMs);
  const facilitator = new x402Facilitator();
  registerExactEvmScheme(facilitator, { signer, networks });

  let settleDelayMs = options.settleDelayMs ?? 0;
  // One key submits every settlement: serialise them so two concurrent settles never pick the same tx nonce.
  let settleQueue: Promise<unknown> = Promise.resolve();
  const serialised = <T>(work: () => Promise<T>): Promise<T> => {
    const run = settleQueue.then(work, work);
    settleQueue = run.catch(() => undefined);
    return run;
  };

  const handle = async (req: Request): Promise<Response> => {
    const { pathname } = new URL(req.url);
    if (req.method === "GET" && pathname === "/supported") {
      return json(200, facilitator.getSupported());
    }
    if (req.method !== "POST" || (pathname !== "/verify" && pathname !== "/settle")) {
      return json(404, { error: `no route ${req.method} ${pathname}` });
    }
    let raw: unknown;
    try {
      raw = await req.json();
    } catch {
      return json(400, { error: "body is not valid JSON" });
    }
    const body = parseRequestBody(raw);
    if (typeof body === "string") return json(400, { error: body });

    try {
      if (pathname === "/verify") {
        return json(200, await facilitator.verify(body.paymentPayload, body.paymentRequirements));
      }
      if (settleDelayMs > 0) await Bun.sleep(settleDelayMs);
      return json(200, await serialised(() => facilitator.settle(body.paymentPayload, body.paymentRequirements)));
    } catch (err) {
      const message = errorMessage(err);
      // The library throws for a scheme/network/version it has no registration for: the caller's mistake.
      const status = /^No facilitator registered/.test(message) ? 400 : 500;
      return json(status, { error: message });
    }
  };

  const listen = (port: number) => Bun.serve({ hostname: "127.0.0.1", port, fetch: handle });
  let server: ReturnType<typeof listen> | undefined = listen(options.port ?? 0);
  const port = server.port;
  if (port === undefined) throw new Error("facilitator server has no port");

  return {
    url: `http://127.0.0.1:${port}`,
    address: signer.getAddresses()[0] as Address,
    facilitator,
    get isUp() {
      return server !== undefined;
    },
    setSettleDelay(ms: number) {
      settleDelayMs = ms;
    },
    async down() {
      if (!server) return;
      const s = server;
      server = undefined;
      await s.stop(true);
    },
    async up() {
      if (server) return;
      server = listen(port);
    },
    async stop() {
      const s = server;
      server = undefined;
      if (s) await s.stop(true);
    },
  };
}
