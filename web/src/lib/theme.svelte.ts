/**
 * Light/dark theme. Follows prefers-color-scheme until the operator picks one; the choice is
 * kept in localStorage. public/theme-init.js applies the same rule before first paint.
 */
export type ThemePreference = 'system' | 'light' | 'dark';
const STORAGE_KEY = 'gatehouse.theme';
const media = window.matchMedia('(prefers-color-scheme: dark)');

function readPreference(): ThemePreference {
  try {
    const value = localStorage.getItem(STORAGE_KEY);
    return value === 'light' || value === 'dark' ? value : 'system';
  } catch {
    return 'system';
  }
}

class Theme {
  preference = $state<ThemePreference>(readPreference());
  private systemDark = $state(media.matches);
  current: 'light' | 'dark' = $derived(
    this.preference === 'system' ? (this.systemDark ? 'dark' : 'light') : this.preference,
  );

  constructor() {
    media.addEventListener('change', (event) => {
      this.systemDark = event.matches;
      this.apply();
    });
    this.apply();
  }

  set(preference: ThemePreference): void {
    this.preference = preference;
    try {
      if (preference === 'system') localStorage.removeItem(STORAGE_KEY);
      else localStorage.setItem(STORAGE_KEY, preference);
    } catch {
      // private mode: the choice lasts for this page only
    }
    this.apply();
  }

  toggle(): void {
    this.set(this.current === 'dark' ? 'light' : 'dark');
  }

  private apply(): void {
    const effective = this.preference === 'system' ? (media.matches ? 'dark' : 'light') : this.preference;
    document.documentElement.setAttribute('data-theme', effective);
  }
}

export const theme = new Theme();
