/**
 * Puts the devnet contracts on a local chain: TestUSDC (deployed by the deployer, who alone can mint) and
 * Multicall3's runtime code at its canonical address (what x402's facilitator diagnostics call).
 */
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  publicActions,
  type Abi,
  type Address,
  type Chain,
  type Hex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { compileDevnetContracts } from "./compile.ts";

/** Where every public chain (and x402's `multicall` helper) expects Multicall3. */
export const MULTICALL3_ADDRESS: Address = "0xcA11bde05977b3631167028862bE2a173976CA11";

/** EIP-712 domain of Circle's USDC on Base / Base Sepolia, which x402's `exact` scheme signs against. */
export const USDC_DOMAIN = { name: "USD Coin", symbol: "USDC", version: "2", decimals: 6 } as const;

/** A viem chain definition for the local anvil (polling fast: blocks are mined on each transaction). */
export function localChainDefinition(rpcUrl: string, chainId: number): Chain {
  return defineChain({
    id: chainId,
    name: `devnet-${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    contracts: { multicall3: { address: MULTICALL3_ADDRESS } },
  });
}

/** Read/write client for the devnet over loopback; every wait polls every 25 ms instead of viem's 4 s. */
export function devnetWalletClient(rpcUrl: string, chainId: number, privateKey: Hex) {
  return createWalletClient({
    account: privateKeyToAccount(privateKey),
    chain: localChainDefinition(rpcUrl, chainId),
    transport: http(rpcUrl, { retryCount: 0 }),
    pollingInterval: 25,
  }).extend(publicActions);
}

export function devnetPublicClient(rpcUrl: string, chainId: number) {
  return createPublicClient({
    chain: localChainDefinition(rpcUrl, chainId),
    transport: http(rpcUrl, { retryCount: 0 }),
    pollingInterval: 25,
  });
}

export interface DeployedToken {
  readonly address: Address;
  readonly abi: Abi;
  readonly decimals: number;
  readonly name: string;
  readonly symbol: string;
  readonly version: string;
}

export interface DeployTokenOptions {
  name?: string;
  symbol?: string;
}

/** Deploys TestUSDC from `deployerKey`; the deployer is the only minter. */
export async function deployTestUsdc(
  rpcUrl: string,
  chainId: number,
  deployerKey: Hex,
  options: DeployTokenOptions = {},
): Promise<DeployedToken> {
  const { TestUSDC } = await compileDevnetContracts();
  const name = options.name ?? USDC_DOMAIN.name;
  const symbol = options.symbol ?? USDC_DOMAIN.symbol;
  const client = devnetWalletClient(rpcUrl, chainId, deployerKey);
  const hash = await client.deployContract({ abi: TestUSDC.abi, bytecode: TestUSDC.bytecode, args: [name, symbol] });
  const receipt = await client.waitForTransactionReceipt({ hash, timeout: 10_000 });
  if (receipt.status !== "success" || !receipt.contractAddress) {
    throw new Error(`TestUSDC deployment failed (tx ${hash})`);
  }
  return {
    address: getAddress(receipt.contractAddress),
    abi: TestUSDC.abi,
    decimals: USDC_DOMAIN.decimals,
    name,
    symbol,
    version: USDC_DOMAIN.version,
  };
}

/**
 * Installs Multicall3 at its canonical address with `anvil_setCode`. Without it the facilitator's failure
 * diagnosis (balance / nonce-used / domain checks) cannot run and a replay comes back as a generic
 * `invalid_exact_evm_transaction_simulation_failed` instead of `..._nonce_already_used`.
 */
export async function installMulticall3(rpcUrl: string): Promise<Address> {
  const { Multicall3 } = await compileDevnetContracts();
  const res = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_setCode", params: [MULTICALL3_ADDRESS, Multicall3.deployedBytecode] }),
  });
  const body = (await res.json()) as { error?: { message: string } };
  if (body.error) throw new Error(`anvil_setCode failed: ${body.error.message}`);
  return MULTICALL3_ADDRESS;
}
