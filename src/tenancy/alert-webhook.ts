import { createHmac } from "node:crypto";
import { request } from "undici";
import type { AlertSettings } from "../config/config.js";
import { backoffDelay } from "../core/backoff.js";
import type { BudgetAlert } from "./budget-alerts.js";
import { usdFromMicros } from "./quota-headers.js";

/** First wait before a delivery is tried again; it doubles per attempt up to MAX_BACKOFF_MS. */
export const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 60_000;
/** Bytes of a receiver's answer read at most (it is drained, not used). */
const MAX_ANSWER_BYTES = 64 * 1024;

/** The body a receiver gets: the alert in plain figures (dollars as decimal strings, times in RFC 3339). */
export function alertBody(alert: BudgetAlert): string {
  return JSON.stringify({
    type: "budget.threshold",
    id: alert.id,
    level: alert.level,
    name: alert.name,
    levelId: alert.levelId,
    threshold: alert.threshold,
    period: alert.period,
    periodStart: new Date(alert.periodStart).toISOString(),
    periodEnd: new Date(alert.periodEnd).toISOString(),
    budgetUsd: usdFromMicros(alert.budgetMicros),
    spentUsd: alert.spentMicros === undefined ? null : usdFromMicros(alert.spentMicros),
    at: new Date(alert.at).toISOString(),
  });
}

/**
 * The `sluice-signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256 of
 * "<t>.<body>">`. Signing the time with the body lets a receiver refuse a
 * replayed delivery (an old `t`) as well as a forged one.
 */
export function signature(secret: string, body: string, unixSeconds: number): string {
  return `t=${unixSeconds},v1=${createHmac("sha256", secret).update(`${unixSeconds}.${body}`).digest("hex")}`;
}

export type WebhookEvent =
  | { readonly type: "delivered"; readonly alert: BudgetAlert; readonly attempts: number }
  | { readonly type: "retrying"; readonly alert: BudgetAlert; readonly attempt: number; readonly cause: string }
  | { readonly type: "dropped"; readonly alert: BudgetAlert; readonly reason: "queue_full" | "attempts" | "closed" };

export interface AlertWebhook {
  send(alert: BudgetAlert): void;
  readonly waiting: number;
  /** Tries what waits for up to `graceMs`, then drops the rest (counted). */
  close(graceMs: number): Promise<void>;
}

/**
 * Delivers alerts to the operator's receiver, one at a time, off every
 * request's path: POST JSON, signed, each attempt bounded by `timeoutMs`,
 * retried with doubling backoff until a 2xx or `maxAttempts`; a bounded
 * queue in front, whose overflow is dropped and reported, never grown.
 */
export function createAlertWebhook(settings: NonNullable<AlertSettings["webhook"]>, onEvent: (event: WebhookEvent) => void): AlertWebhook {
  const queue: BudgetAlert[] = [];
  let sending: Promise<void> | undefined;
  let closed = false;
  let wake: (() => void) | undefined;
  let pause: NodeJS.Timeout | undefined;

  const attempt = async (alert: BudgetAlert): Promise<void> => {
    const body = alertBody(alert);
    const res = await request(settings.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": "sluice-alerts",
        "sluice-event-id": alert.id,
        "sluice-signature": signature(settings.secret.reveal(), body, Math.floor(Date.now() / 1000)),
      },
      body,
      headersTimeout: settings.timeoutMs,
      bodyTimeout: settings.timeoutMs,
      signal: AbortSignal.timeout(settings.timeoutMs),
    });
    let read = 0;
    for await (const chunk of res.body) {
      read += (chunk as Buffer).length;
      if (read > MAX_ANSWER_BYTES) break;
    }
    if (read > MAX_ANSWER_BYTES) res.body.destroy();
    if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`the receiver answered ${res.statusCode}`);
  };

  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      wake = resolve;
      pause = setTimeout(resolve, ms);
      pause.unref();
    }).finally(() => {
      wake = undefined;
      pause = undefined;
    });

  const run = async () => {
    while (queue.length > 0 && !closed) {
      const alert = queue[0]!;
      let delivered = false;
      for (let n = 1; n <= settings.maxAttempts && !delivered; n++) {
        try {
          await attempt(alert);
          delivered = true;
          onEvent({ type: "delivered", alert, attempts: n });
        } catch (error) {
          if (n === settings.maxAttempts || closed) break;
          onEvent({ type: "retrying", alert, attempt: n, cause: error instanceof Error ? error.message.slice(0, 200) : "unknown" });
          await wait(backoffDelay(n - 1, { baseMs: FIRST_BACKOFF_MS, maxMs: MAX_BACKOFF_MS }));
          if (closed) break;
        }
      }
      // Closing with this one undelivered: close() reports it with the rest of the queue.
      if (closed && !delivered) return;
      queue.shift();
      if (!delivered) onEvent({ type: "dropped", alert, reason: "attempts" });
    }
  };

  return {
    send(alert) {
      if (closed || queue.length >= settings.queueMax) {
        onEvent({ type: "dropped", alert, reason: closed ? "closed" : "queue_full" });
        return;
      }
      queue.push(alert);
      sending ??= run().finally(() => (sending = undefined));
    },
    get waiting() {
      return queue.length;
    },
    async close(graceMs) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([sending, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
      closed = true;
      if (pause) clearTimeout(pause);
      wake?.();
      await sending;
      for (const alert of queue.splice(0)) onEvent({ type: "dropped", alert, reason: "closed" });
    },
  };
}
