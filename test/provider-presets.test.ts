import { Code } from "@connectrpc/connect";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveConfig, validateConfig } from "../src/config/config.js";
import { PROVIDER_PRESETS } from "../src/config/provider-presets.js";
import { chatClient, transports, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { rpcUntilError } from "./helpers/until-error.js";

const models = (provider: string) => ({ m: { provider, model: "x" } });

describe("a preset fills in what is not written", () => {
  it.each(Object.entries(PROVIDER_PRESETS))("%s: its base URL and its key variable", (name, preset) => {
    const key = "apiKeyEnv" in preset ? preset.apiKeyEnv : undefined;
    const config = resolveConfig({ providers: { p: { kind: "openai", preset: name } }, models: models("p") }, key ? { [key]: "k-0123456789" } : {});
    const provider = config.providers.get("p")!;
    expect(provider.baseUrl).toBe(preset.baseUrl);
    expect(provider.apiKey?.reveal()).toBe(key ? "k-0123456789" : undefined);
    expect(provider.preset).toBe(name);
  });

  it("written fields win", () => {
    const config = resolveConfig({ providers: { p: { kind: "openai", preset: "groq", baseUrl: "http://127.0.0.1:9/v1/", apiKeyEnv: "MY_GROQ" } }, models: models("p") }, { MY_GROQ: "mine" });
    expect(config.providers.get("p")!.baseUrl).toBe("http://127.0.0.1:9/v1");
    expect(config.providers.get("p")!.apiKey?.reveal()).toBe("mine");
  });

  it("its key variable unset is a start-up problem, named", () => {
    const loaded = validateConfig({ providers: { p: { kind: "openai", preset: "deepseek" } }, models: models("p") }, {});
    expect(loaded.ok).toBe(false);
    expect(loaded.ok ? "" : loaded.report).toContain("environment variable DEEPSEEK_API_KEY is not set");
  });

  it("is for the openai kind only", () => {
    const loaded = validateConfig({ providers: { p: { kind: "anthropic", preset: "mistral", baseUrl: "http://127.0.0.1:9/v1" } }, models: models("p") }, { MISTRAL_API_KEY: "k" });
    expect(loaded.ok).toBe(false);
    expect(loaded.ok ? "" : loaded.report).toContain("kind must be openai");
  });
});

describe("a preset's quirks, end to end against the simulator", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      routing: (sim) => ({
        providers: {
          mistral: { kind: "openai", preset: "mistral", baseUrl: sim.openAiBaseUrl },
          groq: { kind: "openai", preset: "groq", baseUrl: sim.openAiBaseUrl },
        },
        models: { mistral: { provider: "mistral", model: "sim-1" }, groq: { provider: "groq", model: "sim-1" } },
      }),
      env: { MISTRAL_API_KEY: "mistral-key-0123456789", GROQ_API_KEY: "groq-key-0123456789" },
    });
  });
  afterAll(() => h.close());

  it("Mistral gets random_seed and max_tokens, and no stream_options", async () => {
    const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "not-used", maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: "mistral", messages: [{ role: "user", content: "#sim tag=mistral-quirks tokens=4\nhi" }], stream: true, seed: 7, max_completion_tokens: 50 });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text.length).toBeGreaterThan(0);
    const record = await h.sim.records.waitFor((r) => r.tag === "mistral-quirks" && r.endedAt !== undefined, 30_000);
    const body = record.body as Record<string, unknown>;
    expect(body.random_seed).toBe(7);
    expect(body.max_tokens).toBe(50);
    expect(body).not.toHaveProperty("seed");
    expect(body).not.toHaveProperty("max_completion_tokens");
    expect(body).not.toHaveProperty("stream_options");
  });

  it("Groq's refused logprobs are the unsupported-parameter rule's: refused before the upstream, named", async () => {
    const { error } = await rpcUntilError(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("groq", "#sim tag=groq-logprobs\nhi", { logprobs: true, topLogprobs: 2 })));
    expect(error?.code).toBe(Code.InvalidArgument);
    expect(error?.rawMessage).toContain("logprobs: not supported by provider groq");
    expect(h.sim.records.all().filter((r) => r.tag === "groq-logprobs")).toEqual([]);
  });
});
