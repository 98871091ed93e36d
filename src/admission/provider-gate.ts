import type { AdmissionConfig } from "../config/config.js";
import { GatewayError } from "../core/errors.js";
import { clampDelay } from "../core/timers.js";

/** Releases an admitted stream's slot; calling it again does nothing. */
export type Release = () => void;

/**
 * Interactive calls are the gateway's purpose; background ones (batch
 * lines) use spare capacity: they start only while no interactive call
 * waits, take at most `backgroundShare` of `maxConcurrent`, and give way
 * to every interactive waiter when a slot frees.
 */
export type Priority = "interactive" | "background";

/** A provider's share for background calls when the configuration names none (batch.maxShare's default). */
export const DEFAULT_BACKGROUND_SHARE = 0.25;

/**
 * How long a background call waits for room before it fails `overloaded`.
 * Long on purpose: a batch line has no caller waiting, and it waits only
 * while interactive traffic keeps the provider busy.
 */
export const BACKGROUND_WAIT_MS = 10 * 60_000;

/** Background slots of a provider: at least one, so a batch always moves when interactive traffic leaves room. */
export function backgroundSlots(config: AdmissionConfig): number {
  return Math.max(1, Math.floor(config.maxConcurrent * (config.backgroundShare ?? DEFAULT_BACKGROUND_SHARE)));
}

/**
 * Admission in front of one provider: at most `maxConcurrent` streams in
 * flight, then a FIFO queue of at most `maxWaiting` requests, each waiting
 * at most `timeoutMs`. A full queue or a wait that runs out sheds the request
 * (`overloaded`: RESOURCE_EXHAUSTED / 429 with Retry-After); a waiter whose
 * request is cancelled leaves the queue at once.
 */
export interface ProviderGate {
  acquire(signal: AbortSignal, priority?: Priority): Promise<Release>;
  readonly inFlight: number;
  /** Interactive calls waiting (background ones are `backgroundWaiting`). */
  readonly waiting: number;
  /** Background calls in flight (counted in `inFlight` too). */
  readonly backgroundInFlight: number;
  readonly backgroundWaiting: number;
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
  const background = new Set<Waiter>();
  let config = initial;
  let inFlight = 0;
  let backgroundInFlight = 0;
  let closedWith: GatewayError | undefined;
  const changed = () => gate.onChange?.(gate);
  const backgroundRoom = () => queue.size === 0 && inFlight < config.maxConcurrent && backgroundInFlight < backgroundSlots(config);

  /** Admits the longest waiters while there is room, interactive ones first; true when anyone was admitted (and told so). */
  const admitWaiting = (): boolean => {
    let admitted = false;
    for (const waiter of queue) {
      if (inFlight >= config.maxConcurrent) break;
      waiter.admit();
      admitted = true;
    }
    for (const waiter of background) {
      if (!backgroundRoom()) break;
      waiter.admit();
      admitted = true;
    }
    return admitted;
  };

  const release = (priority: Priority): Release => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      inFlight--;
      if (priority === "background") backgroundInFlight--;
      if (!admitWaiting()) changed();
    };
  };

  const take = (priority: Priority): Release => {
    inFlight++;
    if (priority === "background") backgroundInFlight++;
    changed();
    return release(priority);
  };

  const gate: ProviderGate = {
    get inFlight() {
      return inFlight;
    },
    get waiting() {
      return queue.size;
    },
    get backgroundInFlight() {
      return backgroundInFlight;
    },
    get backgroundWaiting() {
      return background.size;
    },
    acquire(signal, priority = "interactive") {
      if (closedWith) return Promise.reject(closedWith);
      if (signal.aborted) return Promise.reject(signal.reason);
      const isBackground = priority === "background";
      if (isBackground ? background.size === 0 && backgroundRoom() : inFlight < config.maxConcurrent && queue.size === 0) return Promise.resolve(take(priority));
      if (!isBackground && queue.size >= config.maxWaiting) {
        return Promise.reject(
          new GatewayError("overloaded", `provider ${provider} is at its limit of ${config.maxConcurrent} streams and its queue is full`, {
            provider,
            retryAfterMs: SHED_RETRY_MS,
          }),
        );
      }
      // The wait this request was promised, whatever a reload sets meanwhile.
      const timeoutMs = isBackground ? BACKGROUND_WAIT_MS : config.timeoutMs;
      const line = isBackground ? background : queue;
      return new Promise<Release>((resolve, reject) => {
        const leave = () => {
          line.delete(waiter);
          clearTimeout(timer);
          signal.removeEventListener("abort", onAbort);
        };
        const waiter: Waiter = {
          admit() {
            leave();
            resolve(take(priority));
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
        line.add(waiter);
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
      for (const waiter of [...queue, ...background]) waiter.fail(reason);
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
