import { describe, expect, it } from "vitest";
import type { ContextSettings } from "../../../src/config/config.js";
import type { ChatMessage, ChatRequest } from "../../../src/core/chat-request.js";
import type { Delta } from "../../../src/core/delta.js";
import type { Logger } from "../../../src/logging/logger.js";
import { CONTEXT_HEADER, type ContextDeps, contextStage } from "../../../src/pipeline/stages/context.js";
import type { StreamContext } from "../../../src/pipeline/stream-context.js";
import { fakeCall, request, route, target, text } from "../helpers/fake-call.js";

const SMALL = target("small", { capabilities: { contextWindow: 2_000 } });
const BLIND = target("blind", { capabilities: { vision: false } });
const PLAIN = target("plain");

/** A conversation of `turns` user/assistant pairs of `words` words each after a system prompt: far past SMALL's window. */
function conversation(turns: number, words: number): ChatRequest {
  const filler = "x ".repeat(words);
  const messages: ChatMessage[] = [text("system", "sys")];
  for (let i = 0; i < turns; i++) messages.push(text("user", `q${i} ${filler}`), text("assistant", `a${i} ${filler}`));
  messages.push(text("user", "last question"));
  return request(messages);
}

/** A summarizer reached through the pipeline (a subcall), answering `answer` and keeping what it was asked. */
function summarizer(answer: string) {
  const asked: Array<{ readonly request: ChatRequest; readonly ctx: StreamContext }> = [];
  const warned: unknown[] = [];
  const logger: Pick<Logger, "warn"> = { warn: ((entry: object) => void warned.push(entry)) as Logger["warn"] };
  const deps: ContextDeps = {
    subcall: (req, ctx) => {
      asked.push({ request: req, ctx });
      return (async function* (): AsyncGenerator<Delta> {
        yield { type: "text", text: answer };
        yield { type: "finish", reason: "stop" };
      })();
    },
    logger: logger as Logger,
  };
  return { deps, asked, warned };
}

const settings = (strategy: ContextSettings["strategy"], extra: Partial<ContextSettings> = {}): ContextSettings => ({ strategy, keepSystem: true, keepLastTurns: 1, reserveOutputTokens: 100, ...extra });

describe("context stage", () => {
  it("a request that fits every target goes as it is, on the same route, and says nothing", async () => {
    const aliasRoute = route({ targets: [SMALL, PLAIN] });
    const { call } = fakeCall({ route: aliasRoute });
    const asked = call.request;
    expect(await contextStage(summarizer("").deps).open(call)).toBeUndefined();
    expect(call.request).toBe(asked);
    expect(call.route).toBe(aliasRoute);
    expect(call.summary.headers[CONTEXT_HEADER]).toBeUndefined();
    expect(call.summary.facts.context).toBeUndefined();
    expect(call.summary.record.context).toBeUndefined();
  });

  it("targets that lack what the request needs are dropped from the call's route", async () => {
    const { call } = fakeCall({ route: route({ targets: [BLIND, PLAIN] }), request: request([{ role: "user", content: [{ type: "image_url", url: "data:," }] }]) });
    await contextStage(summarizer("").deps).open(call);
    expect(call.route?.targets).toEqual([PLAIN]);
    expect(call.summary.headers[CONTEXT_HEADER]).toBeUndefined();
  });

  it("a conversation past every window without context settings is refused", async () => {
    const { call } = fakeCall({ route: route({ targets: [SMALL] }), request: conversation(10, 150) });
    await expect(contextStage(summarizer("").deps).open(call)).rejects.toMatchObject({ code: "failed_precondition" });
  });

  it("`truncate`: the oldest turns are dropped, and the header, the access line and the usage record say how many", async () => {
    const long = conversation(10, 150);
    const { call } = fakeCall({ route: route({ targets: [SMALL], context: settings("truncate") }), request: long });
    await contextStage(summarizer("").deps).open(call);
    const said = call.summary.headers[CONTEXT_HEADER]!;
    expect(said).toMatch(/^truncated=\d+$/);
    expect(call.summary.facts.context).toBe(said);
    expect(call.summary.record.context).toBe(said);
    expect(call.request.messages.length).toBeLessThan(long.messages.length);
    expect(call.request.messages[0]).toEqual(long.messages[0]);
    expect(call.request.messages.at(-1)).toEqual(long.messages.at(-1));
  });

  it("`summarize`: old turns summarised by the summarizer alias as a subcall of the same call", async () => {
    const { deps, asked } = summarizer("they talked about x");
    const { call } = fakeCall({ route: route({ targets: [SMALL], context: settings("summarize", { summarizer: "sum", keepLastTurns: 2 }) }), request: conversation(24, 40), ctx: { requestId: "r8" } });
    await contextStage(deps).open(call);
    expect(call.summary.headers[CONTEXT_HEADER]).toMatch(/^summarized=\d+$/);
    expect(call.summary.record.context).toBe(call.summary.headers[CONTEXT_HEADER]);
    expect(asked.length).toBeGreaterThan(0);
    expect(asked[0]!.request.model).toBe("sum");
    expect(asked[0]!.ctx).toMatchObject({ requestId: "r8.summary", edge: "context", signal: call.signal });
    expect(JSON.stringify(call.request)).toContain("they talked about x");
  });

  it("a summarizer that answers nothing: the call goes on truncated, says so, and the failure is logged", async () => {
    const { deps, warned } = summarizer("  ");
    const { call } = fakeCall({ route: route({ targets: [SMALL], context: settings("summarize", { summarizer: "sum", keepLastTurns: 2 }) }), request: conversation(24, 40) });
    await contextStage(deps).open(call);
    expect(call.summary.headers[CONTEXT_HEADER]).toMatch(/^truncated=\d+; summary=failed$/);
    expect(warned).toEqual([expect.objectContaining({ event: "context.summary_failed", requestId: "req-1", alias: "a" })]);
  });
});
