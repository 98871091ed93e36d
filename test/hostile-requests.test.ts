import { constants as h2, connect as h2connect } from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StreamChatResponse } from "../gen/sluice/v1/chat_service_pb.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { simulatedText } from "../src/simulator/text.js";
import { chatClient, textOf, transports, userRequest } from "./helpers/clients.js";
import { type GatewayProcess, startGatewayProcess } from "./helpers/gateway-process.js";
import { grpcFrame, h2request, openSocket, rawExchange, statusOf } from "./helpers/raw.js";

// The gateway runs as its own process: a crash would end it, and the
// in-flight stream opened first would die with it.
let sim: Simulator;
let gw: GatewayProcess;
let inFlight: AsyncIterator<StreamChatResponse>;
const received: StreamChatResponse[] = [];

beforeAll(async () => {
  sim = await startSimulator();
  gw = await startGatewayProcess({
    providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
    models: { sim: { provider: "sim", model: "sim-1?tokens=30" } },
  });
  // Held open (paused after its first message) while every hostile request below is sent.
  inFlight = chatClient(transports(gw.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", "hi"))[Symbol.asyncIterator]();
  const first = await inFlight.next();
  received.push(first.value as StreamChatResponse);
});
afterAll(async () => {
  await gw.stop();
  await sim.close();
});

const crlf = (lines: string[]) => `${lines.join("\r\n")}\r\n\r\n`;

describe("hostile HTTP/1.1 requests get a status, never a crash", () => {
  const cases: Array<[string, string, number]> = [
    ["a bare % in the path", crlf(["GET /v1/models/% HTTP/1.1", "Host: x", "Connection: close"]), 400],
    ["a % escape with bad hex", crlf(["GET /v1/models/%ZZ HTTP/1.1", "Host: x", "Connection: close"]), 400],
    ["a % escape of broken UTF-8", crlf(["GET /v1/models/%E0%A4%A HTTP/1.1", "Host: x", "Connection: close"]), 400],
    ["an RPC over HTTP/1.0 with no Host header", "POST /sluice.v1.ChatService/Chat HTTP/1.0\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}", 400],
    ["a request line that is not HTTP", "GARBAGE\r\n\r\n", 400],
    ["headers larger than the parser allows", crlf(["GET /healthz HTTP/1.1", "Host: x", `X-Big: ${"a".repeat(70_000)}`]), 431],
    ["a 70 KB model id", crlf([`GET /v1/models/${"m".repeat(70_000)} HTTP/1.1`, "Host: x", "Connection: close"]), 431],
  ];
  for (const [name, text, status] of cases) {
    it(name, async () => {
      expect(statusOf(await rawExchange(gw.url, text))).toBe(status);
    });
  }
});

describe("hostile HTTP/2 requests get a status, never a crash", () => {
  it("a bare % in the path: 400", async () => {
    const res = await h2request(gw.url, { ":method": "GET", ":path": "/v1/models/%" });
    expect(res.headers[":status"]).toBe(400);
    expect(JSON.parse(res.body.toString()).error.message).toMatch(/malformed percent-escape/);
  });

  it("an RPC with a header value outside Latin-1 is served", async () => {
    const res = await h2request(gw.url, { ":method": "POST", ":path": "/sluice.v1.ChatService/StreamChat", "content-type": "application/grpc", te: "trailers", "x-note": "日本語" }, grpcFrame(new Uint8Array(0)));
    expect(res.headers[":status"]).toBe(200);
    // An empty request names no model: a clean INVALID_ARGUMENT.
    expect(res.trailers["grpc-status"] ?? res.headers["grpc-status"]).toBe("3");
  });

  it("an RPC with a malformed grpc-timeout: INVALID_ARGUMENT", async () => {
    const res = await h2request(gw.url, { ":method": "POST", ":path": "/sluice.v1.ChatService/StreamChat", "content-type": "application/grpc", te: "trailers", "grpc-timeout": "soon" }, grpcFrame(new Uint8Array(0)));
    expect(res.trailers["grpc-status"] ?? res.headers["grpc-status"]).toBe("3");
  });

  it("a stream reset before its request body ends", async () => {
    const session = h2connect(gw.url);
    const stream = session.request({ ":method": "POST", ":path": "/sluice.v1.ChatService/StreamChat", "content-type": "application/grpc", te: "trailers" });
    stream.write(Buffer.from([0, 0, 0, 1, 0]));
    stream.on("error", () => undefined);
    await new Promise<void>((resolve) => stream.once("ready", resolve));
    stream.close(h2.NGHTTP2_CANCEL);
    await new Promise<void>((resolve) => stream.once("close", resolve));
    session.close();
    const health = await fetch(`${gw.url}/healthz`);
    expect(health.status).toBe(200);
  });

  it("garbage after the connection preface", async () => {
    const socket = await openSocket(gw.url);
    const gone = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.on("error", () => undefined);
    socket.resume();
    socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    socket.write(Buffer.alloc(64, 0xff));
    await gone; // the gateway tore the session down (GOAWAY, then close)
    expect(socket.destroyed).toBe(true);
  });
});

describe("after all of it", () => {
  it("the stream that was in flight completes, the process is alive and healthy", async () => {
    for (let next = await inFlight.next(); !next.done; next = await inFlight.next()) received.push(next.value);
    expect(textOf(received)).toBe(simulatedText(1, 30));
    expect(received.at(-1)!.delta.case).toBe("finish");
    expect(gw.child.exitCode).toBeNull();
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    expect(gw.stderr()).not.toMatch(/uncaught|URIError|TypeError/i);
  });
});
