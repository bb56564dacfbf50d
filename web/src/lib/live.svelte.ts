/**
 * What the dashboard follows live (llama-swap's status, the models, the proxy, upstream and
 * Gatehouse logs, the admission queue), from one `/api/live` stream per browser: one tab leads (Web Locks) and holds
 * the EventSource, a BroadcastChannel carries its events to the other tabs, and a tab that joins
 * asks the leader for what it holds. The stream is closed while no tab of the browser is
 * visible and opened again, with a fresh snapshot, when one is. Started by the signed-in shell.
 */
import {
  getSession,
  notifyUnauthorized,
  openLiveStream,
  type LiveEventMap,
  type LiveEventName,
  type LiveGapKind,
  type LiveLogSource,
  type LiveStream,
  type LiveUpstream,
  type ModelList,
  type QueueView,
} from '../api/index.js';
import type { LinkStatus } from './live-link.js';
import { appendBounded, joinHistory } from './live-text.js';
import { electLeader, type TabLeadership } from './tab-leader.js';
import { StreamBackoff } from './stream-backoff.js';

export interface LiveLogListener {
  /** Replaces what is shown (on subscribe, and when a fresh snapshot arrives). */
  history(text: string): void;
  /** New text, not line-aligned. */
  append(text: string): void;
  gap(kind: LiveGapKind, reason: string): void;
}

interface Held {
  upstream: LiveUpstream | null;
  models: ModelList | null;
  queue: QueueView | null;
  logs: Record<LiveLogSource, string>;
  link: LinkStatus;
}

/** One `/api/live` event, as the page passes it between tabs. */
type LiveEvent = { [K in LiveEventName]: { name: K; data: LiveEventMap[K] } }[LiveEventName];

type Message =
  | { t: 'event'; event: LiveEvent }
  | { t: 'link'; link: LinkStatus }
  | { t: 'snapshot'; to: string; held: Held }
  | { t: 'hello'; id: string; visible: boolean }
  | { t: 'visible'; id: string; visible: boolean }
  | { t: 'bye'; id: string }
  | { t: 'roll-call' }
  | { t: 'retry' };

const CHANNEL = 'gatehouse-live';
/** Tabs switch visibility one after the other: a pause waits this long for another to show. */
const PAUSE_AFTER_MS = 1000;
const SOURCES: readonly LiveLogSource[] = ['proxy', 'upstream', 'gateway'];

class Live {
  upstream = $state.raw<LiveUpstream | null>(null);
  models = $state.raw<ModelList | null>(null);
  queue = $state.raw<QueueView | null>(null);
  link = $state<LinkStatus>('connecting');
  /** Whether this tab holds the browser's connection. */
  leading = $state(false);

  private logs: Record<LiveLogSource, string> = { proxy: '', upstream: '', gateway: '' };
  private readonly listeners = new Map<LiveLogSource, Set<LiveLogListener>>();
  private readonly id = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  private channel: BroadcastChannel | undefined;
  private leadership: TabLeadership | undefined;
  private stream: LiveStream | undefined;
  /** Leader only: which tabs are visible. */
  private tabs = new Map<string, boolean>();
  private started = false;
  private readonly backoff = new StreamBackoff();
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private pauseTimer: ReturnType<typeof setTimeout> | undefined;

  start(): void {
    if (this.started) return;
    this.started = true;
    document.addEventListener('visibilitychange', this.onVisibility);
    window.addEventListener('pagehide', this.onPageHide);
    const shared = typeof navigator.locks !== 'undefined' && typeof BroadcastChannel !== 'undefined';
    if (shared) {
      this.channel = new BroadcastChannel(CHANNEL);
      this.channel.onmessage = (event: MessageEvent<Message>) => this.onMessage(event.data);
      this.post({ t: 'hello', id: this.id, visible: isVisible() });
    }
    if (shared) this.leadership = electLeader(CHANNEL, () => this.lead());
    else this.lead();
  }

  stop(): void {
    if (!this.started) return;
    this.started = false;
    document.removeEventListener('visibilitychange', this.onVisibility);
    window.removeEventListener('pagehide', this.onPageHide);
    this.post({ t: 'bye', id: this.id });
    this.leadership?.stop();
    this.channel?.close();
    this.channel = undefined;
    this.closeStream();
    this.leading = false;
    this.link = 'connecting';
    // Signed out: nothing of what was followed stays in the page.
    this.upstream = null;
    this.models = null;
    this.queue = null;
    this.logs = { proxy: '', upstream: '', gateway: '' };
  }

  /** The log's text so far (as a `history` call), then its changes; returns the unsubscribe. */
  subscribeLog(source: LiveLogSource, listener: LiveLogListener): () => void {
    let set = this.listeners.get(source);
    if (!set) this.listeners.set(source, (set = new Set()));
    set.add(listener);
    listener.history(this.logs[source]);
    return () => set.delete(listener);
  }

  /** Connect again now instead of at the backoff's pace. */
  retry(): void {
    if (!this.leading) return this.post({ t: 'retry' });
    if (this.stream) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.connect();
  }

  // ---- leading: the one EventSource ---------------------------------------------------------

  private lead(): void {
    this.leading = true;
    this.tabs = new Map([[this.id, isVisible()]]);
    this.post({ t: 'roll-call' });
    this.updateConnection();
  }

  private updateConnection(): void {
    if (!this.leading || !this.started) return;
    const wanted = [...this.tabs.values()].some(Boolean);
    if (wanted) {
      clearTimeout(this.pauseTimer);
      this.pauseTimer = undefined;
      if (!this.stream && !this.retryTimer) this.connect();
      return;
    }
    if (this.pauseTimer || (!this.stream && !this.retryTimer)) return;
    this.pauseTimer = setTimeout(() => {
      this.pauseTimer = undefined;
      if ([...this.tabs.values()].some(Boolean)) return;
      this.closeStream();
      this.setLink('paused');
    }, PAUSE_AFTER_MS);
  }

  private connect(): void {
    this.setLink(this.backoff.attempts > 0 ? 'reconnecting' : 'connecting');
    this.stream = openLiveStream({
      open: () => {
        this.backoff.opened();
        this.setLink('live');
      },
      event: (name, data) => {
        const event = { name, data } as LiveEvent;
        this.apply(event);
        this.post({ t: 'event', event });
      },
      error: () => {
        this.stream = undefined;
        void this.recover();
      },
    });
  }

  private async recover(): Promise<void> {
    this.setLink('reconnecting');
    const delay = this.backoff.next();
    try {
      const session = await getSession();
      if (!session.authenticated) {
        this.stop();
        notifyUnauthorized();
        return;
      }
    } catch {
      // Gatehouse itself is down: keep trying at the backoff's pace.
    }
    if (!this.started || !this.leading) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if ([...this.tabs.values()].some(Boolean)) this.connect();
      else this.setLink('paused');
    }, delay);
  }

  private closeStream(): void {
    clearTimeout(this.retryTimer);
    clearTimeout(this.pauseTimer);
    this.retryTimer = undefined;
    this.pauseTimer = undefined;
    this.stream?.close();
    this.stream = undefined;
  }

  private setLink(link: LinkStatus): void {
    this.link = link;
    this.post({ t: 'link', link });
  }

  // ---- every tab: what the stream says ------------------------------------------------------

  private apply(event: LiveEvent): void {
    switch (event.name) {
      case 'upstream':
        this.upstream = event.data;
        return;
      case 'models':
        this.models = event.data;
        return;
      case 'queue':
        this.queue = event.data;
        return;
      case 'history':
        return this.takeHistory(event.data.source, event.data.text);
      case 'log':
        return this.appendLog(event.data.source, event.data.text);
      case 'gap': {
        const { source, kind, reason } = event.data;
        const sources = source === null ? SOURCES.filter((s) => s !== 'gateway') : [source];
        for (const s of sources) for (const listener of this.listeners.get(s) ?? []) listener.gap(kind, reason);
        return;
      }
    }
  }

  private adopt(held: Held): void {
    this.upstream = held.upstream;
    this.models = held.models;
    this.queue = held.queue;
    this.link = held.link;
    for (const source of SOURCES) this.takeHistory(source, held.logs[source]);
  }

  /** A whole history (on connect, from the leader): only what is new is added, else it replaces. */
  private takeHistory(source: LiveLogSource, text: string): void {
    const added = joinHistory(this.logs[source], text);
    if (added !== null) return this.appendLog(source, added);
    this.logs[source] = appendBounded('', text);
    for (const listener of this.listeners.get(source) ?? []) listener.history(this.logs[source]);
  }

  private appendLog(source: LiveLogSource, text: string): void {
    if (text === '') return;
    this.logs[source] = appendBounded(this.logs[source], text);
    for (const listener of this.listeners.get(source) ?? []) listener.append(text);
  }

  // ---- between tabs -------------------------------------------------------------------------

  private onMessage(message: Message): void {
    if (!this.started) return;
    switch (message.t) {
      case 'event':
        if (!this.leading) this.apply(message.event);
        return;
      case 'link':
        if (!this.leading) this.link = message.link;
        return;
      case 'snapshot':
        if (!this.leading && message.to === this.id) this.adopt(message.held);
        return;
      case 'hello':
        if (!this.leading) return;
        this.tabs.set(message.id, message.visible);
        this.post({ t: 'snapshot', to: message.id, held: this.held() });
        this.updateConnection();
        return;
      case 'visible':
        if (!this.leading) return;
        this.tabs.set(message.id, message.visible);
        this.updateConnection();
        return;
      case 'bye':
        if (!this.leading) return;
        this.tabs.delete(message.id);
        this.updateConnection();
        return;
      case 'roll-call':
        if (!this.leading) this.post({ t: 'hello', id: this.id, visible: isVisible() });
        return;
      case 'retry':
        if (this.leading) this.retry();
        return;
    }
  }

  private held(): Held {
    return { upstream: this.upstream, models: this.models, queue: this.queue, logs: { ...this.logs }, link: this.link };
  }

  private post(message: Message): void {
    this.channel?.postMessage(message);
  }

  private readonly onVisibility = () => {
    if (this.leading) {
      this.tabs.set(this.id, isVisible());
      this.updateConnection();
    } else {
      this.post({ t: 'visible', id: this.id, visible: isVisible() });
    }
  };

  private readonly onPageHide = () => this.post({ t: 'bye', id: this.id });
}

function isVisible(): boolean {
  return document.visibilityState === 'visible';
}

export const live = new Live();
