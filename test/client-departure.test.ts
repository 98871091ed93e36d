import { once } from "node:events";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createH2Server, type Http2Server, type Http2ServerRequest, type Http2ServerResponse, connect as h2connect } from "node:http2";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { watchDeparture } from "../src/http/departure.js";
import { FAR_TIMEOUTS, type Harness, startHarness } from "./helpers/harness.js";

interface Seen {
  /** Whether the connection (HTTP/1.1) or stream (HTTP/2) was still open when the departure was noticed. */
  stillOpen: boolean;
  calls: number;
}

/** A server whose every response stays open until the client leaves (or `end` is asked for by the path). */
function departureServer<S extends Server | Http2Server>(server: S, seen: (s: Seen) => void): S {
  server.on("request", (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => {
    const state: Seen = { stillOpen: false, calls: 0 };
    watchDeparture(req, res, () => {
      state.calls++;
      state.stillOpen = "stream" in res ? !res.stream.destroyed : !req.socket.destroyed;
    });
    res.once("close", () => seen(state));
    res.writeHead(200, { "content-type": "text/event-stream" });
    if (req.url === "/end") res.end("done\n");
    else (res as ServerResponse).write("first\n");
  });
  return server;
}

async function listen(server: Server | Http2Server): Promise<number> {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return (server.address() as { port: number }).port;
}

async function http1Get(port: number, path: string): Promise<Socket> {
  const socket = connect(port, "127.0.0.1");
  await once(socket, "connect");
  socket.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`);
  await once(socket, "data");
  return socket;
}

describe("watchDeparture", () => {
  it("HTTP/1.1: notices the client's FIN before the connection has closed", async () => {
    let resolve!: (s: Seen) => void;
    const closed = new Promise<Seen>((r) => (resolve = r));
    const server = departureServer(createHttpServer(), resolve);
    const port = await listen(server);
    const socket = await http1Get(port, "/stream");
    socket.end();
    const seen = await closed;
    expect(seen).toEqual({ stillOpen: true, calls: 1 });
    socket.destroy();
    server.close();
  });

  it("HTTP/1.1: a response the server ended is not a departure, whatever the client does next", async () => {
    let resolve!: (s: Seen) => void;
    const closed = new Promise<Seen>((r) => (resolve = r));
    const server = departureServer(createHttpServer(), resolve);
    const port = await listen(server);
    const socket = await http1Get(port, "/end");
    socket.end();
    expect((await closed).calls).toBe(0);
    socket.destroy();
    server.close();
  });

  it("HTTP/2: notices RST_STREAM while Node is still reading it, before the stream is destroyed", async () => {
    let resolve!: (s: Seen) => void;
    const closed = new Promise<Seen>((r) => (resolve = r));
    const server = departureServer(createH2Server(), resolve);
    const port = await listen(server);
    const session = h2connect(`http://127.0.0.1:${port}`);
    const stream = session.request({ ":path": "/stream" });
    stream.end();
    await once(stream, "data");
    stream.close(8); // CANCEL
    const seen = await closed;
    expect(seen).toEqual({ stillOpen: true, calls: 1 });
    session.close();
    server.close();
  });
});

/** End to end: a half-close alone ends a facade stream and its upstream request, logged as a cancel. */
describe("HTTP/1.1 client departure through the gateway", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ models: { sim: "sim-1" }, provider: { timeouts: FAR_TIMEOUTS }, server: { sendTimeoutMs: 3_600_000 } });
  });
  afterAll(() => h.close());

  it("a client that half-closes mid-stream aborts the upstream request", async () => {
    const tag = "departure-fin";
    const { port, hostname, host } = new URL(h.url);
    const socket = connect(Number(port), hostname);
    await once(socket, "connect");
    const body = JSON.stringify({ model: "sim", stream: true, messages: [{ role: "user", content: `#sim tokens=2000 fail=stall fail_at=3 tag=${tag}` }] });
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    // The upstream stalls after 3 tokens with every timeout far away: only the FIN can end it.
    await h.sim.records.waitFor((r) => r.tag === tag && r.tokensWritten === 3, 30_000);
    socket.end();
    const record = await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 30_000);
    expect(record.outcome).toBe("client_closed");
    expect(await h.waitForLog((l) => l.event === "stream.end" && l.requestId === record.requestId)).toMatchObject({ outcome: "canceled" });
    socket.destroy();
  });
});
