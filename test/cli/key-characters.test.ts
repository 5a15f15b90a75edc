import { execFile } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { BIN } from "../helpers/spawn-cli.js";

/**
 * Keys as users' files hand them over. The cron recipe sources an env file with `sh`: edited on Windows,
 * every value ends in a carriage return, which an HTTP header cannot carry. Sent as they came, the
 * fetches failed before leaving the machine and the run waited out an "outage" until stopped.
 */
describe("keys with characters a header cannot carry", () => {
	it("a key ending in a carriage return (an env file with Windows line ends, sourced by sh) runs", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const job = writeJob(dir, "crlf", `name: crlf\ntargets:\n  - ${service.site.url}/product/1\n`);
		writeFileSync(
			join(dir, "scrapejob.env"),
			`SCRAPEJOB_ACCOUNT_KEY=${service.emulator.accountKey}\r\nSCRAPEJOB_API_URL=${service.emulator.apiUrl}\r\n`,
		);
		// As the recipe's line does: `set -a && . ./scrapejob.env && set +a && exec node …`.
		const out = join(dir, "out");
		const shell = `set -a && . ./scrapejob.env && set +a && exec "${process.execPath}" "${BIN}" run crlf.yaml --out out --quiet`;
		// Not a synchronous child: the emulator answers from this process's event loop.
		const code = await promisify(execFile)("sh", ["-c", shell], {
			cwd: dir,
			env: { PATH: process.env.PATH },
			timeout: 60_000,
		}).then(
			() => 0,
			(error: { code: number; stderr: string }) => {
				console.error(error.stderr);
				return error.code;
			},
		);
		expect(code).toBe(0);
		expect(service.emulator.ledger.entries.filter((entry) => entry.creditsCharged > 0)).toHaveLength(1);
		expect(existsSync(out)).toBe(true);

		// The scraper key alone (no account look-up) the same way, through the environment.
		const scraperOnly = await runCli(["run", job, "--out", out, "--quiet"], {
			env: {
				SCRAPEJOB_SCRAPER_KEY: `${service.emulator.scraperKey}\r`,
				SCRAPEJOB_SCRAPER_URL: `${service.emulator.scraperUrl}\r`,
			},
		});
		expect(scraperOnly.code).toBe(0);
	});

	it("a control character inside a key is refused before anything is sent, naming the variable, never the key", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const job = writeJob(dir, "inside", `name: inside\ntargets:\n  - ${service.site.url}/product/1\n`);
		const key = `${service.emulator.scraperKey.slice(0, 8)}\u0007${service.emulator.scraperKey.slice(8)}`;
		const run = await runCli(["run", job, "--out", join(dir, "out")], {
			env: { SCRAPEJOB_SCRAPER_KEY: key, SCRAPEJOB_SCRAPER_URL: service.emulator.scraperUrl },
		});
		expect(run.code).toBe(2);
		expect(run.stderr).toContain(
			"SCRAPEJOB_SCRAPER_KEY (from the environment) holds a character an HTTP header cannot carry (U+0007 at character 9 of",
		);
		expect(run.stderr).not.toContain(service.emulator.scraperKey.slice(8));
		expect(existsSync(join(dir, "out"))).toBe(false);
		expect(service.emulator.connectionsAccepted()).toBe(0);
	});

	it("a scraper key the account hands out with a control character ends the run with exit 3, nothing fetched", async () => {
		const service = await useTestService({ keys: { scraper: "handed\u0001out-key" } });
		const dir = tempDir();
		const job = writeJob(dir, "handed", `name: handed\ntargets:\n  - ${service.site.url}/product/1\n`);
		const run = await runCli(["run", job, "--out", join(dir, "out")], { env: service.env });
		expect(run.code).toBe(3);
		expect(run.stderr).toContain(
			"the scraper key the account handed out (GET /public/scraper api_key) holds a character an HTTP header cannot carry (U+0001",
		);
		expect(run.stderr).not.toContain("out-key");
		expect(service.emulator.ledger.entries.filter((entry) => !entry.endpoint.startsWith("account/"))).toEqual([]);
	});
});
