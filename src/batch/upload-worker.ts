import { parentPort, workerData } from "node:worker_threads";
import { GatewayError } from "../core/errors.js";
import { createUploadCheck, type UploadCheckConfig } from "./upload-check.js";

/** A call from the gateway: the next bytes of the file, or its end. */
export type UploadWorkerCall = { readonly seq: number; readonly bytes: Uint8Array } | { readonly seq: number; readonly end: true };

/** The answer to call `seq`: the checked pieces to store, or the fault (a GatewayError's own fields: it does not cross threads as a class). */
export type UploadWorkerAnswer = { readonly seq: number; readonly pieces: string[] } | { readonly seq: number; readonly fault: { readonly code: GatewayError["code"]; readonly message: string; readonly field: string | undefined } };

/**
 * The worker thread of one upload (started by upload-workers.ts, from
 * dist/ as plain JavaScript): it holds the upload's check and answers
 * each call in order. A fault ends nothing here; the gateway terminates
 * the thread once it has the answer.
 */
const port = parentPort;
if (port) {
  const check = createUploadCheck(workerData as UploadCheckConfig);
  port.on("message", (call: UploadWorkerCall) => {
    let answer: UploadWorkerAnswer;
    try {
      answer = { seq: call.seq, pieces: "bytes" in call ? check.push(call.bytes) : check.end() };
    } catch (error) {
      // Only a GatewayError's message is the client's to read; anything else is a bug, said generically.
      answer =
        error instanceof GatewayError ? { seq: call.seq, fault: { code: error.code, message: error.message, field: error.field } } : { seq: call.seq, fault: { code: "internal", message: "file: the upload's check failed", field: "file" } };
    }
    port.postMessage(answer);
  });
}
