/**
 * The kinds of personal data and secrets Sluice finds in text
 * (docs/compliance.md). The list is part of the configuration's vocabulary
 * (compliance.pii.detectors names them, a custom pattern may not take their
 * names), so it lives here and the detectors (compliance/pii-detectors.ts)
 * stand on it rather than the settings on the detectors.
 */
export const PII_KINDS = ["email", "phone", "card", "iban", "cn_id", "us_ssn", "ipv4", "ipv6", "secret"] as const;
export type PiiKind = (typeof PII_KINDS)[number];
