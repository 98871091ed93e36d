import { GoogleGenAI } from "@google/genai";
import { gaxios } from "google-auth-library";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.js";
import { writeServiceAccount } from "./helpers/simulated-vertex.js";

/**
 * The official Gen AI SDK in Vertex mode, pointed at the simulator with a
 * service-account key of its own, and the gateway, asked the same thing,
 * send the same Gemini body to the same kind of path.
 */
const PROJECT = "sdk-project-7";
const LOCATION = "us-central1";

let h: Harness;
let keyFile = "";
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => {
      keyFile = writeServiceAccount(sim).path;
      return {
        providers: { vx: { kind: "vertex", baseUrl: `${sim.origin}/v1/projects/${PROJECT}/locations/${LOCATION}`, vertex: { project: PROJECT, location: LOCATION, keyFile } } },
        models: { flash: { provider: "vx", model: "gemini-2.5-flash" } },
      };
    },
  });
}, 60_000);
afterAll(async () => {
  await h.close();
});

/** google-auth-library posts to Google's token URL whatever the key says; the SDK's `clientOptions.transporter` sends it to the simulator's. */
function toSimulatorTokenUrl(): InstanceType<typeof gaxios.Gaxios> {
  const transporter = new gaxios.Gaxios();
  transporter.interceptors.request.add({
    resolved: async (options) => {
      if (String(options.url) === "https://oauth2.googleapis.com/token") options.url = new URL(h.sim.googleTokenUrl);
      return options;
    },
  });
  return transporter;
}

async function sentFor(tag: string): Promise<{ path: string; body: Record<string, unknown> }> {
  const record = await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 30_000);
  return { path: record.path!, body: JSON.parse(JSON.stringify(record.body).replaceAll(tag, "TAG")) as Record<string, unknown> };
}

describe("@google/genai in Vertex mode and the gateway", () => {
  it("send the same body, to the same model path under the project and location", async () => {
    const sdk = new GoogleGenAI({
      vertexai: true,
      project: PROJECT,
      location: LOCATION,
      googleAuthOptions: { keyFile, scopes: ["https://www.googleapis.com/auth/cloud-platform"], clientOptions: { transporter: toSimulatorTokenUrl() } },
      httpOptions: { baseUrl: h.sim.origin, apiVersion: "v1" },
    });
    let text = "";
    const stream = await sdk.models.generateContentStream({
      model: "gemini-2.5-flash",
      contents: [{ role: "user", parts: [{ text: "#sim tag=sdk-body tokens=4" }] }],
      config: { systemInstruction: { parts: [{ text: "Be brief." }] }, maxOutputTokens: 64, temperature: 0.5 },
    });
    for await (const chunk of stream) text += chunk.text ?? "";
    expect(text).not.toBe("");

    const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const answer = await openai.chat.completions.create({
      model: "flash",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "#sim tag=gw-body tokens=4" },
      ],
      max_tokens: 64,
      temperature: 0.5,
    });
    expect(answer.choices[0]?.message.content).toBe(text);

    const fromSdk = await sentFor("sdk-body");
    const fromGateway = await sentFor("gw-body");
    expect(fromSdk.path).toBe(`/v1/projects/${PROJECT}/locations/${LOCATION}/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse`);
    expect(fromGateway.path).toBe(fromSdk.path);
    expect(fromGateway.body).toEqual(fromSdk.body);
  });
});
