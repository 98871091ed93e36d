import type { ModelRoute } from "../config/config.js";
import type { ChatRequest } from "../core/chat-request.js";
import { quoteClientValue } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";
import { inPoolOr } from "../workers/shared-pool.js";
import { defineTask } from "../workers/task-pool.js";
import { detectPii, detectPiiInSlices, type PiiSpan, SLICE_CHARS } from "./pii-detectors.js";
import { NO_POLICY, type RequestPolicy } from "./pii-policy.js";
import type { PiiTaskInput } from "./pii-task.js";
import type { PiiVault } from "./pii-vault.js";
import { cacheViewOf, type RedactedRequest, redactRequest } from "./redact-request.js";

/**
 * A request after its policy looked at it, before anything is refused:
 * what goes upstream, what the response cache keys it by, and what was
 * found. Computed before telemetry sees the request, so a redacted prompt
 * is the only one traces can capture.
 */
export interface Screened {
  readonly policy: RequestPolicy;
  /** What providers receive: placeholders instead of values under `redact`. */
  readonly request: ChatRequest;
  /** What the response cache keys it by; absent: the cache is not used (values would be stored in clear). */
  readonly cacheRequest?: ChatRequest;
  /** Placeholders to put back in the answer; only when something was redacted. */
  readonly vault?: PiiVault;
  /** Findings by detector (counts, never values); absent when nothing was found. */
  readonly found?: Readonly<Record<string, number>>;
  /** Under `redact`, fields where something was found that no placeholder can stand in for (redact-request.ts): the request is refused. */
  readonly unplaceable?: readonly string[];
}

/** Screens `request` under `policy`; never throws (enforce does, once the key's allowlist has passed). */
export function screenRequest(request: ChatRequest, policy: RequestPolicy): Screened {
  if (policy.mode === "off") return { policy, request, cacheRequest: request };
  return screenedOf(request, policy, redactRequest(request, policy));
}

/**
 * Texts at least this long are screened in the worker pool
 * (screenRequestPooled); shorter ones inline. Measured
 * (`node dist/bench/heavy-pool.js`, 2-core machine under load, medians of
 * 30 texts of mixed prose with an email and a phone number every fifth
 * line): detectPii holds the relay's thread 0.11 ms at 4 KiB, 0.20 ms at
 * 8 KiB, 0.66 ms at 16 KiB, 11 ms at 128 KiB; the hop to a worker holds
 * it 0.05–0.15 ms at any of those sizes (the spans come back small). The
 * hop costs less from about 4 KiB; from 16 KiB it saves several times
 * itself, which is worth a round trip and a place in the pool's queue.
 */
export const SCREEN_IN_POOL_CHARS = 16 * 1024;

const piiTask = defineTask<PiiTaskInput, PiiSpan[]>(import.meta.url, "./pii-task.js", "detectPiiTask");

/**
 * Whether screening `request` is long work: it holds more than `limit` characters of
 * text (one slice unless told). Rough by design (message texts, tool-call
 * arguments and tool descriptions, where megabytes come from): it only
 * picks the way, not the result.
 */
export function screeningIsLong(request: ChatRequest, limit = SLICE_CHARS): boolean {
  let chars = 0;
  for (const tool of request.tools) chars += tool.description.length;
  for (const message of request.messages) {
    for (const part of message.content) if (part.type === "text") chars += part.text.length;
    for (const call of message.toolCalls ?? []) chars += call.arguments.length;
    if (chars > limit) return true;
  }
  return false;
}

/**
 * screenRequest for a long request, without holding the event loop for
 * the whole of it: a first pass finds which texts are long (and screens
 * nothing), each of those is screened in slices with the event loop
 * turning between them (detectPiiInSlices), and the real pass then uses
 * those findings. Rejects with the signal's reason if the caller left.
 */
export async function screenRequestInSlices(request: ChatRequest, policy: RequestPolicy, signal?: AbortSignal): Promise<Screened> {
  return screenLong(request, policy, SLICE_CHARS + 1, (text) => detectPiiInSlices(text, policy.kinds, policy.custom, signal), signal);
}

/**
 * screenRequest with each text of SCREEN_IN_POOL_CHARS or more screened
 * whole in the worker pool, so the relay's thread only redacts: the same
 * findings as screenRequest. Without a pool, or when the pool cannot
 * (workers/shared-pool.ts), those texts are screened in slices here
 * instead, as screenRequestInSlices does.
 */
export async function screenRequestPooled(request: ChatRequest, policy: RequestPolicy, signal?: AbortSignal): Promise<Screened> {
  const custom = policy.custom.map((d) => ({ kind: d.kind, source: d.pattern.source }));
  const kinds = [...policy.kinds];
  return screenLong(request, policy, SCREEN_IN_POOL_CHARS, (text) => inPoolOr(piiTask, { text, kinds, custom }, () => detectPiiInSlices(text, policy.kinds, policy.custom, signal), signal), signal);
}

/** A first pass finds the texts of `from` characters or more (screening nothing), `detectLong` screens each, and the real pass uses those findings. */
async function screenLong(request: ChatRequest, policy: RequestPolicy, from: number, detectLong: (text: string) => Promise<PiiSpan[]>, signal?: AbortSignal): Promise<Screened> {
  if (policy.mode === "off") return { policy, request, cacheRequest: request };
  const long = new Set<string>();
  redactRequest(request, policy, (text) => {
    if (text.length >= from) long.add(text);
    return [];
  });
  const found = new Map<string, PiiSpan[]>();
  await Promise.all([...long].map(async (text) => found.set(text, await detectLong(text))));
  signal?.throwIfAborted();
  return screenedOf(
    request,
    policy,
    redactRequest(request, policy, (text, kinds, custom) => found.get(text) ?? detectPii(text, kinds, custom)),
  );
}

function screenedOf(request: ChatRequest, policy: RequestPolicy, redacted: RedactedRequest): Screened {
  if (redacted.vault.size === 0) return { policy, request, cacheRequest: request };
  const found = redacted.vault.counts;
  if (policy.mode === "redact" && redacted.unplaceable.length > 0) return { policy, request, found, unplaceable: redacted.unplaceable };
  if (policy.mode === "redact") return { policy, request: redacted.request, cacheRequest: cacheViewOf(redacted), vault: redacted.vault, found };
  // local-only and block send the request as written (or not at all): its answer may hold the values, so it is never cached.
  return { policy, request, found };
}

/** Nothing screened: the request as it came. */
export function unscreened(request: ChatRequest): Screened {
  return { policy: NO_POLICY, request, cacheRequest: request };
}

/** Whether the screened request must be served by local targets only. */
export function mustStayLocal(screened: Screened): boolean {
  return screened.policy.localOnly || (screened.policy.mode === "local-only" && screened.found !== undefined);
}

/**
 * The route a screened request may take, or the refusal: `block` names
 * the kinds found (never the values); a request that must stay local gets
 * the alias's local targets only (failover and hedging then never leave
 * them), or FAILED_PRECONDITION when the alias has none.
 */
export function enforce(screened: Screened, route: ModelRoute): ModelRoute {
  if (screened.policy.mode === "block" && screened.found) {
    const kinds = Object.keys(screened.found).sort().join(", ");
    throw new GatewayError("invalid_request", `the request holds personal data or secrets (${kinds}), which the policy for this key or model blocks`, { field: "messages" });
  }
  if (screened.unplaceable) {
    const fields = screened.unplaceable.slice(0, 8).join(", ");
    throw new GatewayError("invalid_request", `${fields}: personal data or secrets found where no placeholder can stand in for them (a name or a URL); the policy for this key or model redacts, so the request is refused`, {
      field: screened.unplaceable[0]!,
    });
  }
  if (!mustStayLocal(screened)) return route;
  const local = route.targets.filter((target) => target.local === true);
  if (local.length === 0) {
    const why = screened.policy.localOnly ? "this key, team or model is local-only" : "the request holds personal data and the policy keeps such requests local";
    throw new GatewayError("failed_precondition", `model "${route.alias}" has no local target, and ${why}`);
  }
  return local.length === route.targets.length ? route : { ...route, targets: local };
}

/**
 * A tag whose value holds what the policy's detectors find, and its
 * refusal (naming the tag and the kinds, never the value); undefined when
 * every tag is clean or the policy looks for nothing. Tags are not
 * redacted: a placeholder in a spend report would be a value nobody sent.
 */
export function screenTags(tags: Readonly<Record<string, string>>, policy: RequestPolicy): { readonly found: Readonly<Record<string, number>>; readonly refusal: GatewayError } | undefined {
  if (policy.mode === "off") return undefined;
  for (const [key, value] of Object.entries(tags)) {
    const spans = detectPii(value, policy.kinds, policy.custom);
    if (spans.length === 0) continue;
    const found: Record<string, number> = {};
    for (const span of spans) found[span.kind] = (found[span.kind] ?? 0) + 1;
    const kinds = Object.keys(found).sort().join(", ");
    return {
      found,
      refusal: new GatewayError("invalid_request", `tag ${quoteClientValue(key)} holds personal data or secrets (${kinds}): the policy for this key or model keeps them out of tags, which the spend ledger and its reports keep`, {
        field: "metadata",
      }),
    };
  }
  return undefined;
}
