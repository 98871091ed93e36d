import { PII_MODES } from "../config/compliance-schema.js";
import type { Config, KeySettings, ModelRoute, PiiMode, PiiPolicy } from "../config/config.js";
import { PII_KINDS } from "../config/pii-kinds.js";
import { customDetector, type Detector } from "./pii-detectors.js";

/** What applies to one request: the strictest mode of its key's, team's and alias's policies, and whether it must stay local. */
export interface RequestPolicy {
  readonly mode: PiiMode;
  /** The detectors it looks for: the union of those named by every policy that is not `off`. */
  readonly kinds: ReadonlySet<string>;
  /** The custom detectors among them, compiled. */
  readonly custom: readonly Detector[];
  /** A key, team or alias says `localOnly`, whatever the request holds. */
  readonly localOnly: boolean;
  /**
   * Its calls never leave local targets by another way (docs/compliance.md,
   * "Copies of a call"): `localOnly`, or a key, team or alias whose PII mode
   * is `local-only` (whatever was found: a detector can miss, and the
   * operator said such traffic stays home). Such a call is never mirrored
   * (shadow), recorded for replay, or replayed.
   */
  readonly keptLocal: boolean;
}

/** Nothing to look for and nowhere it must stay: the common case, decided without allocating. */
export const NO_POLICY: RequestPolicy = { mode: "off", kinds: new Set(), custom: [], localOnly: false, keptLocal: false };

/** What of a key the policy reads: a request's Principal, or a configured key by name (evaluation datasets). */
export type PolicyHolder = Pick<KeySettings, "pii" | "team" | "localOnly">;

const compiled = new WeakMap<Config["compliance"]["patterns"], ReadonlyMap<string, Detector>>();

/** compliance.patterns compiled once per configuration (a reload compiles the new one). */
function customDetectors(config: Config): ReadonlyMap<string, Detector> {
  const patterns = config.compliance.patterns;
  let found = compiled.get(patterns);
  if (!found) {
    found = new Map(patterns.map((p) => [p.name, customDetector(p.name, p.pattern)]));
    compiled.set(patterns, found);
  }
  return found;
}

/** The stricter of two modes: off < redact < local-only < block. */
export function stricter(a: PiiMode, b: PiiMode): PiiMode {
  return PII_MODES.indexOf(a) >= PII_MODES.indexOf(b) ? a : b;
}

/**
 * The policy of a request by `principal` to `route` (docs/compliance.md,
 * "Policies"): the strictest mode wins, so a team's `block` is not undone by
 * a key's `redact`, and the detectors of every policy that is on apply. The
 * team's settings are its configured ones (teams created at runtime carry
 * no policy).
 */
export function policyFor(config: Config, principal: PolicyHolder | undefined, route: ModelRoute | undefined): RequestPolicy {
  const team = principal?.team === undefined ? undefined : config.auth.teams.get(principal.team);
  const policies: PiiPolicy[] = [];
  for (const p of [principal?.pii, team?.pii, route?.pii]) if (p && p.mode !== "off") policies.push(p);
  const localOnly = principal?.localOnly === true || team?.localOnly === true || route?.localOnly === true;
  if (policies.length === 0) return localOnly ? { ...NO_POLICY, localOnly, keptLocal: true } : NO_POLICY;
  let mode: PiiMode = "off";
  const kinds = new Set<string>();
  for (const p of policies) {
    mode = stricter(mode, p.mode);
    for (const kind of p.detectors ?? PII_KINDS) kinds.add(kind);
  }
  const customs = customDetectors(config);
  const custom = [...kinds].flatMap((kind) => customs.get(kind) ?? []);
  return { mode, kinds, custom, localOnly, keptLocal: localOnly || policies.some((p) => p.mode === "local-only") };
}

/**
 * The aliases and configured keys whose calls are kept local now (a key's
 * team counts): what evaluation datasets leave out, so that a recording
 * made before its key, team or alias became local-only (or by a version
 * that kept such calls) is never replayed elsewhere.
 */
export function keptLocalNames(config: Config): { readonly aliases: readonly string[]; readonly keyNames: readonly string[] } {
  return {
    aliases: [...config.models.values()].filter((route) => policyFor(config, undefined, route).keptLocal).map((route) => route.alias),
    keyNames: config.auth.keys.filter((key) => policyFor(config, key, undefined).keptLocal).map((key) => key.name),
  };
}
