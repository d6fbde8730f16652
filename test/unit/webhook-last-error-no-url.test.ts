/**
 * Audit W-8: the error an attempt records (`lastError`, and from it the "webhook endpoint disabled" warning log and
 * `disabledReason`) never carries the endpoint URL's path or query, which may hold the receiver's token
 * (docs/webhooks.md: the log has the `host`, "never the URL's path or query"). Bun's fetch error for a TLS name
 * mismatch reads `ERR_TLS_CERT_ALTNAME_INVALID fetching "https://<ip>/hooks?token=…"`, and attemptDelivery stored the
 * message as it is. The receiver here presents a certificate for hooks.test, trusted through NODE_EXTRA_CA_CERTS in a
 * child process, and the endpoint is addressed by IP, so the name does not match.
 */
import { expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const CERT = `-----BEGIN CERTIFICATE-----
MIIBlzCCAT6gAwIBAgIUPRIQ3kQs3J2ImgWauxFmfroshoQwCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKaG9va3MudGVzdDAgFw0yNjExMjQwMDU4MDVaGA8yMTI2MTAz
MTAwNTgwNVowFTETMBEGA1UEAwwKaG9va3MudGVzdDBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABDo1svzhroeeGSdbekJKB74K5hUOronMmEskSRJm0TdT619ub/eJ
ZTRbf8oSIiujAFTKLQmNDkjotkG62+svCOCjajBoMB0GA1UdDgQWBBQE2a4VIISw
W3QxTkwQuThVWVBrPjAfBgNVHSMEGDAWgBQE2a4VIISwW3QxTkwQuThVWVBrPjAP
BgNVHRMBAf8EBTADAQH/MBUGA1UdEQQOMAyCCmhvb2tzLnRlc3QwCgYIKoZIzj0E
AwIDRwAwRAIgWvrU1MUZa5kVU1bLwgumrBfU+mlN7qCBglTgvGrKL5ACIHgT1s6G
3+NKJqOFdYYAvnhmB94NXgdJI+h6aaAVkP3h
-----END CERTIFICATE-----`;
const KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgrt/+OI2Fbvp+ez4h
S3YuGUIqt5nvz/aV5x9Du5FoDoGhRANCAAQ6NbL84a6HnhknW3pCSge+CuYVDq6J
zJhLJEkSZtE3U+tfbm/3iWU0W3/KEiIrowBUyi0JjQ5I6LZButvrLwjg
-----END PRIVATE KEY-----`;

test("a TLS name mismatch: lastError names the failure, not the URL's path or query", async () => {
  const dir = await mkdtemp(join(tmpdir(), "w8-"));
  try {
    await writeFile(join(dir, "ca.pem"), CERT);
    await writeFile(join(dir, "key.pem"), KEY);
    const script = `
      import { attemptDelivery } from ${JSON.stringify(join(import.meta.dir, "../../actors/webhook/deliver.ts"))};
      const s = Bun.serve({ port: 0, hostname: "127.0.0.1", tls: { cert: await Bun.file(${JSON.stringify(join(dir, "ca.pem"))}).text(), key: await Bun.file(${JSON.stringify(join(dir, "key.pem"))}).text() }, fetch: () => new Response(null, { status: 204 }) });
      const r = await attemptDelivery({ url: "https://127.0.0.1:" + s.port + "/hooks/acct-7/in?token=SECRET123", eventId: crypto.randomUUID(), eventKind: "order.created", body: "{}", attempt: 1, secrets: ["whsec_x"], timestampSec: 1, allowPrivate: true });
      s.stop(true);
      console.log(JSON.stringify(r));`;
    await writeFile(join(dir, "probe.ts"), script);
    const child = Bun.spawn(["bun", join(dir, "probe.ts")], { env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, "ca.pem") }, stdout: "pipe", stderr: "pipe" });
    const out = await new Response(child.stdout).text();
    expect(await child.exited).toBe(0);
    const r = JSON.parse(out.trim().split("\n").pop()!) as { delivered: boolean; error: string | null };
    expect(r.delivered).toBe(false);
    expect(r.error).toContain("ERR_TLS_CERT_ALTNAME_INVALID");
    expect(r.error).not.toContain("SECRET123");
    expect(r.error).not.toContain("/hooks/acct-7");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}, 30_000);
