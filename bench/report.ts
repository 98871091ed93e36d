import { round } from "./stats.js";

export interface Goal {
  /** A stable name for checks that read bench/results/*.json. */
  readonly id: string;
  readonly name: string;
  readonly target: string;
  readonly measured: string;
  readonly met: boolean;
}

/** A markdown table from rows of cells. */
export function table(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number>>): string {
  const cell = (v: string | number) => (typeof v === "number" ? String(round(v)) : v);
  return [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`, ...rows.map((r) => `| ${r.map(cell).join(" | ")} |`)].join("\n");
}

export interface Series {
  readonly name: string;
  readonly color: string;
  readonly points: ReadonlyArray<{ x: number; y: number }>;
}

/** A small line chart (log x axis) as standalone SVG. */
export function lineChart(title: string, xLabel: string, yLabel: string, series: readonly Series[]): string {
  const W = 640;
  const H = 360;
  const m = { l: 64, r: 170, t: 40, b: 48 };
  const xs = series.flatMap((s) => s.points.map((p) => p.x));
  const ys = series.flatMap((s) => s.points.map((p) => p.y)).filter(Number.isFinite);
  const [x0, x1] = [Math.log10(Math.min(...xs)), Math.log10(Math.max(...xs))];
  const yMin = Math.min(0, ...ys);
  const yMax = Math.max(1, ...ys) * 1.1;
  const px = (x: number) => m.l + ((Math.log10(x) - x0) / (x1 - x0 || 1)) * (W - m.l - m.r);
  const py = (y: number) => H - m.b - ((y - yMin) / (yMax - yMin)) * (H - m.t - m.b);
  const ticks = 5;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2 - m.r / 2}" y="22" text-anchor="middle" font-size="14">${title}</text>`,
    `<line x1="${m.l}" y1="${H - m.b}" x2="${W - m.r}" y2="${H - m.b}" stroke="#333"/>`,
    `<line x1="${m.l}" y1="${m.t}" x2="${m.l}" y2="${H - m.b}" stroke="#333"/>`,
    `<text x="${(m.l + W - m.r) / 2}" y="${H - 12}" text-anchor="middle">${xLabel}</text>`,
    `<text transform="translate(16 ${(m.t + H - m.b) / 2}) rotate(-90)" text-anchor="middle">${yLabel}</text>`,
  ];
  for (const x of [...new Set(xs)].sort((a, b) => a - b)) {
    out.push(`<text x="${px(x)}" y="${H - m.b + 16}" text-anchor="middle">${x}</text>`);
  }
  for (let i = 0; i <= ticks; i++) {
    const y = yMin + ((yMax - yMin) * i) / ticks;
    out.push(`<line x1="${m.l}" y1="${py(y)}" x2="${W - m.r}" y2="${py(y)}" stroke="#eee"/>`);
    out.push(`<text x="${m.l - 6}" y="${py(y) + 4}" text-anchor="end">${round(y, 1)}</text>`);
  }
  series.forEach((s, i) => {
    const pts = s.points.filter((p) => Number.isFinite(p.y));
    out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts.map((p) => `${px(p.x)},${py(p.y)}`).join(" ")}"/>`);
    for (const p of pts) out.push(`<circle cx="${px(p.x)}" cy="${py(p.y)}" r="3" fill="${s.color}"/>`);
    out.push(`<rect x="${W - m.r + 12}" y="${m.t + i * 20 - 9}" width="12" height="3" fill="${s.color}"/>`);
    out.push(`<text x="${W - m.r + 30}" y="${m.t + i * 20 - 4}">${s.name}</text>`);
  });
  out.push("</svg>");
  return out.join("\n");
}
