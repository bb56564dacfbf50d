/** A key's queue priority: the form's check and how the pages show it. */

export const PRIORITY_MIN = -10;
export const PRIORITY_MAX = 10;

/** The error for a priority field's value, or null when it is a whole number in range. */
export function priorityError(value: number | null | undefined): string | null {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < PRIORITY_MIN || value > PRIORITY_MAX)
    return `A whole number from ${PRIORITY_MIN} to ${PRIORITY_MAX}.`;
  return null;
}

/** "+3", "−2", "0". */
export function formatPriority(priority: number): string {
  return priority > 0 ? `+${priority}` : priority < 0 ? `\u2212${-priority}` : '0';
}
