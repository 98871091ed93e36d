import { writeFile } from "node:fs/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { sha256Hex } from "../src/config/key-hash.js";
import type { ConfigInput } from "../src/config/schema.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { chatClient, collect, transports, userRequest } from "./helpers/clients.js";
import { type GatewayProcess, startGatewayProcess } from "./helpers/gateway-process.js";

const OLD_KEY = "sk-test-reload-old-0a1b2c3d4e5f6071";
const NEW_KEY = "sk-test-reload-new-8192a3b4c5d6e7f8";

let sim: Simulator;
let gw: GatewayProcess;
const config = (keys: NonNullable<ConfigInput["auth"]>["keys"]): ConfigInput => ({
  providers: { main: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
  models: { a: { provider: "main", model: "sim-1?tokens=2" }, b: { provider: "main", model: "sim-1?tokens=2" } },
  auth: { keys },
});

beforeAll(async () => {
  sim = await startSimulator();
  gw = await startGatewayProcess(config([{ name: "team", sha256: sha256Hex(OLD_KEY), models: ["a"], limits: { requestsPerMinute: 1_000 } }]));
});
afterAll(async () => {
  await gw?.stop();
  await sim?.close();
});

async function outcome(key: string, alias: string): Promise<Code | "ok"> {
  try {
    await collect(chatClient(transports(gw.url)["grpc (connect-node, h2)"]!).streamChat(userRequest(alias, "hi"), { headers: { authorization: `Bearer ${key}` } }));
    return "ok";
  } catch (e) {
    return ConnectError.from(e).code;
  }
}

describe("virtual keys on reload", () => {
  it("a reload rotates a key, widens its allowlist and applies from the next request, naming the key by name only", async () => {
    expect(await outcome(OLD_KEY, "a")).toBe("ok");
    expect(await outcome(OLD_KEY, "b")).toBe(Code.PermissionDenied);
    expect(await outcome(NEW_KEY, "a")).toBe(Code.Unauthenticated);

    await writeFile(gw.configFile, stringify(config([{ name: "team", sha256: sha256Hex(NEW_KEY), models: ["a", "b"] }])));
    gw.child.kill("SIGHUP");
    const line = await gw.waitForLine((l) => l.event === "config.reloaded");
    expect(line.keys).toEqual({ added: [], removed: [], changed: ["team"] });
    expect(JSON.stringify(gw.lines())).not.toContain(OLD_KEY);

    expect(await outcome(OLD_KEY, "a")).toBe(Code.Unauthenticated);
    expect(await outcome(NEW_KEY, "b")).toBe("ok");
  });
});
