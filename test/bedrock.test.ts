import { BedrockRuntimeClient, ConverseStreamCommand } from "@aws-sdk/client-bedrock-runtime";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateConfig } from "../src/config/config.js";
import { SIMULATED_AWS_CREDENTIALS } from "../src/simulator/bedrock-auth.js";
import { embedText } from "../src/simulator/embedding-vectors.js";
import { simulatedText } from "../src/simulator/text.js";
import { answerViaGrpc } from "./helpers/answers.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { simulatedProvider } from "./helpers/simulated-providers.js";

/** Bedrock-only behaviour; the wire suites (streams, tools, errors, cancellation) run over `bedrock` through WIRE_KINDS. */

const PROFILE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const ARN = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6";

function facade(h: Harness): OpenAI {
  return new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "not-used", maxRetries: 0 });
}

async function textVia(openai: OpenAI, model: string, prompt: string): Promise<string> {
  const stream = await openai.chat.completions.create({ model, messages: [{ role: "user", content: prompt }], stream: true });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
  return text;
}

describe("bedrock provider against the simulated Bedrock", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ kind: "bedrock", models: { sim: "sim-1", profile: PROFILE, arn: ARN } });
  });
  afterAll(() => h.close());

  it("signs every request so that Bedrock's own check (the SDK's signer, the simulator's credentials) accepts it", async () => {
    expect(await textVia(facade(h), "sim", "#sim tokens=4 seed=9 tag=signed")).toBe(simulatedText(9, 4));
    const record = await h.sim.records.waitFor((r) => r.tag === "signed" && r.outcome === "completed", 10_000);
    expect(record.format).toBe("bedrock");
  });

  it("puts an inference-profile id and an ARN in the path as one segment, and they arrive intact", async () => {
    expect(await textVia(facade(h), "profile", "#sim tokens=3 seed=2 tag=profile")).toBe(simulatedText(2, 3));
    expect(await textVia(facade(h), "arn", "#sim tokens=3 seed=2 tag=arn")).toBe(simulatedText(2, 3));
    expect((await h.sim.records.waitFor((r) => r.tag === "profile", 10_000)).model).toBe(PROFILE);
    expect((await h.sim.records.waitFor((r) => r.tag === "arn", 10_000)).model).toBe(ARN);
  });

  it("sends Claude's thinking through additionalModelRequestFields, with room for it in maxTokens", async () => {
    const openai = facade(h);
    const stream = await openai.chat.completions.create({ model: "profile", messages: [{ role: "user", content: "#sim tokens=2 tag=thinking" }], reasoning_effort: "low", stream: true });
    for await (const _ of stream);
    const body = (await h.sim.records.waitFor((r) => r.tag === "thinking", 10_000)).body as { additionalModelRequestFields?: unknown; inferenceConfig?: { maxTokens?: number } };
    expect(body.additionalModelRequestFields).toEqual({ thinking: { type: "enabled", budget_tokens: 1024 } });
    expect(body.inferenceConfig?.maxTokens).toBeGreaterThan(1024);
  });

  it("refuses by name what Converse cannot honour", async () => {
    const error = await facade(h)
      .chat.completions.create({ model: "sim", messages: [{ role: "user", content: "hi" }], seed: 3, stream: true })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect((error as Error).message).toContain("seed");
  });
});

describe("a wrong AWS secret", () => {
  const WRONG = "wrong/secret/key/for/the/simulated/bedrock";
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ kind: "bedrock", models: { sim: "sim-1" }, env: { SIM_AWS_SECRET_ACCESS_KEY: WRONG } });
  });
  afterAll(() => h.close());

  it("is refused by Bedrock with 403 and reaches the caller as the gateway's credential failure, naming no secret", async () => {
    const error = await textVia(facade(h), "sim", "#sim tokens=2").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    const api = error as InstanceType<typeof OpenAI.APIError>;
    expect(api.code).toBe("upstream_auth");
    expect(api.message).toContain("status 403");
    expect(JSON.stringify(api.error)).not.toContain(WRONG);
    expect(h.logs()).not.toContain(WRONG);
  });
});

describe("the AWS SDK's own Bedrock runtime client", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ kind: "bedrock", models: { sim: "sim-1?seed=5" } });
  });
  afterAll(() => h.close());

  const tool = { name: "get_weather", description: "Weather in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };

  // The client speaks HTTP/2 by default (for bidirectional streams); the simulator, like Bedrock for ConverseStream, also takes HTTP/1.1.
  it("decodes the simulator's stream, and sends the same request body Sluice sends for the same conversation", async () => {
    const client = new BedrockRuntimeClient({ region: "us-east-1", endpoint: h.sim.bedrockBaseUrl, credentials: SIMULATED_AWS_CREDENTIALS, maxAttempts: 1, requestHandler: new NodeHttpHandler() });
    const prompt = (tag: string) => `#sim tokens=3 tools=1 seed=5 tag=${tag}`;
    const response = await client.send(
      new ConverseStreamCommand({
        modelId: "sim-1?seed=5",
        system: [{ text: "Be brief." }],
        messages: [{ role: "user", content: [{ text: prompt("sdk") }] }],
        inferenceConfig: { maxTokens: 200, temperature: 0.5 },
        toolConfig: { tools: [{ toolSpec: { name: tool.name, description: tool.description, inputSchema: { json: tool.parameters } } }] },
      }),
    );
    let text = "";
    let input = "";
    let stopReason: string | undefined;
    let outputTokens: number | undefined;
    for await (const event of response.stream!) {
      text += event.contentBlockDelta?.delta?.text ?? "";
      input += event.contentBlockDelta?.delta?.toolUse?.input ?? "";
      stopReason ??= event.messageStop?.stopReason;
      outputTokens ??= event.metadata?.usage?.outputTokens;
    }
    client.destroy();
    expect(text).toBe(simulatedText(5, 3));
    expect(JSON.parse(input)).toHaveProperty("city");
    expect(stopReason).toBe("tool_use");
    expect(outputTokens).toBeGreaterThan(0);

    const stream = await facade(h).chat.completions.create({
      model: "sim",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: prompt("sluice") },
      ],
      max_tokens: 200,
      temperature: 0.5,
      tools: [{ type: "function", function: tool }],
      stream: true,
    });
    for await (const _ of stream);
    const sdk = (await h.sim.records.waitFor((r) => r.tag === "sdk", 10_000)).body as { messages: Array<{ content: Array<{ text: string }> }> };
    const ours = (await h.sim.records.waitFor((r) => r.tag === "sluice", 10_000)).body as typeof sdk;
    const untagged = (body: typeof sdk) => ({ ...body, messages: body.messages.map((m) => ({ ...m, content: m.content.map((c) => ({ text: c.text.replace(/tag=\w+/, "") })) })) });
    expect(untagged(ours)).toEqual(untagged(sdk));
  });
});

describe("Claude through InvokeModelWithResponseStream (bedrock.api: invoke)", () => {
  let invoke: Harness;
  let anthropic: Harness;
  beforeAll(async () => {
    invoke = await startHarness({
      routing: (sim) => {
        const { provider } = simulatedProvider(sim, "bedrock");
        const bedrock = { ...provider.bedrock!, api: "invoke" as const };
        return { providers: { main: { ...provider, bedrock, breaker: { failures: 10_000 } } }, models: { claude: { provider: "main", model: PROFILE } } };
      },
    });
    anthropic = await startHarness({ kind: "anthropic", models: { claude: "sim-1" } });
  });
  afterAll(async () => {
    await invoke.close();
    await anthropic.close();
  });

  it.each([
    ["text", "#sim tokens=6 seed=31"],
    ["text, reasoning and parallel tool calls", "#sim reasoning=4 tokens=3 tools=2 seed=32"],
    ["redacted reasoning", "#sim reasoning=2 redacted=1 tokens=2 seed=33"],
  ])("%s: the same answer and usage as the Anthropic API gives", async (_name, prompt) => {
    expect(await answerViaGrpc(invoke.url, "claude", prompt)).toEqual(await answerViaGrpc(anthropic.url, "claude", prompt));
  });

  it("sends Anthropic's Messages body with Bedrock's anthropic_version and no model, to the invoke path", async () => {
    await answerViaGrpc(invoke.url, "claude", "#sim tokens=2 tag=invoke-body");
    const record = await invoke.sim.records.waitFor((r) => r.tag === "invoke-body", 10_000);
    expect(record.format).toBe("bedrock-invoke");
    expect(record.model).toBe(PROFILE);
    const body = record.body as Record<string, unknown>;
    expect(body.anthropic_version).toBe("bedrock-2023-05-31");
    expect(body).not.toHaveProperty("model");
    expect(body).toHaveProperty("max_tokens");
  });

  it("maps an exception inside the stream as on Converse, after what was produced", async () => {
    const error = await answerViaGrpc(invoke.url, "claude", "#sim tokens=6 fail=error_event fail_at=3 inband=rate_limit").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(error)).toContain("mid-stream throttlingException");
  });
});

describe("embeddings on Bedrock (InvokeModel, signed)", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      kind: "bedrock",
      models: { titan: "amazon.titan-embed-text-v2:0?dims=16", cohere: "cohere.embed-english-v3?dims=24" },
    });
  });
  afterAll(() => h.close());

  const close = (actual: ArrayLike<number>, expected: readonly number[]) => {
    expect(actual.length).toBe(expected.length);
    for (let i = 0; i < expected.length; i++) expect(actual[i]).toBeCloseTo(expected[i]!, 6);
  };

  it("Titan: one text, its dimensions, and the token count Titan reports", async () => {
    const res = await facade(h).embeddings.create({ model: "titan", input: "How do I reset my password?", dimensions: 8, encoding_format: "float" });
    close(res.data[0]!.embedding, embedText("How do I reset my password?", 8));
    expect(res.usage.prompt_tokens).toBe(6);
  });

  it("Titan refuses several inputs in one request by name, before anything is sent", async () => {
    const error = await facade(h)
      .embeddings.create({ model: "titan", input: ["a b", "c d"], encoding_format: "float" })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect((error as Error).message).toContain("one input per request");
  });

  it("Cohere: a batch of texts in order, the gateway counting the tokens", async () => {
    const texts = ["Quarterly revenue grew", "How can I reset my password?"];
    const res = await facade(h).embeddings.create({ model: "cohere", input: texts, encoding_format: "float" });
    res.data.forEach((d, i) => close(d.embedding, embedText(texts[i]!, 24)));
    expect(res.usage.prompt_tokens).toBeGreaterThan(0);
  });
});

describe("a bedrock provider's configuration", () => {
  const config = (provider: Record<string, unknown>) => ({ providers: { aws: { kind: "bedrock", ...provider } }, models: { m: { provider: "aws", model: "amazon.nova-pro-v1:0" } } });

  it("implies the region's endpoint, and keeps the credentials it reads out of every printout", () => {
    const loaded = validateConfig(config({ bedrock: { region: "eu-west-3", credentials: { accessKeyIdEnv: "K", secretAccessKeyEnv: "S" } } }), { K: "AKIDEXAMPLE", S: "very/secret/value" });
    expect(loaded.ok).toBe(true);
    const provider = loaded.ok ? loaded.config.providers.get("aws") : undefined;
    expect(provider?.baseUrl).toBe("https://bedrock-runtime.eu-west-3.amazonaws.com");
    expect(provider?.bedrock?.api).toBe("converse");
    expect(JSON.stringify(provider)).not.toContain("very/secret/value");
  });

  it("names every unset credential variable and a missing region", () => {
    const unset = validateConfig(config({ bedrock: { region: "us-east-1", credentials: { accessKeyIdEnv: "K", secretAccessKeyEnv: "S" } } }), {});
    expect(unset.ok ? [] : unset.problems).toEqual(["providers.aws.bedrock.credentials.accessKeyIdEnv: environment variable K is not set", "providers.aws.bedrock.credentials.secretAccessKeyEnv: environment variable S is not set"]);
    const regionless = validateConfig(config({ baseUrl: "http://127.0.0.1:9" }), {});
    expect(regionless.ok ? [] : regionless.problems).toEqual(["providers.aws.bedrock: required for kind bedrock (its region)"]);
  });
});
