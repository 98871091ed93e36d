import { z } from "zod";

/** Every upstream phase limit, in milliseconds. See README "Timeouts". */
export const timeoutsSchema = z.strictObject({
  /** TCP (and TLS) connection establishment. */
  connectMs: z.number().int().positive().default(5_000),
  /** From request sent to response headers received. */
  headersMs: z.number().int().positive().default(30_000),
  /** From response headers to the first content delta. */
  firstTokenMs: z.number().int().positive().default(60_000),
  /** Longest silence between two upstream reads (pings count as reads). */
  idleMs: z.number().int().positive().default(30_000),
  /** Whole upstream exchange, first byte to last. */
  totalMs: z.number().int().positive().default(600_000),
});

export type TimeoutsConfig = z.infer<typeof timeoutsSchema>;

const partialTimeoutsSchema = timeoutsSchema.partial();

const providerSchema = z.strictObject({
  kind: z.enum(["openai"]),
  /** Base URL including the API version path, e.g. https://api.openai.com/v1 */
  baseUrl: z.url({ protocol: /^https?$/ }),
  /** Name of the environment variable holding the API key; never the key itself. */
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name")
    .optional(),
  timeouts: partialTimeoutsSchema.optional(),
});

const modelSchema = z.strictObject({
  provider: z.string().min(1),
  /** The provider's model id. */
  model: z.string().min(1),
  timeouts: partialTimeoutsSchema.optional(),
});

const aliasName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]*$/, "letters, digits and . _ : / - only");

export const configSchema = z
  .strictObject({
    server: z
      .strictObject({
        host: z.string().min(1).default("127.0.0.1"),
        port: z.number().int().min(0).max(65_535).default(8080),
      })
      .prefault({}),
    log: z
      .strictObject({
        level: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
      })
      .prefault({}),
    limits: z
      .strictObject({
        /** Largest upstream SSE event accepted; larger ones end the stream with an error. */
        maxEventBytes: z.number().int().min(1024).default(1_048_576),
      })
      .prefault({}),
    providers: z.record(aliasName, providerSchema).refine((p) => Object.keys(p).length > 0, "at least one provider"),
    models: z.record(aliasName, modelSchema).refine((m) => Object.keys(m).length > 0, "at least one model alias"),
  })
  .superRefine((config, ctx) => {
    for (const [alias, model] of Object.entries(config.models)) {
      if (!(model.provider in config.providers)) {
        ctx.addIssue({
          code: "custom",
          path: ["models", alias, "provider"],
          message: `unknown provider "${model.provider}"`,
        });
      }
    }
  });

/** The configuration file as written (before defaults are applied). */
export type ConfigInput = z.input<typeof configSchema>;
export type ConfigFile = z.output<typeof configSchema>;
