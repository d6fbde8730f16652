/**
 * `bun run cli <command>`: the operator CLI, a small dispatcher (one function per subcommand).
 *
 *   bun run cli import <slug> catalog.jsonl [--url URL] [--token JWT | --email E --password P] [--batch N]
 *
 * import: streams a JSON-lines file (one ProductInput per line) to PUT /api/v1/merchant/stores/<slug>/catalog in
 * batches of up to 1,000, through the running service (so every write goes through the store actor), with a
 * progress bar on stderr. Lines that are not JSON are reported and skipped; items the API rejects are printed
 * with their line number. Exit code 0 when everything was accepted, 1 when something was rejected.
 */
import { parseArgs } from "node:util";

type Command = (args: string[]) => Promise<number>;

const USAGE = `usage: bun run cli <command>
  import <slug> <catalog.jsonl> [--url URL] [--token JWT | --email E --password P] [--batch N]
      push a JSON-lines catalog to the running service (env: ACS_URL, ACS_TOKEN, ACS_EMAIL, ACS_PASSWORD)
  cluster status
      live actor hosts, partitions owned per host and activations per kind (env: NATS_URL)`;

export function progressBar(done: number, total: number, width = 30): string {
  const ratio = total > 0 ? Math.min(1, done / total) : 1;
  const filled = Math.round(ratio * width);
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${(ratio * 100).toFixed(0).padStart(3)}% ${done}/${total}`;
}

async function login(url: string, email: string, password: string): Promise<string> {
  const r = await fetch(`${url}/api/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, password }) });
  const body = (await r.json().catch(() => ({}))) as { data?: { token?: string }; error?: string };
  if (r.status !== 200 || !body.data?.token) throw new Error(`login failed (${r.status}): ${body.error ?? "no token"}`);
  return body.data.token;
}

const importCatalog: Command = async (argv) => {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { url: { type: "string" }, token: { type: "string" }, email: { type: "string" }, password: { type: "string" }, batch: { type: "string" } },
  });
  const [slug, file] = positionals;
  if (!slug || !file) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const url = (values.url ?? process.env.ACS_URL ?? "http://127.0.0.1:3000").replace(/\/$/, "");
  const batchSize = Math.min(1000, Math.max(1, Number(values.batch ?? 1000) || 1000));
  let token = values.token ?? process.env.ACS_TOKEN;
  if (!token) {
    const email = values.email ?? process.env.ACS_EMAIL;
    const password = values.password ?? process.env.ACS_PASSWORD;
    if (!email || !password) {
      process.stderr.write("cli import: pass --token, or --email and --password (or ACS_TOKEN / ACS_EMAIL + ACS_PASSWORD)\n");
      return 2;
    }
    token = await login(url, email, password);
  }
  const text = await Bun.file(file).text();
  const lines = text.split(/\r?\n/).map((l, i) => ({ line: i + 1, text: l.trim() })).filter((l) => l.text.length > 0);
  const items: { line: number; item: unknown }[] = [];
  let badJson = 0;
  for (const l of lines) {
    try {
      items.push({ line: l.line, item: JSON.parse(l.text) });
    } catch {
      badJson++;
      process.stderr.write(`line ${l.line}: not valid JSON, skipped\n`);
    }
  }
  const tty = process.stderr.isTTY === true;
  let done = 0;
  let accepted = 0;
  const rejected: string[] = [];
  const started = performance.now();
  for (let i = 0; i < items.length; i += batchSize) {
    const batch = items.slice(i, i + batchSize);
    const r = await fetch(`${url}/api/v1/merchant/stores/${encodeURIComponent(slug)}/catalog`, {
      method: "PUT",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ products: batch.map((b) => b.item) }),
    });
    const body = (await r.json().catch(() => ({}))) as {
      data?: { accepted: number; rejected: { index: number; externalId: string | null; errors: { field: string; message: string }[] }[] };
      error?: string;
    };
    if (r.status !== 200 || !body.data) {
      process.stderr.write(`\ncli import: batch starting at line ${batch[0]!.line} failed (${r.status}): ${body.error ?? "no answer"}\n`);
      return 1;
    }
    accepted += body.data.accepted;
    for (const rej of body.data.rejected) {
      rejected.push(`line ${batch[rej.index]!.line} (${rej.externalId ?? "no externalId"}): ${rej.errors.map((e) => `${e.field} ${e.message}`).join("; ")}`);
    }
    done += batch.length;
    const line = `${progressBar(done, items.length)} ${Math.round(done / ((performance.now() - started) / 1000))} items/s`;
    process.stderr.write(tty ? `\r${line}` : `${line}\n`);
  }
  if (tty) process.stderr.write("\n");
  for (const r of rejected) process.stderr.write(`rejected ${r}\n`);
  process.stdout.write(`imported ${accepted} of ${items.length + badJson} lines into ${slug} (${rejected.length} rejected, ${badJson} not JSON)\n`);
  return rejected.length + badJson > 0 ? 1 : 0;
};

/** `cluster status`: live actor hosts, partitions owned per host and activations per kind (needs NATS_URL). */
const cluster: Command = async (argv) => {
  if (argv[0] !== "status") {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const natsUrl = process.env.NATS_URL;
  if (!natsUrl) {
    process.stderr.write("cli cluster status: set NATS_URL (the embedded default has no cluster: one process hosts every actor)\n");
    return 2;
  }
  const { clusterStatus, formatClusterStatus } = await import("./cluster-status.ts");
  process.stdout.write(`${formatClusterStatus(await clusterStatus(natsUrl))}\n`);
  return 0;
};

const COMMANDS: Record<string, Command> = { import: importCatalog, cluster };

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  const run = cmd ? COMMANDS[cmd] : undefined;
  if (!run) {
    process.stderr.write(`${USAGE}\n`);
    return cmd === undefined || cmd === "help" || cmd === "--help" ? 0 : 2;
  }
  return run(rest);
}

if (import.meta.main) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`cli: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
