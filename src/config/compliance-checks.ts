import { isRecord } from "./check-input.js";
import type { ConfigProblem } from "./config-problem.js";
import { PII_KINDS } from "./pii-kinds.js";

/**
 * Every detector a PII policy names is a built-in one or a custom pattern
 * of compliance.patterns, and an alias that must stay local has a local
 * target: either mistake would otherwise show only on the first request.
 * An alias's summarizer and shadow references are checked in the same pass
 * over the aliases, so the report keeps one alias's problems together.
 */
export function complianceProblems(input: unknown): ConfigProblem[] {
  if (!isRecord(input)) return [];
  const problems: ConfigProblem[] = [];
  const compliance = isRecord(input.compliance) ? input.compliance : {};
  const known = new Set<string>(PII_KINDS);
  if (Array.isArray(compliance.patterns)) for (const p of compliance.patterns) if (isRecord(p) && typeof p.name === "string") known.add(p.name);
  const checkPolicy = (policy: unknown, path: readonly PropertyKey[]) => {
    if (!isRecord(policy) || !Array.isArray(policy.detectors)) return;
    policy.detectors.forEach((name: unknown, i) => {
      if (typeof name === "string" && !known.has(name)) problems.push({ path: [...path, "pii", "detectors", i], message: `unknown detector "${name}" (built in: ${PII_KINDS.join(", ")}; or a compliance.patterns name)` });
    });
  };
  const auth = isRecord(input.auth) ? input.auth : {};
  for (const list of ["keys", "teams"] as const) {
    const items = auth[list];
    if (Array.isArray(items)) items.forEach((item: unknown, i) => isRecord(item) && checkPolicy(item.pii, ["auth", list, i]));
  }
  const providers = isRecord(input.providers) ? input.providers : {};
  if (isRecord(input.models)) {
    for (const [alias, model] of Object.entries(input.models)) {
      if (!isRecord(model)) continue;
      checkPolicy(model.pii, ["models", alias]);
      const context = isRecord(model.context) ? model.context : undefined;
      if (context?.strategy === "summarize") {
        if (typeof context.summarizer !== "string") problems.push({ path: ["models", alias, "context", "summarizer"], message: "is required with strategy summarize" });
        else if (!isRecord(input.models) || !isRecord(input.models[context.summarizer])) problems.push({ path: ["models", alias, "context", "summarizer"], message: `unknown alias "${context.summarizer}"` });
        else if (context.summarizer === alias) problems.push({ path: ["models", alias, "context", "summarizer"], message: "cannot be the alias itself" });
      }
      const shadow = isRecord(model.shadow) ? model.shadow : undefined;
      if (shadow && typeof shadow.alias === "string") {
        if (!isRecord(input.models[shadow.alias])) problems.push({ path: ["models", alias, "shadow", "alias"], message: `unknown alias "${shadow.alias}"` });
        else if (shadow.alias === alias) problems.push({ path: ["models", alias, "shadow", "alias"], message: "cannot be the alias itself" });
      }
      if (shadow) {
        const keys = Array.isArray(auth.keys) ? auth.keys.filter(isRecord) : [];
        if (typeof shadow.key === "string" && !keys.some((k) => k.name === shadow.key)) problems.push({ path: ["models", alias, "shadow", "key"], message: `unknown key "${shadow.key}" (a configured key's name)` });
        else if (shadow.key === undefined && keys.length > 0) problems.push({ path: ["models", alias, "shadow", "key"], message: "is required when keys are configured: the key mirrored calls run as and are charged to" });
      }
      if (model.localOnly !== true) continue;
      const written = Array.isArray(model.targets) ? model.targets : [model];
      const providerLocal = (name: unknown) => {
        const provider = typeof name === "string" ? providers[name] : undefined;
        return isRecord(provider) && provider.local === true;
      };
      const local = written.some((t: unknown) => isRecord(t) && (t.local === undefined ? providerLocal(t.provider) : t.local === true));
      if (!local) problems.push({ path: ["models", alias, "localOnly"], message: "no target of this alias is local (targets[].local or providers.<name>.local)" });
    }
  }
  return problems;
}
