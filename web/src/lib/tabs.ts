/**
 * Keyboard behaviour of a WAI-ARIA tablist with automatic activation: the arrow keys move
 * to the previous/next tab (wrapping), Home/End to the first/last, and the tab is selected
 * and focused at once. Only the selected tab is in the Tab order (roving tabindex).
 */
export function tabKeydown(
  event: KeyboardEvent,
  ids: readonly string[],
  current: string,
  select: (id: string) => void,
  orientation: 'horizontal' | 'vertical' = 'horizontal',
): void {
  const prev = orientation === 'horizontal' ? 'ArrowLeft' : 'ArrowUp';
  const next = orientation === 'horizontal' ? 'ArrowRight' : 'ArrowDown';
  const index = ids.indexOf(current);
  let target: number;
  if (event.key === prev) target = index <= 0 ? ids.length - 1 : index - 1;
  else if (event.key === next) target = index >= ids.length - 1 ? 0 : index + 1;
  else if (event.key === 'Home') target = 0;
  else if (event.key === 'End') target = ids.length - 1;
  else return;
  event.preventDefault();
  const id = ids[target];
  if (id === undefined) return;
  select(id);
  const list = (event.currentTarget as HTMLElement | null)?.closest('[role=tablist]');
  // After the DOM reflects the selection (the selected tab becomes tabindex=0).
  queueMicrotask(() => list?.querySelector<HTMLElement>(`[data-tab-id="${CSS.escape(id)}"]`)?.focus());
}
