/**
 * The whole local x402 environment in one call: anvil (chain id 84532), TestUSDC (6 decimals, EIP-3009,
 * EIP-712 domain "USD Coin"/"2"), Multicall3 at its canonical address, and an HTTP facilitator built on the
 * x402 library. Everything listens on 127.0.0.1 only.
 *
 *   const devnet = await startDevnet();            // ~0.3 s with a warm artifact cache
 *   devnet.token.address, devnet.facilitator.url, devnet.chain.accounts[1].privateKey
 *   await devnet.fund(addr, 5_000_000n);            // 5 USDC
 *   await devnet.stop();
 *
 * As a script (`bun run x402:devnet`) it starts everything, prints the addresses and waits for Ctrl-C.
 *
 * Account roles (anvil's deterministic dev keys): #0 deploys and mints, #9 is the facilitator's gas payer,
 * #1..#8 are free for tests (#1 and #2 are funded with 1 000 USDC by default).
 */
import type { Network } from "@x402/core/types";
import { getAddress, type Address } from "viem";
import { startChain, type DevAccount, type LocalChain } from "./chain.ts";
import { startFacilitator, type LocalFacilitator } from "./facilitator.ts";
import { deployTestUsdc, devnetPublicClient, devnetWalletClient, installMulticall3, MULTICALL3_ADDRESS } from "./token.ts";

export interface DevnetOptions {
  chainId?: number;
  /** Accounts to fund with TestUSDC at start; default anvil accounts #1 and #2. */
  fundAccounts?: Address[];
  /** Amount each of `fundAccounts` gets, in atomic units; default 1 000 USDC (1 000 000 000). */
  fundAmountMinor?: bigint;
  /** Passed to the facilitator. */
  settleDelayMs?: number;
  /** Facilitator port; default 0 (the OS picks). */
  facilitatorPort?: number;
}

export interface DevnetToken {
  readonly address: Address;
  readonly decimals: number;
  /** EIP-712 domain name ("USD Coin"): goes into `PaymentRequirements.extra.name`. */
  readonly name: string;
  /** EIP-712 domain version ("2"): goes into `PaymentRequirements.extra.version`. */
  readonly version: string;
  readonly symbol: string;
}

export interface Devnet {
  readonly chain: LocalChain;
  /** CAIP-2 network of the chain, `eip155:84532` by default. */
  readonly network: Network;
  readonly token: DevnetToken;
  readonly facilitator: LocalFacilitator;
  readonly multicall3: Address;
  /** Who deploys and mints (anvil #0). */
  readonly deployer: DevAccount;
  /** The facilitator's gas payer (anvil #9). */
  readonly facilitatorAccount: DevAccount;
  /** Mints `amountMinor` atomic units of TestUSDC to `address` and waits for the block. */
  fund(address: Address, amountMinor: bigint): Promise<void>;
  balanceOf(address: Address): Promise<bigint>;
  stop(): Promise<void>;
}

const DEFAULT_FUND_MINOR = 1_000_000_000n; // 1 000 USDC

export async function startDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  const chain = await startChain({ chainId: options.chainId });
  let facilitator: LocalFacilitator | undefined;
  try {
    const deployer = chain.accounts[0] as DevAccount;
    const facilitatorAccount = chain.accounts[9] as DevAccount;
    const [multicall3, deployed] = await Promise.all([
      installMulticall3(chain.rpcUrl),
      deployTestUsdc(chain.rpcUrl, chain.chainId, deployer.privateKey),
    ]);

    const minter = devnetWalletClient(chain.rpcUrl, chain.chainId, deployer.privateKey);
    const reader = devnetPublicClient(chain.rpcUrl, chain.chainId);
    // Mints go out one at a time from one key: awaiting each receipt keeps its nonces in order.
    let mintQueue: Promise<unknown> = Promise.resolve();
    const fund = (address: Address, amountMinor: bigint): Promise<void> => {
      if (amountMinor <= 0n) return Promise.reject(new RangeError("fund amount must be positive"));
      const run = mintQueue.then(async () => {
        const hash = await minter.writeContract({
          address: deployed.address,
          abi: deployed.abi,
          functionName: "mint",
          args: [getAddress(address), amountMinor],
        });
        const receipt = await minter.waitForTransactionReceipt({ hash, timeout: 10_000 });
        if (receipt.status !== "success") throw new Error(`mint to ${address} failed (tx ${hash})`);
      });
      mintQueue = run.catch(() => undefined);
      return run;
    };
    const balanceOf = async (address: Address): Promise<bigint> =>
      (await reader.readContract({
        address: deployed.address,
        abi: deployed.abi,
        functionName: "balanceOf",
        args: [getAddress(address)],
      })) as bigint;

    const toFund = options.fundAccounts ?? [chain.accounts[1]?.address, chain.accounts[2]?.address].filter(
      (a): a is Address => a !== undefined,
    );
    for (const address of toFund) await fund(address, options.fundAmountMinor ?? DEFAULT_FUND_MINOR);

    facilitator = await startFacilitator({
      rpcUrl: chain.rpcUrl,
      chainId: chain.chainId,
      privateKey: facilitatorAccount.privateKey,
      networks: [chain.network],
      port: options.facilitatorPort,
      settleDelayMs: options.settleDelayMs,
    });
    const startedFacilitator = facilitator;

    return {
      chain,
      network: chain.network,
      token: {
        address: deployed.address,
        decimals: deployed.decimals,
        name: deployed.name,
        version: deployed.version,
        symbol: deployed.symbol,
      },
      facilitator: startedFacilitator,
      multicall3,
      deployer,
      facilitatorAccount,
      fund,
      balanceOf,
      async stop() {
        await startedFacilitator.stop();
        await chain.stop();
      },
    };
  } catch (err) {
    await facilitator?.stop();
    await chain.stop();
    throw err;
  }
}

function formatUnits(amount: bigint, decimals: number): string {
  const base = 10n ** BigInt(decimals);
  return `${amount / base}.${(amount % base).toString().padStart(decimals, "0")}`;
}

async function main(): Promise<void> {
  const started = performance.now();
  const devnet = await startDevnet();
  const payer = devnet.chain.accounts[1] as DevAccount;
  const payee = devnet.chain.accounts[2] as DevAccount;
  const lines = [
    `x402 devnet ready in ${Math.round(performance.now() - started)} ms (loopback only)`,
    `  chain        ${devnet.chain.rpcUrl}  chainId ${devnet.chain.chainId}  network ${devnet.network}`,
    `  token        ${devnet.token.address}  ${devnet.token.symbol} (${devnet.token.decimals} decimals, EIP-712 "${devnet.token.name}" v${devnet.token.version})`,
    `  multicall3   ${MULTICALL3_ADDRESS}`,
    `  facilitator  ${devnet.facilitator.url}  (POST /verify, POST /settle, GET /supported; gas payer ${devnet.facilitator.address})`,
    `  payer        ${payer.address}  key ${payer.privateKey}  balance ${formatUnits(await devnet.balanceOf(payer.address), devnet.token.decimals)} ${devnet.token.symbol}`,
    `  payee        ${payee.address}`,
    `  (dev keys are anvil's public test keys: never send real value to them)`,
    `Ctrl-C to stop.`,
  ];
  // anvil mines only when a transaction arrives, and the rail counts a payment captured once its transfer is
  // X402_CAPTURE_CONFIRMATIONS blocks deep (docs/x402.md): a block a second keeps a demo's payments settling.
  const miner = setInterval(() => {
    void fetch(devnet.chain.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "evm_mine", params: [] }),
    }).catch(() => {});
  }, 1000);
  lines.splice(lines.length - 1, 0, "  mining       one block a second (payments settle at X402_CAPTURE_CONFIRMATIONS blocks deep)");
  console.log(lines.join("\n"));
  const shutdown = async () => {
    clearInterval(miner);
    await devnet.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown());
  process.on("SIGTERM", () => void shutdown());
  // Keep the process alive until a signal arrives.
  await new Promise<never>(() => {});
}

if (import.meta.main) {
  await main();
}
