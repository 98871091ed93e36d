import { describe, expect, it } from "vitest";
import { NO_POLICY } from "../../../src/compliance/pii-policy.js";
import { messageText } from "../../../src/core/chat-request.js";
import type { Delta } from "../../../src/core/delta.js";
import type { DeltaSink } from "../../../src/core/delta-sink.js";
import { redactStage } from "../../../src/pipeline/stages/redact.js";
import type { Principal } from "../../../src/tenancy/principal.js";
import { fakeCall, request, route, text } from "../helpers/fake-call.js";

const EMAIL = "jane.doe@example.com";
const WITH_EMAIL = request([text("user", `write to ${EMAIL} please`)]);

/** A sink that keeps what reaches it. */
function keeping() {
  const got: Delta[] = [];
  const sink: DeltaSink<Delta> = { push: (d) => got.push(d) > 0, end: () => undefined };
  return { sink, got };
}

describe("redact stage", () => {
  it("under no policy the call is untouched and there is no part", async () => {
    const { call } = fakeCall({ routed: false, request: WITH_EMAIL });
    const screened = call.screened;
    expect(await redactStage().open(call)).toBeUndefined();
    expect(call.request).toBe(WITH_EMAIL);
    expect(call.cacheRequest).toBe(WITH_EMAIL);
    expect(call.screened).toBe(screened);
    expect(call.restored).toBe(false);
  });

  it("under `redact` (the alias's policy): placeholders go upstream and into the cache key, and the part's wrap restores the answer", async () => {
    const { call } = fakeCall({ routed: false, route: route({ pii: { mode: "redact" } }), request: WITH_EMAIL });
    const part = await redactStage().open(call);
    const sent = messageText(call.request.messages[0]!);
    expect(sent).not.toContain(EMAIL);
    expect(call.screened.found).toEqual({ email: 1 });
    expect(call.screened.policy.mode).toBe("redact");
    expect(call.cacheRequest).toBeDefined();
    expect(JSON.stringify(call.cacheRequest)).not.toContain(EMAIL);
    expect(call.restored).toBe(true);
    const placeholder = /<[A-Z_]+_\d+>/.exec(sent)![0];
    const { sink, got } = keeping();
    const restoring = part!.wrap!(sink);
    restoring.push({ type: "text", text: `sent to ${placeholder}.` }, false);
    restoring.end();
    expect(got.map((d) => (d.type === "text" ? d.text : "")).join("")).toBe(`sent to ${EMAIL}.`);
  });

  it("a key's policy applies too; under `block` the request is kept as written, uncached, and refused later (compliance)", async () => {
    const key: Principal = { name: "k", id: "kkkkkkkkkkkk", sha256: "k".repeat(64), source: "config", limits: {}, pii: { mode: "block" } };
    const { call } = fakeCall({ routed: false, request: WITH_EMAIL, ctx: { principal: key } });
    expect(await redactStage().open(call)).toBeUndefined();
    expect(call.request).toBe(WITH_EMAIL);
    expect(call.cacheRequest).toBeUndefined();
    expect(call.screened.found).toEqual({ email: 1 });
    expect(call.restored).toBe(false);
  });

  it("a clean request under a policy keeps its request and cache key, with the policy recorded", async () => {
    const { call } = fakeCall({ routed: false, route: route({ pii: { mode: "redact" } }) });
    const asked = call.request;
    expect(await redactStage().open(call)).toBeUndefined();
    expect(call.request).toBe(asked);
    expect(call.cacheRequest).toBe(asked);
    expect(call.screened.policy).not.toBe(NO_POLICY);
    expect(call.screened.found).toBeUndefined();
  });

  it("a long prompt is screened in slices (asynchronously) with the same result", async () => {
    const long = request([text("user", `${"filler words ".repeat(40_000)} write to ${EMAIL}`)]);
    const { call } = fakeCall({ routed: false, route: route({ pii: { mode: "redact" } }), request: long });
    const opening = redactStage().open(call);
    expect(opening).toBeInstanceOf(Promise);
    const part = await opening;
    expect(call.screened.found).toEqual({ email: 1 });
    expect(part?.wrap).toBeTypeOf("function");
  });
});
