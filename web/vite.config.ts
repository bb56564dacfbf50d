/**
 * The dashboard build. Run from the repository root: `vite build --config web/vite.config.ts`
 * (part of `npm run build`), or `npm run dev:web` for a dev server that proxies the API to a
 * gateway on :3000. The output in web/dist is served by src/http/dashboard.ts.
 */
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { defineConfig } from 'vite';

const root = decodeURIComponent(new URL('.', import.meta.url).pathname);
const gateway = 'http://127.0.0.1:3000';

export default defineConfig({
  root,
  base: '/',
  // No svelte.config.js: the defaults (runes, TypeScript in <script lang="ts">) are what we use.
  plugins: [svelte({ configFile: false })],
  // The dashboard imports the server's shared code (admin API types, snippets) by this name, as
  // web/tsconfig.json's `paths` does for the type checker.
  resolve: { alias: { '@gatehouse': `${root}../src` } },
  // No network at build or run time: nothing here fetches fonts, icons or schemas.
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    // Every asset is a hashed file under /assets (served immutable); nothing is inlined as data: URLs
    // except what CSP's img-src data: allows anyway.
    assetsDir: 'assets',
    reportCompressedSize: false,
  },
  server: {
    host: '127.0.0.1',
    port: 5173,
    // changeOrigin stays false: the gateway's CSRF check compares Origin with Host, and the
    // browser's Origin is the dev server's.
    proxy: {
      '/api': { target: gateway, changeOrigin: false },
      '/v1': { target: gateway, changeOrigin: false },
    },
  },
});
