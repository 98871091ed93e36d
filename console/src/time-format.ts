/**
 * The one way the console writes a time, on every page: UTC, 24-hour, in
 * ISO 8601's order (docs/operations.md, "Console"). UTC because the
 * ledger's days and hours and the budgets' periods are UTC ones: a chart
 * in local time would put a day's spend across two of its days. Pages used
 * to mix a 24-hour local clock, uPlot's "12/2/26 11am" and the browser
 * locale's "12/6/2026, 8:13:14 AM".
 */

const two = (n: number) => String(n).padStart(2, "0");

/** `2026-12-06` */
export function utcDate(ms: number): string {
  const t = new Date(ms);
  return `${t.getUTCFullYear()}-${two(t.getUTCMonth() + 1)}-${two(t.getUTCDate())}`;
}

/** `08:13:14`, or `08:13` without seconds. */
export function utcClock(ms: number, seconds = true): string {
  const t = new Date(ms);
  const minutes = `${two(t.getUTCHours())}:${two(t.getUTCMinutes())}`;
  return seconds ? `${minutes}:${two(t.getUTCSeconds())}` : minutes;
}

/** `2026-12-06 08:13:14 UTC`, or `2026-12-06 08:13 UTC` without seconds. */
export function utcDateTime(ms: number, seconds = true): string {
  return `${utcDate(ms)} ${utcClock(ms, seconds)} UTC`;
}

/**
 * A spend bucket of the Spend chart (`seconds` since the epoch): a day
 * bucket is its date; an hour bucket is its clock time on the axis (its
 * date where a day begins) and its date and time in the legend.
 */
export function bucketLabel(seconds: number, days: boolean, where: "axis" | "legend"): string {
  const ms = seconds * 1000;
  if (days) return utcDate(ms);
  if (where === "legend") return utcDateTime(ms, false);
  return utcClock(ms, false) === "00:00" ? utcDate(ms) : utcClock(ms, false);
}
