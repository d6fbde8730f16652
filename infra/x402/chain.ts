/**
 * A throwaway local EVM chain: the real anvil binary shipped by `@foundry-rs/anvil`, on a loopback port the
 * OS picks (`--port 0`; the bound port is read from anvil's "Listening on" line, so two parallel starts never
 * race for a port). Chain id 84532 by default so networks read `eip155:84532`, the spec's test network.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { privateKeyToAddress } from "viem/accounts";
import type { Address, Hex } from "viem";

/** Base Sepolia's chain id: the spec's default test network (`eip155:84532`). */
export const DEVNET_CHAIN_ID = 84532;
/** anvil's (and hardhat's) well-known development mnemonic. Its keys are public: never hold real value. */
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";

export interface DevAccount {
  readonly address: Address;
  readonly privateKey: Hex;
}

export interface StartChainOptions {
  chainId?: number;
  /** Number of funded dev accounts (10 000 ETH each), 1..10. Default 10. */
  accounts?: number;
  /** Milliseconds to wait for anvil to answer. Default 10 000. */
  readyTimeoutMs?: number;
}

export interface LocalChain {
  readonly rpcUrl: string;
  readonly chainId: number;
  /** CAIP-2 id, e.g. `eip155:84532`. */
  readonly network: `eip155:${number}`;
  readonly accounts: readonly DevAccount[];
  stop(): Promise<void>;
}

/**
 * The real anvil binary inside `@foundry-rs/anvil`'s platform package. Not `node_modules/.bin/anvil`: that is
 * a node wrapper which adds ~200 ms per start and leaves the binary orphaned if the wrapper is SIGKILLed.
 * `X402_ANVIL_BIN` overrides.
 */
function anvilBinary(): string {
  if (process.env.X402_ANVIL_BIN) return process.env.X402_ANVIL_BIN;
  const os = ({ linux: "linux", darwin: "darwin", win32: "win32" } as Record<string, string>)[process.platform];
  const arch = ({ x64: "amd64", arm64: "arm64" } as Record<string, string>)[process.arch];
  const exe = process.platform === "win32" ? "anvil.exe" : "anvil";
  if (os && arch) {
    const direct = join(import.meta.dir, `../../node_modules/@foundry-rs/anvil-${os}-${arch}/bin/${exe}`);
    if (existsSync(direct)) return direct;
  }
  return join(import.meta.dir, "../../node_modules/.bin/anvil");
}

/**
 * The first ten keys of that mnemonic (m/44'/60'/0'/0/i), as anvil prints them. Hard-coded because deriving
 * them in JS runs PBKDF2 per account (~300 ms for ten); anvil is always started with the same mnemonic.
 */
const ANVIL_KEYS: readonly Hex[] = [
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
  "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
  "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
  "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
  "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356",
  "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97",
  "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6",
];

/** anvil's deterministic, pre-funded dev accounts (at most ten). */
export function devAccounts(count = ANVIL_KEYS.length): DevAccount[] {
  if (count < 1 || count > ANVIL_KEYS.length) throw new RangeError(`accounts must be 1..${ANVIL_KEYS.length}`);
  return ANVIL_KEYS.slice(0, count).map((privateKey) => ({ address: privateKeyToAddress(privateKey), privateKey }));
}

export async function startChain(options: StartChainOptions = {}): Promise<LocalChain> {
  const chainId = options.chainId ?? DEVNET_CHAIN_ID;
  const accountCount = options.accounts ?? 10;
  if (accountCount < 1 || accountCount > ANVIL_KEYS.length) throw new RangeError(`accounts must be 1..${ANVIL_KEYS.length}`);
  const readyTimeoutMs = options.readyTimeoutMs ?? 10_000;

  const proc = Bun.spawn(
    [
      anvilBinary(),
      "--host", "127.0.0.1",
      "--port", "0",
      "--chain-id", String(chainId),
      "--accounts", String(accountCount),
      "--mnemonic", ANVIL_MNEMONIC,
      "--no-request-size-limit",
    ],
    { stdout: "pipe", stderr: "pipe", stdin: "ignore" },
  );

  // If the parent exits without calling stop() (a crashed test run), take anvil down with it.
  const killOnExit = () => proc.kill("SIGKILL");
  process.once("exit", killOnExit);

  const stop = async (): Promise<void> => {
    process.removeListener("exit", killOnExit);
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill("SIGTERM");
    const exited = await Promise.race([proc.exited.then(() => true), Bun.sleep(2_000).then(() => false)]);
    if (!exited) {
      proc.kill("SIGKILL");
      await proc.exited;
    }
  };

  // Collect stderr in the background (bounded) for error messages; never let the pipe fill up.
  const stderr = { text: "" };
  void collect(proc.stderr, stderr);

  try {
    const port = await readListeningPort(proc, readyTimeoutMs, stderr);
    const rpcUrl = `http://127.0.0.1:${port}`;
    await waitForRpc(rpcUrl, chainId, readyTimeoutMs);
    return {
      rpcUrl,
      chainId,
      network: `eip155:${chainId}`,
      accounts: devAccounts(accountCount),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function collect(stream: ReadableStream<Uint8Array>, into: { text: string }): Promise<void> {
  const decoder = new TextDecoder();
  try {
    for await (const chunk of stream) {
      into.text = (into.text + decoder.decode(chunk, { stream: true })).slice(-4_000);
    }
  } catch {
    // process gone
  }
}

async function readListeningPort(
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">,
  timeoutMs: number,
  stderr: { text: string },
): Promise<number> {
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let seen = "";
  const deadline = Date.now() + timeoutMs;
  const timeout = (ms: number) => Bun.sleep(ms).then(() => ({ done: true as const, value: undefined, timedOut: true }));
  while (Date.now() < deadline) {
    const chunk = await Promise.race([reader.read(), timeout(deadline - Date.now())]);
    if ("timedOut" in chunk) break;
    if (chunk.done) {
      await proc.exited;
      throw new Error(`anvil exited before listening (code ${proc.exitCode}): ${stderr.text || seen}`.slice(0, 2_000));
    }
    seen += decoder.decode(chunk.value, { stream: true });
    const match = /Listening on 127\.0\.0\.1:(\d+)/.exec(seen);
    if (match) {
      // Keep draining anvil's log in the background so a full pipe never blocks it.
      void drain(reader);
      return Number(match[1]);
    }
  }
  reader.releaseLock();
  throw new Error(`anvil did not report a listening port within ${timeoutMs} ms`);
}

async function drain(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  try {
    for (;;) {
      const { done } = await reader.read();
      if (done) return;
    }
  } catch {
    // process gone
  }
}

async function waitForRpc(rpcUrl: string, chainId: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
      });
      const body = (await res.json()) as { result?: string };
      if (body.result !== undefined && Number(body.result) === chainId) return;
      lastError = new Error(`unexpected eth_chainId answer ${JSON.stringify(body)}`);
    } catch (err) {
      lastError = err;
    }
    await Bun.sleep(20);
  }
  throw new Error(`anvil at ${rpcUrl} not ready: ${String(lastError)}`);
}
