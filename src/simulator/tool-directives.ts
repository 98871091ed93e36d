/**
 * `#sim` lines that steer the tool loop, as opposed to knob lines: a line
 * whose first word is `call=` or `input=`. Each such line in the latest
 * user prompt is one step of a plan; `then` splits a line into further
 * steps; several `call=` in one step are parallel calls. Step k runs once k
 * rounds of tool results have come back (tool-loop.ts).
 *
 *   #sim call=Bash args={"command":"echo sluice-ok"} then call=Read args={"file_path":"/tmp/x"}
 *   #sim call=get_weather call=get_time          (two parallel calls, schema-valid arguments)
 *   #sim call=apply_patch input="*** Begin Patch\n…"   (a custom tool's freeform input, a JSON string)
 *   #sim input=some text to the end of the line          (to the first custom tool)
 */
export interface ToolDirective {
  /** The tool to call; absent with `input=` alone (the first custom tool). */
  readonly call?: string;
  /** JSON arguments, as given (checked to parse). */
  readonly args?: string;
  /** Freeform input for a custom tool (or a function's first string parameter). */
  readonly input?: string;
}

/** One step of the plan: the calls made in one response. */
export type PlanStep = readonly ToolDirective[];

const LINE = /^#sim[ \t]+(.*)$/gm;

/** Whether the text after `#sim` is a tool directive rather than knobs. */
export function isToolDirective(rest: string): boolean {
  return /^(call|input)=/.test(rest.trimStart());
}

/** The end (exclusive) of the JSON value starting at `at`: a balanced object or array, or a string. */
function jsonEnd(text: string, at: number): number {
  let depth = 0;
  let inString = false;
  for (let i = at; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') {
        inString = false;
        if (depth === 0) return i + 1;
      }
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      if (--depth === 0) return i + 1;
    } else if (depth === 0 && /\s/.test(c)) return i;
  }
  return text.length;
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Error(`#sim ${what}: not valid JSON`);
  }
}

/** The steps of one directive line (the text after `#sim`). Throws with a message fit for a 400. */
function parseLine(rest: string): PlanStep[] {
  const steps: ToolDirective[][] = [[]];
  let at = 0;
  const step = () => steps.at(-1)!;
  const current = (): { -readonly [K in keyof ToolDirective]: ToolDirective[K] } => {
    if (step().length === 0) step().push({});
    return step().at(-1)!;
  };
  while (at < rest.length) {
    while (at < rest.length && /\s/.test(rest[at]!)) at++;
    if (at >= rest.length) break;
    const word = /^[a-z_]+/.exec(rest.slice(at))?.[0] ?? "";
    if (word === "then" && (at + 4 === rest.length || /\s/.test(rest[at + 4]!))) {
      steps.push([]);
      at += 4;
      continue;
    }
    if (rest[at + word.length] !== "=") throw new Error(`#sim: unexpected "${rest.slice(at, at + 20)}" in a tool directive (call=, args=, input=, then)`);
    at += word.length + 1;
    switch (word) {
      case "call": {
        const end = rest.slice(at).search(/\s|$/);
        step().push({ call: rest.slice(at, at + end) });
        at += end;
        break;
      }
      case "args": {
        const end = jsonEnd(rest, at);
        const args = rest.slice(at, end);
        const value = parseJson(args, "args");
        if (value === null || typeof value !== "object" || Array.isArray(value)) throw new Error("#sim args: must be a JSON object");
        current().args = args;
        at = end;
        break;
      }
      case "input": {
        if (rest[at] === '"') {
          const end = jsonEnd(rest, at);
          current().input = parseJson(rest.slice(at, end), "input") as string;
          at = end;
        } else {
          current().input = rest.slice(at).trimEnd();
          at = rest.length;
        }
        break;
      }
      default:
        throw new Error(`#sim: unknown tool directive ${word}= (call=, args=, input=, then)`);
    }
  }
  return steps.filter((s) => s.length > 0);
}

/** The plan of a user prompt: every tool-directive `#sim` line, in order. */
export function parseToolDirectives(prompt: string): PlanStep[] {
  const plan: PlanStep[] = [];
  for (const match of prompt.matchAll(LINE)) {
    if (isToolDirective(match[1]!)) plan.push(...parseLine(match[1]!.trim()));
  }
  return plan;
}
