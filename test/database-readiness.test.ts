import { PassThrough } from "node:stream";
import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import { describe, expect, it } from "vitest";
import { type Sluice, startSluice } from "../src/app.js";
import { resolveConfig } from "../src/config/config.js";
import { createLogger } from "../src/logging/logger.js";
import { freePort } from "./helpers/redis.js";

/**
 * `/readyz` over the gateway's own socket while the database opens:
 * waiting for `database` (while `/healthz` answers) until the database is
 * open and migrated, then ready. A load balancer then never sends calls
 * whose ledger rows, audit events or stored responses would have nowhere
 * to go.
 */

const DB_START_MS = 90_000;

async function gateway(store: Record<string, unknown>) {
  let text = "";
  const sink = new PassThrough();
  sink.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
  const config = resolveConfig(
    {
      log: { level: "info" },
      store,
      providers: { sim: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
      models: { sim: { provider: "sim", model: "sim-1" } },
    },
    {},
  );
  const sluice = await startSluice({ config, logger: createLogger("info", sink), port: 0, env: {} });
  const events = () =>
    text
      .split("\n")
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as { event?: string }).event);
  return { sluice, events };
}

async function probe(url: string, path: string) {
  const response = await fetch(`${url}${path}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function untilReady(sluice: Sluice): Promise<void> {
  const signal = AbortSignal.timeout(DB_START_MS - 10_000);
  while (!sluice.server.health.ready && !signal.aborted) await sluice.server.health.changed(signal);
}

describe("readiness and the database", () => {
  it(
    "waits for a database by URL that is not there yet, with /healthz answering, and is ready once it is open",
    async () => {
      const port = await freePort();
      const { sluice, events } = await gateway({ postgres: { url: `postgres://postgres@127.0.0.1:${port}/postgres`, poolSize: 2 } });
      const db = await PGlite.create({ extensions: { vector } });
      const server = new PGLiteSocketServer({ db, port, host: "127.0.0.1" });
      try {
        expect(await probe(sluice.server.url, "/healthz")).toEqual({ status: 200, body: { status: "ok" } });
        expect(await probe(sluice.server.url, "/readyz")).toEqual({ status: 503, body: { status: "waiting", waitingFor: ["database"] } });
        await server.start();
        await untilReady(sluice);
        expect(await probe(sluice.server.url, "/readyz")).toEqual({ status: 200, body: { status: "ready" } });
        expect(events()).toContain("db.ready");
      } finally {
        await sluice.close();
        await server.stop();
        await db.close();
      }
    },
    DB_START_MS,
  );

  it(
    "is ready with the embedded database only after it opened in its worker",
    async () => {
      const { sluice, events } = await gateway({ postgres: {} });
      try {
        // The worker's answer needs a turn of the loop: listening, and not ready.
        expect(sluice.server.health.waitingFor).toEqual(["database"]);
        expect((await probe(sluice.server.url, "/healthz")).status).toBe(200);
        await untilReady(sluice);
        expect(events()).toContain("db.ready");
        expect(await probe(sluice.server.url, "/readyz")).toEqual({ status: 200, body: { status: "ready" } });
      } finally {
        await sluice.close();
      }
    },
    DB_START_MS,
  );
});
