import { describe, expect, it } from "vitest";
import { clockLabel, LABEL_GAP, placeLabels, type Tick } from "../console/src/live/time-labels.js";
import { bucketLabel, utcDate, utcDateTime } from "../console/src/time-format.js";

/** Widths as a monospace font would give them: 7 px a character. */
const mono = (text: string) => text.length * 7;

/** Where kept labels start and end, centred on their ticks. */
function spans(ticks: readonly Tick[], labels: readonly (string | null)[], widthOf: (text: string) => number) {
  return ticks.flatMap((tick, i) => (labels[i] === null ? [] : [{ start: tick.pos - widthOf(tick.text) / 2, end: tick.pos + widthOf(tick.text) / 2 }]));
}

describe("time axis labels", () => {
  it("keeps every label when they all fit", () => {
    const ticks = [0, 70, 140, 210].map((pos, i) => ({ pos, text: `11:3${i}:00` }));
    expect(placeLabels(ticks, mono)).toEqual(["11:30:00", "11:31:00", "11:32:00", "11:33:00"]);
  });

  it("leaves out the label after a wide first one, which used to run into it, and keeps the next that fits", () => {
    // uPlot's own first label, a date and a time, beside clock times: 105 px against 35.
    const ticks = [
      { pos: 60, text: "12/2/26 11:32am" },
      { pos: 110, text: "11:33" },
      { pos: 160, text: "11:34" },
      { pos: 210, text: "11:35" },
    ];
    expect(placeLabels(ticks, mono)).toEqual(["12/2/26 11:32am", null, "11:34", "11:35"]);
  });

  it("never lets two kept labels come closer than the gap, whatever the widths and spacing", () => {
    let seed = 7;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    for (let run = 0; run < 200; run++) {
      let pos = random() * 50;
      const ticks = Array.from({ length: 12 }, () => ({ pos: (pos += 10 + random() * 80), text: "x".repeat(1 + Math.floor(random() * 16)) }));
      const labels = placeLabels(ticks, mono);
      expect(labels[0]).toBe(ticks[0]!.text);
      const kept = spans(ticks, labels, mono);
      for (let i = 1; i < kept.length; i++) expect(kept[i]!.start - kept[i - 1]!.end).toBeGreaterThanOrEqual(LABEL_GAP);
    }
  });

  it("writes UTC clock times of one width: HH:MM:SS for ticks under a minute apart, HH:MM otherwise", () => {
    const at = Date.UTC(2026, 0, 2, 9, 5, 30) / 1000;
    expect(clockLabel(at, 30)).toBe("09:05:30");
    expect(clockLabel(at, 60)).toBe("09:05");
    expect(clockLabel(at, 120)).toBe("09:05");
  });
});

describe("one time format on every page: UTC, 24-hour, ISO order", () => {
  const at = Date.UTC(2026, 11, 6, 20, 13, 14);

  it("a date, and a date with its time, as the Batches page writes them", () => {
    expect(utcDate(at)).toBe("2026-12-06");
    expect(utcDateTime(at)).toBe("2026-12-06 20:13:14 UTC");
    expect(utcDateTime(at, false)).toBe("2026-12-06 20:13 UTC");
  });

  it("the Spend chart's buckets: days by date; hours by clock time, the date where a day begins, date and time in the legend", () => {
    const hour = Date.UTC(2026, 11, 6, 20) / 1000;
    const midnight = Date.UTC(2026, 11, 7) / 1000;
    expect(bucketLabel(hour, false, "axis")).toBe("20:00");
    expect(bucketLabel(midnight, false, "axis")).toBe("2026-12-07");
    expect(bucketLabel(hour, false, "legend")).toBe("2026-12-06 20:00 UTC");
    expect(bucketLabel(midnight, true, "axis")).toBe("2026-12-07");
    expect(bucketLabel(midnight, true, "legend")).toBe("2026-12-07");
  });
});
