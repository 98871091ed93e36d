import { execFile } from "node:child_process";
import { once } from "node:events";
import { rm, writeFile } from "node:fs/promises";
import { connect as http2Connect } from "node:http2";
import { join } from "node:path";
import { type ConnectionOptions, connect as tlsConnect } from "node:tls";
import { promisify } from "node:util";
import { ConnectError, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { status as GrpcStatus, credentials as grpcCredentials } from "@grpc/grpc-js";
import { Agent, fetch as undiciFetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveConfig } from "../src/config/config.js";
import { simulatedText } from "../src/simulator/text.js";
import { createTestPki, type TestPki } from "./helpers/certificates.js";
import { chatClient, collect, grpcJsStream, textOf, userRequest } from "./helpers/clients.js";
import { configErrors } from "./helpers/config-errors.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { grpcJsHealth, ServingStatus } from "./helpers/health-clients.js";

const run = promisify(execFile);

let pki: TestPki;
beforeAll(async () => {
  pki = await createTestPki();
});
afterAll(() => rm(pki.dir, { recursive: true, force: true }));

const TEXT = simulatedText(1, 5);

/** The connect-es transports over TLS, each verifying the gateway against the test CA. */
function tlsTransports(baseUrl: string, nodeOptions: { ca: string; cert?: string; key?: string }): Record<string, Transport> {
  return {
    "grpc (connect-node, h2)": createGrpcTransport({ baseUrl, nodeOptions }),
    "connect (connect-node, HTTP/1.1)": createConnectTransport({ baseUrl, httpVersion: "1.1", nodeOptions }),
    "connect (connect-node, h2)": createConnectTransport({ baseUrl, httpVersion: "2", nodeOptions }),
    "grpc-web (connect-node, HTTP/1.1)": createGrpcWebTransport({ baseUrl, httpVersion: "1.1", nodeOptions }),
  };
}

/** A TLS connection that completes its handshake; resolves with the protocol ALPN chose. */
async function handshake(url: string, options: ConnectionOptions) {
  const { hostname, port } = new URL(url);
  const socket = tlsConnect({ host: hostname, port: Number(port), ...options });
  socket.on("error", () => undefined); // the close event is what the tests wait for
  socket.resume(); // read, so that the server's close is seen
  await once(socket, "secureConnect");
  return socket;
}

describe("TLS on the listener", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ models: { sim: "sim-1?tokens=5" }, server: { tls: { certFile: pki.server.certFile, keyFile: pki.server.keyFile } } });
  });
  afterAll(() => h.close());

  it("reports an https URL and offers h2 and http/1.1 by ALPN on the one port", async () => {
    expect(h.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    for (const [offered, chosen] of [
      [["h2", "http/1.1"], "h2"],
      [["http/1.1"], "http/1.1"],
      [["h2"], "h2"],
    ] as const) {
      const socket = await handshake(h.url, { ca: pki.ca.cert, ALPNProtocols: [...offered] });
      expect(socket.alpnProtocol).toBe(chosen);
      socket.destroy();
    }
  });

  for (const [name] of Object.entries(tlsTransports("https://x", { ca: "" }))) {
    it(`streams over ${name}, verifying the gateway's certificate`, async () => {
      const transport = tlsTransports(h.url, { ca: pki.ca.cert })[name]!;
      const messages = await collect(chatClient(transport).streamChat(userRequest("sim", "Hello")));
      expect(textOf(messages)).toBe(TEXT);
      expect(messages.at(-1)!.delta.case).toBe("finish");
    });
  }

  it("streams to @grpc/grpc-js with TLS credentials, and answers its health check", async () => {
    const stream = grpcJsStream(h.url, userRequest("sim", "Hello"), { credentials: grpcCredentials.createSsl(Buffer.from(pki.ca.cert)) });
    try {
      expect(textOf(await stream.messages)).toBe(TEXT);
    } finally {
      stream.close();
    }
    const health = grpcJsHealth(new URL(h.url).host, grpcCredentials.createSsl(Buffer.from(pki.ca.cert)));
    try {
      expect(await health.check("")).toBe(ServingStatus.SERVING);
    } finally {
      health.close();
    }
  });

  it("answers buf curl (Go's TLS stack) through reflection, verifying with --cacert", async () => {
    const { stdout } = await run("node_modules/.bin/buf", ["curl", "--cacert", pki.ca.certFile, "--data", '{"service":""}', `${h.url}/grpc.health.v1.Health/Check`], {
      timeout: 60_000,
    });
    expect(JSON.parse(stdout)).toEqual({ status: "SERVING" });
  });

  it("serves the OpenAI facade over HTTPS with HTTP/1.1 and HTTP/2", async () => {
    for (const allowH2 of [false, true]) {
      const dispatcher = new Agent({ connect: { ca: pki.ca.cert }, allowH2 });
      try {
        const res = await undiciFetch(`${h.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "sim", messages: [{ role: "user", content: "Hello" }] }),
          dispatcher,
        });
        expect(res.status).toBe(200);
        const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
        expect(body.choices[0]!.message.content).toBe(TEXT);
      } finally {
        await dispatcher.close();
      }
    }
  });

  it("refuses cleartext on the TLS port, HTTP/1.1 and h2c alike, and serves no request that came that way", async () => {
    const start = h.logs().length;
    const before = h.logs().filter((l) => l.event === "connection.cleartext_refused").length;
    await expect(fetch(`${h.url.replace("https:", "http:")}/readyz`)).rejects.toThrow();
    const error = await collect(chatClient(createGrpcTransport({ baseUrl: h.url.replace("https:", "http:") })).streamChat(userRequest("sim", "Hello"))).then(() => undefined, ConnectError.from);
    expect(error).toBeDefined();
    await h.waitForLog(() => h.logs().filter((l) => l.event === "connection.cleartext_refused").length >= before + 2);
    // The first request's bytes may reach the parser; no route serves them.
    const lines = h.logs().slice(start);
    expect(lines.filter((l) => l.event === "access" && l.code !== "tls_required")).toEqual([]);
    expect(lines.some((l) => l.event === "stream.accepted")).toBe(false);
  });
});

describe("mutual TLS (server.tls.clientCaFile)", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      models: { sim: "sim-1?tokens=5" },
      server: { tls: { certFile: pki.server.certFile, keyFile: pki.server.keyFile, clientCaFile: pki.ca.certFile } },
    });
  });
  afterAll(() => h.close());

  const call = (nodeOptions: { ca: string; cert?: string; key?: string }) =>
    collect(chatClient(tlsTransports(h.url, nodeOptions)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", "Hello"))).then(
      (messages) => ({ text: textOf(messages), error: undefined }),
      (e: unknown) => ({ text: "", error: ConnectError.from(e) }),
    );

  it("serves a client whose certificate the configured CA signed (connect-es and grpc-js)", async () => {
    expect(await call({ ca: pki.ca.cert, cert: pki.client.cert, key: pki.client.key })).toEqual({ text: TEXT, error: undefined });
    const creds = grpcCredentials.createSsl(Buffer.from(pki.ca.cert), Buffer.from(pki.client.key), Buffer.from(pki.client.cert));
    const stream = grpcJsStream(h.url, userRequest("sim", "Hello"), { credentials: creds });
    try {
      expect(textOf(await stream.messages)).toBe(TEXT);
    } finally {
      stream.close();
    }
  });

  it("refuses a client without a certificate, or with one from another CA", async () => {
    for (const identity of [{}, { cert: pki.stranger.cert, key: pki.stranger.key }]) {
      const { text, error } = await call({ ca: pki.ca.cert, ...identity });
      expect(error).toBeDefined();
      expect(text).toBe("");
    }
    const stream = grpcJsStream(h.url, userRequest("sim", "Hello"), { credentials: grpcCredentials.createSsl(Buffer.from(pki.ca.cert)) });
    try {
      await expect(stream.messages).rejects.toMatchObject({ code: GrpcStatus.UNAVAILABLE });
    } finally {
      stream.close();
    }
    expect(h.logs().filter((l) => l.event === "connection.tls_failed").length).toBeGreaterThanOrEqual(3);
  });
});

describe("the connection guard over TLS", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      models: { sim: "sim-1" },
      // headersTimeoutMs leaves a loaded machine ample time for a handshake and a first request.
      server: { tls: { certFile: pki.server.certFile, keyFile: pki.server.keyFile }, headersTimeoutMs: 2_000, idleTimeoutMs: 200 },
    });
  });
  afterAll(() => h.close());
  const closed = () => ({ ...h.sluice.server.connections.closed });

  for (const name of ["grpc (connect-node, h2)", "connect (connect-node, HTTP/1.1)"]) {
    it(`a TLS connection with a long-running stream is not closed (${name}): its requests count as activity`, async () => {
      const before = closed();
      const abort = new AbortController();
      const transport = tlsTransports(h.url, { ca: pki.ca.cert })[name]!;
      const stream = chatClient(transport).streamChat(userRequest("sim", "#sim tokens=100000 delay_ms=5"), { signal: abort.signal })[Symbol.asyncIterator]();
      try {
        expect((await stream.next()).done).toBe(false);
        // A connection accepted after the stream's, that only shakes hands:
        // when the guard closes it, the stream's connection has passed the
        // same headers deadline, which a request in flight must cancel.
        const idle = await handshake(h.url, { ca: pki.ca.cert, ALPNProtocols: ["h2"] });
        await once(idle, "close");
        expect(closed().headers_timeout).toBe(before.headers_timeout + 1);
        for (let i = 0; i < 3; i++) expect((await stream.next()).done).toBe(false);
      } finally {
        abort.abort();
        await stream.return?.().catch(() => undefined);
      }
      expect(closed().headers_timeout).toBe(before.headers_timeout + 1);
    });
  }

  it("an idle TLS connection is still closed: a handshake and no request (headers timeout), for either ALPN protocol", async () => {
    for (const protocol of ["h2", "http/1.1"]) {
      const before = closed();
      const socket = await handshake(h.url, { ca: pki.ca.cert, ALPNProtocols: [protocol] });
      await once(socket, "close");
      expect(closed().headers_timeout).toBe(before.headers_timeout + 1);
    }
  });

  it("an idle TLS connection is still closed: an HTTP/2 session whose last stream ended (idle timeout)", async () => {
    const before = closed();
    const session = http2Connect(h.url, { ca: pki.ca.cert });
    session.on("error", () => undefined);
    const req = session.request({ ":path": "/healthz" });
    req.resume();
    await once(req, "end");
    await once(session, "close");
    expect(closed().idle_timeout).toBe(before.idle_timeout + 1);
    expect(closed().headers_timeout).toBe(before.headers_timeout);
  });

  it("shutdown closes TLS connections too", async () => {
    const other = await startHarness({ server: { tls: { certFile: pki.server.certFile, keyFile: pki.server.keyFile } } });
    const socket = await handshake(other.url, { ca: pki.ca.cert, ALPNProtocols: ["http/1.1"] });
    const closedSocket = once(socket, "close");
    await other.close();
    await closedSocket;
    expect(other.sluice.server.connections.open).toBe(0);
  });
});

describe("TLS configuration", () => {
  const base = (tls: Record<string, string>) => ({
    server: { tls },
    providers: { main: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
    models: { m: { provider: "main", model: "x" } },
  });
  const problems = (tls: Record<string, string>) => configErrors(base(tls));

  it("reads the files at start-up; the key never prints", () => {
    const config = resolveConfig(base({ certFile: pki.server.certFile, keyFile: pki.server.keyFile }), {});
    expect(config.server.tls?.cert).toBe(pki.server.cert);
    expect(JSON.stringify(config.server)).not.toContain("PRIVATE KEY");
    expect(String(config.server.tls?.key)).toBe("[redacted]");
  });

  it("names every unreadable file", () => {
    const message = problems({ certFile: "/nonexistent/tls.crt", keyFile: "/nonexistent/tls.key", clientCaFile: "/nonexistent/ca.crt" });
    expect(message).toContain("server.tls.certFile: cannot read /nonexistent/tls.crt: ENOENT");
    expect(message).toContain("server.tls.keyFile: cannot read /nonexistent/tls.key: ENOENT");
    expect(message).toContain("server.tls.clientCaFile: cannot read /nonexistent/ca.crt: ENOENT");
  });

  it("names a key that does not belong to the certificate, and a file that is not PEM, without printing key material", async () => {
    const garbage = join(pki.dir, "garbage.pem");
    await writeFile(garbage, "not a certificate\n");
    const mismatch = problems({ certFile: pki.server.certFile, keyFile: pki.client.keyFile });
    expect(mismatch).toContain(`server.tls.keyFile: ${pki.client.keyFile} is not a PEM private key for the certificate in ${pki.server.certFile}`);
    expect(mismatch).not.toContain("PRIVATE KEY");
    expect(problems({ certFile: garbage, keyFile: pki.server.keyFile })).toContain(`server.tls.certFile: ${garbage} is not a PEM certificate`);
    expect(problems({ certFile: pki.server.certFile, keyFile: pki.server.keyFile, clientCaFile: garbage })).toContain("server.tls.clientCaFile:");
  });
});
