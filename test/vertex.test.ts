import { generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveConfig } from "../src/config/config.js";
import { vertexBaseUrl } from "../src/config/vertex-schema.js";
import type { ServiceAccountKey } from "../src/simulator/google-oauth.js";
import { type Answer, answerViaGrpc } from "./helpers/answers.js";
import { configErrors } from "./helpers/config-errors.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";
import { writeServiceAccount } from "./helpers/simulated-vertex.js";

/**
 * What only Vertex AI does: the project and location in the URL, Claude
 * through rawPredict with Vertex's body, and the service account's OAuth
 * token, fetched once, reused, refreshed, and refused without a secret at
 * the edge. The wire suites (stream conformance, cancellation, errors,
 * cross-provider, edge equivalence) run over Vertex's Gemini publisher.
 */
const PROJECT = "my-proj-42";
const LOCATION = "europe-west4";

let h: Harness;
const keys: Record<string, { key: ServiceAccountKey; path: string }> = {};

beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => {
      keys.main = writeServiceAccount(sim);
      keys.reuse = writeServiceAccount(sim);
      keys.burst = writeServiceAccount(sim);
      // Under the library's five-minute margin: every request fetches a new token.
      keys.short = writeServiceAccount(sim, { lifetimeSeconds: 60 });
      // Expired as soon as issued: the simulator refuses the bearer.
      keys.expired = writeServiceAccount(sim, { lifetimeSeconds: 0 });
      // A known account signing with a key that is not its own: the token endpoint refuses the assertion.
      const forged = writeServiceAccount(sim);
      const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
      writeFileSync(forged.path, JSON.stringify({ ...forged.key, private_key: privateKey.export({ type: "pkcs8", format: "pem" }).toString() }));
      keys.forged = forged;
      const vertex = (key: string, extra: Record<string, unknown> = {}) => ({
        kind: "vertex" as const,
        baseUrl: `${sim.origin}/v1/projects/${PROJECT}/locations/${LOCATION}`,
        vertex: { project: PROJECT, location: LOCATION, keyFile: keys[key]!.path, ...extra },
        breaker: { failures: 10_000 },
      });
      return {
        providers: {
          vx: vertex("main"),
          "vx-claude": vertex("main", { publisher: "anthropic" }),
          "vx-adaptive": { ...vertex("main"), thinking: "adaptive" as const },
          "vx-reuse": vertex("reuse"),
          "vx-burst": vertex("burst"),
          "vx-short": vertex("short"),
          "vx-expired": vertex("expired"),
          "vx-forged": vertex("forged"),
          "vx-nokey": { ...vertex("main"), vertex: { project: PROJECT, location: LOCATION, keyFile: "/nonexistent/sluice-vertex-key.json" } },
          anthropic: { kind: "anthropic", baseUrl: baseUrlFor(sim, "anthropic"), breaker: { failures: 10_000 } },
          gemini: { kind: "gemini", baseUrl: baseUrlFor(sim, "gemini"), breaker: { failures: 10_000 } },
        },
        models: {
          gem: { provider: "vx", model: "gemini-2.5-flash" },
          "gem-direct": { provider: "gemini", model: "gemini-2.5-flash" },
          claude: { provider: "vx", model: "claude-sonnet-4-5@20250929" },
          "claude-direct": { provider: "anthropic", model: "claude-sonnet-4-5@20250929" },
          "claude-forced": { provider: "vx-claude", model: "sim-1" },
          "opus-adaptive": { provider: "vx-adaptive", model: "claude-opus-4-6@20260101" },
          reuse: { provider: "vx-reuse", model: "sim-1" },
          burst: { provider: "vx-burst", model: "sim-1" },
          short: { provider: "vx-short", model: "sim-1" },
          expired: { provider: "vx-expired", model: "sim-1" },
          forged: { provider: "vx-forged", model: "sim-1" },
          nokey: { provider: "vx-nokey", model: "sim-1" },
          "vx-embed": { provider: "vx", model: "text-embedding-005" },
          "gem-embed": { provider: "gemini", model: "text-embedding-005" },
        },
      };
    },
  });
}, 60_000);
afterAll(async () => {
  await h.close();
});

const sdk = () => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "unused", maxRetries: 0 });

async function ask(alias: string, prompt: string, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}): Promise<OpenAI.ChatCompletion> {
  return sdk().chat.completions.create({ model: alias, messages: [{ role: "user", content: prompt }], ...extra });
}

/** What the simulator received for one tagged call: the path and the body. */
async function sent(alias: string, tag: string, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}): Promise<{ path: string; body: Record<string, unknown> }> {
  await ask(alias, `#sim tag=${tag} reasoning=3 tokens=3`, extra);
  const record = await h.sim.records.waitFor((r) => r.tag === tag, 30_000);
  return { path: record.path!, body: record.body as Record<string, unknown> };
}

async function refusal(alias: string): Promise<Error> {
  const error = await ask(alias, "#sim tokens=3").then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error!;
}

/** An answer without what differs by provider on purpose (call ids are the provider's). */
function comparable(answer: Answer): Answer {
  return { ...answer, toolCalls: answer.toolCalls.map((c) => ({ ...c, id: "" })) };
}

describe("the endpoint", () => {
  it("a location implies its regional host, `global` the global one, both under the project and location path", () => {
    expect(vertexBaseUrl({ project: PROJECT, location: LOCATION })).toBe(`https://${LOCATION}-aiplatform.googleapis.com/v1/projects/${PROJECT}/locations/${LOCATION}`);
    expect(vertexBaseUrl({ project: PROJECT, location: "global" })).toBe(`https://aiplatform.googleapis.com/v1/projects/${PROJECT}/locations/global`);
  });

  it("the configuration: the implied base URL without a baseUrl, the key file's path read from its variable, and refusals naming the field", () => {
    const provider = (vertex: Record<string, unknown>) => ({ providers: { v: { kind: "vertex", vertex } }, models: { m: { provider: "v", model: "gemini-2.5-flash" } } });
    const config = resolveConfig(provider({ project: PROJECT, location: "us-east5", keyFileEnv: "VX_KEY" }), { VX_KEY: "/secrets/key.json" });
    const v = config.providers.get("v")!;
    expect(v.baseUrl).toBe(`https://us-east5-aiplatform.googleapis.com/v1/projects/${PROJECT}/locations/us-east5`);
    expect(v.vertex).toEqual({ project: PROJECT, location: "us-east5", keyFile: "/secrets/key.json" });
    expect(configErrors(provider({ project: PROJECT, location: "us-east5", keyFileEnv: "VX_KEY" }))).toContain("providers.v.vertex.keyFileEnv: environment variable VX_KEY is not set");
    expect(configErrors(provider({ project: PROJECT, location: "us-east5", keyFile: "/a", keyFileEnv: "VX_KEY" }), { VX_KEY: "/b" })).toContain("set keyFile or keyFileEnv, not both");
    expect(configErrors({ providers: { v: { kind: "vertex" } }, models: { m: { provider: "v", model: "x" } } })).toContain("providers.v.baseUrl: required for kind vertex");
    expect(configErrors(provider({ project: "Not A Project", location: "us-east5" }))).toContain("providers.v.vertex.project");
  });

  it("Gemini goes to publishers/google …:streamGenerateContent with the Gemini API's own body", async () => {
    const vertex = await sent("gem", "gem-path");
    const direct = await sent("gem-direct", "gem-path-direct");
    expect(vertex.path).toBe(`/v1/projects/${PROJECT}/locations/${LOCATION}/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse`);
    expect({ ...vertex.body, contents: undefined }).toEqual({ ...direct.body, contents: undefined });
    expect(JSON.stringify(vertex.body.contents)).toBe(JSON.stringify(direct.body.contents).replace("gem-path-direct", "gem-path"));
  });

  it("Claude goes to publishers/anthropic …:streamRawPredict, the Messages body without model and with anthropic_version", async () => {
    const vertex = await sent("claude", "claude-path", { reasoning_effort: "high" });
    const direct = await sent("claude-direct", "claude-path-direct", { reasoning_effort: "high" });
    expect(vertex.path).toBe(`/v1/projects/${PROJECT}/locations/${LOCATION}/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict`);
    expect(vertex.body).not.toHaveProperty("model");
    expect(vertex.body.anthropic_version).toBe("vertex-2023-10-16");
    const { model: _, ...directBody } = direct.body;
    expect(JSON.parse(JSON.stringify(vertex.body).replace("claude-path", "claude-path-direct"))).toEqual({ anthropic_version: "vertex-2023-10-16", ...directBody });
    expect(vertex.body.thinking).toEqual({ type: "enabled", budget_tokens: 16_384 });
  });

  it("a provider's thinking form reaches Claude on Vertex as it reaches Anthropic", async () => {
    expect((await sent("opus-adaptive", "adaptive-body", { reasoning_effort: "high" })).body.thinking).toEqual({ type: "adaptive" });
  });

  it("the publisher setting overrides the model id", async () => {
    expect((await sent("claude-forced", "forced-path")).path).toBe(`/v1/projects/${PROJECT}/locations/${LOCATION}/publishers/anthropic/models/sim-1:streamRawPredict`);
  });
});

describe("Claude on Vertex end to end", () => {
  it("text, thinking, tool calls and usage arrive as from Anthropic itself", async () => {
    for (const prompt of ["#sim tokens=12 seed=5", "#sim reasoning=5 tokens=8 seed=7", "#sim reasoning=3 tokens=6 tools=2 seed=9"]) {
      const vertex = comparable(await answerViaGrpc(h.url, "claude", prompt));
      const direct = comparable(await answerViaGrpc(h.url, "claude-direct", prompt));
      expect(vertex.text.length + vertex.toolCalls.length).toBeGreaterThan(0);
      expect(vertex.usage?.output).toBeGreaterThan(0);
      expect(vertex).toEqual(direct);
    }
    const withTools = await answerViaGrpc(h.url, "claude", "#sim reasoning=3 tokens=6 tools=2 seed=9");
    expect(withTools.toolCalls).toHaveLength(2);
    expect(withTools.reasoning).not.toBe("");
  });
});

describe("the OAuth token", () => {
  it("is fetched once and reused while it is valid", async () => {
    const email = keys.reuse!.key.client_email;
    for (let i = 0; i < 3; i++) expect((await ask("reuse", "#sim tokens=3")).choices[0]?.message.content).toBeTruthy();
    expect(h.sim.googleTokenRequests(email)).toBe(1);
  });

  it("requests that arrive together before there is one wait for the same token", async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, () => ask("burst", "#sim tokens=3")));
    for (const a of answers) expect(a.choices[0]?.message.content).toBeTruthy();
    expect(h.sim.googleTokenRequests(keys.burst!.key.client_email)).toBe(1);
  });

  it("is fetched again when it is about to expire", async () => {
    const email = keys.short!.key.client_email;
    for (let i = 0; i < 3; i++) expect((await ask("short", "#sim tokens=3")).choices[0]?.message.content).toBeTruthy();
    expect(h.sim.googleTokenRequests(email)).toBe(3);
  });

  it("an expired bearer is refused by Vertex: an authentication error at the edge", async () => {
    const error = await refusal("expired");
    expect(error.message).toMatch(/rejected the gateway's credentials \(status 401\)/);
    expect(h.sim.googleTokenRequests(keys.expired!.key.client_email)).toBeGreaterThan(0);
  });

  it("a token endpoint that refuses the assertion: a clear error naming the provider, with no secret in it or in the logs", async () => {
    const error = await refusal("forged");
    expect(error.message).toMatch(/provider vx-forged could not get a Google access token: invalid_grant: Invalid JWT Signature/);
    const forgedKey = (JSON.parse((await import("node:fs")).readFileSync(keys.forged!.path, "utf8")) as ServiceAccountKey).private_key;
    for (const text of [error.message, h.logText()]) {
      expect(text).not.toContain("PRIVATE KEY");
      expect(text).not.toContain(forgedKey.split("\n")[1]!);
      expect(text).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\./);
      expect(text).not.toContain("ya29.");
    }
  });
});

describe("a key file that cannot be read", () => {
  it("fails the request naming the provider and the file, and is read again on the next request", async () => {
    for (let i = 0; i < 2; i++) expect((await refusal("nokey")).message).toMatch(/provider vx-nokey could not get a Google access token: .*\/nonexistent\/sluice-vertex-key\.json/);
  });
});

describe("embeddings on Vertex", () => {
  const texts = ["How do I reset my password?", "Quarterly revenue grew"];

  it(":predict with one instance per text: the vectors Gemini's own API gives, and the token count Vertex reports", async () => {
    const vertex = await sdk().embeddings.create({ model: "vx-embed", input: texts, dimensions: 32, encoding_format: "float" });
    const direct = await sdk().embeddings.create({ model: "gem-embed", input: texts, dimensions: 32, encoding_format: "float" });
    expect(vertex.data.map((d) => d.embedding)).toEqual(direct.data.map((d) => d.embedding));
    expect(vertex.data[0]!.embedding).toHaveLength(32);
    expect(vertex.usage.prompt_tokens).toBe(9);
    const record = h.sim.records.all().find((r) => r.format === "vertex-embeddings");
    expect(record?.model).toBe("text-embedding-005");
  });

  it("token arrays are refused: Vertex embeds text only", async () => {
    const error = await sdk()
      .embeddings.create({ model: "vx-embed", input: [[1, 2, 3]] })
      .then(
        () => undefined,
        (e: unknown) => e as Error,
      );
    expect(error?.message).toMatch(/embeds text only/);
  });
});
