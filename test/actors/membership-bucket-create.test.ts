/**
 * A host whose create of the membership bucket failed must not give up on a bucket nobody created. Hosts starting
 * together create the bucket's stream concurrently; on a fresh cluster those creates can all time out (nats-server
 * 2.9), and openHostsBucket then only binds the name. The watch met "stream not found" until Membership.start gave
 * up after 15 s and the host process exited before serving (test/distributed/host-freeze.test.ts failed in set-up
 * so). Here the create is made to fail for a reason that lasts a moment: another stream holds the bucket's subjects
 * (a create refused for overlapping subjects is bound to by name, as a timed-out one is). Real NATS: NATS_URL or
 * 127.0.0.1:4222; its own stream names.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Membership } from "../../actors/transport/placement.ts";

const NATS = process.env.TEST_NATS_URL ?? "nats://127.0.0.1:4222";
const run = Math.random().toString(36).slice(2, 8);
const bucket = `mbc_${run}`;
const blocker = `MBC_BLOCK_${run}`;

let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  nc = await connect({ servers: NATS });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await jsm.streams.delete(blocker).catch(() => {});
  await jsm.streams.delete(`KV_${bucket}`).catch(() => {});
  await nc.close();
});

test("a host whose create of the membership bucket failed creates it once it can, and starts", async () => {
  // the bucket's subjects are taken: the host's create is refused and it binds the name of a stream that is not there
  await jsm.streams.add({ name: blocker, subjects: [`$KV.${bucket}.>`] });
  const membership = new Membership({
    nc,
    hostId: `mbc-${run}`,
    bucket,
    replicas: 1,
    onChange: () => {},
    beat: () => ({ kinds: ["k"], partitions: 4, activations: {}, owned: {}, startedAt: Date.now(), pid: process.pid, hostname: "test" }),
  });
  const started = membership.start();
  const outcome = started.then(
    () => "started",
    (err: Error) => `failed: ${err.message}`,
  );
  await Bun.sleep(500);
  expect(await Promise.race([outcome, Bun.sleep(0).then(() => "waiting")])).toBe("waiting");
  await jsm.streams.delete(blocker); // whatever kept the create from succeeding is over
  const t0 = Date.now();
  expect(await outcome).toBe("started");
  expect(Date.now() - t0).toBeLessThan(5000); // not after start's 15 s limit
  expect(membership.view.isLive(`mbc-${run}`)).toBe(true);
  expect((await jsm.streams.info(`KV_${bucket}`)).config.name).toBe(`KV_${bucket}`);
  await membership.stop(true);
}, 30_000);
