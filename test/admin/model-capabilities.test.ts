import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Model, ModelList } from '../../src/admin-api/types.js';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';

const ADMIN = 'capabilities-admin-token';
let sim: Simulator;
let gateway: TestGateway;

beforeAll(async () => {
  sim = await startSimulator({
    config: {
      includeAliasesInList: true,
      models: {
        chat: {
          cmd: 'llama-server --port ${PORT}',
          aliases: ['chat-alias'],
          capabilities: { in: ['text', 'image'], out: ['text'], tools: true, context: 16384 },
        },
        reranker: { cmd: 'llama-server --port ${PORT} --reranking', capabilities: { reranker: true } },
        'context-only': { cmd: 'llama-server --port ${PORT}', capabilities: { context: 8192 } },
        plain: { cmd: 'llama-server --port ${PORT}', metadata: { context_length: 4096 } },
      },
    },
  });
  gateway = await startTestGateway(sim.url, { adminToken: ADMIN }, {}, { withStore: true });
});
afterAll(async () => {
  await gateway.close();
  await sim.close();
});

async function listed(): Promise<Map<string, Model>> {
  const res = await rawRequest(`${gateway.url}/api/models`, { headers: { authorization: `Bearer ${ADMIN}` } });
  expect(res.status).toBe(200);
  return new Map((json(res.body) as ModelList).models.map((m) => [m.id, m]));
}

describe('the models admin API and declared capabilities', () => {
  it("carries each model's declared modalities, flags and context window, and its aliases share them", async () => {
    const models = await listed();
    const chat = { capabilities: { input: ['text', 'image'], output: ['text'], tools: true, reranker: false } };
    expect(models.get('chat')).toMatchObject({ ...chat, contextLength: 16384 });
    expect(models.get('chat-alias')).toMatchObject({ kind: 'alias', ...chat, contextLength: 16384 });
    expect(models.get('reranker')).toMatchObject({
      capabilities: { input: [], output: [], tools: false, reranker: true },
      contextLength: null,
    });
  });

  it('says null where the config declares nothing, and never takes a context from user metadata', async () => {
    const models = await listed();
    expect(models.get('context-only')).toMatchObject({ capabilities: null, contextLength: 8192 });
    expect(models.get('plain')).toMatchObject({ capabilities: null, contextLength: null });
  });
});
