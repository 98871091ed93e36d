import type { LineExecutor } from "../../batch/batch-runner.js";
import { randomHex, type LineResult, type PendingLine, type StoredBatch } from "../../batch/batch-store.js";
import type { CallContext, CallLayer } from "../../call/call-layer.js";
import { GatewayError, toGatewayError } from "../../core/errors.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Principal } from "../../tenancy/principal.js";
import { fromResult } from "../sse/http-call.js";
import { embedRequestFromOpenAi, openAiEmbeddingsBody } from "./embeddings.js";
import { chatRequestFromOpenAi } from "./from-openai.js";
import { toOpenAiError } from "./http-errors.js";
import { completionFromResult } from "./to-openai.js";

/** The tag each line's usage record carries (kept when `batch_id` is in auth.tagKeys). */
export const BATCH_TAG = "batch_id";

const wholeCompletion = fromResult(completionFromResult, () => []);

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
  return (await wholeCompletion(stream.whole())).body;
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
}): LineExecutor {
  return {
    async run(batch, line, signal) {
      const id = `batch_req_${randomHex()}`;
      const call: CallContext = { requestId: id, edge: "openai-batch", signal, tags: { [BATCH_TAG]: batch.id }, background: true };
      try {
        const principal = batch.owner === "" ? undefined : options.principalOf(batch.owner);
        if (batch.owner !== "" && !principal) throw new GatewayError("unauthenticated", "the key that created this batch is no longer configured");
        const body = await answer(batch, JSON.parse(line.body) as unknown, principal, call, options.calls, options.limits);
        return { result: { ok: true, text: outputLine(id, line.customId, { status_code: 200, body }, null) } };
      } catch (error) {
        const refused = toOpenAiError(error);
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
