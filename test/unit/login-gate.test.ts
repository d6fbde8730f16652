import { describe, expect, test } from "bun:test";
import { ipBucketKey, LOGIN_PER_EMAIL, LOGIN_PER_IP, loginBuckets } from "../../actors/agent/limits.ts";
import { BoundedGate, PasswordChecksBusy, phcParameters } from "../../infra/passwords.ts";

describe("the password-check gate", () => {
  test("runs at most inFlight tasks at once, queues up to queue more, and refuses the rest at once", async () => {
    const gate = new BoundedGate(2, 3);
    let running = 0;
    let peak = 0;
    const releases: (() => void)[] = [];
    const task = () =>
      gate.run(async () => {
        running++;
        peak = Math.max(peak, running);
        await new Promise<void>((r) => releases.push(r));
        running--;
        return "done";
      });
    const accepted = Array.from({ length: 5 }, task);
    await expect(task()).rejects.toBeInstanceOf(PasswordChecksBusy);
    // drain: each release lets one queued task start
    while (releases.length > 0 || running > 0) {
      await Bun.sleep(1);
      releases.shift()?.();
    }
    expect(await Promise.all(accepted)).toEqual(["done", "done", "done", "done", "done"]);
    expect(peak).toBe(2);
    // the slots are free again
    expect(await gate.run(async () => 1)).toBe(1);
  });

  test("a failing task frees its slot", async () => {
    const gate = new BoundedGate(1, 0);
    await expect(gate.run(async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await gate.run(async () => 2)).toBe(2);
  });
});

describe("log-in buckets", () => {
  test("one per address (IPv6 by its /64) and one per e-mail digest, the address first", () => {
    const [ip, email] = loginBuckets("2001:db8:1:2:3:4:5:6", "abc");
    expect(ip).toEqual({ id: `ip:${ipBucketKey("2001:db8:1:2::9")}:login`, ...LOGIN_PER_IP, owner: `ip/${ipBucketKey("2001:db8:1:2::9")}`, layer: "login" });
    expect(email).toEqual({ id: "login:abc", ...LOGIN_PER_EMAIL, owner: "login/abc", layer: "login" });
    expect(loginBuckets("10.0.0.1")).toHaveLength(1);
    expect(LOGIN_PER_EMAIL.limit).toBeGreaterThan(LOGIN_PER_IP.limit);
  });
});

test("the PHC parameter string is what a verification costs, without salt or digest", () => {
  expect(phcParameters("$argon2id$v=19$m=65536,t=3,p=1$c2FsdHNhbHQ$ZGlnZXN0")).toBe("argon2id$v=19$m=65536,t=3,p=1");
});
