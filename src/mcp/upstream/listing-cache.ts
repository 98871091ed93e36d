/**
 * One server's listing, reused for `listCacheMs`: callers that ask while
 * the first request is out share it (one upstream request however many
 * callers arrive at once), a failed request is not kept, and `drop` (its
 * `list_changed`) ends the listing at once — a request already out when
 * it was dropped is not stored, since it may predate the change.
 */
export interface ListingCache<T> {
  get(load: () => Promise<T>): Promise<T>;
  drop(): void;
  /** The listing held now, if any (for health). */
  peek(): T | undefined;
}

export function createListingCache<T>(ttlMs: number, now: () => number): ListingCache<T> {
  let held: { value: T; at: number } | undefined;
  let pending: Promise<T> | undefined;
  let generation = 0;
  return {
    get(load) {
      if (held && now() - held.at < ttlMs) return Promise.resolve(held.value);
      if (pending) return pending;
      const mine = generation;
      const request = load().then(
        (value) => {
          if (generation === mine) held = { value, at: now() };
          if (pending === request) pending = undefined;
          return value;
        },
        (error: unknown) => {
          if (pending === request) pending = undefined;
          throw error;
        },
      );
      pending = request;
      return request;
    },
    drop() {
      generation++;
      held = undefined;
      pending = undefined;
    },
    peek: () => held?.value,
  };
}
