/**
 * A model id placed in an upstream URL path (`/upstream/<id>/`, `/api/models/unload/<id>`,
 * `/logs/stream/<id>`). llama-swap unescapes and cleans the path before routing, so an id with a
 * `..` segment names another route (`../unload` unloads every model): such ids are refused, the
 * rest are percent-encoded segment by segment, keeping the slashes of ids like `org/model`.
 */

const MODEL_ID_MAX_LENGTH = 256;

/** Why `id` cannot name a model in an upstream path, or undefined when it can. */
export function modelIdProblem(id: string): string | undefined {
  if (id.length === 0) return 'the model id is empty';
  if (id.length > MODEL_ID_MAX_LENGTH) return `the model id is longer than ${MODEL_ID_MAX_LENGTH} characters`;
  // Cs: a lone surrogate, which encodeURIComponent cannot encode.
  if (/[\p{Cc}\p{Cf}\p{Cs}\\]/u.test(id))
    return 'the model id holds a control or invisible character, a backslash or a lone surrogate';
  for (const segment of id.split('/')) {
    if (segment === '') return 'the model id has an empty path segment (a leading, trailing or doubled "/")';
    if (segment === '.' || segment === '..') return 'the model id has a "." or ".." path segment';
  }
  return undefined;
}

/** The id as path segments, each percent-encoded; throws for an id `modelIdProblem` refuses. */
export function encodeModelPath(modelId: string): string {
  const problem = modelIdProblem(modelId);
  if (problem !== undefined) throw new RangeError(`Refusing to put a model id in an upstream path: ${problem}.`);
  return modelId.split('/').map(encodeURIComponent).join('/');
}
