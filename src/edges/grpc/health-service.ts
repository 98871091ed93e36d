import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { type Health, type HealthCheckResponse, HealthCheckResponseSchema, HealthListResponseSchema, HealthCheckResponse_ServingStatus as ServingStatus } from "../../../gen/grpc/health/v1/health_pb.js";
import type { HealthState } from "../../health/health-state.js";

/** Longest service name repeated back in a NOT_FOUND message. */
const MAX_ECHOED_NAME = 200;

/**
 * grpc.health.v1.Health: Kubernetes gRPC probes, grpc-health-probe and
 * load balancers ask it whether the gateway takes new work. The server as
 * a whole ("") and each listed service read SERVING while the gateway is
 * ready and NOT_SERVING from the start of a drain on, the same moment
 * `/readyz` turns 503. `Watch` sends the current status, then every change;
 * it ends (status OK) when the server closes or the client cancels, so a
 * watcher is never cut off by a reset.
 */
export function createHealthService(state: HealthState, services: readonly string[]): ServiceImpl<typeof Health> {
  const known = ["", ...services];
  const statusOf = (service: string): ServingStatus | undefined => {
    if (!known.includes(service)) return undefined;
    return state.ready ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
  };
  const response = (status: ServingStatus): HealthCheckResponse => create(HealthCheckResponseSchema, { status });

  return {
    check(req) {
      const status = statusOf(req.service);
      if (status === undefined) {
        throw new ConnectError(`service "${req.service.slice(0, MAX_ECHOED_NAME)}" is not served here`, Code.NotFound);
      }
      return response(status);
    },

    list() {
      return create(HealthListResponseSchema, {
        statuses: Object.fromEntries(known.map((name) => [name, response(statusOf(name)!)])),
      });
    },

    async *watch(req, ctx) {
      let sent: ServingStatus | undefined;
      for (;;) {
        const status = statusOf(req.service) ?? ServingStatus.SERVICE_UNKNOWN;
        if (status !== sent) {
          sent = status;
          yield response(status);
        }
        // A deadline must end the call as DEADLINE_EXCEEDED, not OK.
        ctx.signal.throwIfAborted();
        if (state.closed) return;
        await state.changed(ctx.signal);
      }
    },
  };
}
