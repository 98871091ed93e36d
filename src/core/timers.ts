/**
 * Node's timers hold a signed 32-bit millisecond count: anything at or
 * above 2^31 ms (24.8 days) overflows and fires after 1 ms, with only a
 * warning. Every delay that a client or a configuration can influence
 * passes through `clampDelay` before it reaches setTimeout.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export function clampDelay(ms: number): number {
  if (!(ms > 0)) return 0;
  return ms > MAX_TIMER_MS ? MAX_TIMER_MS : ms;
}
