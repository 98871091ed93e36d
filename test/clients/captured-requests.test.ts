import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ClientGateway, startClientGateway, WIRES } from "./helpers/gateway.js";

/**
 * The first request each coding agent sent, captured from the released
 * client (test/clients/fixtures: its path, its non-secret headers, its
 * body; scratch paths and device ids replaced), replayed against the
 * gateway on every upstream wire. Nothing in it may be refused (issue 44,
 * "no field in the captured requests is refused"), and the stream must end
 * as the client's API ends one. Needs no client installed: it runs on
 * every Node and says which field a change starts refusing.
 */
interface Captured {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: Record<string, unknown>;
}

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), "utf8")) as Captured;

const CLIENTS = [
  { name: "Claude Code 2.1.328", file: "claude-code-2.1.328", auth: (key: string) => ({ "x-api-key": key }), ends: /event: message_stop/ },
  { name: "Codex CLI 0.169.0", file: "codex-0.169.0", auth: (key: string) => ({ authorization: `Bearer ${key}` }), ends: /event: response\.completed/ },
  { name: "Gemini CLI 0.61.0", file: "gemini-cli-0.61.0", auth: (key: string) => ({ "x-goog-api-key": key }), ends: /"finishReason"/ },
];

describe.each(WIRES)("captured first requests of the coding agents, upstream wire %s", (wire) => {
  let g: ClientGateway;
  beforeAll(async () => {
    g = await startClientGateway(wire);
  });
  afterAll(() => g?.close());

  for (const client of CLIENTS) {
    it(`${client.name}: accepted as sent, streamed to its end, and recorded`, async () => {
      const captured = fixture(client.file);
      const before = g.records(g.key).length;
      const res = await fetch(`${g.url}${captured.url}`, {
        method: "POST",
        headers: { ...captured.headers, "content-type": "application/json", "accept-encoding": "identity", ...client.auth(g.key) },
        body: JSON.stringify(captured.body),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      expect(res.status, text.slice(0, 1_000)).toBe(200);
      expect(text).toMatch(client.ends);
      expect(text).not.toMatch(/event: error|"type":"error"|response\.failed/);
      await g.events.until(() => g.records(g.key).length > before).catch(() => undefined);
      expect(g.records(g.key).slice(before)).toHaveLength(1);
    });
  }
});
