import type { ResumeSettings } from "../config/settings.js";
import type { Logger } from "../logging/logger.js";
import type { Tenancy } from "../tenancy/tenancy.js";
import { createMemoryStreamLog } from "./memory-stream-log.js";
import { createRedisStreamLog } from "./redis-stream-log.js";
import { createResumableStreams, type ResumableStreams, type ResumeEvent } from "./resumable-streams.js";

const describe = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message.slice(0, 200)}` : "unknown");

/** One line per turn of a resumable stream: `resume.detached`, `resume.grace_expired`, `resume.canceled`, `resume.not_resumable`. */
function logEvent(logger: Logger): (event: ResumeEvent) => void {
  return (event) => logger.info({ event: `resume.${event.type}`, responseId: event.id });
}

/**
 * Resumable streams over the store the configuration names: Redis Streams
 * through tenancy's store.redis connection (same URL, same prefix; the
 * control channel and each blocking reader get a duplicate of it), else in
 * process. Settings are read once, at start.
 */
export function openResumableStreams(settings: ResumeSettings, logger: Logger, redis: Tenancy["redis"]): ResumableStreams {
  if (!redis) {
    return createResumableStreams({ log: createMemoryStreamLog({ retentionMs: settings.retentionMs }), settings, storeTimeoutMs: 1_000, onEvent: logEvent(logger) });
  }
  let errorLogged = false;
  const onError = (error: unknown) => {
    if (errorLogged) return;
    errorLogged = true;
    logger.warn({ event: "resume.store_error", cause: describe(error) });
  };
  const log = createRedisStreamLog({
    client: redis.client,
    prefix: redis.prefix,
    retentionMs: settings.retentionMs,
    maxEntries: settings.maxBacklogMessages + 2,
    onError,
    onSubscribed: () => {
      errorLogged = false;
      logger.info({ event: "resume.connected", prefix: redis.prefix });
    },
  });
  return createResumableStreams({ log, settings, storeTimeoutMs: redis.timeoutMs, onStoreError: onError, onEvent: logEvent(logger) });
}
