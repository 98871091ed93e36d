import { Code } from "@connectrpc/connect";
import OpenAI, { AzureOpenAI } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AZURE_CHAT_API_VERSION, AZURE_RESPONSES_API_VERSION } from "../src/config/azure-schema.js";
import { resolveConfig } from "../src/config/config.js";
import { azureAdapter } from "../src/providers/azure/azure-adapter.js";
import { AZURE_SIM_KEY, AZURE_SIM_TOKEN } from "../src/simulator/azure-wire.js";
import type { RequestRecord } from "../src/simulator/records.js";
import { simulatedText } from "../src/simulator/text.js";
import { chatClient, textOf, transports, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { rpcUntilError } from "./helpers/until-error.js";

const WAIT_MS = 30_000;

function recorded(h: Harness, tag: string): Promise<RequestRecord> {
  return h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, WAIT_MS);
}

function facade(h: Harness): OpenAI {
  return new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "not-used", maxRetries: 0 });
}

async function streamedText(client: OpenAI, model: string, content: string): Promise<string> {
  const stream = await client.chat.completions.create({ model, messages: [{ role: "user", content }], stream: true });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
  return text;
}

describe("Azure OpenAI Chat Completions with the api-key header", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ kind: "azure-openai", models: { sim: "sim-1?seed=5", plain: "sim-1", embed: "sim-embed" } });
  });
  afterAll(() => h.close());

  it("sends the deployment in the path, api-version in the query and the key as api-key, and reads past the prompt-filter chunk", async () => {
    const text = await streamedText(facade(h), "sim", "#sim tag=az-url tokens=6\nhello");
    expect(text).toBe(simulatedText(5, 6));
    const record = await recorded(h, "az-url");
    expect(record.path).toBe(`/openai/deployments/${encodeURIComponent("sim-1?seed=5")}/chat/completions?api-version=${AZURE_CHAT_API_VERSION}`);
    expect(record.headers?.["api-key"]).toBe("[credential]");
    expect(record.headers?.authorization).toBeUndefined();
    expect(record.format).toBe("azure-openai");
    expect(record.outcome).toBe("completed");
  });

  it("embeds through the deployment's embeddings route", async () => {
    const res = await facade(h).embeddings.create({ model: "embed", input: ["#sim tag=az-embed\nfirst", "second"] });
    expect(res.data).toHaveLength(2);
    expect(res.data[0]!.embedding.length).toBeGreaterThan(0);
    const record = await recorded(h, "az-embed");
    expect(record.path).toBe(`/openai/deployments/sim-embed/embeddings?api-version=${AZURE_CHAT_API_VERSION}`);
    expect(record.headers?.["api-key"]).toBe("[credential]");
  });

  it("sends what the openai SDK's AzureOpenAI client sends for the same request: URL, credential header, content type and body", async () => {
    // A deployment name is plain (letters, digits, - _ .): the SDK puts it in the path as it is, so knobs go in the text.
    const sdk = new AzureOpenAI({ endpoint: h.sim.origin, apiKey: AZURE_SIM_KEY, apiVersion: AZURE_CHAT_API_VERSION, maxRetries: 0 });
    const content = "#sim tag=az-sdk seed=5 tokens=4\nhello";
    const stream = await sdk.chat.completions.create({ model: "sim-1", messages: [{ role: "user", content }], stream: true, stream_options: { include_usage: true } });
    let sdkText = "";
    for await (const chunk of stream) sdkText += chunk.choices[0]?.delta.content ?? "";
    const bySdk = await recorded(h, "az-sdk");

    const gatewayText = await streamedText(facade(h), "plain", content.replace("az-sdk", "az-gw"));
    const byGateway = await recorded(h, "az-gw");

    expect(gatewayText).toBe(sdkText);
    expect(byGateway.path).toBe(bySdk.path);
    expect(byGateway.headers?.["api-key"]).toBe(bySdk.headers?.["api-key"]);
    expect(byGateway.headers?.authorization).toBe(bySdk.headers?.authorization);
    expect(byGateway.headers?.["content-type"]).toBe(bySdk.headers?.["content-type"]);
    const sdkBody = bySdk.body as Record<string, unknown>;
    const gatewayBody = byGateway.body as Record<string, unknown>;
    const { messages: sdkMessages, ...sdkRest } = sdkBody;
    const { messages: gatewayMessages, ...gatewayRest } = gatewayBody;
    expect(gatewayRest).toEqual(sdkRest);
    expect(JSON.stringify(gatewayMessages).replace("az-gw", "az-sdk")).toBe(JSON.stringify(sdkMessages));
  });
});

describe("the simulated Azure resource refuses as Azure does", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ kind: "azure-openai" });
  });
  afterAll(() => h.close());

  const post = (path: string, headers: Record<string, string>) =>
    fetch(`${h.sim.azureBaseUrl}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], stream: true }) });

  it("a wrong key: 401 with Azure's code-and-message body, before anything else", async () => {
    const res = await post("/deployments/sim-1/chat/completions", { "api-key": "wrong" });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "401", message: expect.stringContaining("Access denied") });
  });

  it("no api-version: refused", async () => {
    const res = await post("/deployments/sim-1/chat/completions", { "api-key": AZURE_SIM_KEY });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain("api-version");
  });

  it("streams the prompt-filter chunk first, then content-filter verdicts on every choice", async () => {
    const res = await post(`/deployments/sim-1/chat/completions?api-version=${AZURE_CHAT_API_VERSION}`, { "api-key": AZURE_SIM_KEY });
    expect(res.status).toBe(200);
    const events = (await res.text()).split("\n\n").filter((e) => e.startsWith("data: {"));
    const chunks = events.map((e) => JSON.parse(e.slice("data: ".length)) as { choices: Array<{ content_filter_results?: unknown }>; prompt_filter_results?: unknown });
    expect(chunks[0]!.choices).toEqual([]);
    expect(chunks[0]!.prompt_filter_results).toBeDefined();
    for (const chunk of chunks.slice(1)) for (const choice of chunk.choices) expect(choice.content_filter_results).toBeDefined();
  });
});

describe("a key Azure refuses", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ kind: "azure-openai", env: { SIM_AZURE_API_KEY: "wrong-key-0123456789abcdef" } });
  });
  afterAll(() => h.close());

  it("ends the call with the gateway's credentials error, naming no key", async () => {
    const { received, error } = await rpcUntilError(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", "hello")));
    expect(received).toEqual([]);
    expect(error?.code).toBe(Code.Internal);
    expect(error?.rawMessage).toBe("provider simulator rejected the gateway's credentials (status 401)");
    expect(h.logText()).not.toContain("wrong-key-0123456789abcdef");
  });
});

describe("Azure OpenAI's Responses API", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ kind: "azure-openai", provider: { azure: { api: "responses" } }, models: { sim: "sim-1" } });
  });
  afterAll(() => h.close());

  it("posts to the resource's /responses with the preview api-version and the deployment as model", async () => {
    const { received, error } = await rpcUntilError(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", "#sim tag=az-resp seed=2 tokens=5\nhello")));
    expect(error).toBeUndefined();
    expect(textOf(received)).toBe(simulatedText(2, 5));
    const record = await recorded(h, "az-resp");
    expect(record.path).toBe(`/openai/responses?api-version=${AZURE_RESPONSES_API_VERSION}`);
    expect((record.body as { model?: unknown }).model).toBe("sim-1");
    expect(record.format).toBe("azure-openai-responses");
  });
});

describe("a bearer token instead of the key", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      kind: "azure-openai",
      provider: { apiKeyEnv: undefined, azure: { tokenEnv: "SIM_AZURE_TOKEN" } },
      env: { SIM_AZURE_TOKEN: AZURE_SIM_TOKEN },
    });
  });
  afterAll(() => h.close());

  it("sends Authorization: Bearer and no api-key header", async () => {
    const text = await streamedText(facade(h), "sim", "#sim tag=az-bearer tokens=3\nhello");
    expect(text.length).toBeGreaterThan(0);
    const record = await recorded(h, "az-bearer");
    expect(record.headers?.authorization).toBe("[credential]");
    expect(record.headers?.["api-key"]).toBeUndefined();
  });
});

describe("Azure's own refusals, as Azure writes them", () => {
  const config = resolveConfig({ providers: { az: { kind: "azure-openai", azure: { resource: "contoso" } } }, models: { m: { provider: "az", model: "gpt-4o" } } }, {});
  const target = { provider: config.providers.get("az")!, model: "gpt-4o" };

  it("implies the base URL from the resource", () => {
    expect(target.provider.baseUrl).toBe("https://contoso.openai.azure.com/openai");
  });

  it("a prompt its content filter stopped (400, code content_filter) is the caller's fault, with Azure's reason relayed", () => {
    const body = JSON.stringify({
      error: {
        message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
        type: null,
        param: "prompt",
        code: "content_filter",
        status: 400,
        innererror: { code: "ResponsibleAIPolicyViolation", content_filter_result: { hate: { filtered: true, severity: "high" } } },
      },
    });
    const error = azureAdapter.errorFromResponse({ status: 400, headers: {}, body }, target);
    expect(error.code).toBe("upstream_rejected");
    expect(error.message).toContain("content management policy");
  });

  it("a rate limit (429, Azure's code-and-message body) keeps its Retry-After", () => {
    const body = JSON.stringify({ error: { code: "429", message: "Requests to the ChatCompletions_Create Operation have exceeded call rate limit. Please retry after 2 seconds." } });
    const error = azureAdapter.errorFromResponse({ status: 429, headers: { "retry-after": "2" }, body }, target);
    expect(error.code).toBe("upstream_rate_limited");
    expect(error.retryAfterMs).toBe(2000);
  });
});
