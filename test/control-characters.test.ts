import { request } from "node:http";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BatchEndpoint, BatchService } from "../gen/sluice/v1/batch_service_pb.js";
import { adminClient } from "./helpers/admin.js";
import { rpcFailure } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";

/**
 * Client text with a control character, on every path where it names
 * something stored or reaches the database (issue 43, item 2): a clear
 * 400 or INVALID_ARGUMENT naming the field, never a 500 from PostgreSQL,
 * which stores no NUL. The gateway answers a well-formed request on the
 * same path afterwards, so nothing was left broken.
 */
const ADMIN = "sk-test-admin-control-3e5a7c9b1d2f4680";
const KEY = "sk-test-control-key-8c0e2a4b6d1f3957";

let db: OwnDatabase;
let h: Harness;

beforeAll(async () => {
  db = await ownDatabase();
  h = await startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: { chat: { provider: "simulator", model: "sim-1?tokens=3" } },
    }),
    env: { ADMIN, KEY },
    auth: { adminKeyEnv: "ADMIN", keys: [{ name: "control-key", keyEnv: "KEY" }] },
    store: { postgres: { url: db.url, poolSize: 2 } },
    compliance: { audit: { flushMs: 60_000 } },
  });
});
afterAll(async () => {
  await h?.close();
  await db?.drop();
});

/** A raw GET with the path exactly as given (no client normalises the escape away). */
function get(path: string, key = KEY): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(h.url);
    const req = request({ host: url.hostname, port: url.port, path, method: "GET", headers: { authorization: `Bearer ${key}` } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

const line = (customId: string) => `${JSON.stringify({ custom_id: customId, method: "POST", url: "/v1/chat/completions", body: { model: "chat", messages: [{ role: "user", content: "hi" }] } })}\n`;

describe("control characters in client text", () => {
  it("in a file or batch id in the path: 400, for every route with an id", async () => {
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const file = await sdk.files.create({ file: await toFile(Buffer.from(line("ok")), "ok.jsonl"), purpose: "batch" });
    for (const path of [`/v1/files/${file.id}%00/content`, `/v1/files/${file.id}%00`, "/v1/batches/batch_x%01", "/v1/batches/batch_x%7f"]) {
      const res = await get(path);
      expect(res.status, path).toBe(400);
      expect(JSON.parse(res.body).error.message).toMatch(/control character/);
    }
    expect((await get(`/v1/files/${file.id}/content`)).status).toBe(200);
  });

  it("in a batch's input_file_id or metadata, or a file's custom_id: 400 naming the field; a file's name is cleaned", async () => {
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const file = await sdk.files.create({ file: await toFile(Buffer.from(line("ok")), "name\u0000with\u0007controls.jsonl"), purpose: "batch" });
    expect(file.filename).toBe("name\uFFFDwith\uFFFDcontrols.jsonl");
    const refused = async (work: Promise<unknown>) => {
      const error = (await work.then(
        () => undefined,
        (e: unknown) => e,
      )) as { status?: number; message?: string } | undefined;
      expect(error?.status).toBe(400);
      return error!.message ?? "";
    };
    expect(await refused(sdk.batches.create({ input_file_id: `${file.id}\u0000`, endpoint: "/v1/chat/completions", completion_window: "24h" }))).toMatch(/input_file_id: holds a control character \(U\+0000\)/);
    expect(await refused(sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h", metadata: { job: "a\u0000b" } }))).toMatch(/metadata\.job: holds a control character/);
    expect(await refused(sdk.files.create({ file: await toFile(Buffer.from(line("id\u0000")), "x.jsonl"), purpose: "batch" }))).toMatch(/line 1: custom_id: holds a control character/);
    const created = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h", metadata: { job: "tab\there is text" } });
    expect(created.metadata).toEqual({ job: "tab\there is text" });
  });

  it("in AdminService requests (a dataset's description, an audit filter, a spend filter, a cache purge, a key's name): INVALID_ARGUMENT naming the field", async () => {
    const admin = adminClient(h.url, ADMIN);
    const cases: Array<[string, Promise<unknown>, RegExp]> = [
      ["CreateDataset description", admin.createDataset({ name: "ds", alias: "chat", description: "d\u0000" }), /description: holds a control character \(U\+0000\)/],
      ["ListAuditEvents target", admin.listAuditEvents({ filter: { target: "\u0000" } }), /filter\.target: holds a control character/],
      ["ListAuditEvents action", admin.listAuditEvents({ filter: { action: "key.create\u001b" } }), /filter\.action: holds a control character \(U\+001B\)/],
      ["GetSpendReport keys", admin.getSpendReport({ start: timestampFromMs(Date.now() - 3_600_000), end: timestampFromMs(Date.now()), filter: { keys: ["k\u0000"] } }), /filter\.keys: holds a control character/],
      ["GetSpendReport tags", admin.getSpendReport({ start: timestampFromMs(Date.now() - 3_600_000), end: timestampFromMs(Date.now()), filter: { tags: { "pro\u0000ject": "x" } } }), /filter\.tags: holds a control character/],
      ["PurgeCache request id", admin.purgeCache({ requestId: "req\u0000" }), /request_id: holds a control character/],
      ["CreateKey name", admin.createKey({ name: "k\u0000" }), /name: holds a control character/],
    ];
    for (const [name, call, message] of cases) {
      const failure = await rpcFailure(call);
      expect(failure.code, name).toBe(Code.InvalidArgument);
      expect(failure.rawMessage, name).toMatch(message);
    }
    // A description's line breaks are text; the filters work as before.
    expect((await admin.listAuditEvents({ filter: { target: "nothing-here" } })).events).toEqual([]);
  });

  it("in AdminService requests without the admin key: UNAUTHENTICATED first, as for any request", async () => {
    const failure = await rpcFailure(adminClient(h.url, "sk-not-the-admin-key-00000000000000").listAuditEvents({ filter: { target: "\u0000" } }));
    expect(failure.code).toBe(Code.Unauthenticated);
  });

  it("in BatchService requests: INVALID_ARGUMENT naming the field", async () => {
    const client = createClient(BatchService, createGrpcTransport({ baseUrl: h.url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${KEY}`), next(req))] }));
    for (const [name, call, message] of [
      ["GetBatch", client.getBatch({ id: "batch_\u0000" }), /id: holds a control character/],
      ["GetFileContent", client.getFileContent({ id: "file-\u0000" }), /id: holds a control character/],
      ["CreateBatch metadata", client.createBatch({ inputFileId: "file-x", endpoint: BatchEndpoint.CHAT_COMPLETIONS, metadata: { "a\u0000": "b" } }), /metadata: holds a control character/],
    ] as const) {
      const failure = await rpcFailure(call);
      expect(failure.code, name).toBe(Code.InvalidArgument);
      expect(failure.rawMessage, name).toMatch(message);
    }
  });
});
