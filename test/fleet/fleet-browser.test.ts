import { describe, expect, it } from "vitest";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase } from "../helpers/postgres-cluster.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";

const cluster = useCluster();

describe("browser_session: targets in a fleet", () => {
	it("run their steps in the remote browser as a local run does, not as a scraper fetch", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ browser_concurrency: 2 });
		const dir = tempDir("scrapejob-fleet-browser-");
		const job = writeJob(
			dir,
			"shop",
			[
				"name: shop",
				"targets:",
				`  - url: ${service.site.url}/load-more`,
				"    browser_session:",
				"      steps:",
				'        - click: "#more"',
				'        - wait_for: "li.item:nth-child(10)"',
				"        - evaluate: \"document.querySelectorAll('.item').length\"",
				`  - ${service.site.url}/product/1`,
				"",
			].join("\n"),
		);
		const worker = await spawnCli(["run", job, "--quiet", "--fleet", url, "--fleet-run", "a"], service.env, dir).done;
		expect(worker.code, worker.stderr).toBe(0);
		const records = await queryDatabase<{ record: { url: string; mode_used: string; data?: unknown } }>(
			url,
			"SELECT record FROM scrapejob.records",
		);
		const byPath = new Map(records.map(({ record }) => [new URL(record.url).pathname, record]));
		expect(byPath.get("/load-more")).toMatchObject({ mode_used: "browser_session", data: { evaluate: 10 } });
		expect(service.emulator.browserSessions().started).toBe(1);
		// The scraper fetched the plain target only: the browser target was not sent there.
		const scraped = service.emulator.ledger.byEndpoint("realtime").map((entry) => new URL(entry.url!).pathname);
		expect(scraped).toEqual(["/product/1"]);
	}, 60_000);
});
