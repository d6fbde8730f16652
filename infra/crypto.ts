/**
 * Envelope encryption for secrets at rest (trust signing keys now, wallet private keys later).
 *
 * Format of a sealed value: `v1.<iv>.<ciphertext||tag>`, both parts base64url without padding.
 * - AES-256-GCM with a fresh random 12-byte IV per seal: GCM's security collapses if an IV repeats under one key,
 *   and random 96-bit IVs are safe for far more seals than one key-encryption key will ever see here.
 * - The 16-byte tag is appended to the ciphertext so the sealed string stays one opaque value.
 * - The optional AAD binds a sealed value to its purpose (e.g. "trust-signing-key"): a value sealed for one
 *   purpose cannot be opened as another even under the same KEK.
 * - The version prefix lets a later format (other cipher, key id of the KEK) coexist with stored v1 values.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from "node:crypto";

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEK_BYTES = 32;

/** Raised for every way a sealed value can fail to open; the message never contains key material. */
export class SealError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SealError";
  }
}

export function generateKek(): Uint8Array {
  return new Uint8Array(randomBytes(KEK_BYTES));
}

function checkKek(kek: Uint8Array): void {
  if (!(kek instanceof Uint8Array) || kek.length !== KEK_BYTES) {
    throw new SealError(`key-encryption key must be ${KEK_BYTES} bytes`);
  }
}

function toBytes(data: Uint8Array | string): Uint8Array {
  return typeof data === "string" ? new TextEncoder().encode(data) : data;
}

export function base64urlEncode(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64url");
}

export function base64urlDecode(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new SealError("not base64url");
  return new Uint8Array(Buffer.from(text, "base64url"));
}

export function seal(kek: Uint8Array, plaintext: Uint8Array | string, aad?: Uint8Array | string): string {
  checkKek(kek);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", kek, iv, { authTagLength: TAG_BYTES });
  if (aad !== undefined) cipher.setAAD(toBytes(aad));
  const body = Buffer.concat([cipher.update(toBytes(plaintext)), cipher.final(), cipher.getAuthTag()]);
  return `${VERSION}.${base64urlEncode(iv)}.${base64urlEncode(body)}`;
}

/** Opens a value made by `seal`; throws SealError on a wrong key, wrong AAD, tampering or a malformed value. */
export function open(kek: Uint8Array, sealed: string, aad?: Uint8Array | string): Uint8Array {
  checkKek(kek);
  const parts = typeof sealed === "string" ? sealed.split(".") : [];
  if (parts.length !== 3 || parts[0] !== VERSION) throw new SealError("unsupported sealed value format");
  const iv = base64urlDecode(parts[1]);
  const body = base64urlDecode(parts[2]);
  if (iv.length !== IV_BYTES || body.length < TAG_BYTES) throw new SealError("malformed sealed value");
  const decipher = createDecipheriv("aes-256-gcm", kek, iv, { authTagLength: TAG_BYTES });
  if (aad !== undefined) decipher.setAAD(toBytes(aad));
  decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
  try {
    return new Uint8Array(Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]));
  } catch {
    // One message for wrong key, wrong AAD and tampering: which one it was is nobody's business.
    throw new SealError("sealed value failed authentication");
  }
}

export function openString(kek: Uint8Array, sealed: string, aad?: Uint8Array | string): string {
  return new TextDecoder("utf-8", { fatal: true }).decode(open(kek, sealed, aad));
}

/**
 * Constant-time string equality. Both sides are hashed first so the comparison takes the same time whatever the
 * lengths (timingSafeEqual itself requires equal lengths and would leak the length through an early exit).
 */
export function timingSafeEqualStr(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a, "utf8").digest();
  const hb = createHash("sha256").update(b, "utf8").digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}
