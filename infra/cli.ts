/**
 * `bun run cli <command>`: the operator CLI, a small dispatcher (one function per subcommand).
 *
 *   bun run cli import <slug> catalog.jsonl [--url URL] [--token JWT | --email E --password P] [--batch N]
 *
 * import: streams a JSON-lines file (one ProductInput per line, read chunk by chunk) to
 * PUT /api/v1/merchant/stores/<slug>/catalog in batches of up to 1,000 lines and `BATCH_BYTES` of JSON (under the
 * route's 8 MiB body limit, whatever the lines' size), through the running service (so every write
 * goes through the store actor), with a progress bar on stderr. Lines that are not JSON are reported and skipped; a
 * line repeating the externalId of an earlier line the API accepted is refused (whatever --batch is); items the API
 * rejects are printed with their line number. Exit code 0 when everything was accepted, 1 when something was rejected.
 */
import { parseArgs } from "node:util";
import { externalIdRepeats, linesOf, type BatchAnswer, type ImportLine } from "../actors/store/import-file.ts";

type Command = (args: string[]) => Promise<number>;

/**
 * A batch is flushed before its `{"products":[…]}` body would pass this many bytes: 1,000 lines of 9 KB passed the
 * merchant routes' 8 MiB body limit and the import failed with 413 on a file the dashboard takes (audit A3-5). The
 * margin below 8 MiB leaves room for the envelope; a line larger than this on its own is sent alone.
 */
export const BATCH_BYTES = 6 * 1024 * 1024;

const USAGE = `usage: bun run cli <command>
  import <slug> <catalog.jsonl> [--url URL] [--token JWT | --email E --password P] [--batch N]
      push a JSON-lines catalog to the running service (env: ACS_URL, ACS_TOKEN, ACS_EMAIL, ACS_PASSWORD)
  cluster status
      live actor hosts, partitions owned per host and activations per kind (env: NATS_URL, ACTOR_PARTITIONS);
      exit 3 with a WARNING when no host is live or a partition has no live owner`;

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
  return pushCatalog({ url, token, slug, file, batchSize });
};

/** The lines of a file with their 1-based numbers, read chunk by chunk (the reader the dashboard's upload uses). */
export function readLines(file: string): AsyncGenerator<ImportLine> {
  return linesOf(Bun.file(file).stream());
}

/**
 * Streams the file through PUT /catalog, a batch at a time, each batch after the previous one's answer. The result
 * does not depend on the batch size: the first line the API accepts with an externalId wins, and a later line with
 * the same externalId is refused, whichever batch it falls in (the API itself can only see repeats inside one batch;
 * audit A2 LOW-2). A rejected line claims nothing, so a correction appended after it is imported (review R5-1). The
 * rule is actors/store/import-file.ts, shared with the dashboard's upload. Memory holds one batch and the accepted
 * externalIds (with their line), not the file.
 */
async function pushCatalog(o: { url: string; token: string; slug: string; file: string; batchSize: number }): Promise<number> {
  const totalBytes = Bun.file(o.file).size;
  const tty = process.stderr.isTTY === true;
  const repeats = externalIdRepeats();
  let lines = 0;
  let accepted = 0;
  let rejected = 0;
  let badJson = 0;
  let bytesRead = 0;
  const started = performance.now();
  const report = (text: string) => process.stderr.write(tty ? `\r\x1b[K${text}\n` : `${text}\n`);
  const progress = () => {
    const rate = Math.round(lines / Math.max(0.001, (performance.now() - started) / 1000));
    const text = `${progressBar(bytesRead, totalBytes)} bytes, ${lines} lines, ${rate} lines/s`;
    process.stderr.write(tty ? `\r${text}` : `${text}\n`);
  };
  let batch: { line: number; item: unknown }[] = [];
  let batchBytes = 0;
  const flush = async (): Promise<boolean> => {
    if (batch.length === 0) return true;
    const r = await fetch(`${o.url}/api/v1/merchant/stores/${encodeURIComponent(o.slug)}/catalog`, {
      method: "PUT",
      headers: { "content-type": "application/json", authorization: `Bearer ${o.token}` },
      body: JSON.stringify({ products: batch.map((b) => b.item) }),
    });
    const body = (await r.json().catch(() => ({}))) as { data?: { accepted: number } & BatchAnswer; error?: string };
    if (r.status !== 200 || !body.data) {
      // the batches before it are committed: say so, or the merchant cannot tell a partial import from none
      const before = accepted > 0 ? ` (the ${accepted} line${accepted === 1 ? "" : "s"} accepted before it stay imported)` : "";
      report(`cli import: batch starting at line ${batch[0]!.line} failed (${r.status}): ${body.error ?? "no answer"}${before}`);
      return false;
    }
    accepted += body.data.accepted;
    for (const rej of repeats.settle(batch, body.data)) {
      rejected++;
      report(`rejected line ${rej.line} (${rej.externalId ?? "no externalId"}): ${rej.errors.map((e) => `${e.field} ${e.message}`).join("; ")}`);
    }
    batch = [];
    batchBytes = 0;
    progress();
    return true;
  };
  for await (const l of readLines(o.file)) {
    bytesRead = l.bytesRead;
    const text = l.text.trim();
    if (text.length === 0) continue;
    lines++;
    let item: unknown;
    try {
      item = JSON.parse(text);
    } catch {
      badJson++;
      report(`line ${l.line}: not valid JSON, skipped`);
      continue;
    }
    // the line as it will be sent (re-serialised), plus its comma. Flushed before the repeat check, which must see
    // the answer for every earlier batch (externalIdRepeats: settle before checking the next batch's lines).
    const bytes = Buffer.byteLength(JSON.stringify(item)) + 1;
    if (batch.length > 0 && batchBytes + bytes > BATCH_BYTES && !(await flush())) return 1;
    const repeat = repeats.check(item, l.line);
    if (repeat) {
      rejected++;
      report(`rejected line ${l.line} (${repeat.externalId}): ${repeat.field} ${repeat.message}`);
      continue;
    }
    batch.push({ line: l.line, item });
    batchBytes += bytes;
    if (batch.length >= o.batchSize && !(await flush())) return 1;
  }
  if (!(await flush())) return 1;
  bytesRead = totalBytes;
  progress();
  if (tty) process.stderr.write("\n");
  process.stdout.write(`imported ${accepted} of ${lines} lines into ${o.slug} (${rejected} rejected, ${badJson} not JSON)\n`);
  return rejected + badJson > 0 ? 1 : 0;
}

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
  const { ACTOR_KINDS, clusterStatus, clusterStatusExitCode, formatClusterStatus } = await import("./cluster-status.ts");
  // the service's actor kinds are expected whether or not a live host names them (audit M-3)
  const status = await clusterStatus(natsUrl, { kinds: ACTOR_KINDS, partitions: Number(process.env.ACTOR_PARTITIONS) || undefined });
  process.stdout.write(`${formatClusterStatus(status)}\n`);
  return clusterStatusExitCode(status);
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
