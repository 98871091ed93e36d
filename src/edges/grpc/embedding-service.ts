import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { EmbeddingSchema, type EmbeddingService, EmbedResponseSchema, type EmbedRequest as ProtoEmbedRequest } from "../../../gen/sluice/v1/embedding_service_pb.js";
import type { CallLayer } from "../../call/call-layer.js";
import { type EmbedRequest, validateEmbedRequest } from "../../core/embed-request.js";
import { GatewayError } from "../../core/errors.js";
import { parseTagsHeader, TAGS_HEADER } from "../../tenancy/tags.js";
import { toConnectError } from "./connect-errors.js";
import { callerOf, deadlineOf, exchangeOf, pipelineSignal, setQuota } from "./handler-call.js";

/** The canonical request of an Embed call, checked (fields named as in the proto). */
export function embedRequestFromProto(req: ProtoEmbedRequest): EmbedRequest {
  const inputs = req.inputs.map((input, i) => {
    switch (input.input.case) {
      case "text":
        return input.input.value;
      case "tokens":
        return input.input.value.ids;
      default:
        throw new GatewayError("invalid_request", `inputs[${i}]: set text or tokens`, { field: `inputs[${i}]` });
    }
  });
  const userId = req.metadata?.userId;
  return validateEmbedRequest({ model: req.model, inputs, ...(req.dimensions === undefined ? {} : { dimensions: req.dimensions }), ...(userId ? { user: userId } : {}) }, { inputs: "inputs", dimensions: "dimensions" });
}

/** sluice.v1.EmbeddingService over gRPC, gRPC-Web and Connect. */
export function createEmbeddingService(calls: CallLayer): ServiceImpl<typeof EmbeddingService> {
  return {
    async embed(req, ctx) {
      const link = pipelineSignal(ctx);
      try {
        const principal = await callerOf(calls, ctx);
        const request = embedRequestFromProto(req);
        const tags = parseTagsHeader(ctx.requestHeader.get(TAGS_HEADER) ?? undefined);
        const call = calls.embed(request, principal, { ...exchangeOf(ctx), edge: "grpc-embed", signal: link.signal, ...deadlineOf(ctx), tags });
        try {
          const result = await call.result;
          setQuota(ctx, call.quota());
          return create(EmbedResponseSchema, {
            embeddings: result.vectors.map((vector) => create(EmbeddingSchema, { values: Array.from(vector) })),
            model: request.model,
            provider: result.provider,
            providerModel: result.model,
            inputTokens: BigInt(result.inputTokens),
            estimated: result.estimated,
          });
        } catch (error) {
          setQuota(ctx, call.quota());
          throw error;
        }
      } catch (error) {
        throw toConnectError(error);
      } finally {
        link.release();
      }
    },
  };
}
