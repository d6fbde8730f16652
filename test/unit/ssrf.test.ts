import { describe, expect, test } from "bun:test";
import { assertPublicUrl, isPublicIp, normalizeIp, parseIp, type Resolver, type SsrfOptions } from "../../infra/ssrf.ts";
import { ActorError } from "../../actors/runtime/errors.ts";

/** A resolver that answers from a table and records what it was asked. */
function fakeDns(table: Record<string, string[]>): Resolver & { asked: string[] } {
  const asked: string[] = [];
  const fn = async (host: string) => {
    asked.push(host);
    const addrs = table[host];
    if (!addrs) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: "ENOTFOUND" });
    return addrs.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  return Object.assign(fn, { asked });
}

const dns = fakeDns({
  "hooks.example.com": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
  "rebind.example.com": ["93.184.216.34", "127.0.0.1"],
  "internal.example.com": ["10.1.2.3"],
  "metadata.example.com": ["169.254.169.254"],
  "v6-loop.example.com": ["::1"],
  "mapped.example.com": ["::ffff:10.0.0.1"],
  "localhost": ["127.0.0.1"],
});

async function refusal(url: string, opts: SsrfOptions = {}): Promise<ActorError> {
  try {
    await assertPublicUrl(url, { resolve: dns, ...opts });
  } catch (e) {
    if (e instanceof ActorError) return e;
    throw e;
  }
  throw new Error(`${url} was accepted`);
}

describe("addresses that are refused", () => {
  test.each([
    ["loopback", "https://127.0.0.1/hook"],
    ["loopback anywhere in 127/8", "https://127.255.0.9/"],
    ["10/8", "https://10.0.0.5/"],
    ["172.16/12 (low end)", "https://172.16.0.1/"],
    ["172.16/12 (high end)", "https://172.31.255.254/"],
    ["192.168/16", "https://192.168.1.1/"],
    ["the cloud metadata address", "https://169.254.169.254/latest/meta-data/"],
    ["link-local", "https://169.254.1.1/"],
    ["CGNAT 100.64/10", "https://100.64.0.1/"],
    ["0.0.0.0", "https://0.0.0.0/"],
    ["0/8", "https://0.1.2.3/"],
    ["multicast", "https://224.0.0.1/"],
    ["broadcast", "https://255.255.255.255/"],
    ["IPv6 loopback", "https://[::1]/"],
    ["IPv4-mapped IPv6 loopback", "https://[::ffff:127.0.0.1]/"],
    ["IPv4-mapped IPv6 private", "https://[::ffff:10.0.0.1]/"],
    ["IPv6 unique local fc00::/7", "https://[fd12:3456::1]/"],
    ["IPv6 link-local fe80::/10", "https://[fe80::1]/"],
    ["IPv6 multicast", "https://[ff02::1]/"],
    ["NAT64 of a private address", "https://[64:ff9b::a00:1]/"],
    ["decimal IPv4 (2130706433)", "https://2130706433/"],
    ["hex IPv4 (0x7f000001)", "https://0x7f000001/"],
    ["octal IPv4 (0177.0.0.1)", "https://0177.0.0.1/"],
    ["short IPv4 (127.1)", "https://127.1/"],
  ])("%s is refused", async (_label, url) => {
    const e = await refusal(url);
    expect(e.code).toBe("validation_error");
    expect(e.http).toBe(400);
    expect(e.details?.reason).toBe("non_public_address");
  });

  test("plain http on a decimal loopback literal is refused too", async () => {
    expect((await refusal("http://2130706433/")).code).toBe("validation_error");
  });

  test("localhost is refused without asking DNS", async () => {
    const before = dns.asked.length;
    expect((await refusal("https://localhost:8080/")).details?.reason).toBe("non_public_address");
    expect((await refusal("https://LOCALHOST./")).details?.reason).toBe("non_public_address");
    expect((await refusal("https://api.localhost/")).details?.reason).toBe("non_public_address");
    expect(dns.asked.length).toBe(before);
  });

  test.each([
    ["a host resolving to a private address", "https://internal.example.com/"],
    ["a host resolving to the metadata address", "https://metadata.example.com/"],
    ["a host resolving to ::1", "https://v6-loop.example.com/"],
    ["a host resolving to an IPv4-mapped private address", "https://mapped.example.com/"],
    ["a host with one public and one loopback address", "https://rebind.example.com/"],
  ])("%s is refused", async (_label, url) => {
    expect((await refusal(url)).details?.reason).toBe("non_public_address");
  });

  test("a host that does not resolve is refused", async () => {
    expect((await refusal("https://nowhere.example.com/")).details?.reason).toBe("unresolvable");
  });

  test("credentials in the URL are refused", async () => {
    expect((await refusal("https://user:pass@hooks.example.com/")).details?.reason).toBe("credentials");
    expect((await refusal("https://user@hooks.example.com/")).details?.reason).toBe("credentials");
  });

  test("plain http is refused in production", async () => {
    expect((await refusal("http://hooks.example.com/")).details?.reason).toBe("scheme");
    expect((await refusal("http://hooks.example.com/", { requireHttps: false })).details?.reason).toBe("scheme");
  });

  test("another scheme's refusal names the schemes that would be taken: https, or https or http where private addresses are allowed (a development machine)", async () => {
    expect((await refusal("ftp://hooks.example.com/")).message).toBe("url must use https");
    expect((await refusal("ftp://127.0.0.1/", { allowPrivate: true })).message).toBe("url must use https or http");
    expect((await refusal("ftp://127.0.0.1/", { allowPrivate: true, requireHttps: true })).message).toBe("url must use https");
  });

  test.each(["ftp://hooks.example.com/", "file:///etc/passwd", "gopher://hooks.example.com/", "javascript:alert(1)"])(
    "the scheme of %s is refused",
    async (url) => {
      expect((await refusal(url)).details?.reason).toBe("scheme");
    },
  );

  test("a malformed URL is refused", async () => {
    expect((await refusal("not a url")).details?.reason).toBe("invalid_url");
  });

  test("the error names the field it came from", async () => {
    expect((await refusal("https://10.0.0.1/", { field: "facilitator_url" })).details?.field).toBe("facilitator_url");
  });
});

describe("addresses that are accepted", () => {
  test("a public IP literal is accepted and is the address to connect to", async () => {
    const v = await assertPublicUrl("https://93.184.216.34:8443/hook?x=1", { resolve: dns });
    expect(v.address).toBe("93.184.216.34");
    expect(v.family).toBe(4);
    expect(v.port).toBe(8443);
    expect(v.url.pathname).toBe("/hook");
  });

  test("a public IPv6 literal is accepted", async () => {
    const v = await assertPublicUrl("https://[2606:4700:4700::1111]/", { resolve: dns });
    expect(v.address).toBe("2606:4700:4700::1111");
    expect(v.family).toBe(6);
  });

  test("a host name is resolved once and every address is returned vetted", async () => {
    const v = await assertPublicUrl("https://hooks.example.com/events", { resolve: dns });
    expect(v.hostname).toBe("hooks.example.com");
    expect(v.address).toBe("93.184.216.34");
    expect(v.addresses).toEqual(["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]);
  });

  test("allowPrivate lets plain http to loopback through", async () => {
    const v = await assertPublicUrl("http://127.0.0.1:3000/hook", { allowPrivate: true, resolve: dns });
    expect(v.address).toBe("127.0.0.1");
    expect((await assertPublicUrl("http://localhost:3000/", { allowPrivate: true, resolve: dns })).address).toBe("127.0.0.1");
  });

  test("allowPrivate with requireHttps still refuses plain http", async () => {
    expect((await refusal("http://127.0.0.1/", { allowPrivate: true, requireHttps: true })).details?.reason).toBe("scheme");
  });

  test("allowPrivate never allows unspecified, multicast or broadcast addresses", async () => {
    expect((await refusal("http://0.0.0.0/", { allowPrivate: true })).details?.reason).toBe("non_public_address");
    expect((await refusal("http://224.0.0.1/", { allowPrivate: true })).details?.reason).toBe("non_public_address");
  });
});

describe("IP parsing", () => {
  test.each([
    ["2130706433", "127.0.0.1"],
    ["0x7f000001", "127.0.0.1"],
    ["0177.0.0.1", "127.0.0.1"],
    ["127.1", "127.0.0.1"],
    ["::ffff:127.0.0.1", "127.0.0.1"],
    ["::FFFF:7F00:1", "127.0.0.1"],
    ["[2001:DB8::1]", "2001:db8::1"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
  ])("%s normalises to %s", (input, out) => {
    expect(normalizeIp(input)).toBe(out);
  });

  test.each(["256.0.0.1", "1.2.3.4.5", "example.com", "1:2:3:4:5:6:7:8:9", "1::2::3", "fe80::1%eth0", ""])(
    "%p is not an IP address",
    (input) => {
      expect(parseIp(input)).toBeNull();
    },
  );

  test("public and non-public addresses are told apart", () => {
    expect(isPublicIp("8.8.8.8")).toBe(true);
    expect(isPublicIp("172.15.255.255")).toBe(true);
    expect(isPublicIp("172.32.0.0")).toBe(true);
    expect(isPublicIp("100.63.255.255")).toBe(true);
    expect(isPublicIp("100.128.0.0")).toBe(true);
    expect(isPublicIp("100.127.255.255")).toBe(false);
    expect(isPublicIp("2001:db8::1")).toBe(false);
    expect(isPublicIp("::")).toBe(false);
  });
});
