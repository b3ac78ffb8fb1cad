/**
 * The worker thread of the `sharded` floor gateway (bench/floor-gateway.ts):
 * call frames `[callId][tool][argument bytes]` in from the acceptor's ring,
 * one upstream request each on the lean client, result frames
 * `[callId][status][body]` back. Its own file so that the bench's thread
 * probe names it by its script (a shard).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { RingReader, RingWriter } from '../src/shared/threads/ring.js';
import { LeanPool, requestBytes, toolRequests, type FloorWorkerInput, type ToolRequest } from './floor-client.js';

const input = workerData as FloorWorkerInput;
const pool = new LeanPool(new URL(input.upstream), input.connections);
const tools = toolRequests(input.tools);
const writer = new RingWriter(input.toAcceptor, { maxBacklogBytes: Number.POSITIVE_INFINITY });
new RingReader(input.toWorker, (buf, offset, length) => {
  const callId = buf.readUInt32LE(offset);
  const tool = tools[buf.readUInt32LE(offset + 4)] as ToolRequest;
  // The ring's bytes are valid only during this callback: requestBytes copies them.
  pool.call(requestBytes(tool, buf.subarray(offset + 8, offset + length)), (status, body) => {
    const at = writer.reserve(8 + body.length);
    writer.buf.writeUInt32LE(callId, at);
    writer.buf.writeUInt32LE(status, at + 4);
    body.copy(writer.buf, at + 8);
    writer.commit();
  });
});
// A pending Atomics.waitAsync does not keep a worker alive; a port listener does.
parentPort?.on('message', () => undefined);
parentPort?.postMessage('ready');
