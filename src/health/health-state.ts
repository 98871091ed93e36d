/**
 * Whether the gateway takes new work: the one source for `/readyz` and the
 * gRPC health service, so that an HTTP probe, a Kubernetes gRPC probe and
 * a load balancer watching the health stream all see a drain at the same
 * moment.
 */
export interface HealthState {
  /** True once listening, false from the start of draining on. */
  readonly ready: boolean;
  /** True once the server has closed: watchers end their streams. */
  readonly closed: boolean;
  /** Callers waiting in `changed`; for tests that prove a cancelled watch leaves nothing behind. */
  readonly watchers: number;
  setReady(ready: boolean): void;
  close(): void;
  /**
   * Resolves at the next change of `ready`, at close, or when `signal`
   * aborts, whichever comes first; it never leaves a listener behind.
   */
  changed(signal: AbortSignal): Promise<void>;
}

export function createHealthState(): HealthState {
  let ready = false;
  let closed = false;
  const waiters = new Set<() => void>();
  const wakeAll = () => {
    const woken = [...waiters];
    waiters.clear();
    for (const wake of woken) wake();
  };

  return {
    get ready() {
      return ready;
    },
    get closed() {
      return closed;
    },
    get watchers() {
      return waiters.size;
    },
    setReady(value) {
      if (value === ready || closed) return;
      ready = value;
      wakeAll();
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
