import type { ResumeSettings } from "../config/settings.js";
import { quoteClientValue } from "../core/client-text.js";
import type { Delta } from "../core/delta.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import { within } from "../store/within.js";
import type { Principal } from "../tenancy/principal.js";
import { BACKLOG_EXCEEDED, createLogWriter, type LogWriter } from "./log-writer.js";
import { type ControlOp, notFound, type StreamLog } from "./stream-log.js";

/** What starting a resumable stream needs from its edge. */
export interface RunInput {
  /** Starts the pipeline on `signal`, which the stream (not the client) now owns. */
  readonly start: (signal: AbortSignal) => AsyncGenerator<Delta, void, undefined>;
  /** Aborts when the original client leaves: the stream detaches instead of ending. */
  readonly clientSignal: AbortSignal;
  readonly principal?: Principal;
  /** The facade's include_usage, kept for a facade resume. */
  readonly includeUsage?: boolean;
  /** The model alias the client named, which a resumed stream's chunks name too. */
  readonly alias?: string;
  /** Told once when the stream stops being resumable (backlog bound, store failure). */
  readonly onNotResumable?: (reason: string) => void;
}

/** A delta with its place in the stream: what both the original and a resumed stream hand their edge. */
export interface Numbered {
  readonly sequence: number;
  readonly delta: Delta;
}

/** A stream being resumed: its deltas with their original sequence numbers. */
export interface Resumed {
  readonly includeUsage: boolean;
  readonly alias?: string;
  readonly entries: AsyncGenerator<Numbered, void, undefined>;
}

export interface ResumableStreams {
  /** The pipeline's deltas, numbered from 0 and stored as they are handed out. */
  run(input: RunInput): AsyncGenerator<Numbered, void, undefined>;
  /**
   * Every stored entry of `id` from sequence 0 (the edge skips those its
   * client has), then the live ones; throws the original's error status,
   * `not_found`, `permission_denied`, `not_resumable`.
   */
  resume(id: string, principal: Principal | undefined, signal: AbortSignal): Promise<Resumed>;
  /** Stops the upstream of `id` on whichever replica runs it. */
  cancel(id: string, principal: Principal | undefined): Promise<void>;
  close(): Promise<void>;
}

export interface ResumableStreamsOptions {
  readonly log: StreamLog;
  readonly settings: ResumeSettings;
  /** Longest wait for the store when a stream starts; past it the stream runs, not resumable. */
  readonly storeTimeoutMs: number;
  readonly onStoreError?: (error: unknown) => void;
  /** What happened to a stream this replica runs, for the logs. */
  readonly onEvent?: (event: ResumeEvent) => void;
}

/** A resumable stream's turns worth a log line: its client left, the grace ran out, CancelStream reached it, it stopped being resumable. */
export interface ResumeEvent {
  readonly type: "detached" | "grace_expired" | "canceled" | "not_resumable";
  readonly id: string;
}

const RESPONSE_ID = /^resp_[0-9a-f]{32}$/;

const GRACE_EXPIRED = () => new GatewayError("canceled", "no client resumed the stream within its detach grace");
const CANCELED = () => new GatewayError("canceled", "the stream was cancelled by CancelStream");

function checkedId(id: string): string {
  if (!RESPONSE_ID.test(id)) throw new GatewayError("not_found", `stream ${quoteClientValue(id, 64)} not found: not a response id`, { field: "response_id" });
  return id;
}

/** A stream this replica runs: its upstream, its readers anywhere, its grace timer. */
interface Session {
  id?: string;
  readers: number;
  timer?: NodeJS.Timeout;
  readonly abort: (reason: GatewayError) => void;
}

/**
 * Resumable streams (docs/streams.md, "Resumable streams"). The replica that starts
 * one owns its upstream: it numbers and stores every delta as the client
 * pulls it (so backpressure is the client's, as for any stream), and when
 * the client leaves it keeps pulling at the upstream's pace into the store
 * until the stream ends, the backlog bound is hit, or `detachGraceMs`
 * passes with no reader anywhere. Readers on any replica read the store;
 * they announce themselves, and CancelStream, over the log's control
 * channel.
 */
export function createResumableStreams(options: ResumableStreamsOptions): ResumableStreams {
  const { log, settings } = options;
  const sessions = new Map<string, Session>();
  let readers = 0;

  const tell = (type: ResumeEvent["type"], id: string | undefined) => {
    if (id !== undefined) options.onEvent?.({ type, id });
  };
  const startGrace = (session: Session) => {
    clearTimeout(session.timer);
    session.timer = setTimeout(() => {
      tell("grace_expired", session.id);
      session.abort(GRACE_EXPIRED());
    }, settings.detachGraceMs);
  };
  const unsubscribe = log.subscribe((id: string, op: ControlOp) => {
    const session = sessions.get(id);
    if (!session) return;
    switch (op) {
      case "attach":
        session.readers++;
        clearTimeout(session.timer);
        break;
      case "detach":
        session.readers--;
        if (session.readers <= 0) startGrace(session);
        break;
      case "cancel":
        tell("canceled", id);
        session.abort(CANCELED());
        break;
    }
  });

  async function* run(input: RunInput): AsyncGenerator<Numbered, void, undefined> {
    const controller = new AbortController();
    const deltas = input.start(controller.signal);
    let id: string | undefined;
    let writer: LogWriter | undefined;
    let sequence = 0;
    let ended = false;
    let clientGone = false;
    /** The client's pull in progress, if any: the detached drain starts after it, so pulls never overlap. */
    let current: Promise<unknown> | undefined;
    const session: Session = { readers: 1, abort: (reason) => controller.abort(reason) };

    const notResumable = (reason: string, error?: unknown) => {
      if (error !== undefined) options.onStoreError?.(error);
      tell("not_resumable", id);
      input.onNotResumable?.(reason);
      // Nobody can resume it now: without a client it has no reason to run.
      if (clientGone) session.abort(new GatewayError("canceled", "stream closed"));
    };
    const end = async () => {
      ended = true;
      await writer?.flushed();
      if (id !== undefined && sessions.get(id) === session) sessions.delete(id);
      clearTimeout(session.timer);
    };
    const opened = async (responseId: string) => {
      id = responseId;
      session.id = id;
      sessions.set(id, session);
      const meta = { owner: input.principal?.sha256 ?? "", ...(input.includeUsage ? { includeUsage: true } : {}), ...(input.alias !== undefined ? { alias: input.alias } : {}) };
      try {
        await within(log.open(id, meta), options.storeTimeoutMs, "stream log open");
        writer = createLogWriter(log, id, settings, notResumable);
      } catch (error) {
        notResumable("the stream store failed; the stream is not resumable", error);
      }
    };
    const step = async (): Promise<IteratorResult<Numbered, void>> => {
      if (ended) return { done: true, value: undefined };
      let next: IteratorResult<Delta, void>;
      try {
        next = await deltas.next();
      } catch (error) {
        const failure = toGatewayError(error);
        writer?.write({ sequence, record: { kind: "failed", code: failure.code, message: failure.message } });
        await end();
        throw failure;
      }
      if (next.done) {
        await end();
        return next;
      }
      const delta = next.value;
      // An answer whose personal data was put back is not written to a store other replicas read.
      if (delta.type === "start") await (delta.restored ? notResumable("the answer holds personal data restored after redaction; it is not kept in the stream store") : opened(delta.responseId));
      const numbered: Numbered = { sequence: sequence++, delta };
      const wait = writer?.write({ sequence: numbered.sequence, record: { kind: "delta", delta } });
      if (wait) await wait;
      // The client learns the id from `start`: by then a reader anywhere must find it.
      if (delta.type === "start") await writer?.flushed();
      // `finish` is not the end: the pipeline settles, counts and frees its slot when its source ends, so the stream is read on to that end.
      return { done: false, value: numbered };
    };
    const detach = () => {
      if (clientGone) return;
      clientGone = true;
      if (ended) return;
      session.readers--;
      if (!writer?.storing) return session.abort(new GatewayError("canceled", "stream closed"));
      tell("detached", id);
      if (session.readers <= 0) startGrace(session);
      void (async () => {
        await current?.catch(() => undefined);
        while (!ended) {
          const next = await step().catch(() => ({ done: true }));
          if (next.done) break;
        }
      })();
    };
    input.clientSignal.addEventListener("abort", detach, { once: true });
    if (input.clientSignal.aborted) detach();

    try {
      // Once the client is gone only the drain pulls: this loop stops before its next pull.
      while (!clientGone) {
        const pulling = step();
        current = pulling;
        const next = await pulling;
        if (next.done) return;
        yield next.value;
      }
    } finally {
      input.clientSignal.removeEventListener("abort", detach);
      detach();
    }
  }

  async function owned(id: string, principal: Principal | undefined) {
    const meta = await log.meta(checkedId(id)).catch((error: unknown) => {
      throw new GatewayError("store_unavailable", "the stream store cannot be reached", { cause: error });
    });
    if (!meta) throw notFound(id);
    if (principal && meta.owner !== principal.sha256) throw new GatewayError("permission_denied", `stream ${id} was started by another key`, { field: "response_id" });
    return meta;
  }

  async function* readEntries(id: string, signal: AbortSignal): AsyncGenerator<Numbered, void, undefined> {
    if (readers >= settings.maxReaders) throw new GatewayError("overloaded", "too many streams are being resumed on this replica; retry shortly");
    readers++;
    try {
      // Not awaited: the replay need not wait for the owner to hear of it (attach and detach keep their order on one connection).
      void log.publish(id, "attach").catch(() => undefined);
      for await (const entry of log.read(id, signal)) {
        const { record } = entry;
        switch (record.kind) {
          case "delta":
            yield { sequence: entry.sequence, delta: record.delta };
            break;
          case "failed":
            throw new GatewayError(record.code, record.message);
          case "truncated":
            throw new GatewayError("not_resumable", `stream ${id}: ${BACKLOG_EXCEEDED}`);
        }
      }
    } finally {
      readers--;
      void log.publish(id, "detach").catch(() => undefined);
    }
  }

  return {
    run,
    async resume(id, principal, signal) {
      const meta = await owned(id, principal);
      return { includeUsage: meta.includeUsage === true, ...(meta.alias !== undefined ? { alias: meta.alias } : {}), entries: readEntries(id, signal) };
    },
    async cancel(id, principal) {
      await owned(id, principal);
      await log.publish(id, "cancel");
    },
    async close() {
      unsubscribe();
      for (const session of sessions.values()) clearTimeout(session.timer);
      await log.close();
    },
  };
}
