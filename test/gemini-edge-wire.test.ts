import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../src/config/key-hash.js";
import { simulatedText } from "../src/simulator/text.js";
import { type Harness, startHarness } from "./helpers/harness.js";

/**
 * The Gemini edge on the wire, with plain fetch: the two stream forms
 * (`?alt=sse` events and the JSON array), the three places a key may be,
 * and what is refused, dropped or not found, each in Google's error shape.
 */

const KEY = "sk-test-gemini-edge-3f9a1c7e5b2d4086";
const OTHER_KEY = "sk-test-gemini-other-8e2c4a6f0b1d3957";
const ANY_ALIAS_KEY = "sk-test-gemini-any-5d7f9b1c3e0a2468";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    models: { demo: "sim-1?tokens=6&seed=3", hidden: "sim-1?tokens=2" },
    env: { GEMINI_TEST_KEY: KEY },
    auth: {
      keys: [
        { name: "gemini-caller", keyEnv: "GEMINI_TEST_KEY", models: ["demo"] },
        { name: "other", sha256: sha256Hex(OTHER_KEY), models: ["hidden"] },
        { name: "any", sha256: sha256Hex(ANY_ALIAS_KEY) },
      ],
    },
  });
});
afterAll(() => h.close());

const BODY = JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Say hello" }] }] });

function post(path: string, init: { body?: string; headers?: Record<string, string> } = {}): Promise<Response> {
  return fetch(`${h.url}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-goog-api-key": KEY, ...init.headers }, body: init.body ?? BODY });
}

interface Chunk {
  candidates?: Array<{ content?: { parts?: Array<{ text?: string }> }; finishReason?: string }>;
  usageMetadata?: { totalTokenCount?: number };
  modelVersion?: string;
}

const textOf = (chunks: readonly Chunk[]) =>
  chunks
    .flatMap((c) => c.candidates?.[0]?.content?.parts ?? [])
    .map((p) => p.text ?? "")
    .join("");

async function errorOf(response: Response): Promise<{ code: number; message: string; status: string }> {
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  return ((await response.json()) as { error: { code: number; message: string; status: string } }).error;
}

describe("streamGenerateContent's two forms", () => {
  it("?alt=sse: data events, each one GenerateContentResponse", async () => {
    const response = await post("/v1beta/models/demo:streamGenerateContent?alt=sse");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = (await response.text()).split(/\r?\n\r?\n/).filter((e) => e.startsWith("data: "));
    const chunks = events.map((e) => JSON.parse(e.slice("data: ".length)) as Chunk);
    expect(chunks.length).toBeGreaterThan(1);
    expect(textOf(chunks)).toBe(simulatedText(3, 6));
    expect(chunks.at(-1)!.candidates?.[0]?.finishReason).toBe("STOP");
    expect(chunks.every((c) => c.modelVersion === "demo")).toBe(true);
  });

  it("without alt: one JSON array, written element by element", async () => {
    const response = await post("/v1beta/models/demo:streamGenerateContent");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const chunks = JSON.parse(await response.text()) as Chunk[];
    expect(Array.isArray(chunks)).toBe(true);
    expect(chunks.length).toBeGreaterThan(1);
    expect(textOf(chunks)).toBe(simulatedText(3, 6));
    expect(chunks.at(-1)!.usageMetadata?.totalTokenCount).toBeGreaterThan(0);
  });

  it("the /v1/models/… prefix serves the same methods", async () => {
    const response = await post("/v1/models/demo:generateContent");
    expect(response.status).toBe(200);
    expect(textOf([(await response.json()) as Chunk])).toBe(simulatedText(3, 6));
  });
});

describe("the key, from where Google's clients put it", () => {
  for (const [where, path, headers] of [
    ["x-goog-api-key", "/v1beta/models/demo:generateContent", { "x-goog-api-key": KEY }],
    ["?key=", `/v1beta/models/demo:generateContent?key=${KEY}`, { "x-goog-api-key": "" }],
    ["Authorization: Bearer", "/v1beta/models/demo:generateContent", { "x-goog-api-key": "", authorization: `Bearer ${KEY}` }],
  ] as const) {
    it(`${where} is accepted`, async () => {
      const clean = Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== ""));
      const response = await fetch(`${h.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...clean }, body: BODY });
      expect(response.status).toBe(200);
      expect(textOf([(await response.json()) as Chunk])).toBe(simulatedText(3, 6));
    });
  }

  it("no key: 401 UNAUTHENTICATED; a key that may not use the alias: 403 PERMISSION_DENIED", async () => {
    const none = await fetch(`${h.url}/v1beta/models/demo:generateContent`, { method: "POST", headers: { "content-type": "application/json" }, body: BODY });
    expect(none.status).toBe(401);
    expect((await errorOf(none)).status).toBe("UNAUTHENTICATED");
    const other = await post("/v1beta/models/demo:generateContent", { headers: { "x-goog-api-key": OTHER_KEY } });
    expect(other.status).toBe(403);
    expect(await errorOf(other)).toMatchObject({ code: 403, status: "PERMISSION_DENIED" });
  });

  it("the access line names the edge and the key, never the key itself", async () => {
    const response = await post(`/v1beta/models/demo:generateContent?key=${KEY}`, { headers: { "x-goog-api-key": "" } });
    expect(response.status).toBe(200);
    const line = await h.waitForLog((l) => l.event === "access" && l.edge === "gemini" && l.key === "gemini-caller", 30_000);
    expect(line.route).toBe("/v1beta/models/{id}");
    expect(h.logText()).not.toContain(KEY);
  });

  it("models.list shows only the aliases the key may use", async () => {
    const response = await fetch(`${h.url}/v1beta/models`, { headers: { "x-goog-api-key": KEY } });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { models: Array<{ name: string }> }).models.map((m) => m.name)).toEqual(["models/demo"]);
  });
});

describe("refused, dropped, not found", () => {
  const body = (extra: Record<string, unknown>) => JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hi" }] }], ...extra });

  it("candidateCount > 1 and cachedContent change the answer: 400 INVALID_ARGUMENT naming the field", async () => {
    for (const [extra, field] of [
      [{ generationConfig: { candidateCount: 2 } }, "generationConfig.candidateCount"],
      [{ cachedContent: "cachedContents/abc" }, "cachedContent"],
      [{ generationConfig: { responseModalities: ["IMAGE"] } }, "generationConfig.responseModalities"],
    ] as const) {
      const response = await post("/v1beta/models/demo:generateContent", { body: body(extra) });
      expect(response.status).toBe(400);
      const error = await errorOf(response);
      expect(error).toMatchObject({ code: 400, status: "INVALID_ARGUMENT" });
      expect(error.message.startsWith(`${field}:`)).toBe(true);
    }
  });

  it("hints are carried out of the way and named in sluice-dropped-params, never a 400", async () => {
    const response = await post("/v1beta/models/demo:streamGenerateContent?alt=sse", {
      body: body({ safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }], tools: [{ googleSearch: {} }], generationConfig: { mediaResolution: "MEDIA_RESOLUTION_LOW" } }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("sluice-dropped-params")?.split(",")).toEqual(expect.arrayContaining(["safetySettings", "tools[0].googleSearch", "generationConfig.mediaResolution"]));
    expect(await response.text()).toContain("STOP");
  });

  it("a name Google's API does not know: 400 naming it", async () => {
    const response = await post("/v1beta/models/demo:generateContent", { body: body({ temprature: 1 }) });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).message).toMatch(/^temprature: unknown name/);
  });

  it("a canonical refusal is said in Gemini's field names", async () => {
    const response = await post("/v1beta/models/demo:generateContent", { body: body({ generationConfig: { temperature: 7 } }) });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).message).toMatch(/^generationConfig\.temperature: /);
  });

  it("an unknown model is 404 NOT_FOUND; an unknown method and an unserved path too", async () => {
    const model = await fetch(`${h.url}/v1beta/models/nope:generateContent`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${ANY_ALIAS_KEY}` }, body: BODY });
    expect(model.status).toBe(404);
    expect(await errorOf(model)).toMatchObject({ code: 404, status: "NOT_FOUND" });
    const method = await post("/v1beta/models/demo:predict");
    expect(method.status).toBe(404);
    expect((await errorOf(method)).status).toBe("NOT_FOUND");
    const path = await fetch(`${h.url}/v1beta/cachedContents`, { headers: { "x-goog-api-key": KEY } });
    expect(path.status).toBe(404);
    expect((await errorOf(path)).status).toBe("NOT_FOUND");
    const get = await fetch(`${h.url}/v1beta/models/nope`, { headers: { "x-goog-api-key": KEY } });
    expect(get.status).toBe(404);
  });
});

describe("the other methods, raw", () => {
  it("countTokens takes a whole generateContentRequest too", async () => {
    const contents = await post("/v1beta/models/demo:countTokens", { body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "How many tokens are here?" }] }] }) });
    const whole = await post("/v1beta/models/demo:countTokens", { body: JSON.stringify({ generateContentRequest: { model: "models/demo", contents: [{ role: "user", parts: [{ text: "How many tokens are here?" }] }] } }) });
    expect(contents.status).toBe(200);
    const counted = ((await contents.json()) as { totalTokens: number }).totalTokens;
    expect(counted).toBeGreaterThan(3);
    expect(((await whole.json()) as { totalTokens: number }).totalTokens).toBe(counted);
  });

  it("models.get names the alias in Google's resource shape", async () => {
    const response = await fetch(`${h.url}/v1beta/models/demo`, { headers: { "x-goog-api-key": KEY } });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ name: "models/demo", supportedGenerationMethods: expect.arrayContaining(["generateContent", "streamGenerateContent"]) });
  });
});
