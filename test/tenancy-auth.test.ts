import { Code } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../src/config/key-hash.js";
import { chatClient, collect, grpcJsStream, rpcFailure, textOf, transports, unary, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";

const TEAM_A_KEY = "sk-test-team-a-5d1c0e9f2b7a4c31";
const TEAM_B_KEY = "sk-test-team-b-8e2f4a6c1d3b5f70";
const WRONG_KEY = "sk-test-nobody-0000000000000000";
const ADMIN_KEY = "sk-test-admin-3f9a1c7e5b2d4086";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    models: { sim: "sim-1?tokens=3", other: "sim-1?tokens=2" },
    env: { TEAM_A_KEY, SLUICE_ADMIN_KEY: ADMIN_KEY },
    auth: {
      adminKeyEnv: "SLUICE_ADMIN_KEY",
      keys: [
        { name: "team-a", keyEnv: "TEAM_A_KEY", models: ["sim"] },
        // The second form: only the hash is in the configuration.
        { name: "team-b", sha256: sha256Hex(TEAM_B_KEY) },
      ],
    },
  });
});
afterAll(() => h.close());

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

const CONNECT_CLIENTS = ["grpc (connect-node, h2)", "connect (connect-node, HTTP/1.1)", "grpc-web (connect-node, HTTP/1.1)"] as const;

describe("authentication on the RPC edges", () => {
  for (const kind of CONNECT_CLIENTS) {
    it(`${kind}: no key or an unknown key is UNAUTHENTICATED, a key outside its allowlist PERMISSION_DENIED, a good key streams`, async () => {
      const client = chatClient(transports(h.url)[kind]!);
      const missing = await rpcFailure(collect(client.streamChat(userRequest("sim", "hi"))));
      expect(missing.code).toBe(Code.Unauthenticated);
      expect(missing.rawMessage).toMatch(/missing API key/);
      const unknown = await rpcFailure(collect(client.streamChat(userRequest("sim", "hi"), { headers: bearer(WRONG_KEY) })));
      expect(unknown.code).toBe(Code.Unauthenticated);
      expect(unknown.rawMessage).toBe("invalid API key");
      const malformed = await rpcFailure(collect(client.streamChat(userRequest("sim", "hi"), { headers: { authorization: `Basic ${TEAM_A_KEY}` } })));
      expect(malformed.code).toBe(Code.Unauthenticated);
      const denied = await rpcFailure(collect(client.streamChat(userRequest("other", "hi"), { headers: bearer(TEAM_A_KEY) })));
      expect(denied.code).toBe(Code.PermissionDenied);
      expect(denied.rawMessage).toMatch(/key team-a may not use model "other"/);
      const answer = await collect(client.streamChat(userRequest("sim", "hi"), { headers: bearer(TEAM_A_KEY) }));
      expect(answer.at(-1)?.delta.case).toBe("finish");
      const hashed = await collect(client.streamChat(userRequest("other", "hi"), { headers: bearer(TEAM_B_KEY) }));
      expect(textOf(hashed)).not.toBe("");
    });
  }

  it("unary Chat needs a key too", async () => {
    const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    expect((await rpcFailure(client.chat(unary(userRequest("sim", "hi"))))).code).toBe(Code.Unauthenticated);
    const result = await client.chat(unary(userRequest("sim", "hi")), { headers: bearer(TEAM_A_KEY) });
    expect(result.text).not.toBe("");
  });

  it("grpc-js with the key in metadata, and without it", async () => {
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${TEAM_A_KEY}`);
    const ok = grpcJsStream(h.url, userRequest("sim", "hi"), { metadata });
    expect((await ok.messages).at(-1)?.delta.case).toBe("finish");
    ok.close();
    const none = grpcJsStream(h.url, userRequest("sim", "hi"));
    await expect(none.messages).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
    none.close();
    const denied = grpcJsStream(h.url, userRequest("other", "hi"), { metadata });
    await expect(denied.messages).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED });
    denied.close();
  });

  it("ListModels lists only the aliases the key may use", async () => {
    const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    expect((await rpcFailure(client.listModels({}))).code).toBe(Code.Unauthenticated);
    expect((await client.listModels({}, { headers: bearer(TEAM_A_KEY) })).models.map((m) => m.id)).toEqual(["sim"]);
    expect((await client.listModels({}, { headers: bearer(TEAM_B_KEY) })).models.map((m) => m.id)).toEqual(["other", "sim"]);
  });

  it("ListModels with the admin key lists every alias (the console signed in as admin); the admin key streams nothing", async () => {
    const client = chatClient(transports(h.url)["connect (connect-node, HTTP/1.1)"]!);
    expect((await client.listModels({}, { headers: bearer(ADMIN_KEY) })).models.map((m) => m.id)).toEqual(["other", "sim"]);
    const nearly = await rpcFailure(client.listModels({}, { headers: bearer(`${ADMIN_KEY}x`) }));
    expect(nearly.code).toBe(Code.Unauthenticated);
    const streamed = await rpcFailure(collect(client.streamChat(userRequest("sim", "hi"), { headers: bearer(ADMIN_KEY) })));
    expect(streamed.code).toBe(Code.Unauthenticated);
    expect(streamed.rawMessage).toBe("invalid API key");
    expect((await rpcFailure(client.chat(unary(userRequest("sim", "hi")), { headers: bearer(ADMIN_KEY) }))).code).toBe(Code.Unauthenticated);
  });
});

describe("authentication on the OpenAI facade", () => {
  const sdk = (apiKey: string) => new OpenAI({ baseURL: `${h.url}/v1`, apiKey, maxRetries: 0 });

  it("the SDK's apiKey is the key: 401 for an unknown one, 403 outside the allowlist, a stream with the right one", async () => {
    await expect(sdk(WRONG_KEY).chat.completions.create({ model: "sim", messages: [{ role: "user", content: "hi" }] })).rejects.toMatchObject({
      status: 401,
      code: "invalid_api_key",
      type: "authentication_error",
    });
    await expect(sdk(TEAM_A_KEY).chat.completions.create({ model: "other", messages: [{ role: "user", content: "hi" }], stream: true })).rejects.toMatchObject({
      status: 403,
      code: "permission_denied",
      type: "permission_error",
    });
    let text = "";
    for await (const chunk of await sdk(TEAM_A_KEY).chat.completions.create({ model: "sim", messages: [{ role: "user", content: "hi" }], stream: true })) {
      text += chunk.choices[0]?.delta.content ?? "";
    }
    expect(text).not.toBe("");
  });

  it("a request without a key is refused before its body is read", async () => {
    const res = await fetch(`${h.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "sim", messages: [] }) });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("invalid_api_key");
  });

  it("/v1/models lists only the key's aliases, and an alias outside them is not found", async () => {
    expect((await sdk(TEAM_A_KEY).models.list()).data.map((m) => m.id)).toEqual(["sim"]);
    expect((await sdk(TEAM_B_KEY).models.list()).data.map((m) => m.id)).toEqual(["other", "sim"]);
    await expect(sdk(TEAM_A_KEY).models.retrieve("other")).rejects.toMatchObject({ status: 404 });
    expect((await fetch(`${h.url}/v1/models`)).status).toBe(401);
  });

  it("/v1/models with the admin key lists every alias; the admin key is no API key for completions", async () => {
    expect((await sdk(ADMIN_KEY).models.list()).data.map((m) => m.id)).toEqual(["other", "sim"]);
    expect((await sdk(ADMIN_KEY).models.retrieve("other")).id).toBe("other");
    await expect(sdk(`${ADMIN_KEY}x`).models.list()).rejects.toMatchObject({ status: 401 });
    await expect(sdk(ADMIN_KEY).chat.completions.create({ model: "sim", messages: [{ role: "user", content: "hi" }] })).rejects.toMatchObject({ status: 401, code: "invalid_api_key" });
  });
});

describe("what stays open, and what is never shown", () => {
  it("health checks need no key", async () => {
    expect((await fetch(`${h.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${h.url}/readyz`)).status).toBe(200);
  });

  it("access lines name the key, and no key appears in any log line or error", async () => {
    const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    const tag = `auth-access-${Date.now()}`;
    await collect(client.streamChat(userRequest("sim", `#sim tag=${tag}`), { headers: { ...bearer(TEAM_A_KEY), "x-request-id": tag } }));
    const access = await h.waitForLog((l) => l.event === "access" && l.requestId === tag);
    expect(access.key).toBe("team-a");
    const refused = await rpcFailure(collect(client.streamChat(userRequest("sim", "hi"), { headers: bearer(WRONG_KEY) })));
    await client.listModels({}, { headers: bearer(ADMIN_KEY) });
    for (const key of [TEAM_A_KEY, TEAM_B_KEY, WRONG_KEY, ADMIN_KEY]) {
      expect(h.logText()).not.toContain(key);
      expect(refused.message).not.toContain(key);
    }
  });
});
