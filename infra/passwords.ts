/**
 * Password hashing: argon2id through Bun.password (the PHC string carries its own salt and parameters, so
 * parameters can be raised later without a migration).
 *
 * `verifyLoginTimingSafe` spends one argon2id verification whether or not the account exists, so the login
 * endpoint does not reveal registered e-mail addresses through its response time. That only holds if every stored
 * hash costs what the dummy costs: every hash is made by `hashPassword` (seeding included), and a successful login
 * with a hash of other parameters gets a fresh one (`upgradedHash`), so hashes of older parameters converge.
 *
 * Each verification holds 64 MiB and a core for a few hundred milliseconds, so at most `VERIFY_IN_FLIGHT` run at
 * once and `VERIFY_QUEUE` wait; any more is refused at once (`PasswordChecksBusy`, a 503 at the edge) rather than
 * queued behind a burst for minutes (docs/access.md).
 */
import { availableParallelism } from "node:os";

/** OWASP's argon2id baseline (19 MiB, t=2) is the floor; we use 64 MiB, t=3. */
export const ARGON2_PARAMS = { algorithm: "argon2id", memoryCost: 65536, timeCost: 3 } as const;

/**
 * The cost the test suite hashes at (1 MiB, t=1: ~1 ms a hash). At the production cost each log-in of the suite
 * spends 0.3-0.5 s of a core on the 2-core CI machine, and the suite logs in many hundreds of times (a seeded admin per
 * server, merchants, the seed template): the same reason Django's test settings swap the password hasher and Devise
 * sets `stretches = 1` in tests. Only under the test runner (`passwordCostFor`); the tests that are about the cost
 * itself (the verification gate's bound, the unknown e-mail's timing) switch to the production cost with
 * `usePasswordCost` (test/http/login-limits.test.ts, test/http/auth.test.ts).
 */
export const TEST_ARGON2_PARAMS = { algorithm: "argon2id", memoryCost: 1024, timeCost: 1 } as const;

export type Argon2Params = typeof ARGON2_PARAMS | typeof TEST_ARGON2_PARAMS;

/**
 * The parameters new hashes get in a process with this environment: the test cost only when NODE_ENV is `test` in
 * the process's own environment (`bun test` sets it; so do the suite's child processes, which inherit it), never for
 * a service started any other way, whatever its configuration file says.
 */
export function passwordCostFor(env: Record<string, string | undefined>): Argon2Params {
  return env.NODE_ENV === "test" ? TEST_ARGON2_PARAMS : ARGON2_PARAMS;
}

let params: Argon2Params = passwordCostFor(process.env);

/**
 * Tests only: hash (and make the dummy) at `cost` from now on in this process; returns the undo. The stored hashes
 * keep theirs (a successful log-in re-hashes them at the new cost, `upgradedHash`).
 */
export function usePasswordCost(cost: Argon2Params): () => void {
  const before = params;
  params = cost;
  dummyHash = undefined;
  return () => {
    params = before;
    dummyHash = undefined;
  };
}
/** Longer inputs are refused before hashing: a cheap guard against hash-flooding with huge passwords. */
export const MAX_PASSWORD_LENGTH = 1024;

export async function hashPassword(password: string): Promise<string> {
  if (password.length === 0) throw new Error("password must not be empty");
  if (password.length > MAX_PASSWORD_LENGTH) throw new Error("password too long");
  return Bun.password.hash(password, params);
}

export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  if (password.length === 0 || password.length > MAX_PASSWORD_LENGTH) return false;
  try {
    return await Bun.password.verify(password, hash, "argon2id");
  } catch {
    // A malformed stored hash is a failed login, not a 500.
    return false;
  }
}

/** Password verifications (or hashes) running at once, and waiting for a slot; numbers in docs/access.md. */
export const VERIFY_IN_FLIGHT = 2 * availableParallelism();
export const VERIFY_QUEUE = 4 * availableParallelism();

/** Thrown when `VERIFY_IN_FLIGHT` checks run and `VERIFY_QUEUE` wait already: the caller answers 503 + Retry-After. */
export class PasswordChecksBusy extends Error {
  constructor() {
    super("too many password checks in progress");
  }
}

/** A counting semaphore with a bounded queue: `run` starts `fn` when a slot is free, or refuses when the queue is full. */
export class BoundedGate {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(
    readonly inFlight: number,
    readonly queue: number,
  ) {}

  /** Checks running and waiting now (tests wait for a full gate instead of guessing how long a burst takes). */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.inFlight) {
      if (this.waiting.length >= this.queue) throw new PasswordChecksBusy();
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else this.running++;
    try {
      return await fn();
    } finally {
      // hand the slot straight to the next waiter (the count stays), or free it
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}

const gate = new BoundedGate(VERIFY_IN_FLIGHT, VERIFY_QUEUE);

/** The log-in gate's checks running and waiting now, in this process. */
export function passwordCheckLoad(): { running: number; waiting: number } {
  return gate.load;
}

let dummyHash: Promise<string> | undefined;

/** The hash verified when there is no account: same algorithm and parameters as real ones, so the same cost. */
function dummy(): Promise<string> {
  dummyHash ??= Bun.password.hash(crypto.randomUUID(), params);
  return dummyHash;
}

/** Computes the dummy hash ahead of time (call at start-up) so the first unknown-user login is not slower. */
export async function primeLoginTiming(): Promise<void> {
  await dummy();
}

/**
 * Checks a login. `storedHashOrNull` is the account's hash, or null when no account has that e-mail; in that
 * case a dummy hash is verified and the answer is false.
 */
export async function verifyLoginTimingSafe(storedHashOrNull: string | null, password: string): Promise<boolean> {
  const candidate = password.length > MAX_PASSWORD_LENGTH ? password.slice(0, MAX_PASSWORD_LENGTH) : password;
  if (storedHashOrNull === null) {
    const against = await dummy();
    await gate.run(() => verifyPassword(candidate || " ", against));
    return false;
  }
  const ok = await gate.run(() => verifyPassword(candidate || " ", storedHashOrNull));
  return ok && password.length > 0 && password.length <= MAX_PASSWORD_LENGTH;
}

/** The parameter part of a PHC string (`argon2id$v=19$m=65536,t=3,p=1`): what a verification against it costs. */
export function phcParameters(hash: string): string {
  return hash.split("$").slice(1, 4).join("$");
}

/** The PHC parameters every stored hash should have: those of the dummy (ARGON2_PARAMS; TEST_ARGON2_PARAMS in the test suite). */
export async function currentPhcParameters(): Promise<string> {
  return phcParameters(await dummy());
}

/**
 * After a successful login: a new hash of `password` when `storedHash` was made with other parameters (an older
 * seed, a raised cost), else null. The caller stores it, so every account converges on the dummy's cost.
 */
export async function upgradedHash(storedHash: string, password: string): Promise<string | null> {
  if (phcParameters(storedHash) === (await currentPhcParameters())) return null;
  return gate.run(() => hashPassword(password));
}
