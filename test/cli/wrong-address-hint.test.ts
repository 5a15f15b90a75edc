import { describe, expect, it } from "vitest";
import { shopJobYaml, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, runPrintedCommand } from "../helpers/spawn-cli.js";

/**
 * A scraper or account address that is not the service ends the run with exit 3 and a hint. It named
 * `health` with the same wrong address, which pasted only repeated the error; it now names the address
 * meant (the same origin with the path docs/service.md gives) once that answers as the service, and
 * otherwise says where the right one comes from, with no command.
 */
describe("the hint after an address that is not the service", () => {
	const command = (stderr: string) => /`(npx scrapejob [^`]+)` checks it without running a job/.exec(stderr)?.[1];

	it("names the scraper API at /api/v1 when the URL given has no path, and its health command passes as printed", async () => {
		assertBuilt();
		const service = await useTestService();
		const dir = tempDir();
		writeJob(dir, "shop", shopJobYaml(service.site.url, 2));
		const origin = new URL(service.emulator.scraperUrl).origin;
		const env = { ...service.env, SCRAPEJOB_SCRAPER_KEY: service.emulator.scraperKey };
		const run = await runCli(["run", "shop.yaml", "--scraper-url", origin, "--quiet"], { env, cwd: dir });
		expect(run.code, run.stderr).toBe(3);
		expect(run.stderr).toContain(`the scraper service is not at ${origin}/`);
		const hint = command(run.stderr);
		expect(hint).toBe(`npx scrapejob health --scraper-url ${origin}/api/v1`);
		const checked = await runPrintedCommand(hint!, env, dir).done;
		expect(checked.stderr).toBe("");
		expect(checked.code).toBe(0);
		expect(checked.stdout).toContain("scraper ok");
	}, 60_000);

	it("names the account API without the path given to it, the other flags kept", async () => {
		assertBuilt();
		const service = await useTestService();
		const dir = tempDir();
		writeJob(dir, "shop", shopJobYaml(service.site.url, 2));
		const apiUrl = service.emulator.apiUrl;
		const argv = ["run", "shop.yaml", "--api-url", `${apiUrl}/api/v1`, "--scraper-url", service.emulator.scraperUrl];
		const run = await runCli(argv, { env: service.env, cwd: dir });
		expect(run.code, run.stderr).toBe(3);
		const hint = command(run.stderr);
		expect(hint).toBe(`npx scrapejob health --scraper-url ${service.emulator.scraperUrl} --api-url ${apiUrl}`);
		const checked = await runPrintedCommand(hint!, service.env, dir).done;
		expect(checked.code, checked.stderr).toBe(0);
	}, 60_000);

	it("says the address does not look like the service, and suggests no command, when nothing near it answers as the service", async () => {
		const service = await useTestService();
		const dir = tempDir();
		writeJob(dir, "shop", shopJobYaml(service.site.url, 2));
		const env = { ...service.env, SCRAPEJOB_SCRAPER_KEY: service.emulator.scraperKey };
		// The demo site answers, but 404 pages: some other server at that address.
		const run = await runCli(["run", "shop.yaml", "--scraper-url", service.site.url, "--quiet"], { env, cwd: dir });
		expect(run.code, run.stderr).toBe(3);
		expect(run.stderr).toContain(
			`${service.site.url}/ does not look like the service's scraper API, nor does ${service.site.url}/api/v1: left unset, scrapejob uses the one the account reports`,
		);
		expect(run.stderr).not.toContain("`");
	}, 60_000);
});
