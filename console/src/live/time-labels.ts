import { utcClock } from "../time-format.js";

/**
 * Labels of the chart's time axis. uPlot's own put a date on the first tick
 * ("12/2/26 11:32am", twice as wide as ":30"), which ran into the next label
 * on all but wide screens. Here every label is a clock time of one width,
 * and labels that would still touch are left out. No DOM: the page measures
 * text, a test passes its own widths.
 */

/** A tick of the axis: where it is (CSS px along the axis) and what its label would say. */
export interface Tick {
  readonly pos: number;
  readonly text: string;
}

/** Least space between two labels, in CSS px. */
export const LABEL_GAP = 8;

/**
 * The label to draw at each tick, in tick order (left to right), or null
 * for a tick left unlabelled. A label is centred on its tick (uPlot's
 * placement on a bottom axis) and kept only when it starts `gap` px or more
 * after the end of the last label kept: the first is always kept, and no two
 * kept labels overlap, whatever their widths.
 */
export function placeLabels(ticks: readonly Tick[], widthOf: (text: string) => number, gap: number = LABEL_GAP): (string | null)[] {
  let lastEnd = Number.NEGATIVE_INFINITY;
  return ticks.map(({ pos, text }) => {
    const half = widthOf(text) / 2;
    if (pos - half < lastEnd + gap) return null;
    lastEnd = pos + half;
    return text;
  });
}

/** UTC clock time of `seconds` since the epoch (time-format.ts): HH:MM, and :SS when ticks are less than a minute apart (`incrSeconds`). */
export function clockLabel(seconds: number, incrSeconds: number): string {
  return utcClock(seconds * 1000, incrSeconds % 60 !== 0);
}
