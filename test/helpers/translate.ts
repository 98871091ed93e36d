import { expect, it } from "vitest";
import { resolveConfig } from "../../src/config/config.js";
import type { ContentDelta } from "../../src/core/delta.js";
import type { StreamTranslator, UpstreamTarget } from "../../src/providers/provider.js";
import { createSseDecoder } from "../../src/sse/decoder.js";

/** A provider target for translator unit tests (provider named "up"). */
export function testTarget(kind: "openai" | "anthropic" | "gemini" | "openai-responses"): UpstreamTarget {
  const config = resolveConfig({ providers: { up: { kind, baseUrl: "http://127.0.0.1:1/v1" } }, models: { m: { provider: "up", model: "x" } } }, {});
  return { provider: config.providers.get("up")!, model: "x" };
}

/** Decodes and translates a whole wire stream, split in two at `cut` when given. */
export function translateWire(createTranslator: () => StreamTranslator, wire: string, cut?: number): ContentDelta[] {
  const bytes = new TextEncoder().encode(wire);
  const parts = cut === undefined ? [bytes] : [bytes.subarray(0, cut), bytes.subarray(cut)];
  const decoder = createSseDecoder({ maxEventSize: 1 << 20 });
  const translator = createTranslator();
  const out: ContentDelta[] = [];
  for (const part of parts) for (const e of decoder.push(part)) out.push(...translator.event(e));
  for (const e of decoder.end()) out.push(...translator.event(e));
  out.push(...translator.end());
  return out;
}

export interface Fixture {
  readonly name: string;
  readonly wire: string;
  readonly deltas: ContentDelta[];
}

/** Every fixture, split at every byte offset, must give exactly its deltas. */
export function expectSplitInvariance(createTranslator: () => StreamTranslator, fixtures: readonly Fixture[]): void {
  for (const f of fixtures) {
    const length = new TextEncoder().encode(f.wire).length;
    for (let cut = 0; cut <= length; cut++) expect(translateWire(createTranslator, f.wire, cut), `${f.name} @${cut}`).toEqual(f.deltas);
  }
}

/** Registers one test per fixture plus the every-byte-offset split test. */
export function fixtureTests(createTranslator: () => StreamTranslator, fixtures: readonly Fixture[]): void {
  for (const f of fixtures) {
    it(f.name, () => {
      expect(translateWire(createTranslator, f.wire)).toEqual(f.deltas);
    });
  }
  it("gives identical deltas for every fixture split at every byte offset", () => {
    expectSplitInvariance(createTranslator, fixtures);
  });
}
