import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulatedText } from "../src/simulator/text.js";
import { type Harness, startHarness } from "./helpers/harness.js";

const run = promisify(execFile);
const BUF = "node_modules/.bin/buf";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ models: { demo: "sim-1?tokens=12&seed=5", embed: "sim-embed?dims=8" } });
});
afterAll(() => h.close());

async function bufCurl(...args: string[]): Promise<string> {
  const { stdout } = await run(BUF, ["curl", ...args], { timeout: 60_000 });
  return stdout;
}

/** buf curl prints a stream as concatenated pretty JSON objects. */
function parseConcatenated(text: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  let depth = 0;
  let start = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" && depth++ === 0) start = i;
    else if (c === "}" && --depth === 0) out.push(JSON.parse(text.slice(start, i + 1)) as Record<string, unknown>);
  }
  return out;
}

const REQUEST = JSON.stringify({ model: "demo", messages: [{ role: "ROLE_USER", content: [{ text: "Hello" }] }] });

describe("buf curl with server reflection (no proto files)", () => {
  it("lists services", async () => {
    const out = await bufCurl("--list-services", "--http2-prior-knowledge", h.url);
    expect(out.trim().split("\n")).toEqual([
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
      "sluice.v1.BatchService",
      "sluice.v1.ChatService",
      "sluice.v1.EmbeddingService",
      "sluice.v1.ResponsesService",
    ]);
  });

  it("calls EmbeddingService/Embed through reflection", async () => {
    const out = await bufCurl("--protocol", "grpc", "--http2-prior-knowledge", "--data", '{"model":"embed","inputs":[{"text":"Hello"},{"text":"Hi"}]}', `${h.url}/sluice.v1.EmbeddingService/Embed`);
    const answer = JSON.parse(out) as { embeddings: Array<{ values: number[] }>; model: string; inputTokens: string };
    expect(answer.model).toBe("embed");
    expect(answer.embeddings.map((e) => e.values.length)).toEqual([8, 8]);
    expect(answer.inputTokens).toBe("2");
  });

  it("lists methods, over v1 and v1alpha reflection", async () => {
    for (const protocol of ["grpc-v1", "grpc-v1alpha"]) {
      const out = await bufCurl("--list-methods", "--reflect-protocol", protocol, "--http2-prior-knowledge", h.url);
      expect(out).toContain("sluice.v1.ChatService/StreamChat");
      expect(out).toContain("sluice.v1.ChatService/Chat");
      expect(out).toContain("sluice.v1.ChatService/ListModels");
    }
  });

  for (const [protocol, extra] of [
    ["grpc", ["--http2-prior-knowledge"]],
    ["connect", []],
    ["grpcweb", []],
  ] as const) {
    it(`calls StreamChat over ${protocol}`, async () => {
      const out = await bufCurl("--protocol", protocol, ...extra, "--data", REQUEST, `${h.url}/sluice.v1.ChatService/StreamChat`);
      const messages = parseConcatenated(out);
      expect(messages[0]).toHaveProperty("start");
      const text = messages.map((m) => (m.text as { text?: string } | undefined)?.text ?? "").join("");
      expect(text).toBe(simulatedText(5, 12));
      expect(messages.at(-1)).toEqual({ sequence: String(messages.length - 1), finish: { reason: "FINISH_REASON_STOP" } });
    });
  }

  it("checks health through reflection, as a probe would", async () => {
    const out = await bufCurl("--protocol", "grpc", "--http2-prior-knowledge", "--data", '{"service":"sluice.v1.ChatService"}', `${h.url}/grpc.health.v1.Health/Check`);
    expect(JSON.parse(out)).toEqual({ status: "SERVING" });
  });

  it("reports a bad request with the gRPC code", async () => {
    const error = await run(BUF, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--data", '{"model":"missing","messages":[]}', `${h.url}/sluice.v1.ChatService/Chat`]).then(
      () => undefined,
      (e: { stderr: string }) => e.stderr,
    );
    expect(error).toContain("invalid_argument");
  });
});
