import { describe, expect, it } from "vitest";
import { exactCacheKeys } from "../../src/cache/cache-key.js";
import { policyFor } from "../../src/compliance/pii-policy.js";
import { createPiiVault } from "../../src/compliance/pii-vault.js";
import { cacheViewOf, redactArguments, redactRequest } from "../../src/compliance/redact-request.js";
import { restoringSink } from "../../src/compliance/restoring-sink.js";
import { enforce, screenRequest } from "../../src/compliance/screen-request.js";
import { resolveConfig } from "../../src/config/config.js";
import type { ChatRequest } from "../../src/core/chat-request.js";
import type { Delta } from "../../src/core/delta.js";
import type { DeltaSink } from "../../src/core/delta-sink.js";
import { GatewayError } from "../../src/core/errors.js";
import type { Principal } from "../../src/tenancy/principal.js";

const config = resolveConfig(
  {
    compliance: { patterns: [{ name: "employee", pattern: "EMP-\\d{6}" }] },
    auth: {
      teams: [
        { name: "legal", pii: { mode: "block" } },
        { name: "ops", localOnly: true },
      ],
      keys: [
        { name: "k", sha256: "a".repeat(64), pii: { mode: "redact", detectors: ["email"] } },
        { name: "kl", sha256: "b".repeat(64), team: "legal", pii: { mode: "redact" } },
      ],
    },
    providers: { cloud: { kind: "openai", baseUrl: "http://127.0.0.1:1" }, box: { kind: "openai", baseUrl: "http://127.0.0.1:2", local: true } },
    models: {
      plain: { provider: "cloud", model: "m" },
      custom: { provider: "cloud", model: "m", pii: { mode: "redact", detectors: ["employee", "phone"] } },
      mixed: {
        targets: [
          { provider: "cloud", model: "m" },
          { provider: "box", model: "n" },
          { provider: "cloud", model: "o", local: true },
        ],
      },
    },
  },
  {},
);

const principal = (name: string, extra: Partial<Principal> = {}): Principal => ({ ...config.auth.keys.find((k) => k.name === name)!, source: "config", id: name, ...extra });
const route = (alias: string) => config.models.get(alias)!;

function request(...texts: string[]): ChatRequest {
  return { model: "plain", messages: texts.map((text) => ({ role: "user", content: [{ type: "text", text }] })), tools: [], sampling: { stop: [] }, metadata: { labels: {} } };
}

describe("the policy of a request: the strictest of its key's, team's and alias's", () => {
  it("a key alone: its mode and its detectors", () => {
    const policy = policyFor(config, principal("k"), route("plain"));
    expect(policy.mode).toBe("redact");
    expect([...policy.kinds]).toEqual(["email"]);
  });

  it("a team's block beats the key's redact, and the detectors of both apply", () => {
    const policy = policyFor(config, principal("kl"), route("plain"));
    expect(policy.mode).toBe("block");
    expect(policy.kinds.has("card")).toBe(true);
  });

  it("a custom pattern applies only where a policy names it", () => {
    expect(policyFor(config, undefined, route("custom")).custom.map((d) => d.kind)).toEqual(["employee"]);
    expect(policyFor(config, principal("k"), route("plain")).custom).toEqual([]);
    const screened = screenRequest(request("ask EMP-123456 or call (415) 555-2671"), policyFor(config, undefined, route("custom")));
    expect(screened.request.messages[0]!.content[0]).toEqual({ type: "text", text: "ask <EMPLOYEE_1> or call <PHONE_1>" });
  });

  it("a local-only team keeps every request of its keys on local targets: a target's own flag, or its provider's", () => {
    const policy = policyFor(config, principal("k", { team: "ops" }), route("mixed"));
    expect(policy.localOnly).toBe(true);
    const chosen = enforce(screenRequest(request("hello"), policy), route("mixed"));
    expect(chosen.targets.map((t) => t.key)).toEqual(["box/n", "cloud/o"]);
  });

  it("with no policy anywhere, nothing is looked for", () => {
    const policy = policyFor(config, undefined, route("plain"));
    expect(policy.mode).toBe("off");
    expect(screenRequest(request("mail a@example.com"), policy).found).toBeUndefined();
  });
});

describe("screening and enforcement", () => {
  const block = policyFor(config, principal("kl"), route("plain"));

  it("block names the kinds, sorted, and never a value", () => {
    const screened = screenRequest(request("card 4111111111111111 and mail x@example.org"), block);
    let refusal: unknown;
    try {
      enforce(screened, route("plain"));
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(GatewayError);
    expect((refusal as GatewayError).code).toBe("invalid_request");
    expect((refusal as GatewayError).message).toContain("(card, email)");
    expect((refusal as GatewayError).message).not.toContain("x@example.org");
  });

  it("a local-only request with PII on an alias without local targets is a failed precondition", () => {
    const policy = { ...block, mode: "local-only" as const };
    expect(() => enforce(screenRequest(request("x@example.org"), policy), route("plain"))).toThrow(/no local target/);
    expect(enforce(screenRequest(request("nothing here"), policy), route("plain"))).toBe(route("plain"));
  });

  it("a local-only request is never cached (its answer may hold the values); a redacted one is, by placeholders and a digest", () => {
    expect(screenRequest(request("x@example.org"), { ...block, mode: "local-only" }).cacheRequest).toBeUndefined();
    const redact = { ...block, mode: "redact" as const };
    const a = screenRequest(request("mail x@example.org"), redact).cacheRequest!;
    const b = screenRequest(request("mail y@example.org"), redact).cacheRequest!;
    const again = screenRequest(request("mail x@example.org"), redact).cacheRequest!;
    expect(exactCacheKeys(a, "s").id).not.toBe(exactCacheKeys(b, "s").id);
    expect(exactCacheKeys(a, "s").id).toBe(exactCacheKeys(again, "s").id);
    expect(JSON.stringify(a)).not.toContain("x@example.org");
  });
});

describe("redacting every text a provider reads", () => {
  const policy = policyFor(config, principal("kl"), route("plain"));

  it("system, turns and tool results; tool-call arguments stay JSON, a number that is PII becomes its placeholder", () => {
    const asked: ChatRequest = {
      ...request(),
      messages: [
        { role: "system", content: [{ type: "text", text: "Operator: ops@example.com" }] },
        { role: "assistant", content: [], toolCalls: [{ id: "c1", name: "lookup", arguments: JSON.stringify({ email: "ops@example.com", phone: 4155552671, n: 3 }) }] },
        { role: "tool", toolCallId: "c1", content: [{ type: "text", text: "card 4111-1111-1111-1111" }] },
        { role: "assistant", content: [{ type: "reasoning", text: "about ops@example.com", signature: "sig" }] },
      ],
    };
    const { request: sent, vault } = redactRequest(asked, { ...policy, kinds: new Set([...policy.kinds]) });
    expect(sent.messages[0]!.content[0]).toEqual({ type: "text", text: "Operator: <EMAIL_1>" });
    expect(JSON.parse(sent.messages[1]!.toolCalls![0]!.arguments)).toEqual({ email: "<EMAIL_1>", phone: 4155552671, n: 3 });
    expect(sent.messages[2]!.content[0]).toEqual({ type: "text", text: "card <CARD_1>" });
    // Signed reasoning is replayed as the provider signed it.
    expect(sent.messages[3]).toBe(asked.messages[3]);
    expect(vault.counts).toEqual({ email: 2, card: 1 });
  });

  it("adjacent text parts are screened as one: a value split across them is found, its placeholder where it starts", () => {
    const asked: ChatRequest = {
      ...request(),
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "mail ops@exa" },
            { type: "text", text: "mple.com" },
            { type: "text", text: " today" },
            { type: "image_url", url: "data:image/png;base64,AAAA" },
            { type: "text", text: "and x@example.org" },
          ],
        },
      ],
    };
    const { request: sent } = redactRequest(asked, policy);
    // The part left empty is dropped (providers refuse empty text blocks); the image still divides the runs.
    expect(sent.messages[0]!.content).toEqual([
      { type: "text", text: "mail <EMAIL_1>" },
      { type: "text", text: " today" },
      { type: "image_url", url: "data:image/png;base64,AAAA" },
      { type: "text", text: "and <EMAIL_2>" },
    ]);
  });

  it("a name or a URL that holds personal data cannot carry a placeholder: redact refuses, naming the field and not the value", () => {
    const asked: ChatRequest = {
      ...request("look it up"),
      messages: [
        {
          role: "user",
          name: "13812345678",
          content: [
            { type: "text", text: "see https://example.org/u?mail=x@example.org" },
            { type: "image_url", url: "https://example.org/u?mail=x@example.org" },
          ],
        },
      ],
    };
    const redact = { ...policy, mode: "redact" as const };
    const screened = screenRequest(asked, redact);
    expect(screened.unplaceable).toEqual(["messages[0].name", "messages[0].content[1].image_url.url"]);
    expect(() => enforce(screened, route("plain"))).toThrow(expect.objectContaining({ code: "invalid_request", message: expect.not.stringContaining("x@example.org") }));
    // block and local-only act on what was found there as on any finding.
    expect(screenRequest(asked, policy).found).toMatchObject({ phone: 1, email: 2 });
  });

  it("arguments that are not JSON are redacted as text", () => {
    const vault = createPiiVault();
    expect(redactArguments("{not json x@example.org", (t) => vault.redact(t))).toBe("{not json <EMAIL_1>");
    // Unchanged arguments are passed as written; a number that is a phone number (a Chinese mobile here) becomes its placeholder.
    expect(redactArguments('{"n": 12345}', (t) => vault.redact(t))).toBe('{"n": 12345}');
    expect(redactArguments('{"phone": 13812345678}', (t) => vault.redact(t, new Set(["phone"])))).toBe('{"phone":"<PHONE_1>"}');
  });

  it("the same value is the same placeholder across the request; the cache digest changes with the values", () => {
    const redacted = redactRequest(request("a x@example.org", "b x@example.org y@example.org"), policy);
    expect(redacted.request.messages.map((m) => (m.content[0] as { text: string }).text)).toEqual(["a <EMAIL_1>", "b <EMAIL_1> <EMAIL_2>"]);
    expect((cacheViewOf(redacted) as ChatRequest & { piiDigest: string }).piiDigest).toMatch(/^[0-9a-f]{64}$/);
  });
});

/** A sink that keeps what it is given, with the `more` flags. */
function recording(): DeltaSink<Delta> & { readonly items: Array<{ delta: Delta; more: boolean }>; ended: boolean } {
  const items: Array<{ delta: Delta; more: boolean }> = [];
  return {
    items,
    ended: false,
    push(delta, more) {
      items.push({ delta, more });
      return true;
    },
    end() {
      this.ended = true;
    },
  };
}

describe("restoring the answer", () => {
  const vault = createPiiVault();
  vault.redact("x@example.org and 4111111111111111");

  it("a placeholder split across text deltas comes back whole; text that cannot start one is never held", () => {
    const out = recording();
    const sink = restoringSink(out, vault);
    for (const piece of ["Write to <EM", "AIL_", "1> now", " or pay <CA", "RD_1>."]) sink.push({ type: "text", text: piece }, true);
    sink.push({ type: "finish", reason: "stop" }, false);
    expect(out.items.map((i) => (i.delta.type === "text" ? i.delta.text : i.delta.type))).toEqual(["Write to ", "x@example.org now", " or pay ", "4111111111111111.", "finish"]);
  });

  it("what is held goes out before the next delta of another kind and at the end, never lost", () => {
    const out = recording();
    const sink = restoringSink(out, vault);
    sink.push({ type: "text", text: "a <EMAIL" }, true);
    sink.push({ type: "usage", inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, reasoningTokens: 0 }, true);
    sink.push({ type: "text", text: "tail <NOT" }, false);
    sink.end();
    expect(out.items.map((i) => (i.delta.type === "text" ? i.delta.text : i.delta.type))).toEqual(["a ", "<EMAIL", "usage", "tail ", "<NOT"]);
    expect(out.ended).toBe(true);
  });

  it("a delta wholly held still reaches a writer that waits for the end of a batch", () => {
    const out = recording();
    restoringSink(out, vault).push({ type: "text", text: "<EMA" }, false);
    expect(out.items).toEqual([{ delta: { type: "text", text: "" }, more: false }]);
  });

  it("tool-call arguments per call, the call's opening piece always sent", () => {
    const out = recording();
    const sink = restoringSink(out, vault);
    sink.push({ type: "tool_call", index: 0, id: "c", name: "send", arguments: '{"to":"<EMAI' }, true);
    sink.push({ type: "tool_call", index: 1, id: "d", name: "pay", arguments: '{"card":"<CARD_1' }, true);
    sink.push({ type: "tool_call", index: 0, arguments: 'L_1>"}' }, true);
    sink.push({ type: "tool_call", index: 1, arguments: '>"}' }, true);
    sink.push({ type: "finish", reason: "tool_calls" }, false);
    const args = new Map<number, string>();
    for (const { delta } of out.items) if (delta.type === "tool_call") args.set(delta.index, (args.get(delta.index) ?? "") + delta.arguments);
    expect(JSON.parse(args.get(0)!)).toEqual({ to: "x@example.org" });
    expect(JSON.parse(args.get(1)!)).toEqual({ card: "4111111111111111" });
    expect(out.items.at(-1)!.delta.type).toBe("finish");
  });

  it("a placeholder this request did not make is left as the model wrote it", () => {
    const out = recording();
    restoringSink(out, vault).push({ type: "text", text: "<EMAIL_7> <PHONE_1>" }, false);
    expect(out.items[0]!.delta).toEqual({ type: "text", text: "<EMAIL_7> <PHONE_1>" });
  });
});
