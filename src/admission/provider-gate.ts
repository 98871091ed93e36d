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
  /**
   * New settings from a configuration reload, applied to this same gate so
   * that the streams it already admitted keep counting against the limit and
   * release into it: a raised `maxConcurrent` admits waiters at once, a
   * lowered one admits nobody until enough streams have ended. Waiters keep
   * the queue timeout they started with.
   */
  configure(config: AdmissionConfig): void;
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

export function createProviderGate(provider: string, initial: AdmissionConfig): ProviderGate {
  const queue = new Set<Waiter>();
  let config = initial;
  let inFlight = 0;
  let closedWith: GatewayError | undefined;
  const changed = () => gate.onChange?.(gate);

  /** Admits the longest waiters while there is room; true when anyone was admitted (and told so). */
  const admitWaiting = (): boolean => {
    let admitted = false;
    for (const waiter of queue) {
      if (inFlight >= config.maxConcurrent) break;
      waiter.admit();
      admitted = true;
    }
    return admitted;
  };

  const release = (): Release => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      inFlight--;
      if (!admitWaiting()) changed();
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
      // The wait this request was promised, whatever a reload sets meanwhile.
      const { timeoutMs } = config;
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
              new GatewayError("overloaded", `provider ${provider} had no free stream within ${timeoutMs} ms (queue timeout)`, {
                provider,
                retryAfterMs: SHED_RETRY_MS,
              }),
            ),
          clampDelay(timeoutMs),
        );
        queue.add(waiter);
        signal.addEventListener("abort", onAbort, { once: true });
        changed();
      });
    },
    configure(next) {
      config = next;
      if (!closedWith) admitWaiting();
    },
    close(reason) {
      closedWith = reason;
      for (const waiter of [...queue]) waiter.fail(reason);
    },
  };
  return gate;
}

/**
 * One gate per provider name, made on first use, for the life of the
 * process: an unchanged provider keeps its gate and queue across reloads.
 */
export interface ProviderGates {
  gateFor(provider: { readonly name: string; readonly admission: AdmissionConfig }): ProviderGate;
  /**
   * The providers of a new configuration: each existing gate takes its
   * provider's settings, and gates made from now on start with them, even
   * when a request still running on the previous configuration makes one.
   */
  configure(providers: ReadonlyMap<string, { readonly admission: AdmissionConfig }>): void;
  all(): ReadonlyMap<string, ProviderGate>;
  close(reason: GatewayError): void;
  /** Resolves once `provider`'s gate satisfies `predicate` (now or after a change). */
  until(provider: string, predicate: (gate: ProviderGate) => boolean): Promise<ProviderGate>;
}

export function createProviderGates(): ProviderGates {
  const watchers = new Set<{ provider: string; check: (gate: ProviderGate) => void }>();
  const gates = new Map<string, ProviderGate>();
  let latest: ReadonlyMap<string, { readonly admission: AdmissionConfig }> = new Map();
  let closedWith: GatewayError | undefined;
  return {
    gateFor(provider) {
      let gate = gates.get(provider.name);
      if (!gate) {
        gate = createProviderGate(provider.name, latest.get(provider.name)?.admission ?? provider.admission);
        gate.onChange = (g) => {
          for (const w of [...watchers]) if (w.provider === provider.name) w.check(g);
        };
        if (closedWith) gate.close(closedWith);
        gates.set(provider.name, gate);
      }
      return gate;
    },
    configure(providers) {
      latest = providers;
      for (const [name, gate] of gates) {
        const admission = providers.get(name)?.admission;
        // A provider the new configuration dropped keeps its gate for the requests still using it.
        if (admission) gate.configure(admission);
      }
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
