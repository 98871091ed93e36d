import { once } from "node:events";
import { type AddressInfo, createServer } from "node:net";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { startSluice } from "../src/app.js";
import { resolveConfig } from "../src/config/config.js";
import { createLogger } from "../src/logging/logger.js";
import { createUpstreamClient } from "../src/upstream/http-client.js";

const taken = createServer();
afterEach(() => {
  taken.close();
});

describe("a gateway that cannot start", () => {
  it("closes the parts that had started (the upstream client among them) and rejects with the cause", async () => {
    taken.listen(0, "127.0.0.1");
    await once(taken, "listening");
    const port = (taken.address() as AddressInfo).port;
    const client = createUpstreamClient();
    let clientClosed = false;
    let text = "";
    const sink = new PassThrough();
    sink.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    const config = resolveConfig(
      {
        providers: { simulator: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
        models: { sim: { provider: "simulator", model: "sim-1" } },
      },
      {},
    );

    const started = startSluice({
      config,
      host: "127.0.0.1",
      port,
      env: {},
      logger: createLogger("debug", sink),
      upstream: {
        ...client,
        close: async () => {
          clientClosed = true;
          await client.close();
        },
      },
    });

    await expect(started).rejects.toThrow(/EADDRINUSE/);
    expect(clientClosed).toBe(true);
    expect(text).not.toContain("server.close_failed");
  });
});
