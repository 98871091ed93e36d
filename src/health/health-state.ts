/**
 * Whether the gateway takes new work: the one source for `/readyz` and the
 * gRPC health service, so that an HTTP probe, a Kubernetes gRPC probe and
 * a load balancer watching the health stream all see a drain at the same
 * moment.
 */
export interface HealthState {
  /** True while listening, not draining and held back by nothing (see `hold`). */
  readonly ready: boolean;
  /** True from the start of a drain on (and before listening). */
  readonly draining: boolean;
  /** Why the gateway is not ready although listening and not draining (e.g. `store`); empty otherwise. */
  readonly waitingFor: readonly string[];
  /** True once the server has closed: watchers end their streams. */
  readonly closed: boolean;
  /** Callers waiting in `changed`; for tests that prove a cancelled watch leaves nothing behind. */
  readonly watchers: number;
  /** Listening (true) or draining (false). */
  setReady(ready: boolean): void;
  /**
   * Holds readiness back for `reason` while `held`: a dependency without
   * which every request would be refused (a fail-closed store that is not
   * connected) takes the replica out of the load balancer's rotation
   * instead of letting it answer UNAVAILABLE to whatever is sent its way.
   */
  hold(reason: string, held: boolean): void;
  /**
   * Adds (or, with `undefined`, removes) a part of `/readyz`'s `details`,
   * read at each probe: how dependencies that do not decide readiness are
   * doing (the MCP servers), for an operator reading the probe.
   */
  detail(name: string, read: (() => unknown) | undefined): void;
  /** Every detail, read now; empty when none was added. */
  details(): Record<string, unknown>;
  close(): void;
  /**
   * Resolves at the next change of `ready`, at close, or when `signal`
   * aborts, whichever comes first; it never leaves a listener behind.
   */
  changed(signal: AbortSignal): Promise<void>;
}

export function createHealthState(): HealthState {
  let listening = false;
  let closed = false;
  const holds = new Set<string>();
  const detailReaders = new Map<string, () => unknown>();
  let ready = false;
  const waiters = new Set<() => void>();
  const update = () => {
    const next = listening && !closed && holds.size === 0;
    if (next === ready) return;
    ready = next;
    wakeAll();
  };
  const wakeAll = () => {
    const woken = [...waiters];
    waiters.clear();
    for (const wake of woken) wake();
  };

  return {
    get ready() {
      return ready;
    },
    get draining() {
      return !listening || closed;
    },
    get waitingFor() {
      return [...holds];
    },
    get closed() {
      return closed;
    },
    get watchers() {
      return waiters.size;
    },
    setReady(value) {
      if (closed) return;
      listening = value;
      update();
    },
    hold(reason, held) {
      if (held) holds.add(reason);
      else holds.delete(reason);
      update();
    },
    detail(name, read) {
      if (read) detailReaders.set(name, read);
      else detailReaders.delete(name);
    },
    details() {
      return Object.fromEntries([...detailReaders].map(([name, read]) => [name, read()]));
    },
    close() {
      if (closed) return;
      ready = false;
      closed = true;
      wakeAll();
    },
    changed(signal) {
      if (closed || signal.aborted) return Promise.resolve();
      return new Promise((resolve) => {
        const wake = () => {
          signal.removeEventListener("abort", wake);
          waiters.delete(wake);
          resolve();
        };
        waiters.add(wake);
        signal.addEventListener("abort", wake, { once: true });
      });
    },
  };
}

/**
 * Resolves once the gateway drains (or `signal` aborts): for connections
 * that outlive a request, such as WebSockets, which a drain should close
 * as soon as they hold no work rather than wait out its grace.
 */
export async function untilDraining(health: HealthState, signal: AbortSignal): Promise<void> {
  while (!health.draining && !signal.aborted) await health.changed(signal);
}
