import { pino, type Logger } from "pino";

export type { Logger };

/**
 * JSON logs to stdout. Redaction is a second line of defence: secrets are
 * `Secret` objects that print as "[redacted]", and no code logs headers, but
 * should a header object slip in, its credentials are still cut.
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    base: { service: "sluice" },
    redact: {
      paths: ["*.authorization", "*.headers.authorization", "*.headers['x-api-key']", "*.headers['x-goog-api-key']", "*.apiKey"],
      censor: "[redacted]",
    },
  };
  return destination ? pino(options, destination as pino.DestinationStream) : pino(options);
}
