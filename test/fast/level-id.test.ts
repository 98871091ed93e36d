import { describe, expect, it } from "vitest";
import { newLevelId, withLevelId } from "../../src/tenancy/level-id.js";

describe("level ids", () => {
  it("mints a new id at every creation, and keeps a stored one", () => {
    expect(newLevelId()).not.toBe(newLevelId());
    expect(withLevelId("team", { name: "crew", id: "kept", limits: {}, createdAt: 1 }).id).toBe("kept");
  });

  it("gives a level stored before ids one id on every read and every replica, and another to a level created again under its name", () => {
    const stored = { name: "crew", limits: {}, createdAt: 1_700_000_000_000 };
    const id = withLevelId("team", stored).id;
    expect(withLevelId("team", { ...stored }).id).toBe(id);
    expect(withLevelId("team", { ...stored, createdAt: stored.createdAt + 1 }).id).not.toBe(id);
    expect(withLevelId("business_line", stored).id).not.toBe(id);
  });
});
