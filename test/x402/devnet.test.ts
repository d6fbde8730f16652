/** The local x402 environment itself: chain, token, Multicall3, funding, and a clean stop. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdir } from "node:fs/promises";
import type { Address } from "viem";
import { artifactCacheDir } from "../../infra/x402/compile.ts";
import type { DevAccount } from "../../infra/x402/chain.ts";
import { startDevnet, type Devnet } from "../../infra/x402/devnet.ts";
import { devnetPublicClient, devnetWalletClient, MULTICALL3_ADDRESS } from "../../infra/x402/token.ts";

let devnet: Devnet;

beforeAll(async () => {
  devnet = await startDevnet();
});

afterAll(async () => {
  await devnet?.stop();
});

const read = (functionName: string, args: readonly unknown[] = []) =>
  devnetPublicClient(devnet.chain.rpcUrl, devnet.chain.chainId).readContract({
    address: devnet.token.address,
    abi: [
      { type: "function", name: "decimals", inputs: [], outputs: [{ type: "uint8" }], stateMutability: "view" },
      { type: "function", name: "name", inputs: [], outputs: [{ type: "string" }], stateMutability: "view" },
      { type: "function", name: "symbol", inputs: [], outputs: [{ type: "string" }], stateMutability: "view" },
      { type: "function", name: "version", inputs: [], outputs: [{ type: "string" }], stateMutability: "view" },
      {
        type: "function",
        name: "authorizationState",
        inputs: [{ type: "address" }, { type: "bytes32" }],
        outputs: [{ type: "bool" }],
        stateMutability: "view",
      },
    ],
    functionName: functionName as "decimals",
    args: args as [],
  }) as Promise<unknown>;

describe("x402 devnet", () => {
  test("the devnet starts on loopback with chain id 84532 (eip155:84532)", async () => {
    expect(devnet.chain.rpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(devnet.facilitator.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(devnet.network).toBe("eip155:84532");
    const chainId = await devnetPublicClient(devnet.chain.rpcUrl, devnet.chain.chainId).getChainId();
    expect(chainId).toBe(84532);
  });

  test("the token has 6 decimals and the USDC EIP-712 domain the x402 exact scheme signs against", async () => {
    expect(devnet.token).toMatchObject({ decimals: 6, name: "USD Coin", version: "2", symbol: "USDC" });
    expect(await read("decimals")).toBe(6);
    expect(await read("name")).toBe("USD Coin");
    expect(await read("version")).toBe("2");
    expect(await read("symbol")).toBe("USDC");
    expect(await read("authorizationState", [devnet.deployer.address, `0x${"00".repeat(32)}`])).toBe(false);
  });

  test("fund() moves balance by exactly the amount, and the default payers start with 1 000 USDC", async () => {
    const fresh = (devnet.chain.accounts[7] as DevAccount).address;
    expect(await devnet.balanceOf(fresh)).toBe(0n);
    await devnet.fund(fresh, 2_500_000n);
    expect(await devnet.balanceOf(fresh)).toBe(2_500_000n);
    await Promise.all([devnet.fund(fresh, 1n), devnet.fund(fresh, 2n), devnet.fund(fresh, 3n)]);
    expect(await devnet.balanceOf(fresh)).toBe(2_500_006n);
    expect(await devnet.balanceOf((devnet.chain.accounts[1] as DevAccount).address)).toBe(1_000_000_000n);
  });

  test("only the deployer can mint", async () => {
    const stranger = devnet.chain.accounts[8] as DevAccount;
    const client = devnetWalletClient(devnet.chain.rpcUrl, devnet.chain.chainId, stranger.privateKey);
    const attempt = client.writeContract({
      address: devnet.token.address,
      abi: [
        {
          type: "function",
          name: "mint",
          inputs: [{ type: "address" }, { type: "uint256" }],
          outputs: [],
          stateMutability: "nonpayable",
        },
      ],
      functionName: "mint",
      args: [stranger.address as Address, 1n],
    });
    await expect(attempt).rejects.toThrow(/not the owner/);
  });

  test("Multicall3 answers at its canonical address", async () => {
    const client = devnetPublicClient(devnet.chain.rpcUrl, devnet.chain.chainId);
    expect((await client.getCode({ address: MULTICALL3_ADDRESS }))?.length ?? 0).toBeGreaterThan(100);
    const chainId = await client.readContract({
      address: MULTICALL3_ADDRESS,
      abi: [{ type: "function", name: "getChainId", inputs: [], outputs: [{ type: "uint256" }], stateMutability: "view" }],
      functionName: "getChainId",
    });
    expect(chainId).toBe(84532n);
  });

  test("the compiled contracts are cached on disk, so a second devnet starts without solc", async () => {
    const files = await readdir(artifactCacheDir());
    expect(files.some((f) => /^devnet-[0-9a-f]{32}\.json$/.test(f))).toBe(true);
    const started = performance.now();
    const second = await startDevnet({ fundAccounts: [] });
    try {
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(second.chain.rpcUrl).not.toBe(devnet.chain.rpcUrl);
    } finally {
      await second.stop();
    }
    // stopped means gone: the chain no longer answers
    await expect(fetch(second.chain.rpcUrl, { method: "POST", body: "{}" })).rejects.toThrow();
  });
});
