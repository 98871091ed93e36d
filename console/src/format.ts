/** Display helpers: numbers as people read them. */

export function count(n: number | bigint): string {
  return Number(n).toLocaleString("en-US");
}

export function ms(value: number | undefined): string {
  if (value === undefined) return "–";
  return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${value.toFixed(value < 10 ? 1 : 0)} ms`;
}

export function usd(micros: number | bigint | undefined): string {
  if (micros === undefined) return "–";
  return `$${(Number(micros) / 1e6).toFixed(4)}`;
}

export function rate(value: number): string {
  return value >= 100 ? count(Math.round(value)) : value.toFixed(1);
}
