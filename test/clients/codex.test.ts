import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCodex } from "./helpers/codex.js";
import { type ClientGateway, nonce, startClientGateway, WIRES } from "./helpers/gateway.js";
import { evidence, jsonLines } from "./helpers/run.js";
import { named, runnable } from "./helpers/tier.js";

/**
 * Codex CLI (`codex exec`, @openai/codex: a native binary in its platform
 * package) through the Responses edge, on every upstream wire: a custom
 * model provider pointed at the gateway, its shell tool (`exec_command`)
 * run with a nonce, and a file created through apply_patch the way Codex
 * runs it from the shell.
 */
const CODEX = runnable(["@openai/codex"]);

describe.each(WIRES)("Codex CLI through the Responses edge, upstream wire %s", (wire) => {
  let g: ClientGateway;
  beforeAll(async () => {
    g = await startClientGateway(wire);
  });
  afterAll(() => g?.close());

  it.runIf(CODEX.ok)(named("runs exec_command and apply_patch through the gateway; the answer quotes the output and the file exists", CODEX), async () => {
    const echoed = nonce("echo");
    const patched = nonce("patch");
    const patch = ["apply_patch <<'EOF'", "*** Begin Patch", "*** Add File: patched.txt", `+${patched}`, "*** End Patch", "EOF"].join("\n");
    const prompt = [
      "Run the command, then create the file, then tell me what the command printed.",
      `#sim call=exec_command args=${JSON.stringify({ cmd: `echo ${echoed}` })}`,
      `#sim call=exec_command args=${JSON.stringify({ cmd: patch })}`,
    ].join("\n");
    const { ran, work, last } = await runCodex(g, g.key, prompt);
    expect(ran.hung, evidence(ran)).toBe(false);
    expect(ran.code, evidence(ran)).toBe(0);
    const events = jsonLines(ran.stdout);
    const commands = events.filter((e) => e.type === "item.completed" && (e.item as { type?: string })?.type === "command_execution");
    expect(commands.length, evidence(ran)).toBeGreaterThanOrEqual(1);
    // What the user sees: the last message carries what the command printed.
    expect(last, evidence(ran)).toContain(echoed);
    // The file the patch created, read by the test.
    expect(await readFile(join(work, "patched.txt"), "utf8"), evidence(ran)).toContain(patched);
    const records = g.records(g.key);
    expect(records.length, evidence(ran)).toBeGreaterThanOrEqual(3);
    expect(new Set(records.map((r) => r.requestId)).size).toBe(records.length);
    for (const r of records) expect(r).toMatchObject({ alias: "agent", outcome: "completed" });
  });

  it.runIf(CODEX.ok)(named("shows a 402 budget refusal mid-session as an error and exits non-zero, without hanging", CODEX), async () => {
    const tight = g.tightKeys[0]!;
    const prompt = ["Run the command.", `#sim call=exec_command args=${JSON.stringify({ cmd: `echo ${nonce("spent")}` })}`].join("\n");
    const { ran } = await runCodex(g, tight, prompt);
    expect(ran.hung, evidence(ran)).toBe(false);
    expect(ran.code, evidence(ran)).not.toBe(0);
    expect(`${ran.stdout}\n${ran.stderr}`, evidence(ran)).toMatch(/402|budget|quota/i);
    // The first request was admitted and recorded; the refusal came at the second.
    await g.events.until(() => g.records(tight).length >= 1).catch(() => undefined);
    expect(g.records(tight), evidence(ran)).toHaveLength(1);
  });
});
