import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatClient, collect, rpcFailure, transports, userRequest } from "./helpers/clients.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

/**
 * Issue #43 items 2 (tags) and 10, over real sockets on the Chat
 * Completions, Responses and gRPC edges: a tag key or value holding a
 * control character (NUL, CR, LF, C1) or longer than 256 characters is
 * refused with 400 / INVALID_ARGUMENT before anything is charged, whether
 * it came in the `sluice-tags` header or the body's metadata; a tag value
 * in which the key's PII policy finds something is refused naming the tag,
 * never echoing the value. The usage record of a call that passes carries
 * its tags as sent.
 */
const KEYS = {
  plain: "sk-test-tags-plain-2b4d6f8a0c1e3579",
  redactor: "sk-test-tags-redactor-7a9c1e3b5d0f2468",
  blocker: "sk-test-tags-blocker-4e6a8c0b2d1f3579",
};
const EMAIL = "carol.finance@example.com";
const events = tenancyEvents();
let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: baseUrlFor(sim, "openai"), breaker: { failures: 10_000 } } },
      models: { sim: { provider: "simulator", model: "sim-1?tokens=3" } },
    }),
    env: { PLAIN: KEYS.plain, REDACTOR: KEYS.redactor, BLOCKER: KEYS.blocker },
    auth: {
      keys: [
        { name: "plain", keyEnv: "PLAIN" },
        { name: "redactor", keyEnv: "REDACTOR", pii: { mode: "redact" } },
        { name: "blocker", keyEnv: "BLOCKER", pii: { mode: "block", detectors: ["email"] } },
      ],
      tagKeys: ["project", "env"],
    },
    observer: events.observer,
  });
});
afterAll(() => h.close());

let ids = 0;

interface Tags {
  readonly header?: string;
  readonly metadata?: Record<string, string>;
}

async function post(path: "/v1/chat/completions" | "/v1/responses", key: string, tags: Tags) {
  const id = `tags-${++ids}`;
  const body =
    path === "/v1/chat/completions"
      ? { model: "sim", max_tokens: 5, messages: [{ role: "user", content: "hi" }], ...(tags.metadata ? { metadata: tags.metadata } : {}) }
      : { model: "sim", max_output_tokens: 16, input: "hi", ...(tags.metadata ? { metadata: tags.metadata } : {}) };
  const res = await fetch(`${h.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}`, "x-request-id": id, ...(tags.header === undefined ? {} : { "sluice-tags": tags.header }) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const message = res.status === 200 ? "" : String((JSON.parse(text) as { error?: { message?: string } }).error?.message);
  return { status: res.status, text, message, id };
}

const grpc = (key: string, labels: Record<string, string>, header?: string) =>
  rpcFailure(
    collect(
      chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", "hi", { metadata: { labels } }), {
        headers: { authorization: `Bearer ${key}`, ...(header === undefined ? {} : { "sluice-tags": header }) },
      }),
    ),
  );

const EDGES = ["/v1/chat/completions", "/v1/responses"] as const;

describe("tags the ledger could not hold, or should not", () => {
  for (const path of EDGES) {
    it(`${path}: a control character in a tag, in the header or the body, is refused with 400 naming the tag`, async () => {
      for (const tags of <Tags[]>[
        { header: "project=%00%0a%0d" },
        { header: "env=a%C2%85b" },
        { metadata: { project: "a\u0000b" } },
        { metadata: { env: "line\nbreak" } },
        { metadata: { project: "a\ud800b" } },
        { metadata: { "pro\u0000ject": "x" } },
      ]) {
        const got = await post(path, KEYS.plain, tags);
        expect(got.status, JSON.stringify(tags)).toBe(400);
        expect(got.text).toMatch(/control character/);
        expect(events.usage.some((u) => u.record.requestId === got.id)).toBe(false);
      }
    });

    it(`${path}: a value longer than 256 characters is refused, one of 256 is kept whole`, async () => {
      for (const tags of <Tags[]>[{ header: `project=${"v".repeat(300)}` }, { metadata: { project: "v".repeat(300) } }]) {
        const got = await post(path, KEYS.plain, tags);
        expect(got.status, JSON.stringify(tags).slice(0, 40)).toBe(400);
        expect(got.text).toMatch(/256 characters/);
        expect(got.text).not.toContain("v".repeat(257));
      }
      const kept = await post(path, KEYS.plain, { metadata: { project: "v".repeat(256) } });
      expect(kept.status).toBe(200);
      expect((await events.recorded(kept.id)).tags).toEqual({ project: "v".repeat(256) });
    });

    it(`${path}: a tag value holding personal data is refused for a redact or block key, naming the tag and not the value`, async () => {
      for (const key of [KEYS.redactor, KEYS.blocker]) {
        for (const tags of <Tags[]>[{ header: `project=${encodeURIComponent(EMAIL)}` }, { metadata: { project: `owner ${EMAIL}` } }]) {
          const got = await post(path, key, tags);
          expect(got.status).toBe(400);
          expect(got.message).toContain('tag "project"');
          expect(got.message).toContain("email");
          expect(got.text).not.toContain(EMAIL);
          expect(events.usage.some((u) => u.record.requestId === got.id)).toBe(false);
        }
      }
      // Without a policy the tag is the operator's business, and kept as sent.
      const plain = await post(path, KEYS.plain, { metadata: { project: EMAIL } });
      expect(plain.status).toBe(200);
      expect((await events.recorded(plain.id)).tags).toEqual({ project: EMAIL });
      // A tag the policy finds nothing in passes for the redacting key.
      const clean = await post(path, KEYS.redactor, { header: "env=prod", metadata: { project: "search" } });
      expect(clean.status).toBe(200);
      expect((await events.recorded(clean.id)).tags).toEqual({ project: "search", env: "prod" });
    });
  }

  it("gRPC: the same refusals as INVALID_ARGUMENT, from metadata.labels and the sluice-tags header", async () => {
    for (const [labels, header, why] of [
      [{ project: "a\rb" }, undefined, /control character/],
      [{}, "env=%0A", /control character/],
      [{ env: "v".repeat(300) }, undefined, /256 characters/],
    ] as const) {
      const failure = await grpc(KEYS.plain, labels, header);
      expect(failure.code).toBe(Code.InvalidArgument);
      expect(failure.rawMessage).toMatch(why);
    }
    const pii = await grpc(KEYS.redactor, { project: EMAIL });
    expect(pii.code).toBe(Code.InvalidArgument);
    expect(pii.rawMessage).toContain('tag "project"');
    expect(pii.rawMessage).not.toContain(EMAIL);
  });
});
