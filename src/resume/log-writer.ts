import type { ResumeSettings } from "../config/settings.js";
import { encodeBatch, encodeEntry, isTerminal, type LogEntry, type StreamLog } from "./stream-log.js";

/** Why a stream stopped being resumable, as its client is told. */
export const BACKLOG_EXCEEDED = "the stream outgrew its stored backlog; it can no longer be resumed";
export const STORE_FAILED = "the stream store failed; the stream can no longer be resumed";

/** Messages waiting for the append in flight before the writer makes its caller wait: bounds memory while the store is slow. */
const MAX_BUFFERED = 256;

export interface LogWriter {
  /** Stores `entry`; a promise only when the caller must wait (the store is behind). */
  write(entry: LogEntry): Promise<void> | undefined;
  /** Resolves when everything written so far is stored (or dropped, the store having failed). */
  flushed(): Promise<void>;
  /** False once the backlog bound was hit or the store failed. */
  readonly storing: boolean;
}

/**
 * Appends one stream's messages to the log in order, one append in flight
 * at a time: what arrives meanwhile goes out together in the next one, so a
 * fast stream costs a Redis round trip per batch, not per delta, and a slow
 * one still gets each delta stored at once. Past `maxBacklogMessages` or
 * `maxBacklogBytes` the last slot holds a `truncated` record and nothing
 * more is stored.
 */
export function createLogWriter(log: StreamLog, id: string, bounds: Pick<ResumeSettings, "maxBacklogMessages" | "maxBacklogBytes">, onStop: (reason: string, error?: unknown) => void): LogWriter {
  let entries: LogEntry[] = [];
  let encoded: string[] = [];
  let inFlight: Promise<void> | undefined;
  let bytes = 0;
  let storing = true;

  const stop = (reason: string, error?: unknown) => {
    if (!storing) return;
    storing = false;
    onStop(reason, error);
  };
  const send = () => {
    const batch = entries;
    const text = encodeBatch(encoded);
    entries = [];
    encoded = [];
    inFlight = log.append(id, batch, text).then(
      () => {
        inFlight = undefined;
        if (entries.length > 0) send();
      },
      (error: unknown) => {
        inFlight = undefined;
        entries = [];
        encoded = [];
        stop(STORE_FAILED, error);
      },
    );
  };

  return {
    get storing() {
      return storing;
    },
    write(entry) {
      if (!storing) return undefined;
      let stored = entry;
      let text = encodeEntry(entry);
      bytes += text.length;
      const full = entry.sequence >= bounds.maxBacklogMessages - 1 || bytes > bounds.maxBacklogBytes;
      if (full && !isTerminal(entry.record)) {
        stored = { sequence: entry.sequence, record: { kind: "truncated" } };
        text = encodeEntry(stored);
      }
      entries.push(stored);
      encoded.push(text);
      if (!inFlight) send();
      if (stored !== entry) stop(BACKLOG_EXCEEDED);
      return entries.length >= MAX_BUFFERED ? this.flushed() : undefined;
    },
    async flushed() {
      while (inFlight) await inFlight;
    },
  };
}
