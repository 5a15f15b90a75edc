import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { onlyRunDir, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { canMountPrivately, runOnSmallDisk } from "../helpers/private-mount.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, BIN } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";

it("a sitemap body that cannot be written stops the crawl as an output failure (exit 5) and its credits are in the summary", async () => {
	const service = await useTestService({ concurrency: 2 });
	const dir = tempDir();
	const origin = new URL(service.site.url).origin;
	const job = (maxPages: number) =>
		writeJob(
			dir,
			"crawl",
			[
				"name: crawl",
				"defaults:",
				"  mode: request",
				`crawl: {max_depth: 1, max_pages: ${maxPages}, robots: obey, sitemaps: true}`,
				"targets:",
				`  - ${origin}/product/1`,
				"",
			].join("\n"),
		);
	job(2);
	const first = await runCli(["run", "crawl.yaml", "--out", "out", "--quiet"], { env: service.env, cwd: dir });
	expect(first.code, first.stderr).toBe(1);
	const jobDir = join(dir, "out", "crawl");
	const [runId] = readdirSync(jobDir, { withFileTypes: true })
		.filter((entry) => entry.isDirectory())
		.map((entry) => entry.name);
	const runDir = join(jobDir, runId!);
	const frontier = readFileSync(join(runDir, "frontier.jsonl"), "utf8");
	// A sitemap the first session queued and did not fetch: the resume fetches it.
	const queued = frontier
		.trim()
		.split("\n")
		.map((line) => JSON.parse(line) as { u: string; d: number })
		.filter((entry) => entry.d === -2)
		.map((entry) => entry.u)
		.filter((url) => !frontier.includes(`{"u":"${url}","d":-3`));
	expect(queued.length).toBeGreaterThan(0);
	// A folder (not empty) where each of their bodies is to be written: the rename over it fails.
	for (const url of queued) {
		const path = join(runDir, "sitemaps", createHash("sha256").update(url).digest("hex").slice(0, 24));
		mkdirSync(path, { recursive: true });
		writeFileSync(join(path, "in-the-way"), "x");
	}
	const spentBefore = readSummary(runDir).credits.used;
	const charged = () =>
		service.emulator.ledger.byEndpoint("realtime").reduce((sum, entry) => sum + entry.creditsCharged, 0);
	const chargedBefore = charged();
	job(1000);
	const resumed = await runCli(["run", "crawl.yaml", "--out", "out", "--resume", runId!], {
		env: service.env,
		cwd: dir,
	});
	expect(resumed.code, `${resumed.stdout}\n${resumed.stderr}`).toBe(5);
	expect(resumed.stderr).toMatch(/output failed: cannot write .*sitemaps/);
	const summary = readSummary(runDir);
	expect(summary.stopped_reason).toBe("output_failed");
	// Every credit the service charged in this session is in the summary.
	expect(summary.credits.used - spentBefore).toBe(charged() - chargedBefore);
}, 60_000);

it.skipIf(!canMountPrivately())(
	"a large sitemap whose body fills the disk as it streams in stops the crawl (exit 5) with its charge in the summary",
	async () => {
		assertBuilt();
		const service = await useTestService({ concurrency: 2 });
		// ~2 MB of <loc>s: past the 64 KiB kept in memory, the body streams to its file and fills the disk.
		const locs = Array.from({ length: 20_000 }, (_, index) => `<url><loc>ORIGIN/p/${index}</loc></url>`).join("");
		const site = await startTargetSite((req, res, origin) => {
			if (req.url === "/robots.txt") res.writeHead(200).end(`Sitemap: ${origin}/big.xml\n`);
			else if (req.url === "/big.xml")
				res
					.writeHead(200, { "content-type": "application/xml" })
					.end(`<urlset>${locs.replaceAll("ORIGIN", origin)}</urlset>`);
			else html(res, "<p>page</p>");
		});
		const dir = tempDir();
		const job = writeJob(
			dir,
			"big",
			`name: big\ndefaults: {mode: request}\ncrawl: {max_depth: 0, sitemaps: true}\ntargets:\n  - ${site.origin}/\n`,
		);
		// The run's folder on a 512 KiB disk of its own.
		const { code, stderr, kept } = await runOnSmallDisk(dir, BIN, job, service.env);
		expect(code, stderr).toBe(5);
		expect(stderr).toMatch(/output failed: cannot write .*sitemaps.*\(ENOSPC\)/);
		const summary = readSummary(onlyRunDir(kept, "big"));
		expect(summary.stopped_reason).toBe("output_failed");
		// Every credit the service charged (the seed, robots.txt, the sitemap whose body could not be kept) is spent.
		const charged = service.emulator.ledger
			.byEndpoint("realtime")
			.reduce((sum, entry) => sum + entry.creditsCharged, 0);
		expect(service.emulator.ledger.byEndpoint("realtime").some((entry) => entry.url?.endsWith("/big.xml"))).toBe(true);
		expect(summary.credits.used).toBe(charged);
	},
	60_000,
);
