/**
 * Freeze a host (SIGSTOP) in the middle of a turn until its heartbeat expires and the other host takes its
 * actors over; keep writing; then SIGCONT it. Its late write is refused by fencing, nothing is applied twice,
 * no acknowledged write is lost, and the state of the actor it held never goes backwards.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ledger } from "./fixtures/ledger.ts";
import { Env, checkLedgers, runLoad, type Outcome } from "./harness.ts";

let env: Env;
beforeAll(async () => {
  env = await Env.start({ hosts: ["host-a", "host-b"] });
}, 40_000);
afterAll(async () => {
  // a stopped process must be able to die too
  try {
    env?.signal("host-a", "SIGCONT");
  } catch {
    // gone
  }
  await env?.teardown();
}, 30_000);

test("a frozen host's late write is refused by fencing and no state goes backwards", async () => {
  const accounts = Array.from({ length: 16 }, (_, i) => `acct-${i}`);
  const onA = accounts.filter((a) => env.ownerOf(a, ["host-a", "host-b"]) === "host-a");
  const x = onA[0];
  expect(x).toBeDefined();
  await env.client.ask(ledger, x, "deposit", { ref: "warm", amount: 1 });
  const fencingBefore = (await env.stats("host-a")).fencing;

  // watch the actor's durable row and its answers: neither version nor deposit count may ever decrease
  const regressions: string[] = [];
  let watching = true;
  const watcher = (async () => {
    let lastVersion = 0;
    let lastCount = 0;
    while (watching) {
      const [row] = await env.db.sql<{ version: number; n: number }[]>`
        SELECT version, jsonb_array_length(state->'refs') AS n FROM actor_state WHERE kind = 'ledger' AND id = ${x}`;
      if (row) {
        if (Number(row.version) < lastVersion || row.n < lastCount) regressions.push(`row went from v${lastVersion}/${lastCount} to v${row.version}/${row.n}`);
        lastVersion = Number(row.version);
        lastCount = row.n;
      }
      await Bun.sleep(25);
    }
  })();
  let lastSeen = 0;
  const reader = (async () => {
    while (watching) {
      try {
        const s = await env.client.ask(ledger, x, "get", {}, { timeoutMs: 3000 });
        if (s.refs.length < lastSeen) regressions.push(`read ${s.refs.length} deposits after ${lastSeen}`);
        lastSeen = Math.max(lastSeen, s.refs.length);
      } catch {
        // unavailable while the partition moves
      }
      await Bun.sleep(20);
    }
  })();

  // background load on every other account; x only gets the writes below, so the slow turn is certainly
  // running (not queued behind others) when host-a freezes
  let stopLoad = false;
  const load = runLoad(env, { accounts: accounts.filter((a) => a !== x), workers: 24, tag: "f", stop: () => stopLoad });

  // a slow deposit: host-a reads the state, then is frozen before it writes. The delay stays below the
  // caller's per-attempt timeout (1 s) so its retry through host-b is acknowledged; a turn longer than the
  // attempt timeout makes the caller retry for as long as the turn runs, which can outlast the actor's
  // 32-reply dedupe window on a busy actor (a runtime limit, see docs/operations.md)
  const slowStart = Date.now();
  const slow = env.client
    .ask(ledger, x, "deposit", { ref: "slow", amount: 1, delayMs: 600 }, { timeoutMs: 20_000 })
    .then(
      () => ({ ref: "slow", account: x, start: slowStart, end: Date.now(), ok: true }) as Outcome,
      (e) => ({ ref: "slow", account: x, start: slowStart, end: Date.now(), ok: false, error: String(e) }) as Outcome,
    );
  await Bun.sleep(200);
  const stoppedAt = Date.now();
  env.signal("host-a", "SIGSTOP");

  // host-b takes x over once host-a's heartbeat is stale; wait for writes to x through host-b
  let takeoverMs = -1;
  const takeoverDeadline = Date.now() + 15_000;
  while (Date.now() < takeoverDeadline) {
    const s = await env.stats("host-b");
    if (s.owned.length === 16) {
      takeoverMs = Date.now() - stoppedAt;
      break;
    }
    await Bun.sleep(100);
  }
  expect(takeoverMs).toBeGreaterThan(0);
  const viaB = await env.client.ask(ledger, x, "deposit", { ref: "via-b", amount: 1 }, { timeoutMs: 10_000 });
  // keep writing to x, one at a time: through host-b now, through host-a again after it rejoins
  const xWrites: Outcome[] = [];
  const xWriter = (async () => {
    for (let i = 0; !stopLoad; i++) {
      const ref = `x-${i}`;
      const start = Date.now();
      try {
        await env.client.ask(ledger, x, "deposit", { ref, amount: 1 }, { timeoutMs: 20_000 });
        xWrites.push({ ref, account: x, start, end: Date.now(), ok: true });
      } catch (e) {
        xWrites.push({ ref, account: x, start, end: Date.now(), ok: false, error: String(e) });
      }
    }
  })();
  await Bun.sleep(1500);

  env.signal("host-a", "SIGCONT");
  const contAt = Date.now();
  // host-a finishes its old turn (fenced), notices it was paused, and rejoins with fresh state
  await env.waitPlacement(["host-a", "host-b"], 15_000);
  const rejoinMs = Date.now() - contAt;
  await Bun.sleep(1500); // writes keep flowing to x, now back on host-a
  stopLoad = true;
  await xWriter;
  const outcomes = [...(await load), await slow, ...xWrites];
  watching = false;
  await Promise.all([watcher, reader]);

  const a = await env.stats("host-a");
  const ledgers = await env.ledgers();
  const { acked, failed, problems } = checkLedgers(outcomes, ledgers);
  const final = ledgers.get(x)!;
  console.log(
    `[host-freeze] host-b owned everything ${takeoverMs} ms after SIGSTOP; host-a back in placement ${rejoinMs} ms after SIGCONT; ` +
      `fencing refusals on host-a: ${a.fencing - fencingBefore}; ${outcomes.length} deposits, ${acked} acknowledged, ${failed} failed; ` +
      `x has ${final.refs.length} deposits at version ${final.version}`,
  );
  if (problems.length || regressions.length) console.log(problems.join("\n"), regressions.join("\n"), env.dump());
  expect(viaB.count).toBeGreaterThan(1);
  expect(a.fencing - fencingBefore).toBeGreaterThanOrEqual(1); // the frozen turn's write was refused
  expect(problems).toEqual([]);
  expect(regressions).toEqual([]);
  expect(failed).toBe(0);
  expect(final.refs.filter((r) => r === "slow").length).toBe(1);
  expect(final.refs).toContain("via-b");
  expect(xWrites.filter((o) => o.ok).length).toBeGreaterThan(10);
}, 45_000);
