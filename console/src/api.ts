import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { AdminService } from "../../gen/sluice/admin/v1/admin_service_pb.js";
import { ChatService } from "../../gen/sluice/v1/chat_service_pb.js";
import { getKey, type KeyKind } from "./session.js";

/** Adds `authorization: Bearer <key>` from the tab's session, read per call (a key entered later applies at once). */
function bearer(kind: KeyKind): Interceptor {
  return (next) => (req) => {
    const key = getKey(kind);
    if (key) req.header.set("authorization", `Bearer ${key}`);
    return next(req);
  };
}

/**
 * The gateway the page came from, over the Connect protocol on fetch (HTTP/1.1
 * or whatever the browser negotiates), with the same generated code as any
 * other client of sluice.v1 and sluice.admin.v1.
 */
function transport(kind: KeyKind) {
  return createConnectTransport({ baseUrl: window.location.origin, useBinaryFormat: true, interceptors: [bearer(kind)] });
}

export const admin: Client<typeof AdminService> = createClient(AdminService, transport("admin"));
export const chat: Client<typeof ChatService> = createClient(ChatService, transport("api"));
