/**
 * A glob over exposed tool names (`<server>_<tool>`), as grants and the
 * narrowing header write them: `*` matches any run of characters (the
 * empty one too), every other character only itself. Matched without a
 * regular expression: a glob is split at its stars once, and a name is
 * matched by finding the pieces in order (the first anchored at the
 * start, the last at the end), which takes at most (glob length × name
 * length) steps whatever the glob, where a regex of many `.*` could
 * backtrack far longer on a hostile pattern.
 */
export interface ToolGlob {
  matches(name: string): boolean;
}

const ANY: ToolGlob = { matches: () => true };

export function compileGlob(glob: string): ToolGlob {
  if (!glob.includes("*")) return { matches: (name) => name === glob };
  const pieces = glob.split("*");
  if (pieces.every((p) => p === "")) return ANY;
  const first = pieces[0]!;
  const last = pieces[pieces.length - 1]!;
  const middle = pieces.slice(1, -1).filter((p) => p !== "");
  const least = first.length + last.length + middle.reduce((n, p) => n + p.length, 0);
  return {
    matches(name) {
      if (name.length < least || !name.startsWith(first) || !name.endsWith(last)) return false;
      // Each middle piece at its earliest place after the one before: if any placement fits, the earliest does.
      let at = first.length;
      const end = name.length - last.length;
      for (const piece of middle) {
        const found = name.indexOf(piece, at);
        if (found < 0 || found + piece.length > end) return false;
        at = found + piece.length;
      }
      return true;
    },
  };
}

/** Whether any of `globs` matches `name`. */
export function anyMatches(globs: readonly ToolGlob[], name: string): boolean {
  for (let i = 0; i < globs.length; i++) if (globs[i]!.matches(name)) return true;
  return false;
}
