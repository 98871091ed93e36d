/** Named OpenAI-compatible clouds: what `preset` fills in (filled in by the presets work). */
export const PROVIDER_PRESETS = {} as const satisfies Record<string, { readonly baseUrl: string; readonly apiKeyEnv?: string }>;

export type PresetName = keyof typeof PROVIDER_PRESETS;
