import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { Components, JsonSchema } from "./json-schema.js";
import { messageSchema } from "./proto-schema.js";
import type { Security } from "./security.js";

/** One Connect RPC as an OpenAPI operation: `POST /<package.Service>/<Method>`. */
export type Operation = Record<string, unknown>;

const ENVELOPED =
  "Connect's streaming framing: each message is preceded by five bytes (a flags byte, then the JSON's length as a big-endian uint32). Shown here as the schema of one message; the body is not plain JSON, so use a Connect client or `buf curl`.";

function unary(method: DescMethod, components: Components): Operation {
  return {
    requestBody: { required: true, content: { "application/json": { schema: messageSchema(method.input, components) } } },
    responses: {
      "200": { description: `${method.output.name}, as protobuf JSON.`, content: { "application/json": { schema: messageSchema(method.output, components) } } },
      default: { $ref: "#/components/responses/ConnectError" },
    },
  };
}

function serverStreaming(method: DescMethod, components: Components): Operation {
  return {
    description: `Server streaming: one request message, then a stream of ${method.output.name} messages ended by an end-of-stream message (\`{"error": …}\` when the stream failed). ${ENVELOPED} gRPC and gRPC-Web serve it too (gRPC over HTTP/2).`,
    "x-sluice-streaming": "server",
    requestBody: { required: true, content: { "application/connect+json": { schema: messageSchema(method.input, components) } } },
    responses: {
      "200": { description: `A stream of ${method.output.name} (enveloped), then the end-of-stream message.`, content: { "application/connect+json": { schema: messageSchema(method.output, components) } } },
      default: { $ref: "#/components/responses/ConnectError" },
    },
  };
}

/**
 * The operations of the Connect services the port serves, from their
 * descriptors (gen/), so a method added to the proto is described with it.
 * Unary methods are plain HTTP POSTs of JSON (Connect's unary protocol);
 * server-streaming ones are described with their framing. Client and bidi
 * streaming need HTTP/2 and are left out (none is served today).
 */
export function rpcPaths(services: readonly { readonly service: DescService; readonly security: (method: DescMethod) => Security }[], components: Components): Record<string, Record<string, Operation>> {
  const paths: Record<string, Record<string, Operation>> = {};
  for (const { service, security } of services) {
    for (const method of service.methods) {
      if (method.methodKind !== "unary" && method.methodKind !== "server_streaming") continue;
      const operation = method.methodKind === "unary" ? unary(method, components) : serverStreaming(method, components);
      paths[`/${service.typeName}/${method.name}`] = {
        post: {
          operationId: `${service.typeName}.${method.name}`,
          tags: [service.typeName],
          summary: `${service.name}.${method.name}`,
          ...(method.deprecated ? { deprecated: true } : {}),
          security: security(method),
          ...operation,
        },
      };
    }
  }
  return paths;
}

/** The Connect protocol's error body, which every RPC answers a failure with (HTTP status from its code). */
export const CONNECT_ERROR: JsonSchema = {
  type: "object",
  required: ["code"],
  properties: {
    code: {
      type: "string",
      enum: [
        "canceled",
        "unknown",
        "invalid_argument",
        "deadline_exceeded",
        "not_found",
        "already_exists",
        "permission_denied",
        "resource_exhausted",
        "failed_precondition",
        "aborted",
        "out_of_range",
        "unimplemented",
        "internal",
        "unavailable",
        "data_loss",
        "unauthenticated",
      ],
    },
    message: { type: "string" },
    details: {
      type: "array",
      description: "google.rpc.ErrorInfo and the like: `type`, the base64 protobuf `value`, and its JSON form in `debug`.",
      items: { type: "object", properties: { type: { type: "string" }, value: { type: "string", contentEncoding: "base64" }, debug: {} } },
    },
  },
};
