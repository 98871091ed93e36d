import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { AdminService } from "../../gen/sluice/admin/v1/admin_service_pb.js";
import { ChatService, type ListModelsResponse } from "../../gen/sluice/v1/chat_service_pb.js";
import { getKey, type KeyKind } from "./session.js";

/**
 * Adds `authorization: Bearer <key>` with the first of `kinds` the tab's
 * session holds, read per call (a key entered later applies at once).
 */
function bearer(kinds: readonly KeyKind[]): Interceptor {
  return (next) => (req) => {
    const key = kinds.map((kind) => getKey(kind)).find((k) => k !== undefined);
    if (key) req.header.set("authorization", `Bearer ${key}`);
    return next(req);
  };
}

/**
 * The gateway the page came from, over the Connect protocol on fetch (HTTP/1.1
 * or whatever the browser negotiates), with the same generated code as any
 * other client of sluice.v1 and sluice.admin.v1.
 */
function transport(kinds: readonly KeyKind[]) {
  return createConnectTransport({ baseUrl: window.location.origin, useBinaryFormat: true, interceptors: [bearer(kinds)] });
}

export const admin: Client<typeof AdminService> = createClient(AdminService, transport(["admin"]));
export const chat: Client<typeof ChatService> = createClient(ChatService, transport(["api"]));

/**
 * The aliases to pick from: with the API key when one is given (the ones it
 * may use), else with the admin key, which the gateway lets list every
 * alias but not stream: chat still needs a virtual key.
 */
const catalog: Client<typeof ChatService> = createClient(ChatService, transport(["api", "admin"]));
export function listModels(): Promise<ListModelsResponse> {
  return catalog.listModels({});
}
