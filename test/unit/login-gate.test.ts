import { describe, expect, test } from "bun:test";
import { ipBucketKey, LOGIN_WINDOW_MS, loginBuckets } from "../../actors/agent/limits.ts";
import { ConfigError, loadConfig } from "../../infra/config.ts";
import { ARGON2_PARAMS, BoundedGate, currentPhcParameters, hashPassword, passwordCostFor, PasswordChecksBusy, phcParameters, TEST_ARGON2_PARAMS, usePasswordCost } from "../../infra/passwords.ts";

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
  const limits = { perIp: 30, perEmail: 100 };

  test("one per address (IPv6 by its /64) and one per e-mail digest, the address first", () => {
    const [ip, email] = loginBuckets(limits, "2001:db8:1:2:3:4:5:6", "abc");
    const key = ipBucketKey("2001:db8:1:2::9");
    expect(ip).toEqual({ id: `ip:${key}:login`, limit: 30, windowMs: 15 * 60_000, owner: `ip/${key}`, layer: "login" });
    expect(email).toEqual({ id: "login:abc", limit: 100, windowMs: 15 * 60_000, owner: "login/abc", layer: "login" });
    expect(loginBuckets(limits, "10.0.0.1")).toHaveLength(1);
  });

  test("production allows 30 failed log-ins per address and 100 per account in 15 minutes (docs/access.md)", () => {
    const c = loadConfig({ NODE_ENV: "production" });
    expect({ perIp: c.LOGIN_LIMIT_PER_IP, perEmail: c.LOGIN_LIMIT_PER_EMAIL, windowMs: LOGIN_WINDOW_MS }).toEqual({ perIp: 30, perEmail: 100, windowMs: 15 * 60_000 });
  });

  test("a per-account limit not above the per-address one is refused at start-up", () => {
    expect(() => loadConfig({ LOGIN_LIMIT_PER_IP: "10", LOGIN_LIMIT_PER_EMAIL: "10" })).toThrow(ConfigError);
    expect(loadConfig({ LOGIN_LIMIT_PER_IP: "4", LOGIN_LIMIT_PER_EMAIL: "10" }).LOGIN_LIMIT_PER_EMAIL).toBe(10);
  });
});

test("the PHC parameter string is what a verification costs, without salt or digest", () => {
  expect(phcParameters("$argon2id$v=19$m=65536,t=3,p=1$c2FsdHNhbHQ$ZGlnZXN0")).toBe("argon2id$v=19$m=65536,t=3,p=1");
});

describe("the argon2id cost", () => {
  test("a service hashes at 64 MiB, t=3 (above OWASP's 19 MiB, t=2 baseline) unless its own environment says NODE_ENV=test", () => {
    expect(ARGON2_PARAMS).toEqual({ algorithm: "argon2id", memoryCost: 65536, timeCost: 3 });
    expect(passwordCostFor({})).toBe(ARGON2_PARAMS);
    expect(passwordCostFor({ NODE_ENV: "production" })).toBe(ARGON2_PARAMS);
    expect(passwordCostFor({ NODE_ENV: "development" })).toBe(ARGON2_PARAMS);
    expect(passwordCostFor({ NODE_ENV: "test" })).toBe(TEST_ARGON2_PARAMS);
  });

  test("usePasswordCost changes what new hashes and the dummy cost, and its undo restores the suite's cost", async () => {
    expect(phcParameters(await hashPassword("p"))).toBe("argon2id$v=19$m=1024,t=1,p=1");
    const undo = usePasswordCost(ARGON2_PARAMS);
    try {
      expect(phcParameters(await hashPassword("p"))).toBe("argon2id$v=19$m=65536,t=3,p=1");
      expect(await currentPhcParameters()).toBe("argon2id$v=19$m=65536,t=3,p=1");
    } finally {
      undo();
    }
    expect(await currentPhcParameters()).toBe("argon2id$v=19$m=1024,t=1,p=1");
  });
});
