export type ToastKind = 'success' | 'error' | 'warning' | 'info';

export interface Toast {
  id: number;
  kind: ToastKind;
  message: string;
}

class Toasts {
  items = $state<Toast[]>([]);
  private nextId = 1;

  show(kind: ToastKind, message: string, timeoutMs = kind === 'error' || kind === 'warning' ? 8000 : 4000): void {
    const id = this.nextId++;
    this.items = [...this.items.slice(-3), { id, kind, message }];
    setTimeout(() => this.dismiss(id), timeoutMs);
  }

  dismiss(id: number): void {
    this.items = this.items.filter((toast) => toast.id !== id);
  }
}

export const toasts = new Toasts();
