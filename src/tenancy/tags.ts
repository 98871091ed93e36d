import { holdsUnsafeText, quoteClientValue, UNSAFE_TEXT_WORDS } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";

/** Request header carrying cost-allocation tags: `project=search,env=prod` (values percent-encoded when they hold `,` or `=`). */
export const TAGS_HEADER = "sluice-tags";
/** Response header naming the tags a request sent that were not kept (not in auth.tagKeys). */
export const TAGS_DROPPED_HEADER = "sluice-tags-dropped";

/** Longest tag value: a longer one is refused, never cut, so a report never shows a value nobody sent. */
export const MAX_TAG_VALUE_CHARS = 256;
/** Pairs read from the header at most: it is parsed before anything else is spent on the request. */
const MAX_HEADER_TAGS = 32;
const TAG_KEY = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

function malformed(why: string): GatewayError {
  return new GatewayError("invalid_request", `${TAGS_HEADER}: ${why} (write key=value pairs separated by commas)`, { field: TAGS_HEADER });
}

function tooLong(field: string, key: string): string {
  return `${field}: the value of tag ${quoteClientValue(key)} is longer than ${MAX_TAG_VALUE_CHARS} characters`;
}

/**
 * The tags of a `sluice-tags` header. A header that cannot be read is
 * refused (INVALID_ARGUMENT / 400) rather than half-read: a caller that
 * tags its spend needs to know the tags did not arrive.
 */
export function parseTagsHeader(value: string | undefined): Readonly<Record<string, string>> {
  if (value === undefined || value.trim() === "") return {};
  const pairs = value.split(",");
  if (pairs.length > MAX_HEADER_TAGS) throw malformed(`at most ${MAX_HEADER_TAGS} tags`);
  const tags: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    if (eq < 0) throw malformed("a tag without =");
    const key = pair.slice(0, eq).trim();
    if (!TAG_KEY.test(key)) throw malformed("a tag key must be 1 to 64 letters, digits and _ . : - (starting with a letter or digit)");
    let tagValue: string;
    try {
      tagValue = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      throw malformed(`the value of ${key} is not valid percent-encoding`);
    }
    if (Object.hasOwn(tags, key)) throw malformed(`${key} given twice`);
    if (holdsUnsafeText(tagValue)) throw new GatewayError("invalid_request", `${TAGS_HEADER}: tag ${quoteClientValue(key)} holds ${UNSAFE_TEXT_WORDS}, which tags may not`, { field: TAGS_HEADER });
    if (tagValue.length > MAX_TAG_VALUE_CHARS) throw new GatewayError("invalid_request", tooLong(TAGS_HEADER, key), { field: TAGS_HEADER });
    tags[key] = tagValue;
  }
  return tags;
}

/** What a request is charged under: the tags kept, and the keys of those it sent that were not. */
export interface AllocationTags {
  readonly tags: Readonly<Record<string, string>>;
  readonly dropped: readonly string[];
}

export const NO_TAGS: AllocationTags = Object.freeze({ tags: Object.freeze({}), dropped: Object.freeze([]) });

/**
 * The request's allocation tags: its labels (gRPC `metadata.labels`, the
 * facades' body `metadata`) and its `sluice-tags` header (which wins for a
 * key given in both), kept only for keys the operator allows
 * (auth.tagKeys: what reports may group by, so their cardinality stays
 * the operator's choice). Every other tag is named in `dropped`, for the
 * response header: never dropped silently. A kept value longer than the
 * bound stays here whole, for the pipeline to refuse (checkTagValues): a
 * caller whose tag did not fit must hear it, not find it missing.
 */
export function allocationTags(labels: Readonly<Record<string, string>>, header: Readonly<Record<string, string>>, allowed: ReadonlySet<string>): AllocationTags {
  const merged = { ...labels, ...header };
  const names = Object.keys(merged);
  if (names.length === 0) return NO_TAGS;
  const tags: Record<string, string> = {};
  const dropped: string[] = [];
  for (const name of names) {
    const value = merged[name]!;
    if (allowed.has(name)) tags[name] = value;
    else dropped.push(name);
  }
  return { tags, dropped };
}

/**
 * Refuses a kept tag whose value is longer than the bound (the body's
 * metadata is read before the allowed keys are known: only kept tags are
 * bounded, other metadata goes to providers that have bounds of their own).
 */
export function checkTagValues(tags: Readonly<Record<string, string>>): void {
  for (const [key, value] of Object.entries(tags)) {
    if (value.length > MAX_TAG_VALUE_CHARS) throw new GatewayError("invalid_request", tooLong("metadata", key), { field: "metadata" });
  }
}

/** The dropped tags as a response header value (keys only, printable, bounded), or undefined when none were. */
export function droppedTagsHeader(dropped: readonly string[]): string | undefined {
  if (dropped.length === 0) return undefined;
  // Label keys come from request bodies: only header-safe characters, and not without end.
  return dropped
    .slice(0, 32)
    .map((name) => name.replace(/[^\x21-\x7e]|,/g, "?").slice(0, 64))
    .join(",");
}
