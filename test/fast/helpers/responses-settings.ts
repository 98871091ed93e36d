import { configSchema } from "../../../src/config/schema.js";
import type { ResponsesSettings } from "../../../src/config/settings.js";

/** `responses.*` as the schema's defaults make them, with a test's own changes: a new setting needs no edit here. */
export function responsesSettings(overrides: Partial<ResponsesSettings> = {}): ResponsesSettings {
  return { ...configSchema.shape.responses.parse({}), ...overrides };
}
