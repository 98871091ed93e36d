import { randomBytes } from "node:crypto";
import { connect as tcpConnect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { FAR_TIMEOUTS, type Harness, startHarness } from "./helpers/harness.js";
import { h2request } from "./helpers/raw.js";

const KEY = "sk-test-socket-7c1e9a3b5d2f4068";
const KiB = 1024;

type Event = Record<string, unknown> & { type: string };

/** A Responses WebSocket as a plain `ws` client sees it: its messages in order, awaited by predicate. */
interface Socket {
  readonly ws: WebSocket;
  readonly events: Event[];
  send(message: unknown): void;
  /** The first message from `from` on matching `predicate` (now or later); its index. */
  until(predicate: (e: Event) => boolean, from?: number): Promise<number>;
  readonly closed: Promise<{ code: number; reason: string }>;
}

function wsUrl(h: Harness): string {
  return `${h.url.replace(/^http/, "ws")}/v1/responses`;
}

/** Opens the socket; rejects with the HTTP status when the upgrade is refused. */
function connect(h: Harness, key: string | null = KEY): Promise<Socket> {
  const ws = new WebSocket(wsUrl(h), key ? { headers: { authorization: `Bearer ${key}` } } : {});
  const events: Event[] = [];
  const waiters = new Set<() => void>();
  ws.on("message", (data) => {
    events.push(JSON.parse(String(data)) as Event);
    for (const wake of waiters) wake();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once("close", (code, reason) => resolve({ code, reason: String(reason) })));
  const socket: Socket = {
    ws,
    events,
    send: (message) => ws.send(typeof message === "string" ? message : JSON.stringify(message)),
    until(predicate, from = 0) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const at = events.findIndex((e, i) => i >= from && predicate(e));
          if (at < 0) return;
          waiters.delete(check);
          resolve(at);
        };
        waiters.add(check);
        void closed.then(() => {
          if (waiters.delete(check)) reject(new Error(`socket closed; events: ${events.map((e) => e.type).join(",")}`));
        });
        check();
      });
    },
    closed,
  };
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(socket));
    ws.once("unexpected-response", (_req, res) => {
      const body = new Promise<string>((done) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c.toString()));
        res.on("end", () => done(text));
        res.on("error", () => done(text));
      });
      reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode, headers: res.headers, body }));
    });
    ws.once("error", reject);
  });
}

const userInput = (text: string) => [{ type: "message", role: "user", content: [{ type: "input_text", text }] }];
const create = (text: string, extra: Record<string, unknown> = {}) => ({ type: "response.create", model: "sim", store: false, input: userInput(text), ...extra });
const isEnd = (e: Event) => e.type === "response.completed" || e.type === "response.failed" || e.type === "response.incomplete" || e.type === "error";
const tag = (label: string) => `${label}-${randomBytes(4).toString("hex")}`;

let h: Harness;
/** Small limits: idle after 300 ms, 1 KiB of unsent events, a client that reads nothing for 100 ms is given up. */
let tight: Harness;
let off: Harness;
beforeAll(async () => {
  const auth = { keys: [{ name: "socket", keyEnv: "SOCKET_KEY" }] };
  h = await startHarness({
    models: { sim: "sim-1?tokens=5" },
    provider: { timeouts: FAR_TIMEOUTS },
    limits: { maxRequestBytes: 64 * KiB },
    env: { SOCKET_KEY: KEY },
    auth,
  });
  tight = await startHarness({
    models: { sim: "sim-1?tokens=5" },
    provider: { timeouts: FAR_TIMEOUTS },
    server: { sendTimeoutMs: 100 },
    responses: { websocketIdleMs: 300, websocketMaxBufferedBytes: 1_024 },
    env: { SOCKET_KEY: KEY },
    auth,
  });
  off = await startHarness({ models: { sim: "sim-1" }, responses: { websocket: false }, env: { SOCKET_KEY: KEY }, auth });
});
afterAll(async () => {
  await Promise.all([h?.close(), tight?.close(), off?.close()]);
});

describe("the Responses WebSocket mode: the upgrade", () => {
  it("checks the key before the upgrade completes: no key or a wrong one is a 401 on the HTTP response", async () => {
    for (const key of [null, "sk-test-nobody-000000000000"]) {
      const refused = (await connect(h, key).catch((e: unknown) => e)) as { status: number; body: Promise<string> };
      expect(refused.status).toBe(401);
      expect(JSON.parse(await refused.body)).toMatchObject({ error: { code: expect.any(String), type: "authentication_error" } });
    }
    const line = await h.waitForLog((l) => l.event === "access" && l.route === "/v1/responses" && l.method === "GET" && l.status === 401);
    expect(line).toMatchObject({ edge: "responses" });
  });

  it("answers 426, never 404, when the gateway runs without it, and to a GET without an upgrade", async () => {
    const refused = (await connect(off).catch((e: unknown) => e)) as { status: number; body: Promise<string> };
    expect(refused.status).toBe(426);
    expect(JSON.parse(await refused.body)).toMatchObject({ error: { code: "upgrade_required" } });
    const plain = await fetch(`${h.url}/v1/responses`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(plain.status).toBe(426);
    expect(plain.headers.get("upgrade")).toBe("websocket");
    // HTTP/2 has no upgrade (and forbids the header): 426 alone.
    const h2 = await h2request(h.url, { ":method": "GET", ":path": "/v1/responses", authorization: `Bearer ${KEY}` });
    expect(h2.headers[":status"]).toBe(426);
    expect(JSON.parse(h2.body.toString())).toMatchObject({ error: { code: "upgrade_required" } });
  });
});

/** One raw HTTP/1.1 exchange: the bytes the gateway answers before it closes the connection. */
function rawExchange(h: Harness, head: string): Promise<string> {
  const { hostname, port } = new URL(h.url);
  return new Promise((resolve, reject) => {
    const socket = tcpConnect(Number(port), hostname, () => socket.write(head));
    let text = "";
    socket.on("data", (d: Buffer) => (text += d.toString()));
    socket.on("close", () => resolve(text));
    socket.on("error", reject);
  });
}

describe("upgrades the gateway does not take over", () => {
  it("answers an upgrade to anything else (curl's h2c) or on another path over HTTP/1.1, as before, and closes", async () => {
    const h2c = await rawExchange(h, `GET /v1/models HTTP/1.1\r\nhost: x\r\nconnection: Upgrade, HTTP2-Settings\r\nupgrade: h2c\r\nhttp2-settings: AAMAAABkAAQAoAAAAAIAAAAA\r\nauthorization: Bearer ${KEY}\r\n\r\n`);
    expect(h2c).toMatch(/^HTTP\/1\.1 200 /);
    expect(h2c).toContain('"sim"');
    const elsewhere = await rawExchange(
      h,
      `GET /v1/chat/completions HTTP/1.1\r\nhost: x\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nauthorization: Bearer ${KEY}\r\n\r\n`,
    );
    expect(elsewhere).toMatch(/^HTTP\/1\.1 404 /);
  });
});

describe("the Responses WebSocket mode: responses", () => {
  it("answers response.create with the SSE edge's events, one JSON message each, and writes an access line per response", async () => {
    const s = await connect(h);
    s.send(create("hello"));
    const end = await s.until(isEnd);
    const types = s.events.map((e) => e.type);
    expect(types.slice(0, 2)).toEqual(["response.created", "response.in_progress"]);
    expect(types).toContain("response.output_text.delta");
    expect(s.events[end]).toMatchObject({ type: "response.completed", response: { status: "completed", model: "sim" } });
    expect(s.events.map((e) => e.sequence_number)).toEqual(s.events.map((_, i) => i));
    const id = (s.events[end]!.response as { id: string }).id;
    const line = await h.waitForLog((l) => l.event === "access" && l.transport === "websocket" && l.code === "ok");
    expect(line).toMatchObject({ edge: "responses", route: "/v1/responses", alias: "sim", key: "socket" });
    // A second response on the same socket: numbered from 0 again, its own id.
    s.send(create("again"));
    const second = await s.until((e) => e.type === "response.completed", end + 1);
    expect(s.events[end + 1]).toMatchObject({ type: "response.created", sequence_number: 0 });
    expect((s.events[second]!.response as { id: string }).id).not.toBe(id);
    s.ws.close();
    await s.closed;
    // The upgrade's own line, written when the socket closed.
    const upgrade = await h.waitForLog((l) => l.event === "access" && l.websocket === true && l.responses === 2);
    expect(upgrade).toMatchObject({ code: "ok", route: "/v1/responses" });
  });

  it("continues a response of the same socket by previous_response_id with store: false: the upstream gets the whole conversation", async () => {
    const s = await connect(h);
    const first = tag("first");
    s.send(create(`remember ${first}`));
    const end1 = await s.until(isEnd);
    const id1 = (s.events[end1]!.response as { id: string }).id;
    const answer1 = (s.events[end1]!.response as { output: Array<{ content?: Array<{ text: string }> }> }).output[0]!.content![0]!.text;
    const second = tag("second");
    s.send({ type: "response.create", model: "sim", store: false, previous_response_id: id1, input: userInput(`#sim tag=${second}\nwhat was it?`) });
    const end2 = await s.until(isEnd, end1 + 1);
    expect(s.events[end2]).toMatchObject({ type: "response.completed" });
    const id2 = (s.events[end2]!.response as { id: string }).id;
    const record = await h.sim.records.waitFor((r) => r.tag === second, 10_000);
    const sent = JSON.stringify(record.body);
    expect(sent).toContain(first);
    expect(sent).toContain(answer1);
    // And a third turn on the second: the chain goes on.
    const third = tag("third");
    s.send({ type: "response.create", model: "sim", store: false, previous_response_id: id2, input: `#sim tag=${third}\nand now?` });
    await s.until((e) => e.type === "response.completed", end2 + 1);
    const record3 = await h.sim.records.waitFor((r) => r.tag === third, 10_000);
    expect(JSON.stringify(record3.body)).toContain(first);
    expect(JSON.stringify(record3.body)).toContain(second);
    s.ws.close();
    // Nothing outlives the socket: another socket does not know the id.
    const other = await connect(h);
    other.send({ type: "response.create", model: "sim", store: false, previous_response_id: id1, input: "again" });
    const at = await other.until(isEnd);
    expect(other.events[at]).toMatchObject({ type: "error", status: 404, error: { code: "previous_response_not_found", param: "previous_response_id" } });
    other.ws.close();
  });

  it("keeps a response whose store is absent (true) where responses are stored: GET reads it over HTTP, and another socket continues it from the store", async () => {
    const s = await connect(h);
    const first = tag("kept");
    s.send({ type: "response.create", model: "sim", input: userInput(`remember ${first}`) });
    const end = await s.until(isEnd);
    const id = (s.events[end]!.response as { id: string }).id;
    s.ws.close();
    const res = await fetch(`${h.url}/v1/responses/${id}`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { id: string }).id).toBe(id);
    const other = await connect(h);
    const next = tag("next");
    other.send({ type: "response.create", model: "sim", previous_response_id: id, input: `#sim tag=${next}\nwhat was it?` });
    await other.until((e) => e.type === "response.completed");
    expect(JSON.stringify((await h.sim.records.waitFor((r) => r.tag === next, 10_000)).body)).toContain(first);
    other.ws.close();
  });

  it("warms up with generate: false (no model call) under an id the next turn continues", async () => {
    const before = h.sim.records.all().length;
    const s = await connect(h);
    const warmed = tag("warmed");
    s.send(create(`instructions known in advance ${warmed}`, { generate: false, instructions: "be brief" }));
    const end = await s.until(isEnd);
    expect(s.events.map((e) => e.type)).toEqual(["response.created", "response.in_progress", "response.completed"]);
    expect(s.events[end]).toMatchObject({ response: { status: "completed", output: [] } });
    expect(h.sim.records.all().length).toBe(before);
    const id = (s.events[end]!.response as { id: string }).id;
    const next = tag("next");
    s.send({ type: "response.create", model: "sim", store: false, previous_response_id: id, input: `#sim tag=${next}\ngo` });
    await s.until((e) => e.type === "response.completed", end + 1);
    const record = await h.sim.records.waitFor((r) => r.tag === next, 10_000);
    expect(JSON.stringify(record.body)).toContain(warmed);
    // Instructions are not inherited.
    expect(JSON.stringify(record.body)).not.toContain("be brief");
    s.ws.close();
  });

  it("answers bad JSON, an unknown type and an invalid body with an error event, and the socket stays usable", async () => {
    const s = await connect(h);
    s.send("{not json");
    await s.until((e) => e.type === "error");
    s.send({ type: "response.cancel" });
    await s.until((e) => e.type === "error", 1);
    s.send(create("x", { temperature: "hot" }));
    await s.until((e) => e.type === "error", 2);
    expect(s.events.map((e) => e.status)).toEqual([400, 400, 400]);
    expect(s.events[1]).toMatchObject({ error: { param: "type" } });
    expect(s.events[2]).toMatchObject({ error: { param: "temperature" } });
    s.send(create("still here"));
    await s.until((e) => e.type === "response.completed", 3);
    s.ws.close();
  });
});

describe("the Responses WebSocket mode: hostile clients", () => {
  it("closes the socket with 1009 on a message over the body limit, and starts nothing", async () => {
    const before = h.sim.records.all().length;
    const s = await connect(h);
    s.send(create("x".repeat(65 * KiB)));
    const { code } = await s.closed;
    expect(code).toBe(1009);
    expect(s.events).toEqual([]);
    expect(h.sim.records.all().length).toBe(before);
  });

  it("runs one response at a time: a flood of response.create while one runs is refused, each with an error event, and nothing else starts", async () => {
    const held = tag("held");
    const s = await connect(h);
    s.send(create(`#sim hold_at=1 tag=${held}`));
    await h.sim.records.waitFor((r) => r.tag === held && r.heldAt !== undefined, 10_000);
    const flood = 200;
    for (let i = 0; i < flood; i++) s.send(create(`#sim tag=${tag("flood")}`));
    await s.until((e) => e.type === "error" && (e.error as { code: string }).code === "response_already_in_flight" && s.events.filter((x) => x.type === "error").length === flood);
    for (const e of s.events.filter((x) => x.type === "error")) expect(e).toMatchObject({ status: 409, error: { code: "response_already_in_flight" } });
    h.sim.records.release(held);
    await s.until((e) => e.type === "response.completed");
    expect(h.sim.records.all().filter((r) => r.tag?.startsWith("flood-"))).toEqual([]);
    // Free again once the response ended.
    s.send(create("next"));
    await s.until((e) => e.type === "response.completed" && s.events.filter((x) => x.type === "response.completed").length === 2);
    s.ws.close();
  });

  it("cancels the response of a client that stops reading, aborts its upstream and closes the socket: memory stays bounded", async () => {
    const stalled = tag("stalled");
    const s = await connect(tight);
    s.send(create(`#sim tokens=200000 tag=${stalled}`));
    await s.until((e) => e.type === "response.created");
    s.ws.pause();
    const record = await tight.sim.records.waitFor((r) => r.tag === stalled && r.endedAt !== undefined, 30_000);
    expect(record.clientClosedAt).toBeDefined();
    expect(record.tokensWritten).toBeLessThan(200_000);
    const line = await tight.waitForLog((l) => l.event === "access" && l.transport === "websocket" && l.code === "canceled");
    expect(line).toMatchObject({ alias: "sim" });
    s.ws.resume();
    await s.closed;
  });

  it("aborts the upstream of the running response when the client closes the socket", async () => {
    const left = tag("left");
    const s = await connect(h);
    s.send(create(`#sim tokens=50 hold_at=2 tag=${left}`));
    await h.sim.records.waitFor((r) => r.tag === left && r.heldAt !== undefined, 10_000);
    s.ws.terminate();
    const record = await h.sim.records.waitFor((r) => r.tag === left && r.endedAt !== undefined, 30_000);
    expect(record.clientClosedAt).toBeDefined();
    const line = await h.waitForLog((l) => l.event === "access" && l.transport === "websocket" && l.code === "canceled" && l.alias === "sim");
    expect(line).toMatchObject({ edge: "responses" });
  });

  it("closes a socket with nothing running after websocketIdleMs", async () => {
    const s = await connect(tight);
    s.send(create("one"));
    await s.until((e) => e.type === "response.completed");
    const { code, reason } = await s.closed;
    expect(code).toBe(1000);
    expect(reason).toBe("idle");
  });

  it("closes its sockets with 1001 when the gateway drains: one with nothing running at once, one running once its response has ended", async () => {
    const own = await startHarness({ models: { sim: "sim-1?tokens=5" }, provider: { timeouts: FAR_TIMEOUTS }, env: { SOCKET_KEY: KEY }, auth: { keys: [{ name: "socket", keyEnv: "SOCKET_KEY" }] } });
    try {
      const idle = await connect(own);
      const busy = await connect(own);
      const held = tag("drain");
      busy.send(create(`#sim tokens=8 hold_at=2 tag=${held}`));
      await own.sim.records.waitFor((r) => r.tag === held && r.heldAt !== undefined, 10_000);
      const stopping = own.sluice.shutdown(60_000);
      expect(await idle.closed).toEqual({ code: 1001, reason: "the gateway is shutting down" });
      own.sim.records.release(held);
      await busy.until((e) => e.type === "response.completed");
      expect((await busy.closed).code).toBe(1001);
      expect((await stopping).drained).toBe(true);
    } finally {
      await own.close();
    }
  });
});
