import { execFile } from "node:child_process";
import { randomInt } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** A PEM certificate and its key, as files and as text. */
export interface Issued {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: string;
  readonly key: string;
}

/** A throwaway PKI for one test file: a CA, a server certificate for 127.0.0.1, client certificates from that CA and from another. */
export interface TestPki {
  readonly dir: string;
  /** The CA that signed `server` and `client`. */
  readonly ca: Issued;
  readonly server: Issued;
  readonly client: Issued;
  /** A client certificate from an unrelated CA. */
  readonly stranger: Issued;
}

const openssl = (dir: string, args: string[]) => run("openssl", args, { cwd: dir });
const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

async function issued(dir: string, name: string): Promise<Issued> {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  return { certFile, keyFile, cert: await readFile(certFile, "utf8"), key: await readFile(keyFile, "utf8") };
}

async function createCa(dir: string, name: string): Promise<Issued> {
  await openssl(dir, ["req", "-x509", ...EC, "-keyout", `${name}.key`, "-out", `${name}.crt`, "-days", "2", "-subj", `/CN=${name}`, "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
  return issued(dir, name);
}

async function sign(dir: string, ca: string, name: string, extensions: string): Promise<Issued> {
  await openssl(dir, ["req", "-new", ...EC, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`]);
  await writeFile(join(dir, `${name}.ext`), extensions);
  await openssl(dir, ["x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.crt`, "-CAkey", `${ca}.key`, "-set_serial", String(randomInt(1, 2 ** 47)), "-days", "2", "-out", `${name}.crt`, "-extfile", `${name}.ext`]);
  return issued(dir, name);
}

/** Generates the PKI with the openssl command line, in a fresh temporary folder. */
export async function createTestPki(): Promise<TestPki> {
  const dir = await mkdtemp(join(tmpdir(), "sluice-pki-"));
  const ca = await createCa(dir, "sluice-test-ca");
  await createCa(dir, "stranger-ca");
  return {
    dir,
    ca,
    server: await sign(dir, "sluice-test-ca", "server", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"),
    client: await sign(dir, "sluice-test-ca", "client", "extendedKeyUsage=clientAuth\n"),
    stranger: await sign(dir, "stranger-ca", "stranger", "extendedKeyUsage=clientAuth\n"),
  };
}
