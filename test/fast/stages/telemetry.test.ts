import { describe, expect, it } from "vitest";
import { NO_POLICY } from "../../../src/compliance/pii-policy.js";
import type { Delta } from "../../../src/core/delta.js";
import { GatewayError } from "../../../src/core/errors.js";
import type { StreamObserver } from "../../../src/flow/observer.js";
import { QUIET_OBSERVER } from "../../../src/pipeline/quiet-observer.js";
import { telemetryStage } from "../../../src/pipeline/stages/telemetry.js";
import type { StreamTelemetryRequest, Telemetry } from "../../../src/telemetry/telemetry.js";
import { fakeCall, request } from "../helpers/fake-call.js";

/** Telemetry whose streams record what they are told. */
function fakeTelemetry() {
  const asked: StreamTelemetryRequest[] = [];
  const heard: Array<Delta | { ended: GatewayError | undefined }> = [];
  const observer: StreamObserver = { ...QUIET_OBSERVER, delta: (d) => void heard.push(d), ended: (error) => void heard.push({ ended: error }) };
  const telemetry: Pick<Telemetry, "stream"> = {
    stream(req) {
      asked.push(req);
      return observer;
    },
  };
  return { telemetry: telemetry as Telemetry, asked, heard, observer };
}

describe("telemetry stage", () => {
  it("opens the stream's observer on the call, with the call's facts, and forwards taps and the end", async () => {
    const { telemetry, asked, heard, observer } = fakeTelemetry();
    const { call } = fakeCall({ routed: false, ctx: { requestId: "r9", edge: "grpc" } });
    const part = await telemetryStage(telemetry).open(call);
    expect(call.observer).toBe(observer);
    expect(asked).toEqual([{ requestId: "r9", edge: "grpc", alias: "a", request: call.request, facts: call.summary.facts }]);
    expect(asked[0]!.facts).toBe(call.summary.facts);
    const delta: Delta = { type: "text", text: "x" };
    part?.tap?.(delta);
    const failure = new GatewayError("canceled", "gone");
    part?.end?.({ failure });
    expect(heard).toEqual([delta, { ended: failure }]);
  });

  it("names an alias the configuration has not `unknown`, says embeddings, and withholds the content of a call kept local", async () => {
    const { telemetry, asked } = fakeTelemetry();
    const { call } = fakeCall({ routed: false, operation: "embeddings", request: request(undefined, { model: "free text" }) });
    call.screened = { ...call.screened, policy: { ...NO_POLICY, localOnly: true, keptLocal: true } };
    await telemetryStage(telemetry).open(call);
    expect(asked[0]).toMatchObject({ alias: "unknown", operation: "embeddings", withholdContent: true });
  });

  it("an end without failure is told as a completed stream", async () => {
    const { telemetry, heard } = fakeTelemetry();
    const part = await telemetryStage(telemetry).open(fakeCall({ routed: false }).call);
    part?.end?.({ cut: { reason: "max_tokens", finish: "length" } });
    expect(heard).toEqual([{ ended: undefined }]);
  });
});
