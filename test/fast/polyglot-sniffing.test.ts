import { Server as Http1Server } from "node:http";
import { Duplex } from "node:stream";
import { Server as TlsServer } from "node:tls";
import { describe, expect, it } from "vitest";
import { PolyglotServer } from "../../src/server/polyglot-server.js";

/**
 * Which server the port hands a connection to, from its first bytes
 * (src/server/polyglot-server.ts), with the bytes arriving in pieces as a
 * slow or hostile client sends them. A socket stands in for the TCP one, so
 * each piece is one read; the wire tests check the same over real sockets
 * with real clients.
 */

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/** A socket whose incoming bytes the test pushes; what the server writes is discarded. */
function fakeSocket(): Duplex & { remoteAddress: string; setNoDelay(): void; setTimeout(): void; setKeepAlive(): void } {
  const socket = new Duplex({
    read() {},
    write(_c, _e, done) {
      done();
    },
  });
  return Object.assign(socket, { remoteAddress: "127.0.0.1", setNoDelay() {}, setTimeout() {}, setKeepAlive() {} });
}

/** Feeds `pieces` one read at a time and resolves with the name of the server that took the socket. */
async function takenBy(pieces: readonly Buffer[], tls = false): Promise<string> {
  const server = new PolyglotServer(tls ? { tls: {} } : {}, () => undefined);
  const socket = fakeSocket();
  let taker = "nobody";
  server.on("connection", function (this: unknown) {
    if (this === server) return;
    const name = (this as object).constructor.name;
    taker = this instanceof TlsServer ? "tls" : this instanceof Http1Server ? "http/1.1" : name === "Http2Server" ? "h2" : "closed";
  });
  server.emit("connection", socket);
  for (const piece of pieces) {
    socket.push(piece);
    // The sniffer reads on `readable`, emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    if (taker !== "nobody") break;
  }
  socket.destroy();
  return taker;
}

describe("the port's protocol sniffing", () => {
  it("the whole HTTP/2 preface in one read goes to HTTP/2", async () => {
    expect(await takenBy([PREFACE])).toBe("h2");
  });

  it.each([[1], [3, 10, 20], [23]])("the HTTP/2 preface cut at %s waits for the rest, then goes to HTTP/2", async (...cuts) => {
    const pieces: Buffer[] = [];
    let at = 0;
    for (const cut of [...cuts, PREFACE.length]) {
      pieces.push(PREFACE.subarray(at, cut));
      at = cut;
    }
    expect(await takenBy(pieces)).toBe("h2");
  });

  it("a method that starts with the preface's P (PUT, PATCH) goes to HTTP/1.1 once a byte differs", async () => {
    expect(await takenBy([Buffer.from("P"), Buffer.from("UT / HTTP/1.1\r\n")])).toBe("http/1.1");
    expect(await takenBy([Buffer.from("PATCH / HTTP/1.1\r\n")])).toBe("http/1.1");
  });

  it("anything else goes to HTTP/1.1, which answers 400 to what it cannot parse", async () => {
    expect(await takenBy([Buffer.from("GET / HTTP/1.1\r\n")])).toBe("http/1.1");
    expect(await takenBy([Buffer.from([0x00, 0x01, 0x02])])).toBe("http/1.1");
  });

  it("a TLS ClientHello goes to the TLS server when the port has TLS, and is closed when it has not", async () => {
    expect(await takenBy([Buffer.from([0x16, 0x03, 0x01])], true)).toBe("tls");
    expect(await takenBy([Buffer.from([0x16, 0x03, 0x01])], false)).toBe("closed");
  });
});
