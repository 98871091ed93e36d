import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ClientGateway, nonce, startClientGateway, WIRES } from "./helpers/gateway.js";
import { evidence, type Ran, runClient, scratch } from "./helpers/run.js";
import { bin, GEMINI_EDGE, named, runnable } from "./helpers/tier.js";
import { LOOKUP_DESCRIPTION, toolTask } from "./helpers/tool-task.js";

/**
 * Gemini CLI (`gemini -p`, @google/gemini-cli) through the Gemini edge
 * (issue 44 §3b), on every upstream wire: an API-key login pointed at the
 * gateway, its shell tool run with a nonce.
 */
const installed = runnable(["@google/gemini-cli"]);
const NO_EDGE = { ok: false, reason: "this branch serves no Gemini edge (src/edges/gemini)" };
const GEMINI = installed.ok && !GEMINI_EDGE ? NO_EDGE : installed;
/** The SDK Gemini CLI is built on, on its own (pinned to the gateway's own 1.x, which runs on Node 20). */
const genaiInstalled = runnable(["@google/genai"]);
const GENAI = genaiInstalled.ok && !GEMINI_EDGE ? NO_EDGE : genaiInstalled;

async function gemini(g: ClientGateway, key: string, prompt: string): Promise<Ran> {
  const s = await scratch();
  await mkdir(join(s.home, ".gemini"), { recursive: true });
  await writeFile(join(s.home, ".gemini", "settings.json"), JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } }, privacy: { usageStatisticsEnabled: false } }));
  return runClient(bin("gemini"), ["-p", prompt, "-m", "agent", "--approval-mode", "yolo", "--output-format", "json"], {
    cwd: s.work,
    env: { ...s.env, GOOGLE_GEMINI_BASE_URL: g.url, GEMINI_API_KEY: key, GEMINI_CLI_TRUST_WORKSPACE: "true" },
  });
}

describe.each(WIRES)("Gemini CLI through the Gemini edge, upstream wire %s", (wire) => {
  let g: ClientGateway;
  beforeAll(async () => {
    g = await startClientGateway(wire);
  });
  afterAll(() => g?.close());

  it.runIf(GEMINI.ok)(named("runs its shell tool through the gateway and its answer quotes the output", GEMINI), async () => {
    const echoed = nonce("echo");
    const prompt = ["Run the command and tell me what it printed.", `#sim call=run_shell_command args=${JSON.stringify({ command: `echo ${echoed}` })}`].join("\n");
    const ran = await gemini(g, g.key, prompt);
    expect(ran.hung, evidence(ran)).toBe(false);
    expect(ran.code, evidence(ran)).toBe(0);
    const out = JSON.parse(ran.stdout.slice(ran.stdout.indexOf("{"))) as { response?: string };
    expect(out.response, evidence(ran)).toContain(echoed);
    const records = g.records(g.key);
    expect(records.length, evidence(ran)).toBeGreaterThanOrEqual(2);
    expect(new Set(records.map((r) => r.requestId)).size).toBe(records.length);
    for (const r of records) expect(r).toMatchObject({ alias: "agent", outcome: "completed" });
  });

  it.runIf(GENAI.ok)(named("@google/genai: generateContentStream calls the function, and the next turn quotes its result", GENAI), async () => {
    const { GoogleGenAI } = await import("@google/genai");
    type Content = import("@google/genai").Content;
    const ai = new GoogleGenAI({ apiKey: g.key, httpOptions: { baseUrl: g.url } });
    const task = toolTask();
    const config = { tools: [{ functionDeclarations: [{ name: "lookup", description: LOOKUP_DESCRIPTION, parametersJsonSchema: { type: "object", properties: { code: { type: "string" } }, required: ["code"] } }] }] };
    const contents: Content[] = [{ role: "user", parts: [{ text: task.prompt }] }];
    const before = g.records(g.key).length;
    const modelParts: NonNullable<Content["parts"]> = [];
    for await (const chunk of await ai.models.generateContentStream({ model: "agent", contents, config })) modelParts.push(...(chunk.candidates?.[0]?.content?.parts ?? []));
    const call = modelParts.find((p) => p.functionCall)?.functionCall;
    expect(call?.name).toBe("lookup");
    contents.push({ role: "model", parts: modelParts }, { role: "user", parts: [{ functionResponse: { ...(call?.id ? { id: call.id } : {}), name: "lookup", response: { output: task.result } } }] });
    let text = "";
    for await (const chunk of await ai.models.generateContentStream({ model: "agent", contents, config })) text += chunk.text ?? "";
    expect(text).toContain(task.expected);
    await g.events.until(() => g.records(g.key).length >= before + 2).catch(() => undefined);
    expect(g.records(g.key).slice(before)).toHaveLength(2);
  });

  it.runIf(GEMINI.ok)(named("shows a 402 budget refusal mid-session as an error and exits non-zero, without hanging", GEMINI), async () => {
    const tight = g.tightKeys[0]!;
    const prompt = ["Run the command.", `#sim call=run_shell_command args=${JSON.stringify({ command: `echo ${nonce("spent")}` })}`].join("\n");
    const ran = await gemini(g, tight, prompt);
    expect(ran.hung, evidence(ran)).toBe(false);
    expect(ran.code, evidence(ran)).not.toBe(0);
    expect(`${ran.stdout}\n${ran.stderr}`, evidence(ran)).toMatch(/402|budget|quota/i);
    // The first request was admitted and recorded; the refusal came at the second.
    await g.events.until(() => g.records(tight).length >= 1).catch(() => undefined);
    expect(g.records(tight), evidence(ran)).toHaveLength(1);
  });
});
