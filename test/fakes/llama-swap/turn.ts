/**
 * How a test scripts the fake model's turn. A request that declares function tools (and does
 * not refuse them with `tool_choice: none`) gets one tool call to a usable one (never a tool
 * marked `defer_loading: true`, which the client has not loaded), unless its last message is a
 * tool result: then the model answers in text, so a round trip ends. A model whose `cmd` asks
 * llama-server to extract reasoning (`--reasoning-format` other than `none`, and no
 * `--reasoning-budget 0`) thinks first. Everything is derived from the request, so it is
 * deterministic.
 */
import { completionPieces } from './generate.js';

export type Api = 'chat' | 'messages' | 'responses';

export interface ToolCallPlan {
  /** Tool call id (`call_…`, Anthropic `toolu_…`); llama-server's are random, ours follow the request seq. */
  id: string;
  name: string;
  /** The complete arguments JSON text. */
  arguments: string;
  /** `arguments` cut into the pieces a stream sends after the name. */
  pieces: string[];
}

/** Reasoning tokens a reasoning model "thinks" before answering. */
const REASONING_TOKENS = 4;
/** Characters per streamed arguments piece. */
const ARGUMENT_PIECE_CHARS = 6;

export function usesReasoning(cmd: string): boolean {
  const format = /(?:^|\s)--reasoning-format[\s=](\S+)/.exec(cmd)?.[1];
  if (format === undefined || format === 'none') return false;
  return !/(?:^|\s)--reasoning-budget[\s=]0(?:\s|$)/.test(cmd);
}

/** The reasoning pieces: vocabulary words from a second offset, so they never equal the answer. */
export function reasoningPieces(modelId: string): string[] {
  return completionPieces(`${modelId}#reasoning`, REASONING_TOKENS);
}

interface DeclaredTool {
  name: string;
  schema: unknown;
}

/** The tool call this request gets, or undefined when the model answers in text. */
export function planToolCall(api: Api, body: Record<string, unknown>, seq: number): ToolCallPlan | undefined {
  const tools = declaredTools(api, body.tools);
  if (tools.length === 0 || lastTurnIsToolResult(api, body)) return undefined;
  const choice = body.tool_choice;
  const chosen = choiceName(api, choice);
  if (chosen === null) return undefined;
  const tool = tools.find((t) => t.name === chosen) ?? tools[0]!;
  const args = JSON.stringify(argumentsFor(tool.schema));
  const pieces: string[] = [];
  for (let i = 0; i < args.length; i += ARGUMENT_PIECE_CHARS) pieces.push(args.slice(i, i + ARGUMENT_PIECE_CHARS));
  return { id: `${api === 'messages' ? 'toolu' : 'call'}_sim${seq}`, name: tool.name, arguments: args, pieces };
}

function declaredTools(api: Api, raw: unknown): DeclaredTool[] {
  if (!Array.isArray(raw)) return [];
  const out: DeclaredTool[] = [];
  for (const t of raw) {
    // A deferred tool (Claude Code's DeferredToolPlaceholder) is not loaded: calling it fails.
    if (!isRecord(t) || t.defer_loading === true) continue;
    if (api === 'chat' && isRecord(t.function) && typeof t.function.name === 'string') {
      if (t.function.defer_loading === true) continue;
      out.push({ name: t.function.name, schema: t.function.parameters });
    } else if (api === 'messages' && typeof t.name === 'string' && t.input_schema !== undefined) {
      out.push({ name: t.name, schema: t.input_schema });
    } else if (api === 'responses' && t.type === 'function' && typeof t.name === 'string') {
      out.push({ name: t.name, schema: t.parameters });
    }
  }
  return out;
}

/** `null` = tools refused; a name = that tool; undefined = the first usable declared tool. */
function choiceName(api: Api, choice: unknown): string | null | undefined {
  if (choice === 'none') return null;
  if (!isRecord(choice)) return undefined;
  if (choice.type === 'none') return null;
  if (api === 'chat' && isRecord(choice.function) && typeof choice.function.name === 'string')
    return choice.function.name;
  return typeof choice.name === 'string' ? choice.name : undefined;
}

function lastTurnIsToolResult(api: Api, body: Record<string, unknown>): boolean {
  if (api === 'responses') {
    const input = body.input;
    if (!Array.isArray(input) || input.length === 0) return false;
    const last: unknown = input[input.length - 1];
    return isRecord(last) && typeof last.type === 'string' && last.type.endsWith('_call_output');
  }
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) return false;
  const last: unknown = messages[messages.length - 1];
  if (!isRecord(last)) return false;
  if (api === 'chat') return last.role === 'tool';
  return Array.isArray(last.content) && last.content.some((b) => isRecord(b) && b.type === 'tool_result');
}

/** Arguments that satisfy the tool's JSON schema in the simplest deterministic way. */
function argumentsFor(schema: unknown): unknown {
  if (!isRecord(schema)) return {};
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  switch (schema.type) {
    case 'string':
      return 'alpha';
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object':
    case undefined: {
      // The required properties when the schema names them (an optional one may constrain the
      // others, as Claude Code's Read `pages` does), else every property.
      const props = isRecord(schema.properties) ? schema.properties : {};
      const required = Array.isArray(schema.required) ? new Set(schema.required) : undefined;
      const chosen = Object.entries(props).filter(([k]) => required === undefined || required.has(k));
      return Object.fromEntries(chosen.map(([k, v]) => [k, argumentsFor(v)]));
    }
    default:
      return null;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
