import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AdminService } from "../../gen/sluice/admin/v1/admin_service_pb.js";

export type AdminClient = Client<typeof AdminService>;

/** An AdminService client over gRPC that sends `adminKey` with every call. */
export function adminClient(baseUrl: string, adminKey?: string): AdminClient {
  return createClient(
    AdminService,
    createGrpcTransport({
      baseUrl,
      interceptors:
        adminKey === undefined
          ? []
          : [
              (next) => (req) => {
                req.header.set("authorization", `Bearer ${adminKey}`);
                return next(req);
              },
            ],
    }),
  );
}
