import { z } from "zod";

/**
 * What a setting's zod node says besides its validation, so that each
 * setting is declared once, in the schema: its words for the configuration
 * reference (`description`, generated into docs/configuration.md by
 * scripts/gen-config-docs.mjs) and whether a reload applies it (the
 * restart-only list in restart-only.ts is read from these marks).
 */
declare module "zod" {
  interface GlobalMeta {
    /** `live`: a reload applies a changed value; `restart`: it is kept as at start and named in a warning. Covers the node's children unless one says otherwise. */
    reload?: "live" | "restart";
    /** The reference's reload cell when a bare class would mislead (half of the setting is live). */
    reloadText?: string;
    /** What leaving out an optional setting without a default means: in words, or the number the code uses instead. */
    unset?: string | number;
    /** A set of keys used in several places (`timeouts`, `price`), documented once under its `title`. */
    group?: string;
    /** How the reference names a map's entries (`<name>`). */
    mapKey?: string;
  }
}

/** A node of the schema as z.toJSONSchema writes it, with the metadata above spread on it. */
interface SettingNode {
  readonly properties?: Readonly<Record<string, SettingNode>>;
  readonly reload?: "live" | "restart";
}

/** Every path of `schema` marked with a reload class, in schema order (the paths of objects' keys only: maps and lists are marked whole). */
export function reloadMarks(schema: z.ZodType): { readonly path: string; readonly reload: "live" | "restart" }[] {
  const marks: { path: string; reload: "live" | "restart" }[] = [];
  const visit = (node: SettingNode, path: string): void => {
    for (const [key, child] of Object.entries(node.properties ?? {})) {
      const at = path ? `${path}.${key}` : key;
      if (child.reload) marks.push({ path: at, reload: child.reload });
      visit(child, at);
    }
  };
  visit(z.toJSONSchema(schema, { io: "input" }) as SettingNode, "");
  return marks;
}
