import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createSessionSealer, type McpSession } from "../src/mcp/session-id.js";
import { mcpSessionSecret, SESSION_SECRET_ENV } from "../src/mcp/session-secret.js";
import { capturedLogger } from "./helpers/captured-logger.js";

const session: McpSession = { keyId: "0123456789ab", protocolVersion: "2025-11-25", upstream: { files: "5b0f2d1c-0c7e-4f0e-9b0e-1c2d3e4f5a6b", web: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d" }, issuedAt: 10_000 };

describe("sealed MCP session ids", () => {
  it("opens on another sealer with the same secret (another replica), as visible ASCII", () => {
    const secret = randomBytes(32);
    const id = createSessionSealer(secret, 60_000, () => 10_000).seal(session);
    expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(id).not.toContain("5b0f2d1c");
    expect(createSessionSealer(Buffer.from(secret), 60_000, () => 20_000).open(id, session.keyId)).toEqual(session);
  });

  it("refuses another key, an altered id, another secret, and an id past its TTL", () => {
    let now = 10_000;
    const secret = randomBytes(32);
    const sealer = createSessionSealer(secret, 60_000, () => now);
    const id = sealer.seal(session);
    expect(sealer.open(id, "ffffffffffff")).toBeUndefined();
    const flipped = `${id.slice(0, 20)}${id[20] === "A" ? "B" : "A"}${id.slice(21)}`;
    expect(sealer.open(flipped, session.keyId)).toBeUndefined();
    expect(sealer.open(`${id}=`, session.keyId)).toBeUndefined();
    expect(sealer.open("x".repeat(10_000), session.keyId)).toBeUndefined();
    expect(createSessionSealer(randomBytes(32), 60_000, () => now).open(id, session.keyId)).toBeUndefined();
    now = 70_000;
    expect(sealer.open(id, session.keyId)).toEqual(session);
    now = 70_001;
    expect(sealer.open(id, session.keyId)).toBeUndefined();
  });

  it("takes the secret from the environment on every replica alike, else a per-process one with a warning", async () => {
    const { logger, lines } = capturedLogger();
    const env = { [SESSION_SECRET_ENV]: "a".repeat(40) };
    expect(await mcpSessionSecret({ env, log: logger })).toEqual(await mcpSessionSecret({ env, log: logger }));
    await expect(mcpSessionSecret({ env: { [SESSION_SECRET_ENV]: "short" }, log: logger })).rejects.toThrow(/at least 32/);
    const shared = new Map<string, string>();
    const store = { getOrSet: async (name: string, candidate: string) => shared.get(name) ?? (shared.set(name, candidate), candidate) };
    expect(await mcpSessionSecret({ env: {}, log: logger, shared: store })).toEqual(await mcpSessionSecret({ env: {}, log: logger, shared: store }));
    expect(lines).toEqual([]);
    const a = await mcpSessionSecret({ env: {}, log: logger });
    expect(a).not.toEqual(await mcpSessionSecret({ env: {}, log: logger }));
    expect(lines.map((l) => l.event)).toContain("mcp_session_secret_random");
    expect(JSON.stringify(lines)).not.toContain(a.toString("base64"));
  });

  it("costs microseconds per call (seal + open)", () => {
    const sealer = createSessionSealer(randomBytes(32), 60_000, () => 10_000);
    const id = sealer.seal(session);
    for (let i = 0; i < 2_000; i++) sealer.open(sealer.seal(session), session.keyId);
    const rounds = 20_000;
    let t = process.hrtime.bigint();
    for (let i = 0; i < rounds; i++) sealer.seal(session);
    const sealUs = Number(process.hrtime.bigint() - t) / 1_000 / rounds;
    t = process.hrtime.bigint();
    for (let i = 0; i < rounds; i++) sealer.open(id, session.keyId);
    const openUs = Number(process.hrtime.bigint() - t) / 1_000 / rounds;
    console.log(`mcp session id: seal ${sealUs.toFixed(2)} µs, open ${openUs.toFixed(2)} µs per call (${id.length} characters)`);
    // A bound far above the measurement, so a loaded CI machine passes and a regression to milliseconds does not.
    expect(sealUs + openUs).toBeLessThan(500);
  });
});
