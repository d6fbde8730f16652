/**
 * SSRF guard for caller-supplied URLs (webhook endpoints, x402 facilitator URLs, image URLs, …).
 *
 * `assertPublicUrl` vets the scheme, refuses credentials, parses every IP literal form (including the legacy
 * decimal/octal/hex IPv4 forms and IPv4-mapped IPv6), RESOLVES the hostname and refuses if ANY address is not
 * public. It returns the vetted addresses: the caller must connect to one of those exact IPs (sending the original
 * Host header / TLS server name), otherwise a second DNS lookup at connect time could return a different, internal
 * address (DNS rebinding). Redirects must not be followed blindly for the same reason: vet each Location again.
 *
 * One refused address refuses the whole name, even when the others are public: a name answering with a public and
 * a private address is the shape of a rebinding attack, and a caller falling back from the public address to the
 * next one (infra/outbound-http.ts `fetchVetted`) must never land on the private one. So `addresses` is never a
 * filtered list: it is every address the name resolved to, all of them acceptable, or the URL is refused.
 */
import { lookup } from "node:dns/promises";
import { fail } from "../actors/runtime/errors.ts";

// ------------------------------------------------------------------------------------------- IP parsing

/**
 * Parses IPv4 in every form `inet_aton` accepts (1 to 4 parts, each decimal, octal with a leading 0, or hex with
 * 0x): `127.0.0.1`, `2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`. Returns the 4 bytes or null.
 */
export function parseIPv4(input: string): Uint8Array | null {
  const parts = input.split(".");
  if (parts.length === 0 || parts.length > 4) return null;
  const nums: number[] = [];
  for (const part of parts) {
    let n: number;
    if (/^0x[0-9a-f]*$/i.test(part)) n = part.length === 2 ? 0 : parseInt(part.slice(2), 16);
    else if (/^0[0-7]+$/.test(part)) n = parseInt(part.slice(1), 8);
    else if (/^(0|[1-9][0-9]*)$/.test(part)) n = Number(part);
    else return null;
    if (!Number.isSafeInteger(n)) return null;
    nums.push(n);
  }
  const last = nums.pop()!;
  if (nums.some((n) => n > 255)) return null;
  const lastBytes = 4 - nums.length;
  if (last >= 2 ** (8 * lastBytes)) return null;
  const out = new Uint8Array(4);
  nums.forEach((n, i) => (out[i] = n));
  for (let i = 0; i < lastBytes; i++) out[3 - i] = Math.floor(last / 2 ** (8 * i)) & 0xff;
  return out;
}

/** Parses an IPv6 address (no brackets, no zone id) to 16 bytes, or null. Accepts `::` and a dotted IPv4 tail. */
export function parseIPv6(input: string): Uint8Array | null {
  if (!input.includes(":") || input.includes("%")) return null;
  let text = input;
  const lastColon = text.lastIndexOf(":");
  const tail = text.slice(lastColon + 1);
  if (tail.includes(".")) {
    // A dotted IPv4 tail (::ffff:127.0.0.1) is two hex groups written differently.
    if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(tail)) return null;
    const v4 = tail.split(".").map(Number);
    if (v4.some((x) => x > 255)) return null;
    text = `${text.slice(0, lastColon + 1)}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const parse = (s: string): number[] | null => {
    if (s === "") return [];
    const out: number[] = [];
    for (const g of s.split(":")) {
      if (!/^[0-9a-f]{1,4}$/i.test(g)) return null;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  if (!head || !rest) return null;
  let groups: number[];
  if (halves.length === 2) {
    const missing = 8 - head.length - rest.length;
    if (missing < 1) return null;
    groups = [...head, ...new Array<number>(missing).fill(0), ...rest];
  } else {
    groups = head;
  }
  if (groups.length !== 8) return null;
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    out[2 * i] = g >> 8;
    out[2 * i + 1] = g & 0xff;
  });
  return out;
}

export function formatIPv4(b: Uint8Array): string {
  return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
}

/** RFC 5952 text form (lowercase, longest zero run compressed). */
export function formatIPv6(b: Uint8Array): string {
  const groups = Array.from({ length: 8 }, (_, i) => (b[2 * i]! << 8) | b[2 * i + 1]!);
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLen).join(":")}`;
}

export type ParsedIp = { family: 4; bytes: Uint8Array } | { family: 6; bytes: Uint8Array };

/** A literal IP address in any accepted form (brackets around IPv6 are allowed), or null for a host name. */
export function parseIp(input: string): ParsedIp | null {
  let s = input.trim();
  if (s.startsWith("[") && s.endsWith("]")) s = s.slice(1, -1);
  const v6 = parseIPv6(s);
  if (v6) return { family: 6, bytes: v6 };
  const v4 = parseIPv4(s);
  return v4 ? { family: 4, bytes: v4 } : null;
}

// ------------------------------------------------------------------------------------- classification

export type AddressClass =
  | "public"
  | "unspecified"
  | "loopback"
  | "private"
  | "link_local"
  | "cgnat"
  | "multicast"
  | "broadcast"
  | "reserved"
  | "documentation"
  | "unique_local"
  | "site_local"
  | "ipv4_translation";

/** Classes that are never a valid destination, even when private networks are allowed. */
const NEVER: ReadonlySet<AddressClass> = new Set(["unspecified", "multicast", "broadcast", "reserved"]);

const V4_RANGES: readonly [number, number, number, number, number, AddressClass][] = [
  // a, b, c, d, prefix length, class
  [0, 0, 0, 0, 8, "unspecified"],
  [10, 0, 0, 0, 8, "private"],
  [100, 64, 0, 0, 10, "cgnat"],
  [127, 0, 0, 0, 8, "loopback"],
  [169, 254, 0, 0, 16, "link_local"],
  [172, 16, 0, 0, 12, "private"],
  [192, 0, 0, 0, 24, "reserved"],
  [192, 0, 2, 0, 24, "documentation"],
  [192, 88, 99, 0, 24, "reserved"],
  [192, 168, 0, 0, 16, "private"],
  [198, 18, 0, 0, 15, "reserved"],
  [198, 51, 100, 0, 24, "documentation"],
  [203, 0, 113, 0, 24, "documentation"],
  [224, 0, 0, 0, 4, "multicast"],
  [255, 255, 255, 255, 32, "broadcast"],
  [240, 0, 0, 0, 4, "reserved"],
];

const v4ToInt = (b: Uint8Array) => ((b[0]! << 24) >>> 0) + (b[1]! << 16) + (b[2]! << 8) + b[3]!;

export function classifyIPv4(b: Uint8Array): AddressClass {
  const n = v4ToInt(b);
  for (const [a, bb, c, d, len, cls] of V4_RANGES) {
    const base = v4ToInt(Uint8Array.of(a, bb, c, d));
    const mask = len === 0 ? 0 : (~0 << (32 - len)) >>> 0;
    if ((n & mask) >>> 0 === base) return cls;
  }
  return "public";
}

function prefixEquals(b: Uint8Array, prefix: readonly number[], bits: number): boolean {
  for (let i = 0; i < bits; i++) {
    const byte = i >> 3;
    const bit = 7 - (i & 7);
    if (((b[byte]! >> bit) & 1) !== (((prefix[byte] ?? 0) >> bit) & 1)) return false;
  }
  return true;
}

export function classifyIPv6(b: Uint8Array): AddressClass {
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zeros(0, 16)) return "unspecified";
  if (zeros(0, 15) && b[15] === 1) return "loopback";
  // ::ffff:a.b.c.d (IPv4-mapped) is the IPv4 address; judge it as such.
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return classifyIPv4(b.slice(12));
  // ::a.b.c.d (deprecated IPv4-compatible) and the rest of ::/96: never legitimate on the Internet.
  if (zeros(0, 12)) return "reserved";
  // 64:ff9b::/96 well-known NAT64: the embedded IPv4 address decides.
  if (prefixEquals(b, [0x00, 0x64, 0xff, 0x9b], 96)) return classifyIPv4(b.slice(12));
  // 6to4 2002::/16 embeds an IPv4 address that a relay would reach.
  if (prefixEquals(b, [0x20, 0x02], 16)) return classifyIPv4(b.slice(2, 6));
  if (prefixEquals(b, [0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48)) return "ipv4_translation";
  if (prefixEquals(b, [0xff], 8)) return "multicast";
  if (prefixEquals(b, [0xfe, 0x80], 10)) return "link_local";
  if (prefixEquals(b, [0xfe, 0xc0], 10)) return "site_local";
  if (prefixEquals(b, [0xfc], 7)) return "unique_local";
  if (prefixEquals(b, [0x01, 0x00, 0, 0, 0, 0, 0, 0], 64)) return "reserved"; // discard-only 100::/64
  if (prefixEquals(b, [0x20, 0x01, 0x0d, 0xb8], 32)) return "documentation";
  if (prefixEquals(b, [0x3f, 0xff], 20)) return "documentation";
  if (prefixEquals(b, [0x20, 0x01, 0x00, 0x00], 32)) return "ipv4_translation"; // Teredo
  if (prefixEquals(b, [0x20, 0x01, 0x00], 23)) return "reserved"; // IETF protocol assignments
  // Only 2000::/3 is global unicast.
  if (!prefixEquals(b, [0x20], 3)) return "reserved";
  return "public";
}

export function classifyIp(ip: ParsedIp): AddressClass {
  return ip.family === 4 ? classifyIPv4(ip.bytes) : classifyIPv6(ip.bytes);
}

/** True only for a globally routable unicast address. Non-IP strings are not public. */
export function isPublicIp(address: string): boolean {
  const ip = parseIp(address);
  return ip !== null && classifyIp(ip) === "public";
}

/** Canonical text of an IP (IPv4-mapped IPv6 becomes plain IPv4), or null for a non-IP string. */
export function normalizeIp(address: string): string | null {
  const ip = parseIp(address);
  if (!ip) return null;
  if (ip.family === 4) return formatIPv4(ip.bytes);
  const b = ip.bytes;
  if (b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) return formatIPv4(b.slice(12));
  return formatIPv6(b);
}

// ----------------------------------------------------------------------------------------------- the guard

export interface ResolvedAddress {
  address: string;
  family: number;
}
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) => lookup(hostname, { all: true, verbatim: true });

export interface SsrfOptions {
  /** Allow loopback/private/link-local destinations (development, tests). Default false. */
  allowPrivate?: boolean;
  /**
   * Refuse plain http. Defaults to `!allowPrivate`; plain http is only ever possible with allowPrivate, so in
   * production (allowPrivate false) https is always required.
   */
  requireHttps?: boolean;
  /** Field name reported in the error details. Default "url". */
  field?: string;
  /** DNS resolver; defaults to node:dns/promises `lookup(all: true)`. Injected in tests. */
  resolve?: Resolver;
  /**
   * Give up on the name's lookup after this many milliseconds: refused as `unresolvable` (`details.lookup "timeout"`).
   * Default none (the resolver's own timeouts: glibc's 5 s per attempt, more with retries and search domains). The
   * lookup itself cannot be cancelled; its late answer is dropped.
   */
  lookupTimeoutMs?: number;
}

/** `resolve(hostname)`, or a rejection with LOOKUP_TIMED_OUT after `ms`. */
function lookupWithin(resolve: Resolver, hostname: string, ms: number): Promise<ResolvedAddress[]> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(LOOKUP_TIMED_OUT), ms);
  });
  return Promise.race([resolve(hostname), deadline]).finally(() => clearTimeout(timer));
}
const LOOKUP_TIMED_OUT = Symbol("lookup timed out");

export interface VettedUrl {
  url: URL;
  /** Host name as written (lowercase, no brackets, no trailing dot). */
  hostname: string;
  /** The address to connect to first: the resolver's first answer (every resolved address was checked). */
  address: string;
  /** `address`'s family. */
  family: 4 | 6;
  /**
   * Every address the name resolved to, all of them vetted, without duplicates, in the order to try them: `address`
   * first, then the families alternating as RFC 8305 §4 (Happy Eyeballs v2) orders them, each family in the
   * resolver's order, so one broken family (an IPv6 path that drops everything) costs one attempt, not all of its
   * addresses before the first of the other. An IP literal is its one address.
   */
  addresses: string[];
  port: number;
}

function refuse(field: string, reason: string, message: string, extra: Record<string, unknown> = {}): never {
  throw fail("validation_error", message, { field, reason, ...extra });
}

const LOCAL_NAMES = /(^|\.)(localhost|localhost\.localdomain|local|internal|home\.arpa)$/;

export async function assertPublicUrl(input: string | URL, opts: SsrfOptions = {}): Promise<VettedUrl> {
  const allowPrivate = opts.allowPrivate ?? false;
  const requireHttps = opts.requireHttps ?? !allowPrivate;
  const field = opts.field ?? "url";
  const resolve = opts.resolve ?? systemResolver;

  let url: URL;
  try {
    url = new URL(typeof input === "string" ? input : input.href);
  } catch {
    refuse(field, "invalid_url", `${field} is not a valid URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    // where http is allowed too (a development machine's own receivers), say so: "must use https" sent a caller of
    // ftp:// away from the http:// that works here (helper B, session 22)
    refuse(field, "scheme", `${field} must use ${requireHttps ? "https" : "https or http"}`, { scheme: url.protocol.replace(/:$/, "") });
  }
  if (url.protocol === "http:" && (requireHttps || !allowPrivate)) {
    refuse(field, "scheme", `${field} must use https`, { scheme: "http" });
  }
  if (url.username !== "" || url.password !== "") {
    refuse(field, "credentials", `${field} must not contain credentials`);
  }
  const port = url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
  // nothing listens on port 0: such a URL could never be fetched, so say so now instead of failing every attempt
  // (a webhook endpoint retried for 72 h and disabled 5 days later; audit W-6)
  if (port === 0) refuse(field, "invalid_url", `${field} has no usable port (0)`);
  let hostname = url.hostname.toLowerCase();
  if (hostname.startsWith("[") && hostname.endsWith("]")) hostname = hostname.slice(1, -1);
  if (hostname.endsWith(".")) hostname = hostname.slice(0, -1);
  if (hostname === "") refuse(field, "invalid_url", `${field} has no host`);

  const judge = (address: string): ParsedIp => {
    const ip = parseIp(address);
    if (!ip) refuse(field, "unresolvable", `${field} resolved to something that is not an IP address`);
    const cls = classifyIp(ip);
    if (cls !== "public" && (NEVER.has(cls) || !allowPrivate)) {
      refuse(field, "non_public_address", `${field} points to a non-public address (${cls})`, {
        addressClass: cls,
      });
    }
    return ip;
  };

  const literal = parseIp(hostname);
  if (literal) {
    judge(hostname);
    const address = literal.family === 4 ? formatIPv4(literal.bytes) : formatIPv6(literal.bytes);
    return { url, hostname, address, family: literal.family, addresses: [address], port };
  }

  // Names that can only ever be local: refuse before asking DNS (and regardless of /etc/hosts).
  if (!allowPrivate && LOCAL_NAMES.test(hostname)) {
    refuse(field, "non_public_address", `${field} points to a local host name`, { addressClass: "loopback" });
  }

  let resolved: ResolvedAddress[];
  try {
    resolved = await (opts.lookupTimeoutMs === undefined ? resolve(hostname) : lookupWithin(resolve, hostname, opts.lookupTimeoutMs));
  } catch (err) {
    if (err === LOOKUP_TIMED_OUT) refuse(field, "unresolvable", `${field} host name did not resolve within ${opts.lookupTimeoutMs} ms`, { lookup: "timeout" });
    refuse(field, "unresolvable", `${field} host name does not resolve`);
  }
  if (resolved.length === 0) refuse(field, "unresolvable", `${field} host name does not resolve`);
  const vetted = resolved.map((r) => {
    const ip = judge(r.address);
    return { ip, address: ip.family === 4 ? formatIPv4(ip.bytes) : formatIPv6(ip.bytes) };
  });
  const first = vetted[0]!;
  return {
    url,
    hostname,
    address: first.address,
    family: first.ip.family,
    addresses: interleaveFamilies(vetted.map((v) => v.address)),
    port,
  };
}

/** The family of a formatted address (`formatIPv4` / `formatIPv6`): IPv6 text always has a colon, IPv4 never. */
export function addressFamily(address: string): 4 | 6 {
  return address.includes(":") ? 6 : 4;
}

/**
 * RFC 8305 §4 order (First Address Family Count 1): duplicates dropped, the first address's family first, then the
 * families alternating, each in the given (resolver's) order; when one family runs out the rest of the other follows.
 */
export function interleaveFamilies(addresses: readonly string[]): string[] {
  const unique = [...new Set(addresses)];
  if (unique.length === 0) return unique;
  const firstFamily = addressFamily(unique[0]!);
  const same = unique.filter((a) => addressFamily(a) === firstFamily);
  const other = unique.filter((a) => addressFamily(a) !== firstFamily);
  const out: string[] = [];
  for (let i = 0; i < Math.max(same.length, other.length); i++) {
    if (i < same.length) out.push(same[i]!);
    if (i < other.length) out.push(other[i]!);
  }
  return out;
}
