/**
 * Password hashing: argon2id through Bun.password (the PHC string carries its own salt and parameters, so
 * parameters can be raised later without a migration).
 *
 * `verifyLoginTimingSafe` spends one argon2id verification whether or not the account exists, so the login
 * endpoint does not reveal registered e-mail addresses through its response time.
 */

/** OWASP's argon2id baseline (19 MiB, t=2) is the floor; we use 64 MiB, t=3. */
export const ARGON2_PARAMS = { algorithm: "argon2id", memoryCost: 65536, timeCost: 3 } as const;
/** Longer inputs are refused before hashing: a cheap guard against hash-flooding with huge passwords. */
export const MAX_PASSWORD_LENGTH = 1024;

export async function hashPassword(password: string): Promise<string> {
  if (password.length === 0) throw new Error("password must not be empty");
  if (password.length > MAX_PASSWORD_LENGTH) throw new Error("password too long");
  return Bun.password.hash(password, ARGON2_PARAMS);
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

let dummyHash: Promise<string> | undefined;

/** The hash verified when there is no account: same algorithm and parameters as real ones, so the same cost. */
function dummy(): Promise<string> {
  dummyHash ??= Bun.password.hash(crypto.randomUUID(), ARGON2_PARAMS);
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
    await verifyPassword(candidate || " ", await dummy());
    return false;
  }
  const ok = await verifyPassword(candidate || " ", storedHashOrNull);
  return ok && password.length > 0 && password.length <= MAX_PASSWORD_LENGTH;
}
