import { describe, expect, it } from "vitest";
import type { KeepLimits } from "../../src/response-state/conversation-store.js";
import { createMemoryConversationStore } from "../../src/response-state/memory-conversation-store.js";
import { newConversationId } from "../../src/response-state/response-ids.js";

const LIMITS: KeepLimits = { ttlMs: 86_400_000, maxStoredBytes: 0 };
const user = (text: string) => ({ type: "message", role: "user", content: [{ type: "input_text", text }] });
const conversation = (owner: string) => ({ id: newConversationId(), owner, createdAt: 1, metadata: {} });

describe("conversations in memory, bounded in all", () => {
  it("drops the conversations changed longest ago once maxTotalBytes is passed, whoever owns them; a change makes one recent again", async () => {
    const store = createMemoryConversationStore({ maxTotalBytes: 3_500 });
    const made = [conversation("a"), conversation("b"), conversation("a")];
    for (const c of made) await store.create(c, [user("x".repeat(1_000))], LIMITS);
    // The first is changed again, so the second is now the oldest.
    await store.append(made[0]!.id, "a", [user("y")], LIMITS);
    await store.create(conversation("c"), [user("x".repeat(1_000))], LIMITS);
    const kept = await Promise.all(made.map((c) => store.get(c.id, c.owner)));
    expect(kept.map((c) => c !== undefined)).toEqual([true, false, true]);
  });

  it("counts an owner's bytes as they change, and looks again without what expired before refusing", async () => {
    let now = 1_000;
    const store = createMemoryConversationStore({ now: () => now });
    const tight: KeepLimits = { ttlMs: 1_000, maxStoredBytes: 2_500 };
    const first = conversation("k");
    await store.create(first, [user("x".repeat(1_000))], tight);
    await store.create(conversation("k"), [user("x".repeat(1_000))], tight);
    await expect(store.create(conversation("k"), [user("x".repeat(1_000))], tight)).rejects.toMatchObject({ code: "failed_precondition" });
    const [item] = (await store.allItems(first.id, "k"))!;
    expect(await store.deleteItem(first.id, "k", String(item!.id), tight)).toBe(true);
    await store.create(conversation("k"), [user("x".repeat(1_000))], tight);
    now += 2_000;
    await store.create(conversation("k"), [user("x".repeat(2_000))], tight);
  });
});
