import type { Config } from "../config/config.js";
import type { Logger } from "../logging/logger.js";
import { createStoreClient } from "../store/redis-tenant-store.js";
import { createMemoryStreamLog } from "./memory-stream-log.js";
import { createRedisStreamLog } from "./redis-stream-log.js";
import { createResumableStreams, type ResumableStreams } from "./resumable-streams.js";

const describe = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message.slice(0, 200)}` : "unknown");

/**
 * Resumable streams over the store the configuration names: Redis Streams
 * on store.redis (its own connections, the same URL and prefix as tenancy),
 * else in process. Settings are read once, at start.
 */
export function openResumableStreams(config: Config, logger: Logger): ResumableStreams {
  const settings = config.resume;
  const redis = config.store?.redis;
  if (!redis) {
    return createResumableStreams({ log: createMemoryStreamLog({ retentionMs: settings.retentionMs }), settings, storeTimeoutMs: 1_000 });
  }
  const client = createStoreClient({ url: redis.url, timeoutMs: redis.timeoutMs });
  let errorLogged = false;
  const onError = (error: unknown) => {
    if (errorLogged) return;
    errorLogged = true;
    logger.warn({ event: "resume.store_error", cause: describe(error) });
  };
  client.on("error", onError);
  client.on("ready", () => {
    errorLogged = false;
    logger.info({ event: "resume.connected", prefix: redis.prefix });
  });
  client.connect().catch(() => undefined);
  const log = createRedisStreamLog({ client, prefix: redis.prefix, retentionMs: settings.retentionMs, maxEntries: settings.maxBacklogMessages + 2, onError });
  const streams = createResumableStreams({ log, settings, storeTimeoutMs: redis.timeoutMs, onStoreError: onError });
  return {
    ...streams,
    async close() {
      await streams.close();
      if (client.isOpen) client.destroy();
    },
  };
}
