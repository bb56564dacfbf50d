// Runs before the first paint so a stored or system dark theme never flashes light.
// Kept in sync with web/src/lib/theme.svelte.ts (same storage key, same attribute).
(function () {
  var theme = null;
  try {
    theme = localStorage.getItem('gatehouse.theme');
  } catch {
    // Storage blocked (private mode, policy): the system theme decides.
  }
  if (theme !== 'light' && theme !== 'dark') {
    theme = window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  }
  document.documentElement.setAttribute('data-theme', theme);
})();
