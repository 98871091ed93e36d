import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ClientGateway, nonce, startClientGateway, WIRES } from "./helpers/gateway.js";
import { evidence, jsonLines, type Ran, runClient, scratch, writeFileIn } from "./helpers/run.js";
import { claudeBinary, named, runnable } from "./helpers/tier.js";

/**
 * Claude Code (`claude -p`, @anthropic-ai/claude-code) through the
 * Messages edge, on every upstream wire: the simulator has it run Bash
 * (echo of a nonce), then Read a file the test wrote, and its final answer
 * quotes both. Claude Code's npm package declares Node >= 22 for its
 * wrapper, but the tier runs the native binary it ships in its platform
 * package, which needs no Node: it runs on every Node the suite runs on.
 */
const CLAUDE = runnable([`@anthropic-ai/claude-code-${process.platform}-${process.arch}`]);

async function claude(g: ClientGateway, key: string, prompt: string, model = "agent"): Promise<{ ran: Ran; work: string }> {
  const s = await scratch();
  const ran = await runClient(claudeBinary(), ["-p", prompt, "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash", "Read", "--max-turns", "6"], {
    cwd: s.work,
    env: {
      ...s.env,
      ANTHROPIC_BASE_URL: g.url,
      ANTHROPIC_API_KEY: key,
      ANTHROPIC_MODEL: model,
      ANTHROPIC_SMALL_FAST_MODEL: model,
      ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
      DISABLE_AUTOUPDATER: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    },
  });
  return { ran, work: s.work };
}

describe.each(WIRES)("Claude Code through the Messages edge, upstream wire %s", (wire) => {
  let g: ClientGateway;
  beforeAll(async () => {
    g = await startClientGateway(wire);
  });
  afterAll(() => g?.close());

  it.runIf(CLAUDE.ok)(named("runs Bash then Read through the gateway and its answer quotes both outputs", CLAUDE), async () => {
    const echoed = nonce("echo");
    const written = nonce("file");
    const s = await scratch();
    const file = await writeFileIn(s.work, "note.txt", `${written}\n`);
    const prompt = [
      "Run the command, then read the file, then tell me what both said.",
      `#sim call=Bash args=${JSON.stringify({ command: `echo ${echoed}`, description: "echo a nonce" })}`,
      `#sim call=Read args=${JSON.stringify({ file_path: file })}`,
    ].join("\n");
    const { ran } = await claude(g, g.key, prompt);
    const events = jsonLines(ran.stdout);
    const result = events.find((e) => e.type === "result");
    expect(ran.hung, evidence(ran)).toBe(false);
    expect(result, evidence(ran)).toMatchObject({ subtype: "success", is_error: false });
    expect(ran.code, evidence(ran)).toBe(0);
    // What the user sees: the answer carries what the tools printed and read.
    expect(String(result!.result), evidence(ran)).toContain(echoed);
    expect(String(result!.result), evidence(ran)).toContain(written);
    // Both tools ran (their results went back to the model as tool_result blocks).
    const toolUses = events.flatMap((e) => (e.type === "assistant" ? ((e.message as { content: Array<{ type: string; name?: string }> }).content ?? []) : [])).filter((b) => b.type === "tool_use");
    expect(toolUses.map((b) => b.name)).toEqual(expect.arrayContaining(["Bash", "Read"]));
    // What the gateway recorded: one usage record per model request, each with tokens counted.
    const records = g.records(g.key);
    expect(records.length, evidence(ran)).toBeGreaterThanOrEqual(3);
    expect(new Set(records.map((r) => r.requestId)).size).toBe(records.length);
    for (const r of records) expect(r).toMatchObject({ alias: "agent", outcome: "completed" });
    expect(records.every((r) => r.outputTokens > 0)).toBe(true);
  });

  it.runIf(CLAUDE.ok)(named("with thinking: signed thinking round-trips across the tool loop, and marked prompts are read from the cache", CLAUDE), async () => {
    const echoed = nonce("echo");
    const prompt = ["Run the command and tell me what it printed.", `#sim call=Bash args=${JSON.stringify({ command: `echo ${echoed}`, description: "echo a nonce" })}`].join("\n");
    const before = g.records(g.key).length;
    const { ran } = await claude(g, g.key, prompt, "agent-thinking");
    const result = jsonLines(ran.stdout).find((e) => e.type === "result");
    expect(result, evidence(ran)).toMatchObject({ subtype: "success", is_error: false });
    expect(String(result!.result), evidence(ran)).toContain(echoed);
    const records = g.records(g.key).slice(before);
    expect(records.length, evidence(ran)).toBeGreaterThanOrEqual(2);
    if (wire === "anthropic") {
      // The simulator refuses a replayed turn whose thinking signature is altered (Claude Code sends adaptive
      // thinking, under which a turn may come without thinking): the second request succeeding is the round trip;
      // the block itself reached Claude Code.
      const blocks = jsonLines(ran.stdout).flatMap((e) => (e.type === "assistant" ? ((e.message as { content?: Array<{ type: string }> }).content ?? []) : []));
      expect(
        blocks.map((b) => b.type),
        evidence(ran),
      ).toContain("thinking");
    }
    // Claude Code marks its system prompt and last message with cache_control on every request: on an
    // Anthropic target the marks are kept, so a later request reads the prefix an earlier one wrote.
    if (wire === "anthropic")
      expect(
        records.slice(1).some((r) => r.cachedInputTokens > 0),
        JSON.stringify(records),
      ).toBe(true);
  });

  it.runIf(CLAUDE.ok)(named("shows a 402 budget refusal mid-session as an error and exits non-zero, without hanging", CLAUDE), async () => {
    const tight = g.tightKeys[0]!;
    const prompt = [`Run the command.`, `#sim call=Bash args=${JSON.stringify({ command: `echo ${nonce("spent")}`, description: "echo" })}`].join("\n");
    const { ran } = await claude(g, tight, prompt);
    expect(ran.hung, evidence(ran)).toBe(false);
    expect(ran.code, evidence(ran)).not.toBe(0);
    expect(`${ran.stdout}\n${ran.stderr}`, evidence(ran)).toMatch(/402|budget/i);
    // The first request was admitted and recorded; the refusal came at the second.
    await g.events.until(() => g.records(tight).length >= 1).catch(() => undefined);
    expect(g.records(tight), evidence(ran)).toHaveLength(1);
  });
});
