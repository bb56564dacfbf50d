/** `GET /api/queue`: calls in flight and waiting (`GET /api/queue/stream` sends the same as events). */
import { Type } from 'typebox';

/** One call in `GET /api/queue`. */
export const QueuedCallView = Type.Object({
  id: Type.String({ description: "The call's request id (`x-request-id`)." }),
  model: Type.Union([Type.String(), Type.Null()]),
  key: Type.Union([Type.Object({ id: Type.String(), name: Type.String() }), Type.Null()]),
  phase: Type.Union([Type.Literal('queued'), Type.Literal('loading'), Type.Literal('generating')], {
    description: '`queued`: waiting here; `loading`: forwarded while its model loads; `generating`: the model is up.',
  }),
  since: Type.String({ format: 'date-time', description: 'When it arrived (`queued`) or was forwarded.' }),
  position: Type.Union([Type.Integer(), Type.Null()], {
    description: "1 = next; null once forwarded, or while it waits for one of its key's `concurrent` slots.",
  }),
  priority: Type.Integer(),
  waitingFor: Type.Optional(
    Type.Union([Type.Literal('turn'), Type.Literal('key')], {
      description: "What a queued call waits for: its turn under the caps, or one of its key's `concurrent` slots.",
    }),
  ),
});

/** `GET /api/queue`. */
export const QueueView = Type.Object({
  scope: Type.Union([Type.Literal('replica'), Type.Literal('everyone')], {
    description:
      "Whose calls are listed: `replica`, this Gatehouse process's only (each replica keeps its own queue " +
      "in memory, even when the caps are shared), or `everyone`'s.",
  }),
  caps: Type.Union([Type.Literal('shared'), Type.Literal('replica')], {
    description: "Whose calls the caps count: `shared` by every replica (Redis), or this `replica`'s alone.",
  }),
  inflight: Type.Array(QueuedCallView),
  waiting: Type.Array(QueuedCallView),
});
