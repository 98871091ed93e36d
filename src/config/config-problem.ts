/** One thing wrong with a configuration, at the path of the field to fix. */
export interface ConfigProblem {
  /** e.g. ["providers", "main", "baseUrl"]; empty for the document itself. */
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

export function formatPath(path: readonly PropertyKey[]): string {
  return path.length === 0 ? "(root)" : path.map(String).join(".");
}
