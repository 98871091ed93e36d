import type { Prompt, Resource, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { McpSettings } from "../../config/mcp-schema.js";
import type { ExposedPrompt, ExposedResource, ExposedTool } from "../contract.js";
import { exposedName, schemaProblem } from "./listing-bounds.js";

/** One server's listings as callers see them, after the bounds. */
export interface Listings {
  readonly tools: readonly ExposedTool[];
  readonly prompts: readonly ExposedPrompt[];
  readonly resources: readonly ExposedResource[];
}

/** What was read (already cut to `maxTools` while reading, `cut` saying so). */
export interface RawListings {
  readonly tools: { readonly items: readonly Tool[]; readonly cut: boolean };
  readonly prompts: { readonly items: readonly Prompt[]; readonly cut: boolean };
  readonly resources: { readonly items: readonly Resource[]; readonly cut: boolean };
}

/** What the bounds left out of one listing (upstreams.ts logs it once per server while it stays the same). */
export interface LeftOut {
  readonly cutAtMaxTools: boolean;
  readonly schemaTooLarge: number;
  readonly schemaTooDeep: number;
  readonly badName: number;
}

/**
 * Exposes a server's listings under the bounds: tools whose schemas are
 * over `maxSchemaBytes` or `maxSchemaDepth`, and tools and prompts whose
 * exposed name `<server>_<name>` clients would not accept (SEP-986), are
 * left out and counted; the listing was already cut at `maxTools`.
 */
export function cutListing(server: string, raw: RawListings, settings: Pick<McpSettings, "maxSchemaBytes" | "maxSchemaDepth">): Listings & { readonly leftOut: LeftOut } {
  let schemaTooLarge = 0;
  let schemaTooDeep = 0;
  let badName = 0;
  const tools: ExposedTool[] = [];
  for (const tool of raw.tools.items) {
    const name = exposedName(server, tool.name);
    if (name === undefined) {
      badName++;
      continue;
    }
    const problem = schemaProblem(tool, settings);
    if (problem === "depth") schemaTooDeep++;
    else if (problem === "bytes") schemaTooLarge++;
    else tools.push({ name, server, upstreamName: tool.name, definition: { ...tool, name } });
  }
  const prompts: ExposedPrompt[] = [];
  for (const prompt of raw.prompts.items) {
    const name = exposedName(server, prompt.name);
    if (name === undefined) badName++;
    else prompts.push({ name, server, upstreamName: prompt.name, definition: { ...prompt, name } });
  }
  const resources = raw.resources.items.map((definition) => ({ server, definition }));
  const leftOut: LeftOut = { cutAtMaxTools: raw.tools.cut || raw.prompts.cut || raw.resources.cut, schemaTooLarge, schemaTooDeep, badName };
  return { tools, prompts, resources, leftOut };
}
