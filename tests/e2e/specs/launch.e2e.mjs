// The app starts, shows its main window and its navigation.
import assert from 'node:assert/strict';
import { byTestId, invoke, openPage, visibleErrors, waitForApp } from './helpers.mjs';

describe('launch', () => {
  before(async () => {
    await waitForApp();
  });

  it('titles the window "Timbre Studio"', async () => {
    assert.equal(await browser.getTitle(), 'Timbre Studio');
  });

  it('lets the window call only the plugin commands it uses (capabilities/default.json)', async () => {
    await assert.rejects(invoke('plugin:window|title', { label: 'main' }), /not allowed/i);
  });

  it('runs no inline script (the content security policy of tauri.conf.json)', async () => {
    const ran = await browser.execute(() => {
      const script = document.createElement('script');
      script.textContent = 'window.__inlineScriptRan = true;';
      document.head.append(script);
      script.remove();
      return window.__inlineScriptRan === true;
    });
    assert.equal(ran, false);
  });

  it('shows the Library navigation and opens on the Library page', async () => {
    const nav = await $(byTestId('nav-library'));
    assert.ok(await nav.isDisplayed(), 'nav-library is not visible');
    assert.match(await nav.getText(), /Library/);
    assert.equal(await nav.getAttribute('aria-current'), 'page');
    for (const page of ['record', 'jobs']) {
      assert.ok(await $(byTestId(`nav-${page}`)).isDisplayed(), `nav-${page} is not visible`);
    }
    await $(byTestId('library-title')).waitForDisplayed();
  });

  it('switches pages through the sidebar', async () => {
    await openPage('jobs', byTestId('resource-strip'));
    assert.equal(await $('h1').getText(), 'Jobs');
    await openPage('record', byTestId('record-start'));
    assert.equal(await $('h1').getText(), 'Record');
    await openPage('library', byTestId('library-title'));
    assert.deepEqual(await visibleErrors(), [], 'the app reported errors while starting');
  });
});
