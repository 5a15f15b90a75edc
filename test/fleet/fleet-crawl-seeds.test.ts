import type { ServerResponse } from "node:http";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase as query } from "../helpers/postgres-cluster.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";
import { until } from "../helpers/until.js";

const cluster = useCluster();
const lastJson = (stdout: string) => JSON.parse(stdout.trim().split("\n").at(-1)!);

describe("a fleet crawl's seeds and max_pages", () => {
	it("more seeds than max_pages: the fleet pays for max_pages pages, the seeds first, as a local crawl does", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const site = await startTargetSite((req, res) => html(res, `<p>${req.url}</p> <a href="/linked">linked</a>`));
		const dir = tempDir("scrapejob-fleet-seeds-");
		const job = writeJob(
			dir,
			"seeds",
			[
				"name: seeds",
				"defaults: {mode: request}",
				"output: {content: none}",
				"crawl: {max_depth: 2, max_pages: 3, robots: ignore, sitemaps: false}",
				`targets: [${[1, 2, 3, 4, 5].map((n) => `${site.origin}/s${n}`).join(", ")}]`,
				"",
			].join("\n"),
		);
		const paid = () =>
			service.emulator.ledger.byEndpoint("realtime").filter((entry) => entry.creditsCharged > 0).length;
		const local = await spawnCli(["run", job, "--json", "--out", join(dir, "local")], service.env, dir).done;
		// Stopped by max_pages with pages left: not complete (exit 1), in a fleet as locally.
		expect(local.code, local.stderr).toBe(1);
		expect(paid()).toBe(3);
		const localPages = lastJson(local.stdout).crawl.pages;
		expect(localPages).toBe(3);

		const worker = await spawnCli(["run", job, "--json", "--out", join(dir, "fleet"), "--fleet", url], service.env, dir)
			.done;
		expect([0, 1], worker.stderr).toContain(worker.code);
		expect(paid() - 3).toBe(3);
		expect(lastJson(worker.stdout).crawl.pages).toBe(localPages);
	}, 60_000);

	it("with freshness, a seed fresh with its links kept takes no max_pages room in the fleet, as in a local crawl: the room goes to new pages", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 1 });
		// Each seed links its own two pages. The first runs fetch the seeds only (max_pages 2), the next ones
		// have room for four pages.
		const site = await startTargetSite((req, res) => {
			const path = req.url ?? "/";
			if (path.startsWith("/s")) html(res, `<a href="${path}-a">a</a> <a href="${path}-b">b</a>`);
			else html(res, `<p>${path}</p>`);
		});
		const dir = tempDir("scrapejob-fleet-seeds-fresh-");
		const jobOf = (name: string, maxPages: number) =>
			writeJob(
				dir,
				name,
				[
					`name: ${name}`,
					"concurrency: 1",
					"defaults: {mode: request}",
					"output: {content: files}",
					`crawl: {max_depth: 1, max_pages: ${maxPages}, robots: ignore, sitemaps: false}`,
					`targets: [${site.origin}/s1, ${site.origin}/s2]`,
					"",
				].join("\n"),
			);
		const fetched = () => service.emulator.ledger.byEndpoint("realtime").map((entry) => new URL(entry.url!).pathname);

		// Local: a first run fetches the seeds; the next, both seeds fresh, reads them from their stored pages
		// and spends the whole of max_pages on their links.
		const out = join(dir, "out");
		const first = await spawnCli(["run", jobOf("seedslocal", 2), "--json", "--out", out], service.env, dir).done;
		expect(first.code, first.stderr).toBe(1);
		const local = jobOf("seedslocal", 4);
		let before = fetched().length;
		const localAgain = await spawnCli(["run", local, "--json", "--out", out, "--freshness", "1h"], service.env, dir)
			.done;
		expect(localAgain.code, localAgain.stderr).toBe(0);
		const localFetched = fetched().slice(before).sort();
		expect(localFetched).toEqual(["/s1-a", "/s1-b", "/s2-a", "/s2-b"]);

		// The fleet, the same: seeds fresh with their links kept are read, not fetched, and take no room.
		let fleetJob = jobOf("seedsfleet", 2);
		const worker = (name: string) =>
			spawnCli(["run", fleetJob, "--json", "--fleet", url, "--fleet-run", name, "--freshness", "1h"], service.env, dir)
				.done;
		const firstWorker = await worker("first");
		expect([0, 1], firstWorker.stderr).toContain(firstWorker.code);
		fleetJob = jobOf("seedsfleet", 4);
		before = fetched().length;
		const again = await worker("second");
		expect(again.code, again.stderr).toBe(0);
		expect(fetched().slice(before).sort()).toEqual(localFetched);
		expect(lastJson(again.stdout).crawl).toMatchObject({ fresh: 2 });
	}, 90_000);

	it("a page found fresh as it entered, stale by its claim, is fetched only within max_pages: no page paid past it", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		// /s1 links /m, which links /a and /b. /s2 is held while the second run's /a and /b enter.
		let held: ServerResponse | null = null;
		let holding = false;
		const site = await startTargetSite((req, res) => {
			if (req.url === "/s1") html(res, '<a href="/m">m</a>');
			else if (req.url === "/m") html(res, '<a href="/a">a</a> <a href="/b">b</a>');
			else if (req.url === "/s2" && holding) held = res;
			else html(res, `<p>${req.url}</p>`);
		});
		const dir = tempDir("scrapejob-fleet-stale-");
		const jobOf = (maxPages: number) =>
			writeJob(
				dir,
				"stale",
				[
					"name: stale",
					"concurrency: 2",
					"defaults: {mode: request}",
					"output: {content: none}",
					`crawl: {max_depth: 2, max_pages: ${maxPages}, robots: ignore, sitemaps: false}`,
					`targets: [${site.origin}/s1, ${site.origin}/s2]`,
					"",
				].join("\n"),
			);
		const worker = (name: string) =>
			spawnCli(
				["run", jobOf(name === "first" ? 5 : 3), "--quiet", "--fleet", url, "--fleet-run", name, "--freshness", "1h"],
				service.env,
				dir,
			);
		expect((await worker("first").done).code).toBe(0);
		const age = (paths: string[]) =>
			query(
				url,
				`UPDATE scrapejob.records SET written_at = now() - interval '2 hours' WHERE ${paths.map((path) => `record->>'url' LIKE '%${path}'`).join(" OR ")}`,
			);
		await age(["/s1", "/s2", "/m"]);
		const before = service.emulator.ledger.byEndpoint("realtime").length;

		// The second run: /a and /b enter fresh (at max_depth: read, not fetched, no room taken); they grow
		// stale before their claim, which waits for /s2 (the level two above).
		holding = true;
		const second = worker("second");
		await until(
			async () =>
				(
					await query(
						url,
						"SELECT 1 FROM scrapejob.targets t JOIN scrapejob.runs r ON r.id = t.run_id WHERE r.run_name = 'second' AND t.depth = 2",
					)
				).length === 2 && held !== null,
			"/a and /b in the second run's frontier",
		);
		await age(["/a", "/b"]);
		holding = false;
		html(held!, "<p>s2</p>");
		const outcome = await second.done;
		expect([0, 1], outcome.stderr).toContain(outcome.code);
		const paid = service.emulator.ledger
			.byEndpoint("realtime")
			.slice(before)
			.filter((entry) => entry.creditsCharged > 0)
			.map((entry) => new URL(entry.url!).pathname)
			.sort();
		expect(paid).toEqual(["/m", "/s1", "/s2"]);
	}, 60_000);
});
