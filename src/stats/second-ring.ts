/**
 * A fixed ring of per-second slots: the slot for second `s` is `s % size`,
 * reused (reset) when a later second claims it. Nothing advances it on a
 * timer: a slot is claimed when something happens in its second, and a
 * reader skips slots that belong to another second. Memory is `size`
 * slots whatever the traffic or the time without any.
 */
export interface SecondRing<T> {
  /** The slot of second `second` (epoch seconds), claimed and reset if it held an older second. */
  at(second: number): T;
  /** The slot of `second` if something was recorded in it, else undefined. */
  peek(second: number): T | undefined;
  readonly size: number;
}

export function createSecondRing<T>(size: number, fresh: () => T, reset: (slot: T) => void): SecondRing<T> {
  const slots: T[] = Array.from({ length: size }, fresh);
  const seconds = new Float64Array(size).fill(-1);
  return {
    size,
    at(second) {
      const index = second % size;
      if (seconds[index] !== second) {
        reset(slots[index]!);
        seconds[index] = second;
      }
      return slots[index]!;
    },
    peek(second) {
      const index = second % size;
      return seconds[index] === second ? slots[index] : undefined;
    },
  };
}
