/**
 * llama-swap's activity log (`internal/store/store.go` `ActivityLogEntry`, served by
 * `GET /api/metrics/activity`, announced as an `activity` event): one row per model call, newest
 * first. A client that went away before any response status was written is recorded as **499**,
 * never sent (llama-swap#1040, `swaputil.MarkClientClosed`); a stream that had started keeps the
 * status it really had. It outlives config reloads, like llama-swap's store.
 */
import type { ActivityEntry } from './types.js';

export interface ActivityInput {
  model: string;
  path: string;
  contentType: string;
  status: number;
  input: number;
  output: number;
  durationMs: number;
}

export class ActivityLog {
  private readonly entries: ActivityEntry[] = [];

  constructor(private readonly onRecord: () => void = () => undefined) {}

  record(a: ActivityInput): ActivityEntry {
    const entry: ActivityEntry = {
      id: this.entries.length + 1,
      timestamp: new Date().toISOString(),
      model: a.model,
      req_path: a.path,
      resp_content_type: a.contentType,
      resp_status_code: a.status,
      tokens: {
        cache_tokens: 0,
        draft_tokens: 0,
        draft_acc_tokens: 0,
        input_tokens: a.input,
        output_tokens: a.output,
        prompt_per_second: 0,
        tokens_per_second: 0,
      },
      duration_ms: Math.round(a.durationMs),
      has_capture: false,
    };
    this.entries.push(entry);
    this.onRecord();
    return entry;
  }

  /** One page, newest first (`?page=` from 1, `?limit=`, default 25). */
  page(query: URLSearchParams): Record<string, unknown> {
    const limit = positive(query.get('limit'), 25);
    const page = positive(query.get('page'), 1);
    const newest = [...this.entries].reverse();
    return {
      data: newest.slice((page - 1) * limit, page * limit),
      page,
      limit,
      total: newest.length,
      total_pages: Math.ceil(newest.length / limit),
    };
  }

  get all(): readonly ActivityEntry[] {
    return this.entries;
  }
}

function positive(raw: string | null, fallback: number): number {
  const n = raw === null ? NaN : Number(raw);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}
