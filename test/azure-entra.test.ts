import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createDefaultHttpClient, type HttpClient } from "@azure/core-rest-pipeline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSecret } from "../src/config/secret.js";
import { entraTokenSource } from "../src/providers/azure/entra-token.js";
import { AZURE_SIM_TOKEN } from "../src/simulator/azure-wire.js";

/**
 * A local Entra ID: OpenID discovery and the token endpoint of one tenant.
 * @azure/identity takes only an https authority, so the credential is given
 * an HTTP client that sends its (real, unchanged) requests here over http;
 * everything else is the library's own client-credentials flow.
 */
let server: Server;
let origin: string;
const tokenRequests: string[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => {
      body += chunk.toString("utf8");
    });
    req.on("end", () => {
      const authority = "https://login.sim.test";
      res.setHeader("content-type", "application/json");
      if (req.url?.startsWith("/tenant-1/v2.0/.well-known/openid-configuration")) {
        res.end(JSON.stringify({ token_endpoint: `${authority}/tenant-1/oauth2/v2.0/token`, issuer: `${authority}/tenant-1/v2.0`, authorization_endpoint: `${authority}/tenant-1/oauth2/v2.0/authorize`, jwks_uri: `${authority}/keys` }));
      } else if (req.url?.startsWith("/tenant-1/oauth2/v2.0/token")) {
        tokenRequests.push(body);
        res.end(JSON.stringify({ token_type: "Bearer", expires_in: 3600, ext_expires_in: 3600, access_token: AZURE_SIM_TOKEN }));
      } else {
        res.statusCode = 404;
        res.end("{}");
      }
    });
  }).listen(0, "127.0.0.1");
  await once(server, "listening");
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.close();
  await once(server, "close");
});

function toLocal(): HttpClient {
  const inner = createDefaultHttpClient();
  return {
    sendRequest(request) {
      const url = new URL(request.url);
      request.url = `${origin}${url.pathname}${url.search}`;
      request.allowInsecureConnection = true;
      return inner.sendRequest(request);
    },
  };
}

describe("a Microsoft Entra ID token from a service principal (ClientSecretCredential)", () => {
  it("is asked for with the client secret and the Cognitive Services scope, then reused; concurrent callers share one request", async () => {
    const settings = {
      api: "chat" as const,
      entra: { tenantId: "tenant-1", clientId: "client-1", clientSecretEnv: "AZ_SECRET", authorityHost: "https://login.sim.test" },
      clientSecret: createSecret("client-secret-0123456789"),
    };
    const source = entraTokenSource(settings, { clientOptions: { httpClient: toLocal(), disableInstanceDiscovery: true } });
    const signal = new AbortController().signal;

    const [a, b] = await Promise.all([source("az", signal), source("az", signal)]);
    expect(a).toBe(AZURE_SIM_TOKEN);
    expect(b).toBe(AZURE_SIM_TOKEN);
    expect(tokenRequests).toHaveLength(1);
    const form = new URLSearchParams(tokenRequests[0]);
    expect(form.get("grant_type")).toBe("client_credentials");
    expect(form.get("client_id")).toBe("client-1");
    expect(form.get("client_secret")).toBe("client-secret-0123456789");
    expect(form.get("scope")).toBe("https://cognitiveservices.azure.com/.default");

    expect(await source("az", signal)).toBe(AZURE_SIM_TOKEN);
    expect(tokenRequests).toHaveLength(1);
  });

  it("a caller that gives up is released at once, and a failure is the gateway's credentials error", async () => {
    const settings = {
      api: "chat" as const,
      entra: { tenantId: "tenant-unknown", clientId: "client-1", clientSecretEnv: "AZ_SECRET", authorityHost: "https://login.sim.test" },
      clientSecret: createSecret("client-secret-0123456789"),
    };
    const source = entraTokenSource(settings, { clientOptions: { httpClient: toLocal(), disableInstanceDiscovery: true } });
    const gone = new AbortController();
    gone.abort(new Error("caller left"));
    await expect(source("az", gone.signal)).rejects.toThrow("caller left");
    await expect(source("az", new AbortController().signal)).rejects.toMatchObject({ code: "upstream_auth", message: "provider az could not get a Microsoft Entra ID token" });
  });
});
