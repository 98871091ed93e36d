import parse, { type PrometheusFamily, type PrometheusSample } from "parse-prometheus-text-format";

/**
 * A scrape of /metrics, parsed by a Prometheus text-format parser (not
 * regexes). The parser flattens labelled histogram series into one, so
 * histogram counts are read from the SDK's own reader instead; boundaries,
 * counters and gauges come from the text.
 */
export interface Scrape {
  readonly families: readonly PrometheusFamily[];
  /** The value of a counter or gauge: the sum over samples whose labels include `labels`. */
  value(name: string, labels?: Readonly<Record<string, string>>): number;
  /** A histogram's bucket boundaries (without +Inf). */
  buckets(name: string): number[];
  /** Every value of a label across a family. */
  labelValues(name: string, label: string): Set<string>;
}

const matches = (sample: PrometheusSample, labels: Readonly<Record<string, string>>) => Object.entries(labels).every(([k, v]) => sample.labels?.[k] === v);

export async function scrape(url: string): Promise<Scrape> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`scrape ${url}: status ${res.status}`);
  const families = parse(await res.text());
  const family = (name: string) => families.find((f) => f.name === name);
  return {
    families,
    value: (name, labels = {}) => (family(name)?.metrics ?? []).filter((s) => matches(s, labels)).reduce((n, s) => n + Number(s.value), 0),
    buckets: (name) =>
      Object.keys(family(name)?.metrics[0]?.buckets ?? {})
        .filter((b) => b !== "+Inf")
        .map(Number)
        .sort((a, b) => a - b),
    labelValues: (name, label) => new Set((family(name)?.metrics ?? []).map((s) => s.labels?.[label]).filter((v): v is string => v !== undefined)),
  };
}
