import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

/** Debian's Chromium (`.ci/run` installs the `chromium` package when it is missing). */
export const CHROMIUM_PATH = process.env.SCRAPEJOB_CHROMIUM ?? "/usr/bin/chromium";

/** Screenshots for a reviewer to look at (git-ignored). */
export const ARTIFACTS_DIR = join(import.meta.dirname, "..", "artifacts");

/**
 * Headless Chromium as the machine's own probe starts it: the background-networking flags keep it from
 * calling home (connections this closed network refuses), so every request a page makes is the page's.
 */
export async function launchChromium(): Promise<Browser> {
	if (!existsSync(CHROMIUM_PATH)) {
		throw new Error(
			`no Chromium at ${CHROMIUM_PATH}: install Debian's chromium package (bash .ci/run does) or set SCRAPEJOB_CHROMIUM`,
		);
	}
	return chromium.launch({
		executablePath: CHROMIUM_PATH,
		args: [
			"--no-sandbox",
			"--disable-gpu",
			"--disable-quic",
			"--no-first-run",
			"--disable-background-networking",
			"--disable-component-update",
			"--disable-sync",
		],
	});
}

export interface PageWatch {
	readonly consoleErrors: string[];
	/** Every request the page made, its own document included. */
	readonly requests: string[];
}

/** Collect console errors, uncaught exceptions and requests of a page from the moment it is created. */
export function watchPage(page: Page): PageWatch {
	const watch: PageWatch = { consoleErrors: [], requests: [] };
	page.on("console", (message) => {
		if (message.type() === "error" || message.type() === "warning") watch.consoleErrors.push(message.text());
	});
	page.on("pageerror", (error) => watch.consoleErrors.push(error.message));
	page.on("request", (request) => watch.requests.push(request.url()));
	return watch;
}

export async function screenshot(page: Page, name: string): Promise<string> {
	mkdirSync(ARTIFACTS_DIR, { recursive: true });
	const path = join(ARTIFACTS_DIR, name);
	await page.screenshot({ path, fullPage: true });
	return path;
}
