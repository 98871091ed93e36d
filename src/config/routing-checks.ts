import { isRecord } from "./check-input.js";
import type { ConfigProblem } from "./config-problem.js";

/** The provider names an alias refers to, with where: its inline `provider` or each of its `targets`. */
function providerRefs(alias: string, model: Record<string, unknown>): Array<{ provider: unknown; path: PropertyKey[] }> {
  if (Array.isArray(model.targets)) {
    return model.targets.map((target: unknown, i) => ({ provider: isRecord(target) ? target.provider : undefined, path: ["models", alias, "targets", i, "provider"] }));
  }
  return [{ provider: model.provider, path: ["models", alias, "provider"] }];
}

/**
 * Aliases that name a provider the file does not define. Read from the
 * input as written, so it is reported in the same run as any schema
 * problem (a zod refinement runs only once everything else is valid).
 */
export function referenceProblems(input: unknown): ConfigProblem[] {
  if (!isRecord(input) || !isRecord(input.models)) return [];
  const providers = isRecord(input.providers) ? input.providers : {};
  return Object.entries(input.models).flatMap(([alias, model]) =>
    isRecord(model) ? providerRefs(alias, model).flatMap(({ provider, path }) => (typeof provider === "string" && provider !== "" && !Object.hasOwn(providers, provider) ? [{ path, message: `unknown provider "${provider}"` }] : [])) : [],
  );
}

/**
 * `thinking` set where no Anthropic request will read it: on a provider of
 * another kind, or on a target whose provider is one. Read from the input
 * as written, like the references above, so it comes in the same report.
 */
export function thinkingProblems(input: unknown): ConfigProblem[] {
  if (!isRecord(input)) return [];
  const providers = isRecord(input.providers) ? input.providers : {};
  const kindOf = (name: unknown): unknown => {
    const provider = typeof name === "string" && Object.hasOwn(providers, name) ? providers[name] : undefined;
    return isRecord(provider) ? provider.kind : undefined;
  };
  // Claude on Vertex takes the Messages body too (providers/vertex/vertex-adapter.ts).
  const notAnthropic = (kind: unknown) => typeof kind === "string" && kind !== "anthropic" && kind !== "vertex";
  const problems: ConfigProblem[] = [];
  for (const [name, provider] of Object.entries(providers)) {
    if (isRecord(provider) && provider.thinking !== undefined && notAnthropic(provider.kind)) {
      problems.push({ path: ["providers", name, "thinking"], message: `only for providers of kind anthropic or vertex (this one is ${String(provider.kind)})` });
    }
  }
  const models = isRecord(input.models) ? input.models : {};
  for (const [alias, model] of Object.entries(models)) {
    if (!isRecord(model) || !Array.isArray(model.targets)) continue;
    model.targets.forEach((target: unknown, i) => {
      if (!isRecord(target) || target.thinking === undefined) return;
      const kind = kindOf(target.provider);
      if (notAnthropic(kind)) {
        problems.push({ path: ["models", alias, "targets", i, "thinking"], message: `only for targets on an anthropic provider ("${String(target.provider)}" is ${String(kind)})` });
      }
    });
  }
  return problems;
}
