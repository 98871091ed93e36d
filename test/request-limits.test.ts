import { request as http1Request } from "node:http";
import { connect as h2connect } from "node:http2";
import { connect as netConnect } from "node:net";
import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { Code, createClient } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Role } from "../gen/sluice/v1/chat_pb.js";
import { ChatService, StreamChatRequestSchema } from "../gen/sluice/v1/chat_service_pb.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { simulatedText } from "../src/simulator/text.js";
import { collect, grpcJsStream, rpcFailure, textOf, userRequest } from "./helpers/clients.js";
import { type GatewayProcess, runtimeStats, startGatewayProcess } from "./helpers/gateway-process.js";
import { grpcFrame, h2request } from "./helpers/raw.js";

const MiB = 1024 * 1024;
let sim: Simulator;
let gw: GatewayProcess;

beforeAll(async () => {
  sim = await startSimulator();
  gw = await startGatewayProcess({
    server: { debugEndpoints: true },
    providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
    models: { sim: { provider: "sim", model: "sim-1?tokens=5" } },
  });
});
afterAll(async () => {
  await gw.stop();
  await sim.close();
});

/** 1 MiB of zero-length gRPC/Connect envelopes: the cheapest bytes to send, the most messages per byte. */
const TINY_ENVELOPES = Buffer.alloc(MiB, 0);

interface Refusal {
  readonly status: number;
  readonly rpcStatus: string | undefined;
  readonly sent: number;
}

/**
 * Offers up to 100 MiB over HTTP/1.1, chunked, a MiB at a time with
 * backpressure, until the gateway answers. Resolves with the answer and how
 * much the client managed to send.
 */
function offer100MiBHttp1(path: string, contentType: string): Promise<Refusal> {
  const { hostname, port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = http1Request({ host: hostname, port, path, method: "POST", headers: { "content-type": contentType } }, (res) => {
      answered = true;
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString("latin1")));
      res.on("end", () => {
        const grpcWeb = /grpc-status:\s*(\d+)/.exec(body)?.[1];
        const connect = /"code":"([a-z_]+)"/.exec(body)?.[1];
        resolve({ status: res.statusCode ?? 0, rpcStatus: grpcWeb ?? connect, sent });
      });
      res.on("error", reject);
    });
    req.on("error", (e) => (answered ? undefined : reject(e)));
    const pump = () => {
      while (!answered && sent < 100 * MiB) {
        sent += TINY_ENVELOPES.length;
        if (!req.write(TINY_ENVELOPES)) return void req.once("drain", pump);
      }
      if (!answered) req.end();
    };
    pump();
  });
}

function offer100MiBHttp2(): Promise<Refusal> {
  const session = h2connect(gw.url);
  return new Promise<Refusal>((resolve, reject) => {
    let sent = 0;
    let status = 0;
    let rpcStatus: string | undefined;
    const stream = session.request({ ":method": "POST", ":path": "/sluice.v1.ChatService/StreamChat", "content-type": "application/grpc", te: "trailers" });
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      rpcStatus = h["grpc-status"] as string | undefined;
    });
    stream.on("trailers", (t) => (rpcStatus = t["grpc-status"] as string));
    stream.on("data", () => undefined);
    // The gateway resets the stream (NO_ERROR) once its answer is out, which
    // is what releases a client still blocked on sending.
    stream.on("close", () => resolve({ status, rpcStatus, sent }));
    stream.on("error", () => undefined);
    session.on("error", reject);
    const pump = () => {
      while (status === 0 && sent < 100 * MiB && !stream.destroyed) {
        sent += TINY_ENVELOPES.length;
        if (!stream.write(TINY_ENVELOPES)) return void stream.once("drain", pump);
      }
      if (!stream.destroyed) stream.end();
    };
    pump();
  }).finally(() => session.close());
}

/**
 * A client that goes on sending after the answer (as a blocked writer
 * does): the gateway must still end the stream (RST_STREAM NO_ERROR once
 * its status is out), or the stream, its access line and its connection
 * would wait for the client to give up.
 */
async function refusedWhileStillSending(contentType: string, id: string): Promise<{ rstCode: number | undefined; answer: string }> {
  const session = h2connect(gw.url);
  session.on("error", () => undefined);
  try {
    const stream = session.request({ ":method": "POST", ":path": "/sluice.v1.ChatService/StreamChat", "content-type": contentType, te: "trailers", "x-request-id": id });
    let answer = "";
    stream.on("response", (h) => (answer += String(h["grpc-status"] ?? "")));
    stream.on("trailers", (t) => (answer += String(t["grpc-status"] ?? "")));
    stream.on("data", (d: Buffer) => (answer += d.toString("latin1")));
    stream.on("error", () => undefined);
    let sent = 0;
    const pump = () => {
      while (sent < 100 * MiB && !stream.closed) {
        sent += TINY_ENVELOPES.length;
        if (!stream.write(TINY_ENVELOPES)) return void stream.once("drain", pump);
      }
    };
    pump();
    await gw.waitForLine((l) => l.event === "access" && l.requestId === id);
    return { rstCode: stream.rstCode, answer };
  } finally {
    session.destroy();
  }
}

describe("an oversized request over HTTP/2 whose client keeps sending is ended by the gateway", () => {
  it("gRPC", async () => {
    const { rstCode, answer } = await refusedWhileStillSending("application/grpc", "limits-h2-grpc");
    expect(answer).toContain(String(Code.ResourceExhausted));
    expect(rstCode).toBe(0);
  });
  it("Connect streaming", async () => {
    const { rstCode, answer } = await refusedWhileStillSending("application/connect+proto", "limits-h2-connect");
    expect(answer).toContain('"code":"resource_exhausted"');
    expect(rstCode).toBe(0);
  });
  it("gRPC-Web", async () => {
    const { rstCode, answer } = await refusedWhileStillSending("application/grpc-web+proto", "limits-h2-grpc-web");
    expect(answer).toMatch(/grpc-status:\s*8/);
    expect(rstCode).toBe(0);
  });
});

describe("a 100 MiB request of tiny messages is refused before it is decoded, on every protocol", () => {
  const figures: string[] = [];
  afterAll(() => console.log(figures.join("\n")));

  const cases: Array<[string, () => Promise<Refusal>, (r: Refusal) => void]> = [
    ["gRPC over HTTP/2", offer100MiBHttp2, (r) => expect(r.rpcStatus).toBe(String(Code.ResourceExhausted))],
    ["Connect streaming over HTTP/1.1", () => offer100MiBHttp1("/sluice.v1.ChatService/StreamChat", "application/connect+proto"), (r) => expect(r.rpcStatus).toBe("resource_exhausted")],
    ["gRPC-Web over HTTP/1.1", () => offer100MiBHttp1("/sluice.v1.ChatService/StreamChat", "application/grpc-web+proto"), (r) => expect(r.rpcStatus).toBe(String(Code.ResourceExhausted))],
    ["Connect unary over HTTP/1.1", () => offer100MiBHttp1("/sluice.v1.ChatService/Chat", "application/proto"), (r) => expect(r.rpcStatus).toBe("resource_exhausted")],
    ["the OpenAI facade", () => offer100MiBHttp1("/v1/chat/completions", "application/json"), (r) => expect(r.status).toBe(413)],
  ];
  for (const [name, offer, check] of cases) {
    it(name, async () => {
      const before = await runtimeStats(gw.url, "?reset=1");
      const refusal = await offer();
      const after = await runtimeStats(gw.url);
      check(refusal);
      // It stopped reading at the limit: the client could not push the 100 MiB.
      expect(refusal.sent).toBeLessThan(100 * MiB);
      // Memory: the body limit is 4 MiB; nothing near the 4.4 GiB this once cost.
      expect(after.rssBytes - before.rssBytes).toBeLessThan(64 * MiB);
      expect(after.activeStreams).toBe(0);
      figures.push(
        `${name}: refused after the client sent ${(refusal.sent / MiB).toFixed(0)} MiB; RSS ${(before.rssBytes / MiB).toFixed(0)} → ${(after.rssBytes / MiB).toFixed(0)} MiB; event-loop delay p99 ${after.eventLoopDelayMs.p99} ms, max ${after.eventLoopDelayMs.max} ms`,
      );
    });
  }

  it("a declared Content-Length over the limit is refused before any body is sent", async () => {
    const { hostname, port } = new URL(gw.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http1Request({ host: hostname, port, path: "/sluice.v1.ChatService/Chat", method: "POST", headers: { "content-type": "application/proto", "content-length": String(100 * MiB) } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.flushHeaders();
    });
    expect(status).toBe(429); // Connect's HTTP status for RESOURCE_EXHAUSTED
  });
});

describe("HTTP/1.1: a refused body is not read to its end", () => {
  it("a client that keeps sending a declared 100 MiB body reads 413, then the gateway closes the connection", async () => {
    const { hostname, port } = new URL(gw.url);
    const socket = netConnect(Number(port), hostname);
    socket.on("error", () => undefined);
    let answer = "";
    socket.on("data", (d: Buffer) => (answer += d.toString("latin1")));
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\ncontent-length: ${100 * MiB}\r\n\r\n`);
    let sent = 0;
    let open = true;
    void closed.then(() => (open = false));
    const pump = () => {
      while (open && sent < 100 * MiB) {
        sent += TINY_ENVELOPES.length;
        if (!socket.write(TINY_ENVELOPES)) return void socket.once("drain", pump);
      }
    };
    pump();
    await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    // Closed after a bounded linger: nowhere near the 100 MiB it announced.
    expect(sent).toBeLessThan(100 * MiB);
  });
});

/** Writes request headers on a raw socket and resolves with the first response head the gateway sends (up to its blank line). */
async function firstHead(socket: import("node:net").Socket, head: string): Promise<string> {
  let text = "";
  const got = new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      text += d.toString("latin1");
      const end = text.indexOf("\r\n\r\n");
      if (end < 0) return;
      socket.off("data", onData);
      resolve(text.slice(0, end));
    };
    socket.on("data", onData);
    socket.once("close", () => reject(new Error(`closed before a response head: ${JSON.stringify(text)}`)));
  });
  socket.write(head);
  return got;
}

describe("Expect: 100-continue: the body is invited only when it will be read", () => {
  const chat = JSON.stringify({ model: "sim", messages: [{ role: "user", content: "Hi" }] });
  const headOf = (length: number) => `POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\nexpect: 100-continue\r\ncontent-length: ${length}\r\n\r\n`;

  it("HTTP/1.1, a declared Content-Length over the limit: 413 at once, never 100 Continue", async () => {
    const socket = netConnect(Number(new URL(gw.url).port), new URL(gw.url).hostname);
    socket.on("error", () => undefined);
    try {
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      const head = await firstHead(socket, headOf(100 * MiB));
      expect(head).toMatch(/^HTTP\/1\.1 413 /);
    } finally {
      socket.destroy();
    }
  });

  it("HTTP/1.1, a body within the limit: 100 Continue, then the answer once the body is sent", async () => {
    const socket = netConnect(Number(new URL(gw.url).port), new URL(gw.url).hostname);
    socket.on("error", () => undefined);
    try {
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      expect(await firstHead(socket, headOf(Buffer.byteLength(chat)))).toBe("HTTP/1.1 100 Continue");
      expect(await firstHead(socket, chat)).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      socket.destroy();
    }
  });

  it("HTTP/2, a body within the limit: continue, then the answer once the body is sent", async () => {
    const session = h2connect(gw.url);
    try {
      const stream = session.request({ ":method": "POST", ":path": "/v1/chat/completions", "content-type": "application/json", expect: "100-continue", "content-length": String(Buffer.byteLength(chat)) }, { endStream: false });
      stream.once("continue", () => stream.end(chat));
      const status = await new Promise<number>((resolve, reject) => {
        stream.once("response", (h) => resolve(Number(h[":status"])));
        stream.once("error", reject);
      });
      expect(status).toBe(200);
      stream.resume();
      await new Promise((resolve) => stream.once("end", resolve));
    } finally {
      session.close();
    }
  });

  it("HTTP/2, a declared content-length over the limit: 413 and no continue", async () => {
    const session = h2connect(gw.url);
    try {
      const stream = session.request({ ":method": "POST", ":path": "/v1/chat/completions", "content-type": "application/json", expect: "100-continue", "content-length": String(100 * MiB) }, { endStream: false });
      let invited = false;
      stream.on("continue", () => (invited = true));
      stream.on("error", () => undefined);
      const status = await new Promise<number>((resolve) => stream.once("response", (h) => resolve(Number(h[":status"]))));
      expect(status).toBe(413);
      expect(invited).toBe(false);
      stream.close();
    } finally {
      session.close();
    }
  });
});

/** A request with one user message made of `parts` one-character text parts. */
function manyParts(parts: number) {
  return create(StreamChatRequestSchema, {
    model: "sim",
    messages: [{ role: Role.USER, content: Array.from({ length: parts }, () => ({ part: { case: "text" as const, value: "a" } })) }],
  });
}

describe("the structure budget is checked before decoding", () => {
  it("30,000 content parts (150 KB) on gRPC: RESOURCE_EXHAUSTED naming the limit", async () => {
    const client = createClient(ChatService, createGrpcTransport({ baseUrl: gw.url }));
    const error = await rpcFailure(collect(client.streamChat(manyParts(30_000))));
    expect(error.code).toBe(Code.ResourceExhausted);
    expect(error.rawMessage).toMatch(/more than 20000 elements \(limits.maxRequestElements\)/);
  });

  it("the same over Connect JSON", async () => {
    const client = createClient(ChatService, createConnectTransport({ baseUrl: gw.url, httpVersion: "1.1", useBinaryFormat: false }));
    const error = await rpcFailure(collect(client.streamChat(manyParts(30_000))));
    expect(error.code).toBe(Code.ResourceExhausted);
  });

  it("the same on the facade: 413", async () => {
    const messages = Array.from({ length: 30_000 }, () => ({ role: "user", content: "a" }));
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "sim", messages }) });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/limits.maxRequestElements/);
  });

  it("a request just under the budget is served", async () => {
    const client = createClient(ChatService, createGrpcTransport({ baseUrl: gw.url }));
    expect(textOf(await collect(client.streamChat(manyParts(5_000))))).toBe(simulatedText(1, 5));
  });
});

/** A tool schema nested `depth` objects deep, as JSON text (built without recursion). */
function deepSchemaJson(depth: number): string {
  return `${'{"type":"object","properties":{"a":'.repeat(depth - 1)}{"type":"string"}${"}}".repeat(depth - 1)}`;
}

/** The same as a google.protobuf.Struct in binary, built bottom-up without recursion. */
function deepStructBinary(depth: number): Uint8Array {
  // Struct{fields: map<string, Value>}; Value{struct_value = 5}
  let struct = new BinaryWriter().finish();
  for (let d = 0; d < depth; d++) {
    const value = new BinaryWriter()
      .uint32((5 << 3) | 2)
      .bytes(struct)
      .finish();
    const entry = new BinaryWriter()
      .uint32((1 << 3) | 2)
      .string("a")
      .uint32((2 << 3) | 2)
      .bytes(value)
      .finish();
    struct = new BinaryWriter()
      .uint32((1 << 3) | 2)
      .bytes(entry)
      .finish();
  }
  return struct;
}

function requestWithDeepTool(depth: number): Uint8Array {
  const base = toBinary(StreamChatRequestSchema, userRequest("sim", "hi"));
  const tool = new BinaryWriter()
    .uint32((1 << 3) | 2)
    .string("deep")
    .uint32((3 << 3) | 2)
    .bytes(deepStructBinary(depth))
    .finish();
  return Buffer.concat([
    base,
    new BinaryWriter()
      .uint32((3 << 3) | 2)
      .bytes(tool)
      .finish(),
  ]);
}

describe("tool schemas nested too deep get INVALID_ARGUMENT / 400 naming the tool, the same cap on both edges", () => {
  for (const depth of [34, 10_000]) {
    it(`${depth} levels on the facade: 400 naming tools[0].function.parameters`, async () => {
      const body = `{"model":"sim","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"deep","parameters":${deepSchemaJson(depth)}}}]}`;
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body });
      expect(res.status).toBe(400);
      const error = ((await res.json()) as { error: { message: string; param: string } }).error;
      expect(error.param).toMatch(/^tools\[0\]\.function\.parameters/);
      expect(error.message).toMatch(/nested deeper than 32 levels/);
      expect(error.message.length).toBeLessThan(400);
    });

    it(`${depth} levels on gRPC: INVALID_ARGUMENT naming tools[0].parameters`, async () => {
      const res = await h2request(gw.url, { ":method": "POST", ":path": "/sluice.v1.ChatService/StreamChat", "content-type": "application/grpc", te: "trailers" }, grpcFrame(requestWithDeepTool(depth)));
      const trailers = { ...res.headers, ...res.trailers };
      expect(trailers["grpc-status"]).toBe(String(Code.InvalidArgument));
      expect(decodeURIComponent(String(trailers["grpc-message"]))).toMatch(/^tools\[0\]\.parameters.*nested deeper than 32 levels/);
    });
  }
});

describe("gzip-compressed requests are accepted on every RPC protocol; responses are not compressed", () => {
  const gzip = { sendCompression: compressionGzip, compressMinBytes: 0 };
  const transports = {
    "gRPC (h2)": () => createGrpcTransport({ baseUrl: gw.url, ...gzip }),
    "Connect (HTTP/1.1)": () => createConnectTransport({ baseUrl: gw.url, httpVersion: "1.1", ...gzip }),
    "gRPC-Web (HTTP/1.1)": () => createGrpcWebTransport({ baseUrl: gw.url, httpVersion: "1.1", ...gzip }),
  };
  for (const [name, transport] of Object.entries(transports)) {
    it(name, async () => {
      const client = createClient(ChatService, transport());
      expect(textOf(await collect(client.streamChat(userRequest("sim", "hi"))))).toBe(simulatedText(1, 5));
      const unary = await client.chat({ model: "sim", messages: [{ role: Role.USER, content: [{ part: { case: "text", value: "hi" } }] }] });
      expect(unary.text).toBe(simulatedText(1, 5));
    });
  }

  it("grpc-js with gzip as its default compression", async () => {
    const s = grpcJsStream(gw.url, userRequest("sim", "hi"), { channelOptions: { "grpc.default_compression_algorithm": 2 } });
    try {
      expect(textOf(await s.messages)).toBe(simulatedText(1, 5));
    } finally {
      s.close();
    }
  });

  it("a client that accepts gzip still gets uncompressed messages", async () => {
    const res = await h2request(
      gw.url,
      { ":method": "POST", ":path": "/sluice.v1.ChatService/StreamChat", "content-type": "application/grpc", te: "trailers", "grpc-accept-encoding": "gzip" },
      grpcFrame(toBinary(StreamChatRequestSchema, userRequest("sim", "hi"))),
    );
    expect(res.trailers["grpc-status"]).toBe("0");
    const flags: number[] = [];
    for (let at = 0; at < res.body.length; at += 5 + res.body.readUInt32BE(at + 1)) flags.push(res.body[at]!);
    // start, text (deltas that arrived together are one message), usage, finish at least.
    expect(flags.length).toBeGreaterThanOrEqual(4);
    expect(flags.every((f) => f === 0)).toBe(true);
  });

  it("a gzip bomb (10 MiB of zeros in 10 KB) is refused with RESOURCE_EXHAUSTED", async () => {
    const bomb = gzipSync(Buffer.alloc(10 * MiB));
    const res = await h2request(gw.url, { ":method": "POST", ":path": "/sluice.v1.ChatService/StreamChat", "content-type": "application/grpc", te: "trailers", "grpc-encoding": "gzip" }, grpcFrame(bomb, true));
    expect(bomb.length).toBeLessThan(20_000);
    expect({ ...res.headers, ...res.trailers }["grpc-status"]).toBe(String(Code.ResourceExhausted));
  });
});

describe("valid deadlines beyond Node's timer range are clamped, not fired at once", () => {
  it("grpc-timeout: 597H streams normally", async () => {
    const res = await h2request(
      gw.url,
      { ":method": "POST", ":path": "/sluice.v1.ChatService/StreamChat", "content-type": "application/grpc", te: "trailers", "grpc-timeout": "597H" },
      grpcFrame(toBinary(StreamChatRequestSchema, userRequest("sim", "hi"))),
    );
    expect(res.trailers["grpc-status"]).toBe("0");
  });

  it("connect-timeout-ms: 2147483648 streams normally", async () => {
    const client = createClient(ChatService, createConnectTransport({ baseUrl: gw.url, httpVersion: "1.1" }));
    const messages = await collect(client.streamChat(userRequest("sim", "hi"), { headers: { "connect-timeout-ms": "2147483648" } }));
    expect(messages.at(-1)!.delta.case).toBe("finish");
  });
});

describe("client values echoed in errors are capped so every status fits its headers", () => {
  const huge = "m".repeat(70_000);

  it("a 70 KB model name on gRPC: NOT_FOUND with a short message, not FRAME_SIZE_ERROR", async () => {
    const client = createClient(ChatService, createGrpcTransport({ baseUrl: gw.url }));
    const error = await rpcFailure(collect(client.streamChat(userRequest(huge, "hi"))));
    expect(error.code).toBe(Code.NotFound);
    expect(error.rawMessage.length).toBeLessThan(400);
    expect(error.rawMessage).toContain("(70000 characters)");
  });

  it("the same with grpc-js", async () => {
    const s = grpcJsStream(gw.url, userRequest(huge, "hi"));
    const error = await s.messages.then(
      () => undefined,
      (e: grpc.ServiceError) => e,
    );
    s.close();
    expect(error?.code).toBe(grpc.status.NOT_FOUND);
    expect(error!.details.length).toBeLessThan(400);
  });

  it("the same on the facade", async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: huge, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { message: string } }).error.message.length).toBeLessThan(400);
  });
});

describe("gRPC status messages read the same in every client", () => {
  const expected = 'unknown model "nope": not configured on this gateway (see ListModels or GET /v1/models)';

  it("grpc-js shows the plain message (no %3A)", async () => {
    const s = grpcJsStream(gw.url, userRequest("nope", "hi"));
    const error = await s.messages.then(
      () => undefined,
      (e: grpc.ServiceError) => e,
    );
    s.close();
    expect(error?.details).toBe(expected);
  });

  it("connect shows the same", async () => {
    const client = createClient(ChatService, createGrpcTransport({ baseUrl: gw.url }));
    expect((await rpcFailure(collect(client.streamChat(userRequest("nope", "hi"))))).rawMessage).toBe(expected);
  });

  it("non-ASCII and % survive the round trip", async () => {
    const client = createClient(ChatService, createGrpcTransport({ baseUrl: gw.url }));
    const model = "modèle 100%";
    expect((await rpcFailure(collect(client.streamChat(userRequest(model, "hi"))))).rawMessage).toContain('"modèle 100%"');
    const s = grpcJsStream(gw.url, userRequest(model, "hi"));
    const error = await s.messages.then(
      () => undefined,
      (e: grpc.ServiceError) => e,
    );
    s.close();
    expect(error?.details).toContain('"modèle 100%"');
  });
});
