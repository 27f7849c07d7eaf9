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

  it("shows the version, the commit and the CPU engine in Settings' About, and asks the feed it is given", async () => {
    await openPage('settings', byTestId('about-version'));
    assert.match(await $(byTestId('about-version')).getText(), /^Timbre Studio \d+\.\d+\.\d+ \([0-9a-f]{12}\)$/);
    assert.match(await $(byTestId('about-engine')).getText(), /^libtorch 2\.11\.0(\+cu\d+)?, CPU$/);
    assert.equal(await $(byTestId('about-installed-as')).getText(), 'Built from source (updated with git)');
    // run.sh's TIMBRE_UPDATE_FEED: a local server without a feed.
    await $(byTestId('update-check')).click();
    await $(byTestId('update-error')).waitForDisplayed();
    assert.match(await $(byTestId('update-error')).getText(), /updates\/stable\.json/);
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
