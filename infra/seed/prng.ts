/**
 * Deterministic randomness for seeds. Every generator takes an explicit `Rng`; nothing reads Math.random, so a
 * seed number always yields the same data. `fork(label)` derives an independent stream, so adding a merchant or a
 * field to one part of the seed does not shift the numbers drawn everywhere else.
 */
import { createHash } from "node:crypto";

/** mulberry32: tiny, fast, good enough statistical quality for fixtures. Returns floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** 32-bit FNV-1a of a string, used to turn labels into sub-seeds. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export class Rng {
  private readonly next: () => number;
  constructor(readonly seed: number) {
    this.next = mulberry32(seed);
  }

  /** An independent stream named by `label`. */
  fork(label: string): Rng {
    return new Rng(hash32(`${this.seed}:${label}`));
  }

  float(): number {
    return this.next();
  }

  /** Integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** Float in [min, max). */
  range(min: number, max: number): number {
    return min + this.next() * (max - min);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<V>(items: readonly V[]): V {
    if (items.length === 0) throw new Error("pick from an empty list");
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** `count` distinct items (or all of them when there are fewer), in random order. */
  sample<V>(items: readonly V[], count: number): V[] {
    return this.shuffle(items).slice(0, Math.min(count, items.length));
  }

  shuffle<V>(items: readonly V[]): V[] {
    const out = items.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }

  /** Picks by weight: `[[value, weight], …]`. */
  weighted<V>(entries: ReadonlyArray<readonly [V, number]>): V {
    const total = entries.reduce((s, [, w]) => s + w, 0);
    let x = this.next() * total;
    for (const [value, w] of entries) {
      x -= w;
      if (x < 0) return value;
    }
    return entries[entries.length - 1]![0];
  }
}

/** Namespace for our name-based ids (a fixed random UUID). */
const SEED_NAMESPACE = "5b0c8e1e-3f4a-4d8b-9a55-0c2f7d6e9a41";

/**
 * RFC 4122 version-5 UUID from a name: the same parts always give the same id, across runs and machines.
 * Seeds use it so products, variants and orders have ids tests can rely on.
 */
export function stableUuid(...parts: Array<string | number>): string {
  const ns = Buffer.from(SEED_NAMESPACE.replace(/-/g, ""), "hex");
  const hash = createHash("sha1").update(ns).update(parts.join(":")).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** Mod-10 check digit for a GTIN body (all digits but the last). */
export function gtinCheckDigit(body: string): number {
  let sum = 0;
  for (let i = body.length - 1, w = 3; i >= 0; i--, w = w === 3 ? 1 : 3) sum += Number(body[i]) * w;
  return (10 - (sum % 10)) % 10;
}

/** A GTIN-13 with a valid check digit; `prefix` (digits) pins the first digits, e.g. a fake company prefix. */
export function makeGtin13(rng: Rng, prefix = ""): string {
  let body = prefix;
  while (body.length < 12) body += String(rng.int(0, 9));
  return body + String(gtinCheckDigit(body));
}

/** Hex SHA-256, for buyer references (never store a raw buyer identity). */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
