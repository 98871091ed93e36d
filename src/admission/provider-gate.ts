import type { AdmissionConfig } from "../config/config.js";
import { GatewayError } from "../core/errors.js";
import { clampDelay } from "../core/timers.js";

/** Releases an admitted stream's slot; calling it again does nothing. */
export type Release = () => void;

/**
 * Admission in front of one provider: at most `maxConcurrent` streams in
 * flight, then a FIFO queue of at most `maxWaiting` requests, each waiting
 * at most `timeoutMs`. A full queue or a wait that runs out sheds the request
 * (`overloaded`: RESOURCE_EXHAUSTED / 429 with Retry-After); a waiter whose
 * request is cancelled leaves the queue at once.
 */
export interface ProviderGate {
  acquire(signal: AbortSignal): Promise<Release>;
  readonly inFlight: number;
  readonly waiting: number;
  /** Called whenever `inFlight` or `waiting` changes (queue depth for metrics; tests wait on it). */
  onChange?: (gate: ProviderGate) => void;
  /** Ends every wait with `reason` (shutdown) and admits nobody after. */
  close(reason: GatewayError): void;
}

interface Waiter {
  admit(): void;
  fail(reason: GatewayError): void;
}

/** What a shed request is told to wait before trying again. */
const SHED_RETRY_MS = 1000;

export function createProviderGate(provider: string, config: AdmissionConfig): ProviderGate {
  const queue = new Set<Waiter>();
  let inFlight = 0;
  let closedWith: GatewayError | undefined;
  const changed = () => gate.onChange?.(gate);

  const release = (): Release => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      inFlight--;
      // Hand the slot straight to the longest waiter.
      const next = queue.values().next();
      if (!next.done) next.value.admit();
      else changed();
    };
  };

  const gate: ProviderGate = {
    get inFlight() {
      return inFlight;
    },
    get waiting() {
      return queue.size;
    },
    acquire(signal) {
      if (closedWith) return Promise.reject(closedWith);
      if (signal.aborted) return Promise.reject(signal.reason);
      if (inFlight < config.maxConcurrent && queue.size === 0) {
        inFlight++;
        changed();
        return Promise.resolve(release());
      }
      if (queue.size >= config.maxWaiting) {
        return Promise.reject(
          new GatewayError("overloaded", `provider ${provider} is at its limit of ${config.maxConcurrent} streams and its queue is full`, {
            provider,
            retryAfterMs: SHED_RETRY_MS,
          }),
        );
      }
      return new Promise<Release>((resolve, reject) => {
        const leave = () => {
          queue.delete(waiter);
          clearTimeout(timer);
          signal.removeEventListener("abort", onAbort);
        };
        const waiter: Waiter = {
          admit() {
            leave();
            inFlight++;
            changed();
            resolve(release());
          },
          fail(reason) {
            leave();
            changed();
            reject(reason);
          },
        };
        const onAbort = () => waiter.fail(signal.reason as GatewayError);
        const timer = setTimeout(
          () =>
            waiter.fail(
              new GatewayError("overloaded", `provider ${provider} had no free stream within ${config.timeoutMs} ms (queue timeout)`, {
                provider,
                retryAfterMs: SHED_RETRY_MS,
              }),
            ),
          clampDelay(config.timeoutMs),
        );
        queue.add(waiter);
        signal.addEventListener("abort", onAbort, { once: true });
        changed();
      });
    },
    close(reason) {
      closedWith = reason;
      for (const waiter of [...queue]) waiter.fail(reason);
    },
  };
  return gate;
}

/** One gate per provider, made on first use. */
export interface ProviderGates {
  gateFor(provider: { readonly name: string; readonly admission: AdmissionConfig }): ProviderGate;
  all(): ReadonlyMap<string, ProviderGate>;
  close(reason: GatewayError): void;
  /** Resolves once `provider`'s gate satisfies `predicate` (now or after a change). */
  until(provider: string, predicate: (gate: ProviderGate) => boolean): Promise<ProviderGate>;
}

export function createProviderGates(): ProviderGates {
  const watchers = new Set<{ provider: string; check: (gate: ProviderGate) => void }>();
  const gates = new Map<string, ProviderGate>();
  let closedWith: GatewayError | undefined;
  return {
    gateFor(provider) {
      let gate = gates.get(provider.name);
      if (!gate) {
        gate = createProviderGate(provider.name, provider.admission);
        gate.onChange = (g) => {
          for (const w of [...watchers]) if (w.provider === provider.name) w.check(g);
        };
        if (closedWith) gate.close(closedWith);
        gates.set(provider.name, gate);
      }
      return gate;
    },
    all: () => gates,
    until(provider, predicate) {
      const existing = gates.get(provider);
      if (existing && predicate(existing)) return Promise.resolve(existing);
      return new Promise((resolve) => {
        const watcher = {
          provider,
          check: (gate: ProviderGate) => {
            if (!predicate(gate)) return;
            watchers.delete(watcher);
            resolve(gate);
          },
        };
        watchers.add(watcher);
      });
    },
    close(reason) {
      closedWith = reason;
      for (const gate of gates.values()) gate.close(reason);
    },
  };
}
