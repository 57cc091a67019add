// Headless Chromium for the page's tests (playwright-core driving /usr/bin/chromium, or
// $CHROMIUM), with the flags TOOLCHAIN.md names; not a test file itself.
import { chromium } from 'playwright-core';

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** A browser to close when the tests are done. */
export function launch() {
  return chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
}

/** Open the playground at `url` and wait until it says it is ready, or say why it did not. */
export async function openPlayground(page, url) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 }).catch((e) => {
    throw new Error(`the page did not get ready: ${e.message}; page errors: ${errors.join('; ')}`);
  });
  return errors;
}
