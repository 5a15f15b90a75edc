import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { demoSearchResults } from "../../src/emulator/index.js";
import { isRunFolderName, readCsv, readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

it("extract reads a browser_session target's final page (after its steps), beside data.evaluate", async () => {
	service = await startTestService({ browser_concurrency: 1 });
	const site = service.site.url;
	const dir = tempDir();
	const out = join(dir, "out");
	const job = writeJob(
		dir,
		"browser",
		[
			"name: browser",
			"retry: {attempts: 2, backoff_ms: 5, max_backoff_ms: 10}",
			"extract:",
			"  results: {css: li.result, all: true}",
			"targets:",
			`  - url: ${site}/search`,
			"    browser_session:",
			"      steps:",
			'        - fill: ["#q", "laptop"]',
			"        - press: Enter",
			'        - wait_for: "#done"',
			"        - evaluate: \"document.querySelectorAll('.result').length\"",
			"",
		].join("\n"),
	);
	const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
	expect(result.stderr).toBe("");
	expect(result.code).toBe(0);
	const runs = readdirSync(join(out, "browser")).filter(isRunFolderName);
	const runDir = join(out, "browser", runs[0]!);
	const expected = demoSearchResults("laptop", 100);
	// The results exist only after the script ran in the browser: the fields read the final HTML.
	expect(readRecords(runDir)[0]!.data).toMatchObject({ results: expected, evaluate: expected.length });
	expect(readCsv(runDir)[0]!.results).toBe(expected.join(" | "));
});
