import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.js";
import { openSocket, rawExchange } from "./helpers/raw.js";

const KEY = "sk-test-keepalive-3b9d1f7a5c2e4860";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { KEEPALIVE_KEY: KEY }, auth: { keys: [{ name: "keepalive", keyEnv: "KEEPALIVE_KEY" }] } });
});
afterAll(() => h.close());

/** One HTTP/1.1 chat request with an unknown key and a body of `bytes` declared (and `sent` of them sent). */
function refused(bytes: number, sent = bytes, close = false): string {
  const body = JSON.stringify({ model: "sim", stream: true, messages: [{ role: "user", content: "x".repeat(Math.max(0, bytes - 80)) }] })
    .padEnd(bytes, " ")
    .slice(0, bytes);
  const head = ["POST /v1/chat/completions HTTP/1.1", "Host: gateway", "Content-Type: application/json", "Authorization: Bearer sk-nobody-knows-this", `Content-Length: ${bytes}`, ...(close ? ["Connection: close"] : [])].join("\r\n");
  return `${head}\r\n\r\n${body.slice(0, sent)}`;
}

const answers = (raw: string) => raw.match(/HTTP\/1\.1 401 /g)?.length ?? 0;

describe("a request refused before its body is read", () => {
  it("leaves the connection open when its body is small, even one still on its way: the next request is answered on the same connection", async () => {
    const socket = await openSocket(h.url);
    let raw = "";
    const ended = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    const firstAnswered = new Promise<void>((resolve) => {
      socket.on("data", (chunk: Buffer) => {
        raw += chunk.toString("latin1");
        if (raw.includes("invalid_api_key")) resolve();
      });
    });
    socket.on("error", () => undefined);
    // Its headers alone: the refusal goes out before the body has arrived.
    const first = refused(300);
    const headEnd = first.indexOf("\r\n\r\n") + 4;
    socket.write(first.slice(0, headEnd));
    await firstAnswered;
    // The body, then the next request, only once the first answer is in: on a connection closed after the refusal they would find no one.
    socket.write(first.slice(headEnd) + refused(300, 300, true));
    await ended;
    expect(answers(raw)).toBe(2);
  });

  it("still closes the connection after the answer when its body is large (the rest is not read)", async () => {
    const raw = await rawExchange(h.url, refused(1_000_000, 1_000));
    expect(answers(raw)).toBe(1);
  });
});
