import { describe, expect, it } from "vitest";
import type { GatewayError } from "../../../src/core/errors.js";
import { routeStage } from "../../../src/pipeline/stages/route.js";
import { fakeCall, request, route } from "../helpers/fake-call.js";

describe("route stage", () => {
  it("sets the alias's route from the call's configuration and leaves no part", async () => {
    const aliasRoute = route();
    const { call } = fakeCall({ route: aliasRoute, routed: false });
    expect(await routeStage().open(call)).toBeUndefined();
    expect(call.route).toBe(aliasRoute);
  });

  it("refuses an alias the configuration has not with unknown_model", () => {
    const { call } = fakeCall({ routed: false, request: request(undefined, { model: "nope" }) });
    expect(() => routeStage().open(call)).toThrow(expect.objectContaining({ code: "unknown_model" }) as GatewayError);
    expect(call.route).toBeUndefined();
  });
});
