import { mount } from 'svelte';
import './app.css';
import App from './App.svelte';
import { appearance } from './lib/appearance.svelte';
import { i18n } from './lib/i18n.svelte';

appearance.restore();
i18n.restore();

const app = mount(App, { target: document.getElementById('app')! });

export default app;
