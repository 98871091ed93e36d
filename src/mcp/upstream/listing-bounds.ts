import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { MAX_TOOL_NAME_CHARS, NAME_SEPARATOR } from "../contract.js";

const EXPOSED_NAME = /^[A-Za-z0-9_.-]+$/;

/** `<server>_<name>` when it is a name clients accept (SEP-986), else undefined. */
export function exposedName(server: string, name: string): string | undefined {
  const exposed = `${server}${NAME_SEPARATOR}${name}`;
  return exposed.length <= MAX_TOOL_NAME_CHARS && EXPOSED_NAME.test(exposed) ? exposed : undefined;
}

/**
 * Whether `value` nests deeper than `maxDepth` (objects and arrays each
 * count one level). Walked with an explicit stack, never by recursion,
 * and it stops at the first path past the bound: a hostile schema can
 * neither overflow the stack nor make the walk long beyond its size.
 */
export function deeperThan(value: unknown, maxDepth: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (node === null || typeof node !== "object") continue;
    if (depth + 1 > maxDepth) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return false;
}

export interface SchemaBounds {
  readonly maxSchemaBytes: number;
  readonly maxSchemaDepth: number;
}

/** Why a tool's schemas are left out, or undefined when they are within bounds (depth first: it is the cheap, early-stopping check). */
export function schemaProblem(tool: Tool, bounds: SchemaBounds): "depth" | "bytes" | undefined {
  for (const schema of [tool.inputSchema, tool.outputSchema]) {
    if (schema === undefined) continue;
    if (deeperThan(schema, bounds.maxSchemaDepth)) return "depth";
    if (Buffer.byteLength(JSON.stringify(schema)) > bounds.maxSchemaBytes) return "bytes";
  }
  return undefined;
}
