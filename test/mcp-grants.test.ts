import { afterEach, describe, expect, it } from "vitest";
import type { LevelSettings, TeamSettings } from "../src/config/config.js";
import type { McpGrant } from "../src/config/mcp-schema.js";
import { mcpGrantSchema } from "../src/config/mcp-schema.js";
import { mcpCallerFor } from "../src/mcp/caller.js";
import { MCP_ERRORS, type McpCaller, McpError, NARROW_SERVERS_HEADER, NARROW_TOOLS_HEADER } from "../src/mcp/contract.js";
import { toolGrants } from "../src/mcp/grants.js";
import { MAX_NARROW_ENTRIES, narrowingFrom } from "../src/mcp/narrowing.js";
import { compileGlob } from "../src/mcp/tool-glob.js";
import { createRandom } from "../src/simulator/random.js";
import type { Hierarchy } from "../src/tenancy/hierarchy.js";
import type { Principal } from "../src/tenancy/principal.js";

const principal = (mcp?: McpGrant): Principal => ({ source: "config", id: "0123456789ab", name: "k", sha256: "0".repeat(64), limits: {}, ...(mcp ? { mcp } : {}) });
const team = (mcp?: McpGrant): TeamSettings => ({ name: "t", id: "t", limits: {}, ...(mcp ? { mcp } : {}) });
const line = (mcp?: McpGrant): LevelSettings => ({ name: "b", id: "b", limits: {}, ...(mcp ? { mcp } : {}) });

/** A caller with a key and grants at the levels given (undefined: no grant there). */
function caller(levels: { readonly key?: McpGrant; readonly team?: McpGrant; readonly line?: McpGrant; readonly narrow?: McpGrant }): McpCaller {
  return { principal: principal(levels.key), team: team(levels.team), businessLine: line(levels.line), ...(levels.narrow ? { narrow: levels.narrow } : {}) };
}

/** The oracle: a glob as an escaped regular expression (what the matcher must agree with, built independently of it). */
function oracle(glob: string): RegExp {
  return new RegExp(
    `^${glob
      .split("*")
      .map((piece) => piece.replace(/[.*+?^${}()|[\]\\-]/g, "\\$&"))
      .join(".*")}$`,
    "s",
  );
}

describe("tool globs", () => {
  it("match * as any run of characters and everything else literally", () => {
    expect(compileGlob("gh_*").matches("gh_read")).toBe(true);
    expect(compileGlob("gh_*").matches("gh_")).toBe(true);
    expect(compileGlob("gh_*").matches("ghx_read")).toBe(false);
    expect(compileGlob("*_read").matches("fs_read")).toBe(true);
    expect(compileGlob("a*a").matches("a")).toBe(false);
    expect(compileGlob("a*a").matches("aa")).toBe(true);
    expect(compileGlob("*").matches("")).toBe(true);
    expect(compileGlob("**").matches("anything")).toBe(true);
    // "." is literal: a regex built from the text unescaped would take it as any character.
    expect(compileGlob("fs.read").matches("fsxread")).toBe(false);
    expect(compileGlob("fs.read").matches("fs.read")).toBe(true);
    expect(compileGlob("x*y*z").matches("xzyz")).toBe(true);
    expect(compileGlob("x*y*z").matches("xzzy")).toBe(false);
  });

  it("agree with an escaped regular expression on random globs and names (seeded)", () => {
    const random = createRandom(48);
    const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
    const word = (n: number) => Array.from({ length: Math.floor(random() * n) }, () => pick(["a", "b", "_", ".", "-"])).join("");
    const disagreements: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      const glob = Array.from({ length: 1 + Math.floor(random() * 4) }, () => word(4)).join("*");
      const name = word(10);
      if (compileGlob(glob).matches(name) !== oracle(glob).test(name)) disagreements.push(`${glob} ~ ${name}`);
    }
    expect(disagreements.slice(0, 5)).toEqual([]);
  });

  it("answer a hostile glob over a long name in linear steps (no backtracking blow-up)", () => {
    const glob = `${"a*".repeat(79)}b`;
    const name = "a".repeat(128);
    expect(compileGlob(glob).matches(name)).toBe(false);
    expect(compileGlob(glob).matches(`${name}b`)).toBe(true);
  });
});

describe("tool grants", () => {
  it("deny by default: a key under no grant at all sees nothing, even when it narrows", () => {
    const grants = toolGrants(caller({}));
    expect(grants.server("gh")).toBe(false);
    expect(grants.tool("gh", "gh_read")).toBe(false);
    expect(toolGrants(caller({ narrow: { servers: ["*"] } })).tool("gh", "gh_read")).toBe(false);
    expect(toolGrants({ principal: principal() }).tool("gh", "gh_read")).toBe(false);
  });

  it("grant everything while authentication is off, and let the caller narrow that", () => {
    expect(toolGrants({}).tool("gh", "gh_read")).toBe(true);
    expect(toolGrants({}).server("anything")).toBe(true);
    const narrowed = toolGrants({ narrow: { servers: ["fs"] } });
    expect(narrowed.server("gh")).toBe(false);
    expect(narrowed.tool("fs", "fs_read")).toBe(true);
  });

  it("read servers (absent or * = every server), allow globs (absent = all) and deny globs (deny wins)", () => {
    expect(toolGrants(caller({ key: {} })).tool("db", "db_drop")).toBe(true);
    expect(toolGrants(caller({ key: { servers: ["*"] } })).tool("db", "db_drop")).toBe(true);
    const grants = toolGrants(caller({ key: { servers: ["gh", "fs"], tools: { allow: ["gh_*", "fs_read"], deny: ["gh_delete*"] } } }));
    expect(grants.tool("gh", "gh_read")).toBe(true);
    expect(grants.tool("gh", "gh_delete_repo")).toBe(false);
    expect(grants.tool("fs", "fs_read")).toBe(true);
    expect(grants.tool("fs", "fs_write")).toBe(false);
    expect(grants.tool("db", "db_read")).toBe(false);
    expect(grants.server("fs")).toBe(true);
    expect(grants.server("db")).toBe(false);
    // An allow glob naming another server's tool does not open that server.
    expect(toolGrants(caller({ key: { servers: ["gh"], tools: { allow: ["*"] } } })).tool("fs", "fs_read")).toBe(false);
    expect(toolGrants(caller({ key: { servers: [] } })).server("gh")).toBe(false);
    expect(toolGrants(caller({ key: { tools: { allow: [] } } })).tool("gh", "gh_read")).toBe(false);
  });

  it("intersect down the hierarchy: each level that grants must admit the tool; a level without a grant adds no limit", () => {
    const grants = toolGrants(caller({ line: { servers: ["gh", "fs"] }, team: { tools: { deny: ["fs_write"] } }, key: { tools: { allow: ["*_read", "*_write", "db_*"] } } }));
    expect(grants.tool("gh", "gh_read")).toBe(true);
    expect(grants.tool("fs", "fs_write")).toBe(false);
    expect(grants.tool("gh", "gh_write")).toBe(true);
    expect(grants.tool("db", "db_read")).toBe(false);
    expect(grants.server("db")).toBe(false);
    // Only the business line grants: its keys get what it grants.
    expect(toolGrants(caller({ line: { servers: ["gh"] } })).tool("gh", "gh_read")).toBe(true);
  });
});

describe("a caller's levels", () => {
  const hierarchy = (teams: readonly TeamSettings[], lines: readonly LevelSettings[]): Hierarchy => ({
    team: (name) => teams.find((t) => t.name === name),
    businessLine: (name) => lines.find((l) => l.name === name),
  });
  const inTeam = (name: string, mcp?: McpGrant): Principal => ({ ...principal(mcp), team: name });

  it("are the key's team and that team's business line as in force, with the request's narrowing", () => {
    const levels = hierarchy([{ ...team({ tools: { deny: ["gh_delete*"] } }), businessLine: "b" }], [line({ servers: ["gh"] })]);
    const found = mcpCallerFor(inTeam("t", { tools: { allow: ["gh_*", "fs_*"] } }), levels, { narrow: { tools: { allow: ["*read"] } } });
    expect(found.team?.name).toBe("t");
    expect(found.businessLine?.name).toBe("b");
    const grants = toolGrants(found);
    expect(["gh_read", "gh_delete_read", "gh_write", "fs_read"].filter((name) => grants.tool(name.slice(0, 2), name))).toEqual(["gh_read"]);
    expect(mcpCallerFor(undefined, levels)).toEqual({});
    expect(mcpCallerFor(principal(), levels).team).toBeUndefined();
  });

  it("refuse a key whose team, or a team whose business line, no longer exists: its grants would lose a level", () => {
    for (const [who, levels] of [
      [inTeam("gone"), hierarchy([], [])],
      [inTeam("t"), hierarchy([{ ...team(), businessLine: "gone" }], [])],
    ] as const) {
      let failure: unknown;
      try {
        mcpCallerFor(who, levels);
      } catch (error) {
        failure = error;
      }
      expect(failure).toBeInstanceOf(McpError);
      expect((failure as McpError).data).toMatchObject({ status: 403 });
    }
  });
});

describe("tool grants' remembered answers", () => {
  it("stay right past their bound, asked about ever new names (as hostile tools/call names would be)", () => {
    // Eight globs or more: the grant remembers (the others never match here).
    const grants = toolGrants(caller({ key: { tools: { allow: ["gh_a*", "x1", "x2", "x3", "x4", "x5"], deny: ["*9", "x6"] } } }));
    const wrong: string[] = [];
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 20_000; i++) {
        const name = `gh_${i % 2 === 0 ? "a" : "b"}${i}`;
        if (grants.tool("gh", name) !== (i % 2 === 0 && !name.endsWith("9"))) wrong.push(name);
      }
    }
    expect(wrong.slice(0, 5)).toEqual([]);
  });
});

describe("tool grants, with random grants (seeded property test)", () => {
  const SERVERS = ["gh", "fs", "db", "web-1", "x"];
  const TOOLS = ["read", "write", "list_items", "delete", "search", "read.all", "a-b"];
  const universe = SERVERS.flatMap((server) => TOOLS.map((tool) => ({ server, name: `${server}_${tool}` })));

  function randomGrant(random: () => number): McpGrant | undefined {
    const chance = (p: number) => random() < p;
    const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
    if (chance(0.3)) return undefined;
    const glob = () => {
      const name = pick(universe).name;
      const shape = Math.floor(random() * 5);
      if (shape === 0) return name;
      if (shape === 1) return `${name.slice(0, Math.floor(random() * name.length))}*`;
      if (shape === 2) return `*${name.slice(Math.floor(random() * name.length))}`;
      if (shape === 3) return `*${pick(TOOLS).slice(0, 2)}*`;
      return "*";
    };
    const servers = chance(0.5) ? undefined : Array.from({ length: Math.floor(random() * 4) }, () => (chance(0.1) ? "*" : pick(SERVERS)));
    const allow = chance(0.4) ? undefined : Array.from({ length: Math.floor(random() * 4) }, glob);
    const deny = chance(0.5) ? undefined : Array.from({ length: 1 + Math.floor(random() * 2) }, glob);
    const grant = { ...(servers ? { servers } : {}), ...(allow || deny ? { tools: { ...(allow ? { allow } : {}), ...(deny ? { deny } : {}) } } : {}) };
    // Every random grant is one the configuration (and the admin service) would accept.
    return mcpGrantSchema.parse(grant);
  }

  const CASES = 3_000;
  /** Counterexamples, collected and compared once (an expect per tool would cost more than the grants). */
  const failures: string[] = [];
  const check = (holds: boolean, what: () => unknown) => {
    if (!holds && failures.length < 5) failures.push(JSON.stringify(what()));
  };
  afterEach(() => {
    const found = failures.splice(0);
    expect(found).toEqual([]);
  });

  it("admits a tool exactly when every level that grants admits it on its own", () => {
    const random = createRandom(4_801);
    for (let i = 0; i < CASES; i++) {
      const levels = { line: randomGrant(random), team: randomGrant(random), key: randomGrant(random), narrow: randomGrant(random) };
      const grants = toolGrants(caller(levels));
      const present = Object.values(levels).filter((g): g is McpGrant => g !== undefined);
      const configured = [levels.line, levels.team, levels.key].some((g) => g !== undefined);
      // Each level alone, asked the same way (as the key's one grant).
      const alone = present.map((g) => toolGrants(caller({ key: g })));
      for (const { server, name } of universe) {
        const granted = grants.tool(server, name);
        if (granted) {
          check(alone.every((level) => level.tool(server, name)) && grants.server(server), () => ({ levels, name }));
        } else {
          check(!configured || alone.some((level) => !level.tool(server, name)), () => ({ levels, name }));
        }
      }
      for (const server of SERVERS) check(grants.server(server) === (configured && alone.every((level) => level.server(server))), () => ({ levels, server }));
    }
  });

  it("gives the same answers whichever level holds which grant (intersection commutes)", () => {
    const random = createRandom(4_802);
    for (let i = 0; i < CASES; i++) {
      const g = [randomGrant(random), randomGrant(random), randomGrant(random)] as const;
      const orders = [
        { line: g[0], team: g[1], key: g[2] },
        { line: g[2], team: g[0], key: g[1] },
        { line: g[1], team: g[2], key: g[0] },
        { line: g[0], team: g[2], key: g[1] },
      ];
      const answers = orders.map((levels) => {
        const grants = toolGrants(caller(levels));
        return [...universe.map(({ server, name }) => grants.tool(server, name)), ...SERVERS.map((s) => grants.server(s))];
      });
      for (const a of answers.slice(1))
        check(
          a.every((answer, j) => answer === answers[0]![j]),
          () => g,
        );
    }
  });

  it("never adds a tool or a server when the caller narrows", () => {
    const random = createRandom(4_803);
    for (let i = 0; i < CASES; i++) {
      const levels = { line: randomGrant(random), team: randomGrant(random), key: randomGrant(random) };
      const narrow = randomGrant(random) ?? {};
      const authOff = random() < 0.2;
      const wide = toolGrants(authOff ? {} : caller(levels));
      const narrowed = toolGrants(authOff ? { narrow } : caller({ ...levels, narrow }));
      for (const { server, name } of universe) check(!narrowed.tool(server, name) || wide.tool(server, name), () => ({ levels, narrow, name }));
      for (const server of SERVERS) check(!narrowed.server(server) || wide.server(server), () => ({ levels, narrow, server }));
    }
  });
});

describe("narrowing headers", () => {
  const failure = (headers: Readonly<Record<string, string | undefined>>) => {
    try {
      narrowingFrom(headers);
    } catch (error) {
      return error;
    }
    throw new Error("expected a failure");
  };

  it("read comma-separated globs and server names into a grant, and nothing without the headers", () => {
    expect(narrowingFrom({})).toBeUndefined();
    expect(narrowingFrom({ [NARROW_TOOLS_HEADER]: " gh_*, fs_read ,", [NARROW_SERVERS_HEADER]: "gh,fs" })).toEqual({ servers: ["gh", "fs"], tools: { allow: ["gh_*", "fs_read"] } });
    expect(narrowingFrom(new Headers({ [NARROW_SERVERS_HEADER]: "*" }))).toEqual({ servers: ["*"] });
    // Sent twice: one list.
    expect(narrowingFrom({ [NARROW_SERVERS_HEADER]: ["gh", "fs"] })).toEqual({ servers: ["gh", "fs"] });
    // Present and empty: narrowed to nothing, never widened.
    const none = narrowingFrom({ [NARROW_TOOLS_HEADER]: "" })!;
    expect(toolGrants({ narrow: none }).tool("gh", "gh_read")).toBe(false);
    // What it reads is a grant the configuration would accept.
    expect(mcpGrantSchema.safeParse(narrowingFrom({ [NARROW_TOOLS_HEADER]: "a*,b", [NARROW_SERVERS_HEADER]: "web-1" })).success).toBe(true);
  });

  it("refuse what is malformed or too large as invalid params (400), without echoing it", () => {
    const bad = [
      { [NARROW_TOOLS_HEADER]: "gh_(read)" },
      { [NARROW_TOOLS_HEADER]: "gh read" },
      { [NARROW_SERVERS_HEADER]: "has_underscore" },
      { [NARROW_SERVERS_HEADER]: "-lead" },
      { [NARROW_TOOLS_HEADER]: "x".repeat(161) },
      { [NARROW_TOOLS_HEADER]: Array.from({ length: MAX_NARROW_ENTRIES + 1 }, (_, i) => `t${i}`).join(",") },
      { [NARROW_TOOLS_HEADER]: "a,".repeat(100_000) },
    ];
    for (const headers of bad) {
      const error = failure(headers);
      expect(error).toBeInstanceOf(McpError);
      expect((error as McpError).code).toBe(MCP_ERRORS.invalidParams);
      expect((error as McpError).data).toMatchObject({ status: 400 });
      expect((error as McpError).message).not.toContain("(read)");
    }
    expect(narrowingFrom({ [NARROW_TOOLS_HEADER]: Array.from({ length: MAX_NARROW_ENTRIES }, (_, i) => `t${i}`).join(",") })?.tools?.allow).toHaveLength(MAX_NARROW_ENTRIES);
  });
});
