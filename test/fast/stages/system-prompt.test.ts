import { describe, expect, it } from "vitest";
import { systemPromptStage } from "../../../src/pipeline/stages/system-prompt.js";
import { fakeCall, request, route, text } from "../helpers/fake-call.js";

const SYSTEM = text("system", "be brief");

describe("system-prompt stage", () => {
  it("puts the alias's systemPrompt first in the request and in the cache key", async () => {
    const asked = request([text("system", "caller's own"), text("user", "hi")]);
    const { call } = fakeCall({ route: route({ systemPrompt: "be brief" }), request: asked });
    expect(await systemPromptStage().open(call)).toBeUndefined();
    expect(call.request.messages).toEqual([SYSTEM, ...asked.messages]);
    expect(call.cacheRequest?.messages).toEqual([SYSTEM, ...asked.messages]);
    expect(asked.messages).toHaveLength(2);
  });

  it("keys the cache by its own request (the screened one), not by what goes upstream", async () => {
    const { call } = fakeCall({ route: route({ systemPrompt: "be brief" }), request: request([text("user", "<EMAIL_1>")]) });
    call.cacheRequest = request([text("user", "[email]")]);
    await systemPromptStage().open(call);
    expect(call.request.messages).toEqual([SYSTEM, text("user", "<EMAIL_1>")]);
    expect(call.cacheRequest.messages).toEqual([SYSTEM, text("user", "[email]")]);
  });

  it("a call the cache may not key stays uncached", async () => {
    const { call } = fakeCall({ route: route({ systemPrompt: "be brief" }) });
    call.cacheRequest = undefined;
    await systemPromptStage().open(call);
    expect(call.cacheRequest).toBeUndefined();
    expect(call.request.messages[0]).toEqual(SYSTEM);
  });

  it("without the setting the request is untouched", async () => {
    const { call } = fakeCall();
    const before = call.request;
    expect(await systemPromptStage().open(call)).toBeUndefined();
    expect(call.request).toBe(before);
    expect(call.cacheRequest).toBe(before);
  });
});
