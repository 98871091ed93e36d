import { Writable } from "node:stream";
import { createLogger, type Logger } from "../../src/logging/logger.js";

/** A logger whose lines a test reads back as they are written (synchronously, parsed). */
export function capturedLogger(): { readonly logger: Logger; readonly lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger("info", sink), lines };
}
