import { describe, expect, it } from "vitest";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase as query } from "../helpers/postgres-cluster.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";

const cluster = useCluster();

describe("robots.txt across fleet runs", () => {
	it("a new fleet run of the job reads a robots.txt another fleet run stored less than a day ago, unpaid; an older one is fetched again", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 2 });
		const site = await startTargetSite((req, res) => {
			if (req.url === "/robots.txt")
				return void res.writeHead(200, { "content-type": "text/plain" }).end("User-agent: *\nDisallow: /private/\n");
			if (req.url === "/start") return html(res, '<a href="/a">a</a> <a href="/private/x">x</a>');
			html(res, "leaf");
		});
		const dir = tempDir("scrapejob-fleet-robots-");
		const job = writeJob(
			dir,
			"polite",
			[
				"name: polite",
				"defaults: {mode: request}",
				"output: {content: none}",
				"crawl: {max_depth: 1, robots: obey}",
				`targets: [${site.origin}/start]`,
				"",
			].join("\n"),
		);
		const fleetRun = async (name: string) => {
			const worker = await spawnCli(
				["run", job, "--quiet", "--json", "--fleet", url, "--fleet-run", name],
				service.env,
				dir,
			).done;
			expect(worker.code, worker.stderr).toBe(0);
			return JSON.parse(worker.stdout.trim().split("\n").at(-1)!) as { crawl: { robots_disallowed: number } };
		};
		const asked = (path: string) => site.requests.filter((request) => request.path === path).length;

		await fleetRun("night-1");
		expect(asked("/robots.txt")).toBe(1);
		const second = await fleetRun("night-2");
		expect(asked("/robots.txt")).toBe(1);
		expect(asked("/private/x")).toBe(0);
		expect(second.crawl.robots_disallowed).toBe(1);
		expect(asked("/a")).toBe(2);

		// Stored more than a day ago: the next fleet run pays for it again.
		await query(url, "UPDATE scrapejob.robots SET stored_at = stored_at - interval '25 hours'");
		await fleetRun("night-3");
		expect(asked("/robots.txt")).toBe(2);
		expect(asked("/private/x")).toBe(0);
		const paid = service.emulator.ledger.byEndpoint("realtime").filter((entry) => entry.url?.endsWith("/robots.txt"));
		expect(paid).toHaveLength(2);
	}, 60_000);

	it("a robots.txt the site answers 404 for stands for the next fleet run as it does in the one that asked", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 2 });
		const site = await startTargetSite((req, res) => {
			if (req.url === "/robots.txt") return void res.writeHead(404).end("no");
			if (req.url === "/start") return html(res, '<a href="/a">a</a> <a href="/private/x">x</a>');
			html(res, "leaf");
		});
		const dir = tempDir("scrapejob-fleet-robots-");
		const job = writeJob(
			dir,
			"polite",
			[
				"name: polite",
				"defaults: {mode: request}",
				"crawl: {max_depth: 1}",
				`targets: [${site.origin}/start]`,
				"",
			].join("\n"),
		);
		for (const name of ["night-1", "night-2"]) {
			const worker = await spawnCli(["run", job, "--quiet", "--fleet", url, "--fleet-run", name], service.env, dir)
				.done;
			expect(worker.code, worker.stderr).toBe(0);
		}
		const asked = (path: string) => site.requests.filter((request) => request.path === path).length;
		expect(asked("/robots.txt")).toBe(1);
		expect(asked("/private/x")).toBe(2);
	}, 60_000);
});
