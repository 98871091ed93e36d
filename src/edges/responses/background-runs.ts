import type { CallContext, CallLayer } from "../../call/call-layer.js";
import type { CachePolicy } from "../../core/cache-policy.js";
import type { Delta } from "../../core/delta.js";
import { GatewayError, toGatewayError } from "../../core/errors.js";
import { replayForTarget } from "../../core/replay-origins.js";
import { type JsonObject, newResponseId } from "../../response-state/response-ids.js";
import type { ResponseState } from "../../response-state/response-state.js";
import type { StoredResponse, StoredStatus } from "../../response-state/stored-response.js";
import type { ResumableStreams } from "../../resume/resumable-streams.js";
import type { Principal } from "../../tenancy/principal.js";
import { isTerminalStatus, withStatus } from "./background-record.js";
import type { ResponsesRequest } from "./from-responses.js";
import type { ResponseObject } from "./response-object.js";
import { storedRecordOf } from "./stored-record.js";
import { createResponseEncoder } from "./to-responses.js";

/** What one background run starts from: the decoded request and what the HTTP call knew of itself. */
export interface BackgroundStart {
  readonly parsed: ResponsesRequest;
  /** The body's `input`, as sent: the record's input items. */
  readonly input: unknown;
  readonly principal?: Principal;
  /** The call's id, edge, trace and access-line fields; its signal is the run's own, not the client's. */
  readonly call: Omit<CallContext, "signal">;
  readonly cachePolicy?: CachePolicy;
}

export interface BackgroundRuns {
  /**
   * Keeps the response queued and starts its run; resolves with the queued
   * response object once the key was admitted (allowlist, limits, budget,
   * stream slot), rejects with the refusal (then nothing is kept).
   */
  start(job: BackgroundStart): Promise<JsonObject>;
  /** The record as it stands; a run that a stopped process left unfinished is marked failed first. */
  get(id: string, principal: Principal | undefined): Promise<StoredResponse | undefined>;
  /** Stops the run wherever it runs and marks it cancelled; `invalid_request` for a response that is not a background one. */
  cancel(id: string, principal: Principal | undefined): Promise<StoredResponse | undefined>;
  /** Resolves when a run on this replica has its stream open (or ended); elsewhere, after a short wait (the caller asks again). */
  opened(id: string, signal: AbortSignal): Promise<void>;
  /** Ends every run of this replica (failed: the gateway shut down) and waits for their records. */
  close(): Promise<void>;
}

export interface BackgroundRunsOptions {
  readonly calls: CallLayer;
  readonly streams: ResumableStreams;
  readonly state: ResponseState;
  /** How long a run's record is vouched for without renewal (renewed every third of it). */
  readonly leaseMs?: number;
  readonly now?: () => number;
  /** Told when a record cannot be written (the run goes on). */
  readonly onStoreError?: (error: unknown) => void;
}

/** A run this replica executes. */
interface LocalRun {
  readonly controller: AbortController;
  readonly opened: Promise<void>;
  done: Promise<void>;
  /** Its final record's write, from its `finish` on: a reader who saw the stream end reads the record after it. */
  ended?: Promise<void>;
}

const DEFAULT_LEASE_MS = 30_000;
/** How often a reader waiting for another replica's run to open its stream asks again. */
const REMOTE_OPEN_POLL_MS = 200;
/** The run's stream never detaches: the run itself is its first reader, to the end. */
const NEVER = new AbortController().signal;

const CANCELLED = () => new GatewayError("canceled", "the response was cancelled");
const SHUT_DOWN = () => new GatewayError("shutting_down", "the gateway shut down before the response finished: create it again");
export const SERVER_RESTARTED = { code: "server_restarted", message: "the gateway process running this response stopped before it finished: create it again" };

/** The pipeline's deltas under the response's own id, which the client had before the run started. */
async function* renamed(deltas: AsyncGenerator<Delta, void, undefined>, id: string): AsyncGenerator<Delta, void, undefined> {
  for await (const delta of deltas) yield delta.type === "start" ? { ...delta, responseId: id } : delta;
}

/**
 * Background runs of `/v1/responses` (docs/responses.md, "Background
 * runs"): the call layer's stream with the key's principal (so the key's
 * allowlist, limits and budget apply at start and the ledger charges the
 * one pipeline once), detached from the client, its deltas written through
 * the resumable streams under the response's id (readers on any replica
 * replay them), its progress kept in the ResponseStore under a lease the
 * running replica renews.
 */
export function createBackgroundRuns(options: BackgroundRunsOptions): BackgroundRuns {
  const { calls, streams, state } = options;
  const now = options.now ?? Date.now;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const ttl = () => state.settings().ttlDays * 86_400_000;
  const runs = new Map<string, LocalRun>();

  async function start(job: BackgroundStart): Promise<JsonObject> {
    const { parsed, principal } = job;
    const id = newResponseId();
    const owner = principal?.id ?? "";
    const createdAt = Math.floor(now() / 1000);
    const encoder = createResponseEncoder({ requestModel: parsed.request.model, echo: parsed.echo, param: parsed.param, calls: parsed.calls, background: { createdAt } });
    const snapshot = (): JsonObject => ({ ...encoder.response(), id });
    // The foreground's record builder (stored-record.ts): the same input items, and the turn once the run has ended.
    const recordOf = (response: JsonObject, status: StoredStatus) =>
      storedRecordOf({ response: response as unknown as ResponseObject, owner, input: job.input as ResponsesRequest["input"], ...(parsed.previousId ? { previousId: parsed.previousId } : {}), status });
    let record: StoredResponse = withStatus({ ...recordOf(snapshot(), "queued"), leaseUntil: now() + leaseMs }, "queued");
    const queued = record.response;
    await state.store.put(record, ttl());

    let writes = Promise.resolve();
    /** Records are written in order, one at a time; a failed write is told and the run goes on. */
    /** The run's end: kept cancelled when a replica cancelled it meanwhile, not written when it was deleted. */
    const save = (next: StoredResponse) => {
      record = next;
      writes = writes
        .then(async () => {
          const stored = await state.store.get(id, owner);
          if (!stored) return;
          await state.store.put(stored.status === "cancelled" && next.status !== "cancelled" ? withStatus(next, "cancelled") : next, ttl());
        })
        .catch((error: unknown) => options.onStoreError?.(error));
      return writes;
    };
    let gone = false;
    const controller = new AbortController();
    /**
     * A step short of the end (in progress, a renewed lease), written only
     * while the record is still the run's: deleted, or cancelled by a
     * replica that could not reach the run's stream (before it opened),
     * the run stops instead. (The store has no compare-and-set: a cancel
     * landing between the read and the write is heard at the next renewal
     * or through the stream.)
     */
    const advance = (next: () => StoredResponse) => {
      writes = writes
        .then(async () => {
          const stored = await state.store.get(id, owner);
          if (!stored || stored.status === "cancelled") {
            gone = !stored;
            return controller.abort(CANCELLED());
          }
          if (isTerminalStatus(record.status)) return;
          record = next();
          await state.store.put(record, ttl());
        })
        .catch((error: unknown) => options.onStoreError?.(error));
    };
    const renew = () => advance(() => ({ ...record, leaseUntil: now() + leaseMs }));
    const timer = setInterval(renew, Math.max(1, Math.floor(leaseMs / 3)));
    timer.unref();

    let admitted = false;
    let admit!: () => void;
    let refuse!: (error: unknown) => void;
    const admission = new Promise<void>((resolve, reject) => {
      admit = () => {
        admitted = true;
        resolve();
      };
      refuse = reject;
    });
    let markOpened!: () => void;
    const opened = new Promise<void>((resolve) => {
      markOpened = resolve;
    });

    const run: LocalRun = { controller, opened, done: Promise.resolve() };
    const complete = () => {
      const response = snapshot();
      const status = response.status === "incomplete" ? "incomplete" : "completed";
      const { turn } = recordOf(response, status);
      return save(withStatus({ ...record, response, ...(turn ? { turn } : {}) }, status));
    };
    /**
     * The run's deltas on their way into the resumable stream, folded into
     * the record as they pass. The answer is whole at `finish`, and `finish`
     * enters the stream only once its record is written: a reader on any
     * replica who saw the stream end reads the finished record (as a
     * foreground answer is kept before its terminal event).
     */
    async function* kept(deltas: AsyncGenerator<Delta, void, undefined>): AsyncGenerator<Delta, void, undefined> {
      for await (const delta of deltas) {
        encoder.events(delta, () => undefined);
        if (delta.type === "finish") {
          run.ended = complete();
          await run.ended;
        }
        yield delta;
      }
      // As a whole answer ends: deltas that stop without `finish` end the response completed.
      if (!run.ended) {
        encoder.events({ type: "finish", reason: "unspecified" }, () => undefined);
        run.ended = complete();
        await run.ended;
      }
    }
    const call = calls.stream(
      parsed.request,
      principal,
      { ...job.call, signal: controller.signal },
      {
        heartbeatMs: 0,
        ...(job.cachePolicy ? { cachePolicy: job.cachePolicy } : {}),
        ...(parsed.gatewayTools ? { gatewayTools: parsed.gatewayTools } : {}),
        // Attempts start once every stage admitted the call: the key's limits and budget said yes.
        prepare: async (request, target) => {
          admit();
          return replayForTarget(request, parsed.origins, { provider: target.provider.name, model: target.model }, parsed.request.messages);
        },
      },
    );
    const entries = streams.run({
      start: (signal) => {
        // Cancel from any replica aborts the stream's signal: the call follows it.
        signal.addEventListener("abort", () => controller.abort(signal.reason), { once: true });
        // Folded whole into the record: bounded by limits.maxAnswerBytes, as any answer the gateway holds.
        return kept(renamed(call.whole(), id));
      },
      clientSignal: NEVER,
      ...(principal ? { principal } : {}),
      alias: parsed.request.model,
    });

    const drive = async () => {
      try {
        for await (const { delta } of entries) {
          if (delta.type !== "start") continue;
          admit();
          markOpened();
          advance(() => withStatus({ ...record, response: snapshot(), leaseUntil: now() + leaseMs }, "in_progress"));
        }
      } catch (error) {
        if (!admitted) {
          refuse(error);
          await writes;
          await state.store.delete(id, owner).catch((e: unknown) => options.onStoreError?.(e));
          return;
        }
        // Deleted meanwhile, or the answer was whole before the failure (in settling the call): its record stands.
        if (gone || run.ended) return;
        const failure = toGatewayError(error);
        encoder.failedEvents(failure, () => undefined);
        if (failure.code === "canceled") await save(withStatus({ ...record, response: { ...snapshot(), error: null } }, "cancelled"));
        else await save(withStatus({ ...record, response: snapshot() }, "failed"));
      } finally {
        clearInterval(timer);
        markOpened();
        runs.delete(id);
      }
    };
    runs.set(id, run);
    run.done = drive();
    await admission;
    return queued;
  }

  async function get(id: string, principal: Principal | undefined): Promise<StoredResponse | undefined> {
    await runs.get(id)?.ended;
    const record = await state.store.get(id, principal?.id ?? "");
    if (!record || isTerminalStatus(record.status) || runs.has(id) || record.leaseUntil === undefined || record.leaseUntil > now()) return record;
    // Nobody renewed it: the process that ran it stopped. Said once, and kept so.
    const failed = withStatus(record, "failed", SERVER_RESTARTED);
    await state.store.put(failed, ttl());
    return failed;
  }

  return {
    start,
    get,
    async cancel(id, principal) {
      const record = await get(id, principal);
      if (!record) return undefined;
      if (record.response.background !== true) throw new GatewayError("invalid_request", "only a response created with background: true can be cancelled", { field: "response_id" });
      if (isTerminalStatus(record.status)) return record;
      const local = runs.get(id);
      if (local) {
        local.controller.abort(CANCELLED());
        await local.done;
        return state.store.get(id, principal?.id ?? "");
      }
      // Another replica's run: its stream's control channel stops it; one not yet streaming sees the record at its next renewal.
      await streams.cancel(id, principal).catch(() => undefined);
      const cancelled = withStatus(record, "cancelled");
      await state.store.put(cancelled, ttl());
      return cancelled;
    },
    async opened(id, signal) {
      const local = runs.get(id);
      if (local) return local.opened;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, REMOTE_OPEN_POLL_MS);
        function done() {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          resolve();
        }
        signal.addEventListener("abort", done, { once: true });
      });
    },
    async close() {
      const running = [...runs.values()];
      for (const run of running) run.controller.abort(SHUT_DOWN());
      await Promise.all(running.map((run) => run.done));
    },
  };
}
