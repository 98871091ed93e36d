import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { createSecureContext } from "node:tls";
import type { ConfigProblem } from "./config-problem.js";
import { createSecret, type Secret } from "./secret.js";

/** The listener's TLS material, read once at start-up. The key is a Secret: it never prints. */
export interface TlsCredentials {
  readonly cert: string;
  readonly key: Secret;
  /** When set, clients must present a certificate signed by one of these CAs. */
  readonly clientCa?: string;
}

export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly clientCaFile?: string;
}

const PATH = ["server", "tls"] as const;

/** OpenSSL's reason without its error-code prefix, e.g. "key values mismatch". */
function reason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/^error:[0-9A-F]+:[^:]*:[^:]*:?/i, "").trim() || message;
}

/**
 * Reads the certificate, key and client CA files and proves they make a
 * TLS context (PEM that parses, a key that matches the certificate), so a
 * bad file fails `check-config` and start-up with the field to fix rather
 * than the first handshake. Every unreadable file is reported, not the
 * first.
 */
export function readTlsFiles(files: TlsFiles): { readonly credentials?: TlsCredentials; readonly problems: readonly ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  const read = (field: keyof TlsFiles, path: string | undefined): string | undefined => {
    if (path === undefined) return undefined;
    try {
      return readFileSync(path, "utf8");
    } catch (error) {
      problems.push({ path: [...PATH, field], message: `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? "error"}` });
      return undefined;
    }
  };
  const cert = read("certFile", files.certFile);
  const key = read("keyFile", files.keyFile);
  const clientCa = read("clientCaFile", files.clientCaFile);
  if (problems.length > 0 || cert === undefined || key === undefined) return { problems };

  const attempt = (field: keyof TlsFiles, what: string, options: Parameters<typeof createSecureContext>[0]) => {
    try {
      createSecureContext(options);
      return true;
    } catch (error) {
      problems.push({ path: [...PATH, field], message: `${what} (${reason(error)})` });
      return false;
    }
  };
  if (attempt("certFile", `${files.certFile} is not a PEM certificate`, { cert })) {
    attempt("keyFile", `${files.keyFile} is not a PEM private key for the certificate in ${files.certFile}`, { cert, key });
  }
  // createSecureContext skips what does not parse in `ca`; every block must.
  if (clientCa !== undefined && attempt("clientCaFile", `${files.clientCaFile} is not a PEM CA certificate`, { ca: clientCa })) {
    const blocks = clientCa.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
    try {
      if (blocks.length === 0) throw new Error("no certificate in it");
      for (const block of blocks) new X509Certificate(block);
    } catch (error) {
      problems.push({ path: [...PATH, "clientCaFile"], message: `${files.clientCaFile} is not a PEM CA certificate (${reason(error)})` });
    }
  }
  if (problems.length > 0) return { problems };
  return { credentials: { cert, key: createSecret(key), ...(clientCa !== undefined ? { clientCa } : {}) }, problems };
}
