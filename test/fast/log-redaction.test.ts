import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { CENSOR, redactSecrets } from "../../src/logging/log-redaction.js";
import { createLogger } from "../../src/logging/logger.js";

/** The lines a real pino logger wrote, parsed. */
async function written(log: (logger: ReturnType<typeof createLogger>) => void): Promise<Array<Record<string, unknown>>> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on("data", (chunk: Buffer) => chunks.push(chunk));
  const logger = createLogger("info", out);
  log(logger);
  logger.flush();
  await new Promise<void>((resolve) => setImmediate(resolve));
  return Buffer.concat(chunks)
    .toString("utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("log redaction", () => {
  it("cuts credentials in a field's object and in its headers, and keeps everything else", async () => {
    const [line] = await written((logger) =>
      logger.info({
        event: "upstream",
        request: { url: "https://example.test/v1", apiKey: "sk-live-1", headers: { authorization: "Bearer sk-live-2", "x-api-key": "sk-live-3", "x-goog-api-key": "g-4", accept: "text/event-stream" } },
        provider: { authorization: "Bearer sk-live-5", name: "openai" },
      }),
    );
    const text = JSON.stringify(line);
    for (const secret of ["sk-live-1", "sk-live-2", "sk-live-3", "g-4", "sk-live-5"]) expect(text).not.toContain(secret);
    expect(line).toMatchObject({
      event: "upstream",
      request: { url: "https://example.test/v1", apiKey: CENSOR, headers: { authorization: CENSOR, "x-api-key": CENSOR, "x-goog-api-key": CENSOR, accept: "text/event-stream" } },
      provider: { authorization: CENSOR, name: "openai" },
    });
  });

  it("cuts them at the top of the line too", async () => {
    const [line] = await written((logger) => logger.warn({ event: "x", authorization: "Bearer top", headers: { authorization: "Bearer inner" } }));
    expect(line).toMatchObject({ authorization: CENSOR, headers: { authorization: CENSOR } });
  });

  it("returns a line without credentials as it is, and never alters the caller's object", () => {
    const plain = { event: "access", requestId: "r1", fields: { cache: "hit-exact" }, list: [{ authorization: "kept: arrays are not headers" }] };
    expect(redactSecrets(plain)).toBe(plain);
    const holder = { headers: { authorization: "Bearer s" } };
    const line = { event: "y", holder };
    const out = redactSecrets(line);
    expect(out).not.toBe(line);
    expect(holder.headers.authorization).toBe("Bearer s");
    expect((out.holder as typeof holder).headers.authorization).toBe(CENSOR);
  });
});
