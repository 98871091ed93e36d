declare module "parse-prometheus-text-format" {
  /** One sample: a value, or a histogram's buckets, count and sum. */
  export interface PrometheusSample {
    readonly value?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly buckets?: Readonly<Record<string, string>>;
    readonly count?: string;
    readonly sum?: string;
  }
  export interface PrometheusFamily {
    readonly name: string;
    readonly help: string;
    readonly type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED";
    readonly metrics: readonly PrometheusSample[];
  }
  /** Parses the Prometheus text exposition format; throws on malformed input. */
  export default function parse(text: string): PrometheusFamily[];
}
