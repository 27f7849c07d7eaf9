import { vitePreprocess } from '@sveltejs/vite-plugin-svelte';

/** @type {import('@sveltejs/vite-plugin-svelte').SvelteConfig} */
export default {
  preprocess: vitePreprocess(),
  vitePlugin: {
    // Our own components always use runes; leave third-party code alone.
    dynamicCompileOptions({ filename }) {
      if (!filename.includes('node_modules')) return { runes: true };
    },
  },
};
