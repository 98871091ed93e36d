import { describe, expect, it } from "vitest";
import { carriesKey, withKey } from "../src/provider-keys/key-header.js";
import { keyFingerprint, openProviderKey, sealProviderKey } from "../src/provider-keys/provider-key-seal.js";

const MASTER = "provider-key-seal-secret-0123456789abcdef";
const KEY = "sk-proj-Zq81kLmN0pQrStUvWxYz0123456789ab";

describe("provider key sealing", () => {
  it("opens for its provider and secret only, and holds no plaintext", () => {
    const sealed = sealProviderKey(KEY, "openai", MASTER);
    expect(sealed).not.toContain(KEY);
    expect(Buffer.from(sealed, "base64").toString("latin1")).not.toContain(KEY.slice(3, 20));
    expect(openProviderKey(sealed, "openai", MASTER)).toBe(KEY);
    expect(openProviderKey(sealed, "anthropic", MASTER)).toBeUndefined();
    expect(openProviderKey(sealed, "openai", `${MASTER}x`)).toBeUndefined();
    expect(sealProviderKey(KEY, "openai", MASTER)).not.toBe(sealed);
  });

  it("fingerprints a key by its last four characters, and a short key not at all", () => {
    expect(keyFingerprint(KEY)).toBe("…89ab");
    expect(keyFingerprint("sk-short-123")).toBe("");
  });
});

describe("where each kind carries its key", () => {
  const request = (headers: Record<string, string>) => ({ url: "https://x", body: "{}", headers });
  it.each([
    ["openai", "authorization", `Bearer ${KEY}`],
    ["openai-responses", "authorization", `Bearer ${KEY}`],
    ["anthropic", "x-api-key", KEY],
    ["gemini", "x-goog-api-key", KEY],
    ["azure-openai", "api-key", KEY],
  ] as const)("%s: %s", (kind, header, value) => {
    const built = request({ "content-type": "application/json", [header]: "old" });
    expect(carriesKey(built, kind)).toBe(true);
    expect(withKey(built, kind, KEY).headers).toEqual({ "content-type": "application/json", [header]: value });
    expect(carriesKey(request({}), kind)).toBe(false);
  });

  it("leaves credential-chain kinds and an Entra ID Azure request as they were built", () => {
    const signed = request({ authorization: "AWS4-HMAC-SHA256 …" });
    expect(withKey(signed, "bedrock", KEY)).toBe(signed);
    expect(withKey(signed, "vertex", KEY)).toBe(signed);
    const entra = request({ authorization: "Bearer entra-token" });
    expect(withKey(entra, "azure-openai", KEY)).toBe(entra);
  });
});
