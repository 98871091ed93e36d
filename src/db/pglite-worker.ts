import { type MessagePort, parentPort, workerData } from "node:worker_threads";
import { PGlite, type Transaction } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { SESSION_SETTINGS } from "./database.js";
import { sendError, type WorkerReply, type WorkerRequest } from "./pglite-messages.js";

/**
 * The embedded database's own thread: PGlite (PostgreSQL in WebAssembly,
 * with pgvector) opens and runs every statement here, so neither its
 * seconds of start-up nor a lookup's or an insert's milliseconds are spent
 * on the thread that relays streams. It serves the messages of
 * pglite-messages.ts for pglite-worker-database.ts, in arrival order
 * (PGlite runs one statement at a time; a statement outside a transaction
 * waits for the open one, as it would in the gateway's thread).
 */

/** What the gateway's thread passes at start. */
export interface PgliteWorkerData {
  readonly dataDir: string | undefined;
}

function parent(): MessagePort {
  if (!parentPort) throw new Error("pglite-worker.ts runs as a worker thread");
  return parentPort;
}
const port = parent();
const { dataDir } = workerData as PgliteWorkerData;
const send = (reply: WorkerReply) => port.postMessage(reply);

/** Thrown inside a transaction's callback to have PGlite roll it back; never leaves this file. */
const ROLLBACK = Symbol("rollback");

interface OpenTransaction {
  readonly tx: Transaction;
  readonly finish: (commit: boolean) => void;
  readonly done: Promise<void>;
}

async function serve(): Promise<void> {
  const db = await PGlite.create({ ...(dataDir === undefined ? {} : { dataDir }), extensions: { vector } });
  await db.exec(SESSION_SETTINGS);
  const transactions = new Map<number, OpenTransaction>();
  let nextTx = 1;

  const begin = (): Promise<number> =>
    new Promise((resolve, reject) => {
      const id = nextTx++;
      let finish: (commit: boolean) => void = () => undefined;
      const decided = new Promise<boolean>((r) => (finish = r));
      const done = db
        .transaction(async (tx) => {
          transactions.set(id, { tx, finish, done });
          resolve(id);
          if (!(await decided)) throw ROLLBACK;
        })
        .then(
          () => undefined,
          (error: unknown) => {
            if (error !== ROLLBACK) throw error;
          },
        )
        .finally(() => transactions.delete(id));
      // BEGIN itself failed: the caller hears it; once begun, `end` reports how it ended.
      done.catch(reject);
    });

  const handle = async (request: WorkerRequest): Promise<unknown> => {
    switch (request.op) {
      case "query": {
        const on = request.tx === undefined ? db : transactions.get(request.tx)?.tx;
        if (!on) throw new Error("the transaction has ended");
        return (await on.query<Record<string, unknown>>(request.sql, request.params as unknown[] | undefined)).rows;
      }
      case "begin":
        return begin();
      case "end": {
        const open = transactions.get(request.tx);
        if (!open) throw new Error("the transaction has ended");
        open.finish(request.commit);
        await open.done;
        return undefined;
      }
      case "close":
        for (const open of transactions.values()) open.finish(false);
        await db.close();
        return undefined;
    }
  };

  port.on("message", (request: WorkerRequest) => {
    handle(request).then(
      (value) => {
        send({ type: "done", id: request.id, value });
        if (request.op === "close") port.close();
      },
      (error: unknown) => send({ type: "failed", id: request.id, error: sendError(error) }),
    );
  });
  send({ type: "opened" });
}

serve().catch((error: unknown) => send({ type: "open_failed", error: sendError(error) }));
