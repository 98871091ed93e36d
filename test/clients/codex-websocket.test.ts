import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCodex } from "./helpers/codex.js";
import { type ClientGateway, nonce, startClientGateway, WIRES } from "./helpers/gateway.js";
import { evidence, jsonLines } from "./helpers/run.js";
import { named, runnable } from "./helpers/tier.js";

/**
 * Codex CLI over the Responses WebSocket mode: its transport with OpenAI's
 * own provider, turned on for a custom provider by `supports_websockets`
 * (codex-rs ModelProviderInfo; without it Codex sends `POST /v1/responses`).
 * The gateway's access log proves the turns went over the socket: every
 * response of the run has a `transport: "websocket"` line, and no
 * `POST /v1/responses` line exists for the run's key.
 */
const CODEX = runnable(["@openai/codex"]);

describe.each(WIRES)("Codex CLI over the Responses WebSocket mode, upstream wire %s", (wire) => {
  let g: ClientGateway;
  beforeAll(async () => {
    g = await startClientGateway(wire);
  });
  afterAll(() => g?.close());

  it.runIf(CODEX.ok)(named("runs a tool loop with every turn over one WebSocket, as the access log shows", CODEX), async () => {
    const echoed = nonce("echo");
    const prompt = ["Run the command, then tell me what it printed.", `#sim call=exec_command args=${JSON.stringify({ cmd: `echo ${echoed}` })}`].join("\n");
    const { ran, last } = await runCodex(g, g.key, prompt, { websocket: true });
    expect(ran.hung, evidence(ran)).toBe(false);
    expect(ran.code, evidence(ran)).toBe(0);
    const commands = jsonLines(ran.stdout).filter((e) => e.type === "item.completed" && (e.item as { type?: string })?.type === "command_execution");
    expect(commands.length, evidence(ran)).toBeGreaterThanOrEqual(1);
    expect(last, evidence(ran)).toContain(echoed);
    const access = g.h.logs().filter((l) => l.event === "access" && l.key === "client");
    const overSocket = access.filter((l) => l.transport === "websocket" && l.code === "ok");
    const posted = access.filter((l) => l.method === "POST" && l.route === "/v1/responses");
    expect(posted, evidence(ran)).toEqual([]);
    // The tool call and the answer after it: two model turns at least, each a response on the socket.
    expect(overSocket.filter((l) => l.generate !== false).length, evidence(ran)).toBeGreaterThanOrEqual(2);
    // After the tool ran, Codex sends only the new items and previous_response_id: continued from the socket's memory.
    expect(
      overSocket.some((l) => l.continued === "socket"),
      evidence(ran),
    ).toBe(true);
    // One upgrade served them all.
    const upgrades = access.filter((l) => l.websocket === true);
    expect(upgrades, evidence(ran)).toHaveLength(1);
    expect(upgrades[0]).toMatchObject({ method: "GET", route: "/v1/responses", code: "ok", responses: overSocket.length });
    expect(new Set(overSocket.map((l) => l.requestId)).size).toBe(overSocket.length);
    for (const l of overSocket) expect(l).toMatchObject({ edge: "responses", route: "/v1/responses", alias: "agent" });
    // A warm-up (`generate: false`) calls no model: every other response on the socket is one usage record.
    const generated = overSocket.filter((l) => l.generate !== false);
    expect(g.records(g.key).length, evidence(ran)).toBe(generated.length);
  });
});

describe("Codex CLI against a gateway with the WebSocket mode off", () => {
  let g: ClientGateway;
  beforeAll(async () => {
    g = await startClientGateway("openai", { responses: { websocket: false } });
  });
  afterAll(() => g?.close());

  it.runIf(CODEX.ok)(named("falls back to POST /v1/responses on the upgrade's 426 and finishes the task", CODEX), async () => {
    const echoed = nonce("echo");
    const prompt = ["Run the command, then tell me what it printed.", `#sim call=exec_command args=${JSON.stringify({ cmd: `echo ${echoed}` })}`].join("\n");
    const { ran, last } = await runCodex(g, g.key, prompt, { websocket: true });
    expect(ran.hung, evidence(ran)).toBe(false);
    expect(ran.code, evidence(ran)).toBe(0);
    expect(last, evidence(ran)).toContain(echoed);
    const access = g.h.logs().filter((l) => l.event === "access" && l.route === "/v1/responses");
    expect(
      access.filter((l) => l.method === "GET").every((l) => l.status === 426),
      evidence(ran),
    ).toBe(true);
    expect(
      access.some((l) => l.method === "GET" && l.status === 426),
      evidence(ran),
    ).toBe(true);
    expect(access.filter((l) => l.transport === "websocket")).toEqual([]);
    expect(access.filter((l) => l.method === "POST" && l.code === "ok").length, evidence(ran)).toBeGreaterThanOrEqual(2);
  });
});
