/** Thrown when Redis took longer than the caller's timeout. */
export class StoreTimeoutError extends Error {
  override readonly name = "StoreTimeoutError";
}

/**
 * `work`, or a rejection after `ms`. node-redis cannot time out a command
 * once written (withdrawing it would break the reply order), so every
 * Redis call a stream waits on goes through here; the command's answer,
 * when it comes, is ignored.
 */
export function within<T>(work: Promise<T>, ms: number, operation: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreTimeoutError(`${operation}: no answer from Redis within ${ms} ms`)), ms);
  });
  work.catch(() => undefined);
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
