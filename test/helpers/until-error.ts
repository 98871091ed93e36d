import { ConnectError } from "@connectrpc/connect";

/** What a stream delivered before it ended, and the error it ended with (none: it completed). */
export interface Outcome<T, E> {
  readonly received: T[];
  readonly error?: E;
}

/**
 * Reads `stream` to its end or its error, whichever comes, and returns both
 * what arrived and how it ended: the shape every test of a failing stream
 * asserts on (nothing after the error, or exactly these deltas before it).
 * `onMessage` sees everything received so far after each message (to
 * cancel, release a hold, or count).
 */
export async function untilError<T, E>(stream: AsyncIterable<T>, asError: (error: unknown) => E, onMessage?: (received: readonly T[]) => void): Promise<Outcome<T, E>> {
  const received: T[] = [];
  try {
    for await (const message of stream) {
      received.push(message);
      onMessage?.(received);
    }
    return { received };
  } catch (error) {
    return { received, error: asError(error) };
  }
}

/** An RPC stream's messages and the ConnectError it ended with. */
export function rpcUntilError<T>(stream: AsyncIterable<T>, onMessage?: (received: readonly T[]) => void): Promise<Outcome<T, ConnectError>> {
  return untilError(stream, (error) => ConnectError.from(error), onMessage);
}
