import { execFile } from "node:child_process";
import { rename, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import { Code } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import type { StreamChatResponse } from "../gen/sluice/v1/chat_service_pb.js";
import type { StreamStart } from "../gen/sluice/v1/delta_pb.js";
import type { ConfigInput } from "../src/config/schema.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { simulatedText } from "../src/simulator/text.js";
import { chatClient, textOf, transports, userRequest } from "./helpers/clients.js";
import { type GatewayProcess, runtimeStats, startGatewayProcess } from "./helpers/gateway-process.js";
import { type Started, startProcess } from "./helpers/processes.js";
import { rpcUntilError } from "./helpers/until-error.js";

const run = promisify(execFile);

let simA: Simulator;
let simB: Simulator;
beforeAll(async () => {
  [simA, simB] = await Promise.all([startSimulator(), startSimulator()]);
});
afterAll(() => Promise.all([simA.close(), simB.close()]));

/** Gateways this file started; one a failed test left running is ended here, by its pid. */
const running: Started[] = [];
afterEach(() => {
  for (const gw of running.splice(0)) if (gw.child.exitCode === null && gw.child.signalCode === null) gw.child.kill("SIGKILL");
});

async function gateway(config: ConfigInput): Promise<GatewayProcess> {
  const gw = await startGatewayProcess(config);
  running.push(gw);
  return gw;
}

/** Consumes one stream; returns what arrived and how it ended. */
function consume(gw: GatewayProcess, alias: string, text: string) {
  return rpcUntilError(chatClient(transports(gw.url)["grpc (connect-node, h2)"]!).streamChat(userRequest(alias, text)));
}

function startOf(received: readonly StreamChatResponse[]): StreamStart | undefined {
  const first = received[0]?.delta;
  return first?.case === "start" ? first.value : undefined;
}

const finished = (received: readonly StreamChatResponse[]) => received.at(-1)?.delta.case === "finish";

/** Rewrites the gateway's file and sends SIGHUP; resolves with the reload's log line (the `n`th of `event`). */
async function reload(gw: GatewayProcess, next: ConfigInput | string, event = "config.reloaded", n = 1): Promise<Record<string, unknown>> {
  await writeFile(gw.configFile, typeof next === "string" ? next : stringify(next));
  gw.child.kill("SIGHUP");
  return gw.waitForLine(
    (l) =>
      l.event === event &&
      gw
        .lines()
        .filter((x) => x.event === event)
        .indexOf(l) ===
        n - 1,
  );
}

describe("configuration reload on SIGHUP", () => {
  it("a good file adds an alias and moves another for new requests, while a stream in flight finishes on what it started with", async () => {
    const before: ConfigInput = {
      server: { debugEndpoints: true },
      providers: { main: { kind: "openai", baseUrl: simA.openAiBaseUrl } },
      models: { a: { provider: "main", model: "sim-old" } },
    };
    const gw = await gateway(before);
    // A stream on `a` holds after 3 of its 8 tokens until the test releases it: in flight across the reload.
    const held = consume(gw, "a", "#sim tokens=8 hold_at=3 tag=reload-held");
    await simA.records.waitFor((r) => r.tag === "reload-held" && r.heldAt !== undefined, 30_000);

    const line = await reload(gw, {
      server: { debugEndpoints: true },
      providers: { main: { kind: "openai", baseUrl: simB.openAiBaseUrl } },
      models: { a: { provider: "main", model: "sim-new" }, b: { provider: "main", model: "sim-b" } },
    });
    expect(line).toMatchObject({
      trigger: "SIGHUP",
      source: gw.configFile,
      models: { added: ["b"], removed: [], changed: ["a"] },
      providers: { added: [], removed: [], changed: ["main"] },
      reloads: { ok: 1, failed: 0 },
    });

    // The new alias works, and a new request on `a` goes to the new base URL and model.
    const b = await consume(gw, "b", "#sim tokens=3 tag=reload-b");
    expect(b.error).toBeUndefined();
    expect(startOf(b.received)).toMatchObject({ provider: "main", model: "sim-b" });
    expect(textOf(b.received)).toBe(simulatedText(1, 3));
    const a = await consume(gw, "a", "#sim tokens=3 tag=reload-a-new");
    expect(a.error).toBeUndefined();
    expect(startOf(a.received)?.model).toBe("sim-new");
    expect(
      simB.records
        .all()
        .filter((r) => r.tag?.startsWith("reload-"))
        .map((r) => [r.tag, r.model]),
    ).toEqual([
      ["reload-b", "sim-b"],
      ["reload-a-new", "sim-new"],
    ]);
    expect(
      simA.records
        .all()
        .filter((r) => r.tag?.startsWith("reload-"))
        .map((r) => r.tag),
    ).toEqual(["reload-held"]);

    // The held stream, released, completes whole on the old base URL and model.
    simA.records.release("reload-held");
    const old = await held;
    expect(old.error).toBeUndefined();
    expect(startOf(old.received)).toMatchObject({ provider: "main", model: "sim-old" });
    expect(textOf(old.received)).toBe(simulatedText(1, 8));
    expect(finished(old.received)).toBe(true);
    const record = await simA.records.waitFor((r) => r.tag === "reload-held" && r.endedAt !== undefined, 30_000);
    expect(record).toMatchObject({ outcome: "completed", tokensWritten: 8 });

    expect((await runtimeStats(gw.url)).configReloads).toEqual({ ok: 1, failed: 0 });
    expect(await gw.stop()).toBe(0);
  });

  it("a bad file keeps the running configuration, logs every problem with its path and line as check-config does, and counts a failure", async () => {
    const good: ConfigInput = {
      server: { debugEndpoints: true },
      providers: { main: { kind: "openai", baseUrl: simA.openAiBaseUrl } },
      models: { a: { provider: "main", model: "sim-kept" } },
    };
    const gw = await gateway(good);
    const bad = [
      "server: { debugEndpoints: true }", // 1
      "providers:", // 2
      `  main: { kind: openai, baseUrl: "${simB.openAiBaseUrl}" }`, // 3
      "  broken:", // 4
      "    kind: openai", // 5
      '    baseUrl: "not a url"', // 6
      "    apiKeyEnv: SLUICE_RELOAD_TEST_UNSET_KEY", // 7
      "models:", // 8
      "  a: { provider: main, model: sim-never }", // 9
      "  c: { provider: nowhere, model: x }", // 10
      "",
    ].join("\n");
    const line = await reload(gw, bad, "config.reload_failed");
    expect(line.problems).toEqual([
      "providers.broken.baseUrl: Invalid URL (line 6)",
      "providers.broken.apiKeyEnv: environment variable SLUICE_RELOAD_TEST_UNSET_KEY is not set (line 7)",
      'models.c.provider: unknown provider "nowhere" (line 10)',
    ]);
    expect(line).toMatchObject({ trigger: "SIGHUP", source: gw.configFile, reloads: { ok: 0, failed: 1 } });
    expect(line.level).toBe(50); // error
    // The same lines check-config prints for the same file.
    const check = await run(process.execPath, ["dist/src/main.js", "check-config", gw.configFile], { env: { PATH: process.env.PATH } }).catch((e: { stdout: string }) => e);
    expect(
      check.stdout
        .split("\n")
        .slice(1, -1)
        .map((l) => l.trim()),
    ).toEqual(line.problems);

    // Still serving the old configuration: the old alias, target and model, and nothing of the bad file.
    const a = await consume(gw, "a", "#sim tokens=2 tag=bad-kept");
    expect(a.error).toBeUndefined();
    expect(startOf(a.received)?.model).toBe("sim-kept");
    expect(simA.records.all().some((r) => r.tag === "bad-kept")).toBe(true);
    expect(((await (await fetch(`${gw.url}/v1/models`)).json()) as { data: Array<{ id: string }> }).data.map((m) => m.id)).toEqual(["a"]);
    expect((await runtimeStats(gw.url)).configReloads).toEqual({ ok: 0, failed: 1 });

    // Fixed, the next SIGHUP applies it.
    const fixed = await reload(gw, { ...good, models: { ...good.models, c: { provider: "main", model: "sim-c" } } });
    expect(fixed).toMatchObject({ models: { added: ["c"] }, reloads: { ok: 1, failed: 1 } });
    expect((await consume(gw, "c", "#sim tokens=2")).error).toBeUndefined();
    // Operators see the same counts as a metric.
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toMatch(/^sluice_config_reloads_total\{result="failed"\} 1$/m);
    expect(metrics).toMatch(/^sluice_config_reloads_total\{result="reloaded"\} 1$/m);
    expect(await gw.stop()).toBe(0);
  });

  it("a raised maxConcurrent applies to new requests while a slot taken before it releases into the same count", async () => {
    // maxWaiting 0: a request beyond the limit is shed at once, so the
    // limit in force is observable without waiting on a queue.
    const narrow = (maxConcurrent: number): ConfigInput => ({
      providers: { narrow: { kind: "openai", baseUrl: simA.openAiBaseUrl, maxConcurrent, queue: { maxWaiting: 0 } } },
      models: { n: { provider: "narrow", model: "sim-1" } },
    });
    const gw = await gateway(narrow(1));
    /** A stream admitted upstream and held there; wrapped, so awaiting this does not await the stream. */
    const admittedAndHeld = async (tag: string) => {
      const stream = consume(gw, "n", `#sim tokens=3 hold_at=1 tag=${tag}`);
      await simA.records.waitFor((r) => r.tag === tag && r.heldAt !== undefined, 30_000);
      return { stream, tag };
    };
    const shed = async (limit: number) => {
      const { error } = await consume(gw, "n", "#sim tokens=1");
      expect(error?.code).toBe(Code.ResourceExhausted);
      expect(error?.rawMessage).toContain(`at its limit of ${limit} streams`);
    };
    const completes = async ({ stream, tag }: { stream: ReturnType<typeof consume>; tag: string }) => {
      simA.records.release(tag);
      const { received, error } = await stream;
      expect(error).toBeUndefined();
      expect(finished(received)).toBe(true);
    };

    const x = await admittedAndHeld("slot-x");
    await shed(1);
    const line = await reload(gw, narrow(2));
    expect(line).toMatchObject({ providers: { changed: ["narrow"] } });
    // x still holds one of the two slots: one more is admitted, the next is shed.
    const y = await admittedAndHeld("slot-y");
    await shed(2);
    // x ends on the gate it came from: its slot frees one of the two.
    await completes(x);
    const w = await admittedAndHeld("slot-w");
    await shed(2);
    await completes(y);
    await completes(w);
    // Every slot came back, and no more than that: exactly two fit again.
    const p = await admittedAndHeld("slot-p");
    const q = await admittedAndHeld("slot-q");
    await shed(2);
    await completes(p);
    await completes(q);
    expect(await gw.stop()).toBe(0);
  });

  it("settings the listener took at start are kept and named in a warning; the rest of the file applies", async () => {
    const before: ConfigInput = {
      providers: { main: { kind: "openai", baseUrl: simA.openAiBaseUrl } },
      models: { a: { provider: "main", model: "sim-1" } },
    };
    const gw = await gateway(before);
    const bigEvents = "#sim tokens=2 token_chars=2000";
    expect((await consume(gw, "a", bigEvents)).error).toBeUndefined();

    const line = await reload(gw, {
      server: { port: 18_080, idleTimeoutMs: 120_000 },
      limits: { maxRequestBytes: 2048, maxEventBytes: 1024 },
      providers: before.providers,
      models: { ...before.models, added: { provider: "main", model: "sim-added" } },
    });
    const warning = gw.lines().find((l) => l.event === "config.restart_required");
    expect(warning).toMatchObject({ level: 40, fields: ["server.port", "server.idleTimeoutMs", "limits.maxRequestBytes"] });
    expect(warning!.message).toMatch(/applies at the next start/);
    expect(line).toMatchObject({ models: { added: ["added"] } });

    // Still on the port it started on, still taking bodies up to the old 4 MiB limit.
    const large = await consume(gw, "added", `#sim tokens=2\n${"x".repeat(4000)}`);
    expect(large.error).toBeUndefined();
    expect(startOf(large.received)?.model).toBe("sim-added");
    // limits.maxEventBytes is read per request: the new, smaller one applies.
    const { error } = await consume(gw, "a", bigEvents);
    expect(error?.rawMessage).toMatch(/maximum event size of 1024 bytes \(limits\.maxEventBytes\)/);
    expect(await gw.stop()).toBe(0);
  });

  it("on the built-in default configuration SIGHUP has nothing to read: it says so and the gateway goes on serving", async () => {
    const gw = await startProcess(["dist/src/main.js", "--port", "0"], (l) => l.event === "server.listening");
    running.push(gw);
    gw.child.kill("SIGHUP");
    const line = await gw.waitForLine((l) => l.event === "config.reload_skipped");
    expect(line.reason).toMatch(/built-in default/);
    expect((await fetch(`${gw.line.url as string}/readyz`)).status).toBe(200);
    expect(await gw.stop()).toBe(0);
  });
});

describe("configuration reload on a file change (server.watchConfig)", () => {
  it("reloads when the file is replaced, as an editor or a ConfigMap update does", async () => {
    const before: ConfigInput = {
      server: { watchConfig: true },
      providers: { main: { kind: "openai", baseUrl: simA.openAiBaseUrl } },
      models: { a: { provider: "main", model: "sim-1" } },
    };
    const gw = await gateway(before);
    expect(gw.lines().some((l) => l.event === "config.watching" && l.source === gw.configFile)).toBe(true);
    // Written beside it, then renamed over it: the file is replaced, not modified in place.
    const next = `${gw.configFile}.new`;
    await writeFile(next, stringify({ ...before, models: { ...before.models, watched: { provider: "main", model: "sim-watched" } } }));
    await rename(next, gw.configFile);
    const line = await gw.waitForLine((l) => l.event === "config.reloaded");
    expect(line).toMatchObject({ trigger: "watch", models: { added: ["watched"] } });
    const { received, error } = await consume(gw, "watched", "#sim tokens=2");
    expect(error).toBeUndefined();
    expect(startOf(received)?.model).toBe("sim-watched");
    expect(await gw.stop()).toBe(0);
  });
});
