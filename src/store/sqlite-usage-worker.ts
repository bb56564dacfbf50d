/**
 * The usage write thread's body: its own connection to the store's SQLite file, one batch
 * written per message, answered with the batch's number (and the error's message if it failed).
 */
import { parentPort, workerData } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import { sqliteUsageBatchWriter } from './sqlite-usage-batch.js';
import type { UsageWriteThreadData, UsageWriteRequest, UsageWriteReply } from './sqlite-usage-thread.js';

const port = parentPort;
if (!port) throw new Error('sqlite-usage-worker runs only as a worker thread');
const { file, busyTimeoutMs } = workerData as UsageWriteThreadData;

const raw = new BetterSqlite3(file, { fileMustExist: true });
raw.pragma(`busy_timeout = ${busyTimeoutMs}`);
raw.pragma('synchronous = NORMAL');
raw.pragma('temp_store = MEMORY');
const write = sqliteUsageBatchWriter(raw);

port.on('message', (message: UsageWriteRequest) => {
  if (message.type === 'close') {
    raw.close();
    port.close();
    return;
  }
  let reply: UsageWriteReply;
  try {
    write(message.records);
    reply = { seq: message.seq };
  } catch (error) {
    const { message: text, code } = error as { message?: string; code?: unknown };
    reply = {
      seq: message.seq,
      error: { message: String(text ?? error), code: typeof code === 'string' ? code : undefined },
    };
  }
  port.postMessage(reply);
});
