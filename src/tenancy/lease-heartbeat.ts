import type { Timers } from "../core/timers.js";
import type { TenantStore } from "../store/tenant-store.js";

/**
 * A replica's stream leases (docs/tenancy.md, "Rate limits"): a stream's
 * slot and budget reservation are held by a lease of `leaseMs`, which a
 * stream may outlive. Every third of it, one store call renews the leases
 * of this replica's running streams and releases every lease that ran out
 * anywhere (a replica that died mid-stream). One timer per replica, not
 * one per stream; never two beats at once, and a beat that comes due
 * during another runs after it rather than being lost.
 */
export interface LeaseHeartbeat {
  /** A stream admitted under `admissionId` runs here: renew its lease, until `untilMs` (epoch ms, on the heartbeat's clock) at most. */
  hold(admissionId: string, untilMs: number): void;
  /** Its stream ended (settled): renew it no more. */
  drop(admissionId: string): void;
  /** Streams whose leases it renews now. */
  readonly held: number;
  close(): void;
}

export function createLeaseHeartbeat(options: { readonly store: Pick<TenantStore, "heartbeat">; readonly leaseMs: number; readonly timers: Timers }): LeaseHeartbeat {
  const { store, timers } = options;
  const live = new Map<string, number>();
  let beating = false;
  let beatAgain = false;
  let timer: unknown;
  let closed = false;

  const beat = async () => {
    const now = timers.now();
    for (const [id, until] of live) if (until <= now) live.delete(id);
    try {
      await store.heartbeat([...live.keys()]);
    } catch {
      // the store reports its own trouble; the next beat tries again
    }
  };
  const tick = () => {
    if (beating) {
      beatAgain = true;
      return;
    }
    beating = true;
    void beat().finally(() => {
      beating = false;
      if (!beatAgain || closed) return;
      beatAgain = false;
      tick();
    });
  };
  const schedule = () => {
    timer = timers.setTimeout(
      () => {
        tick();
        schedule();
      },
      Math.max(1, Math.floor(options.leaseMs / 3)),
    );
    (timer as { unref?: () => void } | undefined)?.unref?.();
  };
  schedule();

  return {
    hold: (id, untilMs) => void live.set(id, untilMs),
    drop: (id) => void live.delete(id),
    get held() {
      return live.size;
    },
    close() {
      closed = true;
      timers.clearTimeout(timer);
    },
  };
}
