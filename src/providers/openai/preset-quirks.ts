import { type PresetQuirks, presetOf } from "../../config/provider-presets.js";
import type { OptionalParam } from "../../core/request-params.js";
import type { UpstreamTarget } from "../provider.js";

/** Where each optional parameter lands in a Chat Completions body: a preset's refusals are checked on the body Sluice would send. */
const PARAM_FIELDS: Readonly<Partial<Record<OptionalParam, string>>> = {
  response_format: "response_format",
  "reasoning.effort": "reasoning_effort",
  "sampling.seed": "seed",
  "sampling.stop": "stop",
  "sampling.presence_penalty": "presence_penalty",
  "sampling.frequency_penalty": "frequency_penalty",
  "sampling.logit_bias": "logit_bias",
  logprobs: "logprobs",
  parallel_tool_calls: "parallel_tool_calls",
  service_tier: "service_tier",
  "metadata.provider_metadata": "metadata",
};

/** The target's preset quirks; undefined for a provider without a preset. */
export function quirksOf(target: UpstreamTarget): PresetQuirks | undefined {
  return presetOf(target.provider.preset);
}

/** The optional parameters a preset refuses that this body carries. */
export function rejectedParams(body: Readonly<Record<string, unknown>>, quirks: PresetQuirks | undefined): OptionalParam[] {
  return (quirks?.rejects ?? []).filter((param) => {
    const field = PARAM_FIELDS[param];
    return field !== undefined && body[field] !== undefined;
  });
}

/** The body as the preset's cloud takes it: fields it omits left out, fields it names differently renamed. */
export function withQuirks(body: Record<string, unknown>, quirks: PresetQuirks | undefined): Record<string, unknown> {
  if (!quirks) return body;
  const omitted = new Set(quirks.omits ?? []);
  const renames = quirks.renames ?? {};
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(body)) {
    if (!omitted.has(field)) out[renames[field] ?? field] = value;
  }
  return out;
}
