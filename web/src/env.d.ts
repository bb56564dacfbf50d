// An import here would turn this file into a module and the declaration below into an augmentation.
// eslint-disable-next-line @typescript-eslint/triple-slash-reference
/// <reference types="svelte" />

// tsc checks the .ts modules; .svelte files are compiled (and type-stripped) by the Svelte
// plugin. Without svelte-check their props are not type-checked, so logic lives in .ts files.
declare module '*.svelte' {
  import type { Component } from 'svelte';
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const component: Component<any>;
  export default component;
}
