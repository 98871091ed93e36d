import type { LineExecutor } from "../../batch/batch-runner.js";
import { type LineResult, type PendingLine, randomHex, type StoredBatch } from "../../batch/batch-store.js";
import type { CallContext, CallLayer } from "../../call/call-layer.js";
import { GatewayError, toGatewayError } from "../../core/errors.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Logger } from "../../logging/logger.js";
import type { Principal } from "../../tenancy/principal.js";
import { fromResult } from "../sse/http-call.js";
import { embedRequestFromOpenAi, openAiEmbeddingsBody } from "./embeddings.js";
import { chatRequestFromOpenAi } from "./from-openai.js";
import { toOpenAiError } from "./http-errors.js";
import { completionFromResult } from "./to-openai.js";

/** The tag each line's usage record carries (kept when `batch_id` is in auth.tagKeys). */
export const BATCH_TAG = "batch_id";

/** One output-file line: `{id, custom_id, response: {status_code, request_id, body}, error}`, as OpenAI writes them. */
function outputLine(id: string, customId: string, response: { status_code: number; body: unknown } | null, error: { code: string; message: string } | null): string {
  return JSON.stringify({ id, custom_id: customId, response: response ? { status_code: response.status_code, request_id: id, body: response.body } : null, error });
}

/** The OpenAI response body of one line's request, run through the call layer as the interactive route runs it (not streamed). */
async function answer(batch: StoredBatch, body: unknown, principal: Principal | undefined, call: CallContext, calls: CallLayer, limits: StructureLimits): Promise<unknown> {
  if (batch.endpoint === "/v1/embeddings") {
    const { request, encoding } = embedRequestFromOpenAi(body);
    const result = await calls.embed(request, principal, call).result;
    return openAiEmbeddingsBody(result, request.model, encoding);
  }
  const parsed = chatRequestFromOpenAi(body, limits);
  const stream = calls.stream(parsed.request, principal, call, { heartbeatMs: 0 });
  const whole = fromResult(
    (result) => completionFromResult(result, parsed.request.model),
    () => [],
  );
  return (await whole(stream.whole())).body;
}

/**
 * One access line per batch line, as every HTTP request has one: edge
 * `openai-batch`, the line's request id (the output file's `id`), the
 * batch, the status the line's result carries and the call's summary.
 * The line's own `custom_id` is the client's text and stays out.
 */
function writeBatchAccessLine(
  logger: Logger | undefined,
  line: { readonly id: string; readonly batch: StoredBatch; readonly status: number; readonly code: string; readonly startedAt: number; readonly fields: Record<string, unknown> },
): void {
  logger?.info({
    event: "access",
    requestId: line.id,
    edge: "openai-batch",
    route: line.batch.endpoint,
    method: "POST",
    batchId: line.batch.id,
    status: line.status,
    code: line.code,
    durationMs: Math.round((performance.now() - line.startedAt) * 10) / 10,
    ...line.fields,
  });
}

/**
 * How the batch runner runs a line: as the batch owner's key, through the
 * call layer (the key's allowlist, limits, budget, usage record, PII
 * policy and routing, as for `POST /v1/chat/completions` or
 * `/v1/embeddings`), the answer folded into the body the non-streaming
 * route sends. A refused or failed request is the line's result in the
 * error file, with the HTTP status and OpenAI error body the route would
 * have answered; a budget refusal also stops the batch.
 */
export function createBatchLineExecutor(options: {
  readonly calls: CallLayer;
  readonly limits: StructureLimits;
  /** The key behind an owner (its SHA-256), as configured now; undefined when it is gone. */
  readonly principalOf: (sha256: string) => Principal | undefined;
  /** Where each line's access line goes. */
  readonly logger?: Logger;
}): LineExecutor {
  return {
    async run(batch, line, signal) {
      const id = `batch_req_${randomHex()}`;
      // The call's summary (alias, provider, model, tokens, outcome) lands here, as an HTTP exchange's fields do.
      const fields: Record<string, unknown> = {};
      const call: CallContext = { requestId: id, edge: "openai-batch", signal, tags: { [BATCH_TAG]: batch.id }, background: true, fields };
      const startedAt = performance.now();
      const access = (status: number, code: string) => writeBatchAccessLine(options.logger, { id, batch, status, code, startedAt, fields });
      try {
        const principal = batch.owner === "" ? undefined : options.principalOf(batch.owner);
        if (principal) fields.key = principal.name;
        if (batch.owner !== "" && !principal) throw new GatewayError("unauthenticated", "the key that created this batch is no longer configured");
        const body = await answer(batch, JSON.parse(line.body) as unknown, principal, call, options.calls, options.limits);
        access(200, "ok");
        return { result: { ok: true, text: outputLine(id, line.customId, { status_code: 200, body }, null) } };
      } catch (error) {
        const refused = toOpenAiError(error);
        access(refused.status, toGatewayError(error).code);
        return {
          result: { ok: false, text: outputLine(id, line.customId, { status_code: refused.status, body: refused.body }, null) },
          stop: toGatewayError(error).code === "budget_exceeded",
        };
      }
    },
    notRun(_batch: StoredBatch, line: PendingLine): LineResult {
      const error = { code: "budget_exceeded", message: "not run: an earlier line of this batch was refused for the key's budget" };
      return { ok: false, text: outputLine(`batch_req_${randomHex()}`, line.customId, null, error) };
    },
  };
}
