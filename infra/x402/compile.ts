/**
 * Compiles the devnet contracts (TestUSDC, Multicall3) with the npm `solc` package (solc-js, no download).
 * solc-js takes ~1 s to load and compile, so the artifact is cached on disk keyed by a hash of the sources,
 * the compiler version and the settings: a second start only reads one JSON file.
 */
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Abi, Hex } from "viem";

export interface ContractArtifact {
  readonly abi: Abi;
  /** Creation code (constructor included). */
  readonly bytecode: Hex;
  /** Runtime code, for installing a contract at a fixed address with `anvil_setCode`. */
  readonly deployedBytecode: Hex;
}

export interface DevnetArtifacts {
  readonly TestUSDC: ContractArtifact;
  readonly Multicall3: ContractArtifact;
}

const CONTRACTS_DIR = join(import.meta.dir, "contracts");
const SOURCE_FILES = ["TestUSDC.sol", "Multicall3.sol"] as const;

// Cancun bytecode runs on every hardfork anvil 1.x defaults to; pinning it keeps the artifact stable.
const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: "cancun",
  outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
} as const;

/** Where compiled artifacts are cached; override with X402_ARTIFACT_DIR. */
export function artifactCacheDir(): string {
  return process.env.X402_ARTIFACT_DIR ?? join(tmpdir(), "agent-commerce-x402-artifacts");
}

async function solcVersion(): Promise<string> {
  // Read from package.json instead of loading the compiler: loading soljson is the slow part we cache away.
  const pkg = JSON.parse(await readFile(join(import.meta.dir, "../../node_modules/solc/package.json"), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

let memo: Promise<DevnetArtifacts> | undefined;

/** Compiled TestUSDC and Multicall3, from the disk cache when the sources have not changed. */
export function compileDevnetContracts(): Promise<DevnetArtifacts> {
  memo ??= loadOrCompile().catch((err: unknown) => {
    memo = undefined;
    throw err;
  });
  return memo;
}

async function loadOrCompile(): Promise<DevnetArtifacts> {
  const sources: Record<string, { content: string }> = {};
  for (const file of SOURCE_FILES) {
    sources[file] = { content: await readFile(join(CONTRACTS_DIR, file), "utf8") };
  }
  const version = await solcVersion();
  const key = createHash("sha256").update(JSON.stringify({ version, SETTINGS, sources })).digest("hex").slice(0, 32);
  const dir = artifactCacheDir();
  const path = join(dir, `devnet-${key}.json`);

  try {
    return parseArtifacts(JSON.parse(await readFile(path, "utf8")));
  } catch {
    // cache miss or unreadable entry: compile below
  }

  const artifacts = await compile(sources);
  await mkdir(dir, { recursive: true });
  // Write-then-rename so a concurrent start (parallel test files) never reads a half-written file.
  const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(tmp, JSON.stringify(artifacts));
  await rename(tmp, path);
  return artifacts;
}

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>>;
}

async function compile(sources: Record<string, { content: string }>): Promise<DevnetArtifacts> {
  const solc = (await import("solc")).default;
  const input = { language: "Solidity", sources, settings: SETTINGS };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) {
    throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join("\n")}`);
  }
  const pick = (file: string, name: string): ContractArtifact => {
    const c = output.contracts?.[file]?.[name];
    if (!c) throw new Error(`solc produced no ${name} in ${file}`);
    return {
      abi: c.abi,
      bytecode: `0x${c.evm.bytecode.object}`,
      deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
    };
  };
  return { TestUSDC: pick("TestUSDC.sol", "TestUSDC"), Multicall3: pick("Multicall3.sol", "Multicall3") };
}

function parseArtifacts(raw: unknown): DevnetArtifacts {
  const ok = (a: unknown): a is ContractArtifact => {
    if (typeof a !== "object" || a === null) return false;
    const r = a as Record<string, unknown>;
    return Array.isArray(r.abi) && typeof r.bytecode === "string" && typeof r.deployedBytecode === "string";
  };
  const r = raw as Partial<Record<keyof DevnetArtifacts, unknown>>;
  if (!ok(r.TestUSDC) || !ok(r.Multicall3)) throw new Error("bad artifact cache entry");
  return { TestUSDC: r.TestUSDC, Multicall3: r.Multicall3 };
}
