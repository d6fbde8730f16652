/** Polls `fn` every 25 ms until it returns something truthy (which it returns), or throws after `timeoutMs`. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

/**
 * Polls `f` every 100 ms until `ok` holds for what it returns (which it returns), or throws after `ms`, naming `what`
 * and the last value (a timer, a reminder poll, a row written by another process).
 */
export async function until<T>(what: string, f: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  let v = await f();
  while (!ok(v)) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await Bun.sleep(100);
    v = await f();
  }
  return v;
}
