import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport, type GrpcTransportOptions } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { Health, type HealthCheckRequest, HealthCheckRequestSchema, type HealthCheckResponse, HealthCheckResponseSchema, HealthCheckResponse_ServingStatus as ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";

export { ServingStatus };

export function connectHealth(baseUrl: string, options: Partial<GrpcTransportOptions> = {}): Client<typeof Health> {
  return createClient(Health, createGrpcTransport({ ...options, baseUrl }));
}

const request = (service: string) => Buffer.from(toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, { service })));
const response = (bytes: Buffer) => fromBinary(HealthCheckResponseSchema, bytes);

/**
 * grpc-js as health clients use it (grpc-health-probe, client-side health
 * checking): a generic client, protobuf-es only for the bytes.
 */
export function grpcJsHealth(address: string, credentials = grpc.credentials.createInsecure(), options: grpc.ClientOptions = {}) {
  const client = new grpc.Client(address, credentials, options);
  return {
    check(service: string): Promise<ServingStatus> {
      return new Promise((resolve, reject) => {
        client.makeUnaryRequest<HealthCheckRequest, HealthCheckResponse>(
          "/grpc.health.v1.Health/Check",
          (m) => Buffer.from(toBinary(HealthCheckRequestSchema, m)),
          response,
          create(HealthCheckRequestSchema, { service }),
          (error, value) => (error ? reject(error) : resolve(value!.status)),
        );
      });
    },
    /** A Watch call: statuses as they arrive, and how the call ended. */
    watch(service: string, metadata = new grpc.Metadata()) {
      const call = client.makeServerStreamRequest<Buffer, HealthCheckResponse>("/grpc.health.v1.Health/Watch", (b) => b, response, request(service), metadata);
      const statuses: ServingStatus[] = [];
      const listeners = new Set<() => void>();
      call.on("data", (m: HealthCheckResponse) => {
        statuses.push(m.status);
        for (const l of listeners) l();
      });
      const ended = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
      call.on("error", () => undefined); // the status event carries the outcome
      return {
        call,
        statuses,
        ended,
        /** Resolves once `count` statuses have arrived. */
        received(count: number): Promise<ServingStatus[]> {
          return new Promise((resolve) => {
            const check = () => {
              if (statuses.length < count) return;
              listeners.delete(check);
              resolve(statuses.slice());
            };
            listeners.add(check);
            check();
          });
        },
      };
    },
    close: () => client.close(),
  };
}
